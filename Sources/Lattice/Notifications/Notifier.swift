import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The background worker of one open file in this process: it learns of every commit (of any process)
/// and wakes the subscribed observers, who then compute their changes in their own delivery context.
///
/// It waits on the file's FIFO (`ChangeSignal`) and, as a backstop that needs no FIFO and misses
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
    }

    let env: Environment
    private let state = Mutex(State())
    /// The listening end of the FIFO (-1: backstop only); also written to stop the worker promptly.
    private let fd: Int32

    private static let registry = Mutex<[String: Notifier]>([:])
    /// The FIFO paths listeners try (nil: `ChangeSignal.paths`); tests set it to exercise fallbacks.
    static let fifoCandidates = Mutex<[String]?>(nil)

    private init(env: Environment, fd: Int32) {
        self.env = env
        self.fd = fd
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
                notifier = Notifier(env: shared, fd: ChangeSignal.listen(path: env.path, candidates: candidates) ?? -1)
                registry[env.path] = notifier
            }
            let (id, start) = notifier.state.withLock { state -> (UInt64, Bool) in
                let id = state.nextID
                state.nextID += 1
                state.subscribers[id] = wake
                defer { state.running = true }
                if !state.running { state.lastSeen = notifier.env.lastTransactionID }
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
                    if fd >= 0 { close(fd) }
                    return nil
                }
                let newest = env.lastTransactionID
                guard newest != state.lastSeen else { return (newest, []) }
                state.lastSeen = newest
                return (newest, Array(state.subscribers.values))
            }
            guard let (newest, subscribers) = wakes else { break }
            for wake in subscribers { wake(newest) }
        }
    }
}
