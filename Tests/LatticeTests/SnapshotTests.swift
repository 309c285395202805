import Foundation
import XCTest
@testable import Lattice

final class SnapshotNote: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var text = ""
    @Persisted var payload = Data()
}

final class SnapshotShelf: Object {
    @Persisted var name = ""
    @Persisted var notes: List<SnapshotNote>
}

/// Two handles on one file in one process: each reads one consistent snapshot.
final class SnapshotTests: XCTestCase {
    private func note(_ id: Int, _ text: String) -> SnapshotNote {
        let n = SnapshotNote()
        n.id = id
        n.text = text
        return n
    }

    /// A file with notes 1 and 2 and two handles on it; `a` has its snapshot open.
    private func twoHandles(initialMapSize: Int = 8 << 20) throws -> (TempDatabase, Lattice, Lattice) {
        let db = makeTempDatabase("snapshot")
        let config = db.configuration([SnapshotNote.self], initialMapSize: initialMapSize)
        let a = try Lattice(configuration: config)
        try a.write { try a.add(contentsOf: [self.note(1, "one"), self.note(2, "two")]) }
        let b = try Lattice(configuration: config)
        XCTAssertEqual(a.objects(SnapshotNote.self).count, 2)
        XCTAssertEqual(b.objects(SnapshotNote.self).count, 2)
        return (db, a, b)
    }

    func testAHandleKeepsItsSnapshotUntilRefresh() throws {
        let (_, a, b) = try twoHandles()
        let resultsA = a.objects(SnapshotNote.self)
        let oneA = try XCTUnwrap(a.object(ofType: SnapshotNote.self, forPrimaryKey: 1))
        let twoA = try XCTUnwrap(a.object(ofType: SnapshotNote.self, forPrimaryKey: 2))
        XCTAssertEqual(oneA.text, "one")

        try b.write {
            try b.add(self.note(3, "three"))
            b.object(ofType: SnapshotNote.self, forPrimaryKey: 1)!.text = "one, changed by b"
            try b.delete(b.object(ofType: SnapshotNote.self, forPrimaryKey: 2)!)
        }
        XCTAssertEqual(b.objects(SnapshotNote.self).count, 2)

        // a still sees the old state, through every kind of read.
        XCTAssertEqual(resultsA.count, 2)
        XCTAssertEqual(a.objects(SnapshotNote.self).count, 2)
        XCTAssertEqual(resultsA.map(\.id), [1, 2])
        XCTAssertEqual(oneA.text, "one")
        XCTAssertFalse(twoA.isInvalidated)
        XCTAssertEqual(twoA.text, "two")
        XCTAssertNil(a.object(ofType: SnapshotNote.self, forPrimaryKey: 3))
        XCTAssertEqual(a.object(ofType: SnapshotNote.self, forPrimaryKey: 1)?.text, "one")

        XCTAssertTrue(a.refresh())
        XCTAssertEqual(resultsA.count, 2)
        XCTAssertEqual(resultsA.map(\.id), [1, 3])
        XCTAssertEqual(oneA.text, "one, changed by b")
        XCTAssertTrue(twoA.isInvalidated)
        XCTAssertEqual(a.object(ofType: SnapshotNote.self, forPrimaryKey: 3)?.text, "three")
        XCTAssertFalse(a.refresh(), "nothing new since the last refresh")
    }

    func testUncommittedWritesOfAnotherHandleAreInvisible() throws {
        let (_, a, b) = try twoHandles()
        try b.beginWrite()
        try b.add(note(3, "three"))
        b.object(ofType: SnapshotNote.self, forPrimaryKey: 1)!.text = "draft"
        XCTAssertEqual(b.objects(SnapshotNote.self).count, 3)
        XCTAssertFalse(a.refresh())
        XCTAssertEqual(a.objects(SnapshotNote.self).count, 2)
        XCTAssertEqual(a.object(ofType: SnapshotNote.self, forPrimaryKey: 1)?.text, "one")
        b.cancelWrite()
        XCTAssertFalse(a.refresh())
        XCTAssertEqual(b.objects(SnapshotNote.self).count, 2)
        XCTAssertEqual(b.object(ofType: SnapshotNote.self, forPrimaryKey: 1)?.text, "one")
    }

    func testRefreshInsideAWriteDoesNothing() throws {
        let (_, a, b) = try twoHandles()
        try a.write {
            XCTAssertFalse(a.refresh())
            try a.add(self.note(3, "three"))
        }
        XCTAssertTrue(b.refresh())
        XCTAssertEqual(b.objects(SnapshotNote.self).count, 3)
    }

    func testBeginningAWriteMovesToTheLatestCommit() throws {
        let (_, a, b) = try twoHandles()
        a.autorefresh = false
        try b.write { try b.add(self.note(3, "three")) }
        XCTAssertEqual(b.objects(SnapshotNote.self).count, 3, "b's next snapshot starts after its own commit")
        XCTAssertEqual(a.objects(SnapshotNote.self).count, 2)
        try a.write {
            XCTAssertEqual(a.objects(SnapshotNote.self).count, 3, "a write transaction always works on the latest commit")
            assertLatticeError(try a.add(self.note(3, "again")), .duplicatePrimaryKey(className: "SnapshotNote", value: "3"))
            try a.add(self.note(4, "four"))
        }
        XCTAssertEqual(a.objects(SnapshotNote.self).map(\.id), [1, 2, 3, 4])
        XCTAssertEqual(b.objects(SnapshotNote.self).count, 3)
        XCTAssertTrue(b.refresh())
        XCTAssertEqual(b.objects(SnapshotNote.self).count, 4)
    }

    func testInvalidateMakesEarlierObjectsInvalid() throws {
        let (_, a, b) = try twoHandles()
        let results = a.objects(SnapshotNote.self)
        let one = try XCTUnwrap(a.object(ofType: SnapshotNote.self, forPrimaryKey: 1))
        let first = try XCTUnwrap(results.first)
        try b.write { try b.add(self.note(3, "three")) }
        a.invalidate()
        XCTAssertTrue(one.isInvalidated)
        XCTAssertTrue(first.isInvalidated)
        XCTAssertEqual(one.description, "SnapshotNote { invalidated }")
        assertLatticeError(try a.write { try a.delete(one) }, .objectInvalidated(className: "SnapshotNote"))
        // Results stay usable and read the latest commit; new instances are valid.
        XCTAssertEqual(results.count, 3)
        XCTAssertEqual(results.map(\.id), [1, 2, 3])
        let oneAgain = try XCTUnwrap(a.object(ofType: SnapshotNote.self, forPrimaryKey: 1))
        XCTAssertFalse(oneAgain.isInvalidated)
        XCTAssertEqual(oneAgain.text, "one")
        XCTAssertEqual(oneAgain, one, "still the same stored object")
        a.invalidate()
        a.invalidate()  // harmless when nothing is open
        XCTAssertEqual(a.objects(SnapshotNote.self).count, 3)
    }

    /// The map never moves under an open snapshot: a write that needs a larger map waits for this
    /// process's snapshots to end and, when one stays open, fails cleanly (nothing committed), the
    /// snapshot still reading its data; once the snapshot is released the same write succeeds.
    func testGrowthWaitsForSnapshotsAndNeverMovesTheMapUnderOne() throws {
        let db = makeTempDatabase("snapshot")
        var config = db.configuration([SnapshotNote.self], initialMapSize: 64 << 10)
        config.growthWaitSeconds = 1
        let a = try Lattice(configuration: config)
        try a.write { try a.add(contentsOf: [self.note(1, "one"), self.note(2, "two")]) }
        let b = try Lattice(configuration: config)
        let one = try XCTUnwrap(a.object(ofType: SnapshotNote.self, forPrimaryKey: 1))
        XCTAssertEqual(a.objects(SnapshotNote.self).count, 2)
        let sizeBefore = b.env.mapSize
        let chunk = Data(repeating: 0x5A, count: 64 << 10)
        func bigWrite() throws {
            try b.write {
                for id in 100..<260 {  // about 10 MB: far more than the map holds
                    let n = self.note(id, "big \(id)")
                    n.payload = chunk
                    try b.add(n)
                }
                b.object(ofType: SnapshotNote.self, forPrimaryKey: 1)!.text = "after growth"
            }
        }
        let error = latticeError(try bigWrite())
        guard case let .storage(_, code, message)? = error else { return XCTFail("expected a storage error, got \(String(describing: error))") }
        XCTAssertEqual(code, EBUSY)
        XCTAssertTrue(message.contains("read snapshot"), message)
        XCTAssertEqual(b.env.mapSize, sizeBefore, "the map did not move under a's snapshot")
        XCTAssertEqual(one.text, "one")
        XCTAssertEqual(a.objects(SnapshotNote.self).count, 2)
        XCTAssertEqual(b.objects(SnapshotNote.self).count, 2, "the failed write committed nothing")

        a.invalidate()  // releases a's snapshot: now the map may grow
        try bigWrite()
        XCTAssertGreaterThan(b.env.mapSize, 8 << 20)
        XCTAssertEqual(a.objects(SnapshotNote.self).count, 162)
        XCTAssertEqual(a.object(ofType: SnapshotNote.self, forPrimaryKey: 1)?.text, "after growth")
        XCTAssertEqual(a.object(ofType: SnapshotNote.self, forPrimaryKey: 259)?.payload, chunk)
    }

    func testCountsStayCorrectAcrossManyCommits() throws {
        let (_, a, b) = try twoHandles()
        let resultsA = a.objects(SnapshotNote.self)
        let resultsB = b.objects(SnapshotNote.self)
        var seenByA = 2
        for round in 0..<20 {
            try b.write {
                try b.add(self.note(1000 + round, "r\(round)"))
                if round % 3 == 0 { try b.delete(b.objects(SnapshotNote.self)[0]) }
            }
            let expected = 2 + (round + 1) - (round / 3 + 1)
            XCTAssertEqual(resultsB.count, expected)
            XCTAssertEqual(resultsA.count, seenByA, "a keeps its snapshot until refresh (round \(round))")
            XCTAssertEqual(a.refresh(), true)
            seenByA = expected
            XCTAssertEqual(resultsA.count, expected)
            XCTAssertEqual(Array(resultsA.map(\.id)), Array(resultsB.map(\.id)))
        }
    }

    /// A handle's own commits keep what its results and lists learnt of the classes they did not add to
    /// or delete from; a commit by anyone else, even one that takes the id of an own write that changed
    /// nothing (LMDB commits no such write), makes them read again.
    func testOwnCommitsKeepPositionsAndOthersCommitsAreSeen() throws {
        let db = makeTempDatabase("snapshot-view")
        let config = db.configuration([SnapshotNote.self, SnapshotShelf.self], initialMapSize: 32 << 20)
        let a = try Lattice(configuration: config)
        let shelf = try a.write { () -> SnapshotShelf in
            try a.add(contentsOf: (0..<3_000).map { self.note($0, "n\($0)") })
            let shelf = try a.create(SnapshotShelf.self, value: ["name": "all"])
            shelf.notes.append(objectsIn: a.objects(SnapshotNote.self))
            return shelf
        }
        let b = try Lattice(configuration: config)
        let notes = a.objects(SnapshotNote.self)
        var ids = Array(0..<3_000)
        var listed = ids
        func deleted(_ id: Int) {
            ids.removeAll { $0 == id }
            listed.removeAll { $0 == id }
        }
        func check(_ positions: [Int], _ line: UInt = #line) {
            for i in positions {
                XCTAssertEqual(notes[i].id, ids[i], "results[\(i)]", line: line)
                XCTAssertEqual(shelf.notes[i].id, listed[i], "list[\(i)]", line: line)
            }
            XCTAssertEqual(notes.count, ids.count, line: line)
            XCTAssertEqual(shelf.notes.count, listed.count, line: line)
        }

        // Positions far from both ends, read between the handle's own commits of values.
        for i in stride(from: 1_500, to: 2_500, by: 97) {
            check([i])
            try a.write { notes[i].text = "edited \(i)" }
            XCTAssertEqual(notes[i].text, "edited \(i)")
            check([i + 1])
        }
        // Own commits that add and delete objects, and change the list: positions move with them.
        try a.write {
            try a.delete(notes[1_600])  // leaves the list too
            try a.add(self.note(5_000, "late"))
            shelf.notes.remove(at: 1_700)
            shelf.notes.append(a.objects(SnapshotNote.self).last!)
        }
        deleted(1_600)
        ids.append(5_000)
        listed.remove(at: 1_700)
        listed.append(5_000)
        check([1_600, 1_700, 2_000, 2_997])

        // Another handle's commit, seen at refresh.
        try b.write {
            try b.delete(b.objects(SnapshotNote.self)[10])
            b.objects(SnapshotShelf.self)[0].notes.remove(at: 20)
        }
        XCTAssertEqual(notes.count, ids.count, "not seen before refresh")
        a.refresh()
        deleted(ids[10])
        listed.remove(at: 20)
        check([15, 2_000])

        // An own write that changes nothing commits nothing; the next commit, another handle's, takes its id.
        check([2_100])
        try a.write {}
        try b.write {
            try b.delete(b.objects(SnapshotNote.self)[30])
            b.objects(SnapshotShelf.self)[0].notes.remove(at: 40)
        }
        a.refresh()
        deleted(ids[30])
        listed.remove(at: 40)
        check([35, 2_100])
        XCTAssertTrue(Array(notes.map(\.id)) == ids)
        XCTAssertTrue(Array(shelf.notes.map(\.id)) == listed)

        // A commit another handle made before this handle's write began is seen inside the write.
        try b.write { try b.delete(b.objects(SnapshotNote.self)[50]) }
        try a.write {
            XCTAssertEqual(notes[2_200].id, ids[2_201])
            XCTAssertEqual(shelf.notes.count, listed.count - 1, "the deleted object left the list")
        }
        deleted(ids[50])
        check([50, 2_200])

        // A write rolled back leaves nothing behind in what was read during it.
        try a.beginWrite()
        try a.delete(notes[0])
        XCTAssertEqual(notes[2_300].id, ids[2_301])
        XCTAssertEqual(shelf.notes[2_300].id, listed[2_301])
        a.cancelWrite()
        check([0, 2_300])
    }
}
