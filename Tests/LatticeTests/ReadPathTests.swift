import Foundation
import XCTest
@testable import Lattice

/// Behaviour the read fast paths (integer primary-key lookup, cursor-walking iteration, appended
/// inserts) must keep.
final class ReadPathTests: XCTestCase {
    final class Item: Object {
        @Persisted(primaryKey: true) var id: Int64
        @Persisted(indexed: true) var group = 0
        @Persisted var name = ""
        @Persisted var nickname: String?
    }

    final class Small: Object {
        @Persisted(primaryKey: true) var id: Int32
        @Persisted var label = ""
    }

    final class Named: Object {
        @Persisted(primaryKey: true) var code = ""
        @Persisted var value = 0.0
    }

    private var config: Lattice.Configuration!

    override func setUp() {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("readpath-\(UUID().uuidString).lattice")
        config = Lattice.Configuration(fileURL: url, objectTypes: [Item.self, Small.self, Named.self])
    }

    override func tearDown() {
        _ = try? Lattice.deleteFiles(for: config)
    }

    private func item(_ id: Int64) -> Item {
        let item = Item()
        item.id = id
        item.group = Int(id % 3)
        item.name = "item \(id)"
        item.nickname = id % 2 == 0 ? "even \(id)" : nil
        return item
    }

    func testPrimaryKeyLookupAcceptsEveryIntegerWidthAndRejectsOtherTypes() throws {
        let lattice = try Lattice(configuration: config)
        try lattice.write {
            try lattice.add(item(5))
            let small = Small()
            small.id = 9
            small.label = "nine"
            try lattice.add(small)
            let named = Named()
            named.code = "x"
            named.value = 1.5
            try lattice.add(named)
        }
        XCTAssertEqual(lattice.object(ofType: Item.self, forPrimaryKey: Int64(5))?.name, "item 5")
        XCTAssertEqual(lattice.object(ofType: Item.self, forPrimaryKey: 5)?.name, "item 5")
        XCTAssertEqual(lattice.object(ofType: Item.self, forPrimaryKey: Int32(5))?.name, "item 5")
        XCTAssertEqual(lattice.object(ofType: Item.self, forPrimaryKey: Int16(5))?.name, "item 5")
        XCTAssertNil(lattice.object(ofType: Item.self, forPrimaryKey: 6))
        XCTAssertNil(lattice.object(ofType: Item.self, forPrimaryKey: "5"))
        XCTAssertEqual(lattice.object(ofType: Small.self, forPrimaryKey: 9)?.label, "nine")
        XCTAssertEqual(lattice.object(ofType: Small.self, forPrimaryKey: Int64(9))?.label, "nine")
        XCTAssertNil(lattice.object(ofType: Small.self, forPrimaryKey: Int64(Int32.max) + 10))
        XCTAssertEqual(lattice.object(ofType: Named.self, forPrimaryKey: "x")?.value, 1.5)
        XCTAssertNil(lattice.object(ofType: Named.self, forPrimaryKey: 1))
    }

    func testIterationSeesEveryObjectInKeyOrderWithAllProperties() throws {
        let lattice = try Lattice(configuration: config)
        // Out of order, and more objects than one read batch.
        let ids = (1...1_000).map { Int64($0 * 7 % 1_009) }
        try lattice.write { for id in ids { try lattice.add(item(id)) } }
        let reopened = try Lattice(configuration: config)
        var seen: [Int64] = []
        for object in reopened.objects(Item.self) {
            seen.append(object.id)
            XCTAssertEqual(object.name, "item \(object.id)")
            XCTAssertEqual(object.group, Int(object.id % 3))
            XCTAssertEqual(object.nickname, object.id % 2 == 0 ? "even \(object.id)" : nil)
        }
        XCTAssertEqual(seen, ids.sorted())
        XCTAssertEqual(Array(reopened.objects(Item.self)).map(\.id), ids.sorted())
    }

    /// A loop over all objects that begins outside a write walks the class directly: writes made in the
    /// loop body must still not show it objects created after it began (keys below and above the
    /// existing ones, and a deleted primary key created again), and must skip deleted objects and show
    /// changed ones as they are when reached.
    func testWalkingAllObjectsIgnoresObjectsCreatedDuringTheLoop() throws {
        let lattice = try Lattice(configuration: config)
        try lattice.write { for id in stride(from: Int64(10), through: 6_000, by: 10) { try lattice.add(item(id)) } }
        var seen: [Int64] = []
        var names: [Int64: String] = [:]
        for object in lattice.objects(Item.self) {
            seen.append(object.id)
            names[object.id] = object.name
            if object.id == 50 {
                try lattice.write {
                    for id: Int64 in [60, 3_000, 5_990] { try lattice.delete(lattice.object(ofType: Item.self, forPrimaryKey: id)!) }
                    for id: Int64 in [55, 61, 2_995, 9_000] { try lattice.add(item(id)) }   // new keys between and after
                    try lattice.add(item(3_000))                                            // a deleted key created again
                    lattice.object(ofType: Item.self, forPrimaryKey: 70)!.name = "renamed"
                }
            }
        }
        let expected = stride(from: Int64(10), through: 6_000, by: 10).filter { ![60, 3_000, 5_990].contains($0) }
        XCTAssertEqual(seen, Array(expected))
        XCTAssertEqual(names[70], "renamed")
        XCTAssertEqual(lattice.objects(Item.self).count, 600 - 3 + 5)
        // The next loop sees everything.
        XCTAssertEqual(Array(lattice.objects(Item.self)).count, 602)
    }

    /// The same for a class keyed by an internal sequence (no integer primary key), with the new objects
    /// committed by another handle and picked up by `refresh()` in the loop.
    func testWalkingAllObjectsIgnoresObjectsAnotherHandleCreatedDuringTheLoop() throws {
        let lattice = try Lattice(configuration: config)
        let other = try Lattice(configuration: config)
        try lattice.write { for i in 0..<1_000 { let n = Named(); n.code = "c\(i)"; n.value = Double(i); try lattice.add(n) } }
        var seen = 0
        var sum = 0.0
        for object in lattice.objects(Named.self) {
            seen += 1
            sum += object.value
            if seen == 500 {
                try other.write {
                    for i in 1_000..<1_300 { let n = Named(); n.code = "c\(i)"; n.value = Double(i); try other.add(n) }
                    try other.delete(other.objects(Named.self).filter("code == 'c999'").first!)
                }
                XCTAssertTrue(lattice.refresh())
            }
        }
        XCTAssertEqual(seen, 999)
        XCTAssertEqual(sum, Double((0..<999).reduce(0, +)))
        XCTAssertEqual(lattice.objects(Named.self).count, 1_299)
    }

    func testIterationSkipsObjectsDeletedDuringTheLoopAndKeepsItsSnapshotOfKeys() throws {
        let lattice = try Lattice(configuration: config)
        try lattice.write { for id in 1...600 { try lattice.add(item(Int64(id))) } }
        var seen: [Int64] = []
        try lattice.write {
            for object in lattice.objects(Item.self) {
                seen.append(object.id)
                if object.id == 10 {
                    // Delete objects ahead of the loop, and add one it must not see.
                    for id in [11, 300, 301, 599] {
                        try lattice.delete(lattice.object(ofType: Item.self, forPrimaryKey: id)!)
                    }
                    try lattice.add(item(1_000))
                }
            }
        }
        XCTAssertEqual(seen, (1...600).map(Int64.init).filter { ![11, 300, 301, 599].contains($0) })
        XCTAssertEqual(lattice.objects(Item.self).count, 597)
    }

    /// `reversed()` of results walks the objects from the last as a `for … in` loop walks them from the
    /// first: the objects as they were when the loop began (objects created since, by this handle or
    /// another, passed over; objects deleted since skipped), each as fresh as when it is reached, in a
    /// whole class, filtered, sorted, and inside a write.
    func testReversedLoopsOverResultsSeeTheObjectsOfTheirStartInReverse() throws {
        let lattice = try Lattice(configuration: config)
        let ids = Array(stride(from: Int64(10), through: 3_000, by: 10))
        try lattice.write { for id in ids { try lattice.add(item(id)) } }
        let all = lattice.objects(Item.self)
        let groupOne = try all.filter("group == 1")
        let byName = try all.sorted(byKeyPath: "name")
        XCTAssertEqual(all.reversed().map(\.id), ids.reversed())
        XCTAssertEqual(groupOne.reversed().map(\.id), ids.filter { $0 % 3 == 1 }.reversed())
        XCTAssertEqual(byName.reversed().map(\.name), ids.map { "item \($0)" }.sorted().reversed())
        XCTAssertEqual(Array(all.reversed()).map(\.id), ids.reversed(), "objects kept stand for their own objects")

        // A loop that writes: new keys above, below and between (an integer primary key is the object's
        // key), deletes ahead of and behind the loop, a renamed object ahead.
        var seen: [Int64] = []
        var names: [Int64: String] = [:]
        for object in all.reversed() {
            seen.append(object.id)
            names[object.id] = object.name
            if object.id == 2_500 {
                try lattice.write {
                    for id: Int64 in [2_490, 1_000, 20, 2_800] { try lattice.delete(lattice.object(ofType: Item.self, forPrimaryKey: id)!) }
                    for id: Int64 in [5, 1_005, 2_495, 9_000] { try lattice.add(item(id)) }
                    try lattice.add(item(1_000))   // a deleted key created again: a new object
                    lattice.object(ofType: Item.self, forPrimaryKey: 700)!.name = "renamed"
                }
            }
        }
        XCTAssertEqual(seen, ids.reversed().filter { ![2_490, 1_000, 20].contains($0) })
        XCTAssertEqual(names[700], "renamed")
        XCTAssertEqual(all.reversed().map(\.id), (ids + [5, 1_005, 2_495, 9_000]).filter { ![2_490, 20, 2_800].contains($0) }.sorted().reversed())

        // An iterator made before a write that adds objects above the class's last key walks what the
        // class held when it was made.
        var iterator = all.reversed().makeIterator()
        try lattice.write { try lattice.add(item(10_000)) }
        XCTAssertEqual(iterator.next()?.id, 9_000)

        // Another handle's commits picked up by `refresh()` in the loop; a class without an integer primary key.
        let other = try Lattice(configuration: config)
        try lattice.write { for i in 0..<600 { let n = Named(); n.code = "c\(i)"; n.value = Double(i); try lattice.add(n) } }
        var values: [Double] = []
        for named in lattice.objects(Named.self).reversed() {
            values.append(named.value)
            if values.count == 100 {
                try other.write {
                    for i in 600..<700 { let n = Named(); n.code = "c\(i)"; n.value = Double(i); try other.add(n) }
                    try other.delete(other.objects(Named.self).filter("code == 'c0'").first!)
                }
                XCTAssertTrue(lattice.refresh())
            }
        }
        XCTAssertEqual(values, (1..<600).reversed().map(Double.init))

        // Inside a write: each object as it is when reached; objects deleted ahead are skipped.
        try lattice.write {
            var reached: [Int64] = []
            for object in groupOne.reversed() {
                reached.append(object.id)
                if reached.count == 3 { try lattice.delete(groupOne[groupOne.count - 5]) }
                if reached.count == 4 { groupOne[groupOne.count - 7].name = "changed ahead" }
                if reached.count == 7 { XCTAssertEqual(object.name, "changed ahead") }
            }
            XCTAssertEqual(reached.count, groupOne.count)
            XCTAssertEqual(reached, groupOne.map(\.id).reversed())
        }
    }

    /// The reversed collection is a view: positions count from the last object and follow changes;
    /// `last(where:)` tests from the last; reversing twice gives the collection; where a
    /// `ReversedCollection` is asked for by type, the standard library's is used.
    func testReversedResultsAsACollection() throws {
        let lattice = try Lattice(configuration: config)
        try lattice.write { for id in 1...500 { try lattice.add(item(Int64(id))) } }
        let results = try lattice.objects(Item.self).filter("group != 0")
        let reversed = results.reversed()
        let expected = Array((1...500).filter { $0 % 3 != 0 }.reversed()).map(Int64.init)
        XCTAssertEqual(reversed.count, expected.count)
        XCTAssertEqual(reversed[0].id, 500)
        XCTAssertEqual(reversed[reversed.count - 1].id, 1)
        XCTAssertEqual(reversed.indices.map { reversed[$0].id }, expected)
        XCTAssertEqual(reversed.first?.id, 500)
        XCTAssertEqual(reversed.last?.id, 1)
        XCTAssertEqual(reversed.prefix(3).map(\.id), [500, 499, 497])
        XCTAssertEqual(reversed.reversed().map(\.id), results.map(\.id))
        XCTAssertEqual(results.last { $0.id % 7 == 0 }?.id, 497)
        XCTAssertNil(results.last { $0.id > 500 })
        XCTAssertNil(try lattice.objects(Item.self).filter("id > 500").last { _ in true })
        let standard: ReversedCollection<Results<Item>> = results.reversed()
        XCTAssertEqual(standard.map(\.id), expected)
        let array: [Item] = results.reversed()
        XCTAssertEqual(array.map(\.id), expected)
        try lattice.write { try lattice.add(item(502)) }
        XCTAssertEqual(reversed[0].id, 502, "the view follows the results")
        XCTAssertEqual(reversed.count, expected.count + 1)

    }

    func testAppendedAndOutOfOrderInsertsKeepIndexesAndRejectDuplicates() throws {
        let lattice = try Lattice(configuration: config)
        try lattice.write {
            for id in [10, 20, 30] { try lattice.add(item(Int64(id))) }
            try lattice.add(item(15))   // below the last key
            try lattice.add(item(40))   // above it
        }
        XCTAssertThrowsError(try lattice.write { try lattice.add(item(40)) }) { error in
            guard case LatticeError.duplicatePrimaryKey = error else { return XCTFail("\(error)") }
        }
        XCTAssertThrowsError(try lattice.write { try lattice.add(item(15)) }) { error in
            guard case LatticeError.duplicatePrimaryKey = error else { return XCTFail("\(error)") }
        }
        try lattice.write { try lattice.add(item(40), update: .modified) }
        let reopened = try Lattice(configuration: config)
        XCTAssertEqual(reopened.objects(Item.self).map(\.id), [10, 15, 20, 30, 40])
        // The group index holds exactly one entry per object.
        let info = try XCTUnwrap(reopened.classInfo(Item.self))
        let group = try XCTUnwrap(info.property(named: "group"))
        var indexed: [Int64] = []
        for value in 0..<3 {
            var payload: [UInt8] = []
            value._latticeEncode(into: &payload)
            indexed += reopened.reading("test") { _ in try reopened.indexLookup(group, payload: payload) }
        }
        XCTAssertEqual(indexed.sorted(), [10, 15, 20, 30, 40])
    }

    func testRecordsWithWideOffsetsRoundTripThroughAddUpdateAndReopen() throws {
        let lattice = try Lattice(configuration: config)
        let long = String(repeating: "x", count: 300)
        let huge = String(repeating: "y", count: 70_000)
        try lattice.write {
            let a = item(1)
            a.name = long
            try lattice.add(a)
            let b = item(2)
            b.name = huge
            b.nickname = long
            try lattice.add(b)
        }
        try lattice.write {
            lattice.object(ofType: Item.self, forPrimaryKey: 1)!.nickname = huge
            lattice.object(ofType: Item.self, forPrimaryKey: 2)!.name = "short"
        }
        let reopened = try Lattice(configuration: config)
        let a = try XCTUnwrap(reopened.object(ofType: Item.self, forPrimaryKey: 1))
        XCTAssertEqual(a.name, long)
        XCTAssertEqual(a.nickname, huge)
        XCTAssertEqual(a.group, 1)
        let b = try XCTUnwrap(reopened.object(ofType: Item.self, forPrimaryKey: 2))
        XCTAssertEqual(b.name, "short")
        XCTAssertEqual(b.nickname, long)
    }

    func testAWriteThatOutgrowsTheMapIsReplayedCompletely() throws {
        config.initialMapSize = 64 << 10
        let lattice = try Lattice(configuration: config)
        try lattice.write {
            for id in 1...3_000 {
                let object = item(Int64(id))
                object.name = String(repeating: "z", count: 100 + id % 50)
                try lattice.add(object)
            }
            // Updates and deletes after the growth are logged and replayed too.
            lattice.object(ofType: Item.self, forPrimaryKey: 7)!.name = "seven"
            try lattice.delete(lattice.object(ofType: Item.self, forPrimaryKey: 8)!)
        }
        let reopened = try Lattice(configuration: config)
        XCTAssertEqual(reopened.objects(Item.self).count, 2_999)
        XCTAssertEqual(reopened.object(ofType: Item.self, forPrimaryKey: 7)?.name, "seven")
        XCTAssertNil(reopened.object(ofType: Item.self, forPrimaryKey: 8))
        XCTAssertEqual(reopened.object(ofType: Item.self, forPrimaryKey: 3_000)?.name.count, 100 + 3_000 % 50)
    }
}

extension ReadPathTests {
    func testReadsAfterACommitSeeIt() throws {
        let lattice = try Lattice(configuration: config)
        XCTAssertEqual(lattice.objects(Item.self).count, 0)   // opens a read snapshot
        try lattice.write { try lattice.add(item(1)) }
        XCTAssertEqual(lattice.objects(Item.self).count, 1)
        XCTAssertEqual(lattice.object(ofType: Item.self, forPrimaryKey: 1)?.name, "item 1")
    }

    /// A scan over a file larger than the release threshold must not leave the whole file mapped into the
    /// process: the pages it walked leave the resident set as it goes, and every value still reads right.
    func testLongScansLeaveTheFilesPagesOutOfTheResidentSet() throws {
        config.residentScanBytes = 1 << 20   // 16 MiB by default; a smaller file shows the same
        let payload = { (id: Int64) in String(repeating: Character(UnicodeScalar(UInt8(97 + id % 26))), count: 1500) }
        do {
            let lattice = try Lattice(configuration: config)
            try lattice.write {
                for id in Int64(1)...6_000 {
                    let item = Item()
                    item.id = id
                    item.name = payload(id)
                    try lattice.add(item)
                }
            }
        }
        let fileBytes = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: config.fileURL!.path)[.size] as? Int)
        XCTAssertGreaterThan(fileBytes, 8 << 20)
        let lattice = try Lattice(configuration: config)
        let before = try residentFileKB()
        for _ in 0..<2 {   // the second pass re-reads pages the first one released
            var n = 0
            for item in lattice.objects(Item.self) {
                n += 1
                XCTAssertEqual(item.name, payload(item.id), "item \(item.id)")
            }
            XCTAssertEqual(n, 6_000)
        }
        let grownMB = Double(try residentFileKB() - before) / 1024
        XCTAssertLessThan(grownMB, 4, "file pages resident after scanning \(fileBytes >> 20) MB")
    }

    /// The process's resident file-backed pages (RssFile), in KiB.
    private func residentFileKB() throws -> Int {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let line = try XCTUnwrap(status.split(separator: "\n").first { $0.hasPrefix("RssFile:") })
        return try XCTUnwrap(Int(line.split(separator: " ")[1]))
    }
}

/// Positional access (`results[i]`, and so `map`, index loops and slices) reads ahead in batches and
/// gives exactly what iteration gives, in any order of positions and across writes.
final class PositionalReadTests: XCTestCase {
    func testPositionalAccessMatchesIterationInAnyOrder() throws {
        let db = makeTempDatabase("positional")
        let lattice = try db.open([FixtureItem.self])
        try lattice.write {
            for id in 1...700 { try lattice.create(FixtureItem.self, value: ["id": id, "name": "item \(id)", "rank": id % 7]) }
        }
        for results in [lattice.objects(FixtureItem.self), try lattice.objects(FixtureItem.self).filter("rank == 3"),
                        try lattice.objects(FixtureItem.self).sorted(byKeyPath: "name", ascending: false)] {
            let iterated = Array(results).map(\.name)
            XCTAssertEqual(results.map(\.name), iterated)
            XCTAssertEqual((0..<results.count).map { results[$0].name }, iterated)
            XCTAssertEqual((0..<results.count).reversed().map { results[$0].name }, iterated.reversed())
            XCTAssertEqual(stride(from: 0, to: results.count, by: 3).map { results[$0].name },
                           stride(from: 0, to: iterated.count, by: 3).map { iterated[$0] })
            XCTAssertEqual(results.prefix(5).map(\.name), Array(iterated.prefix(5)))
            XCTAssertEqual(results.last?.name, iterated.last)
        }
        // Writes between positional reads: each read sees the current state.
        let all = lattice.objects(FixtureItem.self)
        try lattice.write {
            for i in 0..<10 {
                let item = all[i]
                item.name = "renamed \(i)"
                XCTAssertEqual(all[i].name, "renamed \(i)")
                if i == 5 { try lattice.delete(all[0]) }
            }
        }
        XCTAssertEqual(all.count, 699)
        XCTAssertEqual(all[0].name, "renamed 1")
    }

    /// Reads by position near the start of a whole class, before its keys were read (the first rows of a
    /// table), read only the first keys; they must give what the whole keys give, through adds, deletes,
    /// another handle's commits, and positions past the first keys read and past the end.
    func testPositionsNearTheStartOfAWholeClassFollowEveryChange() throws {
        let db = makeTempDatabase("positional")
        let lattice = try db.open([FixtureItem.self])
        try lattice.write {
            for id in stride(from: 2, through: 6_000, by: 2) {
                try lattice.create(FixtureItem.self, value: ["id": id, "name": "item \(id)", "rank": id % 7])
            }
        }
        func check(_ results: Results<FixtureItem>, _ positions: [Int], line: UInt = #line) {
            let expected = Array(results).map(\.id)  // iteration walks the table: independent of positions
            for p in positions where p < expected.count {
                XCTAssertEqual(results[p].id, expected[p], "position \(p)", line: line)
            }
        }
        let positions = [0, 1, 10, 63, 64, 65, 200, 1_023, 1_024, 1_500, 2_999, 5, 0]
        check(lattice.objects(FixtureItem.self), positions)
        XCTAssertEqual(lattice.objects(FixtureItem.self).prefix(10).map(\.id), Array(stride(from: 2, through: 20, by: 2)))

        let all = lattice.objects(FixtureItem.self)
        XCTAssertEqual(all[3].id, 8)
        try lattice.write {
            try lattice.create(FixtureItem.self, value: ["id": 1, "name": "first", "rank": 0])  // a new first object
            XCTAssertEqual(all[0].id, 1)
            XCTAssertEqual(all[4].id, 8)
            try lattice.delete(all[1])                                                          // object 2
            XCTAssertEqual(all[1].id, 4)
            XCTAssertEqual(all[100].id, 2 * 100 + 2)
            all[100].name = "changed"                                                           // a value write keeps keys
            XCTAssertEqual(all[100].name, "changed")
            try lattice.create(FixtureItem.self, value: ["id": 7, "name": "seven", "rank": 0])
            XCTAssertEqual(all[3].id, 7)
            XCTAssertEqual(all[4].id, 8)
            check(all, positions)
        }
        let other = try db.open([FixtureItem.self])
        try other.write {
            try other.delete(other.objects(FixtureItem.self).filter("id < 10"))
            try other.create(FixtureItem.self, value: ["id": 3, "name": "three", "rank": 0])
        }
        lattice.refresh()
        XCTAssertEqual(all[0].id, 3)
        XCTAssertEqual(all[1].id, 10)
        check(all, positions)

        // A class smaller than the first batch of keys: every position, then the last.
        try lattice.write { try lattice.delete(lattice.objects(FixtureItem.self).filter("id > 40")) }
        let few = lattice.objects(FixtureItem.self)
        XCTAssertEqual((0..<few.count).map { few[$0].id }, Array(few).map(\.id))
        XCTAssertEqual(few[few.count - 1].id, 40)
    }

    func testBackwardReadsGiveEveryObjectInReverseOrder() throws {
        let db = makeTempDatabase("positional")
        let lattice = try db.open([FixtureItem.self])
        // Records of ~1 KB: a batch stops at 64 KB, well before its count, so backward batches end early.
        let padding = String(repeating: "x", count: 1_000)
        try lattice.write {
            for id in 1...900 {
                try lattice.create(FixtureItem.self, value: ["id": id, "name": "item \(id)", "rank": id % 4, "note": padding])
            }
        }
        for results in [lattice.objects(FixtureItem.self), try lattice.objects(FixtureItem.self).filter("rank == 1"),
                        try lattice.objects(FixtureItem.self).sorted(byKeyPath: "name")] {
            let forward = results.map(\.id)
            XCTAssertEqual(results.reversed().map(\.id), forward.reversed())
            var seen: [Int] = []
            _ = results.last { seen.append($0.id); return false }
            XCTAssertEqual(seen, forward.reversed())
            XCTAssertEqual(results.last { $0.id % 100 == 7 }?.id, forward.last { $0 % 100 == 7 })
            // Directions mixed: back from the middle, then forward again, then jumps.
            let middle = forward.count / 2
            XCTAssertEqual((0...middle).reversed().map { results[$0].id }, forward[0...middle].reversed())
            XCTAssertEqual((middle..<forward.count).map { results[$0].id }, Array(forward[middle...]))
            XCTAssertEqual([5, 4, 90, 89, 88, 3].map { results[$0].id }, [5, 4, 90, 89, 88, 3].map { forward[$0] })
        }
        // Backwards inside a write that deletes ahead of the loop: each read sees the current state.
        let all = lattice.objects(FixtureItem.self)
        var expected = Array(1...900)
        try lattice.write {
            var position = all.count - 1
            while position >= 0 {
                XCTAssertEqual(all[position].id, expected[position])
                if position % 50 == 0 && position > 0 {
                    try lattice.delete(all[position - 1])
                    expected.remove(at: position - 1)
                    position -= 1
                }
                position -= 1
            }
        }
        XCTAssertEqual(expected.count, 900 - 17)
        XCTAssertEqual(all.map(\.id), expected)
    }

    /// Positions of a whole class are learnt from both ends while they are read (runs up from the start
    /// and down from the end read keys and records in one walk): any mix of runs either way, single steps,
    /// jumps near either end or into the middle and positions asked again gives what the model says, on
    /// fresh results, inside a write that changes values, adds and deletes objects, and after another
    /// handle's commits; instances kept by the caller stay the objects they were (the class recycles
    /// instances a caller let go).
    func testWholeClassPositionsInAnyOrderAcrossChanges() throws {
        typealias Plain = IterationRecyclingTests.Plain
        let db = makeTempDatabase("positional")
        let lattice = try db.open([Plain.self])
        var ids: [Int64] = []
        try lattice.write {
            for i in 0..<3_000 {
                let id = Int64(i * 3)
                try lattice.create(Plain.self, value: ["id": id, "name": "n\(id)"])
                ids.append(id)
            }
        }
        var random = SeededGenerator(state: 17)
        var nextID: Int64 = 1
        var renamed: [Int64: String] = [:]
        func name(_ id: Int64) -> String { renamed[id] ?? "n\(id)" }
        /// `steps` reads of `results` by position; `change` runs every 40 reads (a write's changes).
        func read(_ results: Results<Plain>, steps: Int, change: (() throws -> Void)? = nil, line: UInt = #line) throws {
            var kept: [(Plain, Int64)] = []
            var p = 0
            var step = 0
            func check() {
                let object = results[p]
                XCTAssertEqual(object.id, ids[p], "position \(p) of \(ids.count), step \(step)", line: line)
                XCTAssertEqual(object.name, name(ids[p]), line: line)
                if random.next(20) == 0 { kept.append((object, ids[p])) }
                step += 1
            }
            while step < steps {
                if let change, step % 40 == 39 { try change() }
                let n = ids.count
                XCTAssertEqual(results.count, n, line: line)
                p = Swift.min(p, n - 1)
                switch random.next(8) {
                case 0: p = Swift.min(p + 1, n - 1)
                case 1: p = Swift.max(p - 1, 0)
                case 2: p = random.next(Swift.min(n, 1_500))              // near the start
                case 3: p = n - 1 - random.next(Swift.min(n, 1_500))      // near the end
                case 4: p = random.next(n)                                 // anywhere
                case 5, 6:                                                 // a run up or down
                    let up = random.next(2) == 0
                    for _ in 0..<random.next(200) {
                        p = up ? Swift.min(p + 1, n - 1) : Swift.max(p - 1, 0)
                        check()
                    }
                default: break                                             // the same position again
                }
                check()
            }
            for (object, id) in kept where !object.isInvalidated {
                XCTAssertEqual(object.id, id, line: line)
            }
        }

        // Read-only, each time on fresh results: the first reads start from nothing known.
        for _ in 0..<4 { try read(lattice.objects(Plain.self), steps: 1_500) }
        // A full run up, and a full run down, on fresh results (every key learnt by one walk).
        let up = lattice.objects(Plain.self)
        XCTAssertEqual((0..<up.count).map { up[$0].id }, ids)
        let down = lattice.objects(Plain.self)
        XCTAssertEqual(down.reversed().map(\.id), ids.reversed())
        XCTAssertEqual(lattice.objects(Plain.self)[ids.count - 1].id, ids.last)

        // Inside a write: value writes (keys unchanged), new objects anywhere, deletes anywhere.
        let live = lattice.objects(Plain.self)
        try lattice.write {
            try read(live, steps: 3_000, change: {
                switch random.next(3) {
                case 0:
                    let p = random.next(ids.count)
                    live[p].name = "renamed \(p)"
                    renamed[ids[p]] = "renamed \(p)"
                case 1:
                    nextID += 3 * Int64(random.next(40))   // ids 1, 4, 7, ...: between the existing ones
                    try lattice.create(Plain.self, value: ["id": nextID, "name": "n\(nextID)"])
                    ids.insert(nextID, at: ids.firstIndex { $0 > nextID } ?? ids.count)
                    nextID += 3
                default:
                    let p = random.next(ids.count)
                    try lattice.delete(live[p])
                    ids.remove(at: p)
                }
            })
        }
        XCTAssertEqual(Array(live).map(\.id), ids)

        // Another handle's commits, seen after a refresh.
        let other = try db.open([Plain.self])
        for round in 0..<3 {
            try other.write {
                let all = other.objects(Plain.self)
                for _ in 0..<20 {
                    let p = random.next(ids.count)
                    try other.delete(all[p])
                    ids.remove(at: p)
                }
                let id = Int64(100_000 + round)
                try other.create(Plain.self, value: ["id": id, "name": "n\(id)"])
                ids.append(id)
            }
            lattice.refresh()
            try read(live, steps: 800)
        }
        XCTAssertEqual(Array(live).map(\.id), ids)
    }

    func testNestedListsLinksAndBacklinksReadInALoopStayCurrent() throws {
        let db = makeTempDatabase("nested")
        let lattice = try db.open([Owner.self, Pet.self, Address.self])
        try lattice.write {
            for o in 0..<300 {
                let owner = Owner()
                owner.name = "owner \(o)"
                try lattice.add(owner)
                for p in 0..<(o % 4) {
                    let pet = Pet()
                    pet.name = "pet \(o).\(p)"
                    pet.owner = owner
                    owner.dogs.append(pet)
                }
            }
        }
        var pets = 0
        for owner in lattice.objects(Owner.self) {
            let n = Int(owner.name.dropFirst(6))! % 4
            XCTAssertEqual(owner.dogs.count, n)
            XCTAssertEqual(owner.dogs.first?.name, n == 0 ? nil : "\(owner.name.replacingOccurrences(of: "owner", with: "pet")).0")
            var names: [String] = []
            for pet in owner.dogs {
                names.append(pet.name)
                XCTAssertEqual(pet.owner?.name, owner.name)
                XCTAssertEqual(pet.walkers.count, 1)
                XCTAssertEqual(pet.walkers.first?.name, owner.name)
                pets += 1
            }
            XCTAssertEqual(names, (0..<n).map { "\(owner.name.replacingOccurrences(of: "owner", with: "pet")).\($0)" })
        }
        XCTAssertEqual(pets, 450)

        // Objects reached through links keep reading the current state after another handle's commit.
        let pet = try XCTUnwrap(lattice.objects(Pet.self).first)
        let owner = try XCTUnwrap(pet.owner)
        let walker = try XCTUnwrap(pet.walkers.first)
        let other = try db.open([Owner.self, Pet.self, Address.self])
        try other.write {
            let o = try XCTUnwrap(other.objects(Owner.self).filter("name == %@", owner.name).first)
            o.name = "renamed"
            o.dogs.append(Pet())
        }
        lattice.refresh()
        XCTAssertEqual(owner.name, "renamed")
        XCTAssertEqual(walker.name, "renamed")
        XCTAssertEqual(pet.owner?.name, "renamed")
        XCTAssertEqual(owner.dogs.count, 2)
        // Inside a write: appends not yet stored are counted and listed.
        try lattice.write {
            owner.dogs.append(Pet())
            XCTAssertEqual(owner.dogs.count, 3)
            XCTAssertEqual(Array(owner.dogs).count, 3)
        }
        XCTAssertEqual(owner.dogs.count, 3)
        // An unmanaged object's linking objects are empty.
        let unmanaged = Pet()
        XCTAssertEqual(unmanaged.walkers.count, 0)
        XCTAssertTrue(Array(unmanaged.walkers).isEmpty)
        XCTAssertNil(unmanaged.walkers.first)
    }

    func testResultsReadByPositionInsideAWriteStayLive() throws {
        let db = makeTempDatabase("live")
        let lattice = try db.open([FixtureItem.self])
        try lattice.write {
            for id in 1...400 { try lattice.create(FixtureItem.self, value: ["id": id, "name": "item \(1000 - id)", "rank": id % 4]) }
        }
        let all = lattice.objects(FixtureItem.self)
        let ranked = try all.filter("rank == 1")
        let byName = try all.sorted(byKeyPath: "name")
        let byNote = try all.sorted(byKeyPath: "note")
        try lattice.write {
            // Writes of columns the results do not select or sort by: the same objects, new values.
            for i in 0..<all.count { all[i].note = "n\(i)" }
            for i in 0..<byName.count { byName[i].note = "sorted \(i)" }
            XCTAssertEqual(byName.map(\.id), (1...400).reversed())
            XCTAssertEqual(all[0].note, "sorted 399")
            for i in 0..<ranked.count { ranked[i].name = "ranked \(ranked[i].id)" }
            XCTAssertEqual(ranked.count, 100)
            XCTAssertEqual(ranked.map(\.name), stride(from: 1, through: 397, by: 4).map { "ranked \($0)" })
            // Writes of the selected or sorted column: the results change at once.
            ranked[0].rank = 2
            XCTAssertEqual(ranked.count, 99)
            XCTAssertEqual(ranked[0].id, 5)
            byNote[0].note = "zzz"
            XCTAssertEqual(byNote.last?.note, "zzz")
            XCTAssertEqual(byNote.first?.note, "sorted 1")
            // Objects added and deleted: every results sees them.
            let added = try lattice.create(FixtureItem.self, value: ["id": 401, "name": "item 0", "rank": 1])
            XCTAssertEqual(all.count, 401)
            XCTAssertEqual(all[400].id, 401)
            XCTAssertEqual(ranked.last?.id, 401)
            XCTAssertEqual(byName[0].id, 401)
            try lattice.delete(all[0])
            XCTAssertEqual(all.count, 400)
            XCTAssertEqual(all[0].id, 2)
            XCTAssertEqual(byName.first?.id, 401)   // "item 0"
            XCTAssertEqual(byName.last?.id, 97)     // "ranked 97"
            XCTAssertFalse(byName.contains { $0.id == 1 })
            XCTAssertEqual(added.rank, 1)
        }
        // Another handle's commit, seen after refresh.
        let other = try db.open([FixtureItem.self])
        try other.write {
            try other.create(FixtureItem.self, value: ["id": 500, "name": "item 500", "rank": 1])
            other.objects(FixtureItem.self)[0].rank = 1
        }
        lattice.refresh()
        XCTAssertEqual(all.count, 401)
        XCTAssertEqual(all[400].id, 500)
        XCTAssertEqual(ranked.first?.id, 2)
        XCTAssertEqual(ranked.last?.id, 500)
        // Results through a link follow writes of the linked object.
        let owners = try makeTempDatabase("live-links").open([Owner.self, Pet.self, Address.self])
        try owners.write {
            for i in 0..<20 {
                let pet = Pet()
                pet.name = "pet \(i)"
                let owner = Owner()
                owner.name = i % 2 == 0 ? "even" : "odd"
                pet.owner = owner
                try owners.add(pet)
            }
        }
        let evenPets = try owners.objects(Pet.self).filter("owner.name == 'even'")
        try owners.write {
            XCTAssertEqual(evenPets.count, 10)
            for i in 0..<evenPets.count where i < 3 { evenPets[0].owner?.name = "renamed" }
            XCTAssertEqual(evenPets.count, 7)
            for i in 0..<evenPets.count { evenPets[i].age = i }
            XCTAssertEqual(evenPets.map(\.age), Array(0..<7))
        }
    }

    func testFirstAndIsEmptyOfAScanningQuery() throws {
        let db = makeTempDatabase("first-scan")
        let lattice = try db.open([FixtureItem.self])
        try lattice.write {
            for id in 1...300 { try lattice.create(FixtureItem.self, value: ["id": id, "name": "item \(id)", "rank": id % 3, "note": "n\(id % 7)"]) }
        }
        // `note` has no index: the query scans the class.
        let sevens = try lattice.objects(FixtureItem.self).filter("note == 'n0'")
        XCTAssertFalse(sevens.isEmpty)
        XCTAssertEqual(sevens.first?.id, 7)
        XCTAssertEqual(sevens.last?.id, 294)
        let none = try lattice.objects(FixtureItem.self).filter("note == 'n9'")
        XCTAssertTrue(none.isEmpty)
        XCTAssertNil(none.first)
        // With a predicate an index could serve in part, and after writes (inside a write, then committed).
        let mixed = try lattice.objects(FixtureItem.self).filter("rank == 1 AND note BEGINSWITH 'n3'")
        XCTAssertEqual(mixed.first?.id, 10)
        try lattice.write {
            try lattice.delete(try XCTUnwrap(sevens.first))
            XCTAssertEqual(sevens.first?.id, 14)
            let item = try XCTUnwrap(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 2))
            item.note = "n9"
            XCTAssertFalse(none.isEmpty)
            XCTAssertEqual(none.first?.id, 2)
        }
        XCTAssertEqual(sevens.first?.id, 14)
        XCTAssertEqual(none.map(\.id), [2])
        XCTAssertEqual(try lattice.objects(FixtureItem.self).filter("note == 'n0'").sorted(byKeyPath: "id", ascending: false).first?.id, 294)
    }

    func testFirstAndLastOfListsAndLinkingObjectsFollowEveryChange() throws {
        let db = makeTempDatabase("ends")
        let lattice = try db.open([Owner.self, Pet.self, Address.self])
        let owner = Owner()
        owner.name = "owner"
        let loved = Pet()
        loved.name = "loved"
        try lattice.write {
            try lattice.add(owner)
            for i in 0..<600 {   // several chunks
                let pet = Pet()
                pet.name = "pet \(i)"
                owner.dogs.append(pet)
            }
            // `loved` is walked by three owners, twice by the last one.
            for name in ["a", "b", "c"] {
                let walker = Owner()
                walker.name = name
                walker.dogs.append(loved)
                if name == "c" { walker.dogs.append(loved) }
                try lattice.add(walker)
            }
        }
        XCTAssertEqual(owner.dogs.first?.name, "pet 0")
        XCTAssertEqual(owner.dogs.last?.name, "pet 599")
        XCTAssertEqual(loved.walkers.first?.name, "a")
        XCTAssertEqual(loved.walkers.last?.name, "c")
        XCTAssertEqual(loved.walkers.count, 4)
        try lattice.write {
            owner.dogs.append(loved)
            XCTAssertEqual(owner.dogs.last?.name, "loved")   // an append not yet stored
            // Linking objects are in the order of their object keys: `owner` was added first.
            XCTAssertEqual(loved.walkers.first?.name, "owner")
            XCTAssertEqual(loved.walkers.last?.name, "c")
            owner.dogs.remove(at: 0)
            XCTAssertEqual(owner.dogs.first?.name, "pet 1")
        }
        XCTAssertEqual(owner.dogs.first?.name, "pet 1")
        XCTAssertEqual(owner.dogs.last?.name, "loved")
        try lattice.write { try lattice.delete(lattice.objects(Owner.self).filter("name == 'a'")) }
        XCTAssertEqual(loved.walkers.map(\.name), ["owner", "b", "c", "c"])
        try lattice.write { owner.dogs.removeLast() }
        XCTAssertEqual(loved.walkers.first?.name, "b")
        try lattice.write { owner.dogs.removeAll() }
        XCTAssertNil(owner.dogs.first)
        XCTAssertNil(owner.dogs.last)
        try lattice.write { for i in 0..<599 { owner.dogs.append(Pet()); owner.dogs[i].name = "p" } }
        // Writing a property of each element by position keeps the lists' keys; an append changes them.
        try lattice.write {
            let dogs = owner.dogs
            for i in 0..<dogs.count { dogs[i].age = i }
            for i in 0..<loved.walkers.count { loved.walkers[i].name += "!" }
            dogs.append(Pet())
            XCTAssertEqual(dogs.count, 600)
            XCTAssertEqual(dogs[599].age, 0)
        }
        XCTAssertEqual(owner.dogs.map(\.age).prefix(599), ArraySlice(0..<599))
        // `c` walks `loved` twice: renamed twice.
        XCTAssertEqual(loved.walkers.map(\.name), ["b!", "c!!", "c!!"])
    }

    /// An owner whose `dogs` list pets "pet 0" … (age `i`; listed twice where `twice` says so), and a pet
    /// "loved" (age -1) that owners "fan 0" … have as `best`.
    private func ownerAndLoved(_ lattice: Lattice, count: Int, twice: (Int) -> Bool = { _ in false }) throws -> (Owner, Pet) {
        let owner = Owner()
        let loved = Pet()
        loved.name = "loved"
        loved.age = -1
        try lattice.write {
            try lattice.add(owner)
            try lattice.add(loved)
            for i in 0..<count {
                let pet = Pet()
                pet.name = "pet \(i)"
                pet.age = i
                owner.dogs.append(pet)
                if twice(i) { owner.dogs.append(pet) }
                let fan = Owner()
                fan.name = "fan \(i)"
                fan.best = loved
                try lattice.add(fan)
            }
        }
        return (owner, loved)
    }

    func testEveryReadPathOfListsAndLinkingObjectsGivesTheSameObjectsInOrder() throws {
        let db = makeTempDatabase("positional")
        let lattice = try db.open([Owner.self, Pet.self, Address.self])
        let (owner, loved) = try ownerAndLoved(lattice, count: 700) { $0 % 7 == 0 }  // some dogs twice
        let expectedDogs = (0..<700).flatMap { $0 % 7 == 0 ? ["pet \($0)", "pet \($0)"] : ["pet \($0)"] }
        let dogs = owner.dogs
        XCTAssertEqual(dogs.map(\.name), expectedDogs)
        var looped: [String] = []
        for dog in dogs { looped.append(dog.name) }
        XCTAssertEqual(looped, expectedDogs)
        XCTAssertEqual((0..<dogs.count).map { dogs[$0].name }, expectedDogs)
        XCTAssertEqual((0..<dogs.count).reversed().map { dogs[$0].name }, expectedDogs.reversed())
        XCTAssertEqual(dogs.prefix(10).map(\.name), Array(expectedDogs.prefix(10)))
        XCTAssertEqual(dogs.first?.name, "pet 0")
        XCTAssertEqual(dogs.last?.name, "pet 699")
        // Objects kept by the caller are never handed out again for another entry.
        let kept = Array(dogs)
        XCTAssertEqual(kept.map(\.name), expectedDogs)
        XCTAssertEqual(Set(kept.map(ObjectIdentifier.init)).count, kept.count)
        let mapped = dogs.map { $0 }
        XCTAssertEqual(mapped.map(\.name), expectedDogs)

        let fans = loved.fans
        let expectedFans = (0..<700).map { "fan \($0)" }
        XCTAssertEqual(fans.count, 700)
        XCTAssertEqual(fans.map(\.name), expectedFans)
        looped = []
        for fan in fans { looped.append(fan.name) }
        XCTAssertEqual(looped, expectedFans)
        XCTAssertEqual((0..<fans.count).map { fans[$0].name }, expectedFans)
        XCTAssertEqual((0..<fans.count).reversed().map { fans[$0].name }, expectedFans.reversed())
        XCTAssertEqual(Set(Array(fans).map(ObjectIdentifier.init)).count, 700)

        // Writes between reads: each read sees the current state.
        try lattice.write {
            dogs[3].name = "renamed"
            XCTAssertEqual(dogs[3].name, "renamed")
            dogs.remove(at: 0)
            XCTAssertEqual(dogs[2].name, "renamed")
            try lattice.delete(fans[0])
            XCTAssertEqual(fans.count, 699)
            XCTAssertEqual(fans[0].name, "fan 1")
        }
        XCTAssertEqual(dogs.count, expectedDogs.count - 1)
        XCTAssertEqual(Array(fans).count, 699)
    }

    /// `reversed()` and `last(where:)` of LinkingObjects read from the last linking object as a loop reads
    /// from the first: kept objects stay distinct, objects deleted ahead of the loop are skipped.
    func testReversedLinkingObjects() throws {
        let db = makeTempDatabase("reversed-backlinks")
        let pets = try db.open([Owner.self, Pet.self, Address.self])
        let (_, loved) = try ownerAndLoved(pets, count: 400)
        let fans = loved.fans
        let names = (0..<400).map { "fan \($0)" }
        XCTAssertEqual(fans.reversed().map(\.name), names.reversed())
        XCTAssertEqual(fans.reversed()[0].name, "fan 399")
        XCTAssertEqual(fans.last { $0.name.hasSuffix("7") }?.name, "fan 397")
        XCTAssertEqual(Set(Array(fans.reversed()).map(ObjectIdentifier.init)).count, 400)
        var seen: [String] = []
        for fan in fans.reversed() {
            seen.append(fan.name)
            if seen.count == 10 { try pets.write { try pets.delete(fans[100]) } }   // ahead of the loop: skipped
        }
        XCTAssertEqual(seen, names.reversed().filter { $0 != "fan 100" })
        XCTAssertTrue(LinkingObjects<Owner>().reversed().isEmpty)
    }

    /// Positions read ahead (an index loop, `reversed()`) are handed out from the batch only while
    /// nothing changed: a rename, a removal or another handle's commit taken by `refresh()` between two
    /// reads of positions the batch already holds must show in the second read, in both directions.
    func testPositionsReadAheadFollowChangesInsideTheBatch() throws {
        let db = makeTempDatabase("positional")
        let lattice = try db.open([Owner.self, Pet.self, Address.self])
        let (owner, loved) = try ownerAndLoved(lattice, count: 300)
        let other = try db.open([Owner.self, Pet.self, Address.self])
        let dogs = owner.dogs
        let fans = loved.fans
        let pets = try lattice.objects(Pet.self).filter("age >= 0")
        // Read ahead forwards to position 40, then change what positions 20 and 21 hold.
        for i in 0...40 { XCTAssertEqual(dogs[i].name, "pet \(i)") }
        for i in 0...40 { XCTAssertEqual(fans[i].name, "fan \(i)") }
        for i in 0...40 { XCTAssertEqual(pets[i].name, "pet \(i)") }
        try lattice.write {
            dogs[20].name = "renamed"
            fans[20].name = "renamed fan"
        }
        XCTAssertEqual(dogs[20].name, "renamed")
        XCTAssertEqual(fans[20].name, "renamed fan")
        XCTAssertEqual(pets[20].name, "renamed")
        try lattice.write {
            dogs.remove(at: 21)
            try lattice.delete(fans[21])
        }
        XCTAssertEqual(dogs[21].name, "pet 22")
        XCTAssertEqual(fans[21].name, "fan 22")
        XCTAssertEqual(pets[21].name, "pet 21")  // removed from the list, not deleted

        // Backwards from the end, then another handle's commit within what was read.
        for i in (250..<299).reversed() { XCTAssertEqual(dogs[i].name, "pet \(i + 1)") }
        for i in (250..<299).reversed() { XCTAssertEqual(fans[i].name, "fan \(i + 1)") }
        for i in (250..<300).reversed() { XCTAssertEqual(pets[i].name, "pet \(i)") }
        try other.write {
            let theirs = try XCTUnwrap(other.objects(Pet.self).filter("name == 'pet 271'").first)
            theirs.name = "theirs"
            try other.delete(other.objects(Pet.self).filter("name == 'pet 270'"))
            try other.delete(other.objects(Owner.self).filter("name == 'fan 270'"))
        }
        XCTAssertEqual(dogs[269].name, "pet 270")  // this handle's view has not moved yet
        XCTAssertTrue(lattice.refresh())
        XCTAssertEqual(dogs.count, 298)
        XCTAssertEqual(dogs[269].name, "theirs")
        XCTAssertEqual(fans[269].name, "fan 271")
        XCTAssertEqual(pets[270].name, "theirs")
        XCTAssertEqual((0..<dogs.count).reversed().map { dogs[$0].name }, Array(dogs).map(\.name).reversed())
        XCTAssertEqual((0..<fans.count).reversed().map { fans[$0].name }, Array(fans).map(\.name).reversed())
        XCTAssertEqual((0..<pets.count).reversed().map { pets[$0].name }, Array(pets).map(\.name).reversed())
    }

    func testFirstAndLastOfResults() throws {
        let db = makeTempDatabase("positional")
        let lattice = try db.open([FixtureItem.self])
        let all = lattice.objects(FixtureItem.self)
        XCTAssertNil(all.first)
        XCTAssertNil(all.last)
        try lattice.write {
            for id in [5, 1, 9, 3] { try lattice.create(FixtureItem.self, value: ["id": id, "name": "item \(id)", "rank": id]) }
            // Inside the write, the objects just added.
            XCTAssertEqual(lattice.objects(FixtureItem.self).first?.name, "item 1")
            XCTAssertEqual(lattice.objects(FixtureItem.self).last?.name, "item 9")
        }
        XCTAssertEqual(lattice.objects(FixtureItem.self).first?.id, 1)
        XCTAssertEqual(lattice.objects(FixtureItem.self).last?.id, 9)
        XCTAssertEqual(try all.filter("rank < 5").last?.id, 3)
        XCTAssertEqual(try all.sorted(byKeyPath: "rank", ascending: false).first?.id, 9)
        try lattice.write { try lattice.delete(try XCTUnwrap(all.first)) }
        XCTAssertEqual(all.first?.id, 3)
        XCTAssertEqual(all.first?.name, "item 3")
    }

    func testLoopsOverListsAndLinkingObjectsPassOverObjectsDeletedDuringTheLoop() throws {
        let db = makeTempDatabase("positional")
        let lattice = try db.open([Owner.self, Pet.self, Address.self])
        let owner = Owner()
        let loved = Pet()
        try lattice.write {
            try lattice.add(owner)
            try lattice.add(loved)
            for i in 0..<600 {
                let pet = Pet()
                pet.name = "pet \(i)"
                owner.dogs.append(pet)
                let fan = Owner()
                fan.name = "fan \(i)"
                fan.best = loved
                try lattice.add(fan)
            }
        }
        var seen: [String] = []
        try lattice.write {
            for dog in owner.dogs {
                seen.append(dog.name)
                // Delete the next two pets: the loop, walking the list as it began, passes over them.
                let i = Int(dog.name.dropFirst(4))!
                if i % 10 == 0 {
                    for pet in lattice.objects(Pet.self) where pet.name == "pet \(i + 1)" || pet.name == "pet \(i + 2)" {
                        try lattice.delete(pet)
                    }
                }
            }
        }
        XCTAssertEqual(seen, (0..<600).filter { $0 % 10 != 1 && $0 % 10 != 2 }.map { "pet \($0)" })
        XCTAssertEqual(owner.dogs.count, 480)
        seen = []
        try lattice.write {
            for fan in loved.fans {
                seen.append(fan.name)
                if fan.name == "fan 100" {
                    for other in lattice.objects(Owner.self) where other.name == "fan 101" { try lattice.delete(other) }
                }
            }
        }
        XCTAssertEqual(seen, (0..<600).filter { $0 != 101 }.map { "fan \($0)" })
        XCTAssertEqual(loved.fans.count, 599)
    }
}

extension ReadPathTests {
    /// Sorted results read their objects in batches looked up in key order (thousands of keys a batch,
    /// fewer when records are large): every way of reading them still gives the sorted order, with
    /// every property right, and objects deleted after a loop began are passed over.
    func testSortedResultsReadInBatchesLookedUpInKeyOrder() throws {
        let count: Int64 = 12_000
        // Names in an order unrelated to the keys; every 7th object carries a large nickname, so some
        // batches end on their bytes before their number of keys.
        func name(_ id: Int64) -> String { "n\((id &* 7_919) % 12_007)" }
        do {
            let lattice = try Lattice(configuration: config)
            try lattice.write {
                for id in 1...count {
                    let o = item(id)
                    o.name = name(id)
                    if id % 7 == 0 { o.nickname = String(repeating: "x", count: 3_000) + "\(id)" }
                    try lattice.add(o)
                }
            }
        }
        let lattice = try Lattice(configuration: config)
        let byName = try lattice.objects(Item.self).sorted(byKeyPath: "name")
        let expected = (1...count).sorted { name($0) < name($1) }
        func nickname(_ id: Int64) -> String? {
            id % 7 == 0 ? String(repeating: "x", count: 3_000) + "\(id)" : id % 2 == 0 ? "even \(id)" : nil
        }
        func check(_ items: [Item], _ ids: [Int64], _ path: String) {
            XCTAssertEqual(items.map(\.id), ids, path)
            for o in items where o.name != name(o.id) || o.nickname != nickname(o.id) {
                return XCTFail("\(path): object \(o.id) reads wrong values")
            }
        }
        var looped: [Item] = []
        for o in byName { looped.append(o) }
        check(looped, expected, "for … in")
        check(byName.map { $0 }, expected, "map")
        check((0..<byName.count).map { byName[$0] }, expected, "index loop")
        check(Array(byName.reversed()), expected.reversed(), "reversed()")
        check(Array(try lattice.objects(Item.self).sorted(byKeyPath: "name", ascending: false)), expected.reversed(), "descending")

        // Objects deleted by another handle while a loop runs are passed over once the loop sees them gone.
        let other = try Lattice(configuration: config)
        let doomed = Set(expected.suffix(3_000).filter { $0 % 2 == 0 })
        var seen: [Int64] = []
        for o in byName {
            seen.append(o.id)
            if seen.count == 5_000 {
                try other.write { try other.delete(other.objects(Item.self).filter("id IN %@", Array(doomed))) }
                lattice.refresh()
            }
        }
        XCTAssertEqual(seen, expected.filter { !doomed.contains($0) })
    }
}
