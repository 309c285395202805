#if canImport(Glibc)
import Glibc
#endif

/// The writer lock of one file: an in-process lock and a `flock` on the data file (across processes),
/// owned by one thread at a time.
///
/// The owner may take it again (opening a handle inside a write takes it to read the schema, for
/// example); every `lock()` is matched by an `unlock()` and both locks are released only when the
/// outermost one ends, so a nested failure never lets another writer in while an outer write runs.
/// Only the owner thread may unlock: LMDB's own writer mutex belongs to the thread that began the
/// write transaction.
final class WriterLock: @unchecked Sendable {
    // @unchecked Sendable is safe: `owner` and `depth` are read and written only with `mutex` held;
    // the pthread objects are allocated in init and freed in deinit, when no thread can reach them.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let released = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var owner: pthread_t?
    private var depth = 0
    /// The data file, for `flock`; -1 when no other process can write (read-only or temporary stores).
    private let fd: Int32
    private let path: String

    init(path: String, fd: Int32) {
        self.path = path
        self.fd = fd
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(released, nil)
    }

    deinit {
        pthread_cond_destroy(released)
        pthread_mutex_destroy(mutex)
        released.deallocate()
        mutex.deallocate()
    }

    /// Whether the calling thread owns the lock.
    var isHeldByCurrentThread: Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return owner.map { pthread_equal($0, pthread_self()) != 0 } ?? false
    }

    /// How many times the calling thread holds the lock (0 when another thread or nobody does).
    var depthOfCurrentThread: Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return owner.map { pthread_equal($0, pthread_self()) != 0 } ?? false ? depth : 0
    }

    /// Takes the lock, waiting for other threads and processes.
    func lock() throws {
        let me = pthread_self()
        pthread_mutex_lock(mutex)
        if let owner, pthread_equal(owner, me) != 0 {
            depth += 1
            pthread_mutex_unlock(mutex)
            return
        }
        while owner != nil { pthread_cond_wait(released, mutex) }
        owner = me
        depth = 1
        pthread_mutex_unlock(mutex)
        // The in-process lock is ours: wait for other processes without blocking this process's readers.
        guard fd >= 0 else { return }
        while flock(fd, LOCK_EX) != 0 {
            let code = errno
            if code == EINTR { continue }
            release()
            throw LatticeError.storage(path: path, code: code, message: "Could not take the writer lock: \(String(cString: strerror(code))).")
        }
    }

    /// Takes the lock if no other thread or process holds it (its owner takes another level): true when
    /// taken, false when another holds it (nothing is taken then), nil when `flock` failed otherwise (then
    /// `lock()` reports the error).
    func tryLock() -> Bool? {
        let me = pthread_self()
        pthread_mutex_lock(mutex)
        if let owner {
            let mine = pthread_equal(owner, me) != 0
            if mine { depth += 1 }
            pthread_mutex_unlock(mutex)
            return mine
        }
        owner = me
        depth = 1
        pthread_mutex_unlock(mutex)
        guard fd >= 0 else { return true }
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            if code == EINTR { continue }
            release()
            return code == EWOULDBLOCK ? false : nil
        }
        return true
    }

    /// Releases one level of the lock. Returns false, changing nothing, when the calling thread does
    /// not own it.
    @discardableResult
    func unlock() -> Bool {
        pthread_mutex_lock(mutex)
        guard let owner, pthread_equal(owner, pthread_self()) != 0 else {
            pthread_mutex_unlock(mutex)
            return false
        }
        depth -= 1
        let last = depth == 0
        pthread_mutex_unlock(mutex)
        if last { release() }
        return true
    }

    /// Drops both locks (the owner's last level).
    private func release() {
        if fd >= 0 { flock(fd, LOCK_UN) }
        pthread_mutex_lock(mutex)
        owner = nil
        depth = 0
        pthread_cond_signal(released)
        pthread_mutex_unlock(mutex)
    }
}
