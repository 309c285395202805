import CLMDB
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Options fixed when an LMDB environment is opened.
struct EnvironmentOptions: Sendable {
    var readOnly = false
    /// In-memory stores live in unlinked temporary files and never sync.
    var temporary = false
    /// Address space reserved for the map (the file grows only with the pages in use).
    var initialMapSize = 64 << 30
    var maxReaders: UInt32 = 1022
    var maxDatabases: UInt32 = 64
    /// Bytes a read transaction's cursors walk before their pages leave the resident set (`ResidentPages`).
    var residentScanBytes = 16 << 20
    /// How long growing the map waits for this process's read snapshots to end.
    var growthWaitSeconds = 10
    /// Which tables seal their values in a sealed file (see `Seals`); nil: none.
    var sealPolicy: (any SealPolicy)?
}

/// The one LMDB environment of a database file in this process.
///
/// LMDB forbids opening the same file twice in one process, so every `Lattice` handle on a path shares
/// the environment through a process-wide registry. The last handle to release it closes it while
/// holding the registry, so a concurrent open never sees a half-closed environment.
///
/// **The map never moves under a reader.** A large map is reserved at open (address space only: without
/// `MDB_WRITEMAP` the file grows with the pages in use), so growing is rare. When it must grow (the data
/// fills more than half of it, or a write hits `MDB_MAP_FULL`), the writer waits until no read snapshot of
/// this process is open (`SnapshotGate`), as `mdb_env_set_mapsize` requires; bytes a snapshot returns
/// therefore stay valid for the snapshot's whole life.
///
/// **Writers.** `writerLock` (in process and across processes) is held for a whole Lattice write
/// transaction, so no other writer commits while the LMDB transaction is aborted, the map grown and the
/// logged operations replayed.
final class Environment: @unchecked Sendable {
    // @unchecked Sendable is safe: `handle` is an MDB_env*, which LMDB allows to be shared by threads
    // (MDB_NOTLS); the mutable Swift state sits in `state` (a Mutex); `writerLock` and `gate` are
    // thread-safe classes.

    let path: String
    let handle: OpaquePointer
    let options: EnvironmentOptions
    let writerLock: WriterLock
    /// Read snapshots open in this process (see the type's documentation).
    let gate = SnapshotGate()
    /// When `clearStaleReadersIfDue()` last cleared (uptime nanoseconds; 0: never).
    let readerCheck = Mutex<UInt64>(0)
    /// Which tables hold checksummed values (file format 2).
    let seals: Seals
    private let writerFD: Int32

    private struct State {
        var refCount = 0
        var closed = false
        /// Whether a write transaction is open (see `claimWriteTransaction()`).
        var writeTransactionOpen = false
        var tables: [String: Table] = [:]
        var mapSize: Int
    }
    private let state: Mutex<State>

    /// The open environments by path. Whole-file operations (`FileMaintenance`) hold it too, so that no
    /// handle of this process opens a file while it is compacted or deleted.
    static let registry = Mutex<[String: Environment]>([:])
    /// The lock file, holding a shared `flock` for the environment's life (see `FileMaintenance`).
    private let presenceFD: Int32

    /// Returns the shared environment for `path`, opening it on first use.
    static func acquire(path: String, options: EnvironmentOptions) throws -> Environment {
        try registry.withLock { registry in
            if let env = registry[path] { return try env.retained(readOnly: options.readOnly) }
            let env = try Environment(path: path, options: options)
            env.state.withLock { $0.refCount = 1 }
            registry[path] = env
            return env
        }
    }

    /// The environment this process has open on `path`, with one more reference; nil when none is
    /// (nothing is opened or created then).
    static func acquireOpen(path: String, readOnly: Bool) throws -> Environment? {
        try registry.withLock { registry in try registry[path]?.retained(readOnly: readOnly) }
    }

    /// This open environment with one more reference, for an open `readOnly` or not (a read-only one
    /// takes no read-write open). Called under `registry`'s lock.
    private func retained(readOnly: Bool) throws -> Environment {
        if options.readOnly && !readOnly {
            throw LatticeError.unsupported(feature: "Opening '\(path)' read-write while this process has it open read-only")
        }
        state.withLock { $0.refCount += 1 }
        return self
    }

    /// Whether any handle in this process has `path` open.
    static func isOpen(path: String) -> Bool {
        registry.withLock { $0[path] != nil }
    }

    /// Whether this process has `path` open read-only (another open of it must be read-only too).
    static func isOpenReadOnly(path: String) -> Bool {
        registry.withLock { $0[path]?.options.readOnly ?? false }
    }

    /// How many handles of this process share the environment.
    var handleCount: Int { state.withLock { $0.refCount } }

    /// Drops one reference; the last one closes the environment (and removes temporary files), under the
    /// registry's lock so that no open can pick it up meanwhile. The caller has ended its transactions.
    func release() {
        Environment.registry.withLock { registry in
            let last = state.withLock { state -> Bool in
                state.refCount -= 1
                if state.refCount > 0 { return false }
                state.closed = true
                return true
            }
            guard last else { return }
            registry[path] = nil
            mdb_env_close(handle)
            if writerFD >= 0 { close(writerFD) }
            // After LMDB closed its own descriptor: closing any descriptor of the lock file drops this
            // process's fcntl locks on it, which LMDB relies on while the environment is open.
            FileMaintenance.leave(presenceFD)
        }
    }

    private init(path: String, options: EnvironmentOptions) throws {
        self.path = path
        self.options = options
        seals = Seals(policy: options.sealPolicy)
        try FileCheck.checkBeforeOpen(path: path, readOnly: options.readOnly)
        let lockExisted = FileCheck.exists(FileMaintenance.lockPath(path))
        var flags = UInt32(MDB_NOSUBDIR | MDB_NOTLS)
        if options.readOnly { flags |= UInt32(MDB_RDONLY) }
        if options.temporary { flags |= UInt32(MDB_NOSYNC) }
        // Before LMDB opens the file: a compaction in another process finishes (renaming its copy over
        // the path) before this opens it.
        let presenceFD = options.temporary ? -1 : FileMaintenance.enter(path: path)
        // The map is address space: where less can be reserved (`ulimit -v`, valgrind), open with a
        // smaller map, down to 256 MiB; it grows later as the data needs.
        var mapSize = options.initialMapSize
        var opened: OpaquePointer?
        while opened == nil {
            var env: OpaquePointer?
            let created = mdb_env_create(&env)
            guard created == 0, let env else {
                FileMaintenance.leave(presenceFD)
                throw LatticeError.storage(path: path, code: created, message: "mdb_env_create failed")
            }
            mdb_env_set_maxreaders(env, options.maxReaders)
            mdb_env_set_maxdbs(env, options.maxDatabases)
            mdb_env_set_mapsize(env, mapSize)
            let rc = mdb_env_open(env, path, flags, 0o644)
            if rc == 0 { opened = env; break }
            mdb_env_close(env)
            if (rc == ENOMEM || rc == EINVAL) && mapSize > 256 << 20 {
                mapSize = max(mapSize / 4, 256 << 20)
                continue
            }
            // Read-only where the lock file cannot be created or written (a read-only directory or file
            // system, a lock file of another user): read without LMDB's lock file and reader table. Nothing
            // in this process writes the file, and whoever could write it would need a writable lock file
            // to do so through Lattice; the *Concurrency* article states the limit.
            if options.readOnly && (rc == EACCES || rc == EROFS || rc == EPERM) && flags & UInt32(MDB_NOLOCK) == 0 {
                flags |= UInt32(MDB_NOLOCK)
                continue
            }
            FileMaintenance.leave(presenceFD)
            if !lockExisted { FileCheck.removeStrayLock(FileMaintenance.lockPath(path)) }
            throw FileCheck.openFailure(rc, path: path, readOnly: options.readOnly)
        }
        guard let env = opened else { throw LatticeError.storage(path: path, code: -1, message: "mdb_env_open failed") }
        var dead: Int32 = 0
        mdb_reader_check(env, &dead)  // reclaim slots of crashed readers
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        self.handle = env
        self.presenceFD = presenceFD
        self.state = Mutex(State(mapSize: info.me_mapsize))
        writerFD = options.readOnly || options.temporary ? -1 : open(path, O_RDWR | O_CLOEXEC)
        writerLock = WriterLock(path: path, fd: writerFD)
        if options.temporary {
            // Nobody else may open a temporary store: unlink now so even a crash leaves nothing behind.
            unlink(path)
            unlink(path + "-lock")
        }
    }

    deinit {
        // Normally closed by the last `release()`; an environment whose open failed half-way closes here.
        if !state.withLock({ $0.closed }) {
            mdb_env_close(handle)
            if writerFD >= 0 { close(writerFD) }
            FileMaintenance.leave(presenceFD)
        }
    }

    // MARK: Tables

    /// The table `name` when this environment has it open already (one lookup, nothing built).
    func openedTable(_ name: String) -> Table? {
        state.withLock { $0.tables[name] }
    }

    /// Opens (creating when `create`) the named tables, all in one transaction. A missing table (when not
    /// creating) is left out of the result.
    func openTables(_ specs: [(name: String, dupSort: Bool)], create: Bool) throws -> [String: Table] {
        try state.withLock { state in
            let missing = specs.filter { state.tables[$0.name] == nil }
            if !missing.isEmpty {
                let write = create && !options.readOnly
                var txn: OpaquePointer?
                try check(mdb_txn_begin(handle, nil, write ? 0 : UInt32(MDB_RDONLY), &txn))
                var variable: Set<UInt32> = []
                for spec in missing {
                    var flags = UInt32(0)
                    if write { flags |= UInt32(MDB_CREATE) }
                    // Indexes of a packed file hold blocks of any size; other duplicates are 8 or 12 bytes.
                    if spec.dupSort { flags |= UInt32(MDB_DUPSORT) | (seals.createsBlocks(spec.name) ? 0 : UInt32(MDB_DUPFIXED)) }
                    var dbi = MDB_dbi()
                    let rc = mdb_dbi_open(txn, spec.name, flags, &dbi)
                    if rc == MDB_NOTFOUND { continue }
                    if rc != 0 {
                        mdb_txn_abort(txn)
                        if rc == MDB_INCOMPATIBLE {
                            throw LatticeError.invalidFile(path: path, reason: "database '\(spec.name)' has an unexpected layout.")
                        }
                        try check(rc)
                    }
                    // LMDB's default key order, with 8-byte keys compared as numbers (see the CLMDB header).
                    try check(mdb_set_compare(txn, dbi, lattice_key_order))
                    state.tables[spec.name] = Table(id: dbi)
                    // LMDB keeps the flags a table was created with: they tell a packed index.
                    var stored: UInt32 = 0
                    if mdb_dbi_flags(txn, dbi, &stored) == 0, stored & UInt32(MDB_DUPSORT) != 0, stored & UInt32(MDB_DUPFIXED) == 0 {
                        variable.insert(dbi)
                    }
                }
                // Committing (even a read-only transaction) keeps the new handles; aborting would close them.
                try check(mdb_txn_commit(txn))
                seals.register(state.tables, variableDuplicates: variable)
            }
            // Looked up by name: filtering every open table by the specs cost one string comparison per
            // table and spec (12,000 instructions for the change log's one table at each observed commit).
            var tables: [String: Table] = [:]
            tables.reserveCapacity(specs.count)
            for spec in specs { tables[spec.name] = state.tables[spec.name] }
            return tables
        }
    }

    /// Takes tables a write transaction created again (see `Transaction.recreateAsBlocks`) in place of
    /// the ones of those names; `nil` forgets the name (its handle is gone: the next open opens it again).
    func adoptTables(_ tables: [String: Table?]) {
        state.withLock { state in
            var variable: Set<UInt32> = []
            for (name, table) in tables {
                state.tables[name] = table
                if let table { variable.insert(table.id) }
            }
            seals.register(state.tables, variableDuplicates: variable)
        }
    }

    // MARK: Map size

    var mapSize: Int { state.withLock { $0.mapSize } }

    /// Grows the map to at least `minimum` bytes (and by at least one step). Called by the writer with no
    /// LMDB write transaction active; waits for this process's read snapshots to end.
    func growMap(minimum: Int = 0) throws {
        let current = mapSize
        var next = Environment.grown(current)
        while next < minimum { next = Environment.grown(next) }
        let resized: Void? = try gate.exclusive(seconds: options.growthWaitSeconds) {
            if mdb_env_set_mapsize(handle, next) != 0 { throw LatticeError.mapFull(path: path, mapSize: current) }
            noteMapSize()
        }
        if resized == nil { throw snapshotsHoldMap(current) }
    }

    /// One growth step: doubling, by at least 8 MiB and at most 64 GiB.
    private static func grown(_ size: Int) -> Int { size + min(max(size, 8 << 20), 64 << 30) }

    /// Grows the map before a write transaction begins while the data fills more than half of it, so a
    /// transaction seldom outgrows the map midway (which costs an abort and a replay of everything it
    /// wrote). The caller holds the writer lock, with no LMDB write transaction active.
    func reserveHeadroom() throws {
        let used = usedBytes
        if used > mapSize / 2 { try growMap(minimum: 2 * used) }
    }

    /// Adopts a map size grown by another process (`MDB_MAP_RESIZED`). The caller has made sure no
    /// snapshot of this process is open; a write transaction of another thread may still be running, so
    /// this retries for a while until it ends.
    func adoptMapSize() throws {
        var fd: Int32 = -1
        if mdb_env_get_fd(handle, &fd) == 0 { try FileCheck.checkSize(fd: fd, path: path) }  // before mapping more of it
        for _ in 0..<500 {
            let rc = mdb_env_set_mapsize(handle, 0)
            if rc == 0 { noteMapSize(); return }
            if rc != EINVAL { try check(rc) }
            usleep(10_000)
        }
        throw LatticeError.storage(path: path, code: EBUSY, message:
            "another process grew the file's map, and this process could not adopt the new size while its own write transaction stayed open.")
    }

    /// The error when the map must change size while snapshots of this process stay open.
    func snapshotsHoldMap(_ current: Int) -> LatticeError {
        .storage(path: path, code: EBUSY, message: "the data outgrew the \(current)-byte map, which can only be re-sized "
            + "while no read snapshot of this process is open, and some stayed open for \(options.growthWaitSeconds) s; "
            + "refresh() or invalidate() handles that keep old snapshots, or open with a larger Configuration.initialMapSize.")
    }

    private func noteMapSize() {
        var info = MDB_envinfo()
        mdb_env_info(handle, &info)
        state.withLock { $0.mapSize = info.me_mapsize }
    }

    // MARK: Write transactions

    /// Records that a write transaction begins; false when one is already open. The caller holds the
    /// writer lock, which its owner may take again, so an open one can only belong to the same thread
    /// through another handle: LMDB would then wait forever for the thread's own write lock.
    func claimWriteTransaction() -> Bool {
        state.withLock { state in
            if state.writeTransactionOpen { return false }
            state.writeTransactionOpen = true
            return true
        }
    }

    /// Records that the write transaction ended.
    func releaseWriteTransaction() {
        state.withLock { $0.writeTransactionOpen = false }
    }

    /// Whether a write transaction of this process is open.
    var isWriteTransactionOpen: Bool { state.withLock { $0.writeTransactionOpen } }

    // MARK: Info

    /// Bytes of the data file in use by the last committed transaction.
    var usedBytes: Int {
        var info = MDB_envinfo()
        var stat = MDB_stat()
        mdb_env_info(handle, &info)
        mdb_env_stat(handle, &stat)
        return (info.me_last_pgno + 1) * Int(stat.ms_psize)
    }

    /// The id of the last committed transaction (any process): cheap, it reads the newest meta page. A
    /// committing writer writes (and syncs) that page before it publishes the commit to new snapshots,
    /// so for that long a snapshot begun now still sees the commit before; exact while this process holds
    /// the writer lock. What wakes observers is a snapshot's id (`Notifier`).
    var lastTransactionID: Int {
        var info = MDB_envinfo()
        mdb_env_info(handle, &info)
        return info.me_last_txnid
    }

    // MARK: Errors

    /// Throws the error of a failed LMDB call. Inlined: every cursor step and lookup checks a code, and
    /// almost always it is 0.
    @inline(__always)
    func check(_ rc: Int32) throws {
        if rc != 0 { try fail(rc) }
    }

    @inline(never)
    private func fail(_ rc: Int32) throws {
        try Environment.check(rc, path: path)
    }

    static func check(_ rc: Int32, path: String) throws {
        guard rc != 0 else { return }
        if rc == MDB_READERS_FULL {
            throw LatticeError.storage(path: path, code: rc, message:
                "every reader slot of the file is taken (Configuration.maxReaders); close handles or raise the limit.")
        }
        throw LatticeError.storage(path: path, code: rc, message: message(rc))
    }

    static func message(_ rc: Int32) -> String {
        if let explained = FileCheck.explanation(rc) { return explained }
        if let text = mdb_strerror(rc) { return String(cString: text) }
        return "error \(rc)"
    }
}

// MARK: - Short transactions used while opening

extension Environment {
    /// Runs `body` in a read transaction of its own.
    func withReadTransaction<R>(_ body: (Transaction) throws -> R) throws -> R {
        let txn = try Transaction(readOn: self)
        try txn.renew()
        defer { txn.abort() }
        return try body(txn)
    }

    /// Runs `body` in a write transaction and commits it. The caller holds the writer lock.
    func withWriteTransaction<R>(_ body: (Transaction) throws -> R) throws -> R {
        let txn = try Transaction(writeOn: self)
        do {
            let result = try body(txn)
            try txn.commit()
            return result
        } catch {
            txn.abort()
            throw error
        }
    }

    /// Names of the named databases in the file (the keys of LMDB's main database).
    func tableNames() throws -> [String] {
        try withReadTransaction { txn in
            var main = MDB_dbi()
            try check(mdb_dbi_open(txn.txn, nil, 0, &main))
            return try txn.withCursor(Table(id: main)) { cursor in
                var names: [String] = []
                var entry = try cursor.first()
                while let e = entry {
                    names.append(String(decoding: e.key, as: UTF8.self))
                    entry = try cursor.next()
                }
                return names
            }
        }
    }

    /// Deletes every named database (used by `deleteIfMigrationNeeded`). The caller holds the writer lock.
    func deleteAllTables() throws {
        let names = try tableNames()
        try state.withLock { state in
            var txn: OpaquePointer?
            try check(mdb_txn_begin(handle, nil, 0, &txn))
            for name in names {
                var dbi = MDB_dbi()
                guard mdb_dbi_open(txn, name, 0, &dbi) == 0 else { continue }
                let rc = mdb_drop(txn, dbi, 1)
                if rc != 0 { mdb_txn_abort(txn); try check(rc) }
            }
            try check(mdb_txn_commit(txn))
            state.tables = [:]
        }
    }
}
