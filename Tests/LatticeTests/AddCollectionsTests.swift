import Foundation
import XCTest
@testable import Lattice

/// A model keyed by an integer primary key with a collection of each kind and an index.
final class Shelf: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted(indexed: true) var floor = 0
    @Persisted var books: List<String>
    @Persisted var labels: MutableSet<String>
    @Persisted var counts: Map<String, Int>
}

/// Adding an object stores its collections: a new object only inserts its entries (it has none
/// stored), an update (`add(_:update:)` of a stored primary key) replaces the stored ones, and an
/// object deleted and added again under the same key has only its new entries. New objects of any
/// key order keep the index right.
final class AddCollectionsTests: XCTestCase {
    private func shelf(_ id: Int, floor: Int, _ entries: [String]) -> Shelf {
        let shelf = Shelf()
        shelf.id = id
        shelf.floor = floor
        shelf.books.append(objectsIn: entries)
        shelf.labels.insert(objectsIn: entries)
        for (i, entry) in entries.enumerated() { shelf.counts[entry] = i }
        return shelf
    }

    private func assertShelf(_ lattice: Lattice, _ id: Int, _ entries: [String], _ label: String, line: UInt = #line) {
        guard let shelf = lattice.object(ofType: Shelf.self, forPrimaryKey: id) else { return XCTFail("\(label): no shelf \(id)", line: line) }
        XCTAssertEqual(Array(shelf.books), entries, label, line: line)
        XCTAssertEqual(Set(shelf.labels), Set(entries), label, line: line)
        XCTAssertEqual(Dictionary(uniqueKeysWithValues: shelf.counts.map { ($0.key, $0.value) }),
                       Dictionary(uniqueKeysWithValues: entries.enumerated().map { ($0.element, $0.offset) }), label, line: line)
    }

    func testNewUpdatedAndReaddedObjectsStoreTheirCollections() throws {
        let configuration = makeTempDatabase("addcollections").configuration([Shelf.self])
        do {
            let lattice = try Lattice(configuration: configuration)
            // Keys descending, ascending and between others: index entries filed in every position.
            try lattice.write {
                for id in [50, 40, 60, 45, 70, 10] { try lattice.add(shelf(id, floor: id % 2, id == 45 ? [] : ["s\(id)", "t\(id)"])) }
            }
            try lattice.write {
                try lattice.add(shelf(60, floor: 1, ["new"]), update: .modified)
                try lattice.add(shelf(70, floor: 0, []), update: .all)
                try lattice.delete(try XCTUnwrap(lattice.object(ofType: Shelf.self, forPrimaryKey: 40)))
                try lattice.add(shelf(40, floor: 1, ["again"]))
                try lattice.add(shelf(80, floor: 0, ["x", "y"]))
                try lattice.delete(try XCTUnwrap(lattice.object(ofType: Shelf.self, forPrimaryKey: 80)))
                try lattice.add(shelf(80, floor: 0, ["z"]))
                assertShelf(lattice, 80, ["z"], "deleted and added again in one write")
            }
        }
        let lattice = try Lattice(configuration: configuration)
        assertShelf(lattice, 50, ["s50", "t50"], "new")
        assertShelf(lattice, 45, [], "new, empty")
        assertShelf(lattice, 10, ["s10", "t10"], "new, below the others")
        assertShelf(lattice, 60, ["new"], "updated: entries replaced")
        assertShelf(lattice, 70, [], "updated: entries removed")
        assertShelf(lattice, 40, ["again"], "deleted, then added again")
        assertShelf(lattice, 80, ["z"], "deleted and added again in one write")
        let shelves = lattice.objects(Shelf.self)
        XCTAssertEqual(try shelves.filter("floor == 0").map(\.id), [10, 50, 70, 80])
        XCTAssertEqual(try shelves.filter("floor == 1").map(\.id), [40, 45, 60])
        XCTAssertEqual(lattice.verify(), [])
    }

    /// As in Realm, nil or `NSNull` given for a List, MutableSet or Map empties it: through key-value
    /// coding, `init(value:)`, `create` and `create(update:)`; it is neither "required" nor a wrong type.
    func testNilEmptiesACollection() throws {
        let db = makeTempDatabase("nilcollections")
        do {
            let lattice = try db.open([Shelf.self])
            let unmanaged = try Shelf(value: ["id": 1, "books": NSNull(), "labels": NSNull(), "counts": NSNull()])
            XCTAssertEqual([unmanaged.books.count, unmanaged.labels.count, unmanaged.counts.count], [0, 0, 0])
            unmanaged.books.append("a")
            unmanaged.setValue(nil, forKey: "books")
            XCTAssertEqual(unmanaged.books.count, 0)
            try lattice.write {
                try lattice.add(shelf(2, floor: 0, ["a", "b"]))
                try lattice.add(shelf(3, floor: 0, ["c"]))
                try lattice.add(shelf(4, floor: 0, ["d"]))
                _ = try lattice.create(Shelf.self, value: ["id": 5, "books": NSNull(), "counts": String?.none as Any])
            }
            let two = try XCTUnwrap(lattice.object(ofType: Shelf.self, forPrimaryKey: 2))
            try lattice.write {
                two.setValue(nil, forKey: "books")
                two["labels"] = NSNull()
                two.setValue(NSNull(), forKey: "counts")
                _ = try lattice.create(Shelf.self, value: ["id": 3, "books": NSNull(), "labels": NSNull(), "counts": NSNull()], update: .modified)
                _ = try lattice.create(Shelf.self, value: [4, 0, NSNull(), NSNull(), NSNull()] as [Any], update: .all)
            }
        }
        let reopened = try db.open([Shelf.self])
        for id in 2...5 { assertShelf(reopened, id, [], "shelf \(id) emptied") }
    }

    /// A set's or map's count stays right across the handle's own commits (where it is carried over
    /// without walking the entries), other handles' commits, cancelled writes and refreshes.
    func testKeyedCountsAcrossCommitsAndCancelledWrites() throws {
        let db = makeTempDatabase("keyedcounts")
        let lattice = try db.open([Shelf.self]), other = try db.open([Shelf.self])
        try lattice.write { try lattice.add(shelf(1, floor: 0, (0..<50).map { "e\($0)" })) }
        let stored = try XCTUnwrap(lattice.object(ofType: Shelf.self, forPrimaryKey: 1))
        XCTAssertEqual([stored.labels.count, stored.counts.count], [50, 50])
        for round in 1...3 {
            try lattice.write {
                stored.labels.insert("new\(round)")
                stored.counts["new\(round)"] = round
            }
            XCTAssertEqual([stored.labels.count, stored.counts.count], [50 + round, 50 + round], "own commit \(round)")
        }
        try other.write {
            let theirs = try XCTUnwrap(other.object(ofType: Shelf.self, forPrimaryKey: 1))
            theirs.labels.insert(objectsIn: ["x", "y"])
            theirs.counts["e0"] = nil
        }
        XCTAssertEqual([stored.labels.count, stored.counts.count], [53, 53], "the handle's snapshot")
        lattice.refresh()
        XCTAssertEqual([stored.labels.count, stored.counts.count], [55, 52], "another handle's commit")
        try lattice.beginWrite()
        stored.labels.remove("x")
        stored.counts["e1"] = nil
        XCTAssertEqual([stored.labels.count, stored.counts.count], [54, 51], "inside the write")
        lattice.cancelWrite()
        XCTAssertEqual([stored.labels.count, stored.counts.count], [55, 52], "after the write was cancelled")
        try lattice.write { stored.labels.remove("y") }
        lattice.invalidate()
        let again = try XCTUnwrap(lattice.object(ofType: Shelf.self, forPrimaryKey: 1))
        XCTAssertEqual([again.labels.count, again.counts.count], [54, 52])
        XCTAssertEqual(Set(again.labels).count, 54)
        XCTAssertEqual(try db.open([Shelf.self]).object(ofType: Shelf.self, forPrimaryKey: 1)?.labels.count, 54)
    }

    /// As in Realm, a List, MutableSet or Map taken from an object before `add` is that object's stored
    /// collection afterwards: writes through it reach the file. The object keeps no reference to it (the
    /// file closes once the program lets go of everything).
    func testCollectionsTakenBeforeAddWriteThrough() throws {
        let db = makeTempDatabase("taken-before-add")
        do {
            let lattice = try db.open([Shelf.self])
            let shelf = shelf(1, floor: 0, ["a"])
            let (books, labels, counts) = (shelf.books, shelf.labels, shelf.counts)
            try lattice.write { try lattice.add(shelf) }
            XCTAssertTrue(books.lattice === lattice)
            try lattice.write {
                books.append("b")
                labels.insert("b")
                counts["b"] = 1
            }
            XCTAssertEqual(Array(shelf.books), ["a", "b"])
            XCTAssertEqual(Set(shelf.labels), ["a", "b"])
            XCTAssertEqual(shelf.counts["b"], 1)
            XCTAssertEqual(books, shelf.books, "the same stored list")
            // A list given to two objects: the second gets the first's stored elements.
            let other = Shelf()
            other.id = 2
            other.books = books
            try lattice.write { try lattice.add(other) }
            XCTAssertEqual(Array(other.books), ["a", "b"])
        }
        XCTAssertEqual(Array(try db.open([Shelf.self]).object(ofType: Shelf.self, forPrimaryKey: 1)?.books ?? List()), ["a", "b"])
        XCTAssertNoThrow(try Lattice.deleteFiles(for: db.configuration([Shelf.self])), "nothing keeps the handle open")
    }
}

