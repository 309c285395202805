import CLMDB

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
    private var log = ReplayLog()
    private var baseID = 0
    /// Pages walked by this read transaction's cursors (nil for the write transaction).
    private let residentPages: ResidentPages?

    private enum LogOp: UInt8 { case put, delete, deleteDup, drop }

    /// A read transaction, begun lazily by `renew()`.
    init(readOn env: Environment) {
        self.env = env
        self.isWrite = false
        residentPages = ResidentPages(env: env)
    }

    /// Begins the write transaction. The caller holds the environment's writer lock.
    init(writeOn env: Environment) throws {
        self.env = env
        self.isWrite = true
        residentPages = nil
        guard env.claimWriteTransaction() else { throw LatticeError.alreadyInWriteTransaction }
        ownsWriteClaim = true
        do {
            txn = try begin()
        } catch {
            releaseWriteClaim()
            throw error
        }
        baseID = mdb_txn_id(txn)
    }

    deinit {
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
            if rc == MDB_NOTFOUND { return try body(nil) }
            try env.check(rc)
            return try body(bytes(v))
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
            var c = Cursor(handle: cursor, env: env, residentPages: residentPages)
            return try body(&c)
        }
    }

    // MARK: Writes

    /// Stores `value` under `key`. With `MDB_NOOVERWRITE` returns false when the key exists.
    @discardableResult
    func put(_ dbi: MDB_dbi, _ key: Bytes, _ value: Bytes, flags: UInt32 = 0) throws -> Bool {
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

    /// Deletes `key` (with `value`, one duplicate of a sorted-duplicates database). False when absent.
    @discardableResult
    func delete(_ dbi: MDB_dbi, _ key: Bytes, value: Bytes? = nil) throws -> Bool {
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
            if rc == 0 { txn = nil; log = ReplayLog(); releaseWriteClaim(); return }
            // A failed commit has freed the transaction.
            txn = nil
            if rc == MDB_MAP_FULL {
                try env.growMap()
                try restartAndReplay()
                continue
            }
            try env.check(rc)
        }
    }

    func abort() {
        if let txn { mdb_txn_abort(txn) }
        txn = nil
        log = ReplayLog()
        releaseWriteClaim()
    }

    // MARK: Growth

    /// Appends one operation: `[u8 op][u32 dbi][u32 flags][u32 key count][key][u32 value count][value]`,
    /// little-endian, copied straight into the log (this runs on every put).
    private func record(_ op: LogOp, _ dbi: MDB_dbi, _ key: Bytes, _ value: Bytes, flags: UInt32) {
        let size = 1 + 4 * 4 + key.count + value.count
        log.append(size) { raw in
            var at = 0
            func fixed(_ v: UInt32) {
                raw.storeBytes(of: v.littleEndian, toByteOffset: at, as: UInt32.self)
                at += 4
            }
            func bytes(_ b: Bytes) {
                if let base = b.baseAddress, b.count > 0 { (raw.baseAddress! + at).copyMemory(from: base, byteCount: b.count) }
                at += b.count
            }
            raw[at] = op.rawValue
            at += 1
            fixed(UInt32(dbi))
            fixed(flags)
            fixed(UInt32(key.count))
            bytes(key)
            fixed(UInt32(value.count))
            bytes(value)
        }
    }

    private func growAndReplay() throws {
        mdb_txn_abort(txn)
        txn = nil
        try env.growMap()
        try restartAndReplay()
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
        let rc: Int32 = log.withUnsafeBytes { raw in
            var at = 0
            func fixed() -> UInt32 {
                defer { at += 4 }
                return UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: at, as: UInt32.self))
            }
            func slice() -> MDB_val {
                let count = Int(fixed())
                defer { at += count }
                return MDB_val(mv_size: count, mv_data: UnsafeMutableRawPointer(mutating: raw.baseAddress! + at))
            }
            while at < raw.count {
                let op = LogOp(rawValue: raw[at])!
                at += 1
                let dbi = MDB_dbi(fixed())
                let flags = fixed()
                var k = slice()
                var v = slice()
                let rc: Int32
                switch op {
                case .put: rc = mdb_put(txn, dbi, &k, &v, flags)
                case .delete: rc = mdb_del(txn, dbi, &k, nil)
                case .deleteDup: rc = mdb_del(txn, dbi, &k, &v)
                case .drop: rc = mdb_drop(txn, dbi, 0)
                }
                if rc != 0 { return rc }
            }
            return 0
        }
        if rc == MDB_MAP_FULL {
            mdb_txn_abort(txn)
            txn = nil
            try env.growMap()
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

    /// Positions the cursor; returns the entry there, or nil.
    @inline(__always)
    mutating func move(_ op: MDB_cursor_op, key: Bytes? = nil) throws -> (key: Bytes, value: Bytes)? {
        var k = key.map(mdbVal) ?? MDB_val()
        var v = MDB_val()
        let rc = mdb_cursor_get(handle, &k, &v, op)
        if rc == MDB_NOTFOUND { return nil }
        try env.check(rc)
        residentPages?.note(k, v)
        return (bytes(k), bytes(v))
    }

    /// Positions at an exact key/value pair of a sorted-duplicates database.
    mutating func seek(key: Bytes, value: Bytes, op: MDB_cursor_op) throws -> (key: Bytes, value: Bytes)? {
        var k = mdbVal(key)
        var v = mdbVal(value)
        let rc = mdb_cursor_get(handle, &k, &v, op)
        if rc == MDB_NOTFOUND { return nil }
        try env.check(rc)
        residentPages?.note(k, v)
        return (bytes(k), bytes(v))
    }

    /// Number of duplicates at the current key.
    func duplicateCount() throws -> Int {
        var n: Int = 0
        try env.check(mdb_cursor_count(handle, &n))
        return n
    }
}

/// The replay log's bytes: a buffer that grows by doubling and that entries are copied into directly
/// (appending to a `[UInt8]` in place would zero-fill every entry first).
final class ReplayLog {
    private var base: UnsafeMutableRawPointer?
    private var count = 0
    private var capacity = 0

    deinit { base?.deallocate() }

    /// Reserves `size` bytes at the end and lets `write` fill them (it receives exactly those bytes).
    func append(_ size: Int, _ write: (UnsafeMutableRawBufferPointer) -> Void) {
        if count + size > capacity {
            let newCapacity = max(capacity * 2, count + size, 4096)
            let grown = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 8)
            if let base {
                grown.copyMemory(from: base, byteCount: count)
                base.deallocate()
            }
            base = grown
            capacity = newCapacity
        }
        write(UnsafeMutableRawBufferPointer(start: base! + count, count: size))
        count += size
    }

    /// The bytes logged so far.
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }
}
