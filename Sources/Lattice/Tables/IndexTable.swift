/// `i:<Class>.<property>` (and the case-folded `f:` twin): sorted duplicates, index key → 8-byte object
/// keys of the objects holding that value.
struct IndexTable {
    let table: Table

    /// The object keys filed under `indexKey` (candidates when the key was truncated).
    func objectKeys(_ txn: Transaction, indexKey: Bytes) throws -> [Int64] {
        try txn.withCursor(table) { cursor in
            var keys: [Int64] = []
            var entry = try cursor.seek(exactly: indexKey)
            while let e = entry {
                keys.append(KeyCodec.int(e.value))
                entry = try cursor.nextDuplicate()
            }
            return keys
        }
    }

    /// Files `objectKey` under `indexKey`; `last`: it sorts after every object key already there.
    func add(_ txn: Transaction, indexKey: Bytes, objectKey: Bytes, last: Bool) throws {
        try txn.putDuplicate(table, indexKey, objectKey, last: last)
    }

    /// Removes `objectKey` from under `indexKey`.
    func remove(_ txn: Transaction, indexKey: Bytes, objectKey: Bytes) throws {
        try txn.delete(table, indexKey, value: objectKey)
    }

    func removeAll(_ txn: Transaction) throws { try txn.drop(table) }
}
