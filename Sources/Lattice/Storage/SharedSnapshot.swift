#if canImport(Glibc)
import Glibc
#endif

/// A mutex the owning thread may take again (a read under the lock calls further reads).
final class RecursiveLock: @unchecked Sendable {
    // @unchecked Sendable is safe: the pthread mutex is allocated and initialized in init, destroyed in
    // deinit (when no thread can reach it), and otherwise used only through pthread calls.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init() {
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_RECURSIVE))
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inline(__always)
    func withLock<R>(_ body: () throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// Read snapshots shared by frozen handles: at most one per version of a file in this process, so
/// everything frozen at one version costs one reader slot.
///
/// **Why sharing a read transaction between threads is safe.** LMDB lets a read-only transaction of an
/// `MDB_NOTLS` environment move between threads "if the user synchronizes its use": calls on one
/// transaction must never overlap (a lookup may refresh the transaction's cached database records and
/// a cursor keeps its position in the transaction's memory). A shared transaction has a `sharedLock`,
/// and every call that reaches LMDB through it (`get`, `count`, `withCursor` for the whole cursor walk,
/// as no cursor outlives `withCursor`) holds that lock, so calls from different threads run one after
/// the other. It is never reset or renewed once shared (its owner handle lets go of it instead of
/// resetting it), and it is aborted only by its deinit, when no thread holds a reference any more.
/// Bytes it lends stay valid while it lives (the map does not move under an open snapshot, and the
/// reader slot keeps its pages from reuse); callers copy them before the lock is released.
enum SharedSnapshots {
    private struct Key: Hashable {
        let env: ObjectIdentifier
        let version: Int
    }

    private final class WeakTransaction {
        weak var transaction: Transaction?
        init(_ transaction: Transaction) { self.transaction = transaction }
    }

    private static let lock = RecursiveLock()
    // nonisolated(unsafe) is safe: `table` is read and written only inside `lock.withLock`.
    nonisolated(unsafe) private static var table: [Key: WeakTransaction] = [:]

    /// The shared transaction reading `txn`'s version: one registered earlier and still alive, or `txn`
    /// itself, which becomes shared. `txn` is an open read snapshot used by the calling thread only.
    static func share(_ txn: Transaction) -> Transaction {
        let key = Key(env: ObjectIdentifier(txn.env), version: txn.id)
        return lock.withLock {
            if let existing = table[key]?.transaction { return existing }
            table = table.filter { $0.value.transaction != nil }
            if txn.sharedLock == nil { txn.sharedLock = RecursiveLock() }
            table[key] = WeakTransaction(txn)
            return txn
        }
    }
}
