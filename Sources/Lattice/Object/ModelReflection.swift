@_spi(Reflection) import Swift
import Synchronization

/// The reflected shape of a model class: derived once per type and cached.
struct ModelMetadata: Sendable {
    struct Field: Sendable {
        let offset: Int
        let accessor: any PersistedField.Type
        /// The `column` field of the declaration (its flags: see `FormerNames`), as a new instance holds it.
        var declaredColumn: Int32 = -1
    }
    let type: Object.Type
    /// Properties in declaration order.
    let schema: ObjectSchema
    /// One entry per property of `schema`, same order.
    let fields: [Field]
    /// Every stored property the class adds to `Object`'s own is `@Persisted`: once managed, an
    /// instance holds nothing but which stored object it stands for (see `Object.recycled`).
    let onlyPersistedState: Bool
    /// The position in `schema.allProperties` (and `fields`) of each property, by name.
    let positions: [String: Int]

    init(type: Object.Type, schema: ObjectSchema, fields: [Field], onlyPersistedState: Bool) {
        self.type = type
        self.schema = schema
        self.fields = fields
        self.onlyPersistedState = onlyPersistedState
        positions = Dictionary(schema.allProperties.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    private static let cache = Mutex<[ObjectIdentifier: ModelMetadata]>([:])

    /// The metadata of `type`, deriving and validating it on first use.
    static func of(_ type: Object.Type) throws -> ModelMetadata {
        if type == DynamicObject.self {
            throw LatticeError.invalidSchema(className: "DynamicObject", reason: "dynamic objects take their class from a file's schema "
                + "(open it with Configuration.dynamicSchema); they are not a model class.")
        }
        let id = ObjectIdentifier(type)
        if let cached = cache.withLock({ $0[id] }) { return cached }
        let metadata = try derive(type)
        cache.withLock { $0[id] = metadata }
        return metadata
    }

    /// The types whose metadata has been derived in this process (the default `objectTypes`).
    static var derivedTypes: [Object.Type] { cache.withLock { $0.values.map(\.type) } }

    private static func derive(_ type: Object.Type) throws -> ModelMetadata {
        let className = String(describing: type)
        var fieldList: [(name: String, offset: Int, accessor: any PersistedField.Type)] = []
        var plainFields = 0
        // Option 1 (`classType`): walk a class's stored properties, its superclasses' included; names are
        // the wrappers' `_name` storage.
        let walked = _forEachField(of: type, options: _EachFieldOptions(rawValue: 1)) { name, offset, fieldType, _ in
            if let accessor = fieldType as? any PersistedField.Type {
                var n = String(cString: name)
                if n.hasPrefix("_") { n.removeFirst() }
                fieldList.append((n, offset, accessor))
            } else {
                plainFields += 1
            }
            return true
        }
        guard walked, let objectFields = objectFieldCount else {
            throw LatticeError.invalidSchema(className: className, reason: "its stored properties cannot be reflected.")
        }
        // Before the prototype: a custom type with no value for a property declared without one has
        // nothing to initialize it with.
        for field in fieldList {
            if let problem = customTypeProblem(field.accessor.valueType) {
                throw LatticeError.invalidSchema(className: className, reason: "property '\(field.name)': \(problem)")
            }
        }
        let prototype = type.init()
        let base = UnsafeRawPointer(Unmanaged.passUnretained(prototype).toOpaque())
        let properties = fieldList.map { field -> Property in
            let flags = field.accessor.flags(at: base + field.offset)
            let valueType = field.accessor.valueType
            return Property(name: field.name, type: valueType._latticeType, isOptional: valueType._latticeIsOptional,
                            isIndexed: flags.indexed, isPrimaryKey: flags.primaryKey,
                            collection: valueType._latticeCollection,
                            objectClassName: valueType._latticeObjectType.map { "\($0)" },
                            originProperty: flags.originProperty, originalName: flags.originalName)
        }
        let declaredColumns = fieldList.map { (base + $0.offset + $0.accessor.columnOffset).load(as: Int32.self) }
        withExtendedLifetime(prototype) {}
        let schema = ObjectSchema(className: className, properties: properties, isEmbedded: type is EmbeddedObject.Type,
                                  originalName: type.originalName)
        try schema.validate()
        return ModelMetadata(type: type, schema: schema,
                             fields: zip(fieldList, declaredColumns).map { Field(offset: $0.offset, accessor: $0.accessor, declaredColumn: $1) },
                             onlyPersistedState: plainFields == objectFields)
    }

    /// The number of stored properties `Object` itself declares (nil if they cannot be walked).
    private static let objectFieldCount: Int? = {
        var count = 0
        return _forEachField(of: Object.self, options: _EachFieldOptions(rawValue: 1)) { _, _, _, _ in
            count += 1
            return true
        } ? count : nil
    }()
}
