import Foundation
import Synchronization

extension Lattice {
    /// Observes the handle: `block` gets ``Notification/didChange`` each time the handle moves to a newer
    /// commit (delivered on this thread's run loop and by ``refresh()``), or, with ``autorefresh`` off,
    /// ``Notification/refreshRequired`` when a newer commit exists. A commit of this handle (an empty
    /// write too) calls `block` at once, before `commitWrite()` returns, as in Realm. A frozen handle
    /// never changes: its observers are never called.
    public func observe(_ block: @escaping (Notification, Lattice) -> Void) -> NotificationToken {
        let flag = ObserverFlag()
        if isFrozen {  // a frozen handle never changes: nothing to tell
            flag.deactivate()
            return NotificationToken(flag: flag, stop: {})
        }
        do {
            try observation.addLatticeObserver(flag, block)
        } catch {
            flag.deactivate()
        }
        return NotificationToken(flag: flag, stop: observation.tokenStop())
    }

    /// Registers an observer delivered on this handle; a failure (or a write transaction in progress)
    /// goes to `onError` and nothing else is delivered.
    /// `keyPaths` are checked against `info`, the class of the observed objects: one that names no
    /// property goes to `onError` too.
    func register(_ observer: any HandleObserver, keyPaths: [String]? = nil, of info: ClassInfo? = nil,
                  onError: @escaping (Error) -> Void) -> NotificationToken {
        if let info, let error = ObservedColumns.invalidKeyPath(keyPaths, of: info) {
            onError(error)
            return NotificationToken(flag: ObserverFlag(), stop: {})
        }
        if let refusal = observationRefusal {
            onError(refusal)
            return NotificationToken(flag: ObserverFlag(), stop: {})
        }
        do {
            try observation.add(observer, onError: onError)
        } catch {
            onError(error)
        }
        return NotificationToken(flag: observer.flag, stop: observation.tokenStop())
    }

    /// Why an observer cannot be registered now, or nil: inside a write transaction (its changes would
    /// be told twice or half), or on frozen data, which never changes (as Realm refuses it).
    var observationRefusal: LatticeError? {
        if writer != nil {
            return .unsupported(feature: "Registering a notification observer inside a write transaction "
                + "(register it before beginWrite() or after commitWrite())")
        }
        return isFrozen ? .frozen(operation: "observe") : nil
    }

    /// ``write(_:)``, except that the observers of `tokens` (registered on this handle without a queue)
    /// are not told about this write: they take its result as already seen.
    @available(*, noasync, message: "A write transaction must begin and end on one thread: use asyncWrite in async code.")
    @discardableResult
    public func write<Result>(withoutNotifying tokens: [NotificationToken], _ block: () throws -> Result) throws -> Result {
        try startWrite(deliveringPending: true)
        do {
            let result = try block()
            if isInWriteTransaction { try commitWrite(withoutNotifying: tokens) }
            return result
        } catch {
            if isInWriteTransaction { cancelWrite() }
            throw error
        }
    }

    /// ``commitWrite()``, except that the observers of `tokens` (object, collection and handle
    /// observers) are not told about this write.
    @available(*, noasync, message: "A write transaction must begin and end on one thread: use asyncWrite in async code.")
    public func commitWrite(withoutNotifying tokens: [NotificationToken]) throws {
        let flags = tokens.map(\.flag)
        if writer != nil, let observation = observationState as? HandleObservation {
            observation.skip(flags)
        }
        try finishWrite(skipping: flags)
    }
}

// MARK: - Queues

/// Observers delivered on a dispatch queue, each with a handle of its own opened there.
enum QueueDelivery {
    private struct State {
        var lattice: Lattice?
        var observer: (any HandleObserver)?
    }

    private final class Slot: Sendable {
        let state = Mutex(State())
        /// The flag of the observer built on the queue's handle. Kept apart from `state`, which a delivery
        /// holds while it computes the change and calls back: the token's stop deactivates it without
        /// waiting, so a delivery already past the token's flag does not call back after `invalidate()`.
        let observerFlag = Mutex<ObserverFlag?>(nil)
    }

    /// Starts an observer that `make` builds on a handle of `lattice`'s file opened for the queue, and
    /// delivers its changes there; refused (`onError`) as `register` refuses one.
    static func start(from lattice: Lattice, on queue: DispatchQueue,
                      onError: @escaping @Sendable (Error) -> Void,
                      make: @escaping @Sendable (Lattice) throws -> any HandleObserver) -> NotificationToken {
        if let refusal = lattice.observationRefusal {
            onError(refusal)
            return NotificationToken(flag: ObserverFlag(), stop: {})
        }
        let configuration = lattice.configuration, env = lattice.env
        let flag = ObserverFlag()
        let slot = Slot()
        let deliver: @Sendable () -> Void = {
            guard flag.isActive else { return }
            slot.state.withLock { state in
                do {
                    if let lattice = state.lattice {
                        lattice.refresh()
                    } else {
                        let lattice = try Lattice(configuration: configuration)
                        let observer = try make(lattice)
                        slot.observerFlag.withLock { $0 = observer.flag }
                        state.observer = observer
                        state.lattice = lattice
                    }
                    guard flag.isActive, let lattice = state.lattice, let observer = state.observer else { return }
                    observer.update(DeliveryContext(lattice))
                } catch {
                    flag.deactivate()
                    onError(error)
                }
            }
        }
        do {
            let (notifier, id) = try Notifier.subscribe(env) { _ in queue.async(execute: deliver) }
            queue.async(execute: deliver)
            return NotificationToken(flag: flag) {
                notifier.unsubscribe(id)
                // Set after the observer is built and before the delivery checks `flag` again: either
                // this deactivates it, or that check (which sees `flag` inactive) stops the delivery.
                slot.observerFlag.withLock { $0 }?.deactivate()
            }
        } catch {
            onError(error)
            return NotificationToken(flag: flag, stop: {})
        }
    }
}

// MARK: - Async sequences

/// The changes of a collection or object as an `AsyncSequence`: the first element is the initial
/// value, then one element per commit that changed what is observed. The changes are computed on the
/// iterating task's isolation, on the handle the collection or object belongs to, which each step moves
/// to the newest commit.
public struct LatticeChanges<Element>: AsyncSequence {
    let lattice: Lattice
    /// Makes the step computing a change (nil: nothing observed changed) and the test of whether the
    /// sequence has ended.
    let makeStep: () -> (step: (DeliveryContext) -> Element?, isFinished: () -> Bool)

    /// The step of a sequence that yields `element` and ends (frozen data, which never changes, gives
    /// one `.error`, as observing it does).
    static func once(_ element: Element) -> (step: (DeliveryContext) -> Element?, isFinished: () -> Bool) {
        var done = false
        return ({ _ in
            done = true
            return element
        }, { done })
    }

    /// Starts observing.
    public func makeAsyncIterator() -> AsyncIterator {
        let (stream, continuation) = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .bufferingNewest(1))
        let subscription = try? Notifier.subscribe(lattice.env) { continuation.yield($0) }
        let (step, isFinished) = makeStep()
        return AsyncIterator(lattice: lattice, step: step, isFinished: isFinished, wakes: stream.makeAsyncIterator(),
                             subscription: Subscription(subscription, continuation))
    }

    /// Ends the notifier subscription with the iterator.
    final class Subscription {
        let subscription: (Notifier, UInt64)?
        let continuation: AsyncStream<Int>.Continuation

        init(_ subscription: (Notifier, UInt64)?, _ continuation: AsyncStream<Int>.Continuation) {
            self.subscription = subscription
            self.continuation = continuation
        }

        deinit {
            if let (notifier, id) = subscription { notifier.unsubscribe(id) }
            continuation.finish()
        }
    }

    /// Waits for commits and computes their changes.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let lattice: Lattice
        let step: (DeliveryContext) -> Element?
        let isFinished: () -> Bool
        var wakes: AsyncStream<Int>.Iterator
        let subscription: Subscription
        var started = false

        /// The next change, waiting for a commit that changes what is observed.
        public mutating func next(isolation actor: isolated (any Actor)? = #isolation) async -> Element? {
            while !isFinished() {
                if started {
                    guard await wakes.next(isolation: actor) != nil else { return nil }
                    lattice.refresh()
                }
                started = true
                if let change = step(DeliveryContext(lattice)) { return change }
            }
            return nil
        }

        /// ``next(isolation:)`` without an isolation.
        public mutating func next() async -> Element? {
            await next(isolation: nil)
        }
    }
}

extension Results {
    /// The changes of these results as an `AsyncSequence` (see ``LatticeChanges``).
    public var changes: LatticeChanges<LatticeCollectionChange<Results<Element>>> {
        let results = self
        return LatticeChanges(lattice: lattice) {
            if results.isFrozen { return LatticeChanges.once(.error(LatticeError.frozen(operation: "changes"))) }
            let observer = CollectionObserver(results, results.collectionWatch(keyPaths: nil)) { _ in }
            return ({ observer.nextChange($0) }, { false })
        }
    }
}
