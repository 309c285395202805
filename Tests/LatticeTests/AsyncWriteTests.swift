import Foundation
import XCTest
@testable import Lattice
#if canImport(Glibc)
import Glibc
#endif

final class AsyncNote: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var text = ""
}

/// The run-loop asynchronous write API: `writeAsync`, `beginAsyncWrite`, `commitAsyncWrite`,
/// `cancelAsyncWrite` and `isPerformingAsynchronousWriteOperations`.
final class AsyncWriteTests: XCTestCase {
    private var database: TempDatabase!
    private let types: [Object.Type] = [AsyncNote.self]

    override func setUp() {
        super.setUp()
        database = makeTempDatabase("asyncwrite")
    }

    private func open(readOnly: Bool = false) throws -> Lattice { try database.open(types, readOnly: readOnly) }


    private func firstError(_ results: [Error?]) -> LatticeError? {
        results.first.flatMap { $0 } as? LatticeError
    }

    private func texts(_ lattice: Lattice) -> [String] {
        lattice.objects(AsyncNote.self).map { ($0.id, $0.text) }.sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// Queues a last `writeAsync` and spins until it completed: every block queued before has had its turn.
    private func drain(_ lattice: Lattice, file: StaticString = #filePath, line: UInt = #line) {
        var done = false
        lattice.writeAsync({}, onComplete: { _ in done = true })
        spin("the queue to drain", file: file, line: line) { done }
    }

    // MARK: writeAsync

    func testWriteAsyncRunsLaterInAWriteAndCommits() throws {
        let lattice = try open()
        var ran = false, inWrite = false
        var result: [Error?] = []
        lattice.writeAsync({
            ran = true
            inWrite = lattice.isInWriteTransaction
            _ = try? lattice.create(AsyncNote.self, value: ["id": 1, "text": "one"])
        }, onComplete: { error in
            // The commit is visible to the handle when the completion runs.
            XCTAssertEqual(lattice.objects(AsyncNote.self).count, 1)
            XCTAssertFalse(lattice.isInWriteTransaction)
            result.append(error)
        })
        XCTAssertFalse(ran, "the block runs at a later turn, not inside writeAsync")
        XCTAssertTrue(lattice.isPerformingAsynchronousWriteOperations)
        XCTAssertEqual(lattice.objects(AsyncNote.self).count, 0)
        spin("the completion") { !result.isEmpty }
        XCTAssertTrue(inWrite)
        XCTAssertEqual(result.count, 1)
        XCTAssertNil(result.first.flatMap { $0 })
        XCTAssertFalse(lattice.isPerformingAsynchronousWriteOperations)
        XCTAssertEqual(texts(lattice), ["one"])
    }

    func testBlocksRunInTheOrderQueued() throws {
        let lattice = try open()
        var order: [String] = []
        for i in 1...3 {
            lattice.writeAsync({
                order.append("block \(i)")
                _ = try? lattice.create(AsyncNote.self, value: ["id": i, "text": "\(i)"])
                if i == 1 {
                    // Queued from inside a block: runs after those queued before it.
                    lattice.beginAsyncWrite {
                        order.append("nested")
                        _ = try? lattice.create(AsyncNote.self, value: ["id": 4, "text": "4"])
                        lattice.commitAsyncWrite()
                    }
                }
            }, onComplete: { error in
                XCTAssertNil(error)
                order.append("done \(i)")
            })
        }
        spin("every block") { order.contains("nested") }
        spin("the queue to empty") { !lattice.isPerformingAsynchronousWriteOperations }
        XCTAssertEqual(order.filter { !$0.hasPrefix("done") }, ["block 1", "block 2", "block 3", "nested"])
        XCTAssertEqual(order.filter { $0.hasPrefix("done") }, ["done 1", "done 2", "done 3"])
        XCTAssertEqual(texts(lattice), ["1", "2", "3", "4"])
    }

    func testObserversHearOfEachAsyncCommit() throws {
        let lattice = try open()
        var updates = 0
        let token = lattice.objects(AsyncNote.self).observe { change in
            if case .update = change { updates += 1 }
        }
        defer { token.invalidate() }
        var completed = 0
        for i in 1...2 {
            lattice.writeAsync({ _ = try? lattice.create(AsyncNote.self, value: ["id": i]) },
                               onComplete: { _ in completed += 1 })
        }
        spin("both updates") { updates == 2 && completed == 2 }
        XCTAssertEqual(lattice.objects(AsyncNote.self).count, 2)
    }

    func testBlockAddsUnmanagedObjectsAndChangesManagedOnes() throws {
        let lattice = try open()
        let existing = try lattice.write { try lattice.create(AsyncNote.self, value: ["id": 1, "text": "before"]) }
        let unmanaged = AsyncNote()
        unmanaged.id = 2
        unmanaged.text = "made outside"
        var done = false
        lattice.beginAsyncWrite {
            existing.text = "after"
            do { try lattice.add(unmanaged) } catch { XCTFail("\(error)") }
            lattice.commitAsyncWrite { error in
                XCTAssertNil(error)
                done = true
            }
        }
        spin("the completion") { done }
        XCTAssertEqual(texts(lattice), ["after", "made outside"])
        XCTAssertTrue(unmanaged.lattice === lattice)
    }

    func testBlockRunsOnTheLatestCommit() throws {
        let lattice = try open()
        _ = lattice.objects(AsyncNote.self).count  // a snapshot from before the other handle's commit
        var seen = -1
        var done = false
        lattice.writeAsync({
            seen = lattice.objects(AsyncNote.self).count
            _ = try? lattice.create(AsyncNote.self, value: ["id": 2])
        }, onComplete: { error in
            XCTAssertNil(error)
            done = true
        })
        let other = try open()
        try other.write { try other.create(AsyncNote.self, value: ["id": 1]) }
        spin("the completion") { done }
        XCTAssertEqual(seen, 1)
        XCTAssertEqual(lattice.objects(AsyncNote.self).count, 2)
    }

    func testWithAutorefreshOff() throws {
        let lattice = try open()
        lattice.autorefresh = false
        let results = lattice.objects(AsyncNote.self)
        XCTAssertEqual(results.count, 0)
        var done = false
        lattice.writeAsync({ _ = try? lattice.create(AsyncNote.self, value: ["id": 1]) }, onComplete: { _ in done = true })
        spin("the completion") { done }
        // The handle wrote the commit, so it sees it without a refresh.
        XCTAssertEqual(results.count, 1)
        XCTAssertFalse(lattice.refresh())
        XCTAssertEqual(results.count, 1)
    }

    // MARK: Cancelling

    func testCancelledBlockNeverRuns() throws {
        let lattice = try open()
        var ran = false, completed = false
        let id = lattice.writeAsync({
            ran = true
            _ = try? lattice.create(AsyncNote.self, value: ["id": 1])
        }, onComplete: { _ in completed = true })
        let other = lattice.beginAsyncWrite {
            ran = true
            lattice.commitAsyncWrite()
        }
        XCTAssertNotEqual(id, other)
        try lattice.cancelAsyncWrite(id)
        try lattice.cancelAsyncWrite(other)
        XCTAssertFalse(lattice.isPerformingAsynchronousWriteOperations)
        drain(lattice)
        XCTAssertFalse(ran)
        XCTAssertFalse(completed)
        XCTAssertEqual(lattice.objects(AsyncNote.self).count, 0)
    }

    func testCancellingAStartedOrUnknownIdDoesNothing() throws {
        let lattice = try open()
        var completed = false
        var id: AsyncTransactionId = 0
        id = lattice.writeAsync({
            // From inside its own block: the block has started, nothing to cancel.
            do { try lattice.cancelAsyncWrite(id) } catch { XCTFail("\(error)") }
            _ = try? lattice.create(AsyncNote.self, value: ["id": 1])
        }, onComplete: { _ in completed = true })
        XCTAssertNoThrow(try lattice.cancelAsyncWrite(id &+ 1000))
        spin("the completion") { completed }
        XCTAssertNoThrow(try lattice.cancelAsyncWrite(id))
        XCTAssertEqual(lattice.objects(AsyncNote.self).count, 1)
    }

    func testCancellingACommitsCompletionKeepsTheCommit() throws {
        let lattice = try open()
        try lattice.beginWrite()
        try lattice.create(AsyncNote.self, value: ["id": 1])
        let id = lattice.commitAsyncWrite { _ in XCTFail("cancelled completion called") }
        XCTAssertFalse(lattice.isInWriteTransaction)
        try lattice.cancelAsyncWrite(id)
        drain(lattice)
        XCTAssertEqual(lattice.objects(AsyncNote.self).count, 1)
        XCTAssertEqual(try open().objects(AsyncNote.self).count, 1)
    }

    // MARK: beginAsyncWrite and commitAsyncWrite

    func testBeginAsyncWriteCommittedByCommitAsyncWrite() throws {
        let lattice = try open()
        var result: [Error?] = []
        var returned = false
        lattice.beginAsyncWrite {
            _ = try? lattice.create(AsyncNote.self, value: ["id": 1, "text": "committed"])
            lattice.commitAsyncWrite { error in
                XCTAssertTrue(returned, "the completion is called later, not inside commitAsyncWrite")
                result.append(error)
            }
            // Committed already: the handle sees it, and is out of the write.
            XCTAssertFalse(lattice.isInWriteTransaction)
            XCTAssertEqual(lattice.objects(AsyncNote.self).count, 1)
            returned = true
        }
        spin("the completion") { !result.isEmpty }
        XCTAssertNil(result.first.flatMap { $0 })
        XCTAssertEqual(texts(lattice), ["committed"])
    }

    func testBeginAsyncWriteLeftOpenIsRolledBack() throws {
        let lattice = try open()
        var ran = false
        lattice.beginAsyncWrite {
            ran = true
            _ = try? lattice.create(AsyncNote.self, value: ["id": 1])
        }
        lattice.beginAsyncWrite {
            _ = try? lattice.create(AsyncNote.self, value: ["id": 2])
            lattice.commitAsyncWrite()
        }
        spin("the queue to empty") { !lattice.isPerformingAsynchronousWriteOperations }
        XCTAssertTrue(ran)
        XCTAssertFalse(lattice.isInWriteTransaction)
        XCTAssertEqual(lattice.objects(AsyncNote.self).map(\.id), [2])
    }

    func testCommitAsyncWriteOfASynchronousWrite() throws {
        let lattice = try open()
        try lattice.write { try lattice.create(AsyncNote.self, value: ["id": 1]) }
        try lattice.beginWrite()
        try lattice.create(AsyncNote.self, value: ["id": 2])
        var result: [Error?] = []
        lattice.commitAsyncWrite(allowGrouping: true) { result.append($0) }
        XCTAssertTrue(result.isEmpty)
        XCTAssertFalse(lattice.isInWriteTransaction)
        XCTAssertTrue(lattice.isPerformingAsynchronousWriteOperations)
        spin("the completion") { !result.isEmpty }
        XCTAssertNil(result.first.flatMap { $0 })
        XCTAssertEqual(try open().objects(AsyncNote.self).count, 2)
    }

    func testBlockMayCancelOrCommitItself() throws {
        let lattice = try open()
        var results: [Error?] = []
        lattice.writeAsync({
            _ = try? lattice.create(AsyncNote.self, value: ["id": 1])
            lattice.cancelWrite()
        }, onComplete: { results.append($0) })
        lattice.writeAsync({
            _ = try? lattice.create(AsyncNote.self, value: ["id": 2])
            lattice.cancelWrite()
            // A new transaction begun by the block is the one committed.
            try? lattice.beginWrite()
            _ = try? lattice.create(AsyncNote.self, value: ["id": 3])
        }, onComplete: { results.append($0) })
        lattice.writeAsync({
            _ = try? lattice.create(AsyncNote.self, value: ["id": 4])
            do { try lattice.commitWrite() } catch { XCTFail("\(error)") }
        }, onComplete: { results.append($0) })
        spin("three completions") { results.count == 3 }
        XCTAssertTrue(results.allSatisfy { $0 == nil })
        XCTAssertEqual(lattice.objects(AsyncNote.self).map(\.id).sorted(), [3, 4])
    }

    // MARK: Failures

    func testFailedCommitGoesToTheCompletion() throws {
        let lattice = try open()
        let note = try lattice.write { try lattice.create(AsyncNote.self, value: ["id": 1, "text": "kept"]) }
        var result: [Error?] = []
        lattice.writeAsync({
            note.text = "changed"
            note.id = 2  // a different primary key: the commit rolls back and throws
        }, onComplete: { result.append($0) })
        spin("the completion") { !result.isEmpty }
        XCTAssertEqual(firstError(result), .primaryKeyChanged(className: "AsyncNote", property: "id"))
        XCTAssertFalse(lattice.isInWriteTransaction)
        XCTAssertEqual(texts(lattice), ["kept"])
    }

    func testCommitAsyncWriteOutsideAWrite() throws {
        let lattice = try open()
        var result: [Error?] = []
        lattice.commitAsyncWrite { result.append($0) }
        XCTAssertTrue(result.isEmpty)
        spin("the completion") { !result.isEmpty }
        XCTAssertEqual(firstError(result), .notInWriteTransaction(operation: "commitAsyncWrite(allowGrouping:_:)"))
    }

    func testReadOnlyHandle() throws {
        do {
            let writable = try open()
            try writable.write { try writable.create(AsyncNote.self, value: ["id": 1]) }
        }
        let lattice = try open(readOnly: true)
        var result: [Error?] = []
        var ran = false
        lattice.beginAsyncWrite { ran = true }
        lattice.writeAsync({ ran = true }, onComplete: { result.append($0) })
        spin("the completion") { !result.isEmpty }
        XCTAssertFalse(ran)
        guard case .readOnly? = firstError(result) else {
            return XCTFail("expected a read-only error, got \(String(describing: result.first))")
        }
        XCTAssertFalse(lattice.isPerformingAsynchronousWriteOperations)
    }

    func testFrozenHandle() throws {
        let lattice = try open()
        let frozen = lattice.freeze()
        var result: [Error?] = []
        var ran = false
        let id = frozen.writeAsync({ ran = true }, onComplete: { result.append($0) })
        // No thread to deliver on later: at once.
        XCTAssertEqual(firstError(result), .frozen(operation: "writeAsync(_:onComplete:)"))
        XCTAssertEqual(id, 0)
        XCTAssertEqual(frozen.beginAsyncWrite { ran = true }, 0)
        frozen.commitAsyncWrite { result.append($0) }
        XCTAssertEqual(result.last.flatMap { $0 } as? LatticeError, .frozen(operation: "commitAsyncWrite(allowGrouping:_:)"))
        XCTAssertNoThrow(try frozen.cancelAsyncWrite(id))
        XCTAssertFalse(frozen.isPerformingAsynchronousWriteOperations)
        drain(lattice)
        XCTAssertFalse(ran)
    }

    // MARK: With synchronous writes

    func testSynchronousWriteWhileAsyncWritesWait() throws {
        let lattice = try open()
        var completed = 0
        for i in 1...2 {
            lattice.writeAsync({ _ = try? lattice.create(AsyncNote.self, value: ["id": i, "text": "async \(i)"]) },
                               onComplete: { _ in completed += 1 })
        }
        // Runs now; the queued blocks keep their turn afterwards.
        try lattice.write { try lattice.create(AsyncNote.self, value: ["id": 3, "text": "sync"]) }
        XCTAssertEqual(texts(lattice), ["sync"])
        // A rolled-back synchronous write leaves them queued too.
        try lattice.beginWrite()
        try lattice.create(AsyncNote.self, value: ["id": 4])
        lattice.cancelWrite()
        spin("both completions") { completed == 2 }
        XCTAssertEqual(texts(lattice), ["async 1", "async 2", "sync"])
    }

    func testBeginAsyncWriteInsideASynchronousWrite() throws {
        let lattice = try open()
        try lattice.beginWrite()
        try lattice.create(AsyncNote.self, value: ["id": 1])
        var done = false
        lattice.beginAsyncWrite {
            _ = try? lattice.create(AsyncNote.self, value: ["id": 2])
            lattice.commitAsyncWrite { _ in done = true }
        }
        // A turn while the write is open leaves the block queued.
        RunLoop.current.run(until: Date().addingTimeInterval(0.02))
        XCTAssertTrue(lattice.isInWriteTransaction)
        XCTAssertEqual(lattice.objects(AsyncNote.self).count, 1)
        try lattice.commitWrite()
        spin("the async commit") { done }
        XCTAssertEqual(lattice.objects(AsyncNote.self).count, 2)
    }

    func testInvalidateKeepsQueuedBlocks() throws {
        let lattice = try open()
        var done = false
        lattice.writeAsync({ _ = try? lattice.create(AsyncNote.self, value: ["id": 1]) }, onComplete: { _ in done = true })
        lattice.invalidate()
        spin("the completion") { done }
        XCTAssertEqual(lattice.objects(AsyncNote.self).count, 1)
    }

    // MARK: Lifetime and persistence

    func testCommitsPersistAfterReopening() throws {
        do {
            let lattice = try open()
            var done = false
            lattice.writeAsync({ _ = try? lattice.create(AsyncNote.self, value: ["id": 7, "text": "kept"]) },
                               onComplete: { _ in done = true })
            spin("the completion") { done }
        }
        let reopened = try open()
        XCTAssertEqual(texts(reopened), ["kept"])
    }

    func testQueuedBlocksHoldTheirHandleUntilTheyRan() throws {
        weak var weakHandle: Lattice?
        var done = false
        do {
            let lattice = try open()
            weakHandle = lattice
            lattice.writeAsync({ _ = try? lattice.create(AsyncNote.self, value: ["id": 1]) }, onComplete: { _ in done = true })
        }
        XCTAssertNotNil(weakHandle, "a queued block that uses its handle keeps it open")
        spin("the completion") { done }
        spin("the handle to close") { weakHandle == nil }
        XCTAssertEqual(try open().objects(AsyncNote.self).count, 1)
    }

    func testAReleasedHandleFinishesItsQueuedWork() throws {
        weak var weakHandle: Lattice?
        var ran = false, done = false
        do {
            let lattice = try open()
            weakHandle = lattice
            // Neither closure uses the handle: the queue itself keeps it open until the work is done.
            lattice.writeAsync({ ran = true }, onComplete: { _ in done = true })
        }
        XCTAssertNotNil(weakHandle)
        spin("the completion") { done }
        XCTAssertTrue(ran)
        spin("the handle to close") { weakHandle == nil }
        XCTAssertTrue(try Lattice.deleteFiles(for: database.configuration(types)))
    }

    func testAReleasedHandleWithCancelledWorkCloses() throws {
        weak var weakHandle: Lattice?
        var ran = false
        do {
            let lattice = try open()
            weakHandle = lattice
            let id = lattice.writeAsync({ ran = true }, onComplete: { _ in ran = true })
            try lattice.cancelAsyncWrite(id)
        }
        XCTAssertNil(weakHandle, "nothing queued: nothing holds the handle")
        drain(try open())
        XCTAssertFalse(ran)
    }

    // MARK: Other threads and actors

    func testHandleOfAThreadWithARunLoop() throws {
        let configuration = database.configuration(types)
        let finished = Locked<[String]>([])
        let thread = Thread {
            do {
                let lattice = try Lattice(configuration: configuration)
                var done = false
                lattice.writeAsync({
                    XCTAssertFalse(Thread.isMainThread)
                    _ = try? lattice.create(AsyncNote.self, value: ["id": 1, "text": "thread"])
                }, onComplete: { error in
                    XCTAssertNil(error)
                    done = true
                })
                let deadline = Date().addingTimeInterval(20)
                while !done && Date() < deadline { RunLoop.current.run(until: Date().addingTimeInterval(0.005)) }
                finished.withLock { $0.append(done ? "done" : "timed out") }
            } catch {
                finished.withLock { $0.append("\(error)") }
            }
        }
        thread.start()
        spin("the thread") { !finished.withLock { $0.isEmpty } }
        XCTAssertEqual(finished.withLock { $0 }, ["done"])
        XCTAssertEqual(texts(try open()), ["thread"])
    }

    /// Another thread holds the writer lock when the block's turn comes: the handle's thread goes on
    /// turning its run loop meanwhile, and the block runs once the lock was released, on that commit.
    func testAnotherThreadsWriteDoesNotBlockTheRunLoop() throws {
        let configuration = database.configuration(types)
        let state = Locked<String>("starting")
        let release = DispatchSemaphore(value: 0)
        let writer = Thread {
            do {
                let lattice = try Lattice(configuration: configuration)
                try lattice.beginWrite()
                try lattice.create(AsyncNote.self, value: ["id": 1, "text": "other thread"])
                state.withLock { $0 = "writing" }
                // Commits when told (or after 20 s, so that a failed test never leaves the lock held).
                _ = release.wait(timeout: .now() + 20)
                try lattice.commitWrite()
                state.withLock { $0 = "committed" }
            } catch {
                state.withLock { $0 = "\(error)" }
            }
        }
        writer.start()
        spin("the other thread's write") { state.withLock { $0 } != "starting" }
        XCTAssertEqual(state.withLock { $0 }, "writing")
        let lattice = try open()
        var seen: [String]?
        var done = false
        lattice.writeAsync({
            seen = lattice.objects(AsyncNote.self).map(\.text)
            _ = try? lattice.create(AsyncNote.self, value: ["id": 2, "text": "async"])
        }, onComplete: { error in
            XCTAssertNil(error)
            done = true
        })
        // Queued behind the block's turn on the main queue: runs only if that turn did not wait for the lock.
        let later = Locked(false)
        DispatchQueue.main.async { later.withLock { $0 = true } }
        spin("the main queue") { later.withLock { $0 } }
        XCTAssertNil(seen, "the block waits for the lock")
        XCTAssertTrue(lattice.isPerformingAsynchronousWriteOperations)
        release.signal()
        spin("the completion") { done }
        XCTAssertEqual(seen, ["other thread"])
        XCTAssertEqual(texts(lattice), ["other thread", "async"])
        spin("the other thread") { state.withLock { $0 } == "committed" }
    }

    /// The same with another process holding the writer lock (its `flock`).
    func testAnotherProcesssWriteDoesNotBlockTheRunLoop() throws {
        signal(SIGPIPE, SIG_IGN)
        let lattice = try Lattice(configuration: database.configuration([MultiProcessItem.self, MultiProcessCounter.self]))
        try lattice.write { try lattice.add(makeItem(id: 1, size: 10)) }
        let writer = try Helper(["hold-write", database.path])
        XCTAssertEqual(try writer.readLine(), "writing")
        var result: [Error?] = []
        lattice.writeAsync({
            do { try lattice.add(makeItem(id: 2, size: 10)) } catch { XCTFail("\(error)") }
        }, onComplete: { result.append($0) })
        let later = Locked(false)
        DispatchQueue.main.async { later.withLock { $0 = true } }
        spin("the main queue") { later.withLock { $0 } }
        XCTAssertTrue(result.isEmpty, "the block waits for the other process")
        writer.closeInput()  // the other process rolls back and exits
        try writer.waitForSuccess()
        spin("the completion") { !result.isEmpty }
        XCTAssertNil(result.first.flatMap { $0 })
        XCTAssertEqual(lattice.objects(MultiProcessItem.self).count, 2)
    }

    func testActorConfinedHandle() async throws {
        let store = try await AsyncWriteStore(configuration: database.configuration(types))
        let error = await store.write(id: 5, text: "actor")
        XCTAssertNil(error)
        let count = await store.count
        XCTAssertEqual(count, 1)
    }
}

/// An actor with a handle of its own, writing through `writeAsync`.
private actor AsyncWriteStore {
    private var lattice: Lattice?

    init(configuration: Lattice.Configuration) async throws {
        lattice = nil
        lattice = try await Lattice(configuration: configuration, actor: self)
    }

    var count: Int { lattice?.objects(AsyncNote.self).count ?? -1 }

    /// Queues a write and waits for its completion; the error's description, or nil.
    func write(id: Int, text: String) async -> String? {
        guard let lattice else { return "no handle" }
        return await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
            lattice.writeAsync({
                _ = try? lattice.create(AsyncNote.self, value: ["id": id, "text": text])
            }, onComplete: { error in
                continuation.resume(returning: error.map { "\($0)" })
            })
        }
    }
}
