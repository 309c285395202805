import CLMDB
import Foundation
import XCTest
@testable import Lattice

final class PackedNote: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var text = ""
    @Persisted(indexed: true) var group = 0
}

final class PackedTag: Object {
    @Persisted var label = ""
}

final class PackedLabel: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted(indexed: true) var name = ""
}

final class PackedBoard: Object {
    @Persisted var notes: List<PackedNote>
}

/// Object tables of file format 6 hold runs of records (see `Runs`): these tests drive them through the
/// public API with keys added in order, in the middle, at the front and far apart, records from empty to
/// larger than a run (and than the 64 KiB a run's short end table covers), deletes that empty runs and
/// change their first key, cancelled writes and map growth, against a model, and read the file again from
/// disk.
final class PackedTableTests: XCTestCase {
    private func text(_ length: Int, _ seed: Int) -> String {
        String(repeating: Character(UnicodeScalar(UInt8(97 + seed % 26))), count: length)
    }

    /// `first` and `last` of a class read its table's ends: before any object, with one, across runs, in
    /// a write that changes them, and once every object is deleted (the count entry alone is left).
    func testFirstAndLastOfAClassFollowItsEnds() throws {
        let db = makeTempDatabase("packed-ends")
        let lattice = try db.open([PackedNote.self])
        let notes = lattice.objects(PackedNote.self)
        XCTAssertNil(notes.first)
        XCTAssertNil(notes.last)
        try lattice.write { try lattice.create(PackedNote.self, value: ["id": 7, "text": "seven"]) }
        XCTAssertEqual(notes.first?.text, "seven")
        XCTAssertEqual(notes.last?.text, "seven")
        try lattice.write {
            for id in 8..<600 { try lattice.create(PackedNote.self, value: ["id": id, "text": text(40, id)]) }
            try lattice.create(PackedNote.self, value: ["id": -3, "text": "front"])
            XCTAssertEqual(notes.first?.id, -3, "inside the write")
            XCTAssertEqual(notes.last?.id, 599, "inside the write")
        }
        XCTAssertEqual(notes.first?.text, "front")
        XCTAssertEqual(notes.last?.text, text(40, 599))
        try lattice.write { try lattice.delete(lattice.objects(PackedNote.self)) }
        XCTAssertNil(notes.first)
        XCTAssertNil(notes.last)
        XCTAssertEqual(Array(notes).count, 0)
        let reopened = try db.open([PackedNote.self])
        XCTAssertNil(reopened.objects(PackedNote.self).last)
    }

    /// Objects read in the order a List holds them: keys going down, then up, with gaps of every size
    /// (some keys deleted), so that each lookup lands in the same run, the next one, the one after, or
    /// further, in either direction, on a fresh cursor or one left on another run.
    func testListOrderReadsAcrossRunsInBothDirections() throws {
        let db = makeTempDatabase("packed-list-order")
        var random = SeededGenerator(state: 0x11_57)
        var order: [Int] = []
        var id = 3_999
        while id >= 0 { order.append(id); id -= 1 + random.next(120) }
        id = random.next(40)
        while id < 4_000 { order.append(id); id += 1 + random.next(120) }
        order = order.filter { $0 % 97 != 0 }
        do {
            let lattice = try db.open([PackedNote.self, PackedBoard.self])
            try lattice.write {
                for id in 0..<4_000 { try lattice.create(PackedNote.self, value: ["id": id, "text": text(30 + id % 50, id)]) }
                for id in stride(from: 0, to: 4_000, by: 97) {
                    try lattice.delete(try XCTUnwrap(lattice.object(ofType: PackedNote.self, forPrimaryKey: id)))
                }
                let board = PackedBoard()
                try lattice.add(board)
                for id in order { board.notes.append(try XCTUnwrap(lattice.object(ofType: PackedNote.self, forPrimaryKey: id))) }
            }
        }
        let lattice = try db.open([PackedNote.self, PackedBoard.self])
        let notes = try XCTUnwrap(lattice.objects(PackedBoard.self).first).notes
        XCTAssertEqual(Array(notes).map(\.id), order, "a loop")
        XCTAssertEqual((0..<notes.count).map { notes[$0].id }, order, "by position")
        XCTAssertEqual(notes.reversed().map(\.id), order.reversed(), "by position, backwards")
        XCTAssertEqual(notes.map(\.text), order.map { text(30 + $0 % 50, $0) })
    }

    /// Writes of objects read earlier, after reads of others in between: the write finds the run of its
    /// own key, wherever the cursor was left (a write right after reading the same object skips the
    /// search; any other does not).
    func testWritesAfterReadsOfOtherObjectsFindTheirOwnRuns() throws {
        let db = makeTempDatabase("packed-write-after-read")
        var model: [Int: String] = [:]
        do {
            let lattice = try db.open([PackedNote.self])
            try lattice.write {
                for id in 0..<3_000 {
                    model[id] = text(40, id)
                    try lattice.create(PackedNote.self, value: ["id": id, "text": model[id]!])
                }
            }
            var random = SeededGenerator(state: 0xF100_2)
            try lattice.write {
                let held = try (0..<60).map { _ in try XCTUnwrap(lattice.object(ofType: PackedNote.self, forPrimaryKey: random.next(3_000))) }
                for (n, note) in held.enumerated() {
                    // Another object read first leaves the cursor on its run, before or after this one's.
                    _ = lattice.object(ofType: PackedNote.self, forPrimaryKey: random.next(3_000))?.text
                    if n % 3 == 2, !note.isInvalidated {
                        model[note.id] = nil
                        try lattice.delete(note)
                    } else if !note.isInvalidated {
                        let value = n % 2 == 0 ? text(40, n) : text(41 + n % 7, n)  // the same size, or not
                        note.text = value
                        model[note.id] = value
                    }
                }
            }
        }
        let lattice = try db.open([PackedNote.self])
        let notes = lattice.objects(PackedNote.self)
        XCTAssertEqual(notes.map(\.id), model.keys.sorted())
        XCTAssertEqual(notes.map(\.text), model.keys.sorted().map { model[$0]! })
        for id in stride(from: 0, to: 3_000, by: 7) {
            XCTAssertEqual(lattice.object(ofType: PackedNote.self, forPrimaryKey: id)?.text, model[id], "lookup of \(id)")
        }
    }

    /// Random edits against a dictionary model, checked by every read path after each write.
    func testRandomEditsReadBackAsTheModelInEveryWay() throws {
        let db = makeTempDatabase("packed")
        var random = SeededGenerator(state: 0x5EED_0F_0006)
        var model: [Int: (text: String, group: Int)] = [:]
        func check(_ lattice: Lattice, _ step: String) throws {
            let notes = lattice.objects(PackedNote.self)
            XCTAssertEqual(notes.count, model.count, step)
            let keys = model.keys.sorted()
            XCTAssertEqual(notes.map(\.id), keys, "\(step): a walk lists every key in order")
            XCTAssertEqual(notes.reversed().map(\.id), keys.reversed(), "\(step): backwards too")
            XCTAssertEqual(notes.first?.id, keys.first, "\(step): first")
            XCTAssertEqual(notes.last?.id, keys.last, "\(step): last")
            for (i, key) in keys.enumerated() where i % 7 == 0 {
                XCTAssertEqual(notes[i].id, key, "\(step): by position")
            }
            for probe in 0..<60 {
                let key = probe * 41 % 2_600 - 100
                let found = lattice.object(ofType: PackedNote.self, forPrimaryKey: key)
                XCTAssertEqual(found?.text, model[key]?.text, "\(step): lookup of \(key)")
            }
            for key in keys where key % 5 == 0 {
                XCTAssertEqual(lattice.object(ofType: PackedNote.self, forPrimaryKey: key)?.text, model[key]?.text, "\(step): lookup of \(key)")
            }
            let grouped = try lattice.objects(PackedNote.self).filter("group == 3").map(\.id)
            XCTAssertEqual(grouped, keys.filter { model[$0]?.group == 3 }, "\(step): through the index")
            let groupedBackwards = try lattice.objects(PackedNote.self).filter("group == 3").reversed().map(\.id)
            XCTAssertEqual(groupedBackwards, keys.filter { model[$0]?.group == 3 }.reversed(), "\(step): through the index, backwards")
            let ranged = try lattice.objects(PackedNote.self).filter("id >= 500 AND id < 900").map(\.id)
            XCTAssertEqual(ranged, keys.filter { $0 >= 500 && $0 < 900 }, "\(step): a key range")
        }
        do {
            let lattice = try db.open([PackedNote.self])
            for round in 0..<30 {
                var pending = model
                let cancel = round % 9 == 4
                try lattice.beginWrite()
                for _ in 0..<(1 + random.next(60)) {
                    let kind = random.next(10)
                    let key: Int
                    switch kind {
                    case 0...2: key = (pending.keys.max() ?? 0) + 1 + random.next(3)   // appends
                    case 3: key = -random.next(100)                                     // at the front
                    default: key = random.next(2_500)                                  // anywhere
                    }
                    if kind == 9, !pending.isEmpty {
                        let victim = pending.keys.sorted()[random.next(pending.count)]
                        if let note = lattice.object(ofType: PackedNote.self, forPrimaryKey: victim) { try lattice.delete(note) }
                        pending[victim] = nil
                        continue
                    }
                    // Mostly short records; now and then one larger than a run, or than 64 KiB.
                    let length = [random.next(90), random.next(400), 2_500 + random.next(800), 70_000][random.next(20) == 0 ? 3 : random.next(3)]
                    let note = PackedNote()
                    note.id = key
                    note.text = text(length, key)
                    note.group = random.next(6)
                    try lattice.add(note, update: .modified)
                    pending[key] = (note.text, note.group)
                }
                if cancel {
                    lattice.cancelWrite()
                } else {
                    try lattice.commitWrite()
                    model = pending
                }
                try check(lattice, "round \(round)")
            }
            XCTAssertEqual(lattice.verify(), [])
        }
        let reopened = try db.open([PackedNote.self])
        try check(reopened, "reopened")
        XCTAssertEqual(reopened.verify(), [])
        try assertRunsWithinBudget(db, "o:PackedNote")
    }

    /// Runs of consecutive keys (dense: no keys stored) edited anywhere: deleted from at their start,
    /// middle and end, refilled, and changed in size, one transaction at a time.
    /// A delete removes the index entries of the record as it is at that moment: after the object's
    /// indexed property was set in the same write (its instance holds the new record), after another
    /// instance of it changed it, and for an instance read before the write began. Queries by old and new
    /// values find nothing, and the file verifies clean after reopening.
    func testDeletesRemoveTheIndexEntriesOfTheCurrentRecord() throws {
        let db = makeTempDatabase("packed-delete-current")
        let lattice = try db.open([PackedNote.self])
        try lattice.write {
            for id in 1...300 { try lattice.create(PackedNote.self, value: ["id": id, "text": "note \(id)", "group": id % 3]) }
        }
        let readBefore = try XCTUnwrap(lattice.object(ofType: PackedNote.self, forPrimaryKey: 30))  // group 0
        try lattice.write {
            let a = try XCTUnwrap(lattice.object(ofType: PackedNote.self, forPrimaryKey: 10))      // group 1
            a.group = 7
            try lattice.delete(a)
            let b = try XCTUnwrap(lattice.object(ofType: PackedNote.self, forPrimaryKey: 20))      // group 2
            let other = try XCTUnwrap(lattice.object(ofType: PackedNote.self, forPrimaryKey: 20))
            _ = b.group                                                                          // b caches its record
            other.group = 8                                                                      // then another instance changes it
            try lattice.delete(b)
            readBefore.group = 9
            try lattice.delete(readBefore)
        }
        for handle in [lattice, try db.open([PackedNote.self])] {
            let notes = handle.objects(PackedNote.self)
            XCTAssertEqual(notes.count, 297)
            for group in [7, 8, 9] { XCTAssertEqual(try notes.filter("group == %@", group).count, 0, "group \(group)") }
            XCTAssertEqual(try notes.filter("group == 1").count, 99)
            XCTAssertEqual(try notes.filter("group == 2").count, 99)
            XCTAssertEqual(try notes.filter("group == 0").count, 99)
            XCTAssertEqual(try notes.filter("group == 1").map(\.id).contains(10), false)
            XCTAssertEqual(handle.verify(), [])
        }
    }

    /// Index keys that differ only in length or in trailing zero bytes, on either side of 16 bytes (the
    /// longest key a pending index block is found by without an allocation), stay apart while the blocks
    /// of objects added in key order collect in one write, and after it.
    func testIndexKeysOfEveryLengthStayApart() throws {
        let db = makeTempDatabase("packed-index-keys")
        let lattice = try db.open([PackedLabel.self])
        let k = { (n: Int) in String(repeating: "k", count: n) }
        let names = ["a", "a\0", "a\0\0", "b", k(15), k(15) + "\0", k(16), k(16) + "\0", k(17), String(repeating: "é", count: 8),
                     String(repeating: "é", count: 8) + "\0"]
        var id = 0
        try lattice.write {
            for round in 0..<3 {
                for (i, name) in names.enumerated() where i % 3 <= round {
                    id += 1
                    try lattice.create(PackedLabel.self, value: ["id": id, "name": name])
                }
            }
        }
        for handle in [lattice, try db.open([PackedLabel.self])] {
            for (i, name) in names.enumerated() {
                XCTAssertEqual(try handle.objects(PackedLabel.self).filter("name == %@", name).count, 3 - i % 3, "name \(i)")
            }
            XCTAssertEqual(handle.verify(), [])
        }
    }

    func testConsecutiveKeysEditedAnywhere() throws {
        let db = makeTempDatabase("packed")
        var random = SeededGenerator(state: 0xD3_5E)
        var model: [Int: String] = [:]
        let lattice = try db.open([PackedNote.self])
        try lattice.write {
            for i in 1...3_000 {
                let note = PackedNote()
                note.id = i
                note.text = text(40, i)
                try lattice.add(note)
                model[i] = note.text
            }
        }
        func check(_ step: String) {
            XCTAssertEqual(lattice.objects(PackedNote.self).map(\.id), model.keys.sorted(), step)
            XCTAssertEqual(lattice.objects(PackedNote.self).map(\.text), model.keys.sorted().map { model[$0]! }, step)
            for key in stride(from: 0, to: 3_010, by: 13) {
                XCTAssertEqual(lattice.object(ofType: PackedNote.self, forPrimaryKey: key)?.text, model[key], "\(step): \(key)")
            }
        }
        for round in 0..<12 {
            try lattice.write {
                for _ in 0..<40 {
                    let key = 1 + random.next(3_000)
                    switch random.next(3) {
                    case 0:
                        if let note = lattice.object(ofType: PackedNote.self, forPrimaryKey: key) { try lattice.delete(note) }
                        model[key] = nil
                    case 1:
                        let note = PackedNote()
                        note.id = key
                        note.text = text(random.next(120), key + round)
                        try lattice.add(note, update: .modified)
                        model[key] = note.text
                    default:
                        if let note = lattice.object(ofType: PackedNote.self, forPrimaryKey: key) {
                            note.text = text(random.next(120), key + 1)
                            model[key] = note.text
                        }
                    }
                }
            }
            check("round \(round)")
        }
        XCTAssertEqual(lattice.verify(), [])
        try assertRunsWithinBudget(db, "o:PackedNote")
    }

    /// Indexes of a packed file hold blocks of object keys (see `Blocks`): many objects under one value
    /// (blocks split), objects moved between values, deleted, and filed below others, read back through
    /// equality and range queries, counts, sorting by the index, and a fresh handle.
    func testIndexesHoldBlocksOfObjectKeys() throws {
        let db = makeTempDatabase("packed")
        var random = SeededGenerator(state: 0xB10C)
        var model: [Int: Int] = [:]
        let lattice = try db.open([PackedNote.self])
        try lattice.write {
            for i in stride(from: 10, to: 50_000, by: 10) {
                let note = PackedNote()
                note.id = i
                note.group = i % 7
                try lattice.add(note)
                model[i] = note.group
            }
        }
        try RawLMDB.withWrite(db.path) { txn in
            let blocks = try RawLMDB.entries(txn, database: "i:PackedNote.group")
            XCTAssertLessThan(blocks.count, 100, "about 700 object keys to a block")
            XCTAssertEqual(try RawLMDB.indexEntries(txn, database: "i:PackedNote.group").count, model.count)
        }
        func check(_ lattice: Lattice, _ step: String) throws {
            for group in 0..<8 {
                let expected = model.keys.filter { model[$0] == group }.sorted()
                XCTAssertEqual(try lattice.objects(PackedNote.self).filter("group == %@", group).map(\.id), expected, "\(step): group \(group)")
                XCTAssertEqual(try lattice.objects(PackedNote.self).filter("group == %@", group).count, expected.count, "\(step): count")
            }
            let ranged = try lattice.objects(PackedNote.self).filter("group >= 2 AND group < 5").map(\.id)
            XCTAssertEqual(ranged, model.keys.filter { (2..<5).contains(model[$0]!) }.sorted(), step)
            let sorted = try lattice.objects(PackedNote.self).sorted(byKeyPath: "group").map(\.group)
            XCTAssertEqual(sorted, model.values.sorted(), "\(step): sorted through the index")
        }
        try check(lattice, "filled")
        for round in 0..<6 {
            try lattice.write {
                for _ in 0..<300 {
                    let id = 10 * (1 + random.next(4_999))
                    switch random.next(3) {
                    case 0:
                        if let note = lattice.object(ofType: PackedNote.self, forPrimaryKey: id) {
                            note.group = random.next(8)
                            model[id] = note.group
                        }
                    case 1:
                        if let note = lattice.object(ofType: PackedNote.self, forPrimaryKey: id) { try lattice.delete(note) }
                        model[id] = nil
                    default:
                        let note = PackedNote()
                        note.id = id - 1 - random.next(8)   // between existing keys: filed inside blocks
                        note.group = random.next(8)
                        try lattice.add(note, update: .modified)
                        model[note.id] = note.group
                    }
                }
                try check(lattice, "inside write \(round)")
            }
            try check(lattice, "round \(round)")
        }
        XCTAssertEqual(lattice.verify(), [])
        let reopened = try db.open([PackedNote.self], readOnly: true)
        try check(reopened, "reopened")
        XCTAssertEqual(reopened.verify(), [])
    }

    /// The key order Lattice gives LMDB is LMDB's default one (bytes compared as by `memcmp`, a prefix
    /// first), its shortcut for 8-byte keys included: a file stays readable by any LMDB program.
    func testKeyOrderIsLMDBsDefaultOrder() {
        var random = SplitMix64(state: 0x0DE7)
        func key() -> [UInt8] {
            let count = [0, 1, 7, 8, 8, 8, 9, 16][Int(random.next() % 8)]
            // Few distinct bytes, so that equal keys and shared prefixes are common.
            return (0..<count).map { _ in [0, 1, 0x7F, 0x80, 0xFF][Int(random.next() % 5)] }
        }
        for _ in 0..<20_000 {
            let (a, b) = (key(), key())
            let expected = a == b ? 0 : (a.lexicographicallyPrecedes(b) ? -1 : 1)
            let order = a.withUnsafeBytes { x in
                b.withUnsafeBytes { y in
                    var left = MDB_val(mv_size: x.count, mv_data: UnsafeMutableRawPointer(mutating: x.baseAddress))
                    var right = MDB_val(mv_size: y.count, mv_data: UnsafeMutableRawPointer(mutating: y.baseAddress))
                    return lattice_key_order(&left, &right)
                }
            }
            XCTAssertEqual(order.signum(), Int32(expected), "\(a) against \(b)")
        }
    }

    /// A block's keys found, counted, removed and filed by its deltas of one byte (read eight at a time
    /// when they are 1...127 apart) and of several (keys 128 or more apart), against a model: blocks of
    /// keys close together, far apart and mixed, every key removed and a key filed between every two.
    func testBlockEditsOfEveryDeltaWidthMatchAModel() throws {
        var random = SplitMix64(state: 0xB10C_DE17)
        let gaps: [ClosedRange<UInt64>] = [1...1, 1...3, 1...127, 100...140, 120...20_000, 1...300]
        for (shape, gap) in gaps.enumerated() {
            for length in [1, 2, 7, 8, 9, 16, 17, 40] {
                var keys: [UInt64] = [UInt64.random(in: 0...1_000, using: &random)]
                while keys.count < length { keys.append(keys[keys.count - 1] + UInt64.random(in: gap, using: &random)) }
                let block = try XCTUnwrap(BlockWriter.blocks(keys).first)
                let label = "gaps \(shape), \(length) keys"
                try block.withUnsafeBytes { bytes in
                    let view = try XCTUnwrap(BlockView(bytes), label)
                    XCTAssertEqual(view.count, keys.count, label)
                    var out: [UInt8] = []
                    var decoded: [UInt64] = []
                    for (i, key) in keys.enumerated() {
                        guard case .edited = view.removing(key, into: &out) else { return XCTFail("\(label): \(key) not found") }
                        var expected = keys
                        expected.remove(at: i)
                        if expected.isEmpty {
                            XCTAssertEqual(out, [], label)
                        } else {
                            try out.withUnsafeBytes { XCTAssertTrue(try XCTUnwrap(BlockView($0)).keys(into: &decoded), label) }
                            XCTAssertEqual(decoded, expected, "\(label): without \(key)")
                        }
                        if i + 1 < keys.count, keys[i + 1] - key > 1 {
                            let between = key + 1 + UInt64.random(in: 0...(keys[i + 1] - key - 2), using: &random)
                            guard case .edited = view.inserting(between, into: &out) else { return XCTFail("\(label): \(between) not filed") }
                            try out.withUnsafeBytes { XCTAssertTrue(try XCTUnwrap(BlockView($0)).keys(into: &decoded), label) }
                            XCTAssertEqual(decoded, (keys + [between]).sorted(), "\(label): with \(between)")
                        }
                        if case .edited = view.removing(key + 1, into: &out), !keys.contains(key + 1) { XCTFail("\(label): removed \(key + 1)") }
                        if case .edited = view.inserting(key, into: &out) { XCTFail("\(label): filed \(key) twice") }
                    }
                }
            }
        }
        // Damage met on the way to a key is found, whichever end the deltas are read from: a zero delta
        // (keys are unique) read from the first key and from the last, a varint cut short by the block's end,
        // one longer than 64 bits.
        func damaged(_ deltas: [UInt8], last: UInt64, removing key: UInt64, _ label: String) throws {
            let block = withUnsafeBytes(of: UInt64(100).bigEndian) { Array($0) } + deltas + withUnsafeBytes(of: last.bigEndian) { Array($0) }
            try block.withUnsafeBytes { bytes in
                var out: [UInt8] = []
                guard case .damaged = try XCTUnwrap(BlockView(bytes)).removing(key, into: &out) else { return XCTFail(label) }
            }
        }
        try damaged([1, 1, 1, 0, 1, 1, 1, 1, 1], last: 108, removing: 104, "a zero delta read forwards")
        try damaged([1, 1, 1, 1, 1, 1, 1, 0, 1], last: 108, removing: 107, "a zero delta read backwards")
        try damaged([1, 0x85], last: 106, removing: 103, "a cut varint read forwards")
        try damaged([1, 0x85], last: 106, removing: 106, "a cut varint read backwards")
        try damaged(Array(repeating: 0x81, count: 11) + [1], last: .max - 1, removing: .max - 1, "a varint of over 64 bits read backwards")
    }

    /// Reads inside the write see the records the transaction added (still in memory) and the ones it
    /// changed; a class without a primary key gets its sequence keys in order.
    func testReadsInsideAWriteSeeItsOwnAdds() throws {
        let db = makeTempDatabase("packed")
        let lattice = try db.open([PackedNote.self, PackedTag.self])
        try lattice.write {
            for i in 0..<500 {
                let note = PackedNote()
                note.id = i
                note.text = "note \(i)"
                try lattice.add(note)
                let tag = PackedTag()
                tag.label = "tag \(i)"
                try lattice.add(tag)
                if i % 50 == 49 {
                    XCTAssertEqual(lattice.objects(PackedNote.self).count, i + 1)
                    XCTAssertEqual(lattice.object(ofType: PackedNote.self, forPrimaryKey: i - 10)?.text, "note \(i - 10)")
                    XCTAssertEqual(lattice.objects(PackedTag.self).last?.label, "tag \(i)")
                }
            }
            try lattice.delete(try XCTUnwrap(lattice.object(ofType: PackedNote.self, forPrimaryKey: 0)))
            XCTAssertEqual(lattice.objects(PackedNote.self).first?.id, 1, "the first record of the first run gone")
        }
        XCTAssertEqual(lattice.objects(PackedTag.self).map(\.label), (0..<500).map { "tag \($0)" })
        XCTAssertEqual(lattice.verify(), [])
        try assertRunsWithinBudget(db, "o:PackedNote")
    }

    /// Lookups between adds by ascending keys: the key just added (in the run the write holds in memory),
    /// one above it (none), keys of runs the table holds already and of earlier writes.
    func testLookupsBetweenAscendingAddsSeeEveryKey() throws {
        let db = makeTempDatabase("packed")
        let lattice = try db.open([PackedNote.self])
        try lattice.write {
            for id in [-50, -20] {
                let note = PackedNote()
                note.id = id
                note.text = "old \(id)"
                try lattice.add(note)
            }
        }
        try lattice.write {
            for id in 0..<3_000 {
                XCTAssertNil(lattice.object(ofType: PackedNote.self, forPrimaryKey: id), "\(id) before it is added")
                let note = PackedNote()
                note.id = id
                note.text = text(40 + id % 200, id)
                try lattice.add(note)
                XCTAssertEqual(lattice.object(ofType: PackedNote.self, forPrimaryKey: id)?.text, note.text, "\(id) just added")
                XCTAssertNil(lattice.object(ofType: PackedNote.self, forPrimaryKey: id + 1), "\(id + 1) above every key")
                XCTAssertEqual(lattice.object(ofType: PackedNote.self, forPrimaryKey: id / 3)?.id, id / 3, "\(id / 3) added before")
                XCTAssertEqual(lattice.object(ofType: PackedNote.self, forPrimaryKey: -20)?.text, "old -20", "an earlier write's")
            }
        }
        XCTAssertEqual(lattice.objects(PackedNote.self).count, 3_002)
        XCTAssertEqual(lattice.verify(), [])
    }

    /// A write that outgrows a small map several times over replays its packed writes on the grown map:
    /// nothing lost, nothing applied twice.
    func testAWriteThatGrowsTheMapKeepsEveryRecord() throws {
        let db = makeTempDatabase("packed")
        let lattice = try Lattice(configuration: db.configuration([PackedNote.self], initialMapSize: 64 << 10))
        try lattice.write {
            for i in 0..<3_000 {
                let note = PackedNote()
                note.id = i % 2 == 0 ? i : 10_000 - i   // appends and inserts below them
                note.text = text(200, i)
                try lattice.add(note)
                if i % 3 == 0, i > 0, let earlier = lattice.object(ofType: PackedNote.self, forPrimaryKey: i - 2) { try lattice.delete(earlier) }
            }
        }
        let reopened = try db.open([PackedNote.self])
        // Deleted: keys i - 2 for i = 6, 12, 18, ... (the odd keys i - 2 never existed).
        let added: [Int] = (0..<3_000).map { (i: Int) -> Int in i % 2 == 0 ? i : 10_000 - i }
        let expected: [Int] = added.filter { (key: Int) -> Bool in !(key % 6 == 4 && key + 2 < 3_000) }
        XCTAssertEqual(reopened.objects(PackedNote.self).map(\.id), expected.sorted())
        XCTAssertEqual(reopened.verify(), [])
    }

    /// Every run of `table` parses, holds its entries in key order under their checksums, and is at most
    /// a run's budget unless it holds a single entry; the count entry matches.
    private func assertRunsWithinBudget(_ db: TempDatabase, _ table: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try RawLMDB.withWrite(db.path) { txn in
            let entries = try RawLMDB.entries(txn, database: table)
            var total = 0
            var previous: UInt64?
            for (key, run) in entries where key.count == 8 {
                try run.withUnsafeBytes { bytes in
                    let view = try XCTUnwrap(RunView(bytes, key: key.withUnsafeBytes { Runs.number($0) }), file: file, line: line)
                    XCTAssertTrue(bytes.count <= Runs.budget(pageSize: 4096) || view.count == 1, "a run over budget", file: file, line: line)
                    var keys: [UInt64] = []
                    XCTAssertTrue(view.keys(into: &keys), file: file, line: line)
                    XCTAssertTrue(previous.map { $0 < keys[0] } ?? true, "runs in key order", file: file, line: line)
                    previous = keys.last
                    for (i, number) in keys.enumerated() {
                        let sealed = try XCTUnwrap(view.entry(i), file: file, line: line)
                        let opened = Runs.withKey(number) { Checksum.open(key: $0, sealed: sealed) != nil }
                        XCTAssertTrue(opened, "an entry fails its checksum", file: file, line: line)
                    }
                    total += view.count
                }
            }
            let count = try XCTUnwrap(entries.first { $0.key == Runs.countKey }, "the count entry", file: file, line: line)
            XCTAssertEqual(count.value.prefix(8).withUnsafeBytes { Int($0.loadUnaligned(as: Int64.self)) }, total, file: file, line: line)
        }
    }
}
