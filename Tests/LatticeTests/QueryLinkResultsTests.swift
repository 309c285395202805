import Foundation
import XCTest
@testable import Lattice

/// Sorting and distinct through to-one links, and queries on List, MutableSet and LinkingObjects.
final class QueryLinkResultsTests: LinkQueryTestCase {
    func testSortThroughToOneLinksNilFirst() throws {
        try makeSample()
        let dogs = lattice.objects(LDog.self)
        XCTAssertEqual(try dogs.sorted(byKeyPath: "owner.name").map(\.name).first, "Stray", "a nil link sorts first ascending")
        XCTAssertEqual(try dogs.sorted(by: [SortDescriptor(keyPath: "owner.name"), SortDescriptor(keyPath: "age", ascending: false)])
                        .map(\.name), ["Stray", "Rover", "Rex", "Fido"])
        XCTAssertEqual(try dogs.sorted(by: [SortDescriptor(keyPath: "owner.name", ascending: false), SortDescriptor(keyPath: "name")])
                        .map(\.name), ["Fido", "Rex", "Rover", "Stray"])
        let cars = lattice.objects(LCar.self)
        XCTAssertEqual(try cars.sorted(byKeyPath: "owner.address.city", ascending: false).map(\.model), ["Polo", "Golf", "Up"])
        XCTAssertEqual(try cars.sorted(byKeyPath: "owner.partner.name").map(\.model), ["Golf", "Up", "Polo"],
                       "ties (nil) keep their stored order")
        XCTAssertEqual(try dogs.filter("age > 2").sorted(byKeyPath: "owner.age").map(\.name), ["Stray", "Rover", "Fido"])
        XCTAssertEqual(try dogs.sorted(byKeyPath: "owner.name").explain(), "LDog: full scan (~4 rows) -> sort owner.name ASC")
        XCTAssertThrowsError(try dogs.sorted(byKeyPath: "walkers.name"))
        XCTAssertThrowsError(try dogs.sorted(byKeyPath: "owner"))
        XCTAssertThrowsError(try dogs.sorted(byKeyPath: "owner.nope"))
        XCTAssertThrowsError(try lattice.objects(LPerson.self).sorted(byKeyPath: "dogs.@count"))
    }

    func testDistinctThroughToOneLinks() throws {
        try makeSample()
        let dogs = try lattice.objects(LDog.self).sorted(byKeyPath: "name")
        XCTAssertEqual(try dogs.distinct(by: ["owner.name"]).map(\.name), ["Fido", "Rex", "Stray"])
        XCTAssertEqual(try dogs.distinct(by: ["owner.address.city"]).map(\.name), ["Fido", "Rex", "Stray"])
    }

    func testFilteringAListKeepsListOrder() throws {
        let (ann, bo, _) = try makeSample()
        XCTAssertEqual(try bo.dogs.filter("age >= 0").map(\.name), ["Fido", "Rex"], "list order, not key order")
        XCTAssertEqual(try ann.dogs.filter("age < 2").map(\.name), ["Rex"])
        XCTAssertEqual(try ann.dogs.filter("owner.name == %@", "Ann").count, 2)
        XCTAssertEqual(try ann.dogs.sorted(byKeyPath: "age", ascending: false).map(\.name), ["Rover", "Rex"])
        XCTAssertEqual(ann.dogs.where { $0.age > 2 }.map(\.name), ["Rover"])
        XCTAssertEqual(try ann.dogs.distinct(by: ["owner.name"]).count, 1)
        XCTAssertEqual(try ann.dogs.filter("age > 0").sum(ofProperty: "age") as Int, 4)
        // Duplicates stay, as in the list.
        try lattice.write { bo.dogs.append(bo.dogs[1]) }
        XCTAssertEqual(try bo.dogs.filter("name BEGINSWITH 'R'").map(\.name), ["Rex", "Rex"])
        // Live: changes to the list and to its objects show.
        let young = try ann.dogs.filter("age < 3")
        XCTAssertEqual(young.map(\.name), ["Rex"])
        try lattice.write {
            ann.dogs[1].age = 0
            ann.dogs.append(bo.dogs[0])
        }
        XCTAssertEqual(young.map(\.name), ["Rex", "Rover"])
        XCTAssertEqual(young.index(of: ann.dogs[1]), 1)
        XCTAssertEqual(try young.filter("name == 'Rover'").count, 1, "chained filters")
        XCTAssertTrue(young.explain().hasPrefix("LDog: LPerson.dogs of one object (~3 rows) -> filter age < 3"), young.explain())
        // The owner deleted: empty.
        try lattice.write { try lattice.delete(ann) }
        XCTAssertEqual(young.count, 0)
    }

    func testFilteringSetsAndLinkingObjects() throws {
        let (ann, _, _) = try makeSample()
        XCTAssertEqual(try ann.friends.filter("age == 5").map(\.name), ["Fido"])
        XCTAssertEqual(try ann.friends.filter("age == 1").count, 0)
        let rex = try XCTUnwrap(lattice.objects(LDog.self).filter("name == 'Rex'").first)
        XCTAssertEqual(try rex.walkers.filter("age > 35").map(\.name), ["Bo"])
        XCTAssertEqual(try rex.walkers.sorted(byKeyPath: "name", ascending: false).map(\.name), ["Bo", "Ann"])
        XCTAssertEqual(rex.walkers.where { $0.name == "Ann" }.count, 1)
        XCTAssertEqual(try ann.cars.filter("model == 'Golf'").count, 1)
    }

    func testUnmanagedCollectionsCannotBeQueried() {
        let person = LPerson()
        XCTAssertThrowsError(try person.dogs.filter("age < 2")) { error in
            guard case LatticeError.objectNotManaged = error else { return XCTFail("\(error)") }
        }
        XCTAssertThrowsError(try person.friends.sorted(byKeyPath: "age"))
    }
}
