import Foundation

/// Migrates a file from its stored schema to a declared one in one write transaction (see the
/// *Migrations* article for the rules and costs).
///
/// Records keep their columns where they are while the migration block runs: every stored column stays
/// at its position (a removed or retyped property's column becomes a hidden *dead* column that old
/// objects still read), and new properties get columns appended after them, which records written
/// before simply lack (they read as the type's default). After the block, a class that has dead columns
/// is re-laid out once; a class that only gained properties keeps every record as it is. Renames (from
/// the models' `originalName`s, or `renameProperty` in the block) move the tables and backlink ids named
/// after the property or class; indexes that are new, renamed or retyped are built from the records.
final class SchemaMigrator {
    private let env: Environment
    private let configuration: Lattice.Configuration
    /// The schema stored in the file.
    let stored: Schema
    /// The stored schema with the renames applied so far: old objects are read with it.
    private(set) var renamed: Schema
    /// The declared schema (without former names).
    let target: Schema
    private var tables: [String: Table]
    private let meta: Table
    let context: WriteContext
    /// Column layouts of the classes being migrated, by class name (built on first use).
    private var layouts: [String: [Slot]]?
    private var workHandle: Lattice?
    private var oldHandle: Lattice?
    /// Handles replaced after a rename: kept alive, as objects they made reference their classes.
    private var retired: [Lattice] = []

    /// One record column during the migration.
    struct Slot {
        /// The property as the column stores it (the old property for an old column, the new one for an
        /// appended column).
        var stored: Property
        /// Whether the column existed before the migration.
        var isOld: Bool
        /// The declared property the column holds, or nil for a dead column.
        var live: String?
    }

    init(env: Environment, stored: Schema, declared: Schema, tables: [String: Table], configuration: Lattice.Configuration) throws {
        guard let meta = tables[FileLayout.meta] else {
            throw LatticeError.invalidFile(path: env.path, reason: "its metadata database is missing.")
        }
        self.env = env
        self.configuration = configuration
        self.stored = stored
        self.renamed = stored
        self.target = Schema(declared.objectSchemas.map(SchemaMigrator.withoutFormerNames))
        self.tables = tables
        self.meta = meta
        context = WriteContext(txn: try Transaction(writeOn: env))
        // The model's former names apply before anything else: class renames first (links name classes).
        for cls in declared.objectSchemas {
            if let original = cls.originalName, original != cls.className, renamed[original] != nil, renamed[cls.className] == nil {
                try renameClass(from: original, to: cls.className)
            }
        }
        for cls in declared.objectSchemas {
            for p in cls.allProperties {
                guard let original = p.originalName, original != p.name, let old = renamed[cls.className],
                      old[original] != nil, old[p.name] == nil else { continue }
                try renameStoredProperty(cls.className, from: original, to: p.name)
            }
        }
    }

    /// Runs the migration (the block with `oldVersion`, then the steps after it) and commits. Returns the
    /// stored schema. Any error rolls everything back, leaving the file as it was.
    func run(oldVersion: UInt64) throws -> Schema {
        do {
            if let block = configuration.migrationBlock {
                let migration = Migration(migrator: self)
                context.migrationJournal = MigrationJournal()
                defer { context.migrationJournal = nil }
                try block(migration, oldVersion)
                if let error = migration.pendingError ?? context.pendingError { throw error }
            } else if let changed = retypedProperty() {
                throw LatticeError.migrationFailed(className: changed.className, reason:
                    "property '\(changed.property)' changed type from \(changed.from) to \(changed.to); a migration block must convert "
                    + "its values (Configuration.migrationBlock), or remove the property and add one with another name.")
            }
            let schema = try finish()
            try context.storeListDirectory()
            try context.txn.commit()
            release()
            return schema
        } catch {
            release()
            context.txn.abort()
            throw error
        }
    }

    private func release() {
        for handle in [workHandle, oldHandle].compactMap({ $0 }) + retired { handle.writer = nil }
        workHandle = nil
        oldHandle = nil
        retired = []
    }

    // MARK: Layouts and handles

    /// The layouts, built from the renamed old schema and the declared one on first use.
    private func currentLayouts() throws -> [String: [Slot]] {
        if let layouts { return layouts }
        var out: [String: [Slot]] = [:]
        for cls in target.objectSchemas {
            var slots: [Slot] = []
            if let old = renamed[cls.className] {
                if old.isEmbedded != cls.isEmbedded, try count(cls.className) > 0 {
                    throw LatticeError.migrationFailed(className: cls.className, reason:
                        "making a class \(cls.isEmbedded ? "embedded" : "top-level") is not supported while it has objects.")
                }
                for p in old.allProperties {
                    let live = cls[p.name].flatMap { SchemaMigrator.sameStorage(p, $0) ? $0.name : nil }
                    if live == nil, let new = cls[p.name], p.collection != nil || new.collection != nil {
                        throw LatticeError.migrationFailed(className: cls.className, reason:
                            "collection property '\(p.name)' changed from \(p.typeName(withOptionality: true)) to "
                            + "\(new.typeName(withOptionality: true)); remove it and add a property with another name.")
                    }
                    slots.append(Slot(stored: p, isOld: true, live: live))
                }
            }
            for p in cls.allProperties where !slots.contains(where: { $0.live == p.name }) {
                slots.append(Slot(stored: p, isOld: false, live: p.name))
            }
            out[cls.className] = slots
        }
        layouts = out
        try convertOptionality(out)
        return out
    }

    /// Whether a stored column holds `new`'s values as they are.
    private static func sameStorage(_ old: Property, _ new: Property) -> Bool {
        old.type == new.type && old.isOptional == new.isOptional && old.collection == new.collection
            && old.objectClassName == new.objectClassName && old.originProperty == new.originProperty
    }

    /// The first property whose type (not only optionality) changed, if any.
    private func retypedProperty() -> (className: String, property: String, from: String, to: String)? {
        for cls in target.objectSchemas {
            guard let old = renamed[cls.className] else { continue }
            for p in cls.allProperties {
                guard let o = old[p.name], o.type != p.type || o.objectClassName != p.objectClassName else { continue }
                return (cls.className, p.name, o.typeName(withOptionality: true), p.typeName(withOptionality: true))
            }
        }
        return nil
    }

    /// The classes of the work handle: each declared class with its current layout (properties not yet
    /// indexed as declared unless their index is kept as it is), and each removed class as stored.
    private func workClasses() throws -> [ClassInfo] {
        let layouts = try currentLayouts()
        var infos: [ClassInfo] = []
        var aliases = tables
        var deadLinks: [(className: String, hidden: String, linkID: UInt32)] = []
        for cls in target.objectSchemas {
            let slots = layouts[cls.className] ?? []
            guard let old = renamed[cls.className] else {
                // A new class is as declared from the start.
                infos.append(ClassInfo(metadata: DynamicObject.metadata(for: cls), storedOrder: cls.allProperties.map(\.name), tables: tables))
                continue
            }
            let properties = slots.map { slot -> Property in
                if let live = slot.live, let p = cls[live] {
                    let keepIndex = slot.isOld && slot.stored.isIndexed && p.isIndexed && slot.stored.isPrimaryKey == p.isPrimaryKey
                    return Property(name: live, type: p.type, isOptional: p.isOptional, isIndexed: keepIndex, isPrimaryKey: keepIndex && p.isPrimaryKey,
                                    collection: p.collection, objectClassName: p.objectClassName, originProperty: p.originProperty)
                }
                let hidden = SchemaMigrator.hiddenName(slot.stored.name, isOld: slot.isOld)
                if let kind = slot.stored.collection, slot.isOld {
                    aliases[FileLayout.collection(kind, cls.className, hidden)] = tables[FileLayout.collection(kind, cls.className, slot.stored.name)]
                }
                if slot.stored.type == .object {
                    deadLinks.append((cls.className, hidden, FileLayout.linkID(cls.className, slot.stored.name)))
                }
                let s = slot.stored
                return Property(name: hidden, type: s.type, isOptional: s.isOptional, collection: s.collection,
                                objectClassName: s.objectClassName, originProperty: s.originProperty)
            }
            let schema = ObjectSchema(className: cls.className, properties: properties, isEmbedded: old.isEmbedded)
            infos.append(ClassInfo(metadata: DynamicObject.metadata(for: schema), storedOrder: properties.map(\.name), tables: aliases))
        }
        for cls in renamed.objectSchemas where target[cls.className] == nil {
            infos.append(ClassInfo(metadata: DynamicObject.metadata(for: cls), storedOrder: cls.allProperties.map(\.name), tables: tables))
        }
        for dead in deadLinks {
            infos.first { $0.name == dead.className }?.property(named: dead.hidden)?.linkID = dead.linkID
        }
        ClassInfo.link(Dictionary(uniqueKeysWithValues: infos.map { ($0.name, $0) }))
        return infos
    }

    /// A dead column's name: no declared property can have it.
    private static func hiddenName(_ name: String, isOld: Bool) -> String { (isOld ? "\u{1}old." : "\u{1}new.") + name }

    /// The handle on the declared schema (as laid out during the migration) that the block writes through.
    func work() throws -> Lattice {
        if let workHandle { return workHandle }
        let classes = try workClasses()
        // Laying the classes out the first time converts values through a work handle already.
        if let workHandle { return workHandle }
        let handle = try Lattice(env: env, configuration: configuration, schema: target, classes: classes, metaTable: meta)
        handle.writer = context
        handle.recordsAccessErrors = true
        workHandle = handle
        return handle
    }

    /// The read-only handle on the old schema (with the renames applied so far).
    func old() throws -> Lattice {
        if let oldHandle { return oldHandle }
        let infos = renamed.objectSchemas.map {
            ClassInfo(metadata: DynamicObject.metadata(for: $0), storedOrder: $0.allProperties.map(\.name), tables: tables)
        }
        ClassInfo.link(Dictionary(uniqueKeysWithValues: infos.map { ($0.name, $0) }))
        let handle = try Lattice(env: env, configuration: configuration, schema: renamed, classes: infos, metaTable: meta)
        handle.writer = context
        handle.recordsAccessErrors = true
        oldHandle = handle
        return handle
    }

    /// Drops both handles so the next use rebuilds them (after a rename).
    private func retireHandles() {
        for handle in [workHandle, oldHandle].compactMap({ $0 }) { retired.append(handle) }
        workHandle = nil
        oldHandle = nil
    }

    private func count(_ className: String) throws -> Int {
        guard let table = tables[FileLayout.objects(className)] else { return 0 }
        return try context.txn.count(table)
    }

    // MARK: Renames

    private func table(_ name: String) throws -> Table {
        if let table = tables[name] { return table }
        let opened = try env.openTables([(name, name.hasPrefix("b:") || name.hasPrefix("i:") || name.hasPrefix("f:"))], create: false)
        guard let table = opened[name] else {
            throw LatticeError.invalidFile(path: env.path, reason: "database '\(name)' is missing.")
        }
        tables[name] = table
        return table
    }

    /// Renames a stored class: moves its tables and backlink ids, and renames the links to it.
    private func renameClass(from old: String, to new: String) throws {
        guard let cls = renamed[old] else { return }
        let handle = try self.old()
        try handle.moveEntries(from: try table(FileLayout.objects(old)), to: try table(FileLayout.objects(new)))
        if let backlinks = tables[FileLayout.backlinks(old)] { try handle.moveEntries(from: backlinks, to: try table(FileLayout.backlinks(new))) }
        for p in cls.allProperties {
            if let kind = p.collection {
                try handle.moveEntries(from: try table(FileLayout.collection(kind, old, p.name)), to: try table(FileLayout.collection(kind, new, p.name)))
            }
            if p.type == .object, let targetName = p.objectClassName {
                let linked = targetName == old ? new : targetName
                try handle.renameLinkID(in: try table(FileLayout.backlinks(linked)), from: FileLayout.linkID(old, p.name), to: FileLayout.linkID(new, p.name))
            }
            if p.isIndexed, let index = tables[FileLayout.index(old, p.name)] { try handle.emptyTable(index) }
            if let folded = tables[FileLayout.foldedIndex(old, p.name)] { try handle.emptyTable(folded) }
        }
        try handle.renameSequence(from: old, to: new)
        renamed = Schema(renamed.objectSchemas.map { c in
            ObjectSchema(className: c.className == old ? new : c.className, properties: c.allProperties.map { p in
                // Indexes of the renamed class were emptied: the migration builds them again.
                SchemaMigrator.property(p, name: p.name, objectClassName: p.objectClassName == old ? new : p.objectClassName,
                                        isIndexed: c.className == old ? false : p.isIndexed)
            }, isEmbedded: c.isEmbedded)
        })
        retireHandles()
    }

    /// Renames a stored property: moves its collection table and backlink ids; its index is rebuilt.
    func renameStoredProperty(_ className: String, from old: String, to new: String) throws {
        guard let cls = renamed[className], let p = cls[old] else { return }
        let handle = try self.old()
        if let kind = p.collection {
            try handle.moveEntries(from: try table(FileLayout.collection(kind, className, old)), to: try table(FileLayout.collection(kind, className, new)))
        }
        if p.type == .object, let targetName = p.objectClassName {
            try handle.renameLinkID(in: try table(FileLayout.backlinks(targetName)), from: FileLayout.linkID(className, old),
                                    to: FileLayout.linkID(className, new))
        }
        if p.isIndexed, let index = tables[FileLayout.index(className, old)] { try handle.emptyTable(index) }
        if let folded = tables[FileLayout.foldedIndex(className, old)] { try handle.emptyTable(folded) }
        renamed = Schema(renamed.objectSchemas.map { c in
            guard c.className == className else { return c }
            return ObjectSchema(className: c.className, properties: c.allProperties.map {
                $0.name == old ? SchemaMigrator.property($0, name: new, objectClassName: $0.objectClassName, isIndexed: false) : $0
            }, isEmbedded: c.isEmbedded)
        })
        if var layouts, var slots = layouts[className] {
            if context.changes.isEmpty {
                self.layouts = nil  // nothing written yet: lay the class out afresh
            } else if let at = slots.firstIndex(where: { $0.isOld && $0.stored.name == old }), let declared = target[className]?[new] {
                // Written already: appended columns keep their places; the renamed column takes over.
                slots[at].stored = SchemaMigrator.property(slots[at].stored, name: new, objectClassName: slots[at].stored.objectClassName, isIndexed: false)
                if SchemaMigrator.sameStorage(slots[at].stored, declared) {
                    for i in slots.indices where slots[i].live == new { slots[i].live = nil }
                    slots[at].live = new
                }
                layouts[className] = slots
                self.layouts = layouts
            }
        }
        retireHandles()
    }

    private static func property(_ p: Property, name: String, objectClassName: String?, isIndexed: Bool) -> Property {
        Property(name: name, type: p.type, isOptional: p.isOptional, isIndexed: isIndexed && !p.isPrimaryKey, isPrimaryKey: p.isPrimaryKey,
                 collection: p.collection, objectClassName: objectClassName, originProperty: p.originProperty)
    }

    private static func withoutFormerNames(_ cls: ObjectSchema) -> ObjectSchema {
        ObjectSchema(className: cls.className, properties: cls.allProperties.map {
            Property(name: $0.name, type: $0.type, isOptional: $0.isOptional, isIndexed: $0.isIndexed, isPrimaryKey: $0.isPrimaryKey,
                     collection: $0.collection, objectClassName: $0.objectClassName, originProperty: $0.originProperty)
        }, isEmbedded: cls.isEmbedded)
    }

    // MARK: Automatic conversions

    /// Copies the values of properties whose optionality changed into their new columns (nil becomes the
    /// type's default), before the block runs.
    private func convertOptionality(_ layouts: [String: [Slot]]) throws {
        var pairs: [(className: String, from: Int, to: Int)] = []
        for (className, slots) in layouts {
            for (i, slot) in slots.enumerated() where slot.isOld && slot.live == nil {
                guard let to = slots.firstIndex(where: { !$0.isOld && $0.live == slot.stored.name }),
                      slot.stored.type == slots[to].stored.type, slot.stored.collection == nil,
                      slot.stored.objectClassName == slots[to].stored.objectClassName else { continue }
                pairs.append((className, i, to))
            }
        }
        guard !pairs.isEmpty else { return }
        let handle = try work()
        for pair in pairs {
            guard let info = handle.classesByName[pair.className] else { continue }
            let from = info.columns[pair.from], to = info.columns[pair.to]
            for (keyBytes, _) in try handle.allEntries(info.objectsTable) {
                let key = keyBytes.withUnsafeBytes { KeyCodec.int($0) }
                guard let record = try handle.fetchRecord(info, key: key) else { continue }
                let value = record.withBytes { RecordView($0)?.payload(from.column).flatMap { from.valueType.decodeAny($0) } }
                var payload: [UInt8] = []
                if let value, to.valueType.encodeAny(persistedValue(value), into: &payload) {} else { to.valueType._latticeDefaultEncoded(into: &payload) }
                let updated = record.withBytes { handle.replacing(RecordView($0), in: info, with: [to.column: payload]) }
                try handle.store(info, key: key, record: updated, old: record, context.txn, changed: ChangeSet.columnBit(to.column))
            }
        }
    }

    // MARK: After the block

    /// Deletes removed classes, re-lays out classes with dead columns, builds indexes, stores the schema.
    private func finish() throws -> Schema {
        let handle = try work()
        let layouts = try currentLayouts()
        // Removed classes go first, through the write path: links from them (and their embedded objects) go with them.
        for cls in renamed.objectSchemas where target[cls.className] == nil {
            guard let info = handle.classesByName[cls.className] else { continue }
            try deleteAll(info, in: handle)
        }
        // Dead links and collections are emptied through the write path (backlinks, embedded objects).
        for cls in target.objectSchemas {
            guard let info = handle.classesByName[cls.className], let slots = layouts[cls.className] else { continue }
            let dead = slots.indices.filter { slots[$0].live == nil && (slots[$0].stored.type == .object) }
            guard !dead.isEmpty else { continue }
            for key in try keys(info, in: handle) {
                for column in dead where info.columns[column].property.collection != nil {
                    try handle.clearCollection(info.columns[column], owner: key)
                }
                guard let record = try handle.fetchRecord(info, key: key) else { continue }
                let links = dead.filter { info.columns[$0].property.collection == nil }
                guard !links.isEmpty else { continue }
                let cleared = record.withBytes { handle.replacing(RecordView($0), in: info, with: Dictionary(uniqueKeysWithValues: links.map { ($0, []) })) }
                try handle.store(info, key: key, record: cleared, old: record, context.txn, keepingEmbedded: false)
            }
        }
        // The final schema: live columns in their current order.
        let final = Schema(target.objectSchemas.map { cls in
            ObjectSchema(className: cls.className, properties: (layouts[cls.className] ?? []).compactMap { $0.live.flatMap { cls[$0] } },
                         isEmbedded: cls.isEmbedded)
        })
        let finalTables = try env.openTables(FileLayout.databases(for: final), create: false)
        tables.merge(finalTables) { _, new in new }
        let infos = final.objectSchemas.map {
            ClassInfo(metadata: DynamicObject.metadata(for: $0), storedOrder: $0.allProperties.map(\.name), tables: tables)
        }
        ClassInfo.link(Dictionary(uniqueKeysWithValues: infos.map { ($0.name, $0) }))
        let finalHandle = try Lattice(env: env, configuration: configuration, schema: final, classes: infos, metaTable: meta)
        finalHandle.writer = context
        retired.append(finalHandle)
        for info in infos where renamed[info.name] != nil {
            let slots = layouts[info.name] ?? []
            let live = slots.filter { $0.live != nil }
            let randomDefaults = live.contains {
                !$0.isOld && !$0.stored.isOptional && $0.stored.collection == nil && ($0.stored.type == .uuid || $0.stored.type == .objectId)
            }
            if live.count != slots.count || randomDefaults {
                try relayOut(info, slots: slots, in: finalHandle)
            }
            try buildIndexes(info, slots: slots, in: finalHandle)
        }
        // Tables of the stored schema that the migrated one does not use are emptied.
        let used = Set(FileLayout.databases(for: final).map(\.name))
        for spec in FileLayout.databases(for: stored) + FileLayout.databases(for: renamed) where !used.contains(spec.name) {
            if let table = tables[spec.name] { try finalHandle.emptyTable(table) }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try finalHandle.storeSchema(Array(try encoder.encode(final)), version: configuration.schemaVersion)
        try handle.storeSequences()
        return final
    }

    /// The object keys of a class, in key order.
    private func keys(_ info: ClassInfo, in handle: Lattice) throws -> [Int64] {
        try handle.allEntries(info.objectsTable).map { $0.key.withUnsafeBytes { KeyCodec.int($0) } }
    }

    /// Deletes every object of a class through the write path; true when there were any.
    @discardableResult
    func deleteAll(_ info: ClassInfo, in handle: Lattice) throws -> Bool {
        let keys = try keys(info, in: handle)
        for key in keys {
            guard let record = try handle.fetchRecord(info, key: key) else { continue }
            try handle.deleteObject(info, key: key, old: record)
        }
        return !keys.isEmpty
    }

    /// Rewrites every record of a class with its live columns only, in order (new columns a record lacks
    /// get the type's default).
    private func relayOut(_ info: ClassInfo, slots: [Slot], in handle: Lattice) throws {
        let live = slots.indices.filter { slots[$0].live != nil }
        for (keyBytes, recordBytes) in try handle.allEntries(info.objectsTable) {
            let key = keyBytes.withUnsafeBytes { KeyCodec.int($0) }
            let record = recordBytes.withUnsafeBytes { bytes -> [UInt8] in
                let view = RecordView(bytes)
                return Record.build(count: live.count, stamp: view?.stamp ?? 0) { out, i in
                    if let payload = view?.payload(live[i]) {
                        out.append(contentsOf: payload)
                    } else {
                        info.columns[i].valueType._latticeDefaultEncoded(into: &out)
                    }
                }
            }
            try handle.relayRecord(info, key: key, record: record)
        }
    }

    /// Builds the indexes that are new, renamed, retyped or were dropped with a re-layout; a new primary
    /// key must be unique. A class newly keyed by an integer primary key needs its objects re-keyed,
    /// which is only possible while it has none.
    private func buildIndexes(_ info: ClassInfo, slots: [Slot], in handle: Lattice) throws {
        let old = renamed[info.name]
        for p in info.columns where p.property.isIndexed {
            let slot = slots.first { $0.live == p.name }
            let kept = slot.map { $0.isOld && $0.stored.isIndexed && $0.stored.isPrimaryKey == p.property.isPrimaryKey } ?? false
            if p.property.isPrimaryKey && info.keyedByPrimaryKey {
                let wasKeyed = old?.primaryKeyProperty.map { $0.name == p.name && $0.type.isInteger && !$0.isOptional } ?? false
                if !wasKeyed && kept == false, try count(info.name) > 0 {
                    throw LatticeError.migrationFailed(className: info.name, reason:
                        "making '\(p.name)' (a non-optional integer) the primary key of a class that has objects is not supported yet; "
                        + "declare it Int? or make another property the primary key.")
                }
                continue
            }
            if kept { continue }
            if let index = p.indexTable { try handle.emptyTable(index) }
            if let folded = p.foldedIndexTable { try handle.emptyTable(folded) }
            try handle.buildIndex(info, p, unique: p.property.isPrimaryKey)
        }
        if !info.keyedByPrimaryKey, let pk = old?.primaryKeyProperty, pk.type.isInteger, !pk.isOptional {
            try handle.resetSequence(info)
        }
    }
}
