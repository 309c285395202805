/// `o:<Class>`: one entry per object, keyed by its 8-byte order-preserving object key, holding its record.
struct ObjectTable {
    let table: Table

    /// Passes the record stored under `key` (or nil) to `body`; the bytes are valid inside it.
    @inline(__always)
    func withRecord<R>(_ txn: Transaction, key: Int64, _ body: (Bytes?) throws -> R) throws -> R {
        try KeyCodec.withObjectKey(key) { k in try txn.get(table, k, body) }
    }

    /// The record of `key` in a walk over keys in one direction (`step` 1: increasing, -1: decreasing),
    /// or nil when there is none: the cursor moves one entry when `previous` (the key found last, nil:
    /// none) is the neighbour of `key`, and seeks otherwise (a seek near the cursor's page searches that
    /// page only). Valid until the cursor moves on.
    static func record(_ cursor: inout Cursor, key: Int64, after previous: Int64?, step: Int64 = 1) throws -> Bytes? {
        if let previous, previous &+ step == key,
           let e = try step > 0 ? cursor.next() : cursor.previous(), KeyCodec.int(e.key) == key {
            return e.value
        }
        return try KeyCodec.withObjectKey(key) { try cursor.seek(exactly: $0) }?.value
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
        try txn.withEnd(table, last: true) { $0.map { KeyCodec.int($0.key) } }
    }

    func count(_ txn: Transaction) throws -> Int { try txn.count(table) }

    func removeAll(_ txn: Transaction) throws { try txn.drop(table) }
}
