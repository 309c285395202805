import Foundation
import XCTest
@testable import Lattice

/// Every change a write transaction makes goes through the write path, which records it (keys only)
/// in the transaction's change set: the record the change log and notifications are built on.
final class WritePathTests: XCTestCase {
    final class WPOwner: Object {
        @Persisted(primaryKey: true) var id = 0
        @Persisted var name = ""
        @Persisted(indexed: true) var rank = 0
        @Persisted var pet: WPPet?
        @Persisted var tags: List<String>
        @Persisted var pets: List<WPPet>
        @Persisted var labels: MutableSet<String>
        @Persisted var scores: Map<String, Int>
    }

    final class WPPet: Object {
        @Persisted var name = ""
    }

    private func changes(_ lattice: Lattice) -> ChangeSet { lattice.writer?.changes ?? ChangeSet() }

    func testEveryKindOfChangeIsRecorded() throws {
        let db = makeTempDatabase("writepath")
        let lattice = try db.open([WPOwner.self, WPPet.self])
        try lattice.write {
            let owner = WPOwner()
            owner.id = 7
            try lattice.add(owner)
            XCTAssertEqual(changes(lattice).objects.map(\.kind), [.inserted])
        }
        let owner = try XCTUnwrap(lattice.object(ofType: WPOwner.self, forPrimaryKey: 7))
        let rankColumn = try XCTUnwrap(owner._info?.property(named: "rank")?.column)
        try lattice.write {
            owner.rank = 3
            let modified = changes(lattice).objects
            XCTAssertEqual(modified.map(\.kind), [.modified])
            XCTAssertEqual(modified.first?.columns, ChangeSet.columnBit(rankColumn), "only the changed column")
            XCTAssertEqual(modified.first?.key, 7)
            XCTAssertEqual(modified.first?.className, "WPOwner")

            owner.tags.append(contentsOf: ["a", "b"])
            owner.tags.remove(at: 0)
            owner.tags[0] = "c"
            owner.labels.insert("x")
            owner.scores["k"] = 1
            let pet = WPPet()
            owner.pets.append(pet)  // adds the pet too
            let collections = changes(lattice).collections
            XCTAssertEqual(collections.map(\.property), ["WPOwner.tags", "WPOwner.tags", "WPOwner.tags", "WPOwner.labels",
                                                         "WPOwner.scores", "WPOwner.pets"])
            XCTAssertEqual(collections.map(\.operation), [.insert(0..<2), .remove(0..<1), .set(0), .key(Array("x".utf8)),
                                                          .key(Array("k".utf8)), .insert(0..<1)])
            XCTAssertTrue(changes(lattice).objects.contains { $0.className == "WPPet" && $0.kind == .inserted })
        }
        try lattice.write {
            let pet = try XCTUnwrap(owner.pets.first)
            try lattice.delete(pet)  // leaves the list: a list change and a delete
            let recorded = changes(lattice)
            XCTAssertEqual(recorded.objects.map(\.kind), [.deleted])
            XCTAssertEqual(recorded.collections.map(\.operation), [.clear])
        }
        try lattice.write { try lattice.deleteAll() }
        XCTAssertNil(lattice.writer, "the change set belongs to the transaction")
    }
}
