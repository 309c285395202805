import Foundation
import Synchronization
import XCTest
@testable import Lattice

/// A write transaction belongs to the thread that began it; handles and their environment open and close
/// safely from many threads at once.
final class WriterOwnershipTests: XCTestCase {
    /// `commitWrite()` from another thread (what an actor method after an `await` can do) throws
    /// `wrongThread` and leaves the transaction intact for its own thread, which can still commit it.
    func testCommitFromAnotherThreadThrowsAndTheOwnerCanStillCommit() throws {
        let db = makeTempDatabase("owner")
        let lattice = try db.open([FixtureItem.self])
        try lattice.beginWrite()
        let item = FixtureItem()
        item.name = "kept"
        try lattice.add(item)
        // Lattice handles are not Sendable; the other thread only calls the commit under test while this
        // thread waits, so the handle is never used by two threads at once.
        nonisolated(unsafe) let shared = lattice
        let results = Mutex<[LatticeError?]>([])
        let done = DispatchSemaphore(value: 0)
        Thread {
            func error(_ body: () throws -> Void) -> LatticeError? {
                do { try body(); return nil } catch { return error as? LatticeError }
            }
            results.withLock { $0.append(error { try shared.commitWrite() }) }
            results.withLock { $0.append(error { try shared.create(FixtureItem.self, value: ["id": 2, "name": "other"]) }) }
            done.signal()
        }.start()
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(results.withLock { $0 }, [.wrongThread(operation: "commitWrite()"),
                                                  .wrongThread(operation: "create(_:value:)")])
        XCTAssertTrue(lattice.isInWriteTransaction)
        try lattice.commitWrite()
        let reopened = try db.open([FixtureItem.self])
        XCTAssertEqual(reopened.objects(FixtureItem.self).map(\.name), ["kept"])
    }

    /// A second handle opened on the writing thread (Realm would hand back the same instance) sees the
    /// state before the write and cannot begin one of its own; the first handle's write is unharmed.
    func testASecondHandleOnTheWritingThreadCannotWrite() throws {
        let db = makeTempDatabase("second-handle")
        let lattice = try db.open([FixtureItem.self])
        try lattice.write {
            _ = try lattice.create(FixtureItem.self, value: ["id": 1, "name": "first"])
            let second = try db.open([FixtureItem.self])
            XCTAssertEqual(second.objects(FixtureItem.self).count, 0, "its snapshot is not the write")
            assertLatticeError(try second.beginWrite(), .alreadyInWriteTransaction)
            assertLatticeError(try second.create(FixtureItem.self, value: ["id": 2]),
                               .notInWriteTransaction(operation: "create(_:value:)"))
            XCTAssertFalse(second.isInWriteTransaction)
        }
        XCTAssertEqual(try db.open([FixtureItem.self]).objects(FixtureItem.self).map(\.name), ["first"])
    }

    /// Threads opening and closing handles on one file at once never see a half-closed environment
    /// (LMDB forbids two environments on one file in a process) and lose no write.
    func testOpeningWhileAnotherHandleClosesIsSafe() throws {
        let db = makeTempDatabase("owner")
        let config = db.configuration([FixtureItem.self])
        let failures = Mutex<[String]>([])
        let group = DispatchGroup()
        for thread in 0..<4 {
            group.enter()
            Thread {
                defer { group.leave() }
                for round in 0..<60 {
                    do {
                        let lattice = try Lattice(configuration: config)
                        try lattice.write {
                            let item = FixtureItem()
                            item.id = thread * 1_000 + round
                            item.name = "\(thread)-\(round)"
                            try lattice.add(item)
                        }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }.start()
        }
        XCTAssertEqual(group.wait(timeout: .now() + 120), .success)
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertFalse(Environment.isOpen(path: try storagePath(of: db)))
        XCTAssertEqual(try db.open([FixtureItem.self]).objects(FixtureItem.self).count, 240)
    }

    /// Every handle takes its reader slot when it opens: a full reader table fails the open with a typed
    /// error, and handles already open keep reading.
    func testReaderSlotIsTakenAtOpen() throws {
        let db = makeTempDatabase("owner")
        var config = db.configuration([FixtureItem.self])
        config.maxReaders = 2
        let first = try Lattice(configuration: config)
        let second = try Lattice(configuration: config)  // neither has read anything yet
        guard case .storage(_, _, let message)? = latticeError(try Lattice(configuration: config)) else {
            return XCTFail("a third handle must not open")
        }
        XCTAssertTrue(message.contains("reader slot"), message)
        XCTAssertEqual(first.objects(FixtureItem.self).count, 0)
        XCTAssertEqual(second.objects(FixtureItem.self).count, 0)
    }
}
