import CLMDB
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Whole-file operations: compacted copies, compaction in place, deleting the files, and telling
/// whether another process has a file open.
///
/// **Presence.** Every environment holds a shared `flock` on the file's lock file (`<path>-lock`) from
/// before LMDB opens the data file until after LMDB closed it (`enter`/`leave`). An operation that must
/// be alone (`alone`) takes an exclusive `flock` on it without waiting, so it fails while another process
/// has the file open through Lattice, and openers wait while it runs: they open the data file only once
/// a compaction has renamed its copy over it. LMDB's own shared `fcntl` lock on byte 0 of the lock file,
/// held by every process with the environment open (Lattice or any other LMDB program), is probed as
/// well. Both lock kinds are independent of each other on Linux.
enum FileMaintenance {
    static func lockPath(_ path: String) -> String { path + "-lock" }
    /// Where a compaction writes the copy it then renames over the data file.
    static func compactionPath(_ path: String) -> String { path + ".compacting" }
    /// The directory of the observing processes' notification pipes beside the data file.
    static func notificationPath(_ path: String) -> String { path + ".notes" }

    /// Announces that this process opens `path`: returns the lock file's descriptor holding a shared
    /// `flock`, or -1 when the lock file cannot be opened (LMDB then reports the problem itself).
    static func enter(path: String) -> Int32 {
        var fd = open(lockPath(path), O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        if fd < 0 { fd = open(lockPath(path), O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { return -1 }
        while flock(fd, LOCK_SH) != 0 && errno == EINTR {}
        return fd
    }

    /// Ends `enter`. Called only after LMDB closed the environment: closing any descriptor of the lock
    /// file drops every `fcntl` lock this process holds on it, LMDB's included.
    static func leave(_ fd: Int32) {
        if fd >= 0 { close(fd) }
    }

    /// Runs `body` while no handle of this process and no other process has `path` open, keeping other
    /// handles and processes from opening it meanwhile. Returns nil, running nothing, when another
    /// process has it open; throws when this process has (unless `skipWhenOpenHere`: nil then too).
    static func alone<R>(path: String, skipWhenOpenHere: Bool = false, _ body: () throws -> R) throws -> R? {
        try Environment.registry.withLock { registry in
            if registry[path] != nil {
                if skipWhenOpenHere { return nil }
                throw LatticeError.storage(path: path, code: EBUSY, message: "the file is open in this process; close every handle first.")
            }
            let fd = open(lockPath(path), O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
            guard fd >= 0 else {
                throw LatticeError.storage(path: path, code: errno, message: "its lock file cannot be opened: \(String(cString: strerror(errno))).")
            }
            // Closed last: no LMDB environment of this process has the lock file open by then.
            defer { close(fd) }
            guard flock(fd, LOCK_EX | LOCK_NB) == 0, !lmdbLockHeldElsewhere(fd) else { return nil }
            return try body()
        }
    }

    /// Whether another process holds LMDB's shared lock on byte 0 of the lock file (any process with
    /// the environment open does). Unknown counts as held.
    private static func lmdbLockHeldElsewhere(_ fd: Int32) -> Bool {
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 0
        lock.l_len = 1
        guard fcntl(fd, F_GETLK, &lock) == 0 else { return true }
        return lock.l_type != Int16(F_UNLCK)
    }

    /// Deletes the data file and every file beside it (lock file, notification pipes, a compaction's
    /// leftover). Returns whether the data file existed; nil, deleting nothing, while another process
    /// has the file open. Throws while this process has.
    static func deleteFiles(path: String) throws -> Bool? {
        try alone(path: path) {
            let existed = FileManager.default.fileExists(atPath: path)
            try ChangeSignal.removeDirectory(path: path)
            // `<path>.note`: the single notification pipe of earlier versions.
            for file in [path, compactionPath(path), path + ".note", lockPath(path)] {
                if unlink(file) != 0 && errno != ENOENT {
                    throw LatticeError.storage(path: file, code: errno, message: "cannot delete it: \(String(cString: strerror(errno))).")
                }
            }
            return existed
        }
    }

    /// Compacts `path` in place when nobody else (no handle of this process either) has it open and
    /// `decide(totalBytes, usedBytes)` says so. Returns whether it did; nil when it is open elsewhere.
    ///
    /// Crash-safe: the compacted copy is written beside the file, flushed to disk and renamed over it,
    /// so the path always names either the old file or the whole new one.
    static func compact(path: String, decide: (Int, Int) -> Bool) throws -> Bool? {
        guard FileManager.default.fileExists(atPath: path) else { return false }
        return try alone(path: path, skipWhenOpenHere: true) {
            let temp = compactionPath(path)
            unlink(temp)  // left by a compaction that crashed before its rename; the data file is whole
            var env: OpaquePointer?
            try Environment.check(mdb_env_create(&env), path: path)
            guard let env else { throw LatticeError.storage(path: path, code: -1, message: "mdb_env_create failed") }
            var open = true
            defer { if open { mdb_env_close(env) } }
            try Environment.check(mdb_env_open(env, path, UInt32(MDB_NOSUBDIR | MDB_NOTLS | MDB_RDONLY), 0o644), path: path)
            var dead: Int32 = 0
            mdb_reader_check(env, &dead)
            // A reader of another process (one that skipped both locks) keeps the file as it is.
            if try Environment.readerSlots(of: env, path: path).contains(where: { $0.pid != getpid() }) { return false }
            let used = try usedBytes(env, path: path)
            let total = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? used
            guard decide(total, used) else { return false }
            let rc = mdb_env_copy2(env, temp, UInt32(MDB_CP_COMPACT))
            mdb_env_close(env)
            open = false
            guard rc == 0 else {
                unlink(temp)
                throw LatticeError.storage(path: path, code: rc, message: "compacting failed: \(Environment.message(rc))")
            }
            try sync(temp)
            guard rename(temp, path) == 0 else {
                let code = errno
                unlink(temp)
                throw LatticeError.storage(path: path, code: code, message: "the compacted copy cannot replace it: \(String(cString: strerror(code))).")
            }
            try sync((path as NSString).deletingLastPathComponent)
            return true
        }
    }

    /// Bytes of the file holding data: its pages less those on LMDB's free list.
    private static func usedBytes(_ env: OpaquePointer, path: String) throws -> Int {
        var info = MDB_envinfo()
        var stat = MDB_stat()
        mdb_env_info(env, &info)
        mdb_env_stat(env, &stat)
        var txn: OpaquePointer?
        try Environment.check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), path: path)
        defer { mdb_txn_abort(txn) }
        var cursor: OpaquePointer?
        // Database 0 is LMDB's free list: each value is a count of page numbers followed by them.
        try Environment.check(mdb_cursor_open(txn, 0, &cursor), path: path)
        defer { mdb_cursor_close(cursor) }
        var free = 0
        var key = MDB_val()
        var value = MDB_val()
        while mdb_cursor_get(cursor, &key, &value, MDB_NEXT) == 0 {
            if value.mv_size >= MemoryLayout<Int>.size, let data = value.mv_data {
                free += data.loadUnaligned(as: Int.self)
            }
        }
        return (info.me_last_pgno + 1 - free) * Int(stat.ms_psize)
    }

    /// Flushes a file (or a directory's entries) to disk.
    static func sync(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0, fsync(fd) == 0 else {
            let code = errno
            if fd >= 0 { close(fd) }
            throw LatticeError.storage(path: path, code: code, message: "cannot flush it to disk: \(String(cString: strerror(code))).")
        }
        close(fd)
    }
}

extension Environment {
    /// Writes a compacted copy of the latest commit to the new file `destination`, flushed to disk,
    /// while other threads and processes read and write (LMDB copies from a read snapshot of its own).
    func writeCompactCopy(to destination: String) throws {
        if FileManager.default.fileExists(atPath: destination) {
            throw LatticeError.storage(path: destination, code: EEXIST, message: "a file already exists there; writeCopy never overwrites one.")
        }
        // Written under another name and linked into place once whole: a process killed while copying
        // leaves that file behind, never a part of a copy under the name asked for.
        let partial = destination + ".partial-\(getpid())"
        unlink(partial)
        while true {
            // Counted as a snapshot of this process: the map must not move under the copy's reader.
            gate.enter { _ in }
            let rc = mdb_env_copy2(handle, partial, UInt32(MDB_CP_COMPACT))
            gate.leave()
            if rc == 0 { break }
            unlink(partial)
            guard rc == MDB_MAP_RESIZED else {
                throw LatticeError.storage(path: destination, code: rc, message: "copying '\(path)' failed: \(Environment.message(rc))")
            }
            // Another process grew the map: adopt its size, then copy again.
            guard try gate.exclusive(seconds: options.growthWaitSeconds, adoptMapSize) != nil else { throw snapshotsHoldMap(mapSize) }
        }
        defer { unlink(partial) }
        try FileMaintenance.sync(partial)
        // `link` never replaces a file that appeared meanwhile.
        guard link(partial, destination) == 0 else {
            let code = errno
            throw LatticeError.storage(path: destination, code: code, message: code == EEXIST
                ? "a file already exists there; writeCopy never overwrites one." : "copying '\(path)' failed: \(String(cString: strerror(code)))")
        }
    }
}
