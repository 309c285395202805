/// The contents of one schema file (`*.lattice.json`): enums and model classes.
///
/// The JSON shape is a superset of the schema a Lattice database stores (its `meta` database's
/// `schema` key): the same keys (`objectSchemas`, `className`, `properties`, `name`, `type`,
/// `isOptional`, ...), plus what only source code knows (doc comments, initial values, enums,
/// former names). `Schemas/README.md` documents every key.
public struct SchemaFile: Sendable, Equatable {
    /// The file's name as given to the reader, used in diagnostics and for the generated file's name.
    public var fileName: String
    /// The configuration's schema version this schema is meant for, if the file says.
    public var schemaVersion: UInt64?
    /// The enums that properties can store (`PersistableEnum`), in file order.
    public var enums: [EnumSpec]
    /// The model classes, in file order.
    public var classes: [ClassSpec]
    /// Positions of the top-level values.
    public var locations: SourceLocations

    /// Creates a schema file.
    public init(fileName: String, schemaVersion: UInt64? = nil, enums: [EnumSpec] = [], classes: [ClassSpec],
                locations: SourceLocations = SourceLocations()) {
        self.fileName = fileName
        self.schemaVersion = schemaVersion
        self.enums = enums
        self.classes = classes
        self.locations = locations
    }

    /// The file name without its directory: `Schemas/ToDo.lattice.json` gives `ToDo.lattice.json`.
    public var displayName: String { fileName.split(separator: "/").last.map(String.init) ?? fileName }

    /// The file name without its directory and without `.lattice.json` (or its last extension):
    /// `Schemas/ToDo.lattice.json` gives `ToDo`. Generated files and schema namespaces are named after it.
    public var baseName: String { SchemaFile.baseName(of: fileName) }

    /// See ``baseName``.
    public static func baseName(of path: String) -> String {
        let name = path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? path
        for suffix in [".lattice.json", ".json"] where name.hasSuffix(suffix) && name.count > suffix.count {
            return String(name.dropLast(suffix.count))
        }
        if let dot = name.lastIndex(of: "."), dot != name.startIndex { return String(name[..<dot]) }
        return name
    }

    /// The name of the enum the generator emits to list this file's classes: the base name in
    /// UpperCamelCase followed by `Schema` (`ToDo` gives `ToDoSchema`, `my-models` gives `MyModelsSchema`).
    public var namespaceName: String {
        let parts = baseName.split { !($0.isASCII && ($0.isLetter || $0.isNumber)) }
        let camel = parts.map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
        let name = camel + "Schema"
        return name.first?.isNumber == true ? "_" + name : name
    }
}

/// A model class: an `Object` or an `EmbeddedObject` subclass.
public struct ClassSpec: Sendable, Equatable {
    /// The class name (the Swift type name, and the name the database stores).
    public var className: String
    /// Whether objects of this class are embedded (owned by one parent object).
    public var isEmbedded: Bool
    /// The persisted properties, in declaration (storage) order.
    public var properties: [PropertySpec]
    /// The doc comment, without `///` markers; not stored in a database.
    public var doc: String?
    /// The name the class had in an earlier schema version, for migrations; not stored in a database.
    public var originalName: String?
    /// Positions of this class's values.
    public var locations: SourceLocations

    /// Creates a class.
    public init(className: String, isEmbedded: Bool = false, properties: [PropertySpec], doc: String? = nil,
                originalName: String? = nil, locations: SourceLocations = SourceLocations()) {
        self.className = className
        self.isEmbedded = isEmbedded
        self.properties = properties
        self.doc = doc
        self.originalName = originalName
        self.locations = locations
    }

    /// The property named `name`.
    public subscript(name: String) -> PropertySpec? { properties.first { $0.name == name } }
}

/// A persisted property.
public struct PropertySpec: Sendable, Equatable {
    /// The property name.
    public var name: String
    /// The storage type; for a collection, the element type; for an enum, its raw type.
    public var type: ValueType
    /// The `PersistableEnum` the property holds (stored as its raw ``type``); not stored in a database.
    public var enumName: String?
    /// The collection the property is, or nil for a single value.
    public var collection: CollectionType?
    /// The linked class, for `object` and `linkingObjects` properties.
    public var objectClassName: String?
    /// For `linkingObjects`: the property of ``objectClassName`` whose links are followed back.
    public var originProperty: String?
    /// Whether nil is allowed; for a collection, whether its elements may be nil.
    public var isOptional: Bool
    /// Whether a secondary index is kept (always true for the primary key).
    public var isIndexed: Bool
    /// Whether this is the class's primary key.
    public var isPrimaryKey: Bool
    /// The initial value of a new object's property; not stored in a database.
    public var defaultValue: DefaultValue?
    /// The doc comment, without `///` markers; not stored in a database.
    public var doc: String?
    /// The name the property had in an earlier schema version, for migrations; not stored in a database.
    public var originalName: String?
    /// Positions of this property's values.
    public var locations: SourceLocations

    /// Creates a property; a primary key is always indexed.
    public init(name: String, type: ValueType, enumName: String? = nil, collection: CollectionType? = nil,
                objectClassName: String? = nil, originProperty: String? = nil, isOptional: Bool = false,
                isIndexed: Bool = false, isPrimaryKey: Bool = false, defaultValue: DefaultValue? = nil,
                doc: String? = nil, originalName: String? = nil, locations: SourceLocations = SourceLocations()) {
        self.name = name
        self.type = type
        self.enumName = enumName
        self.collection = collection
        self.objectClassName = objectClassName
        self.originProperty = originProperty
        self.isOptional = isOptional
        self.isIndexed = isIndexed || isPrimaryKey
        self.isPrimaryKey = isPrimaryKey
        self.defaultValue = defaultValue
        self.doc = doc
        self.originalName = originalName
        self.locations = locations
    }
}

/// A property's initial value.
public enum DefaultValue: Sendable, Equatable {
    /// A JSON literal (`default`): checked against the property's type.
    case literal(JSONNode.Value)
    /// Swift source (`defaultExpression`), copied into the generated code as written.
    case expression(String)
}

/// A `PersistableEnum`: a raw-value enum stored as its raw value.
public struct EnumSpec: Sendable, Equatable {
    /// The enum's name.
    public var name: String
    /// The raw value type: `string` or an integer type.
    public var rawType: ValueType
    /// The cases, in order; the first is what an unknown stored raw value reads as.
    public var cases: [EnumCaseSpec]
    /// The doc comment, without `///` markers.
    public var doc: String?
    /// Positions of this enum's values.
    public var locations: SourceLocations

    /// Creates an enum.
    public init(name: String, rawType: ValueType, cases: [EnumCaseSpec], doc: String? = nil,
                locations: SourceLocations = SourceLocations()) {
        self.name = name
        self.rawType = rawType
        self.cases = cases
        self.doc = doc
        self.locations = locations
    }
}

/// One case of an enum.
public struct EnumCaseSpec: Sendable, Equatable {
    /// The case name.
    public var name: String
    /// The raw value as JSON: a string for a `string` enum (nil: the name), an integer for an integer enum.
    public var rawValue: JSONNode.Value?
    /// The doc comment, without `///` markers.
    public var doc: String?
    /// Positions of this case's values.
    public var locations: SourceLocations

    /// Creates a case.
    public init(name: String, rawValue: JSONNode.Value? = nil, doc: String? = nil, locations: SourceLocations = SourceLocations()) {
        self.name = name
        self.rawValue = rawValue
        self.doc = doc
        self.locations = locations
    }
}

/// The collection kinds, with the raw values the database stores.
public enum CollectionType: String, Sendable, Equatable, CaseIterable {
    /// `List<Element>`: ordered, duplicates allowed.
    case list
    /// `MutableSet<Element>`: unique, unordered.
    case set
    /// `Map<String, Element>`: string keys.
    case map
}

/// The storage types, with the raw values the database stores (those of `Lattice.PropertyType`).
public enum ValueType: String, Sendable, Equatable, CaseIterable {
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
    /// `ObjectId`.
    case objectId
    /// A link to an object of `objectClassName`.
    case object
    /// The objects of `objectClassName` linking to this one through `originProperty`.
    case linkingObjects

    /// The Swift type of a plain value of this type (nil for links and backlinks).
    public var swiftName: String? {
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
        case .object, .linkingObjects: return nil
        }
    }

    /// The value range of an integer type, nil for other types.
    public var integerRange: ClosedRange<Int64>? {
        switch self {
        case .int, .int64: return Int64.min...Int64.max
        case .int8: return Int64(Int8.min)...Int64(Int8.max)
        case .int16: return Int64(Int16.min)...Int64(Int16.max)
        case .int32: return Int64(Int32.min)...Int64(Int32.max)
        default: return nil
        }
    }

    /// Types allowed as a primary key: integers, `String`, `UUID`, `ObjectId` (and their optionals).
    public var canBePrimaryKey: Bool { integerRange != nil || self == .string || self == .uuid || self == .objectId }

    /// Types allowed for a secondary index: the primary key types, `Bool` and `Date`.
    public var canBeIndexed: Bool { canBePrimaryKey || self == .bool || self == .date }
}

/// Where the values of one JSON object of a schema file are. Never part of equality: a schema read
/// from a file equals the same schema built in code.
public struct SourceLocations: Sendable, Equatable {
    /// Where the object starts (its `{`).
    public var start: SourcePosition
    /// Where each key's value starts.
    public var values: [String: SourcePosition]

    /// Creates locations; the default is unknown everywhere.
    public init(start: SourcePosition = .unknown, values: [String: SourcePosition] = [:]) {
        self.start = start
        self.values = values
    }

    /// Where the value of `key` is, or the object's start when the key is absent.
    public subscript(key: String) -> SourcePosition { values[key] ?? start }

    /// Always true: positions are not part of a schema's meaning.
    public static func == (_: SourceLocations, _: SourceLocations) -> Bool { true }
}
