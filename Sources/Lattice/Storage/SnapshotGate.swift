#if canImport(Glibc)
import Glibc
#endif

/// Counts this process's open read snapshots of one environment, so the map is re-sized only when
/// none is open, as LMDB requires (`mdb_env_set_mapsize`: "only if no transactions are active in this
/// process"). A snapshot keeps the map where it is for its whole life, so bytes it returns stay valid
/// until it ends. A re-size waiting for snapshots to end keeps new ones from starting, so readers that
/// refresh in a loop cannot starve it; it gives up after a time limit (a thread may hold a snapshot and
/// wait for something else).
final class SnapshotGate: @unchecked Sendable {
    // @unchecked Sendable is safe: `open` is read and written only with `mutex` held; the pthread
    // objects are allocated in init and freed in deinit, when no thread can reach them.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let drained = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var open = 0
    /// Re-sizes waiting for `open` to reach zero; new snapshots wait meanwhile.
    private var resizesWaiting = 0
    private let reopened = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(drained, nil)
        pthread_cond_init(reopened, nil)
    }

    deinit {
        pthread_cond_destroy(reopened)
        reopened.deallocate()
        pthread_cond_destroy(drained)
        pthread_mutex_destroy(mutex)
        drained.deallocate()
        mutex.deallocate()
    }

    /// The number of snapshots open now.
    var openCount: Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return open
    }

    /// Whether a re-size waits for the open snapshots to end (a handle refreshing then ends its own).
    var resizeWaiting: Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return resizesWaiting > 0
    }

    /// Starts a snapshot with `begin`, so that no re-size runs at the same time, and counts it.
    /// `begin` is handed a function that waits (at most 5 s) until no other snapshot is open, for when
    /// it must adopt a map another process grew; it returns whether the wait succeeded.
    func enter(_ begin: (_ waitForNoSnapshot: () -> Bool) throws -> Void) rethrows {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while resizesWaiting > 0 { pthread_cond_wait(reopened, mutex) }
        try begin { self.waitForNoSnapshot(seconds: 5) }
        open += 1
    }

    /// Records that a snapshot ended.
    func leave() {
        pthread_mutex_lock(mutex)
        open -= 1
        if open == 0 { pthread_cond_broadcast(drained) }
        pthread_mutex_unlock(mutex)
    }

    /// Runs `body` once no snapshot of this process is open (waiting at most `seconds`), keeping new
    /// ones from starting meanwhile. Returns nil when snapshots stayed open.
    func exclusive<R>(seconds: Int, _ body: () throws -> R) rethrows -> R? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        resizesWaiting += 1
        let drained = waitForNoSnapshot(seconds: seconds)
        resizesWaiting -= 1
        if resizesWaiting == 0 { pthread_cond_broadcast(reopened) }
        guard drained else { return nil }
        return try body()
    }

    /// Waits (holding the mutex) until no snapshot is open; false on timeout.
    private func waitForNoSnapshot(seconds: Int) -> Bool {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        deadline.tv_sec += seconds
        while open > 0 {
            if pthread_cond_timedwait(drained, mutex, &deadline) == ETIMEDOUT { return open == 0 }
        }
        return true
    }
}
