import Foundation
import XCTest
@testable import Lattice

final class EditedEntry: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted(indexed: true) var group = 0
    @Persisted(indexed: true) var tag = ""
}

/// A write keeps the blocks of a packed index it changes inside (object keys removed, or filed between
/// others) in memory and writes each once: every read inside the write, every way of looking an object
/// up, the commit, a cancelled write and the file read again from disk see exactly the model.
final class IndexEditTests: XCTestCase {
    private static func name(_ i: Int) -> String { "entry \(i)" }

    private func check(_ lattice: Lattice, _ model: [Int: Int], _ step: String, lookups: [Int]) throws {
        let entries = lattice.objects(EditedEntry.self)
        XCTAssertEqual(entries.count, model.count, "\(step): count")
        for group in 0..<5 {
            let expected = model.filter { $0.value == group }.map(\.key).sorted()
            let found = try entries.filter("group == %@", group).map { Int($0.name.dropFirst(6))! }.sorted()
            XCTAssertEqual(found, expected, "\(step): group \(group)")
            XCTAssertEqual(try entries.filter("group == %@", group).count, expected.count, "\(step): group \(group) count")
        }
        XCTAssertEqual(try entries.filter("tag == 'odd'").count, model.keys.filter { $0 % 2 == 1 }.count, "\(step): by tag")
        for i in lookups {
            XCTAssertEqual(lattice.object(ofType: EditedEntry.self, forPrimaryKey: Self.name(i))?.group, model[i], "\(step): lookup of \(i)")
        }
    }

    private func add(_ lattice: Lattice, _ i: Int, group: Int, into model: inout [Int: Int]) throws {
        let entry = EditedEntry()
        entry.name = Self.name(i)
        entry.group = group
        entry.tag = i % 2 == 1 ? "odd" : "even"
        try lattice.add(entry, update: .modified)
        model[i] = group
    }

    private func delete(_ lattice: Lattice, _ i: Int, from model: inout [Int: Int]) throws {
        guard let entry = lattice.object(ofType: EditedEntry.self, forPrimaryKey: Self.name(i)) else { return }
        try lattice.delete(entry)
        model[i] = nil
    }

    /// A write that outgrows a small map while it holds edited blocks replays them on the grown map:
    /// nothing lost, nothing applied twice.
    func testEditsReplayedWhenTheMapGrows() throws {
        let db = makeTempDatabase("edits")
        var model: [Int: Int] = [:]
        let lattice = try Lattice(configuration: db.configuration([EditedEntry.self], initialMapSize: 64 << 10))
        try lattice.write {
            for i in 0..<3_000 {
                try add(lattice, i, group: i % 5, into: &model)
                if i % 4 == 3 { try delete(lattice, i - 2, from: &model) }
                if i % 7 == 0, let entry = lattice.object(ofType: EditedEntry.self, forPrimaryKey: Self.name(i / 2)) {
                    entry.group = (entry.group + 1) % 5
                    model[i / 2] = entry.group
                }
            }
        }
        try check(lattice, model, "written", lookups: Array(0..<3_000))
        XCTAssertEqual(lattice.verify(), [])
        let reopened = try db.open([EditedEntry.self], readOnly: true)
        try check(reopened, model, "reopened", lookups: Array(0..<3_000))
    }

    /// Removals and insertions inside blocks, with every kind of read between them: the reads see the
    /// write's edits, and the edits after a read go on from what the read wrote.
    func testReadsInsideAWriteSeeItsIndexEdits() throws {
        let db = makeTempDatabase("edits")
        var model: [Int: Int] = [:]
        var random = SeededGenerator(state: 0xED17)
        let lattice = try db.open([EditedEntry.self])
        try lattice.write {
            for i in 0..<6_000 { try add(lattice, i, group: i % 5, into: &model) }
        }
        for round in 0..<4 {
            try lattice.write {
                for step in 0..<800 {
                    let i = random.next(6_400)
                    switch random.next(4) {
                    case 0: try delete(lattice, i, from: &model)
                    case 1: try add(lattice, i, group: random.next(5), into: &model)   // moved, or filed inside
                    case 2:
                        // Deleted and looked up at once: the primary key's own index was edited.
                        try delete(lattice, i, from: &model)
                        XCTAssertNil(lattice.object(ofType: EditedEntry.self, forPrimaryKey: Self.name(i)), "round \(round): \(i) deleted")
                    default:
                        lattice.object(ofType: EditedEntry.self, forPrimaryKey: Self.name(i))?.group = random.next(5)
                        if let entry = lattice.object(ofType: EditedEntry.self, forPrimaryKey: Self.name(i)) { model[i] = entry.group }
                    }
                    if step % 200 == 199 { try check(lattice, model, "round \(round), step \(step)", lookups: Array(0..<6_400).filter { $0 % 97 == 0 }) }
                }
            }
            try check(lattice, model, "round \(round)", lookups: Array(0..<6_400).filter { $0 % 31 == 0 })
        }
        XCTAssertEqual(lattice.verify(), [])
        let reopened = try db.open([EditedEntry.self], readOnly: true)
        try check(reopened, model, "reopened", lookups: Array(0..<6_400))
        XCTAssertEqual(reopened.verify(), [])
    }

    /// Edits with no read between them: object keys filed below a key's first block and removed again,
    /// every key of a block removed and one filed again, hundreds filed into one block (written as blocks
    /// within the budget), and more edited blocks than a write keeps (written early).
    func testEditsWithoutReadsBetweenThemAreWrittenWhole() throws {
        let db = makeTempDatabase("edits")
        var model: [Int: Int] = [:]
        let lattice = try db.open([EditedEntry.self])
        try lattice.write {
            // Group 0: 1,000, 1,010, … 2,990.
            for i in stride(from: 1_000, to: 3_000, by: 10) { try add(lattice, i, group: 0, into: &model) }
        }
        try lattice.write {
            // Below the first block, then removed again: found in the first block's edit.
            for i in 1..<40 { try add(lattice, i, group: 0, into: &model) }
            for i in stride(from: 1, to: 40, by: 2) { try delete(lattice, i, from: &model) }
            // A whole block's keys removed, then one filed where they were.
            for i in stride(from: 1_000, to: 1_600, by: 10) { try delete(lattice, i, from: &model) }
            try add(lattice, 1_205, group: 0, into: &model)
            // Hundreds filed between the keys of one block.
            for i in 2_001..<2_400 where i % 10 != 0 { try add(lattice, i, group: 0, into: &model) }
        }
        try check(lattice, model, "first write", lookups: Array(0..<3_000))
        try RawLMDB.withWrite(db.path) { txn in
            for (_, block) in try RawLMDB.entries(txn, database: "i:EditedEntry.group") {
                XCTAssertLessThanOrEqual(block.count, Blocks.budget, "a block within the budget")
            }
        }
        // More than 4,096 blocks edited in one write (a write keeps fewer): every entry moved to another
        // group, then most deleted, each primary key the only key of its block.
        try lattice.write {
            for i in 10_000..<15_000 { try add(lattice, i, group: 0, into: &model) }
        }
        try lattice.write {
            for i in 10_000..<15_000 {
                guard let entry = lattice.object(ofType: EditedEntry.self, forPrimaryKey: Self.name(i)) else { continue }
                entry.group = 4
                model[i] = 4
            }
            for i in 10_000..<15_000 where i % 7 != 0 { try delete(lattice, i, from: &model) }
        }
        try check(lattice, model, "many blocks", lookups: Array(9_990..<15_010))
        // A cancelled write leaves nothing of its edits.
        let before = model
        try lattice.beginWrite()
        for i in stride(from: 10_003, to: 15_000, by: 7) { try delete(lattice, i, from: &model) }
        for i in 20..<30 { try add(lattice, i, group: 3, into: &model) }
        lattice.cancelWrite()
        model = before
        try check(lattice, model, "cancelled", lookups: Array(0..<60) + Array(10_000..<10_100))
        XCTAssertEqual(lattice.verify(), [])
        let reopened = try db.open([EditedEntry.self], readOnly: true)
        try check(reopened, model, "reopened", lookups: Array(0..<3_000) + Array(9_990..<15_010))
        XCTAssertEqual(reopened.verify(), [])
    }
}

final class EditedNumber: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted(indexed: true) var group = 0
}

/// Objects keyed by an integer and added above every key file their index entries at the end of the
/// key's last block: after edits of that block in the same write, the end is the edited block's.
final class IndexAppendAfterEditTests: XCTestCase {
    func testAppendsAfterRemovalsFromTheLastBlock() throws {
        let db = makeTempDatabase("edits")
        var model: [Int: Int] = [:]
        let lattice = try db.open([EditedNumber.self])
        func add(_ id: Int, _ group: Int) throws {
            let number = EditedNumber()
            number.id = id
            number.group = group
            try lattice.add(number)
            model[id] = group
        }
        func check(_ lattice: Lattice, _ step: String) throws {
            for group in 0..<3 {
                let expected = model.filter { $0.value == group }.map(\.key).sorted()
                XCTAssertEqual(try lattice.objects(EditedNumber.self).filter("group == %@", group).map(\.id), expected, "\(step): group \(group)")
            }
        }
        try lattice.write {
            for id in 0..<2_000 { try add(id, id % 3) }
        }
        try lattice.write {
            // Removed from the end of each group's last block, moved into it, then appended after it.
            for id in stride(from: 1_999, to: 1_900, by: -4) {
                try lattice.delete(try XCTUnwrap(lattice.object(ofType: EditedNumber.self, forPrimaryKey: id)))
                model[id] = nil
            }
            for id in stride(from: 1_000, to: 1_100, by: 5) {
                try XCTUnwrap(lattice.object(ofType: EditedNumber.self, forPrimaryKey: id)).group = 0
                model[id] = 0
            }
            for id in 2_000..<2_600 { try add(id, id % 3) }
        }
        try check(lattice, "written")
        XCTAssertEqual(lattice.verify(), [])
        let reopened = try db.open([EditedNumber.self], readOnly: true)
        try check(reopened, "reopened")
        XCTAssertEqual(reopened.verify(), [])
    }

    /// More blocks edited than a write keeps: the edits kept so far are written and forgotten, and the
    /// same blocks edited again afterwards are written once more from what the table then holds.
    func testBlocksEditedAgainAfterTheWriteKeptTooMany() throws {
        let db = makeTempDatabase("edits")
        let lattice = try db.open([EditedNumber.self])
        try lattice.write {
            for id in 0..<5_000 {
                let number = EditedNumber()
                number.id = id
                number.group = id   // one index key each
                try lattice.add(number)
            }
        }
        try lattice.write {
            for id in 0..<5_000 { try XCTUnwrap(lattice.object(ofType: EditedNumber.self, forPrimaryKey: id)).group = id + 100_000 }
            for id in 0..<100 { try XCTUnwrap(lattice.object(ofType: EditedNumber.self, forPrimaryKey: id)).group = id }
        }
        for lattice in [lattice, try db.open([EditedNumber.self], readOnly: true)] {
            for id in stride(from: 0, to: 5_000, by: 7) {
                let group = id < 100 ? id : id + 100_000
                XCTAssertEqual(try lattice.objects(EditedNumber.self).filter("group == %@", group).map(\.id), [id], "group \(group)")
                XCTAssertEqual(try lattice.objects(EditedNumber.self).filter("group == %@", id < 100 ? id + 100_000 : id).count, 0)
            }
            XCTAssertEqual(lattice.verify(), [])
        }
    }
}
