/// Keys of collection tables (`l:`, `s:`, `m:`) start with the owner's 8-byte object key, so one
/// object's elements are one contiguous key range.
enum OwnerKey {
    static func prefix(_ owner: Int64) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(16)
        KeyCodec.appendInt(owner, to: &key)
        return key
    }

    /// Copies of the entries of `owner` in `table`: (key after the owner prefix, value).
    static func entries(_ txn: Transaction, _ table: Table, owner: Int64) throws -> [(key: [UInt8], value: [UInt8])] {
        let prefix = prefix(owner)
        return try prefix.withUnsafeBytes { p in
            try txn.withCursor(table) { cursor in
                var out: [([UInt8], [UInt8])] = []
                var entry = try cursor.seek(atLeast: p)
                while let e = entry, e.key.count >= 8, e.key.prefix(8).elementsEqual(prefix) {
                    out.append((Array(e.key.dropFirst(8)), Array(e.value)))
                    entry = try cursor.next()
                }
                return out
            }
        }
    }
}

/// The elements of one `MutableSet` property of one object: keys `[owner][element key]`, values the
/// element payloads (`s:<Class>.<prop>`). Insert, remove and contains are one B-tree operation.
struct SetTable {
    let table: Table
    let owner: Int64

    private func key(_ element: [UInt8]) -> [UInt8] { OwnerKey.prefix(owner) + element }

    func payload(_ txn: Transaction, elementKey: [UInt8]) throws -> [UInt8]? {
        try key(elementKey).withUnsafeBytes { k in try txn.get(table, k) { $0.map(Array.init) } }
    }

    /// Adds an element; false when an equal one is already there.
    func insert(_ txn: Transaction, elementKey: [UInt8], payload: [UInt8]) throws -> Bool {
        try key(elementKey).withUnsafeBytes { k in try payload.withUnsafeBytes { try txn.put(table, k, $0, mode: .insertNew) } }
    }

    func remove(_ txn: Transaction, elementKey: [UInt8]) throws {
        _ = try key(elementKey).withUnsafeBytes { try txn.delete(table, $0) }
    }

    /// Every (element key, payload), in element-key order.
    func entries(_ txn: Transaction) throws -> [(key: [UInt8], value: [UInt8])] {
        try OwnerKey.entries(txn, table, owner: owner)
    }
}

/// The entries of one `Map` property of one object: keys `[owner][UTF-8 map key]`, values the payloads
/// (`m:<Class>.<prop>`). Lookup, insert and removal are one B-tree operation.
struct MapTable {
    let table: Table
    let owner: Int64

    /// Map keys must leave room for the owner prefix within LMDB's key limit.
    static let maxKeyBytes = 400

    private func key(_ mapKey: String) -> [UInt8] { OwnerKey.prefix(owner) + Array(mapKey.utf8) }

    func payload(_ txn: Transaction, for mapKey: String) throws -> [UInt8]? {
        try key(mapKey).withUnsafeBytes { k in try txn.get(table, k) { $0.map(Array.init) } }
    }

    /// Sets (payload non-nil) or removes (nil) an entry.
    func set(_ txn: Transaction, _ mapKey: String, payload: [UInt8]?) throws {
        let k = key(mapKey)
        if let payload {
            _ = try k.withUnsafeBytes { k in try payload.withUnsafeBytes { try txn.put(table, k, $0) } }
        } else {
            _ = try k.withUnsafeBytes { try txn.delete(table, $0) }
        }
    }

    /// Every entry in key order.
    func entries(_ txn: Transaction) throws -> [(key: String, payload: [UInt8])] {
        try OwnerKey.entries(txn, table, owner: owner).map { (String(decoding: $0.key, as: UTF8.self), $0.value) }
    }
}
