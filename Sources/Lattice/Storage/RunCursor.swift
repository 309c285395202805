import CLMDB
#if canImport(Glibc)
import Glibc
#endif

/// A cursor's state over a packed table (see `Runs`): the run the LMDB cursor is on, its keys, and the
/// entry the cursor is on. `Cursor` hands its moves over to it, so code above `Storage` walks a packed
/// table entry by entry, as any other table.
///
/// Runtime exclusivity checks are off for its fields: it belongs to one `Cursor`, used inside one
/// `Transaction.withCursor` call, and every access is a short read or write that calls out to nothing that
/// could reach the same field.
///
/// Every entry it returns has passed its checksum. A run's entries are found by position (its end table),
/// so a walk in either direction steps through a run in O(1) per entry.
final class RunCursor {
    private let handle: OpaquePointer?
    private let env: Environment
    private let table: Table
    private let pageSize: Int
    private let residentPages: ResidentPages?

    /// The run the cursor is on (nil: none yet, or one whose header is damaged).
    @exclusivity(unchecked) private var view: RunView?
    /// Whether the cursor is on a run at all (a damaged one included).
    @exclusivity(unchecked) private var loaded = false
    @exclusivity(unchecked) private var runKey: UInt64 = 0
    /// The keys of a run that is not dense (a dense run's are computed).
    @exclusivity(unchecked) private var keys: [UInt64] = []
    /// The entry the cursor is on (-1: none).
    @exclusivity(unchecked) private var index = -1
    /// The key of the entry returned last, big-endian (returned keys point here).
    private let keyBuffer = UnsafeMutableRawPointer.allocate(byteCount: 8, alignment: 8)

    init(handle: OpaquePointer?, env: Environment, table: Table, pageSize: Int, residentPages: ResidentPages?) {
        self.handle = handle
        self.env = env
        self.table = table
        self.pageSize = pageSize
        self.residentPages = residentPages
    }

    deinit { keyBuffer.deallocate() }

    private var count: Int { view?.count ?? 0 }

    @inline(__always)
    private func key(_ i: Int) -> UInt64 {
        guard let view else { return runKey }
        return view.isDense ? view.key &+ UInt64(i) : keys[i]
    }

    // MARK: Moves

    /// The move `Cursor` asks for, as LMDB names it (a packed table has no duplicates: the next key is the
    /// next entry, and duplicate moves find nothing).
    @inline(__always)
    func move(_ op: MDB_cursor_op, _ key: UnsafeRawBufferPointer?) throws -> Cursor.Entry? {
        switch op {
        case MDB_NEXT, MDB_NEXT_NODUP: return try next()
        case MDB_PREV: return try previous()
        case MDB_FIRST: return try first()
        case MDB_LAST: return try last()
        case MDB_GET_CURRENT: return try current()
        case MDB_SET_KEY: return try key.flatMap { try seek(exactly: $0) }
        case MDB_SET_RANGE: return try key.flatMap { try seek(atLeast: $0) }
        default: return nil
        }
    }

    func first() throws -> Cursor.Entry? {
        try step(MDB_FIRST) ? try entry(0) : nil
    }

    /// The keys of the table's first `limit` entries, read from the runs' headers: no entry is opened, so
    /// none is verified (each is when it is read). The cursor is left on no entry.
    func entryKeys(limit: Int) throws -> [UInt64] {
        var out: [UInt64] = []
        var more = try step(MDB_FIRST)
        while more && out.count < limit {
            let n = Swift.min(count, limit - out.count)
            if let view, view.isDense {
                out.append(contentsOf: (0..<UInt64(n)).lazy.map { view.key &+ $0 })
            } else {
                out.append(contentsOf: keys.prefix(n))
            }
            more = try step(MDB_NEXT)
        }
        index = -1
        return out
    }

    func last() throws -> Cursor.Entry? {
        try step(MDB_LAST) ? try entry(count - 1) : nil
    }

    @inline(__always)
    func next() throws -> Cursor.Entry? {
        guard loaded else { return try first() }
        if index + 1 < count { return try entry(index + 1) }
        return try step(MDB_NEXT) ? try entry(0) : nil
    }

    @inline(__always)
    func previous() throws -> Cursor.Entry? {
        guard loaded else { return try last() }
        if index > 0 { return try entry(index - 1) }
        return try step(MDB_PREV) ? try entry(count - 1) : nil
    }

    func current() throws -> Cursor.Entry? {
        index >= 0 ? try entry(index) : nil
    }

    /// The entry under `key`, or nil. A key within the current run's first and last keys is found there
    /// with no search, one in a neighbouring run by stepping there: lookups in increasing or decreasing
    /// order, as batched reads of keys make them, read each run once and search the tree only for a jump.
    func seek(exactly key: UnsafeRawBufferPointer) throws -> Cursor.Entry? {
        guard key.count == 8 else { return nil }
        let wanted = Runs.number(key)
        if !(loaded && view != nil && wanted >= runKey && wanted <= self.key(count - 1)) {
            guard try steppedNear(wanted) || floor(key) else { return nil }
        }
        let i = try position(of: wanted)
        if i < count, self.key(i) == wanted { return try noted(entry(i)) }
        try verifyNeighbours(of: i)
        index = -1
        return nil
    }

    /// The first entry whose key is at least `key`, or nil.
    func seek(atLeast key: UnsafeRawBufferPointer) throws -> Cursor.Entry? {
        // Every key is 8 bytes: a shorter `key` is passed by its zero-padded form, a longer one by the
        // keys above its first 8 bytes.
        if key.count != 8 {
            let padded = Array(key.prefix(8)) + [UInt8](repeating: 0, count: max(0, 8 - key.count))
            let number = padded.withUnsafeBytes { Runs.number($0) }
            if key.count < 8 { return try Runs.withKey(number) { try seek(atLeast: $0) } }
            return number == .max ? nil : try Runs.withKey(number + 1) { try seek(atLeast: $0) }
        }
        guard try floor(key) else { return try first() }
        let i = try position(of: Runs.number(key))
        if i < count {
            if i > 0 { _ = try entry(i - 1) }  // the entry before is read too: damage that moved a key shows
            return try noted(entry(i))
        }
        index = count - 1
        return try next()
    }

    /// The current entry's key without verifying its value (for listing damage); the run's key when the
    /// cursor is on a run it could not read.
    func currentKey() -> [UInt8]? {
        guard loaded else { return nil }
        var number = (index >= 0 && index < count ? key(index) : runKey).bigEndian
        return withUnsafeBytes(of: &number) { Array($0) }
    }

    // MARK: Runs

    /// The position of the first entry of the current run whose key is at least `wanted`.
    private func position(of wanted: UInt64) throws -> Int {
        guard let view else { return 0 }
        guard let i = view.position(of: wanted, keys: keys) else { throw Runs.malformed(table, runKey, env) }
        return i
    }

    /// Steps to the next run and the one after (or, for a key below the current run, the run before
    /// and the one before that) while `wanted` lies a little outside the current run (no further than
    /// twice its span of keys): true on a run whose keys span `wanted`. A step costs a tenth of a search
    /// from the root; lookups far apart never step. False (the caller searches) past those two runs, in
    /// a gap between runs, or on a run that does not parse (the search reports it if `wanted` is in it).
    private func steppedNear(_ wanted: UInt64) -> Bool {
        guard loaded, view != nil else { return false }
        let first = runKey
        let last = key(count - 1)
        let span = (last - first) &+ 1
        let forward = wanted > last
        guard forward ? (wanted - last) / 2 <= span : wanted < first && (first - wanted) / 2 <= span else { return false }
        for _ in 0..<2 {
            guard (try? step(forward ? MDB_NEXT : MDB_PREV, noting: false)) == true, view != nil else { return false }
            let (low, high) = (runKey, key(count - 1))
            if forward ? wanted < low : wanted > high { return false }  // in the gap before this run
            if wanted >= low && wanted <= high { return true }
        }
        return false
    }

    /// Moves the LMDB cursor (first, last, next or previous) to the next run that way, past the count
    /// entry, and makes it the current run; false when there is none. `noting`: a walk reads the run.
    private func step(_ op: MDB_cursor_op, noting: Bool = true) throws -> Bool {
        var k = MDB_val()
        var v = MDB_val()
        var rc = mdb_cursor_get(handle, &k, &v, op)
        if rc == 0, try Runs.isCountEntry(k, env: env, table: table) {
            // The count entry sorts first: past it going forwards, the start going backwards.
            if op == MDB_PREV || op == MDB_LAST {
                _ = mdb_cursor_get(handle, &k, &v, MDB_NEXT)
                return false
            }
            rc = mdb_cursor_get(handle, &k, &v, MDB_NEXT)
        }
        if rc == MDB_NOTFOUND { return false }
        try env.check(rc)
        try load(k, v)
        if noting { residentPages?.note(k, v) }
        return true
    }

    /// Puts the LMDB cursor on the run that holds `key` or would (the last run whose key is not above
    /// it) and makes it current; false when `key` sorts before every run.
    private func floor(_ key: UnsafeRawBufferPointer) throws -> Bool {
        guard let (k, v) = try Runs.floor(handle, key, env: env, table: table) else { return false }
        try load(k, v)
        return true
    }

    /// Makes the LMDB entry `k`/`v` the current run; a run that does not parse is reported once, and
    /// moves then go past it.
    private func load(_ k: MDB_val, _ v: MDB_val) throws {
        loaded = true
        view = nil
        index = -1
        runKey = Runs.number(bytes(k))
        try ValueBounds.check(key: k, value: v, pageSize: pageSize, env)
        guard let parsed = RunView(bytes(v), key: runKey), parsed.isDense || parsed.keys(into: &keys) else {
            throw Runs.malformed(table, runKey, env)
        }
        view = parsed
    }

    /// Entry `i` of the current run, verified; the cursor is on it even when it fails its check, so a
    /// walk listing damage moves on past it.
    @inline(__always)
    private func entry(_ i: Int) throws -> Cursor.Entry? {
        guard i >= 0, i < count, let view else { return nil }
        index = i
        keyBuffer.storeBytes(of: key(i).bigEndian, as: UInt64.self)
        let key = UnsafeRawBufferPointer(start: keyBuffer, count: 8)
        guard let sealed = view.entry(i) else { throw Runs.malformed(table, runKey, env) }
        return (key, try Cursor.opened(table, key, sealed, env))
    }

    /// `entry` (found by a seek) noted as read: only the entry, where a walk notes the whole run, so that
    /// lookups reading one entry of each run do not count whole runs toward `ResidentPages`' release.
    @inline(__always)
    private func noted(_ entry: Cursor.Entry?) -> Cursor.Entry? {
        if let value = entry?.value { residentPages?.note(value.baseAddress, value.count &+ 8) }
        return entry
    }

    /// After a lookup that found nothing at position `i`: the entries on either side are verified, so an
    /// entry whose key damage changed (now sorting elsewhere) is reported instead of missed.
    private func verifyNeighbours(of i: Int) throws {
        if i > 0 { _ = try entry(i - 1) }
        if i < count { _ = try entry(i) } else { _ = try next() }
    }
}

extension Runs {
    /// The run of a packed table that holds `key` or would: the last run whose key is not above it
    /// (LMDB's cursor left on it), or nil when `key` sorts before every run.
    static func floor(_ cursor: OpaquePointer?, _ key: UnsafeRawBufferPointer, env: Environment,
                      table: Table) throws -> (MDB_val, MDB_val)? {
        var k = mdbVal(key)
        var v = MDB_val()
        var rc = mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE)
        if rc == 0, k.mv_size == 8, let found = k.mv_data, found.loadUnaligned(as: UInt64.self) == key.loadUnaligned(as: UInt64.self) {
            return (k, v)
        }
        if rc == 0 {
            rc = mdb_cursor_get(cursor, &k, &v, MDB_PREV)
        } else if rc == MDB_NOTFOUND {
            rc = mdb_cursor_get(cursor, &k, &v, MDB_LAST)
        }
        if rc == MDB_NOTFOUND { return nil }
        try env.check(rc)
        if try isCountEntry(k, env: env, table: table) { return nil }
        return (k, v)
    }

    /// Whether an LMDB entry of a packed table is its count entry; throws for a key that is neither
    /// that nor a run's (damage).
    @inline(__always)
    static func isCountEntry(_ k: MDB_val, env: Environment, table: Table) throws -> Bool {
        if k.mv_size == 8 { return false }
        if k.mv_size == 1, k.mv_data?.load(as: UInt8.self) == 0 { return true }
        throw LatticeError.corruptFile(path: env.path, reason: "'\(env.seals.name(of: table))' holds a key of \(k.mv_size) "
            + "bytes, which a packed table cannot hold (a damaged page).")
    }

    /// The error for a run whose entries do not parse.
    static func malformed(_ table: Table, _ key: UInt64, _ env: Environment) -> LatticeError {
        let name = withKey(key) { env.seals.describe(key: $0, in: table) }
        return .corruptFile(path: env.path, reason: "the entries packed under \(name) in '\(env.seals.name(of: table))' "
            + "do not decode (a damaged value).")
    }
}
