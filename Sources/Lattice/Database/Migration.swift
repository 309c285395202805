/// Called with the migration and the file's old schema version (see ``Lattice/Configuration/migrationBlock``).
public typealias MigrationBlock = @Sendable (Migration, UInt64) throws -> Void

/// A schema migration in progress, handed to ``Lattice/Configuration/migrationBlock``.
///
/// ```swift
/// config.migrationBlock = { migration, oldVersion in
///     if oldVersion < 1 {
///         migration.renameProperty(onType: "Exam", from: "result", to: "legacyResult")
///     }
///     if oldVersion < 2 {
///         migration.enumerateObjects(ofType: "Exam") { old, new in
///             let text = old?["legacyResult"] as? String
///             new?["passed"] = migration.create("Result", value: ["result": text ?? "unknown"])
///         }
///     }
/// }
/// ```
/// Everything the block does runs in the write transaction that migrates the file, together with the
/// automatic steps: if the block throws, or one of its calls fails, opening throws that error and the
/// file is left exactly as it was. Calls that cannot throw in Realm's API (`create`, `delete`, the
/// subscripts of ``MigrationObject``) keep their first error, which fails the migration when the block
/// returns. See the *Migrations* article.
public final class Migration {
    /// The schema stored in the file before the migration.
    public let oldSchema: Schema
    /// The schema the file is migrated to (the configuration's model classes).
    public let newSchema: Schema
    private let migrator: SchemaMigrator
    /// The first error of a call that cannot throw.
    private(set) var pendingError: LatticeError?

    init(migrator: SchemaMigrator) {
        self.migrator = migrator
        oldSchema = migrator.stored
        newSchema = migrator.target
    }

    private func record(_ error: Error) {
        guard pendingError == nil else { return }
        pendingError = error as? LatticeError ?? .migrationFailed(className: "?", reason: "\(error)")
    }

    /// Calls `block` for every object the class `typeName` had before the migration and still has, with
    /// the object as it was (`old`: read-only, in the old schema, after the renames made so far) and as it
    /// is now (`new`: writable, in the new schema; nil only when the class was removed from the schema).
    ///
    /// As in Realm, objects the block created are not enumerated, and objects it deleted (with
    /// ``delete(_:)``, ``deleteData(forType:)``, or as embedded objects of a deleted parent) are skipped:
    /// those deleted before the call, and those deleted during it before their turn came. A class that
    /// is only in the new schema, or in neither, has nothing to enumerate.
    public func enumerateObjects(ofType typeName: String, _ block: (_ old: MigrationObject?, _ new: MigrationObject?) throws -> Void) rethrows {
        let objects: [DynamicObject]
        do {
            objects = try oldObjects(typeName)
        } catch {
            return record(error)
        }
        let inNewSchema = newSchema[typeName] != nil
        for old in objects {
            // Checked at each turn: the block may have deleted the object since the enumeration began.
            if migrator.context.migrationJournal?.deleted[typeName]?.contains(old._key) == true { continue }
            var new: DynamicObject?
            if inNewSchema {
                do {
                    // The work handle is looked up again: a rename in the block replaces it.
                    let work = try migrator.work()
                    guard let info = work.classesByName[typeName], let object = try work.fetchObject(info, key: old._key) else { continue }
                    new = unsafeDowncast(object, to: DynamicObject.self)
                } catch {
                    return record(error)
                }
            }
            try block(old, new)
        }
    }

    /// The old objects of `typeName` the block has not created (those it deleted are no longer stored),
    /// in object-key order.
    private func oldObjects(_ typeName: String) throws -> [DynamicObject] {
        // The work handle first: laying the classes out converts values (optionality) before they are read.
        let old = try migrator.old()
        _ = try migrator.work()
        guard let oldInfo = old.classesByName[typeName] else { return [] }
        let created = migrator.context.migrationJournal?.created[typeName] ?? []
        return try old.allEntries(oldInfo.objectsTable).compactMap { entry -> DynamicObject? in
            let key = entry.key.withUnsafeBytes { KeyCodec.int($0) }
            guard !created.contains(key) else { return nil }
            // The old object keeps this copy of its record: later writes to the new object do not change it.
            return unsafeDowncast(old.materialize(oldInfo, key: key, record: RecordBuffer.make(entry.value)), to: DynamicObject.self)
        }
    }

    /// Creates an object of the new schema's class `typeName` from a value, as
    /// ``Lattice/dynamicCreate(_:value:update:)`` does, and returns it.
    @discardableResult
    public func create(_ typeName: String, value: Any = [String: Any]()) -> MigrationObject {
        do {
            guard newSchema[typeName] != nil else { throw LatticeError.classNotInSchema(className: typeName) }
            return try migrator.work().dynamicCreate(typeName, value: value)
        } catch {
            record(error)
            return DynamicObject()
        }
    }

    /// Deletes an object of the new schema (given as the `new` object of ``enumerateObjects(ofType:_:)``,
    /// or its `old` one), unlinking it everywhere.
    public func delete(_ object: MigrationObject) {
        do {
            let work = try migrator.work()
            guard let info = object._info, let target = work.classesByName[info.name], newSchema[info.name] != nil else {
                throw LatticeError.objectNotManaged(className: object.objectSchema.className, operation: "Migration.delete(_:)")
            }
            guard let record = try work.fetchRecord(target, key: object._key) else { return }
            try work.deleteObject(target, key: object._key, old: record)
        } catch {
            record(error)
        }
    }

    /// Deletes every object of the class `typeName` (of the old or the new schema); returns whether
    /// there were any. A class in neither schema has none: false, as in Realm.
    @discardableResult
    public func deleteData(forType typeName: String) -> Bool {
        do {
            let work = try migrator.work()
            guard let info = work.classesByName[typeName] else { return false }
            return try migrator.deleteAll(info, in: work)
        } catch {
            record(error)
            return false
        }
    }

    /// Renames a property of the old schema's class `typeName` to a property of the new schema: its values
    /// (and collection elements, links and index) are kept. Afterwards old objects answer to the new name.
    /// Call it before reading or writing that class's objects in the block. The two must be stored
    /// alike (type, optionality, collection, linked class); otherwise the migration fails with
    /// ``LatticeError/migrationFailed(className:reason:)``.
    public func renameProperty(onType typeName: String, from oldName: String, to newName: String) {
        do {
            guard let old = migrator.renamed[typeName], let property = old[oldName] else {
                throw LatticeError.migrationFailed(className: typeName, reason: "renameProperty: the old schema has no property '\(oldName)'.")
            }
            guard let new = newSchema[typeName]?[newName] else {
                throw LatticeError.migrationFailed(className: typeName, reason: "renameProperty: the new schema has no property '\(newName)'.")
            }
            if old[newName] != nil {
                throw LatticeError.migrationFailed(className: typeName, reason: "renameProperty: the old schema already has a property '\(newName)'.")
            }
            if property.type != new.type || property.collection != new.collection || property.objectClassName != new.objectClassName {
                throw LatticeError.migrationFailed(className: typeName, reason: "renameProperty: '\(oldName)' is \(property.typeName(withOptionality: true)) "
                    + "but '\(newName)' is \(new.typeName(withOptionality: true)).")
            }
            try migrator.renameStoredProperty(typeName, from: oldName, to: newName)
        } catch {
            record(error)
        }
    }
}
