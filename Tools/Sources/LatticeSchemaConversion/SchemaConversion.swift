import Lattice
import LatticeSchemaFile

extension SchemaFile {
    /// The schema a database stores for these classes: what ``Lattice/Lattice/schema`` reports for a
    /// file opened with the generated classes.
    ///
    /// What a database does not store is dropped: doc comments, initial values, former names, and
    /// enums (an enum property is stored as its raw type).
    /// - Parameter files: validated files (``SchemaFile/validate(_:)``), converted together.
    public static func latticeSchema(of files: [SchemaFile]) -> Schema {
        Schema(files.flatMap(\.classes).map { cls in
            ObjectSchema(className: cls.className, properties: cls.properties.map(\.latticeProperty), isEmbedded: cls.isEmbedded)
        })
    }

    /// A schema file describing `schema`, the schema stored in a database (`lattice schema export`).
    ///
    /// A database stores no doc comments, initial values, enums or former names. `annotations`, a schema
    /// file of the same model (usually the one the app's classes were generated from), supplies them:
    /// a class of the same name gets its doc comment, and a property of the same name and stored shape
    /// (type, collection, linked class, origin, optionality) gets its doc comment, initial value and enum,
    /// with the enums used copied over. Without annotations, enum properties come out as their raw type.
    /// Former names are never carried over: they describe a change already applied to the database.
    ///
    /// Classes are written in the order of `annotations`, then by name; properties in storage order.
    public init(exporting schema: Schema, fileName: String, schemaVersion: UInt64? = nil, annotations: SchemaFile? = nil) {
        let annotated = annotations?.classes ?? []
        let order = Dictionary(annotated.enumerated().map { ($0.element.className, $0.offset) }, uniquingKeysWith: { first, _ in first })
        let sorted = schema.objectSchemas.sorted {
            (order[$0.className] ?? Int.max, $0.className) < (order[$1.className] ?? Int.max, $1.className)
        }
        var usedEnums = Set<String>()
        let classes = sorted.map { stored -> ClassSpec in
            let note = annotated.first { $0.className == stored.className }
            let properties = stored.allProperties.map { property -> PropertySpec in
                var spec = PropertySpec(property)
                if let source = note?[property.name], source.hasSameStoredShape(as: spec) {
                    spec.doc = source.doc
                    spec.defaultValue = source.defaultValue
                    spec.enumName = source.enumName
                    if let name = source.enumName { usedEnums.insert(name) }
                }
                return spec
            }
            return ClassSpec(className: stored.className, isEmbedded: stored.isEmbedded, properties: properties, doc: note?.doc)
        }
        self.init(fileName: fileName, schemaVersion: schemaVersion,
                  enums: (annotations?.enums ?? []).filter { usedEnums.contains($0.name) }, classes: classes)
    }
}

extension PropertySpec {
    /// The property as a database stores it.
    public var latticeProperty: Property {
        Property(name: name, type: type.propertyType, isOptional: isOptional, isIndexed: isIndexed, isPrimaryKey: isPrimaryKey,
                 collection: collection.map(\.collectionKind), objectClassName: objectClassName, originProperty: originProperty)
    }

    /// A property of a schema file describing `property`, with nothing the database does not store.
    public init(_ property: Property) {
        self.init(name: property.name, type: ValueType(property.type), collection: property.collection.map(CollectionType.init),
                  objectClassName: property.objectClassName, originProperty: property.originProperty,
                  isOptional: property.isOptional, isIndexed: property.isIndexed, isPrimaryKey: property.isPrimaryKey)
    }

    /// Whether `other` is stored the same way (its doc, default and enum may differ).
    func hasSameStoredShape(as other: PropertySpec) -> Bool {
        latticeProperty == other.latticeProperty
    }
}

extension ValueType {
    /// The database's name of this type.
    public var propertyType: PropertyType {
        switch self {
        case .bool: return .bool
        case .int: return .int
        case .int8: return .int8
        case .int16: return .int16
        case .int32: return .int32
        case .int64: return .int64
        case .float: return .float
        case .double: return .double
        case .string: return .string
        case .data: return .data
        case .date: return .date
        case .uuid: return .uuid
        case .decimal: return .decimal
        case .objectId: return .objectId
        case .object: return .object
        case .linkingObjects: return .linkingObjects
        }
    }

    /// The schema file's name of a database type.
    public init(_ type: PropertyType) {
        switch type {
        case .bool: self = .bool
        case .int: self = .int
        case .int8: self = .int8
        case .int16: self = .int16
        case .int32: self = .int32
        case .int64: self = .int64
        case .float: self = .float
        case .double: self = .double
        case .string: self = .string
        case .data: self = .data
        case .date: self = .date
        case .uuid: self = .uuid
        case .decimal: self = .decimal
        case .objectId: self = .objectId
        case .object: self = .object
        case .linkingObjects: self = .linkingObjects
        }
    }
}

extension CollectionType {
    /// The database's name of this collection kind.
    public var collectionKind: CollectionKind {
        switch self {
        case .list: return .list
        case .set: return .set
        case .map: return .map
        }
    }

    /// The schema file's name of a database collection kind.
    public init(_ kind: CollectionKind) {
        switch kind {
        case .list: self = .list
        case .set: self = .set
        case .map: self = .map
        }
    }
}
