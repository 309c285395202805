import Foundation
import XCTest
@testable import Lattice

/// Behaviour the collections' edit paths must keep: List chunks split evenly under inserts anywhere, and
/// the counts and positions of sets and maps, cached per view of the file and kept current by their own
/// inserts and removals, always match what is stored.
final class CollectionEditTests: XCTestCase {
    final class Bag: Object {
        @Persisted(primaryKey: true) var id = 0
        @Persisted var ints: List<Int>
        @Persisted var words: List<String>
        @Persisted var numbers: MutableSet<Int>
        @Persisted var members: MutableSet<Tag>
        @Persisted var scores: Map<String, Int>
        @Persisted var holders: Map<String, Tag?>
        @Persisted var tagList: List<Tag>
    }

    final class Tag: Object {
        @Persisted(primaryKey: true) var id = 0
        @Persisted(originProperty: "tagList") var bags: LinkingObjects<Bag>

        convenience init(id: Int) {
            self.init()
            self.id = id
        }
    }

    private var config: Lattice.Configuration!

    override func setUp() {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("collection-edit-\(UUID().uuidString).lattice")
        config = Lattice.Configuration(fileURL: url, objectTypes: [Bag.self, Tag.self])
    }

    override func tearDown() {
        _ = try? Lattice.deleteFiles(for: config)
    }

    func testInsertsAtTheFrontAndInTheMiddleKeepTheOrderThroughSplitsAndReopening() throws {
        let lattice = try Lattice(configuration: config)
        let bag = Bag()
        try lattice.write { try lattice.add(bag) }
        var model: [Int] = []
        // Thousands of inserts at the front and in the middle: every chunk fills and splits many times.
        try lattice.write {
            for i in 0..<3_000 {
                let at = i % 3 == 0 ? model.count / 2 : 0
                bag.ints.insert(i, at: at)
                model.insert(i, at: at)
            }
        }
        XCTAssertEqual(Array(bag.ints), model)
        // Mixed edits over several transactions, checked by position, by iteration and by count.
        var random = SeededGenerator(state: 7)
        for _ in 0..<6 {
            try lattice.write {
                for step in 0..<400 {
                    switch random.next(5) {
                    case 0, 1:
                        let at = random.next(model.count + 1)
                        bag.ints.insert(10_000 + step, at: at)
                        model.insert(10_000 + step, at: at)
                    case 2:
                        let at = random.next(model.count)
                        XCTAssertEqual(bag.ints.remove(at: at), model.remove(at: at))
                    case 3:
                        let from = random.next(model.count), to = random.next(model.count)
                        bag.ints.move(from: from, to: to)
                        model.insert(model.remove(at: from), at: to)
                    default:
                        let at = random.next(model.count)
                        bag.ints[at] = -step
                        model[at] = -step
                    }
                }
                XCTAssertEqual(bag.ints.count, model.count)
            }
            let probe = random.next(model.count)
            XCTAssertEqual(bag.ints[probe], model[probe])
        }
        XCTAssertEqual(Array(bag.ints), model)
        XCTAssertEqual(lattice.verify(), [])

        let reopened = try Lattice(configuration: config)
        let stored = try XCTUnwrap(reopened.object(ofType: Bag.self, forPrimaryKey: bag.id))
        XCTAssertEqual(Array(stored.ints), model)
        XCTAssertEqual(stored.ints.last, model.last)
        XCTAssertEqual(stored.ints.reversed().prefix(5).map { $0 }, Array(model.reversed().prefix(5)))
    }

    /// A List of objects changed between reads by position (`remove(at:)`, `swapAt`, `move(from:to:)`,
    /// a setter) over several chunks: each read after a change reads its entry alone, later ones the
    /// list's keys; every read, inside the write, after the commit and after reopening, matches an array
    /// edited the same way.
    func testListOfObjectsEditedBetweenReadsByPositionMatchesAnArray() throws {
        var model = Array(0..<700)
        var random = SystemRandomNumberGenerator()
        do {
            let lattice = try Lattice(configuration: config)
            let bag = try lattice.write { () -> Bag in
                let bag = try lattice.create(Bag.self, value: ["id": 1])
                bag.tagList.append(objectsIn: try (0..<700).map { try lattice.create(Tag.self, value: ["id": $0]) })
                return bag
            }
            let tags = lattice.objects(Tag.self)
            func checkAll(_ what: String) {
                XCTAssertTrue(bag.tagList.map(\.id) == model, what)
                XCTAssertTrue((0..<model.count).map { bag.tagList[$0].id } == model, "an index loop, \(what)")
            }
            try lattice.write {
                for step in 0..<300 {
                    let i = Int.random(in: 0..<model.count, using: &random)
                    let j = Int.random(in: 0..<model.count, using: &random)
                    switch step % 4 {
                    case 0:
                        XCTAssertEqual(bag.tagList.remove(at: i).id, model.remove(at: i), "remove(at: \(i))")
                    case 1:
                        bag.tagList.swapAt(i, j)
                        model.swapAt(i, j)
                    case 2:
                        bag.tagList.move(from: i, to: j)
                        model.insert(model.remove(at: i), at: j)
                    default:
                        bag.tagList[i] = tags[j]
                        model[i] = j
                    }
                    XCTAssertEqual(bag.tagList[j % model.count].id, model[j % model.count], "step \(step)")
                    XCTAssertEqual(bag.tagList.count, model.count)
                }
                checkAll("inside the write")
            }
            checkAll("after the commit")
            try lattice.write {
                for _ in 0..<50 { XCTAssertEqual(bag.tagList.remove(at: 0).id, model.removeFirst()) }
            }
            checkAll("after removing from the front")
        }
        let reopened = try Lattice(configuration: config)
        let bag = try XCTUnwrap(reopened.object(ofType: Bag.self, forPrimaryKey: 1))
        XCTAssertTrue(bag.tagList.map(\.id) == model, "after reopening")
    }

    /// `add(_:update: .modified)` with collections equal to the stored ones changes nothing and reports
    /// nothing; a collection that differs is replaced and reported; `.all` reports every collection.
    func testUpdateModifiedLeavesEqualCollectionsAlone() throws {
        let lattice = try Lattice(configuration: config)
        func bag(ints: [Int], numbers: Set<Int> = [1, 2], scores: [String: Int] = ["a": 1], tags: [Int] = [1, 2]) throws -> Bag {
            let bag = Bag()
            bag.id = 1
            bag.ints.append(objectsIn: ints)
            bag.numbers.insert(objectsIn: numbers)
            for (key, value) in scores { bag.scores[key] = value }
            bag.tagList.append(objectsIn: tags.map { lattice.object(ofType: Tag.self, forPrimaryKey: $0) ?? Tag(id: $0) })
            return bag
        }
        try lattice.write { try lattice.add(try bag(ints: [1, 2, 3])) }
        let stored = try XCTUnwrap(lattice.object(ofType: Bag.self, forPrimaryKey: 1))
        var reported: [[String]] = []
        var listChanges = 0
        let tokens = [
            stored.observe { if case .change(_, let properties) = $0 { reported.append(properties.map(\.name).sorted()) } },
            stored.tagList.observe { if case .update = $0 { listChanges += 1 } },
        ]
        lattice.refresh()

        try lattice.write { try lattice.add(try bag(ints: [1, 2, 3]), update: .modified) }
        lattice.refresh()
        XCTAssertEqual(reported, [], "equal collections are no change")
        XCTAssertEqual(listChanges, 0)

        try lattice.write { try lattice.add(try bag(ints: [1, 2, 3], numbers: [2, 1], scores: ["a": 1], tags: [1, 2]), update: .modified) }
        lattice.refresh()
        XCTAssertEqual(reported, [], "a set given in another order is the same set")

        try lattice.write { try lattice.add(try bag(ints: [1, 2, 4], tags: [2, 1]), update: .modified) }
        lattice.refresh()
        XCTAssertEqual(reported, [["ints", "tagList"]])
        XCTAssertEqual(listChanges, 1)
        XCTAssertEqual(Array(stored.ints), [1, 2, 4])
        XCTAssertEqual(stored.tagList.map(\.id), [2, 1])
        XCTAssertEqual(lattice.object(ofType: Tag.self, forPrimaryKey: 1)?.bags.count, 1, "the backlinks follow")

        try lattice.write { try lattice.add(try bag(ints: [1, 2, 4], numbers: [3], scores: ["b": 2], tags: [2, 1]), update: .modified) }
        lattice.refresh()
        XCTAssertEqual(reported.last, ["numbers", "scores"])
        XCTAssertEqual(Set(stored.numbers), [3])
        XCTAssertEqual(stored.scores["b"], 2)
        XCTAssertNil(stored.scores["a"])

        reported = []
        try lattice.write { try lattice.add(try bag(ints: [1, 2, 4], numbers: [3], scores: ["b": 2], tags: [2, 1]), update: .all) }
        lattice.refresh()
        XCTAssertEqual(reported.count, 1)
        XCTAssertTrue(Set(reported.first ?? []).isSuperset(of: ["ints", "numbers", "scores", "tagList"]), "\(reported)")
        tokens.forEach { $0.invalidate() }
    }

    func testLargeValuesSplitByBytesAndKeepTheirOrder() throws {
        let lattice = try Lattice(configuration: config)
        let bag = Bag()
        try lattice.write { try lattice.add(bag) }
        // 40 KB strings: a chunk holds at most 64 KiB, so nearly every insert splits by size.
        let big = (0..<24).map { String(repeating: Character(UnicodeScalar(UInt8(97 + $0))), count: 40_000) }
        var model: [String] = []
        try lattice.write {
            for (i, word) in big.enumerated() {
                let at = i % 2 == 0 ? 0 : model.count / 2
                bag.words.insert(word, at: at)
                model.insert(word, at: at)
            }
        }
        let reopened = try Lattice(configuration: config)
        XCTAssertEqual(Array(try XCTUnwrap(reopened.object(ofType: Bag.self, forPrimaryKey: bag.id)).words), model)
        XCTAssertEqual(reopened.verify(), [])
    }

    func testSetCountsFollowEveryInsertAndRemovalInsideAWrite() throws {
        let lattice = try Lattice(configuration: config)
        let bag = Bag()
        try lattice.write { try lattice.add(bag) }
        var model = Set<Int>()
        var random = SeededGenerator(state: 11)
        let kept = bag.numbers  // one instance kept, and a new one read through the property each time
        try lattice.write {
            for _ in 0..<2_000 {
                let value = random.next(300)
                switch random.next(4) {
                case 0, 1:
                    bag.numbers.insert(value)
                    model.insert(value)
                case 2:
                    bag.numbers.remove(value)
                    model.remove(value)
                default:
                    XCTAssertEqual(bag.numbers.contains(value), model.contains(value))
                }
                XCTAssertEqual(bag.numbers.count, model.count)
                XCTAssertEqual(kept.count, model.count)
            }
            XCTAssertEqual(Set(bag.numbers), model)
            XCTAssertEqual(Set((0..<bag.numbers.count).map { bag.numbers[$0] }), model)
        }
        XCTAssertEqual(bag.numbers.count, model.count)

        // A cancelled write leaves the stored count.
        try lattice.beginWrite()
        bag.numbers.insert(1_000)
        bag.numbers.insert(1_001)
        XCTAssertEqual(bag.numbers.count, model.count + 2)
        lattice.cancelWrite()
        XCTAssertEqual(bag.numbers.count, model.count)
        XCTAssertFalse(bag.numbers.contains(1_000))

        // `removeAll`, then a commit by another handle.
        try lattice.write {
            bag.numbers.removeAll()
            XCTAssertEqual(bag.numbers.count, 0)
            XCTAssertTrue(bag.numbers.isEmpty)
            bag.numbers.insert(5)
        }
        let other = try Lattice(configuration: config)
        try other.write {
            let theirs = try XCTUnwrap(other.object(ofType: Bag.self, forPrimaryKey: bag.id))
            theirs.numbers.insert(6)
            theirs.numbers.insert(7)
        }
        XCTAssertEqual(bag.numbers.count, 1, "the handle's view is unchanged until it refreshes")
        XCTAssertTrue(lattice.refresh())
        XCTAssertEqual(bag.numbers.count, 3)
        XCTAssertEqual(Array(bag.numbers).sorted(), [5, 6, 7])
        XCTAssertEqual(bag.numbers.sorted(), (0..<bag.numbers.count).map { bag.numbers[$0] }.sorted())
    }

    func testSetAlgebraAnswersAsSwiftSetsDo() throws {
        let lattice = try Lattice(configuration: config)
        let bag = Bag()
        try lattice.write {
            try lattice.add(bag)
            bag.numbers.insert(objectsIn: 0..<3_000)
        }
        let other = Set(stride(from: 0, to: 6_000, by: 3))
        XCTAssertFalse(bag.numbers.isSubset(of: other))
        try lattice.write { bag.numbers.formIntersection(other) }
        XCTAssertEqual(Set(bag.numbers), Set(0..<3_000).intersection(other))
        XCTAssertTrue(bag.numbers.isSubset(of: other))
        XCTAssertTrue(bag.numbers.isSubset(of: Array(bag.numbers)))
        try lattice.write { bag.numbers.subtract(stride(from: 0, to: 3_000, by: 6)) }
        XCTAssertEqual(bag.numbers.count, 500)
        XCTAssertTrue(bag.numbers.intersects([3, 4]))
        XCTAssertFalse(bag.numbers.intersects([6, 4]))
    }

    func testSetsOfObjectsLoseElementsWhoseObjectIsDeleted() throws {
        let lattice = try Lattice(configuration: config)
        let bag = Bag()
        try lattice.write {
            try lattice.add(bag)
            for i in 0..<10 { bag.members.insert(Tag(id: i)) }
        }
        try lattice.write {
            XCTAssertEqual(bag.members.count, 10)
            try lattice.delete(try XCTUnwrap(lattice.object(ofType: Tag.self, forPrimaryKey: 3)))
            XCTAssertEqual(bag.members.count, 9)
            let tag = Tag(id: 20)
            bag.members.insert(tag)
            bag.members.insert(tag)
            XCTAssertEqual(bag.members.count, 10)
        }
        let reopened = try Lattice(configuration: config)
        let stored = try XCTUnwrap(reopened.object(ofType: Bag.self, forPrimaryKey: bag.id))
        XCTAssertEqual(stored.members.count, 10)
        XCTAssertEqual(Set(stored.members.map(\.id)), Set([0, 1, 2, 4, 5, 6, 7, 8, 9, 20]))
    }

    func testMapCountsFollowEverySetOverwriteAndRemoval() throws {
        let lattice = try Lattice(configuration: config)
        let bag = Bag()
        try lattice.write { try lattice.add(bag) }
        var model: [String: Int] = [:]
        var random = SeededGenerator(state: 3)
        try lattice.write {
            for step in 0..<2_000 {
                let key = "k\(random.next(250))"
                switch random.next(4) {
                case 0, 1:
                    bag.scores[key] = step  // a new key or an overwrite
                    model[key] = step
                case 2:
                    bag.scores[key] = nil   // present or not
                    model[key] = nil
                default:
                    XCTAssertEqual(bag.scores.removeValue(forKey: key), model.removeValue(forKey: key))
                }
                XCTAssertEqual(bag.scores.count, model.count)
            }
            let byPosition = (0..<bag.scores.count).map { bag.scores[$0] }
            XCTAssertEqual(byPosition.map(\.key), model.keys.sorted())
            XCTAssertEqual(byPosition.map(\.value), model.keys.sorted().map { model[$0]! })
        }
        // An object value that is deleted leaves its key, with nil.
        try lattice.write {
            let tag = Tag(id: 1)
            bag.holders["a"] = tag
            bag.holders["b"] = tag
            XCTAssertEqual(bag.holders.count, 2)
            try lattice.delete(tag)
            XCTAssertEqual(bag.holders.count, 2)
            XCTAssertEqual(bag.holders.values.map { $0 == nil }, [true, true])
        }
        let reopened = try Lattice(configuration: config)
        let stored = try XCTUnwrap(reopened.object(ofType: Bag.self, forPrimaryKey: bag.id))
        XCTAssertEqual(stored.scores.count, model.count)
        XCTAssertEqual(Dictionary(uniqueKeysWithValues: stored.scores.map { ($0.key, $0.value) }), model)
        XCTAssertEqual(stored.holders.count, 2)
    }

    /// Deleting objects together (`delete(_:)` of a sequence) takes them out of the lists holding them in
    /// one pass per list: the lists, backlinks and file must end as deleting them one by one leaves them.
    func testDeletingListMembersTogetherEndsAsDeletingThemOneByOne() throws {
        func build(_ lattice: Lattice) throws {
            try lattice.write {
                let tags = (0..<300).map { Tag(id: $0) }
                for b in 0..<3 {
                    let bag = Bag()
                    bag.id = b
                    try lattice.add(bag)
                    // Overlapping lists, runs and gaps, and some tags twice in one list.
                    for tag in tags where tag.id % (b + 2) != 1 { bag.tagList.append(tag) }
                    for tag in tags where tag.id % 50 == b { bag.tagList.insert(tag, at: tag.id % 7) }
                }
            }
        }
        let other = Lattice.Configuration(fileURL: config.fileURL!.appendingPathExtension("one-by-one"), objectTypes: [Bag.self, Tag.self])
        defer { _ = try? Lattice.deleteFiles(for: other) }
        let together = try Lattice(configuration: config)
        let oneByOne = try Lattice(configuration: other)
        try build(together)
        try build(oneByOne)
        let doomed = (0..<300).filter { $0 % 3 == 0 || (101..<160).contains($0) }
        try together.write { try together.delete(together.objects(Tag.self).filter("id IN %@", doomed)) }
        try oneByOne.write { for tag in Array(try oneByOne.objects(Tag.self).filter("id IN %@", doomed)) { try oneByOne.delete(tag) } }

        for lattice in [together, oneByOne] { XCTAssertEqual(lattice.verify(), []) }
        let reopened = try Lattice(configuration: config)
        for b in 0..<3 {
            let a = try XCTUnwrap(reopened.object(ofType: Bag.self, forPrimaryKey: b))
            let c = try XCTUnwrap(oneByOne.object(ofType: Bag.self, forPrimaryKey: b))
            XCTAssertEqual(a.tagList.map(\.id), c.tagList.map(\.id))
            XCTAssertFalse(a.tagList.contains { $0.id % 3 == 0 })
        }
        XCTAssertEqual(reopened.objects(Tag.self).map(\.bags.count), oneByOne.objects(Tag.self).map(\.bags.count))
        XCTAssertEqual(reopened.objects(Tag.self).count, oneByOne.objects(Tag.self).count)
    }

    /// Deleting a list's members one at a time, in its order, backwards or at random (the first two
    /// find each next member where the last one was), leaves the list as an array model says.
    func testDeletingListMembersOneByOneInAnyOrder() throws {
        let lattice = try Lattice(configuration: config)
        let bag = Bag()
        var model: [Int] = []
        try lattice.write {
            try lattice.add(bag)
            for i in 0..<400 { bag.tagList.append(Tag(id: i)) }
            for i in [10, 11, 250] { bag.tagList.insert(try XCTUnwrap(lattice.object(ofType: Tag.self, forPrimaryKey: i)), at: 300) }
            model = bag.tagList.map(\.id)
        }
        func delete(_ ids: [Int]) throws {
            for id in ids {
                try lattice.delete(try XCTUnwrap(lattice.object(ofType: Tag.self, forPrimaryKey: id)))
                model.removeAll { $0 == id }
                XCTAssertEqual(bag.tagList.count, model.count)
            }
        }
        var random = SeededGenerator(state: 5)
        try lattice.write {
            try delete(Array(0..<60))                        // in the list's order
            try delete(Array((200..<280).reversed()))        // backwards
            var rest = Array(60..<200) + Array(280..<400)
            for _ in 0..<100 { try delete([rest.remove(at: random.next(rest.count))]) }
            XCTAssertEqual(bag.tagList.map(\.id), model)
        }
        XCTAssertEqual(lattice.verify(), [])
        let reopened = try Lattice(configuration: config)
        XCTAssertEqual(try XCTUnwrap(reopened.object(ofType: Bag.self, forPrimaryKey: bag.id)).tagList.map(\.id), model)
    }

    /// An observer of a list whose members are deleted together hears of exactly those positions.
    func testObserversOfAListHearOfMembersDeletedTogether() throws {
        let lattice = try Lattice(configuration: config)
        let bag = Bag()
        try lattice.write {
            try lattice.add(bag)
            for i in 0..<40 { bag.tagList.append(Tag(id: i)) }
            bag.tagList.append(try XCTUnwrap(lattice.object(ofType: Tag.self, forPrimaryKey: 7)))  // twice: 7 and 40
        }
        var initial = false
        var deletions: [Int]?
        let token = bag.tagList.observe { change in
            switch change {
            case .initial: initial = true
            case let .update(_, d, i, _): deletions = d; XCTAssertEqual(i, [])
            case .error(let error): XCTFail("\(error)")
            }
        }
        let deadline = Date().addingTimeInterval(20)
        while !initial && Date() < deadline { RunLoop.current.run(until: Date().addingTimeInterval(0.005)) }
        try lattice.write { try lattice.delete(lattice.objects(Tag.self).filter("id IN %@", [3, 4, 5, 7, 20, 39])) }
        while deletions == nil && Date() < deadline { RunLoop.current.run(until: Date().addingTimeInterval(0.005)) }
        XCTAssertEqual(deletions, [3, 4, 5, 7, 20, 39, 40])
        XCTAssertEqual(bag.tagList.count, 34)
        token.invalidate()
    }

    /// A delete of several objects that fails part-way leaves what deleting them one by one leaves: the
    /// objects before the failing one deleted, those after it still in their lists.
    func testDeletingTogetherStopsAtAnObjectThatCannotBeDeleted() throws {
        let lattice = try Lattice(configuration: config)
        let bag = Bag()
        try lattice.write {
            try lattice.add(bag)
            for i in 0..<5 { bag.tagList.append(Tag(id: i)) }
        }
        let tags = Array(lattice.objects(Tag.self))
        try lattice.write { try lattice.delete(tags[2]) }
        try lattice.beginWrite()
        XCTAssertThrowsError(try lattice.delete([tags[0], tags[1], tags[2], tags[3]]))
        XCTAssertEqual(bag.tagList.map(\.id), [3, 4])
        try lattice.commitWrite()
        XCTAssertEqual(bag.tagList.map(\.id), [3, 4])
        XCTAssertEqual(lattice.objects(Tag.self).map(\.id), [3, 4])
        XCTAssertEqual(lattice.verify(), [])
    }

    /// Deleting an object that is the value of map entries leaves those keys with nil, plaintext or
    /// encrypted (where the values cannot be compared where they are stored).
    func testDeletedObjectValuesOfMapsBecomeNilInPlainAndEncryptedFiles() throws {
        let encrypted = Lattice.Configuration(fileURL: config.fileURL!.appendingPathExtension("sealed"), objectTypes: [Bag.self, Tag.self],
                                              encryptionKey: Data((0..<64).map { UInt8($0) }))
        defer { _ = try? Lattice.deleteFiles(for: encrypted) }
        for configuration in [config!, encrypted] {
            let lattice = try Lattice(configuration: configuration)
            let bag = Bag()
            try lattice.write {
                try lattice.add(bag)
                for i in 0..<300 {
                    let tag = Tag(id: i)
                    bag.holders["k\(i)"] = tag
                    if i % 10 == 0 { bag.holders["again \(i)"] = tag }
                }
            }
            try lattice.write { try lattice.delete(lattice.objects(Tag.self).filter("id < 150")) }
            let reopened = try Lattice(configuration: configuration)
            let stored = try XCTUnwrap(reopened.object(ofType: Bag.self, forPrimaryKey: bag.id))
            XCTAssertEqual(stored.holders.count, 330)
            for (key, value) in stored.holders {
                let id = Int(key.split(separator: key.hasPrefix("k") ? "k" : " ").last!)!
                XCTAssertEqual(value?.id, id < 150 ? nil : id, key)
            }
            XCTAssertEqual(reopened.verify(), [])
        }
    }

    func testFrozenSetsAndMapsReadByPosition() throws {
        let lattice = try Lattice(configuration: config)
        let bag = Bag()
        try lattice.write {
            try lattice.add(bag)
            for i in 0..<100 { bag.numbers.insert(i); bag.scores["k\(i)"] = i }
        }
        let frozen = bag.freeze()
        try lattice.write { bag.numbers.insert(500); bag.scores["z"] = 1 }
        XCTAssertEqual(frozen.numbers.count, 100)
        XCTAssertEqual(Set((0..<frozen.numbers.count).map { frozen.numbers[$0] }), Set(0..<100))
        XCTAssertEqual(frozen.scores.count, 100)
        XCTAssertEqual((0..<frozen.scores.count).map { frozen.scores[$0].value }.reduce(0, +), (0..<100).reduce(0, +))
        XCTAssertEqual(bag.numbers.count, 101)
        XCTAssertEqual(bag.scores.count, 101)
    }
}
