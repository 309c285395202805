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
    var initialMapSize = 1 << 30
    var maxReaders: UInt32 = 1022
    var maxDatabases: UInt32 = 64
    /// Bytes a read transaction's cursors walk before their pages leave the resident set (`ResidentPages`).
    var residentScanBytes = 16 << 20
}

/// The one LMDB environment of a database file in this process.
///
/// LMDB forbids opening the same file twice in one process, so every `Lattice` handle on a path shares
/// the environment through a process-wide registry; it is closed when the last handle releases it.
///
/// **Map growth.** The map starts at `initialMapSize`; it grows before a write transaction while the data
/// fills more than half of it, and when a write still hits `MDB_MAP_FULL` (see `Transaction`).
/// `mdb_env_set_mapsize` re-maps the file, so no thread of this process may be inside an LMDB call or
/// hold a pointer into the map at that moment: every read-transaction operation runs under
/// `remapLock` (shared), growth takes it exclusively. Nothing outside an operation keeps map pointers
/// (records are copied out), so held snapshots survive a re-map.
///
/// **Writers.** `writerLock` (in process) and `flock` on the data file (across processes) are held for a
/// whole Lattice write transaction. Holding them while the LMDB transaction is aborted, the map grown and
/// the logged operations replayed guarantees no other writer commits in between.
final class Environment: @unchecked Sendable {
    // @unchecked Sendable is safe: `handle` is an MDB_env*, which LMDB allows to be shared by threads
    // (MDB_NOTLS); the mutable Swift state sits in `state` (a Mutex); the pthread locks are allocated
    // once in init and freed only in deinit, when no handle can reach this object any more.

    let path: String
    let handle: OpaquePointer
    let options: EnvironmentOptions
    /// Which databases hold checksummed values (file format 2).
    let seals = Seals()
    private let remapLock: UnsafeMutablePointer<pthread_rwlock_t>
    private let writerLock: UnsafeMutablePointer<pthread_mutex_t>
    private let writerFD: Int32

    private struct State {
        var refCount = 0
        /// Whether a write transaction is open (see `claimWriteTransaction()`).
        var writeTransactionOpen = false
        var dbis: [String: MDB_dbi] = [:]
        var mapSize: Int
        /// How many times the map was re-mapped (it may move): see `ResidentPages`.
        var remaps = 0
    }
    private let state: Mutex<State>

    /// The number of re-maps so far. Stable while the remap lock is held shared.
    var remapCount: Int { state.withLock { $0.remaps } }

    private static let registry = Mutex<[String: Environment]>([:])

    /// Returns the shared environment for `path`, opening it on first use.
    static func acquire(path: String, options: EnvironmentOptions) throws -> Environment {
        try registry.withLock { registry in
            if let env = registry[path] {
                if env.options.readOnly && !options.readOnly {
                    throw LatticeError.unsupported(
                        feature: "Opening '\(path)' read-write while this process has it open read-only")
                }
                env.state.withLock { $0.refCount += 1 }
                return env
            }
            let env = try Environment(path: path, options: options)
            env.state.withLock { $0.refCount = 1 }
            registry[path] = env
            return env
        }
    }

    /// Whether any handle in this process has `path` open.
    static func isOpen(path: String) -> Bool {
        registry.withLock { $0[path] != nil }
    }

    /// How many handles of this process share the environment.
    var handleCount: Int { state.withLock { $0.refCount } }

    /// Drops one reference; the last one closes the environment (and removes temporary files).
    func release() {
        Environment.registry.withLock { registry in
            let remaining = state.withLock { state -> Int in
                state.refCount -= 1
                return state.refCount
            }
            if remaining == 0 { registry[path] = nil }
        }
    }

    private init(path: String, options: EnvironmentOptions) throws {
        self.path = path
        self.options = options
        try FileCheck.checkBeforeOpen(path: path, readOnly: options.readOnly)
        let lockExisted = FileCheck.exists(path + "-lock")
        var env: OpaquePointer?
        try Environment.check(mdb_env_create(&env), path: path)
        guard let env else { throw LatticeError.storage(path: path, code: -1, message: "mdb_env_create failed") }
        var flags = UInt32(MDB_NOSUBDIR | MDB_NOTLS)
        if options.readOnly { flags |= UInt32(MDB_RDONLY) }
        if options.temporary { flags |= UInt32(MDB_NOSYNC) }
        mdb_env_set_maxreaders(env, options.maxReaders)
        mdb_env_set_maxdbs(env, options.maxDatabases)
        mdb_env_set_mapsize(env, options.initialMapSize)
        let rc = mdb_env_open(env, path, flags, 0o644)
        if rc != 0 {
            mdb_env_close(env)
            if !lockExisted { FileCheck.removeStrayLock(path + "-lock") }
            throw FileCheck.openFailure(rc, path: path, readOnly: options.readOnly)
        }
        var dead: Int32 = 0
        mdb_reader_check(env, &dead)  // reclaim slots of crashed readers
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        self.handle = env
        self.state = Mutex(State(mapSize: max(info.me_mapsize, options.initialMapSize)))
        remapLock = .allocate(capacity: 1)
        pthread_rwlock_init(remapLock, nil)
        writerLock = .allocate(capacity: 1)
        var attr = pthread_mutexattr_t()
        pthread_mutexattr_init(&attr)
        pthread_mutexattr_settype(&attr, Int32(PTHREAD_MUTEX_RECURSIVE))
        pthread_mutex_init(writerLock, &attr)
        pthread_mutexattr_destroy(&attr)
        writerFD = options.readOnly || options.temporary ? -1 : open(path, O_RDWR | O_CLOEXEC)
        if options.temporary {
            // Nobody else may open a temporary store: unlink now so even a crash leaves nothing behind.
            unlink(path)
            unlink(path + "-lock")
        }
    }

    deinit {
        mdb_env_close(handle)
        if writerFD >= 0 { close(writerFD) }
        pthread_rwlock_destroy(remapLock)
        remapLock.deallocate()
        pthread_mutex_destroy(writerLock)
        writerLock.deallocate()
    }

    // MARK: Databases

    /// Opens (creating when `create`) the named databases, all in one transaction.
    /// Returns the handles; a missing database (when not creating) is left out.
    func openDatabases(_ specs: [(name: String, dupSort: Bool)], create: Bool) throws -> [String: MDB_dbi] {
        try state.withLock { state in
            let missing = specs.filter { state.dbis[$0.name] == nil }
            if !missing.isEmpty {
                let write = create && !options.readOnly
                // Opening reads the main database's pages: a read transaction must not race a re-map (a
                // write one runs under the writer lock, so no other thread is growing the map).
                func open() throws {
                    var txn: OpaquePointer?
                    try self.check(mdb_txn_begin(self.handle, nil, write ? 0 : UInt32(MDB_RDONLY), &txn))
                    for spec in missing {
                        var flags = UInt32(0)
                        if write { flags |= UInt32(MDB_CREATE) }
                        if spec.dupSort { flags |= UInt32(MDB_DUPSORT | MDB_DUPFIXED) }
                        var dbi = MDB_dbi()
                        let rc = mdb_dbi_open(txn, spec.name, flags, &dbi)
                        if rc == MDB_NOTFOUND { continue }
                        if rc != 0 {
                            mdb_txn_abort(txn)
                            if rc == MDB_INCOMPATIBLE {
                                throw LatticeError.invalidFile(
                                    path: self.path, reason: "database '\(spec.name)' has an unexpected layout.")
                            }
                            try self.check(rc)
                        }
                        state.dbis[spec.name] = dbi
                    }
                    // Committing (even a read-only transaction) keeps the new handles; aborting would close them.
                    try self.check(mdb_txn_commit(txn))
                }
                try write ? open() : withMapShared(open)
            }
            return state.dbis.filter { name, _ in specs.contains { $0.name == name } }
        }
    }

    // MARK: Map size

    var mapSize: Int { state.withLock { $0.mapSize } }

    /// Runs `body` while no re-map can happen (for operations of read transactions).
    @inline(__always)
    func withMapShared<R>(_ body: () throws -> R) rethrows -> R {
        pthread_rwlock_rdlock(remapLock)
        defer { pthread_rwlock_unlock(remapLock) }
        return try body()
    }

    /// Grows the map to at least `minimum` bytes (and by at least one step). Called by the writer with
    /// no LMDB write transaction active.
    ///
    /// LMDB asks for no active transaction at all here; read snapshots of other handles may stay open
    /// because a read transaction keeps no pointer into the map between calls (pages are found from
    /// `me_map` on every access) and every read operation holds `remapLock` shared, so none is under way
    /// (MapGrowthConcurrencyTests exercises this with reader threads).
    func growMap(minimum: Int = 0) throws {
        pthread_rwlock_wrlock(remapLock)
        defer { pthread_rwlock_unlock(remapLock) }
        let current = state.withLock { $0.mapSize }
        var next = Environment.grown(current)
        while next < minimum { next = Environment.grown(next) }
        let rc = mdb_env_set_mapsize(handle, next)
        if rc != 0 { throw LatticeError.mapFull(path: path, mapSize: current) }
        // LMDB rounds a size below the data up to the data's size (another process may have written more).
        var info = MDB_envinfo()
        mdb_env_info(handle, &info)
        state.withLock {
            $0.mapSize = info.me_mapsize
            $0.remaps += 1
        }
    }

    /// One growth step: doubling, by at least 8 MiB and at most 1 GiB.
    private static func grown(_ size: Int) -> Int { size + min(max(size, 8 << 20), 1 << 30) }

    /// Grows the map before a write transaction begins while the data fills more than half of it, so a
    /// transaction seldom outgrows the map midway (which costs an abort and a replay of everything it
    /// wrote). The caller holds the writer lock, with no LMDB write transaction active.
    func reserveHeadroom() throws {
        let used = usedBytes
        let current = mapSize
        if used > current / 2 { try growMap(minimum: 2 * used) }
    }

    /// Adopts a map size grown by another process (`MDB_MAP_RESIZED`).
    func adoptMapSize() throws {
        pthread_mutex_lock(writerLock)
        defer { pthread_mutex_unlock(writerLock) }
        pthread_rwlock_wrlock(remapLock)
        defer { pthread_rwlock_unlock(remapLock) }
        var fd: Int32 = -1
        if mdb_env_get_fd(handle, &fd) == 0 { try FileCheck.checkSize(fd: fd, path: path) }  // before mapping more of it
        try check(mdb_env_set_mapsize(handle, 0))
        var info = MDB_envinfo()
        mdb_env_info(handle, &info)
        state.withLock {
            $0.mapSize = info.me_mapsize
            $0.remaps += 1
        }
    }

    // MARK: Writer lock

    /// Records that a write transaction begins; false when one is already open. The caller holds the
    /// writer lock, which is recursive, so an open one can only belong to the same thread through another
    /// handle: LMDB would then wait forever for the thread's own write lock.
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

    /// Takes the in-process and cross-process writer locks.
    func lockWriter() throws {
        pthread_mutex_lock(writerLock)
        if writerFD >= 0 {
            while flock(writerFD, LOCK_EX) != 0 {
                if errno == EINTR { continue }
                let code = errno
                pthread_mutex_unlock(writerLock)
                throw LatticeError.storage(path: path, code: code, message: String(cString: strerror(code)))
            }
        }
    }

    func unlockWriter() {
        if writerFD >= 0 { flock(writerFD, LOCK_UN) }
        pthread_mutex_unlock(writerLock)
    }

    // MARK: Info

    /// Bytes of the data file in use by the last committed transaction.
    var usedBytes: Int {
        var info = MDB_envinfo()
        var stat = MDB_stat()
        withMapShared {  // both read the meta pages inside the map
            mdb_env_info(handle, &info)
            mdb_env_stat(handle, &stat)
        }
        return (info.me_last_pgno + 1) * Int(stat.ms_psize)
    }

    // MARK: Errors

    func check(_ rc: Int32) throws {
        try Environment.check(rc, path: path)
    }

    static func check(_ rc: Int32, path: String) throws {
        guard rc != 0 else { return }
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
        let txn = Transaction(readOn: self)
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
    func databaseNames() throws -> [String] {
        try withReadTransaction { txn in
            var main = MDB_dbi()
            try check(mdb_dbi_open(txn.txn, nil, 0, &main))
            return try txn.withCursor(main) { cursor in
                var names: [String] = []
                var entry = try cursor.move(MDB_FIRST)
                while let e = entry {
                    names.append(String(decoding: e.key, as: UTF8.self))
                    entry = try cursor.move(MDB_NEXT)
                }
                return names
            }
        }
    }

    /// Deletes every named database (used by `deleteIfMigrationNeeded`). The caller holds the writer lock.
    func deleteAllDatabases() throws {
        let names = try databaseNames()
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
            state.dbis = [:]
        }
    }
}
