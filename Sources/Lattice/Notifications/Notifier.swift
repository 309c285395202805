import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The background worker of one open file in this process: it learns of every commit (of any process)
/// and wakes the subscribed observers, who then compute their changes in their own delivery context.
///
/// It waits on this process's FIFO for the file (`ChangeSignal`) and, as a backstop that needs no FIFO and misses
/// nothing (a writer killed between commit and wake-up, a full pipe, a directory without FIFOs), checks
/// LMDB's last transaction id every `backstopMilliseconds`. Bursts coalesce: subscribers are woken once
/// per newest transaction id seen, never once per commit. The notifier keeps the environment open while
/// anything is subscribed; the last unsubscription releases it at once (a program that invalidated its
/// tokens and dropped its handles can delete the file right away) and the worker stops without touching
/// it again.
final class Notifier: Sendable {
    /// Wakes a subscriber with the newest committed transaction id. Runs on the worker: it must only
    /// hand work to the subscriber's own context.
    typealias Wake = @Sendable (Int) -> Void

    static let backstopMilliseconds: Int32 = 50

    private struct State {
        var subscribers: [UInt64: Wake] = [:]
        var nextID: UInt64 = 1
        var running = false
        var lastSeen = 0
        /// Ended before the environment is released.
        var probe: CommitProbe?

        /// The id of the latest commit a snapshot begun now sees (see `CommitProbe`).
        mutating func newestCommit(_ env: Environment) -> Int {
            if probe == nil { probe = CommitProbe(env) }
            return probe?.newest() ?? env.lastTransactionID
        }
    }

    let env: Environment
    private let state = Mutex(State())
    /// This process's FIFO (nil: backstop only); also written to stop the worker promptly.
    private let listener: ChangeSignal.Listener?
    private var fd: Int32 { listener?.fd ?? -1 }

    private static let registry = Mutex<[String: Notifier]>([:])
    /// The FIFO directories listeners try (nil: `ChangeSignal.directories`); tests set it to exercise fallbacks.
    static let fifoCandidates = Mutex<[String]?>(nil)

    private init(env: Environment, listener: ChangeSignal.Listener?) {
        self.env = env
        self.listener = listener
    }

    /// Whether this process listens on a FIFO for `env` (false: backstop only).
    var hasFIFO: Bool { fd >= 0 }

    /// Subscribes `wake` to commits of `env`'s file; returns the id to unsubscribe with.
    static func subscribe(_ env: Environment, _ wake: @escaping Wake) throws -> (Notifier, UInt64) {
        try registry.withLock { registry in
            let notifier: Notifier
            if let running = registry[env.path] {
                notifier = running
            } else {
                // The notifier keeps its own reference on the environment while anything is subscribed.
                let shared = try Environment.acquire(path: env.path, options: env.options)
                let candidates = Notifier.fifoCandidates.withLock { $0 }
                notifier = Notifier(env: shared, listener: ChangeSignal.listen(path: env.path, candidates: candidates))
                registry[env.path] = notifier
            }
            let (id, start) = notifier.state.withLock { state -> (UInt64, Bool) in
                let id = state.nextID
                state.nextID += 1
                state.subscribers[id] = wake
                defer { state.running = true }
                if !state.running { state.lastSeen = state.newestCommit(notifier.env) }
                return (id, !state.running)
            }
            if start {
                let thread = Thread { notifier.run() }
                thread.name = "Lattice notifier"
                thread.start()
            }
            return (notifier, id)
        }
    }

    /// Ends a subscription; the last one releases the environment and stops the worker.
    func unsubscribe(_ id: UInt64) {
        Notifier.registry.withLock { registry in
            let empty = state.withLock { state -> Bool in
                state.subscribers[id] = nil
                // Wakes the worker to stop now (under the lock: the worker closes the descriptor under it).
                if state.subscribers.isEmpty && state.running && fd >= 0 {
                    var byte: UInt8 = 0
                    _ = write(fd, &byte, 1)
                }
                if state.subscribers.isEmpty {
                    // Before the environment can close; the worker reads no more (nothing is subscribed).
                    state.probe?.end()
                    state.probe = nil
                }
                return state.subscribers.isEmpty
            }
            // A stopping notifier leaves the registry now (a new subscription starts a fresh one), so no
            // subscriber comes back: the worker, which reads the environment only under the state lock
            // and only while something is subscribed, never touches it again.
            guard empty, registry[env.path] === self else { return }
            registry[env.path] = nil
            env.release()
        }
    }

    private func run() {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            if fd >= 0 {
                _ = poll(&poller, 1, Notifier.backstopMilliseconds)
                ChangeSignal.drain(fd)
            } else {
                usleep(UInt32(Notifier.backstopMilliseconds) * 1000)
            }
            let wakes = state.withLock { state -> (newest: Int, [Wake])? in
                if state.subscribers.isEmpty {
                    state.running = false
                    listener?.stop()
                    return nil
                }
                let newest = state.newestCommit(env)
                guard newest != state.lastSeen else { return (newest, []) }
                state.lastSeen = newest
                return (newest, Array(state.subscribers.values))
            }
            guard let (newest, subscribers) = wakes else { break }
            for wake in subscribers { wake(newest) }
        }
    }
}

/// Learns the id of the latest commit a snapshot begun now sees, with a read transaction kept reset and
/// renewed for each question (one reader slot, never a snapshot kept). Not the meta page's id
/// (`Environment.lastTransactionID`): a committing writer updates that an fsync before new snapshots
/// see the commit, so a subscriber woken for it in between would read the commit before while the id
/// counted as seen, and miss the commit until the next one. Used by one thread at a time.
final class CommitProbe {
    private var txn: Transaction?
    private let env: Environment

    init?(_ env: Environment) {
        guard let txn = try? Transaction(readOn: env) else { return nil }
        self.txn = txn
        self.env = env
    }

    /// The id; the meta page's when no snapshot can begin (another process grew the map).
    func newest() -> Int {
        guard let txn, (try? txn.renew()) != nil else { return env.lastTransactionID }
        defer { txn.reset() }
        return txn.id
    }

    /// Ends the transaction (before the environment closes).
    func end() {
        txn?.abort()
        txn = nil
    }
}
