/// How the query engine reads a stored property: nil for anything that is not a single value in the
/// record (links, collections, backlinks), which key path resolution handles (or rejects) instead.
enum ScalarKind: Equatable {
    case bool, integer, float, double, decimal, date, string, data, uuid, objectId

    init?(_ p: PropertyInfo) {
        guard p.isSingleValue else { return nil }
        self.init(p.property)
    }

    /// The kind of a single-value property of the schema (nil for links, collections, backlinks).
    init?(_ property: Property) {
        guard property.collection == nil else { return nil }
        self.init(type: property.type)
    }

    /// The kind of a value of `type` (also the elements of a collection of values).
    init?(type: PropertyType) {
        switch type {
        case .bool: self = .bool
        case .int, .int8, .int16, .int32, .int64: self = .integer
        case .float: self = .float
        case .double: self = .double
        case .decimal: self = .decimal
        case .date: self = .date
        case .string: self = .string
        case .data: self = .data
        case .uuid: self = .uuid
        case .objectId: self = .objectId
        case .object, .linkingObjects: return nil
        }
    }

    /// Compared as bytes (in place, without decoding).
    var isBytes: Bool {
        switch self {
        case .string, .data, .uuid, .objectId: return true
        default: return false
        }
    }

    /// Ordered numerically.
    var isNumber: Bool {
        switch self {
        case .integer, .float, .double, .decimal: return true
        default: return false
        }
    }
}

/// A resolved scalar property: where its payload is and how to decode it.
struct ScalarColumn {
    let property: PropertyInfo
    let column: Int
    let kind: ScalarKind
    let isOptional: Bool
    /// The type of the values read: the property's, or String for a Map's keys.
    let type: PropertyType

    init?(_ p: PropertyInfo) {
        guard let kind = ScalarKind(p) else { return nil }
        self.property = p
        self.column = p.column
        self.kind = kind
        self.isOptional = p.property.isOptional
        self.type = p.property.type
    }

    /// The elements of a List, MutableSet or Map of values, read as one-column records (see ``ResolvedPath``).
    init?(elementsOf p: PropertyInfo) {
        guard p.property.collection != nil, let kind = ScalarKind(type: p.property.type) else { return nil }
        self.property = p
        self.column = 0
        self.kind = kind
        self.isOptional = p.property.isOptional
        self.type = p.property.type
    }

    /// The keys of a Map, read as one-column records of non-optional Strings (see ``ResolvedPath``).
    init(keysOf p: PropertyInfo) {
        self.property = p
        self.column = 0
        self.kind = .string
        self.isOptional = false
        self.type = .string
    }

    var name: String { property.name }

    /// Optional String and Data payloads carry a leading marker byte.
    var hasMarker: Bool { isOptional && (kind == .string || kind == .data) }
}
