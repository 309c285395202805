import Foundation
import XCTest
@testable import Lattice

final class InPlaceNote: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var text = ""
    @Persisted var count = 0
    @Persisted var previous: InPlaceNote?
}

/// Objects read in a read snapshot use their records where the map has them: these tests check that
/// such an object never reads bytes its snapshot no longer guarantees, however the file changes.
final class InPlaceRecordTests: XCTestCase {
    private let total = 400

    private func text(_ id: Int, round: Int) -> String { "note \(id) of round \(round) " + String(repeating: "x", count: (id * 7 + round) % 90) }

    /// A file with `total` notes (round 0) and two handles on it.
    private func twoHandles(initialMapSize: Int = 8 << 20) throws -> (TempDatabase, Lattice, Lattice) {
        let db = makeTempDatabase("inplace")
        let config = db.configuration([InPlaceNote.self], initialMapSize: initialMapSize)
        let a = try Lattice(configuration: config)
        try a.write {
            for id in 0..<total {
                let n = InPlaceNote()
                n.id = id
                n.text = text(id, round: 0)
                n.previous = a.object(ofType: InPlaceNote.self, forPrimaryKey: id - 1)
                try a.add(n)
            }
        }
        return (db, a, try Lattice(configuration: config))
    }

    /// Rewrites every note `rounds` times through `b`, one commit per round: the pages of older versions
    /// are freed and reused by the later rounds.
    private func rewrite(_ b: Lattice, rounds: ClosedRange<Int>) throws {
        for round in rounds {
            b.refresh()
            try b.write {
                for note in b.objects(InPlaceNote.self) {
                    note.text = text(note.id, round: round)
                    note.count = round
                }
            }
        }
    }

    /// Objects got every way a program reads them: a loop, a lookup, a link, `first`, `last` and an index.
    private func kept(_ a: Lattice) -> [InPlaceNote] {
        var kept = Array(a.objects(InPlaceNote.self))
        kept.append(contentsOf: kept.compactMap(\.previous))
        kept.append(contentsOf: (0..<total).compactMap { a.object(ofType: InPlaceNote.self, forPrimaryKey: $0) })
        kept.append(contentsOf: [a.objects(InPlaceNote.self).first, a.objects(InPlaceNote.self).last].compactMap { $0 })
        let sorted = (try? a.objects(InPlaceNote.self).sorted(byKeyPath: "text")) ?? a.objects(InPlaceNote.self)
        kept.append(contentsOf: (0..<sorted.count).map { sorted[$0] })
        return kept
    }

    private func assertRound(_ notes: [InPlaceNote], _ round: Int, file: StaticString = #filePath, line: UInt = #line) {
        for note in notes {
            XCTAssertEqual(note.text, text(note.id, round: round), file: file, line: line)
            XCTAssertEqual(note.count, round, file: file, line: line)
        }
    }

    func testObjectsKeepTheirSnapshotWhileOtherHandlesRewriteEverything() throws {
        let (_, a, b) = try twoHandles()
        let notes = kept(a)
        XCTAssertEqual(notes.count, 4 * total + 1)
        // Twenty commits rewrite every record while `a`'s snapshot stays open: its pages are not reused.
        try rewrite(b, rounds: 1...20)
        assertRound(notes, 0)
        XCTAssertFalse(a.refresh() == false, "a newer commit exists")
        assertRound(notes, 20)
        assertRound(kept(a), 20)
    }

    func testObjectsReadAgainAfterTheirSnapshotEnds() throws {
        let (_, a, b) = try twoHandles()
        let notes = kept(a)
        // End `a`'s snapshot, then let the pages it saw be reused many times over before it reads again.
        XCTAssertFalse(a.refresh(), "nothing new: the snapshot stays")
        assertRound(notes, 0)
        a.invalidate()
        let again = kept(a)
        try rewrite(b, rounds: 1...20)
        a.refresh()
        assertRound(again, 20)
        for note in notes { XCTAssertTrue(note.isInvalidated) }
    }

    func testObjectsReadBeforeAWriteAreCurrentInsideIt() throws {
        let (_, a, b) = try twoHandles()
        let notes = kept(a)
        try rewrite(b, rounds: 1...5)
        // Beginning a write moves `a` to the latest commit: the objects read the new records.
        try a.write {
            assertRound(notes, 5)
            for note in notes.prefix(total) { note.count = 100 + note.id }
            for note in notes.prefix(total) { XCTAssertEqual(note.count, 100 + note.id) }
        }
        for note in notes.prefix(total) {
            XCTAssertEqual(note.count, 100 + note.id)
            XCTAssertEqual(note.text, text(note.id, round: 5))
        }
    }

    func testObjectsSurviveTheMapGrowingUnderThem() throws {
        // A small map that `b`'s writes must grow several times while `a` holds objects read in place.
        let (_, a, b) = try twoHandles(initialMapSize: 256 << 10)
        var notes: [InPlaceNote] = []
        for round in 1...8 {
            notes = kept(a)
            XCTAssertGreaterThanOrEqual(notes.count, 4 * total + 1)
            // The map grows only while no snapshot of the process is open: a write of `a` ends its own.
            try a.write {}
            try b.write {
                for i in 0..<300 {
                    let n = InPlaceNote()
                    n.id = total + round * 1000 + i
                    n.text = String(repeating: "g", count: 2000)
                    try b.add(n)
                }
                for note in b.objects(InPlaceNote.self) where note.id < total { note.count = round }
            }
            for note in notes where note.id < total {
                XCTAssertEqual(note.count, round)
                XCTAssertEqual(note.text, text(note.id, round: 0))
            }
        }
        XCTAssertGreaterThan(try b.fileInfo().mapSize, 1 << 20)
    }
}
