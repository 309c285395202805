/// Keys of collection tables (`l:`, `s:`, `m:`) start with the owner's 8-byte object key, so one
/// object's elements are one contiguous key range.
enum OwnerKey {
    static func prefix(_ owner: Int64) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(16)
        KeyCodec.appendInt(owner, to: &key)
        return key
    }

    /// Passes every entry of `owner` in `table` to `body` as stored (key with its owner prefix, value),
    /// valid inside the call only.
    static func forEach(_ txn: Transaction, _ table: Table, owner: Int64, _ body: (Bytes, Bytes) throws -> Void) throws {
        try KeyCodec.withObjectKey(owner) { prefix in
            try txn.withCursor(table) { cursor in
                let owned = prefix.loadUnaligned(as: UInt64.self)
                var entry = try cursor.seek(atLeast: prefix)
                while let e = entry, e.key.count >= 8, e.key.loadUnaligned(as: UInt64.self) == owned {
                    try body(e.key, e.value)
                    entry = try cursor.next()
                }
            }
        }
    }

    /// Copies of the entries of `owner` in `table`: (key after the owner prefix, value).
    static func entries(_ txn: Transaction, _ table: Table, owner: Int64) throws -> [(key: [UInt8], value: [UInt8])] {
        var out: [(key: [UInt8], value: [UInt8])] = []
        try forEach(txn, table, owner: owner) { key, value in out.append((Array(key.dropFirst(8)), Array(value))) }
        return out
    }

    /// Whether `owner` has no entry in `table`: one seek.
    static func isEmpty(_ txn: Transaction, _ table: Table, owner: Int64) throws -> Bool {
        try KeyCodec.withObjectKey(owner) { prefix in
            try txn.withCursor(table) { cursor in
                guard let e = try cursor.seek(atLeast: prefix), e.key.count >= 8 else { return true }
                return e.key.loadUnaligned(as: UInt64.self) != prefix.loadUnaligned(as: UInt64.self)
            }
        }
    }

    /// The number of entries of `owner` in `table`, counted without copying them.
    static func count(_ txn: Transaction, _ table: Table, owner: Int64) throws -> Int {
        var n = 0
        try forEach(txn, table, owner: owner) { _, _ in n += 1 }
        return n
    }
}

/// How a set element or map entry is stored. In a plaintext file the key after the owner prefix is the
/// element key (or map key) and the value its payload. In an encrypted file that key is a keyed hash
/// (`Transaction.keyHasher`), and the (encrypted) value starts with the plain key, varint length first,
/// so walks still return it; their entries are then sorted by plain key, as a plaintext walk returns them.
enum KeyedEntry {
    /// The stored key of `plain` for `owner` in `table`.
    static func key(_ txn: Transaction, _ table: Table, owner: Int64, _ plain: [UInt8]) -> [UInt8] {
        OwnerKey.prefix(owner) + (txn.keyHasher(table)?.hash(plain) ?? plain)
    }

    /// The stored value of an entry.
    static func value(_ txn: Transaction, _ table: Table, _ plain: [UInt8], payload: [UInt8]) -> [UInt8] {
        guard txn.isEncrypted else { return payload }
        var out: [UInt8] = []
        out.reserveCapacity(plain.count + payload.count + 2)
        Varint.append(UInt64(plain.count), to: &out)
        return out + plain + payload
    }

    /// The plain key and payload of a stored value of an encrypted file; nil when it does not decode.
    static func split(_ value: Bytes) -> (key: [UInt8], payload: [UInt8])? {
        var offset = 0
        let n = Int(clamping: Varint.read(value, &offset))
        guard offset + n <= value.count else { return nil }
        return (Array(value[offset..<(offset + n)]), Array(value[(offset + n)...]))
    }

    /// The plain key (after the owner prefix) and payload of a stored entry.
    static func plain(_ txn: Transaction, key: Bytes, value: Bytes) -> (key: [UInt8], payload: [UInt8])? {
        txn.isEncrypted ? split(value) : (Array(key.dropFirst(8)), Array(value))
    }

    /// The payload of a stored value.
    static func payload(_ txn: Transaction, _ value: Bytes) -> [UInt8]? {
        txn.isEncrypted ? split(value)?.payload : Array(value)
    }

    /// Every (plain key, payload) of `owner` in `table`, in plain-key order.
    static func entries(_ txn: Transaction, _ table: Table, owner: Int64) throws -> [(key: [UInt8], value: [UInt8])] {
        let stored = try OwnerKey.entries(txn, table, owner: owner)
        guard txn.isEncrypted else { return stored }
        return try stored.map { entry in
            guard let plain = entry.value.withUnsafeBytes(split) else {
                throw LatticeError.corruptFile(path: txn.env.path, reason: "an entry of object key \(owner) does not decode.")
            }
            return (plain.key, plain.payload)
        }.sorted { $0.key.lexicographicallyPrecedes($1.key) }
    }
}

/// The elements of one `MutableSet` property of one object: keys `[owner][element key]`, values the
/// element payloads (`s:<Class>.<prop>`, see `KeyedEntry` for encrypted files). Insert, remove and
/// contains are one B-tree operation.
struct SetTable {
    let table: Table
    let owner: Int64

    func payload(_ txn: Transaction, elementKey: [UInt8]) throws -> [UInt8]? {
        try KeyedEntry.key(txn, table, owner: owner, elementKey).withUnsafeBytes { k in
            try txn.get(table, k) { $0.map { KeyedEntry.payload(txn, $0) ?? [] } }
        }
    }

    /// Adds an element; false when an equal one is already there.
    func insert(_ txn: Transaction, elementKey: [UInt8], payload: [UInt8]) throws -> Bool {
        let value = KeyedEntry.value(txn, table, elementKey, payload: payload)
        return try KeyedEntry.key(txn, table, owner: owner, elementKey).withUnsafeBytes { k in
            try value.withUnsafeBytes { try txn.put(table, k, $0, mode: .insertNew) }
        }
    }

    func remove(_ txn: Transaction, elementKey: [UInt8]) throws {
        _ = try KeyedEntry.key(txn, table, owner: owner, elementKey).withUnsafeBytes { try txn.delete(table, $0) }
    }

    /// Every (element key, payload), in element-key order.
    func entries(_ txn: Transaction) throws -> [(key: [UInt8], value: [UInt8])] {
        try KeyedEntry.entries(txn, table, owner: owner)
    }
}

/// The entries of one `Map` property of one object: keys `[owner][UTF-8 map key]`, values the payloads
/// (`m:<Class>.<prop>`, see `KeyedEntry` for encrypted files). Lookup, insert and removal are one B-tree
/// operation.
struct MapTable {
    let table: Table
    let owner: Int64

    /// Map keys must leave room for the owner prefix within LMDB's key limit.
    static let maxKeyBytes = 400

    func payload(_ txn: Transaction, for mapKey: String) throws -> [UInt8]? {
        try KeyedEntry.key(txn, table, owner: owner, Array(mapKey.utf8)).withUnsafeBytes { k in
            try txn.get(table, k) { $0.map { KeyedEntry.payload(txn, $0) ?? [] } }
        }
    }

    /// Sets (payload non-nil) or removes (nil) an entry.
    func set(_ txn: Transaction, _ mapKey: String, payload: [UInt8]?) throws {
        let plain = Array(mapKey.utf8)
        let k = KeyedEntry.key(txn, table, owner: owner, plain)
        if let payload {
            let value = KeyedEntry.value(txn, table, plain, payload: payload)
            _ = try k.withUnsafeBytes { k in try value.withUnsafeBytes { try txn.put(table, k, $0) } }
        } else {
            _ = try k.withUnsafeBytes { try txn.delete(table, $0) }
        }
    }

    /// Every entry in key order.
    func entries(_ txn: Transaction) throws -> [(key: String, payload: [UInt8])] {
        try KeyedEntry.entries(txn, table, owner: owner).map { (String(decoding: $0.key, as: UTF8.self), $0.value) }
    }

    /// The keys whose value payload passes `test`: in a plaintext file the values are tested where they
    /// are stored, nothing copied but the keys found.
    func keys(_ txn: Transaction, where test: (UnsafeRawBufferPointer) -> Bool) throws -> [String] {
        if txn.isEncrypted { return try entries(txn).filter { $0.payload.withUnsafeBytes(test) }.map(\.key) }
        var keys: [String] = []
        try OwnerKey.forEach(txn, table, owner: owner) { key, value in
            if test(value) { keys.append(String(decoding: key.dropFirst(8), as: UTF8.self)) }
        }
        return keys
    }
}
