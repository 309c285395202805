import CLatticeSupport

/// A property as one open handle stores it: its record column, field address and index database.
final class PropertyInfo {
    let property: Property
    /// Position of the payload in records (the stored schema's order).
    let column: Int
    /// Byte offset of the `Persisted` storage inside an instance.
    let offset: Int
    let accessor: any PersistedField.Type
    let valueType: any _Persistable.Type
    /// Which built-in value type it holds: encoded and keyed without type erasure (`.other`: through
    /// `accessor` and `valueType`).
    let kind: ValueKind
    /// Links and collections: their unmanaged values reference other objects.
    let holdsReferences: Bool
    /// A single value in the record (a `_PersistableBase` type or its Optional), not a link, collection
    /// or backlinks: worked out once, the casts cost more than the rest of binding a query term.
    let isSingleValue: Bool
    /// The case-folded index (`f:Class.property`) of an indexed String property, for `==[c]` and `BEGINSWITH[c]`.
    var foldedIndexTable: Table?
    /// The index database (`i:Class.property`), for indexed properties other than an integer primary key.
    var indexTable: Table?
    /// The elements database of a List (`l:`), MutableSet (`s:`) or Map (`m:`) property.
    var collectionTable: Table?
    /// The class linked to (links, collections of objects, linking objects); set once all classes exist.
    unowned var target: ClassInfo?
    /// Identifies this property in the target's backlink table (see `FileLayout.linkID`).
    var linkID: UInt32 = 0

    /// The class the property belongs to.
    let ownerName: String
    /// `Class.property`: how change records name a collection property (built once, not per change).
    let qualifiedName: String

    init(property: Property, column: Int, field: ModelMetadata.Field, ownerName: String) {
        self.property = property
        self.ownerName = ownerName
        qualifiedName = "\(ownerName).\(property.name)"
        self.column = column
        self.offset = field.offset
        self.accessor = field.accessor
        self.valueType = field.accessor.valueType
        self.kind = ValueKind(valueType)
        self.holdsReferences = valueType._latticeObjectType != nil || valueType._latticeCollection != nil
        self.isSingleValue = valueType is any _PersistableBase.Type || valueType is any _OptionalScalar.Type
    }

    var name: String { property.name }
    /// A to-one link.
    var isLink: Bool { property.type == .object && property.collection == nil }
    /// Links to objects (to-one or a collection of objects): kept in the target's backlink table.
    var linksObjects: Bool { property.type == .object }

    /// Strings and Data may be up to 16 MiB.
    static let maxValueBytes = 16 << 20
}

/// Where a column's value is in an instance and how to encode it.
struct ColumnEncoder {
    /// Byte offset of the `Persisted` storage inside an instance.
    let offset: Int
    let kind: ValueKind
    let accessor: any PersistedField.Type
}

/// A model class as one open handle stores it.
final class ClassInfo {
    let type: Object.Type
    let schema: ObjectSchema
    /// Properties in column order.
    let columns: [PropertyInfo]
    /// How each column is encoded, in column order (plain values: encoding reads them without
    /// retaining every `PropertyInfo` of every object added).
    let encoders: [ColumnEncoder]
    /// Properties in declaration order (for array values of `create` and `description`).
    let declared: [PropertyInfo]
    /// Where each property's column number goes inside an instance (byte offset of `Persisted.column`),
    /// and the number: `attach` stores them without a call per property.
    let columnSlots: [(offset: Int, column: Int32)]
    let primaryKey: PropertyInfo?
    /// A non-optional integer primary key is the object key itself: no separate index, one lookup.
    let keyedByPrimaryKey: Bool
    /// Keyed by its primary key, with no links or collections: adding a new object encodes nothing
    /// else and is one put that refuses an existing key (no lookup first).
    let addsWithOnePut: Bool
    let objectsTable: Table
    /// An instance no one else references may be rebound to another stored object (the class opted in
    /// and keeps no state besides `@Persisted` properties): see `Object.recycled`.
    let recyclable: Bool
    /// The class keeps no state besides `@Persisted` properties, so an instance made to stand for a stored
    /// object may skip their initial values (see `instance(_:)`).
    private let placeholding: Bool
    let indexed: [PropertyInfo]
    /// Columns whose changes `store()` mirrors elsewhere: indexed properties and to-one links (backlinks).
    let maintained: [PropertyInfo]
    /// `b:Class`: who links to objects of this class (nil when nothing can).
    let backlinkTable: Table?
    /// Link and collection-of-object properties of any class that point at this class.
    var incoming: [PropertyInfo] = []
    /// The class each incoming property belongs to, by link id.
    var incomingOwners: [UInt32: ClassInfo] = [:]
    /// For the dynamic class standing for a model class on the same handle: the model class, whose writes
    /// its writes count as (so that results of either see the other's writes). Nil: itself.
    var writesID: ObjectIdentifier?

    var name: String { schema.className }

    init(metadata: ModelMetadata, storedOrder: [String], tables: [String: Table]) {
        type = metadata.type
        let declared = zip(metadata.schema.allProperties, metadata.fields).map { property, field in
            PropertyInfo(property: property, column: storedOrder.firstIndex(of: property.name) ?? 0, field: field,
                         ownerName: metadata.schema.className)
        }
        let columns = declared.sorted { $0.column < $1.column }
        self.declared = declared
        self.columns = columns
        // A dynamic object has no `Persisted` fields to tell their columns.
        columnSlots = metadata.type == DynamicObject.self ? [] : columns.map { ($0.offset + $0.accessor.columnOffset, Int32($0.column)) }
        encoders = columns.map { ColumnEncoder(offset: $0.offset, kind: $0.kind, accessor: $0.accessor) }
        schema = ObjectSchema(className: metadata.schema.className, properties: columns.map(\.property), isEmbedded: metadata.schema.isEmbedded)
        primaryKey = columns.first { $0.property.isPrimaryKey }
        keyedByPrimaryKey = primaryKey.map { $0.property.type.isInteger && !$0.property.isOptional } ?? false
        addsWithOnePut = keyedByPrimaryKey && !columns.contains { $0.linksObjects || $0.property.collection != nil }
        objectsTable = tables[FileLayout.objects(schema.className)] ?? Table(id: 0)
        recyclable = metadata.onlyPersistedState && metadata.type.reusesInstancesWhileIterating
        placeholding = metadata.onlyPersistedState
        for p in columns {
            if p.property.isIndexed { p.indexTable = tables[FileLayout.index(schema.className, p.name)] }
            if let kind = p.property.collection { p.collectionTable = tables[FileLayout.collection(kind, schema.className, p.name)] }
            if p.linksObjects { p.linkID = FileLayout.linkID(schema.className, p.name) }
        }
        for p in columns where p.indexTable != nil && p.property.type == .string {
            p.foldedIndexTable = tables[FileLayout.foldedIndex(schema.className, p.name)]
        }
        indexed = columns.filter { $0.indexTable != nil }
        maintained = columns.filter { $0.indexTable != nil || $0.isLink }
        backlinkTable = tables[FileLayout.backlinks(schema.className)]
    }

    /// Connects link properties to their target classes (after every class of the handle exists).
    static func link(_ classes: [String: ClassInfo]) {
        for info in classes.values {
            for p in info.columns {
                guard let targetName = p.property.objectClassName, let target = classes[targetName] else { continue }
                p.target = target
                if p.linksObjects {
                    target.incoming.append(p)
                    target.incomingOwners[p.linkID] = info
                }
            }
        }
    }

    func property(named name: String) -> PropertyInfo? { declared.first { $0.name == name } }

    /// A new instance of `type` (this class, or the type a caller asked for) to attach to a stored object.
    /// When it is this class and the class keeps nothing but `@Persisted` properties, they take
    /// placeholders instead of running their initial-value expressions: the instance reads its record,
    /// and `@Persisted var id = UUID()` would otherwise read the system's random source for every object
    /// read. `Object.init()`, which the model's initializer reaches right after setting its own
    /// properties, ends the placeholding, so objects the rest of the initializer makes are unaffected.
    @inline(__always)
    func instance(_ type: Object.Type) -> Object {
        if placeholding && type == self.type { lattice_set_placeholding(1) }
        return type.init()
    }
}
