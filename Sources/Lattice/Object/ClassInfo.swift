import CLMDB

/// A property as one open handle stores it: its record column, field address and index database.
final class PropertyInfo {
    let property: Property
    /// Position of the payload in records (the stored schema's order).
    let column: Int
    /// Byte offset of the `Persisted` storage inside an instance.
    let offset: Int
    let accessor: any PersistedField.Type
    let valueType: any _Persistable.Type
    /// The case-folded index (`f:Class.property`) of an indexed String property, for `==[c]` and `BEGINSWITH[c]`.
    var foldedIndexDBI: MDB_dbi?
    /// The index database (`i:Class.property`), for indexed properties other than an integer primary key.
    var indexDBI: MDB_dbi?

    init(property: Property, column: Int, field: ModelMetadata.Field) {
        self.property = property
        self.column = column
        self.offset = field.offset
        self.accessor = field.accessor
        self.valueType = field.accessor.valueType
    }

    var name: String { property.name }

    /// Strings and Data may be up to 16 MiB (FEATURES M8).
    static let maxValueBytes = 16 << 20
}

/// A model class as one open handle stores it.
final class ClassInfo {
    let type: Object.Type
    let schema: ObjectSchema
    /// Properties in column order.
    let columns: [PropertyInfo]
    /// Properties in declaration order (for array values of `create` and `description`).
    let declared: [PropertyInfo]
    let primaryKey: PropertyInfo?
    /// A non-optional integer primary key is the object key itself: no separate index, one lookup.
    let keyedByPrimaryKey: Bool
    let objectsDBI: MDB_dbi
    let indexed: [PropertyInfo]

    var name: String { schema.className }

    init(metadata: ModelMetadata, storedOrder: [String], dbis: [String: MDB_dbi]) {
        type = metadata.type
        let declared = zip(metadata.schema.properties, metadata.fields).map { property, field in
            PropertyInfo(property: property, column: storedOrder.firstIndex(of: property.name) ?? 0, field: field)
        }
        let columns = declared.sorted { $0.column < $1.column }
        self.declared = declared
        self.columns = columns
        schema = ObjectSchema(className: metadata.schema.className, properties: columns.map(\.property))
        primaryKey = columns.first { $0.property.isPrimaryKey }
        keyedByPrimaryKey = primaryKey.map { $0.property.type.isInteger && !$0.property.isOptional } ?? false
        objectsDBI = dbis[FileLayout.objects(schema.className)] ?? 0
        for p in columns where p.property.isIndexed {
            p.indexDBI = dbis[FileLayout.index(schema.className, p.name)]
        }
        for p in columns where p.indexDBI != nil && p.property.type == .string {
            p.foldedIndexDBI = dbis[FileLayout.foldedIndex(schema.className, p.name)]
        }
        indexed = columns.filter { $0.indexDBI != nil }
    }

    func property(named name: String) -> PropertyInfo? { declared.first { $0.name == name } }
}

/// Names of the LMDB databases inside a Lattice file (see the *File Format* article).
enum FileLayout {
    static let meta = "meta"
    /// Reserved for the per-commit change log that notifications will read.
    static let changes = "changes"
    static func objects(_ className: String) -> String { "o:" + className }
    static func index(_ className: String, _ property: String) -> String { "i:\(className).\(property)" }

    /// Every database a schema needs, with whether it holds sorted duplicates.
    static func databases(for schema: Schema) -> [(name: String, dupSort: Bool)] {
        var out: [(String, Bool)] = [(meta, false)]
        for cls in schema.objectSchemas {
            out.append((objects(cls.className), false))
            for p in cls.properties where p.isIndexed {
                if p.isPrimaryKey && p.type.isInteger && !p.isOptional { continue }
                out.append((index(cls.className, p.name), true))
            }
        }
        return out
    }

    /// Index keys longer than this are truncated; equality lookups then verify candidates.
    static let maxIndexKey = 480

    /// The case-folded index of an indexed String property: same shape as `index`, keyed by the folded string.
    static func foldedIndex(_ className: String, _ property: String) -> String { "f:\(className).\(property)" }

    /// The case-folded indexes a schema needs (sorted duplicates, like every index).
    static func foldedIndexes(for schema: Schema) -> [(name: String, dupSort: Bool)] {
        schema.objectSchemas.flatMap { cls in
            cls.properties.filter { $0.isIndexed && $0.type == .string }.map { (foldedIndex(cls.className, $0.name), true) }
        }
    }

    /// Current file format version (meta key `format`).
    static let formatVersion: UInt32 = 1
}
