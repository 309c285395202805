/// `o:<Class>`: one entry per object, keyed by its 8-byte order-preserving object key, holding its record.
struct ObjectTable {
    let table: Table

    /// Passes the record stored under `key` (or nil) to `body`; the bytes are valid inside it.
    @inline(__always)
    func withRecord<R>(_ txn: Transaction, key: Int64, _ body: (Bytes?) throws -> R) throws -> R {
        try KeyCodec.withObjectKey(key) { k in try txn.get(table, k, body) }
    }

    /// Stores a record. With `.insertNew` or `.append`, returns false (writing nothing) when refused.
    @discardableResult
    func put(_ txn: Transaction, key: Bytes, record: Bytes, mode: PutMode = .upsert) throws -> Bool {
        try txn.put(table, key, record, mode: mode)
    }

    /// Deletes the record under `key`; false when there was none.
    @discardableResult
    func delete(_ txn: Transaction, key: Bytes) throws -> Bool {
        try txn.delete(table, key)
    }

    /// The largest object key, or nil when the class has no object.
    func lastKey(_ txn: Transaction) throws -> Int64? {
        try txn.withCursor(table) { try $0.last().map { KeyCodec.int($0.key) } }
    }

    func count(_ txn: Transaction) throws -> Int { try txn.count(table) }

    func removeAll(_ txn: Transaction) throws { try txn.drop(table) }
}
