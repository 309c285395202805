/// The write path's operations for schema migrations: whole tables and records re-laid out, which no
/// ordinary write does. Like the rest of the write path they record what changed and move the handle's
/// generation; they run only inside a migration's write transaction.
extension Lattice {
    /// Every entry of `table` (all duplicates of a sorted-duplicates table), copied out of the map.
    func allEntries(_ table: Table) throws -> [(key: [UInt8], value: [UInt8])] {
        try writer?.storeListDirectory()  // the table as it is, with no directory left unstored
        return try readTransaction().withCursor(table) { cursor in
            var out: [(key: [UInt8], value: [UInt8])] = []
            var entry = try cursor.first()
            while let e = entry {
                out.append((Array(e.key), Array(e.value)))
                entry = try cursor.next()
            }
            return out
        }
    }

    /// Moves every entry of `source` into the empty table `destination` (a renamed class's or collection
    /// property's table). Costs one put per entry.
    func moveEntries(from source: Table, to destination: Table) throws {
        guard source.id != destination.id, let txn = writer?.txn else { return }
        var entries = try allEntries(source)
        if let hasher = txn.keyHasher(destination) {
            // An encrypted file hashes set and map keys with a key of their table: file them under the new one.
            entries = try entries.map { entry in
                guard entry.key.count >= 8, let plain = entry.value.withUnsafeBytes(KeyedEntry.split) else {
                    throw LatticeError.corruptFile(path: env.path, reason: "an entry of a renamed set or map does not decode.")
                }
                return (Array(entry.key.prefix(8)) + hasher.hash(plain.key), entry.value)
            }
        }
        try txn.drop(source)
        for entry in entries {
            try entry.key.withUnsafeBytes { k in try entry.value.withUnsafeBytes { v in try txn.putDuplicate(destination, k, v, last: false) } }
        }
        didChange()
    }

    /// Files the backlink entries of link property `from` under the id `to` (a renamed link property or
    /// class): the link id ends each key (see `BacklinkTable`).
    func renameLinkID(in table: Table, from: UInt32, to: UInt32) throws {
        guard from != to, let txn = writer?.txn else { return }
        let old = withUnsafeBytes(of: from.bigEndian) { Array($0) }
        let new = withUnsafeBytes(of: to.bigEndian) { Array($0) }
        for entry in try allEntries(table) where entry.key.count == BacklinkTable.keySize && entry.key.suffix(4).elementsEqual(old) {
            let renamed = Array(entry.key.prefix(8)) + new
            try entry.value.withUnsafeBytes { v in
                _ = try entry.key.withUnsafeBytes { try txn.delete(table, $0, value: v) }
                try renamed.withUnsafeBytes { try txn.putDuplicate(table, $0, v, last: false) }
            }
        }
        didChange()
    }

    /// Empties a table the migrated schema no longer uses (or an index about to be rebuilt).
    func emptyTable(_ table: Table) throws {
        try writer?.storeListDirectory()
        try writer?.txn.drop(table)
        didChange()
    }

    /// Replaces the record of `key` with `record` laid out for `info` (the migrated class), without
    /// touching indexes or backlinks: the columns' values are unchanged, only their positions moved, and
    /// the migration rebuilds the indexes it must.
    func relayRecord(_ info: ClassInfo, key: Int64, record: [UInt8]) throws {
        guard let txn = writer?.txn else { return }
        _ = try KeyCodec.withObjectKey(key) { k in try record.withUnsafeBytes { try ObjectTable(table: info.objectsTable).put(txn, key: k, record: $0) } }
        writer?.changes.record(info.name, key: key, .modified, columns: ~0)
        didChange()
    }

    /// Builds the index (and case-folded index) of `property` from the class's records. With `unique`
    /// (a new primary key) throws ``LatticeError/duplicatePrimaryKey(className:value:)`` naming the first
    /// value two objects share.
    func buildIndex(_ info: ClassInfo, _ property: PropertyInfo, unique: Bool) throws {
        guard let txn = writer?.txn, let table = property.indexTable else { return }
        let index = IndexTable(table: table)
        for (keyBytes, recordBytes) in try allEntries(info.objectsTable) {
            let key = keyBytes.withUnsafeBytes { KeyCodec.int($0) }
            let payload = recordBytes.withUnsafeBytes { RecordView($0)?.payload(property.column).map(Array.init) } ?? {
                var out: [UInt8] = []
                property.valueType._latticeDefaultEncoded(into: &out)
                return out
            }()
            try payload.withUnsafeBytes { p in
                if unique {
                    for other in try indexLookup(property, payload: Array(p)) {
                        let same = try fetchRecord(info, key: other)?.withBytes { RecordView($0)?.payload(property.column).map { $0.elementsEqual(p) } } ?? nil
                        if same == true {
                            let value = property.valueType.decodeAny(p)
                            throw LatticeError.duplicatePrimaryKey(className: info.name,
                                                                   value: (value as? String).map { "'\($0)'" } ?? value.map { "\($0)" } ?? "nil")
                        }
                    }
                }
                try KeyCodec.withObjectKey(key) { objectKey in
                    try withIndexKey(property, payload: p) { try index.add(txn, indexKey: $0, objectKey: objectKey, last: false) }
                    if let folded = property.foldedIndexTable {
                        try foldedIndexKey(property, payload: p).withUnsafeBytes {
                            try IndexTable(table: folded).add(txn, indexKey: $0, objectKey: objectKey, last: false)
                        }
                    }
                }
            }
        }
        didChange()
    }

    /// Sets the next object key of a class that is no longer keyed by its primary key above every key in use.
    func resetSequence(_ info: ClassInfo) throws {
        guard let txn = writer?.txn else { return }
        let last = try ObjectTable(table: info.objectsTable).lastKey(txn) ?? 0
        let meta = MetaTable(table: metaTable)
        let stored = try meta.value(txn, "seq:" + info.name).map { $0.withUnsafeBytes { loadLE($0, as: Int64.self) } } ?? 1
        var value: [UInt8] = []
        appendLE(max(stored, last + 1), to: &value)
        try meta.set(txn, "seq:" + info.name, value)
    }

    /// Moves the key sequence of a renamed class.
    func renameSequence(from old: String, to new: String) throws {
        guard let txn = writer?.txn else { return }
        let meta = MetaTable(table: metaTable)
        if let value = try meta.value(txn, "seq:" + old) { try meta.set(txn, "seq:" + new, value) }
    }

    /// Stores the migrated schema and version (the last step of a migration). The file keeps its format
    /// version: a format-1 file stays unsealed.
    func storeSchema(_ json: [UInt8], version: UInt64) throws {
        guard let txn = writer?.txn else { return }
        let meta = MetaTable(table: metaTable)
        var versionBytes: [UInt8] = []
        appendLE(version, to: &versionBytes)
        try meta.set(txn, "schemaVersion", versionBytes)
        try meta.set(txn, "schema", json)
    }
}
