import Foundation
import XCTest
@testable import Lattice

final class ObservedShelf: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var labels: MutableSet<String>
    @Persisted var prices: Map<String, Double>
    @Persisted var books: Map<String, ObservedBook?>
}

final class ObservedBook: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var title = ""
    @Persisted var shelf: ObservedShelf?
    @Persisted var pages = 0
}

/// Observers on `MutableSet`, `Map` and `LinkingObjects`, with another handle's commits.
final class PropertyObserverTests: XCTestCase {
    private var database: TempDatabase!
    private let types: [Object.Type] = [ObservedShelf.self, ObservedBook.self]

    override func setUp() {
        super.setUp()
        database = makeTempDatabase("observe-props")
    }


    private func seeded() throws -> (Lattice, Lattice, ObservedShelf) {
        let lattice = try database.open(types)
        try lattice.write { _ = try lattice.create(ObservedShelf.self, value: ["id": 1]) }
        let other = try database.open(types)
        return (lattice, other, try XCTUnwrap(lattice.object(ofType: ObservedShelf.self, forPrimaryKey: 1)))
    }

    func testMutableSetObserverReportsPositions() throws {
        let (lattice, other, shelf) = try seeded()
        try lattice.write { shelf.labels.insert(objectsIn: ["b", "d"]) }
        var changes: [LatticeCollectionChange<MutableSet<String>>] = []
        let token = shelf.labels.observe { changes.append($0) }
        spin("initial") { changes.count == 1 }
        try other.write {
            let mine = other.object(ofType: ObservedShelf.self, forPrimaryKey: 1)!
            mine.labels.insert("a")
            mine.labels.remove("d")
        }
        spin("update") { changes.count == 2 }
        guard case let .update(set, deletions, insertions, modifications) = changes.last else { return XCTFail("update") }
        XCTAssertEqual(Set(set), ["a", "b"])
        XCTAssertEqual(deletions, [1], "\"d\" was at position 1 of [b, d]")
        XCTAssertEqual(insertions, [0], "\"a\" is at position 0 of [a, b]")
        XCTAssertEqual(modifications, [])
        token.invalidate()
    }

    func testMapObserverReportsKeys() throws {
        let (lattice, other, shelf) = try seeded()
        try lattice.write {
            shelf.prices["a"] = 1
            shelf.prices["b"] = 2
        }
        var changes: [LatticeMapChange<Map<String, Double>>] = []
        let token = shelf.prices.observe { changes.append($0) }
        spin("initial") { changes.count == 1 }
        try other.write {
            let mine = other.object(ofType: ObservedShelf.self, forPrimaryKey: 1)!
            mine.prices["b"] = 20
            mine.prices["c"] = 3
            mine.prices.removeValue(forKey: "a")
        }
        spin("update") { changes.count == 2 }
        guard case let .update(map, deletions, insertions, modifications) = changes.last else { return XCTFail("update") }
        XCTAssertEqual(map["b"], 20)
        XCTAssertEqual(deletions, ["a"])
        XCTAssertEqual(insertions, ["c"])
        XCTAssertEqual(modifications, ["b"])
        token.invalidate()
    }

    /// After a write its token skipped, a map observer names the keys of the next change from what it
    /// compared, not from what it had seen before the skipped write.
    func testMapObserverNamesKeysAfterASkippedWrite() throws {
        let (lattice, _, shelf) = try seeded()
        try lattice.write { for key in ["a", "b", "c"] { shelf.prices[key] = 1 } }
        var changes: [LatticeMapChange<Map<String, Double>>] = []
        let token = shelf.prices.observe { changes.append($0) }
        lattice.refresh()
        XCTAssertEqual(changes.count, 1, "initial")
        try lattice.write(withoutNotifying: [token]) {  // keys sorting first: every position moves
            shelf.prices["0"] = 5
            shelf.prices["1"] = 5
        }
        lattice.refresh()
        XCTAssertEqual(changes.count, 1, "the skipped write is not reported")
        try lattice.write {
            shelf.prices["c"] = 30
            shelf.prices.removeValue(forKey: "b")
            shelf.prices["d"] = 4
        }
        lattice.refresh()
        guard case let .update(_, deletions, insertions, modifications)? = changes.last, changes.count == 2 else {
            return XCTFail("expected one update, got \(changes.count - 1)")
        }
        XCTAssertEqual(deletions, ["b"])
        XCTAssertEqual(insertions, ["d"])
        XCTAssertEqual(modifications, ["c"])
        token.invalidate()
    }

    func testMapOfObjectsReportsAChangedObjectAsModifiedKey() throws {
        let (lattice, other, shelf) = try seeded()
        try lattice.write { shelf.books["x"] = try lattice.create(ObservedBook.self, value: ["id": 9, "title": "T"]) }
        var changes: [LatticeMapChange<Map<String, ObservedBook?>>] = []
        let token = shelf.books.observe { changes.append($0) }
        spin("initial") { changes.count == 1 }
        try other.write { other.object(ofType: ObservedBook.self, forPrimaryKey: 9)!.title = "T2" }
        spin("update") { changes.count == 2 }
        guard case let .update(_, deletions, insertions, modifications) = changes.last else { return XCTFail("update") }
        XCTAssertEqual(deletions, [])
        XCTAssertEqual(insertions, [])
        XCTAssertEqual(modifications, ["x"])
        token.invalidate()
    }

    func testLinkingObjectsObserverReportsLinksAndModifications() throws {
        let lattice = try database.open([LinkedShelf.self, LinkedBook.self])
        try lattice.write {
            _ = try lattice.create(LinkedShelf.self, value: ["id": 1])
        }
        let other = try database.open([LinkedShelf.self, LinkedBook.self])
        let shelf = try XCTUnwrap(lattice.object(ofType: LinkedShelf.self, forPrimaryKey: 1))
        var changes: [LatticeCollectionChange<LinkingObjects<LinkedBook>>] = []
        let token = shelf.books.observe { changes.append($0) }
        spin("initial") { changes.count == 1 }
        try other.write {
            let target = other.object(ofType: LinkedShelf.self, forPrimaryKey: 1)!
            _ = try other.create(LinkedBook.self, value: ["id": 1, "title": "a", "shelf": target])
        }
        spin("insert") { changes.count == 2 }
        guard case let .update(books, _, insertions, _) = changes.last else { return XCTFail("update") }
        XCTAssertEqual(books.map(\.title), ["a"])
        XCTAssertEqual(insertions, [0])
        try other.write { other.object(ofType: LinkedBook.self, forPrimaryKey: 1)!.title = "b" }
        spin("modify") { changes.count == 3 }
        guard case let .update(_, d, i, m) = changes.last else { return XCTFail("update") }
        XCTAssertEqual([d, i, m], [[], [], [0]])
        try other.write { other.object(ofType: LinkedBook.self, forPrimaryKey: 1)!.shelf = nil }
        spin("unlink") { changes.count == 4 }
        guard case let .update(after, d3, _, _) = changes.last else { return XCTFail("update") }
        XCTAssertEqual(after.count, 0)
        XCTAssertEqual(d3, [0])
        token.invalidate()
    }
}

extension PropertyObserverTests {
    func testObjectKeyPathsThroughLinkingObjects() throws {
        let lattice = try database.open([LinkedShelf.self, LinkedBook.self])
        try lattice.write { _ = try lattice.create(LinkedShelf.self, value: ["id": 1]) }
        let other = try database.open([LinkedShelf.self, LinkedBook.self])
        let shelf = try XCTUnwrap(lattice.object(ofType: LinkedShelf.self, forPrimaryKey: 1))
        var titles: [[String]] = [], members: [[String]] = [], everything: [[String]] = []
        func names(_ change: ObjectChange<LinkedShelf>) -> [String]? {
            if case let .change(_, properties) = change { return properties.map(\.name) } else { return nil }
        }
        let tokens = [
            shelf.observe(keyPaths: ["books.title"]) { names($0).map { titles.append($0) } },
            shelf.observe(keyPaths: ["books"]) { names($0).map { members.append($0) } },
            shelf.observe { names($0).map { everything.append($0) } },
        ]
        lattice.refresh()
        try other.write { _ = try other.create(LinkedBook.self, value: ["id": 1, "title": "a", "shelf": other.object(ofType: LinkedShelf.self, forPrimaryKey: 1)!]) }
        lattice.refresh()
        XCTAssertEqual(titles, [["books"]], "a new linking object")
        XCTAssertEqual(members, [["books"]])
        try other.write { other.object(ofType: LinkedBook.self, forPrimaryKey: 1)!.title = "b" }
        lattice.refresh()
        XCTAssertEqual(titles, [["books"], ["books"]], "books.title: a linking object's title changed")
        XCTAssertEqual(members, [["books"]], "books alone: the same objects link here")
        XCTAssertEqual(everything, [], "without key paths backlinks do not count")
        try other.write { other.object(ofType: LinkedBook.self, forPrimaryKey: 1)!.shelf = nil }
        lattice.refresh()
        XCTAssertEqual(members, [["books"], ["books"]], "the book no longer links here")
        tokens.forEach { $0.invalidate() }
    }
}

final class LinkedShelf: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted(originProperty: "shelf") var books: LinkingObjects<LinkedBook>
}

final class LinkedBook: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var title = ""
    @Persisted var shelf: LinkedShelf?
}
