import CLMDB
#if canImport(Glibc)
import Glibc
#endif

/// Bytes lent by LMDB or by the caller. Bytes from LMDB are valid only inside the closure that
/// receives them: copy what must outlive it.
typealias Bytes = UnsafeRawBufferPointer

@inline(__always)
func mdbVal(_ bytes: Bytes) -> MDB_val {
    MDB_val(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
}

@inline(__always)
func bytes(_ val: MDB_val) -> Bytes {
    Bytes(start: val.mv_data, count: val.mv_size)
}

/// An LMDB transaction: a read snapshot or the single write transaction.
///
/// Read operations of a read transaction hold the environment's remap lock (shared) for their
/// duration; the writer's own operations need not, since only the writer grows the map.
///
/// Write operations are appended to a log so that a write that hits `MDB_MAP_FULL` can be retried
/// after growing the map: the LMDB transaction is aborted, the map grown, a new transaction begun
/// (still under the writer locks, so on the same committed state) and the log replayed. A consequence:
/// no cursor of a write transaction may be open across a write operation.
final class Transaction {
    let env: Environment
    let isWrite: Bool
    private(set) var txn: OpaquePointer?
    private let log = ReplayLog()
    private var baseID = 0
    /// Pages walked by this read transaction's cursors (nil for the write transaction).
    private let residentPages: ResidentPages?
    /// By database handle, whether values there end with a checksum (`Seals`), taken when the
    /// transaction begins: values written are sealed, values read verified and passed on without it.
    private var sealed: [Bool] = []
    /// The buffer a value is sealed in before it is written (`sealCapacity` bytes).
    private var sealBuffer: UnsafeMutableRawPointer?
    private var sealCapacity = 0
    /// The page size, for `ValueBounds` (0 for the write transaction, whose new pages are not in the map).
    private let pageSize: Int

    private enum LogOp: UInt8 { case put, delete, deleteDup, drop }

    /// A read transaction, begun lazily by `renew()`.
    init(readOn env: Environment) {
        self.env = env
        self.isWrite = false
        residentPages = ResidentPages(env: env)
        pageSize = ValueBounds.pageSize(env)
    }

    /// Begins the write transaction. The caller holds the environment's writer lock.
    init(writeOn env: Environment) throws {
        self.env = env
        self.isWrite = true
        residentPages = nil
        pageSize = 0
        guard env.claimWriteTransaction() else { throw LatticeError.alreadyInWriteTransaction }
        ownsWriteClaim = true
        do {
            try env.reserveHeadroom()
            txn = try begin()
        } catch {
            releaseWriteClaim()
            throw error
        }
        baseID = mdb_txn_id(txn)
    }

    deinit {
        free(sealBuffer)
        if let txn { mdb_txn_abort(txn) }
        releaseWriteClaim()
    }

    /// Whether this (write) transaction holds the environment's write-transaction claim.
    private var ownsWriteClaim = false

    private func releaseWriteClaim() {
        if ownsWriteClaim { env.releaseWriteTransaction() }
        ownsWriteClaim = false
    }

    private func begin() throws -> OpaquePointer? {
        sealed = env.seals.current  // before the snapshot: the file's format is fixed before any commit it applies to
        while true {
            var txn: OpaquePointer?
            // Beginning reads the meta pages inside the map: a reader must not race a re-map by the
            // writer (the writer itself never does, it is the only thread that grows the map).
            let rc = isWrite ? mdb_txn_begin(env.handle, nil, 0, &txn)
                : env.withMapShared { mdb_txn_begin(env.handle, nil, UInt32(MDB_RDONLY), &txn) }
            if rc == MDB_MAP_RESIZED { try env.adoptMapSize(); continue }
            try env.check(rc)
            return txn
        }
    }

    /// Starts (or restarts on the latest commit) a read snapshot.
    func renew() throws {
        precondition(!isWrite)
        if let txn {
            sealed = env.seals.current
            let rc = env.withMapShared { mdb_txn_renew(txn) }  // reads the meta pages, as `begin` does
            if rc == 0 { return }
            mdb_txn_abort(txn)
            self.txn = nil
            if rc != MDB_MAP_RESIZED { try env.check(rc) }
            try env.adoptMapSize()
        }
        txn = try begin()
    }

    /// Releases a read snapshot; the transaction handle is kept for `renew()`.
    func reset() {
        if let txn, !isWrite { mdb_txn_reset(txn) }
    }

    var isActive: Bool { txn != nil }

    /// The LMDB transaction id of this snapshot (the number of the last commit it sees).
    var id: Int { txn.map { mdb_txn_id($0) } ?? 0 }

    // MARK: Reads

    @inline(__always)
    func reading<R>(_ body: () throws -> R) rethrows -> R {
        if isWrite { return try body() }
        return try env.withMapShared(body)
    }

    /// Looks `key` up and passes the value (or nil) to `body`.
    func get<R>(_ dbi: MDB_dbi, _ key: Bytes, _ body: (Bytes?) throws -> R) throws -> R {
        try reading {
            var k = mdbVal(key)
            var v = MDB_val()
            let rc = mdb_get(txn, dbi, &k, &v)
            if rc == MDB_NOTFOUND {
                if isSealed(dbi) { try Cursor.verifyAround(key, txn: txn, dbi: dbi, env: env, pageSize: pageSize) }
                return try body(nil)
            }
            try env.check(rc)
            try ValueBounds.check(v, pageSize: pageSize, env)
            return try body(isSealed(dbi) ? opened(dbi, key, bytes(v)) : bytes(v))
        }
    }

    /// Number of entries in `dbi` (O(1)).
    func count(_ dbi: MDB_dbi) throws -> Int {
        var stat = MDB_stat()
        try env.check(reading { mdb_stat(txn, dbi, &stat) })  // may read the database's root page
        return stat.ms_entries
    }

    /// Opens a cursor for the duration of `body` (under the remap lock for read transactions).
    func withCursor<R>(_ dbi: MDB_dbi, _ body: (inout Cursor) throws -> R) throws -> R {
        try reading {
            var cursor: OpaquePointer?
            try env.check(mdb_cursor_open(txn, dbi, &cursor))
            defer { mdb_cursor_close(cursor) }
            var c = Cursor(handle: cursor, env: env, residentPages: residentPages, dbi: dbi, sealed: isSealed(dbi), pageSize: pageSize)
            return try body(&c)
        }
    }

    /// Whether values of `dbi` are sealed in this transaction.
    @inline(__always)
    private func isSealed(_ dbi: MDB_dbi) -> Bool {
        let i = Int(dbi)
        return i < sealed.count && sealed[i]
    }

    /// A sealed value without its checksum; throws `corruptFile` when it does not match.
    @inline(__always)
    private func opened(_ dbi: MDB_dbi, _ key: Bytes, _ value: Bytes) throws -> Bytes {
        guard let value = Checksum.open(key: key, sealed: value) else { throw env.seals.damage(dbi, key: key, path: env.path) }
        return value
    }

    // MARK: Writes

    /// Stores `value` under `key`. With `MDB_NOOVERWRITE` returns false when the key exists.
    @discardableResult
    func put(_ dbi: MDB_dbi, _ key: Bytes, _ value: Bytes, flags: UInt32 = 0) throws -> Bool {
        guard isSealed(dbi) else { return try putValue(dbi, key, value, flags: flags) }
        let size = value.count + Checksum.size
        if size > sealCapacity {
            let capacity = max(size, 2 * sealCapacity, 256)
            guard let grown = realloc(sealBuffer, capacity) else {
                throw LatticeError.storage(path: env.path, code: ENOMEM, message: "Out of memory for a value of \(size) bytes.")
            }
            sealBuffer = grown
            sealCapacity = capacity
        }
        Checksum.seal(key: key, value: value, to: sealBuffer!)
        return try putValue(dbi, key, Bytes(start: sealBuffer, count: size), flags: flags)
    }

    /// `put` of a value as it is stored.
    private func putValue(_ dbi: MDB_dbi, _ key: Bytes, _ value: Bytes, flags: UInt32) throws -> Bool {
        try reserveLog(key, value)
        while true {
            var k = mdbVal(key)
            var v = mdbVal(value)
            let rc = mdb_put(txn, dbi, &k, &v, flags)
            if rc == 0 {
                record(.put, dbi, key, value, flags: flags)
                return true
            }
            if rc == MDB_KEYEXIST { return false }
            if rc == MDB_MAP_FULL { try growAndReplay(); continue }
            try env.check(rc)
        }
    }

    /// Adds `value` to the duplicates of `key` in a sorted-duplicates database. With `last` the caller
    /// expects it to sort after every duplicate there: `MDB_APPENDDUP` then skips the search among them
    /// (and refuses a value that does not sort last, which a normal put then places).
    func putDuplicate(_ dbi: MDB_dbi, _ key: Bytes, _ value: Bytes, last: Bool) throws {
        if last, try put(dbi, key, value, flags: UInt32(MDB_APPENDDUP)) { return }
        try put(dbi, key, value)
    }

    /// Deletes `key` (with `value`, one duplicate of a sorted-duplicates database). False when absent.
    @discardableResult
    func delete(_ dbi: MDB_dbi, _ key: Bytes, value: Bytes? = nil) throws -> Bool {
        try reserveLog(key, value ?? Bytes(start: nil, count: 0))
        while true {
            var k = mdbVal(key)
            var v = value.map(mdbVal) ?? MDB_val()
            let rc = value == nil ? mdb_del(txn, dbi, &k, nil) : mdb_del(txn, dbi, &k, &v)
            if rc == 0 {
                record(value == nil ? .delete : .deleteDup, dbi, key, value ?? Bytes(start: nil, count: 0), flags: 0)
                return true
            }
            if rc == MDB_NOTFOUND { return false }
            if rc == MDB_MAP_FULL { try growAndReplay(); continue }
            try env.check(rc)
        }
    }

    /// Empties `dbi`.
    func drop(_ dbi: MDB_dbi) throws {
        try reserveLog(Bytes(start: nil, count: 0), Bytes(start: nil, count: 0))
        while true {
            let rc = mdb_drop(txn, dbi, 0)
            if rc == 0 {
                record(.drop, dbi, Bytes(start: nil, count: 0), Bytes(start: nil, count: 0), flags: 0)
                return
            }
            if rc == MDB_MAP_FULL { try growAndReplay(); continue }
            try env.check(rc)
        }
    }

    func commit() throws {
        precondition(isWrite)
        while true {
            let rc = mdb_txn_commit(txn)
            if rc == 0 { txn = nil; log.reset(); releaseWriteClaim(); return }
            // A failed commit has freed the transaction.
            txn = nil
            if rc == MDB_MAP_FULL {
                try growForReplay()
                try restartAndReplay()
                continue
            }
            try env.check(rc)
        }
    }

    func abort() {
        if let txn { mdb_txn_abort(txn) }
        txn = nil
        log.reset()
        releaseWriteClaim()
    }

    // MARK: Growth

    /// Makes room in the log for an operation before it runs, so that one that succeeds is always logged.
    @inline(__always)
    private func reserveLog(_ key: Bytes, _ value: Bytes) throws {
        guard log.reserve(keyCount: key.count, valueCount: value.count) else {
            throw LatticeError.storage(path: env.path, code: ENOMEM, message: "Out of memory for the transaction's write log.")
        }
    }

    /// Appends one operation to the log (this runs on every write operation), in room `reserveLog` made.
    @inline(__always)
    private func record(_ op: LogOp, _ dbi: MDB_dbi, _ key: Bytes, _ value: Bytes, flags: UInt32) {
        log.append(op.rawValue, UInt32(dbi), flags, key, value)
    }

    private func growAndReplay() throws {
        mdb_txn_abort(txn)
        txn = nil
        try growForReplay()
        try restartAndReplay()
    }

    /// Grows the map (no LMDB transaction active) so that the committed data plus what the log will
    /// write again fill at most half of it, as at the start of a transaction: one growth, one replay.
    private func growForReplay() throws {
        try env.growMap(minimum: 2 * (env.usedBytes + log.byteCount))
    }

    /// Begins a fresh write transaction and re-applies the log (growing again if still too small).
    private func restartAndReplay() throws {
        txn = try begin()
        guard mdb_txn_id(txn) == baseID else {
            // Only a writer that ignores Lattice's writer lock can get here.
            throw LatticeError.storage(
                path: env.path, code: MDB_MAP_FULL,
                message: "another program committed while the map was being grown; the write was rolled back.")
        }
        let rc: Int32 = log.forEach { op, dbi, flags, k, v in
            switch LogOp(rawValue: op)! {
            case .put: return mdb_put(txn, dbi, &k, &v, flags)
            case .delete: return mdb_del(txn, dbi, &k, nil)
            case .deleteDup: return mdb_del(txn, dbi, &k, &v)
            case .drop: return mdb_drop(txn, dbi, 0)
            }
        }
        if rc == MDB_MAP_FULL {
            mdb_txn_abort(txn)
            txn = nil
            try growForReplay()
            try restartAndReplay()
            return
        }
        try env.check(rc)
    }
}

/// A cursor, valid inside `Transaction.withCursor`.
struct Cursor {
    let handle: OpaquePointer?
    let env: Environment
    let residentPages: ResidentPages?
    let dbi: MDB_dbi
    /// Whether the database's values end with a checksum (see `Transaction.sealed`).
    let sealed: Bool
    /// See `Transaction.pageSize`.
    let pageSize: Int

    /// Positions the cursor; returns the entry there, or nil. (Transparent: inlined into every loop even
    /// now that it verifies what it returns.)
    @_transparent
    mutating func move(_ op: MDB_cursor_op, key: Bytes? = nil) throws -> (key: Bytes, value: Bytes)? {
        var k = key.map(mdbVal) ?? MDB_val()
        var v = MDB_val()
        let rc = mdb_cursor_get(handle, &k, &v, op)
        if sealed && (op == MDB_SET_RANGE || (op == MDB_SET_KEY && rc == MDB_NOTFOUND)) { try verifyAround(key) }
        if rc == MDB_NOTFOUND { return nil }
        try env.check(rc)
        try ValueBounds.check(key: k, value: v, pageSize: pageSize, env)
        residentPages?.note(k, v)
        return (bytes(k), sealed ? try opened(bytes(k), bytes(v)) : bytes(v))
    }

    /// Positions at an exact key/value pair of a sorted-duplicates database.
    mutating func seek(key: Bytes, value: Bytes, op: MDB_cursor_op) throws -> (key: Bytes, value: Bytes)? {
        var k = mdbVal(key)
        var v = mdbVal(value)
        let rc = mdb_cursor_get(handle, &k, &v, op)
        if rc == MDB_NOTFOUND { return nil }
        try env.check(rc)
        try ValueBounds.check(key: k, value: v, pageSize: pageSize, env)
        residentPages?.note(k, v)
        return (bytes(k), sealed ? try opened(bytes(k), bytes(v)) : bytes(v))
    }

    /// `verifyAround` for this cursor's database (kept out of line: `move` is inlined into every loop).
    @inline(never)
    private func verifyAround(_ key: Bytes?) throws {
        guard let key else { return }
        try Cursor.verifyAround(key, txn: mdb_cursor_txn(handle), dbi: dbi, env: env, pageSize: pageSize)
    }

    /// Damage that changes a key hides its entry from lookups (it now sorts elsewhere) but leaves it where
    /// a lookup of either key lands: a lookup that finds nothing, and the start of a range, read (and so
    /// verify) the entry there and the one before it, with a cursor of their own.
    static func verifyAround(_ key: Bytes, txn: OpaquePointer?, dbi: MDB_dbi, env: Environment, pageSize: Int) throws {
        var handle: OpaquePointer?
        try env.check(mdb_cursor_open(txn, dbi, &handle))
        defer { mdb_cursor_close(handle) }
        let cursor = Cursor(handle: handle, env: env, residentPages: nil, dbi: dbi, sealed: true, pageSize: pageSize)
        var k = mdbVal(key)
        var v = MDB_val()
        if mdb_cursor_get(handle, &k, &v, MDB_SET_RANGE) == 0 {
            try ValueBounds.check(key: k, value: v, pageSize: pageSize, env)
            _ = try cursor.opened(bytes(k), bytes(v))
            guard mdb_cursor_get(handle, &k, &v, MDB_PREV) == 0 else { return }
        } else if mdb_cursor_get(handle, &k, &v, MDB_LAST) != 0 {
            return
        }
        try ValueBounds.check(key: k, value: v, pageSize: pageSize, env)
        _ = try cursor.opened(bytes(k), bytes(v))
    }

    /// A sealed value without its checksum; throws `corruptFile` when it does not match. The cursor stays
    /// on the entry, so a caller listing damage can move on past it.
    @inline(__always)
    private func opened(_ key: Bytes, _ value: Bytes) throws -> Bytes {
        guard let value = Checksum.open(key: key, sealed: value) else { throw env.seals.damage(dbi, key: key, path: env.path) }
        return value
    }

    /// Number of duplicates at the current key.
    func duplicateCount() throws -> Int {
        var n: Int = 0
        try env.check(mdb_cursor_count(handle, &n))
        return n
    }
}

/// The replay log: entries `[u8 op][u32 dbi][u32 flags][u32 key count][u32 value count][key][value]`
/// (native byte order, unaligned) copied into a buffer that grows by doubling (appending to a
/// `[UInt8]` would check uniqueness and capacity per piece and zero-fill first).
final class ReplayLog {
    private var base: UnsafeMutableRawPointer?
    private var count = 0
    private var capacity = 0
    private static let headerSize = 17

    deinit { free(base) }

    /// Bytes logged so far.
    var byteCount: Int { count }

    /// Forgets every entry and frees the buffer.
    func reset() {
        free(base)
        base = nil
        count = 0
        capacity = 0
    }

    /// Makes room for one more entry; false when out of memory.
    @inline(__always)
    func reserve(keyCount: Int, valueCount: Int) -> Bool {
        let needed = count + ReplayLog.headerSize + keyCount + valueCount
        return needed <= capacity || grow(needed)
    }

    /// `realloc`: a large buffer is re-mapped by the kernel rather than copied.
    private func grow(_ needed: Int) -> Bool {
        let newCapacity = max(capacity * 2, needed, 4096)
        guard let grown = realloc(base, newCapacity) else { return false }
        base = grown
        capacity = newCapacity
        return true
    }

    /// Appends one entry, in room `reserve` made.
    @inline(__always)
    func append(_ op: UInt8, _ dbi: UInt32, _ flags: UInt32, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) {
        let size = ReplayLog.headerSize + key.count + value.count
        precondition(count + size <= capacity, "replay log entry without reserved room")
        let at = base.unsafelyUnwrapped + count
        at.storeBytes(of: op, as: UInt8.self)
        at.storeBytes(of: dbi, toByteOffset: 1, as: UInt32.self)
        at.storeBytes(of: flags, toByteOffset: 5, as: UInt32.self)
        at.storeBytes(of: UInt32(truncatingIfNeeded: key.count), toByteOffset: 9, as: UInt32.self)
        at.storeBytes(of: UInt32(truncatingIfNeeded: value.count), toByteOffset: 13, as: UInt32.self)
        if let k = key.baseAddress, !key.isEmpty { (at + ReplayLog.headerSize).copyMemory(from: k, byteCount: key.count) }
        if let v = value.baseAddress, !value.isEmpty {
            (at + ReplayLog.headerSize + key.count).copyMemory(from: v, byteCount: value.count)
        }
        count += size
    }

    /// Passes every entry in order to `body` (`op`, `dbi`, `flags`, key, value), stopping at the first
    /// non-zero result, which it returns.
    func forEach(_ body: (UInt8, MDB_dbi, UInt32, inout MDB_val, inout MDB_val) -> Int32) -> Int32 {
        guard let base else { return 0 }
        var at = 0
        while at < count {
            let entry = base + at
            let keyCount = Int(entry.loadUnaligned(fromByteOffset: 9, as: UInt32.self))
            let valueCount = Int(entry.loadUnaligned(fromByteOffset: 13, as: UInt32.self))
            var k = MDB_val(mv_size: keyCount, mv_data: entry + ReplayLog.headerSize)
            var v = MDB_val(mv_size: valueCount, mv_data: entry + ReplayLog.headerSize + keyCount)
            let rc = body(entry.load(as: UInt8.self), MDB_dbi(entry.loadUnaligned(fromByteOffset: 1, as: UInt32.self)),
                          entry.loadUnaligned(fromByteOffset: 5, as: UInt32.self), &k, &v)
            if rc != 0 { return rc }
            at += ReplayLog.headerSize + keyCount + valueCount
        }
        return 0
    }
}
