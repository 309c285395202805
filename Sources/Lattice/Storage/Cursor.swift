import CLMDB
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A cursor over one table, valid inside `Transaction.withCursor`. Keys and values it returns are
/// lent by the map: valid until the cursor moves on or its snapshot ends.
///
/// Every entry it returns is checked first: key and value must lie within their page(s) (`ValueBounds`),
/// and in a sealed table (`Seals`) the value must pass its checksum, which is stripped.
struct Cursor {
    let handle: OpaquePointer?
    let env: Environment
    let residentPages: ResidentPages?
    let table: Table
    /// Whether the table's values end with a checksum (see `Transaction.sealed`).
    let sealed: Bool
    /// See `Transaction.pageSize`.
    let pageSize: Int
    /// In an encrypted file, the table's cipher (nil for a plaintext file or an unsealed table).
    let cipher: TableCipher?
    /// Where decrypted values live until the cursor closes (with `cipher`).
    let arena: ValueArena?
    /// For a packed table (see `Runs`): the state its moves go through, entry by entry.
    let runs: RunCursor?
    /// For a packed index (see `Blocks`): the state its moves go through, object key by object key.
    let blocks: BlockCursor?

    typealias Entry = (key: Bytes, value: Bytes)

    // Always inlined: it is the step of every scan loop, and the checks it now makes are cheap (their
    // cold paths are out of line).
    @inline(__always)
    private mutating func move(_ op: MDB_cursor_op, key: Bytes? = nil) throws -> Entry? {
        if let runs { return try runs.move(op, key) }
        if let blocks { return try blocks.move(op, key) }
        var k = key.map(mdbVal) ?? MDB_val()
        var v = MDB_val()
        let rc = mdb_cursor_get(handle, &k, &v, op)
        if sealed && (op == MDB_SET_RANGE || (op == MDB_SET_KEY && rc == MDB_NOTFOUND)) { try verifyAround(key) }
        if rc == MDB_NOTFOUND { return nil }
        try env.check(rc)
        return try entry(k, v)
    }

    /// The checked entry at `k`/`v`.
    @inline(__always)
    private func entry(_ k: MDB_val, _ v: MDB_val) throws -> Entry {
        try ValueBounds.check(key: k, value: v, pageSize: pageSize, env)
        residentPages?.note(k, v)
        guard sealed else { return (bytes(k), bytes(v)) }
        if let cipher { return (bytes(k), try decrypted(cipher, bytes(k), bytes(v))) }
        return (bytes(k), try Cursor.opened(table, bytes(k), bytes(v), env))
    }

    /// The value an encrypted one holds, decrypted into the arena: it stays valid until the cursor
    /// closes (callers may gather several entries before copying them).
    @inline(never)
    private func decrypted(_ cipher: TableCipher, _ key: Bytes, _ value: Bytes) throws -> Bytes {
        if cipher.isPlain(key) { return try Cursor.opened(table, key, value, env) }
        guard let count = TableCipher.plainCount(value.count), let arena else { throw env.seals.forged(table, key: key, path: env.path) }
        let plain = try arena.reserve(count)
        guard cipher.open(key: key, sealed: value, into: plain) else {
            arena.release(count)
            throw env.seals.forged(table, key: key, path: env.path)
        }
        // An empty value keeps a non-nil address, as bytes lent by LMDB have.
        return Bytes(start: count == 0 ? UnsafeRawPointer(value.baseAddress) : UnsafeRawPointer(plain), count: count)
    }

    /// The first entry of the table.
    mutating func first() throws -> Entry? { try move(MDB_FIRST) }
    /// The last entry of the table.
    mutating func last() throws -> Entry? { try move(MDB_LAST) }
    /// The next entry (the next duplicate first, in sorted-duplicates tables).
    @inline(__always)
    mutating func next() throws -> Entry? { try move(MDB_NEXT) }
    /// The entry before the current one.
    mutating func previous() throws -> Entry? { try move(MDB_PREV) }
    /// The entry at the cursor.
    mutating func current() throws -> Entry? { try move(MDB_GET_CURRENT) }
    /// The next duplicate of the current key, or nil after its last.
    mutating func nextDuplicate() throws -> Entry? { try move(MDB_NEXT_DUP) }
    /// The duplicate before the current one of the current key, or nil before its first.
    mutating func previousDuplicate() throws -> Entry? { try move(MDB_PREV_DUP) }
    /// The last duplicate of the current key (LMDB leaves the key out: it is empty).
    mutating func lastDuplicate() throws -> Entry? { try move(MDB_LAST_DUP) }
    /// The first entry of the next key (skipping the current key's other duplicates).
    mutating func nextKey() throws -> Entry? { try move(MDB_NEXT_NODUP) }
    /// The first entry whose key is `key`, or nil.
    mutating func seek(exactly key: Bytes) throws -> Entry? { try move(MDB_SET_KEY, key: key) }
    /// The first entry whose key is at least `key`, or nil.
    mutating func seek(atLeast key: Bytes) throws -> Entry? { try move(MDB_SET_RANGE, key: key) }

    /// In a table of fixed-size duplicates (`MDB_DUPFIXED`, neither packed nor sealed), with the cursor on
    /// the first duplicate of a key: that key's duplicates, handed to `body` a page at a time (the values
    /// one after another, `size` bytes each) instead of one move each. False, with nothing handed, for a
    /// table of another kind (walk it with `nextDuplicate`).
    mutating func forEachDuplicatePage(size: Int, _ body: (Bytes) throws -> Void) throws -> Bool {
        guard runs == nil, blocks == nil, !sealed, let first = try current() else { return false }
        // A key with one value has no duplicates page for `MDB_GET_MULTIPLE` to return.
        if try duplicateCount() == 1 {
            try body(first.value)
            return true
        }
        var k = MDB_val()
        var v = MDB_val()
        var op = MDB_GET_MULTIPLE
        while true {
            let rc = mdb_cursor_get(handle, &k, &v, op)
            if rc == MDB_NOTFOUND { return true }
            try env.check(rc)
            try ValueBounds.check(v, pageSize: pageSize, env)
            guard v.mv_size % size == 0 else {
                throw LatticeError.corruptFile(path: env.path, reason: "the duplicates of a key in '\(env.seals.name(of: table))' are not \(size) bytes each.")
            }
            residentPages?.note(k, v)
            try body(bytes(v))
            op = MDB_NEXT_MULTIPLE
        }
    }

    /// In a sorted-duplicates table: the first duplicate of `key` that is at least `value`, or nil.
    mutating func seek(key: Bytes, atLeastValue value: Bytes) throws -> Entry? {
        if runs != nil { return nil }  // a packed table has no duplicates
        if let blocks { return try blocks.seek(key: key, atLeastValue: value) }
        var k = mdbVal(key)
        var v = mdbVal(value)
        let rc = mdb_cursor_get(handle, &k, &v, MDB_GET_BOTH_RANGE)
        if rc == MDB_NOTFOUND { return nil }
        try env.check(rc)
        return try entry(k, v)
    }

    /// The key at the cursor, read without its value (for listing damage: the value may fail its checksum).
    func currentKey() -> [UInt8]? {
        if let runs { return runs.currentKey() }
        if let blocks { return blocks.currentKey() }
        var k = MDB_val()
        var v = MDB_val()
        guard mdb_cursor_get(handle, &k, &v, MDB_GET_CURRENT) == 0 else { return nil }
        if pageSize > 0, Int(bitPattern: k.mv_data) & (pageSize - 1) + k.mv_size > pageSize { return nil }
        return Array(bytes(k))
    }

    /// In a packed table (see `Runs`): the keys of the first `limit` entries as big-endian numbers, read
    /// without opening the entries (each is verified when it is read). nil for any other table.
    mutating func packedKeys(limit: Int = .max) throws -> [UInt64]? {
        try runs?.entryKeys(limit: limit)
    }

    /// Number of entries filed under `key` (0: none): in an index, the object keys of one index key.
    mutating func count(ofKey key: Bytes) throws -> Int {
        if let blocks { return try blocks.count(ofKey: key) }
        guard try seek(exactly: key) != nil else { return 0 }
        return try duplicateCount()
    }

    /// Number of duplicates at the current key.
    func duplicateCount() throws -> Int {
        if runs != nil { return 1 }
        if let blocks { return try blocks.duplicateCount() }
        var n: Int = 0
        try env.check(mdb_cursor_count(handle, &n))
        return n
    }

    // MARK: Verification

    /// `verifyAround` for this cursor's table (kept out of line: `move` is inlined into every loop).
    @inline(never)
    private func verifyAround(_ key: Bytes?) throws {
        guard let key else { return }
        try Cursor.verifyAround(key, txn: mdb_cursor_txn(handle), table: table, env: env, pageSize: pageSize, cipher: cipher)
    }

    /// Damage that changes a key hides its entry from lookups (it now sorts elsewhere) but leaves it where
    /// a lookup of either key lands: a lookup that finds nothing, and the start of a range, read (and so
    /// verify) the entry there and the one before it, with a cursor of their own.
    static func verifyAround(_ key: Bytes, txn: OpaquePointer?, table: Table, env: Environment, pageSize: Int,
                             cipher: TableCipher?) throws {
        func verify(_ k: MDB_val, _ v: MDB_val) throws {
            try ValueBounds.check(key: k, value: v, pageSize: pageSize, env)
            if let cipher, !cipher.isPlain(bytes(k)) {
                if !cipher.authenticates(key: bytes(k), sealed: bytes(v)) { throw env.seals.forged(table, key: bytes(k), path: env.path) }
            } else {
                _ = try opened(table, bytes(k), bytes(v), env)
            }
        }
        var handle: OpaquePointer?
        try env.check(mdb_cursor_open(txn, table.id, &handle))
        defer { mdb_cursor_close(handle) }
        var k = mdbVal(key)
        var v = MDB_val()
        if mdb_cursor_get(handle, &k, &v, MDB_SET_RANGE) == 0 {
            try verify(k, v)
            guard mdb_cursor_get(handle, &k, &v, MDB_PREV) == 0 else { return }
        } else if mdb_cursor_get(handle, &k, &v, MDB_LAST) != 0 {
            return
        }
        try verify(k, v)
    }

    /// A sealed value without its checksum; throws `corruptFile` when it does not match. A cursor stays
    /// on the entry, so a caller listing damage can move on past it.
    @inline(__always)
    static func opened(_ table: Table, _ key: Bytes, _ value: Bytes, _ env: Environment) throws -> Bytes {
        guard let value = Checksum.open(key: key, sealed: value) else { throw damage(table, key, env) }
        return value
    }

    @inline(never)
    private static func damage(_ table: Table, _ key: Bytes, _ env: Environment) -> LatticeError {
        env.seals.damage(table, key: key, path: env.path)
    }
}

/// Memory for the values a cursor of an encrypted table decrypts: each stays valid until the arena is
/// freed with its cursor (as bytes lent by the map stay valid while the cursor's snapshot is open).
/// Chunks of at least 64 KiB, so a walk allocates seldom.
final class ValueArena {
    private var chunks: [UnsafeMutableRawPointer] = []
    private var current: UnsafeMutableRawPointer?
    private var used = 0
    private var capacity = 0

    deinit {
        for chunk in chunks { free(chunk) }
    }

    /// Room for `count` bytes in the arena, valid until the arena is freed.
    func reserve(_ count: Int) throws -> UnsafeMutableRawPointer {
        if current == nil || used + count > capacity {
            let size = max(count, 64 << 10)
            guard let chunk = malloc(size) else {
                throw LatticeError.storage(path: "", code: ENOMEM, message: "Out of memory for a decrypted value of \(count) bytes.")
            }
            chunks.append(chunk)
            current = chunk
            capacity = size
            used = 0
        }
        guard let base = current else {
            throw LatticeError.storage(path: "", code: ENOMEM, message: "Out of memory for a decrypted value of \(count) bytes.")
        }
        used += count
        return base + (used - count)
    }

    /// Gives back the last `count` bytes reserved (a value that failed to open).
    func release(_ count: Int) {
        used -= min(count, used)
    }
}
