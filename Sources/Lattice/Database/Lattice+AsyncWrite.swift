import Foundation
import Synchronization

/// Identifies one asynchronous write block (``Lattice/beginAsyncWrite(_:)``,
/// ``Lattice/writeAsync(_:onComplete:)``) or one completion of
/// ``Lattice/commitAsyncWrite(allowGrouping:_:)``, for ``Lattice/cancelAsyncWrite(_:)``.
///
/// Ids count up per handle from 1; 0 is never given to a queued block (a frozen handle, which queues
/// nothing, returns it).
public typealias AsyncTransactionId = UInt32

extension Lattice {
    // MARK: Asynchronous writes

    /// Runs `block` later, on the handle's own thread (delivered by its run loop, or on its actor), inside
    /// a write transaction begun for it, and commits that transaction after the block; `onComplete` is
    /// then called on the same thread, at a later turn, with nil or the error the commit threw.
    ///
    /// The block may commit (``commitWrite()``, ``commitAsyncWrite(allowGrouping:_:)``) or roll back
    /// (``cancelWrite()``) itself; then nothing more is committed, and `onComplete` gets nil. Blocks queued
    /// on one handle run in the order they were queued, one a run loop turn, each after the previous one
    /// ended; a block may queue more. Until the block runs, ``cancelAsyncWrite(_:)`` with the returned id
    /// keeps it from running (and `onComplete` is not called).
    ///
    /// When the write transaction cannot begin (a read-only handle, another handle migrated the file),
    /// the block does not run and `onComplete` gets the ``LatticeError``. On a frozen handle nothing is
    /// queued: `onComplete` is called at once with ``LatticeError/frozen(operation:)`` and the id is 0 (a
    /// frozen handle may be shared by threads, so it has no thread of its own to deliver on later).
    ///
    /// While another thread or process holds the writer lock, the block waits without holding up the
    /// handle's thread: its turn comes again once the lock was released.
    @discardableResult
    public func writeAsync(_ block: @escaping () -> Void, onComplete: ((Swift.Error?) -> Void)? = nil) -> AsyncTransactionId {
        if isFrozen {
            onComplete?(LatticeError.frozen(operation: "writeAsync(_:onComplete:)"))
            return 0
        }
        return enqueueAsyncWrite(block, commits: true, onComplete: onComplete)
    }

    /// Runs `block` later, on the handle's own thread (delivered by its run loop, or on its actor), inside
    /// a write transaction begun for it. The block should end with ``commitAsyncWrite(allowGrouping:_:)``
    /// or ``commitWrite()``: a transaction still open when it returns is rolled back.
    ///
    /// Blocks run in the order they were queued (with those of ``writeAsync(_:onComplete:)``), one a run
    /// loop turn; this may be called from inside a write transaction, an asynchronous one included (the
    /// block then runs after that transaction ended). ``cancelAsyncWrite(_:)`` with the returned id keeps
    /// the block from running while it has not started.
    ///
    /// When the write transaction cannot begin (a read-only handle, another handle migrated the file), the
    /// block does not run: there is no completion to tell, so use ``writeAsync(_:onComplete:)`` where that
    /// matters. On a frozen handle nothing is queued and the id is 0.
    @discardableResult
    public func beginAsyncWrite(_ asyncWriteBlock: @escaping () -> Void) -> AsyncTransactionId {
        if isFrozen { return 0 }
        return enqueueAsyncWrite(asyncWriteBlock, commits: false, onComplete: nil)
    }

    /// Commits the handle's write transaction (begun by ``beginWrite()`` or for an asynchronous block) and
    /// calls `onComplete` later, on the handle's own thread, with nil or the error the commit threw (a
    /// failed commit rolls the transaction back, as ``commitWrite()`` does).
    ///
    /// The commit itself happens before this returns: it is durable then, and the handle sees it. Outside
    /// a write transaction `onComplete` gets ``LatticeError/notInWriteTransaction(operation:)``; on a
    /// frozen handle it is called at once with ``LatticeError/frozen(operation:)``. The returned id can
    /// cancel the call of `onComplete` (``cancelAsyncWrite(_:)``), not the commit.
    ///
    /// - Parameter allowGrouping: Accepted for source compatibility. Lattice syncs every commit to disk
    ///   before it returns, grouped or not, which is the stronger guarantee.
    @available(*, noasync, message: "A write transaction must begin and end on one thread: use asyncWrite in async code.")
    @discardableResult
    public func commitAsyncWrite(allowGrouping: Bool = false, _ onComplete: ((Swift.Error?) -> Void)? = nil) -> AsyncTransactionId {
        if isFrozen {
            onComplete?(LatticeError.frozen(operation: "commitAsyncWrite(allowGrouping:_:)"))
            return 0
        }
        let queue = observation.asyncWriteQueue
        let id = queue.nextId()
        queue.complete(id, onComplete, commitForAsyncWrite(), on: self)
        observation.wakeForAsyncWrites()
        return id
    }

    /// Keeps a queued asynchronous write block from running, or the completion of
    /// ``commitAsyncWrite(allowGrouping:_:)`` from being called (the commit happened already).
    ///
    /// An id whose block has started or whose completion was called, an id cancelled already and an id
    /// this handle never gave out are ignored, as is a call on a frozen handle. The method throws nothing
    /// today: `throws` keeps Realm's signature.
    public func cancelAsyncWrite(_ asyncTransactionId: AsyncTransactionId) throws {
        if isFrozen { return }
        (observationState as? HandleObservation)?.asyncWrites?.cancel(asyncTransactionId)
    }

    /// Whether asynchronous write work of this handle is queued or running: true from a call of
    /// ``writeAsync(_:onComplete:)``, ``beginAsyncWrite(_:)`` or ``commitAsyncWrite(allowGrouping:_:)``
    /// until every queued block has run and every completion has been called (or cancelled).
    public var isPerformingAsynchronousWriteOperations: Bool {
        (observationState as? HandleObservation)?.asyncWrites?.hasWork ?? false
    }

    private func enqueueAsyncWrite(_ block: @escaping () -> Void, commits: Bool,
                                   onComplete: ((Swift.Error?) -> Void)?) -> AsyncTransactionId {
        let observation = self.observation
        let id = observation.asyncWriteQueue.enqueue(block, commits: commits, onComplete: onComplete, on: self)
        observation.wakeForAsyncWrites()
        return id
    }

    /// Commits the write transaction for `commitAsyncWrite`, returning the error instead of throwing it.
    func commitForAsyncWrite() -> Swift.Error? {
        if configuration.readOnly {
            return LatticeError.readOnly(path: env.path, operation: "commitAsyncWrite(allowGrouping:_:)")
        }
        guard writer != nil else {
            return LatticeError.notInWriteTransaction(operation: "commitAsyncWrite(allowGrouping:_:)")
        }
        do {
            try finishWrite()
            return nil
        } catch {
            return error
        }
    }
}

/// The asynchronous writes of one handle: blocks waiting for their turn, and completions waiting to be
/// called. Used only where the handle lives (its thread or actor), like the rest of `HandleObservation`,
/// which holds it and runs it from its turns.
final class AsyncWriteQueue {
    private struct Block {
        let id: AsyncTransactionId
        let body: () -> Void
        /// `writeAsync`: commit after the body (unless it ended the transaction) and report to `onComplete`.
        let commits: Bool
        let onComplete: ((Swift.Error?) -> Void)?
    }

    private struct Completion {
        let id: AsyncTransactionId
        let call: (Swift.Error?) -> Void
        let error: Swift.Error?
    }

    private var blocks: [Block] = []
    /// The handle, held while work is queued: work queued on a handle the program let go of is still done
    /// (then the handle closes). Set by `enqueue` and `complete`, cleared when the queue empties.
    private var holder: Lattice?
    private var completions: [Completion] = []
    /// Whether a block is running now (a block that spins the run loop gets no other block meanwhile).
    private var running = false
    private var lastId: AsyncTransactionId = 0
    /// The wait for the writer lock, held by another thread or process when the first block's turn came:
    /// a thread of its own waits, then asks for a turn (`wake`), so the handle's thread goes on meanwhile.
    private var lockWait: LockWait?

    private final class LockWait: Sendable {
        let done = Atomic<Bool>(false)
    }

    /// Whether anything is queued or running (a wait for the writer lock included: its thread uses the
    /// handle's file, which stays open until the wait ended).
    var hasWork: Bool { running || lockWait != nil || !blocks.isEmpty || !completions.isEmpty }

    /// Whether another turn is due now: a completion to call, or a block that can begin (`writing`: the
    /// handle is inside a write transaction, and blocks wait for its end, see `HandleObservation.writeEnded`).
    /// None while a block runs (a block that spins the run loop): the turn that runs it asks again after it.
    func needsTurn(writing: Bool) -> Bool {
        !running && (!completions.isEmpty || (!blocks.isEmpty && !writing && lockWait == nil))
    }

    func nextId() -> AsyncTransactionId {
        lastId &+= 1
        if lastId == 0 { lastId = 1 }
        return lastId
    }

    func enqueue(_ body: @escaping () -> Void, commits: Bool, onComplete: ((Swift.Error?) -> Void)?,
                 on lattice: Lattice) -> AsyncTransactionId {
        holder = lattice
        let id = nextId()
        blocks.append(Block(id: id, body: body, commits: commits, onComplete: onComplete))
        return id
    }

    /// Queues the call of `call` (if any) with `error`, for the next turn.
    func complete(_ id: AsyncTransactionId, _ call: ((Swift.Error?) -> Void)?, _ error: Swift.Error?, on lattice: Lattice) {
        guard let call else { return }
        holder = lattice
        completions.append(Completion(id: id, call: call, error: error))
    }

    func cancel(_ id: AsyncTransactionId) {
        if let index = blocks.firstIndex(where: { $0.id == id }) {
            blocks.remove(at: index)
        } else if let index = completions.firstIndex(where: { $0.id == id }) {
            completions.remove(at: index)
        }
        if !hasWork { holder = nil }
    }

    /// One turn: calls the completions due, then runs the first queued block, unless the handle is inside a
    /// write transaction, a block is running already, or the writer lock is busy (then `wake` is called
    /// once it was released).
    func run(on lattice: Lattice, wake: @escaping @Sendable () -> Void) {
        guard !running else { return }
        defer { if !hasWork { holder = nil } }
        // The completions queued before this turn; one cancelled by an earlier one's callback is skipped.
        for id in completions.map(\.id) {
            guard let index = completions.firstIndex(where: { $0.id == id }) else { continue }
            let completion = completions.remove(at: index)
            completion.call(completion.error)
        }
        if let lockWait {
            guard lockWait.done.load(ordering: .acquiring) else { return }
            self.lockWait = nil
        }
        guard lattice.writer == nil, !blocks.isEmpty else { return }
        // The writer lock, taken without waiting; `startWrite` then takes a level of its own, and the one
        // taken here is dropped once the transaction began (or failed to).
        let lock = lattice.env.writerLock
        let taken = lock.tryLock()
        if taken == false {
            let wait = LockWait()
            lockWait = wait
            DispatchQueue.global().async {
                // Taken and dropped at once: the lock was free a moment ago. The turn takes it again (and
                // waits again if another writer was quicker).
                if (try? lock.lock()) != nil { lock.unlock() }
                wait.done.store(true, ordering: .releasing)
                wake()
            }
            return
        }
        let block = blocks.removeFirst()
        running = true
        defer { running = false }
        // Once the block has started its id cancels nothing: its completion goes under an id of its own.
        do {
            defer { if taken == true { lock.unlock() } }
            try lattice.startWrite()
        } catch {
            if block.commits { complete(nextId(), block.onComplete, error, on: lattice) }
            return
        }
        block.body()
        if lattice.writer != nil {
            if block.commits {
                complete(nextId(), block.onComplete, lattice.commitForAsyncWrite(), on: lattice)
            } else {
                // Left open by a block of `beginAsyncWrite`: rolled back.
                lattice.cancelWrite()
            }
        } else if block.commits {
            complete(nextId(), block.onComplete, nil, on: lattice)
        }
    }
}
