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
        // As in Realm, Stray, whose owner is nil, has no value on the path and is left out.
        XCTAssertEqual(try dogs.distinct(by: ["owner.name"]).map(\.name), ["Fido", "Rex"])
        XCTAssertEqual(try dogs.distinct(by: ["owner.address.city"]).map(\.name), ["Fido", "Rex"])
        XCTAssertEqual(try dogs.distinct(by: ["owner.name", "age"]).map(\.name), ["Fido", "Rex", "Rover"])
        XCTAssertEqual(try dogs.distinct(by: ["weight"]).map(\.name), ["Fido", "Rex", "Rover"], "a nil value is a value")
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

    func testLinkQueriesAfterReopeningTheFile() throws {
        try makeSample()
        lattice = nil
        XCTAssertFalse(Environment.isOpen(path: try Lattice.storagePath(config)), "every handle closed")
        lattice = try Lattice(configuration: config)
        let people = lattice.objects(LPerson.self), dogs = lattice.objects(LDog.self)
        XCTAssertEqual(names(try people.filter("ANY dogs.age < 2")), ["Ann", "Bo"])
        XCTAssertTrue(try people.filter("ANY dogs.age < 2").explain().contains("backlinks"))
        XCTAssertEqual(names(try dogs.filter("walkers.@count == 2 AND owner.address.city == 'Oslo'")), ["Rex"])
        XCTAssertEqual(names(try people.filter("SUBQUERY(dogs, $d, $d.owner.name == 'Bo').@count == 1")), ["Bo"])
        XCTAssertEqual(try dogs.sorted(by: [SortDescriptor(keyPath: "owner.name"), SortDescriptor(keyPath: "name")]).map(\.name),
                       ["Stray", "Rex", "Rover", "Fido"])
        let ann = try XCTUnwrap(people.filter("name == 'Ann'").first)
        XCTAssertEqual(try ann.dogs.filter("age > 0").map(\.name), ["Rex", "Rover"])
    }

    func testUnmanagedCollectionsCannotBeQueried() {
        let person = LPerson()
        XCTAssertThrowsError(try person.dogs.filter("age < 2")) { error in
            guard case LatticeError.objectNotManaged = error else { return XCTFail("\(error)") }
        }
        XCTAssertThrowsError(try person.friends.sorted(byKeyPath: "age"))
    }
}

/// `where { }` through relationships: the same AST, so the same results as the strings.
final class QueryLinkBuilderTests: LinkQueryTestCase {
    func testWhereThroughLinks() throws {
        let (ann, _, _) = try makeSample()
        let dogs = lattice.objects(LDog.self), people = lattice.objects(LPerson.self), cars = lattice.objects(LCar.self)
        XCTAssertEqual(names(dogs.where { $0.owner.name == "Ann" }), names(try dogs.filter("owner.name == 'Ann'")))
        XCTAssertEqual(names(dogs.where { $0.owner.name == "Ann" }), ["Rex", "Rover"])
        XCTAssertEqual(names(dogs.where { $0.owner.age > 35 && $0.age > 1 }), ["Fido"])
        XCTAssertEqual(names(cars.where { $0.owner.address.city == "Rome" }), ["Polo"])
        XCTAssertEqual(names(cars.where { $0.owner.partner.name.starts(with: "A") }), ["Polo"])
        XCTAssertEqual(names(dogs.where { $0.owner == ann }), ["Rex", "Rover"])
        XCTAssertEqual(names(dogs.where { $0.owner == nil }), ["Stray"])
        XCTAssertEqual(names(dogs.where { $0.owner != nil }), ["Fido", "Rex", "Rover"])
        XCTAssertEqual(names(people.where { $0.partner == ann }), ["Bo"])
    }

    func testWhereTellsLinksToTheSameClassApart() throws {
        // With no person stored yet, the links are still told apart (the probe never reads them).
        let empty = lattice.objects(LCar.self)
        for (query, name) in [(empty.where { $0.driver.name == "x" }, "driver"), (empty.where { $0.owner.name == "x" }, "owner"),
                              (empty.where { $0.previousOwner == nil }, "previousOwner")] {
            XCTAssertTrue(query.explain().contains("filter \(name)"), query.explain())
        }
        let (ann, bo, _) = try makeSample()
        let polo = try XCTUnwrap(lattice.objects(LCar.self).filter("model == 'Polo'").first)
        try lattice.write {
            polo.driver = ann
            polo.previousOwner = ann
        }
        let cars = lattice.objects(LCar.self)
        XCTAssertEqual(names(cars.where { $0.driver.name == "Ann" }), ["Polo"])
        XCTAssertEqual(names(cars.where { $0.owner.name == "Ann" }), ["Golf"])
        XCTAssertEqual(names(cars.where { $0.previousOwner == ann }), ["Polo"])
        XCTAssertEqual(names(cars.where { $0.owner == bo && $0.driver != bo }), ["Polo"])
    }

    func testWhereOverCollections() throws {
        try makeSample()
        let people = lattice.objects(LPerson.self), dogs = lattice.objects(LDog.self)
        let rex = try XCTUnwrap(dogs.filter("name == 'Rex'").first)
        XCTAssertEqual(names(people.where { $0.dogs.count > 1 }), ["Ann", "Bo"])
        XCTAssertEqual(names(people.where { $0.dogs.count == 0 }), ["Cy"])
        XCTAssertEqual(names(people.where { $0.nicknames.count == 1 }), ["Bo"])
        XCTAssertEqual(names(people.where { $0.ratings.count == 2 }), ["Ann"])
        XCTAssertEqual(names(people.where { $0.tags.count == 1 }), ["Ann"])
        XCTAssertEqual(names(dogs.where { $0.walkers.count == 0 }), ["Stray"])
        XCTAssertEqual(names(people.where { $0.dogs.age < 2 }), ["Ann", "Bo"], "ANY element")
        XCTAssertEqual(names(people.where { $0.friends.name == "Fido" }), ["Ann"])
        XCTAssertEqual(names(dogs.where { $0.walkers.name == "Bo" }), ["Fido", "Rex"])
        XCTAssertEqual(names(people.where { $0.nicknames.contains("a") }), ["Ann"])
        XCTAssertEqual(names(people.where { $0.dogs.contains(rex) }), ["Ann", "Bo"])
        XCTAssertEqual(names(people.where { $0.partner.dogs.count == 2 }), ["Bo"])
        XCTAssertEqual(names(people.where { $0.pets.name == "Rex" }), ["Ann"])
    }
}
