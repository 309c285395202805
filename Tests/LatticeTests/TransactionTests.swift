import Foundation
import XCTest
@testable import Lattice

final class TransactionCounter: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted var value = 0
    @Persisted var label: String?
}

final class TransactionTests: XCTestCase {
    private struct Boom: Error, Equatable { let code: Int }

    private func counter(_ name: String, _ value: Int) -> TransactionCounter {
        TransactionTests.makeCounter(name, value)
    }

    fileprivate static func makeCounter(_ name: String, _ value: Int) -> TransactionCounter {
        let c = TransactionCounter()
        c.name = name
        c.value = value
        return c
    }

    private func open(_ db: TempDatabase) throws -> Lattice { try db.open([TransactionCounter.self]) }

    private func value(_ lattice: Lattice, _ name: String) -> Int? {
        lattice.object(ofType: TransactionCounter.self, forPrimaryKey: name)?.value
    }

    // MARK: write {}

    func testWriteReturnsTheBlocksValue() throws {
        let db = makeTempDatabase("txn")
        let lattice = try open(db)
        let number = try lattice.write { 42 }
        XCTAssertEqual(number, 42)
        let created = try lattice.write { () -> TransactionCounter in
            let c = counter("a", 1)
            try lattice.add(c)
            return c
        }
        XCTAssertTrue(created.lattice === lattice)
        XCTAssertEqual(created.value, 1)
        let text: String? = try lattice.write { nil }
        XCTAssertNil(text)
        XCTAssertFalse(lattice.isInWriteTransaction)
    }

    func testThrowingBlockRollsBackAndRethrows() throws {
        let db = makeTempDatabase("txn")
        do {
            let lattice = try open(db)
            try lattice.write { try lattice.add(counter("kept", 1)) }
            let kept = try XCTUnwrap(lattice.object(ofType: TransactionCounter.self, forPrimaryKey: "kept"))
            let added = counter("rolledBack", 2)
            XCTAssertThrowsError(try lattice.write {
                try lattice.add(added)
                kept.value = 100
                kept.label = "changed"
                XCTAssertTrue(lattice.isInWriteTransaction)
                throw Boom(code: 7)
            }) { error in
                XCTAssertEqual(error as? Boom, Boom(code: 7))
            }
            XCTAssertFalse(lattice.isInWriteTransaction)
            XCTAssertEqual(kept.value, 1, "the managed object reads the rolled-back state")
            XCTAssertNil(kept.label)
            XCTAssertNil(lattice.object(ofType: TransactionCounter.self, forPrimaryKey: "rolledBack"))
            XCTAssertTrue(added.isInvalidated, "an object added in a rolled-back write is gone")
            XCTAssertEqual(lattice.objects(TransactionCounter.self).count, 1)
            // The handle keeps working.
            try lattice.write { kept.value = 2 }
        }
        let lattice = try open(db)
        XCTAssertEqual(lattice.objects(TransactionCounter.self).count, 1)
        XCTAssertEqual(value(lattice, "kept"), 2)
    }

    // MARK: beginWrite / commitWrite / cancelWrite

    func testBeginCommitAndCancel() throws {
        let db = makeTempDatabase("txn")
        do {
            let lattice = try open(db)
            XCTAssertFalse(lattice.isInWriteTransaction)
            try lattice.beginWrite()
            XCTAssertTrue(lattice.isInWriteTransaction)
            try lattice.add(counter("committed", 1))
            try lattice.commitWrite()
            XCTAssertFalse(lattice.isInWriteTransaction)

            let committed = try XCTUnwrap(lattice.object(ofType: TransactionCounter.self, forPrimaryKey: "committed"))
            let cancelled = counter("cancelled", 2)
            try lattice.beginWrite()
            try lattice.add(cancelled)
            committed.value = 50
            try lattice.delete(committed)
            XCTAssertTrue(committed.isInvalidated)
            lattice.cancelWrite()
            XCTAssertFalse(lattice.isInWriteTransaction)
            XCTAssertFalse(committed.isInvalidated, "the delete was cancelled")
            XCTAssertEqual(committed.value, 1)
            XCTAssertTrue(cancelled.isInvalidated)
            XCTAssertEqual(lattice.objects(TransactionCounter.self).count, 1)
        }
        let lattice = try open(db)
        XCTAssertEqual(lattice.objects(TransactionCounter.self).count, 1)
        XCTAssertEqual(value(lattice, "committed"), 1)
        XCTAssertNil(value(lattice, "cancelled"))
    }

    func testCommitOrCancelInsideWriteBlock() throws {
        let db = makeTempDatabase("txn")
        do {
            let lattice = try open(db)
            let five = try lattice.write { () -> Int in
                try lattice.add(counter("early", 1))
                try lattice.commitWrite()
                XCTAssertFalse(lattice.isInWriteTransaction)
                return 5
            }
            XCTAssertEqual(five, 5)
            let six = try lattice.write { () -> Int in
                try lattice.add(counter("dropped", 1))
                lattice.cancelWrite()
                return 6
            }
            XCTAssertEqual(six, 6)
        }
        let lattice = try open(db)
        XCTAssertEqual(value(lattice, "early"), 1)
        XCTAssertNil(value(lattice, "dropped"))
    }

    func testNestedWritesThrowAlreadyInWriteTransaction() throws {
        let db = makeTempDatabase("txn")
        do {
            let lattice = try open(db)
            try lattice.beginWrite()
            try lattice.add(counter("outer", 1))
            assertLatticeError(try lattice.beginWrite(), .alreadyInWriteTransaction)
            assertLatticeError(try lattice.write { try lattice.add(self.counter("inner", 2)) }, .alreadyInWriteTransaction)
            XCTAssertTrue(lattice.isInWriteTransaction, "the outer transaction is still open")
            try lattice.commitWrite()
            // A nested write whose error escapes rolls the outer write back.
            assertLatticeError(try lattice.write {
                try lattice.add(self.counter("outer2", 1))
                try lattice.write { }
            }, .alreadyInWriteTransaction)
            XCTAssertFalse(lattice.isInWriteTransaction)
        }
        let lattice = try open(db)
        XCTAssertEqual(value(lattice, "outer"), 1)
        XCTAssertNil(value(lattice, "inner"))
        XCTAssertNil(value(lattice, "outer2"))
    }

    func testInvalidateCancelsAnOpenWrite() throws {
        let db = makeTempDatabase("txn")
        do {
            let lattice = try open(db)
            try lattice.beginWrite()
            try lattice.add(counter("never", 1))
            lattice.invalidate()
            XCTAssertFalse(lattice.isInWriteTransaction)
            XCTAssertEqual(lattice.objects(TransactionCounter.self).count, 0)
            try lattice.write { try lattice.add(self.counter("later", 2)) }  // the writer lock was released
        }
        let lattice = try open(db)
        XCTAssertNil(value(lattice, "never"))
        XCTAssertEqual(value(lattice, "later"), 2)
    }

    func testAFailedCommitDoesNotPoisonTheNextWrite() throws {
        let db = makeTempDatabase("txn")
        let lattice = try open(db)
        try lattice.write { try lattice.add(counter("a", 1)) }
        let a = try XCTUnwrap(lattice.object(ofType: TransactionCounter.self, forPrimaryKey: "a"))
        assertLatticeError(try lattice.write { a.name = "b" }, .primaryKeyChanged(className: "TransactionCounter", property: "name"))
        try lattice.write { a.value = 2 }
        XCTAssertEqual(a.value, 2)
        // A setter error followed by cancelWrite: the error is dropped with the transaction.
        try lattice.beginWrite()
        a.name = "c"
        lattice.cancelWrite()
        try lattice.write { a.value = 3 }
        XCTAssertEqual(try open(db).object(ofType: TransactionCounter.self, forPrimaryKey: "a")?.value, 3)
    }

    // MARK: W7: the writing handle sees its writes at once

    func testWritesAreVisibleImmediatelyInsideTheTransaction() throws {
        let db = makeTempDatabase("txn")
        let lattice = try open(db)
        try lattice.write { try lattice.add(counter("a", 1)) }
        let a = try XCTUnwrap(lattice.object(ofType: TransactionCounter.self, forPrimaryKey: "a"))
        let aAgain = try XCTUnwrap(lattice.object(ofType: TransactionCounter.self, forPrimaryKey: "a"))
        let results = lattice.objects(TransactionCounter.self)
        XCTAssertEqual(results.count, 1)
        try lattice.write {
            a.value = 10
            XCTAssertEqual(a.value, 10)
            XCTAssertEqual(aAgain.value, 10, "another instance sees the uncommitted write")
            XCTAssertEqual(lattice.object(ofType: TransactionCounter.self, forPrimaryKey: "a")?.value, 10)
            a.label = "x"
            a.label = nil
            XCTAssertNil(aAgain.label)

            try lattice.add(counter("b", 2))
            XCTAssertEqual(results.count, 2, "results are live inside the write")
            XCTAssertEqual(Set(results.map(\.name)), ["a", "b"])
            XCTAssertEqual(lattice.object(ofType: TransactionCounter.self, forPrimaryKey: "b")?.value, 2)
            try lattice.delete(aAgain)
            XCTAssertEqual(results.count, 1)
            XCTAssertEqual(results.first?.name, "b")
            XCTAssertTrue(a.isInvalidated)
        }
        XCTAssertEqual(results.count, 1)
        XCTAssertEqual(results[0].name, "b")
    }

    func testAHandleSeesItsOwnCommitAfterHavingReadBefore() throws {
        let db = makeTempDatabase("txn")
        let lattice = try open(db)
        lattice.autorefresh = false
        XCTAssertEqual(lattice.objects(TransactionCounter.self).count, 0)  // opens the read snapshot
        XCTAssertNil(lattice.object(ofType: TransactionCounter.self, forPrimaryKey: "a"))
        try lattice.write { try lattice.add(counter("a", 1)) }
        XCTAssertEqual(lattice.objects(TransactionCounter.self).count, 1, "its own write moves the handle")
        XCTAssertEqual(value(lattice, "a"), 1)
        let a = try XCTUnwrap(lattice.object(ofType: TransactionCounter.self, forPrimaryKey: "a"))
        try lattice.write { a.value = 2 }
        XCTAssertEqual(a.value, 2)
        XCTAssertEqual(value(lattice, "a"), 2)
        try lattice.write { try lattice.delete(a) }
        XCTAssertNil(value(lattice, "a"))
        XCTAssertEqual(lattice.objects(TransactionCounter.self).count, 0)
    }

    // MARK: Writers on several threads

    func testConcurrentWritersOnSeparateThreadsLoseNothing() throws {
        let db = makeTempDatabase("txn")
        let config = db.configuration([TransactionCounter.self])
        do {
            let lattice = try Lattice(configuration: config)
            try lattice.write { try lattice.add(self.counter("shared", 0)) }
        }
        let threads = 4
        let rounds = 50
        let failures = Locked<[String]>([])
        let group = DispatchGroup()
        for t in 0..<threads {
            group.enter()
            Thread {
                defer { group.leave() }
                do {
                    // One handle per thread: a handle is not Sendable.
                    let lattice = try Lattice(configuration: config)
                    for round in 0..<rounds {
                        try lattice.write {
                            // Read-modify-write: correct only if writers are serialized and each sees the latest commit.
                            let shared = lattice.object(ofType: TransactionCounter.self, forPrimaryKey: "shared")!
                            shared.value += 1
                            let own = TransactionCounter()
                            own.name = "t\(t)-\(round)"
                            own.value = round
                            try lattice.add(own)
                        }
                    }
                } catch {
                    failures.withLock { $0.append("thread \(t): \(error)") }
                }
            }.start()
        }
        group.wait()
        XCTAssertEqual(failures.withLock { $0 }, [])
        let lattice = try Lattice(configuration: config)
        XCTAssertEqual(lattice.object(ofType: TransactionCounter.self, forPrimaryKey: "shared")?.value, threads * rounds)
        XCTAssertEqual(lattice.objects(TransactionCounter.self).count, threads * rounds + 1)
    }

    /// A thread can hold one LMDB write transaction per file: a second handle's write on the same thread
    /// must throw instead of waiting forever for the thread's own write lock. Runs on its own thread so a
    /// regression fails the test instead of hanging the run.
    func testASecondHandleCannotBeginAWriteOnTheSameThread() throws {
        let db = makeTempDatabase("txn")
        let config = db.configuration([TransactionCounter.self])
        let outcome = Locked<[String]>([])
        let done = DispatchSemaphore(value: 0)
        Thread {
            defer { done.signal() }
            func note(_ text: String) { outcome.withLock { $0.append(text) } }
            do {
                let a = try Lattice(configuration: config)
                let b = try Lattice(configuration: config)
                try a.beginWrite()
                try a.add(TransactionTests.makeCounter("a", 1))
                do {
                    try b.beginWrite()
                    note("b began a write")
                } catch let error as LatticeError {
                    note("b: \(error == .alreadyInWriteTransaction ? "alreadyInWriteTransaction" : "\(error)")")
                }
                do {
                    try b.write { try b.add(TransactionTests.makeCounter("b", 2)) }
                    note("b wrote")
                } catch let error as LatticeError {
                    note("b.write: \(error == .alreadyInWriteTransaction ? "alreadyInWriteTransaction" : "\(error)")")
                }
                // Opening another handle that must write metadata (a new schema version) fails the same way.
                var newer = config
                newer.schemaVersion = 1
                do {
                    _ = try Lattice(configuration: newer)
                    note("opened at version 1")
                } catch let error as LatticeError {
                    note("open: \(error == .alreadyInWriteTransaction ? "alreadyInWriteTransaction" : "\(error)")")
                }
                try a.commitWrite()
                try b.write { try b.add(TransactionTests.makeCounter("b", 2)) }
                note("b wrote after a committed")
            } catch {
                note("unexpected: \(error)")
            }
        }.start()
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success, "a second write on the same thread hung")
        XCTAssertEqual(outcome.withLock { $0 }, [
            "b: alreadyInWriteTransaction",
            "b.write: alreadyInWriteTransaction",
            "open: alreadyInWriteTransaction",
            "b wrote after a committed",
        ])
        let lattice = try open(db)
        XCTAssertEqual(value(lattice, "a"), 1)
        XCTAssertEqual(value(lattice, "b"), 2)
    }

    func testClosingAHandleInsideAWriteRollsBackAndReleasesTheWriter() throws {
        let db = makeTempDatabase("txn")
        do {
            let lattice = try open(db)
            try lattice.write { try lattice.add(self.counter("kept", 1)) }
            try lattice.beginWrite()
            try lattice.add(counter("abandoned", 2))
            lattice.object(ofType: TransactionCounter.self, forPrimaryKey: "kept")!.value = 99
        }
        // Another thread must be able to write: the writer locks were released with the handle.
        let config = db.configuration([TransactionCounter.self])
        let done = DispatchSemaphore(value: 0)
        let failure = Locked<String?>(nil)
        Thread {
            do {
                let lattice = try Lattice(configuration: config)
                try lattice.write { try lattice.add(TransactionTests.makeCounter("fromThread", 3)) }
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
            done.signal()
        }.start()
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success, "the writer lock was not released")
        XCTAssertNil(failure.withLock { $0 })
        let lattice = try open(db)
        XCTAssertEqual(value(lattice, "kept"), 1)
        XCTAssertNil(value(lattice, "abandoned"))
        XCTAssertEqual(value(lattice, "fromThread"), 3)
    }

    func testCancellingADeleteAllRestoresEverything() throws {
        let db = makeTempDatabase("txn")
        let lattice = try open(db)
        try lattice.write { try lattice.add(contentsOf: (0..<10).map { self.counter("c\($0)", $0) }) }
        let c3 = try XCTUnwrap(lattice.object(ofType: TransactionCounter.self, forPrimaryKey: "c3"))
        try lattice.beginWrite()
        try lattice.deleteAll()
        XCTAssertTrue(lattice.isEmpty)
        XCTAssertTrue(c3.isInvalidated)
        lattice.cancelWrite()
        XCTAssertEqual(lattice.objects(TransactionCounter.self).count, 10)
        XCTAssertFalse(c3.isInvalidated)
        XCTAssertEqual(c3.value, 3)
        XCTAssertEqual(try open(db).objects(TransactionCounter.self).count, 10)
    }

    // MARK: asyncWrite

    func testAsyncWriteCommitsAndRollsBack() async throws {
        let db = makeTempDatabase("txn")
        let lattice = try open(db)
        let result = try await lattice.asyncWrite { () -> Int in
            try lattice.add(self.counter("async", 1))
            return 11
        }
        XCTAssertEqual(result, 11)
        do {
            try await lattice.asyncWrite {
                try lattice.add(self.counter("async2", 2))
                throw Boom(code: 1)
            }
            XCTFail("asyncWrite should rethrow")
        } catch {
            XCTAssertEqual(error as? Boom, Boom(code: 1))
        }
        XCTAssertFalse(lattice.isInWriteTransaction)
        XCTAssertEqual(value(lattice, "async"), 1)
        XCTAssertNil(value(lattice, "async2"))
    }
}
