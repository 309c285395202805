/// The storage type of a persisted property.
public enum PropertyType: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// `Bool`.
    case bool
    /// `Int`.
    case int
    /// `Int8`.
    case int8
    /// `Int16`.
    case int16
    /// `Int32`.
    case int32
    /// `Int64`.
    case int64
    /// `Float`.
    case float
    /// `Double`.
    case double
    /// `String`.
    case string
    /// `Data`.
    case data
    /// `Date`.
    case date
    /// `UUID`.
    case uuid
    /// `Decimal`.
    case decimal
    /// ``ObjectId``.
    case objectId
    /// A link to an ``Object`` (to-one, or the elements of a collection of objects).
    case object
    /// The objects linking to this one through a property (``LinkingObjects``).
    case linkingObjects

    /// The type's name as written in Swift.
    public var description: String {
        switch self {
        case .bool: return "Bool"
        case .int: return "Int"
        case .int8: return "Int8"
        case .int16: return "Int16"
        case .int32: return "Int32"
        case .int64: return "Int64"
        case .float: return "Float"
        case .double: return "Double"
        case .string: return "String"
        case .data: return "Data"
        case .date: return "Date"
        case .uuid: return "UUID"
        case .decimal: return "Decimal"
        case .objectId: return "ObjectId"
        case .object: return "Object"
        case .linkingObjects: return "LinkingObjects"
        }
    }

    var isInteger: Bool {
        switch self {
        case .int, .int8, .int16, .int32, .int64: return true
        default: return false
        }
    }

    /// Types allowed as a primary key.
    var canBePrimaryKey: Bool { isInteger || self == .string || self == .uuid || self == .objectId }

    /// Types allowed for a secondary index.
    var canBeIndexed: Bool { canBePrimaryKey || self == .bool || self == .date }
}
