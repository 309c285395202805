import CLMDB
#if canImport(Glibc)
import Glibc
#endif

/// Bytes lent by LMDB or by the caller. Bytes from LMDB are valid until their snapshot ends (a read
/// transaction's reset, or the write transaction's next write): copy what must outlive that.
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
/// A read transaction takes its reader slot when it is created and keeps it for its life (`reset()` ends
/// the snapshot, `renew()` starts a new one on the latest commit), so a full reader table fails the open,
/// never a later read. While a snapshot is open the map does not move (`SnapshotGate`).
///
/// A write transaction belongs to the thread that began it (LMDB's writer mutex does): every write
/// operation checks the calling thread and throws `LatticeError.wrongThread` otherwise. Write operations
/// are appended to a log so that a write that hits `MDB_MAP_FULL` can be retried after growing the map:
/// the LMDB transaction is aborted, the map grown, a new transaction begun (still under the writer lock,
/// so on the same committed state) and the log replayed. A consequence: no cursor of a write transaction
/// may be open across a write operation.
final class Transaction {
    let env: Environment
    let isWrite: Bool
    private(set) var txn: OpaquePointer?
    /// Whether a read transaction's snapshot is open (counted by the environment's gate).
    private var snapshotOpen = false
    private let log = ReplayLog()
    private var baseID = 0
    /// The thread that began the write transaction.
    private let owner: pthread_t
    /// Pages walked by this read transaction's cursors (nil for the write transaction).
    private let residentPages: ResidentPages?
    /// By table id, whether values there end with a checksum (`Seals`), taken when the snapshot or write
    /// transaction begins: values written are sealed, values read verified and passed on without it.
    private var sealed: [Bool] = []
    /// Whether the file seals its values (`sealed` may then miss a table opened after it was taken).
    private var fileSealed = false
    /// By table id, in an encrypted file: the cipher of each sealed table (taken with `sealed`). Empty
    /// for a plaintext file, so its paths test only that.
    private var ciphers: [TableCipher?] = []
    /// The buffer a value is sealed in before it is written (`sealCapacity` bytes).
    private var sealBuffer: UnsafeMutableRawPointer?
    private var sealCapacity = 0
    /// The page size, for `ValueBounds` (0 for the write transaction, whose new pages are not in the map).
    let pageSize: Int
    /// By table id, how the table is packed (`Packing` raw values), taken with `sealed`.
    private var packed: [UInt8] = []
    /// The largest run of a packed table (`Runs.budget`).
    let budget: Int
    /// A write transaction's entries of packed tables not yet in LMDB (nil for a read transaction).
    let runWrites: RunWrites?
    /// The keys of the run a write is rebuilding (see `runView`).
    var runKeys: [UInt64] = []
    /// A read transaction's LMDB cursors for lookups in packed tables, by table id, and whether each was
    /// renewed for the current snapshot. Without runtime exclusivity checks (two on every lookup): only
    /// `readCursor`, `openReadCursor`, `renew` and `deinit` touch them, each access a whole load or an
    /// in-place change that calls nothing which could come back here.
    @exclusivity(unchecked) private var lookupCursors: [OpaquePointer?] = []
    @exclusivity(unchecked) private var lookupCursorsCurrent: [Bool] = []

    /// Operations of the replay log: LMDB's own, and those of packed tables, which are replayed through
    /// `runPut`, `runDelete` and `runDrop` (the LMDB writes they make depend on what the transaction holds).
    private enum LogOp: UInt8 { case put, delete, deleteDup, drop, runPut, runDelete, runDrop, blockAdd, blockRemove }

    /// Set when the snapshot is shared with frozen handles (see `SharedSnapshots`): every read then
    /// holds it, so that calls from several threads never overlap.
    var sharedLock: RecursiveLock?

    /// A read transaction holding its reader slot, with no snapshot open yet (see `renew()`).
    init(readOn env: Environment) throws {
        self.env = env
        self.isWrite = false
        owner = pthread_self()
        residentPages = ResidentPages(env: env)
        pageSize = ValueBounds.pageSize(env)
        budget = Runs.budget(pageSize: pageSize)
        runWrites = nil
        try renew()
        reset()
    }

    /// Begins the write transaction. The caller holds the environment's writer lock.
    init(writeOn env: Environment) throws {
        self.env = env
        self.isWrite = true
        owner = pthread_self()
        residentPages = nil
        pageSize = 0
        budget = Runs.budget(pageSize: ValueBounds.pageSize(env))
        runWrites = RunWrites()
        takeSeals()
        guard env.claimWriteTransaction() else { throw LatticeError.alreadyInWriteTransaction }
        ownsWriteClaim = true
        do {
            try env.reserveHeadroom()
            txn = try beginWrite()
        } catch {
            releaseWriteClaim()
            throw error
        }
        baseID = mdb_txn_id(txn)
    }

    deinit {
        abort()
        for cursor in lookupCursors where cursor != nil { mdb_cursor_close(cursor) }
        free(sealBuffer)
    }

    /// The read transaction's lookup cursor on `table` (see `lookupCursors`), renewed for the snapshot.
    @inline(__always)
    func readCursor(_ table: Table) throws -> OpaquePointer? {
        let i = Int(table.id)
        if i < lookupCursors.count, lookupCursorsCurrent[i] { return lookupCursors[i] }
        return try openReadCursor(i)
    }

    @inline(never)
    private func openReadCursor(_ i: Int) throws -> OpaquePointer? {
        if lookupCursors.count <= i {
            lookupCursors.append(contentsOf: repeatElement(nil, count: i + 1 - lookupCursors.count))
            lookupCursorsCurrent.append(contentsOf: repeatElement(false, count: i + 1 - lookupCursorsCurrent.count))
        }
        if let cursor = lookupCursors[i] {
            try env.check(mdb_cursor_renew(txn, cursor))
        } else {
            var cursor: OpaquePointer?
            try env.check(mdb_cursor_open(txn, MDB_dbi(i), &cursor))
            lookupCursors[i] = cursor
        }
        lookupCursorsCurrent[i] = true
        return lookupCursors[i]
    }

    /// Whether this (write) transaction holds the environment's write-transaction claim.
    private var ownsWriteClaim = false

    private func releaseWriteClaim() {
        if ownsWriteClaim { env.releaseWriteTransaction() }
        ownsWriteClaim = false
    }

    private func beginWrite() throws -> OpaquePointer? {
        while true {
            var txn: OpaquePointer?
            let rc = mdb_txn_begin(env.handle, nil, 0, &txn)
            if rc == MDB_MAP_RESIZED {
                guard try env.gate.exclusive(seconds: env.options.growthWaitSeconds, env.adoptMapSize) != nil else {
                    throw env.snapshotsHoldMap(env.mapSize)
                }
                continue
            }
            try env.check(rc)
            return txn
        }
    }

    /// Starts (or restarts on the latest commit) a read snapshot.
    func renew() throws {
        precondition(!isWrite)
        if snapshotOpen { reset() }
        takeSeals()  // before the snapshot: the file's format is fixed before any commit it sees
        try env.gate.enter { waitForNoSnapshot in
            var clearedReaders = false
            while true {
                var rc: Int32
                if let txn {
                    rc = mdb_txn_renew(txn)
                } else {
                    var fresh: OpaquePointer?
                    rc = mdb_txn_begin(env.handle, nil, UInt32(MDB_RDONLY), &fresh)
                    if rc == 0 { txn = fresh }
                }
                if rc == 0 { return }
                // Every slot taken: those of processes that died are freed, then the snapshot begins again.
                if rc == MDB_READERS_FULL, !clearedReaders, (try? env.clearStaleReaders()) ?? 0 > 0 {
                    clearedReaders = true
                    continue
                }
                guard rc == MDB_MAP_RESIZED else { try env.check(rc) ; return }
                // Another process grew the map: adopt its size once no snapshot of ours is open.
                guard waitForNoSnapshot() else {
                    throw LatticeError.storage(path: env.path, code: rc, message:
                        "another process grew the file's map and snapshots of this process stayed open; refresh or invalidate other handles.")
                }
                try env.adoptMapSize()
            }
        }
        snapshotOpen = true
        residentPages?.restart()
        for i in lookupCursorsCurrent.indices { lookupCursorsCurrent[i] = false }
    }

    /// Ends a read snapshot; the transaction keeps its reader slot for `renew()`.
    func reset() {
        guard !isWrite, snapshotOpen, let txn else { return }
        mdb_txn_reset(txn)
        snapshotOpen = false
        env.gate.leave()
    }

    /// Whether a snapshot (or the write transaction) is open.
    var isActive: Bool { isWrite ? txn != nil : snapshotOpen }

    /// The LMDB transaction id of this snapshot (the number of the last commit it sees).
    var id: Int { isActive ? txn.map { mdb_txn_id($0) } ?? 0 : 0 }

    // MARK: Reads

    /// Looks `key` up and passes the value (or nil) to `body`.
    @inline(__always)
    func get<R>(_ table: Table, _ key: Bytes, _ body: (Bytes?) throws -> R) throws -> R {
        if let lock = sharedLock { return try lock.withLock { try unsynchronizedGet(table, key, body) } }
        return try unsynchronizedGet(table, key, body)
    }

    @inline(__always)
    private func unsynchronizedGet<R>(_ table: Table, _ key: Bytes, _ body: (Bytes?) throws -> R) throws -> R {
        switch packing(table) {
        case .runs: return try runGet(table, key, body)
        case .blocks: return try withCursor(table) { cursor in try body(cursor.seek(exactly: key)?.value) }
        case .none: break
        }
        var k = mdbVal(key)
        var v = MDB_val()
        let rc = mdb_get(txn, table.id, &k, &v)
        if rc == MDB_NOTFOUND {
            if isSealed(table) {
                try Cursor.verifyAround(key, txn: txn, table: table, env: env, pageSize: pageSize, cipher: cipher(table))
            }
            return try body(nil)
        }
        try env.check(rc)
        try ValueBounds.check(v, pageSize: pageSize, env)
        guard isSealed(table) else { return try body(bytes(v)) }
        if !ciphers.isEmpty, let cipher = cipher(table) { return try decrypted(cipher, table, key, bytes(v), body) }
        return try body(Cursor.opened(table, key, bytes(v), env))
    }

    /// `body` of the least 8-byte value filed under `key` in a sorted-duplicates table (in a packed index,
    /// the first object key of the key's first block), or nil when the key has none. One LMDB lookup, no
    /// cursor: for indexes whose keys are unique (primary keys). Sealed tables, and keys with blocks
    /// pending in this write, go through a cursor.
    func withFirstDuplicate<R>(_ table: Table, _ key: Bytes, _ body: (Bytes?) throws -> R) throws -> R {
        if let lock = sharedLock { return try lock.withLock { try unsynchronizedFirstDuplicate(table, key, body) } }
        return try unsynchronizedFirstDuplicate(table, key, body)
    }

    private func unsynchronizedFirstDuplicate<R>(_ table: Table, _ key: Bytes, _ body: (Bytes?) throws -> R) throws -> R {
        let packing = packing(table)
        if isSealed(table) || packing == .runs || (packing == .blocks && runWrites?.blocks[table.id]?.holds(IndexKey(key)) == true) {
            return try unsynchronizedCursor(table) { try body($0.seek(exactly: key)?.value) }
        }
        var k = mdbVal(key)
        var v = MDB_val()
        let rc = mdb_get(txn, table.id, &k, &v)
        if rc == MDB_NOTFOUND { return try body(nil) }
        try env.check(rc)
        // `mdb_get` leaves `k` on the caller's key: only the value is the map's.
        try ValueBounds.check(v, pageSize: pageSize, env)
        // A block starts with its first object key (and is 8 or at least 17 bytes); a plain duplicate is one.
        guard packing == .blocks ? BlockView(bytes(v)) != nil : v.mv_size == 8 else {
            throw damagedBlock(table, key)
        }
        return try body(UnsafeRawBufferPointer(start: v.mv_data, count: 8))
    }

    /// The cipher of a sealed table of an encrypted file (nil in a plaintext file).
    @inline(__always)
    private func cipher(_ table: Table) -> TableCipher? {
        let i = Int(table.id)
        return i < ciphers.count ? ciphers[i] : nil
    }

    /// `body` of the value an encrypted one holds, decrypted into memory that lives while `body` runs.
    @inline(never)
    private func decrypted<R>(_ cipher: TableCipher, _ table: Table, _ key: Bytes, _ value: Bytes, _ body: (Bytes?) throws -> R) throws -> R {
        if cipher.isPlain(key) { return try body(Cursor.opened(table, key, value, env)) }
        guard let count = TableCipher.plainCount(value.count) else { throw env.seals.forged(table, key: key, path: env.path) }
        // Small values are decrypted on the stack; `body` may read other values meanwhile.
        return try withUnsafeTemporaryAllocation(byteCount: max(count, 1), alignment: 16) { buffer in
            guard let plain = buffer.baseAddress, cipher.open(key: key, sealed: value, into: plain) else {
                throw env.seals.forged(table, key: key, path: env.path)
            }
            // An empty value keeps a non-nil address, as bytes lent by LMDB have.
            return try body(Bytes(start: count == 0 ? UnsafeRawPointer(value.baseAddress) : UnsafeRawPointer(plain), count: count))
        }
    }

    /// Whether values of `table` are sealed in this transaction.
    @inline(__always)
    private func isSealed(_ table: Table) -> Bool {
        let i = Int(table.id)
        if i < sealed.count { return sealed[i] }
        return fileSealed && sealedLate(i)
    }

    /// `isSealed` of a table opened after the transaction began.
    @inline(never)
    private func sealedLate(_ i: Int) -> Bool {
        takeSeals()
        return i < sealed.count && sealed[i]
    }

    private func takeSeals() {
        (fileSealed, sealed, ciphers, packed) = env.seals.current
    }

    /// How `table` is packed in this transaction.
    @inline(__always)
    func packing(_ table: Table) -> Packing {
        let i = Int(table.id)
        if i < packed.count { return Packing(rawValue: packed[i]) ?? .none }
        return fileSealed ? packingLate(i) : .none
    }

    /// `packing` of a table opened after the transaction began.
    @inline(never)
    private func packingLate(_ i: Int) -> Packing {
        takeSeals()
        return i < packed.count ? Packing(rawValue: packed[i]) ?? .none : .none
    }

    /// In an encrypted file, the keyed hash of `table`'s keys (index keys, set elements, map keys); nil
    /// when they are stored as they are.
    func keyHasher(_ table: Table) -> KeyHasher? {
        ciphers.isEmpty ? nil : env.seals.hasher(table)
    }

    /// Whether the file is encrypted (its value-holding keys are keyed hashes).
    var isEncrypted: Bool { !ciphers.isEmpty }

    /// Number of entries in `table` (O(1)).
    func count(_ table: Table) throws -> Int {
        if let lock = sharedLock { return try lock.withLock { try unsynchronizedCount(table) } }
        return try unsynchronizedCount(table)
    }

    private func unsynchronizedCount(_ table: Table) throws -> Int {
        switch packing(table) {
        case .runs: return try runCount(table)
        case .blocks: return try blockCount(table)
        case .none: break
        }
        var stat = MDB_stat()
        try env.check(mdb_stat(txn, table.id, &stat))
        return stat.ms_entries
    }

    /// Bytes of the pages `table` uses (branch, leaf and overflow pages).
    func byteCount(_ table: Table) throws -> Int {
        var stat = MDB_stat()
        try env.check(mdb_stat(txn, table.id, &stat))
        return (stat.ms_branch_pages + stat.ms_leaf_pages + stat.ms_overflow_pages) * Int(stat.ms_psize)
    }

    /// Opens a cursor on `table` for the duration of `body`.
    func withCursor<R>(_ table: Table, _ body: (inout Cursor) throws -> R) throws -> R {
        if let lock = sharedLock { return try lock.withLock { try unsynchronizedCursor(table, body) } }
        return try unsynchronizedCursor(table, body)
    }

    private func unsynchronizedCursor<R>(_ table: Table, _ body: (inout Cursor) throws -> R) throws -> R {
        let packing = packing(table)
        // A walk of a packed table sees the entries the transaction holds (no write while it is open).
        if packing != .none && isWrite { try storingPending { try storeTail(table); try storeBlocks(table) } }
        var cursor: OpaquePointer?
        try env.check(mdb_cursor_open(txn, table.id, &cursor))
        defer { mdb_cursor_close(cursor) }
        let sealed = isSealed(table)
        let cipher = sealed ? cipher(table) : nil
        let runs = packing == .runs ? RunCursor(handle: cursor, env: env, table: table, pageSize: pageSize, residentPages: residentPages) : nil
        let blocks = packing == .blocks ? BlockCursor(handle: cursor, env: env, table: table, pageSize: pageSize, residentPages: residentPages) : nil
        var c = Cursor(handle: cursor, env: env, residentPages: residentPages, table: table, sealed: sealed, pageSize: pageSize,
                       cipher: cipher, arena: cipher.map { _ in ValueArena() }, runs: runs, blocks: blocks)
        return try body(&c)
    }

    // MARK: Writes

    /// Throws unless the calling thread began this write transaction.
    @inline(__always)
    func checkThread(_ operation: @autoclosure () -> String) throws {
        if pthread_equal(owner, pthread_self()) == 0 { throw LatticeError.wrongThread(operation: operation()) }
    }

    /// Whether the calling thread began this transaction.
    var isOwnedByCurrentThread: Bool { pthread_equal(owner, pthread_self()) != 0 }

    /// Stores `value` under `key` (see `PutMode`). Returns false when the mode refused the put.
    @discardableResult
    func put(_ table: Table, _ key: Bytes, _ value: Bytes, mode: PutMode = .upsert) throws -> Bool {
        try checkThread("A write")
        switch packing(table) {
        case .runs:
            let flags: UInt32 = mode == .insertNew ? 1 : mode == .append ? 2 : 0
            return try logged(.runPut, table, key, value, flags: flags) { try runPut(table, key, value, mode: mode) }
        case .blocks:
            if mode == .newDuplicate,
               try withCursor(table, { try $0.seek(key: key, atLeastValue: value)?.value.elementsEqual(value) }) == true {
                return false
            }
            let last = mode == .appendDuplicate
            try logged(.blockAdd, table, key, value, flags: last ? 1 : 0) { try blockAdd(table, key, value, last: last) }
            return true
        case .none:
            break
        }
        return try withStoredForm(table, key, value) { try putValue(table, key, $0, mode: mode) }
    }

    /// Replaces the value under `key` of a table without duplicates by the one `body` makes of it: `body`
    /// gets the value as `get` gives it (nil when `key` has none) and returns the new one (nil: leave it
    /// as it is); it must not write. In a plain table of a plaintext file the new value is written where
    /// the lookup's cursor stands (`MDB_CURRENT`): one search of the tree where `get` and `put` take two.
    func replace(_ table: Table, _ key: Bytes, _ body: (Bytes?) throws -> [UInt8]?) throws {
        try checkThread("A write")
        var flags: UInt32 = 0
        guard packing(table) == .none, ciphers.isEmpty || cipher(table) == nil, runWrites != nil,
              mdb_dbi_flags(txn, table.id, &flags) == 0, flags & UInt32(MDB_DUPSORT) == 0 else {
            return try replaceByGetAndPut(table, key, body)
        }
        let cursor = try writeCursor(table)
        var k = mdbVal(key)
        var v = MDB_val()
        let rc = mdb_cursor_get(cursor, &k, &v, MDB_SET_KEY)
        if rc == MDB_NOTFOUND { return try replaceByGetAndPut(table, key, body) }
        try env.check(rc)
        try ValueBounds.check(v, pageSize: pageSize, env)
        guard let new = try body(isSealed(table) ? Cursor.opened(table, key, bytes(v), env) : bytes(v)) else { return }
        try new.withUnsafeBytes { value in
            try withStoredForm(table, key, value) { stored in
                try reserveLog(key, stored)
                var k = mdbVal(key)
                var v = mdbVal(stored)
                let rc = mdb_cursor_put(cursor, &k, &v, UInt32(MDB_CURRENT))
                if rc == MDB_MAP_FULL {
                    // The grown map's new transaction has none of this one's cursors: a plain put.
                    try growAndReplay()
                    _ = try putValue(table, key, stored, mode: .upsert)
                    return
                }
                try env.check(rc)
                record(.put, table, key, stored, flags: 0)
            }
        }
    }

    /// `replace` as a lookup and then a put.
    private func replaceByGetAndPut(_ table: Table, _ key: Bytes, _ body: (Bytes?) throws -> [UInt8]?) throws {
        guard let new = try get(table, key, body) else { return }
        try new.withUnsafeBytes { _ = try put(table, key, $0) }
    }

    /// Passes `value` to `body` as `table` stores it under `key`: encrypted, followed by its checksum, or
    /// as it is. A checksummed value is sealed into a buffer the transaction reuses.
    private func withStoredForm<R>(_ table: Table, _ key: Bytes, _ value: Bytes, _ body: (Bytes) throws -> R) throws -> R {
        guard isSealed(table) else { return try body(value) }
        if !ciphers.isEmpty, let cipher = cipher(table), !cipher.isPlain(key) {
            return try cipher.seal(key: key, value: value).withUnsafeBytes(body)
        }
        let size = value.count + Checksum.size
        if size > sealCapacity {
            let capacity = max(size, 2 * sealCapacity, 256)
            guard let grown = realloc(sealBuffer, capacity) else {
                throw LatticeError.storage(path: env.path, code: ENOMEM, message: "Out of memory for a value of \(size) bytes.")
            }
            sealBuffer = grown
            sealCapacity = capacity
        }
        guard let buffer = sealBuffer else { throw LatticeError.storage(path: env.path, code: ENOMEM, message: "Out of memory.") }
        Checksum.seal(key: key, value: value, to: buffer)
        return try body(Bytes(start: buffer, count: size))
    }

    /// Stores `value` under `key` as it is, neither sealed nor packed (a run, or a packed table's count,
    /// written by a format upgrade before the table is packed).
    func putStored(_ table: Table, _ key: Bytes, _ value: Bytes) throws {
        try checkThread("A write")
        _ = try putValue(table, key, value, mode: .upsert)
    }

    /// `put` of a value as it is stored.
    private func putValue(_ table: Table, _ key: Bytes, _ value: Bytes, mode: PutMode) throws -> Bool {
        try reserveLog(key, value)
        let flags: UInt32
        switch mode {
        case .upsert: flags = 0
        case .insertNew: flags = UInt32(MDB_NOOVERWRITE)
        case .append: flags = UInt32(MDB_APPEND)
        case .appendDuplicate: flags = UInt32(MDB_APPENDDUP)
        case .newDuplicate: flags = UInt32(MDB_NODUPDATA)
        }
        while true {
            var k = mdbVal(key)
            var v = mdbVal(value)
            let rc = mdb_put(txn, table.id, &k, &v, flags)
            if rc == 0 {
                record(.put, table, key, value, flags: flags)
                return true
            }
            if rc == MDB_KEYEXIST { return false }
            if rc == MDB_MAP_FULL { try growAndReplay(); continue }
            try env.check(rc)
        }
    }

    /// Adds `value` to the duplicates of `key` in a sorted-duplicates table. With `last` the caller
    /// expects it to sort after every duplicate there: appending then skips the search among them (and
    /// a value that does not sort last is placed by a normal put).
    func putDuplicate(_ table: Table, _ key: Bytes, _ value: Bytes, last: Bool) throws {
        if last, try put(table, key, value, mode: .appendDuplicate) { return }
        try put(table, key, value)
    }

    /// Deletes `key` (with `value`, one duplicate of a sorted-duplicates table). False when absent.
    @discardableResult
    func delete(_ table: Table, _ key: Bytes, value: Bytes? = nil) throws -> Bool {
        try checkThread("A write")
        switch packing(table) {
        case .runs:
            return try logged(.runDelete, table, key, Bytes(start: nil, count: 0), flags: 0) { try runDelete(table, key) }
        case .blocks:
            let value = value ?? Bytes(start: nil, count: 0)
            return try logged(.blockRemove, table, key, value, flags: 0) { try blockRemove(table, key, value) }
        case .none:
            break
        }
        try reserveLog(key, value ?? Bytes(start: nil, count: 0))
        while true {
            var k = mdbVal(key)
            var v = value.map(mdbVal) ?? MDB_val()
            let rc = value == nil ? mdb_del(txn, table.id, &k, nil) : mdb_del(txn, table.id, &k, &v)
            if rc == 0 {
                record(value == nil ? .delete : .deleteDup, table, key, value ?? Bytes(start: nil, count: 0), flags: 0)
                return true
            }
            if rc == MDB_NOTFOUND { return false }
            if rc == MDB_MAP_FULL { try growAndReplay(); continue }
            try env.check(rc)
        }
    }

    /// Empties `table`.
    func drop(_ table: Table) throws {
        try checkThread("A write")
        if packing(table) != .none {
            return try logged(.runDrop, table, Bytes(start: nil, count: 0), Bytes(start: nil, count: 0), flags: 0) { try runDrop(table) }
        }
        try reserveLog(Bytes(start: nil, count: 0), Bytes(start: nil, count: 0))
        while true {
            let rc = mdb_drop(txn, table.id, 0)
            if rc == 0 {
                record(.drop, table, Bytes(start: nil, count: 0), Bytes(start: nil, count: 0), flags: 0)
                return
            }
            if rc == MDB_MAP_FULL { try growAndReplay(); continue }
            try env.check(rc)
        }
    }

    func commit() throws {
        precondition(isWrite)
        try checkThread("commitWrite()")
        while true {
            try storingPending { try storeRuns() }
            let rc = mdb_txn_commit(txn)
            if rc == 0 { txn = nil; log.reset(); releaseWriteClaim(); return }
            // A failed commit has freed the transaction.
            txn = nil
            if rc == MDB_MAP_FULL {
                try growForReplay()
                try checkReplayable()
                try restartAndReplay()
                continue
            }
            try env.check(rc)
        }
    }

    /// Ends the transaction without committing (a read transaction also gives up its reader slot).
    func abort() {
        if isWrite {
            if let txn { mdb_txn_abort(txn) }
            log.reset()
            releaseWriteClaim()
        } else {
            reset()
            if let txn { mdb_txn_abort(txn) }
        }
        txn = nil
    }

    // MARK: Growth

    /// Makes room in the log for an operation before it runs, so that one that succeeds is always logged.
    @inline(__always)
    private func reserveLog(_ key: Bytes, _ value: Bytes) throws {
        guard log.reserve(keyCount: key.count, valueCount: value.count) else {
            throw LatticeError.storage(path: env.path, code: ENOMEM, message: "Out of memory for the transaction's write log.")
        }
    }

    /// Runs a write operation of a packed table and logs it once it succeeded; a full map grows, the log
    /// is replayed, and the operation runs again.
    private func logged<R>(_ op: LogOp, _ table: Table, _ key: Bytes, _ value: Bytes, flags: UInt32, _ body: () throws -> R) throws -> R {
        try reserveLog(key, value)
        while true {
            do {
                let result = try body()
                record(op, table, key, value, flags: flags)
                return result
            } catch is MapFull {
                try growAndReplay()
            }
        }
    }

    /// Appends one operation to the log (this runs on every write operation), in room `reserveLog` made.
    @inline(__always)
    private func record(_ op: LogOp, _ table: Table, _ key: Bytes, _ value: Bytes, flags: UInt32) {
        log.append(op.rawValue, table.id, flags, key, value)
    }

    func growAndReplay() throws {
        mdb_txn_abort(txn)
        txn = nil
        try growForReplay()
        try checkReplayable()
        try restartAndReplay()
    }

    /// Whether the log can replay the transaction: not after `recreateAsBlocks` (its LMDB table handles
    /// cannot be opened again the same way).
    private var replayable = true

    /// Throws (the transaction rolled back, the map grown) when the transaction cannot be replayed.
    private func checkReplayable() throws {
        guard !replayable else { return }
        throw LatticeError.storage(path: env.path, code: MDB_MAP_FULL, message:
            "the file's map filled up while a table was rebuilt; the write was rolled back and the map grown: try again.")
    }

    /// Deletes the sorted-duplicates table `table` (named `name`) and creates it again with duplicates of
    /// any size (a packed index, see `Blocks`); returns it. The transaction can no longer be replayed: a
    /// full map then rolls it back (see `checkReplayable`).
    func recreateAsBlocks(_ table: Table, name: String) throws -> Table {
        try checkThread("A write")
        replayable = false
        try env.check(mdb_drop(txn, table.id, 1))
        var dbi = MDB_dbi()
        try env.check(mdb_dbi_open(txn, name, UInt32(MDB_CREATE | MDB_DUPSORT), &dbi))
        try env.check(mdb_set_compare(txn, dbi, lattice_key_order))  // as `Environment.openTables` does
        return Table(id: dbi)
    }

    /// Grows the map (no LMDB transaction active) so that the committed data plus what the log will
    /// write again fill at most half of it, as at the start of a transaction: one growth, one replay.
    private func growForReplay() throws {
        try env.growMap(minimum: 2 * (env.usedBytes + log.byteCount))
    }

    /// Begins a fresh write transaction and re-applies the log (growing again if still too small).
    private func restartAndReplay() throws {
        txn = try beginWrite()
        guard mdb_txn_id(txn) == baseID else {
            // Only a writer that ignores Lattice's writer lock can get here.
            throw LatticeError.storage(
                path: env.path, code: MDB_MAP_FULL,
                message: "another program committed while the map was being grown; the write was rolled back.")
        }
        runWrites?.reset()
        let rc: Int32 = try log.forEach { op, dbi, flags, k, v in
            switch LogOp(rawValue: op) {
            case .put?: return mdb_put(txn, dbi, &k, &v, flags)
            case .delete?: return mdb_del(txn, dbi, &k, nil)
            case .deleteDup?: return mdb_del(txn, dbi, &k, &v)
            case .drop?: return mdb_drop(txn, dbi, 0)
            case .runPut?, .runDelete?, .runDrop?, .blockAdd?, .blockRemove?:
                let table = Table(id: dbi)
                do {
                    switch LogOp(rawValue: op) {
                    case .runPut?: _ = try runPut(table, bytes(k), bytes(v), mode: flags == 1 ? .insertNew : flags == 2 ? .append : .upsert)
                    case .runDelete?: _ = try runDelete(table, bytes(k))
                    case .blockAdd?: try blockAdd(table, bytes(k), bytes(v), last: flags == 1)
                    case .blockRemove?: _ = try blockRemove(table, bytes(k), bytes(v))
                    default: try runDrop(table)
                    }
                    return 0
                } catch is MapFull {
                    return MDB_MAP_FULL
                }
            case nil: return EINVAL
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
