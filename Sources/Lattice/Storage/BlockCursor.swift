import CLMDB
#if canImport(Glibc)
import Glibc
#endif

/// A cursor's state over a packed index (see `Blocks`): the index key and block the LMDB cursor is on,
/// the block's keys, and the one the cursor is on. `Cursor` hands its moves over to it, so code above
/// `Storage` walks a packed index as sorted 8-byte duplicates, as any other index.
///
/// Runtime exclusivity checks are off for its fields: it belongs to one `Cursor`, used inside one
/// `Transaction.withCursor` call, and every access is a short read or write that calls out to nothing that
/// could reach the same field.
final class BlockCursor {
    private let handle: OpaquePointer?
    private let env: Environment
    private let table: Table
    private let pageSize: Int
    private let residentPages: ResidentPages?

    /// The index key the cursor is on (lent by the map).
    @exclusivity(unchecked) private var key = UnsafeRawBufferPointer(start: nil, count: 0)
    /// The keys of the current block and the one the cursor is on (-1: none).
    @exclusivity(unchecked) private var keys: [UInt64] = []
    @exclusivity(unchecked) private var index = -1
    /// The current block as stored (for putting the cursor back after counting).
    @exclusivity(unchecked) private var block = UnsafeRawBufferPointer(start: nil, count: 0)
    /// The object key returned last, big-endian (returned values point here).
    private let valueBuffer = UnsafeMutableRawPointer.allocate(byteCount: 8, alignment: 8)

    init(handle: OpaquePointer?, env: Environment, table: Table, pageSize: Int, residentPages: ResidentPages?) {
        self.handle = handle
        self.env = env
        self.table = table
        self.pageSize = pageSize
        self.residentPages = residentPages
    }

    deinit { valueBuffer.deallocate() }

    /// The move `Cursor` asks for, as LMDB names it.
    func move(_ op: MDB_cursor_op, _ key: UnsafeRawBufferPointer?) throws -> Cursor.Entry? {
        switch op {
        case MDB_NEXT: return index + 1 < keys.count ? entry(index + 1) : try step(MDB_NEXT, at: .first)
        case MDB_NEXT_DUP: return index + 1 < keys.count ? entry(index + 1) : try step(MDB_NEXT_DUP, at: .first)
        case MDB_NEXT_NODUP: return try step(MDB_NEXT_NODUP, at: .first)
        case MDB_PREV: return index > 0 ? entry(index - 1) : try step(MDB_PREV, at: .last)
        case MDB_PREV_DUP: return index > 0 ? entry(index - 1) : try step(MDB_PREV_DUP, at: .last)
        case MDB_FIRST: return try step(MDB_FIRST, at: .first)
        case MDB_LAST: return try step(MDB_LAST, at: .last)
        case MDB_LAST_DUP: return try step(MDB_LAST_DUP, at: .last)
        case MDB_GET_CURRENT: return index >= 0 ? entry(index) : nil
        case MDB_SET_KEY, MDB_SET_RANGE: return try key.flatMap { try step(op, key: $0, at: .first) }
        default: return nil
        }
    }

    /// The first object key at least `value` filed under `key`, or nil (a walk of the key's keys: no
    /// packed table needs this often).
    func seek(key: UnsafeRawBufferPointer, atLeastValue value: UnsafeRawBufferPointer) throws -> Cursor.Entry? {
        guard value.count == 8, var entry = try step(MDB_SET_KEY, key: key, at: .first) else { return nil }
        let wanted = Runs.number(value)
        while Runs.number(entry.value) < wanted {
            guard let next = try move(MDB_NEXT_DUP, nil) else { return nil }
            entry = next
        }
        return entry
    }

    /// Number of object keys under the current index key.
    func duplicateCount() throws -> Int {
        guard index >= 0 else { return 0 }
        var k = mdbVal(key)
        var v = MDB_val()
        let n = try blockSizes(from: mdb_cursor_get(handle, &k, &v, MDB_FIRST_DUP), &k, &v, of: key)
        // Back on the block the cursor was on.
        k = mdbVal(key)
        v = mdbVal(block)
        try env.check(mdb_cursor_get(handle, &k, &v, MDB_GET_BOTH))
        return n
    }

    /// Number of object keys filed under `wanted` (0: none), added up from the blocks' headers without
    /// decoding their keys (a count by index key reads nothing else). The cursor is left on no entry.
    func count(ofKey wanted: UnsafeRawBufferPointer) throws -> Int {
        index = -1
        keys.removeAll(keepingCapacity: true)
        var k = mdbVal(wanted)
        var v = MDB_val()
        let rc = mdb_cursor_get(handle, &k, &v, MDB_SET_KEY)
        if rc == 0 { try ValueBounds.check(key: k, value: v, pageSize: pageSize, env) }
        return try blockSizes(from: rc, &k, &v, of: wanted)
    }

    /// The sizes of the blocks of index key `key` added up, from the one the LMDB cursor has just read
    /// (`rc`, `v`) to the key's last, read from their headers.
    private func blockSizes(from rc: Int32, _ k: inout MDB_val, _ v: inout MDB_val, of key: UnsafeRawBufferPointer) throws -> Int {
        var rc = rc
        var n = 0
        while rc == 0 {
            guard let view = BlockView(bytes(v)) else { throw damaged(key) }
            n += view.count
            rc = mdb_cursor_get(handle, &k, &v, MDB_NEXT_DUP)
        }
        if rc != MDB_NOTFOUND { try env.check(rc) }
        return n
    }

    /// The index key the cursor is on, for listing damage.
    func currentKey() -> [UInt8]? {
        key.baseAddress == nil ? nil : Array(key)
    }

    // MARK: Blocks

    private enum Place { case first, last }

    /// Moves the LMDB cursor with `op` and makes the block there current, on its first or last key.
    private func step(_ op: MDB_cursor_op, key wanted: UnsafeRawBufferPointer? = nil, at place: Place) throws -> Cursor.Entry? {
        var k = wanted.map(mdbVal) ?? MDB_val()
        var v = MDB_val()
        let rc = mdb_cursor_get(handle, &k, &v, op)
        if rc == MDB_NOTFOUND { return nil }
        try env.check(rc)
        // Some moves within a key's duplicates leave the key out: it is the current one.
        if k.mv_size == 0 { k = mdbVal(key) }
        try load(k, v)
        return entry(place == .first ? 0 : keys.count - 1)
    }

    private func load(_ k: MDB_val, _ v: MDB_val) throws {
        index = -1
        try ValueBounds.check(key: k, value: v, pageSize: pageSize, env)
        residentPages?.note(k, v)
        key = bytes(k)
        block = bytes(v)
        guard let view = BlockView(block), view.keys(into: &keys) else {
            keys.removeAll()
            throw damaged()
        }
    }

    private func entry(_ i: Int) -> Cursor.Entry? {
        guard i >= 0, i < keys.count else { return nil }
        index = i
        valueBuffer.storeBytes(of: keys[i].bigEndian, as: UInt64.self)
        return (key, UnsafeRawBufferPointer(start: valueBuffer, count: 8))
    }

    private func damaged(_ key: UnsafeRawBufferPointer? = nil) -> LatticeError {
        .corruptFile(path: env.path, reason: "the object keys filed under \(env.seals.describe(key: key ?? self.key, in: table)) in "
            + "'\(env.seals.name(of: table))' do not decode (a damaged value).")
    }
}
