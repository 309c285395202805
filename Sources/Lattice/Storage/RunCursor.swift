import CLMDB
#if canImport(Glibc)
import Glibc
#endif

/// A cursor's state over a packed table (see `Runs`): the run the LMDB cursor is on, the entries of it
/// parsed so far, and the entry the cursor is on. `Cursor` hands its moves over to it, so code above
/// `Storage` walks a packed table entry by entry, as any other table.
///
/// Runtime exclusivity checks are off for its fields: it belongs to one `Cursor`, used inside one
/// `Transaction.withCursor` call, and every access is a short read or write that calls out to nothing that
/// could reach the same field.
///
/// Every entry it returns has passed its checksum. Runs are parsed as far as a move needs (a lookup
/// stops at its key), and the state keeps what is parsed, so a walk in either direction steps through a
/// run without parsing it again.
final class RunCursor {
    private let handle: OpaquePointer?
    private let env: Environment
    private let table: Table
    private let pageSize: Int
    private let residentPages: ResidentPages?

    /// The run the cursor is on (nil: none yet).
    @exclusivity(unchecked) private var run: UnsafeRawBufferPointer?
    @exclusivity(unchecked) private var runKey: UInt64 = 0
    @exclusivity(unchecked) private var scanner = RunScanner(UnsafeRawBufferPointer(start: nil, count: 0), key: 0)
    /// The run's entries parsed so far, and the one the cursor is on (-1: none).
    /// (A buffer of its own, not an array: appending is the step of every parse.)
    @exclusivity(unchecked) private var entries: UnsafeMutablePointer<RunEntry>
    @exclusivity(unchecked) private var parsed = 0
    @exclusivity(unchecked) private var capacity = 64
    @exclusivity(unchecked) private var index = -1
    /// Whether the current run failed to parse past `entries` (reported once: moves then go past it).
    @exclusivity(unchecked) private var damaged = false
    /// The key of the next run once looked up (see `nextRunKey`).
    @exclusivity(unchecked) private var nextKey: UInt64??
    /// The key of the entry returned last, big-endian (returned keys point here).
    private let keyBuffer = UnsafeMutableRawPointer.allocate(byteCount: 8, alignment: 8)

    init(handle: OpaquePointer?, env: Environment, table: Table, pageSize: Int, residentPages: ResidentPages?) {
        self.handle = handle
        self.env = env
        self.table = table
        self.pageSize = pageSize
        self.residentPages = residentPages
        entries = .allocate(capacity: capacity)
    }

    deinit {
        keyBuffer.deallocate()
        entries.deallocate()
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

    func last() throws -> Cursor.Entry? {
        guard try step(MDB_LAST) else { return nil }
        try parseAll()
        return try entry(parsed - 1)
    }

    @inline(__always)
    func next() throws -> Cursor.Entry? {
        guard run != nil else { return try first() }
        if try index + 1 < parsed || parse(upTo: index + 1) { return try entry(index + 1) }
        return try step(MDB_NEXT) ? try entry(0) : nil
    }

    func previous() throws -> Cursor.Entry? {
        guard run != nil else { return try last() }
        if index > 0 { return try entry(index - 1) }
        guard try step(MDB_PREV) else { return nil }
        try parseAll()
        return try entry(parsed - 1)
    }

    func current() throws -> Cursor.Entry? {
        index >= 0 ? try entry(index) : nil
    }

    /// The entry under `key`, or nil. A key inside the current run (below the next run's key, which is
    /// looked up once per run) is found from the current entry on, with no search: lookups in increasing
    /// order, as batched reads of keys make them, parse each run once.
    func seek(exactly key: UnsafeRawBufferPointer) throws -> Cursor.Entry? {
        guard key.count == 8 else { return nil }
        let wanted = Runs.number(key)
        var i = 0
        if run != nil, wanted >= runKey, !damaged {
            let next = try nextRunKey()
            if let next, wanted >= next {
                if wanted == next, try step(MDB_NEXT) { return try entry(0) }
                guard try floor(key) else { return nil }
            } else if index >= 0, index < parsed, entries[index].key <= wanted {
                i = index
            }
        } else {
            guard try floor(key) else { return nil }
        }
        while try parse(upTo: i) {
            let found = entries[i].key
            if found == wanted { return try entry(i) }
            if found > wanted { break }
            i += 1
        }
        try verifyNeighbours(of: i)
        index = -1
        return nil
    }

    /// The key of the run after the current one (nil: none), read once per run; the LMDB cursor stays
    /// on the current run.
    private func nextRunKey() throws -> UInt64? {
        if let known = nextKey { return known }
        var k = MDB_val()
        var v = MDB_val()
        let rc = mdb_cursor_get(handle, &k, &v, MDB_NEXT)
        var found: UInt64?
        if rc == 0 {
            found = k.mv_size == 8 ? Runs.number(bytes(k)) : nil
            try env.check(mdb_cursor_get(handle, &k, &v, MDB_PREV))
        } else if rc != MDB_NOTFOUND {
            try env.check(rc)
        }
        nextKey = .some(found)
        return found
    }

    /// The first entry whose key is at least `key`, or nil.
    func seek(atLeast key: UnsafeRawBufferPointer) throws -> Cursor.Entry? {
        // Every key is 8 bytes: a shorter `key` is passed by its zero-padded form, a longer one by the
        // keys above its first 8 bytes.
        if key.count != 8 {
            var padded = Array(key.prefix(8)) + [UInt8](repeating: 0, count: max(0, 8 - key.count))
            if key.count > 8 { return try padded.withUnsafeBytes { try seek(above: Runs.number($0)) } }
            return try padded.withUnsafeMutableBytes { try seek(atLeast: UnsafeRawBufferPointer($0)) }
        }
        guard try floor(key) else { return try first() }
        let wanted = Runs.number(key)
        var i = 0
        while try parse(upTo: i) {
            if entries[i].key >= wanted {
                if i > 0 { _ = try entry(i - 1) }  // the entry before is read too: damage that moved a key shows
                return try entry(i)
            }
            i += 1
        }
        index = parsed - 1
        return try next()
    }

    /// The first entry whose key is above `number`, or nil.
    private func seek(above number: UInt64) throws -> Cursor.Entry? {
        if number == .max { return nil }
        return try Runs.withKey(number + 1) { try seek(atLeast: $0) }
    }

    /// The current entry's key without verifying its value (for listing damage); the run's key when the
    /// cursor is on a run it could not parse.
    func currentKey() -> [UInt8]? {
        guard run != nil else { return nil }
        var number = (index >= 0 && index < parsed ? entries[index].key : runKey).bigEndian
        return withUnsafeBytes(of: &number) { Array($0) }
    }

    // MARK: Runs

    /// Moves the LMDB cursor (first, last, next or previous) to the next run that way, past the count
    /// entry, and makes it the current run; false when there is none.
    private func step(_ op: MDB_cursor_op) throws -> Bool {
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
        return true
    }

    /// Puts the LMDB cursor on the run that holds `key` or would (the last run whose key is not above
    /// it) and makes it current; false when `key` sorts before every run.
    private func floor(_ key: UnsafeRawBufferPointer) throws -> Bool {
        guard let (k, v) = try Runs.floor(handle, key, env: env, table: table) else { return false }
        try load(k, v)
        return true
    }

    private func load(_ k: MDB_val, _ v: MDB_val) throws {
        try ValueBounds.check(key: k, value: v, pageSize: pageSize, env)
        residentPages?.note(k, v)
        let value = bytes(v)
        runKey = Runs.number(bytes(k))
        run = value
        scanner = RunScanner(value, key: runKey)
        parsed = 0
        index = -1
        damaged = false
        nextKey = nil
    }

    /// Parses the current run's entries up to entry `i`; false when the run has fewer.
    @inline(__always)
    private func parse(upTo i: Int) throws -> Bool {
        while parsed <= i {
            guard let e = scanner.next() else {
                if scanner.malformed && !damaged {
                    damaged = true
                    throw Runs.malformed(table, runKey, env)
                }
                return false
            }
            if parsed == capacity {
                let grown = UnsafeMutablePointer<RunEntry>.allocate(capacity: capacity * 2)
                grown.moveInitialize(from: entries, count: parsed)
                entries.deallocate()
                entries = grown
                capacity *= 2
            }
            (entries + parsed).initialize(to: e)
            parsed += 1
        }
        return true
    }

    private func parseAll() throws {
        while try parse(upTo: parsed) {}
    }

    /// Entry `i` of the current run (parsed), verified; the cursor is on it even when it fails its check,
    /// so a walk listing damage moves on past it.
    @inline(__always)
    private func entry(_ i: Int) throws -> Cursor.Entry? {
        guard i >= 0, try parse(upTo: i), let run else { return nil }
        index = i
        let e = entries[i]
        keyBuffer.storeBytes(of: e.key.bigEndian, as: UInt64.self)
        let key = UnsafeRawBufferPointer(start: keyBuffer, count: 8)
        return (key, try Cursor.opened(table, key, e.sealed(in: run), env))
    }

    /// After a lookup that found nothing at position `i`: the entries on either side are verified, so an
    /// entry whose key damage changed (now sorting elsewhere) is reported instead of missed.
    private func verifyNeighbours(of i: Int) throws {
        if i > 0 { _ = try entry(i - 1) }
        if try parse(upTo: i) { _ = try entry(i) } else { _ = try next() }
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
