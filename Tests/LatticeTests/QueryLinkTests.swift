import Foundation
import XCTest
@testable import Lattice

/// Each predicate form through relationships, with its result.
final class QueryLinkTests: LinkQueryTestCase {
    func testToOneLinksAtAnyDepth() throws {
        try makeSample()
        let dogs = lattice.objects(LDog.self), cars = lattice.objects(LCar.self)
        XCTAssertEqual(names(try dogs.filter("owner.name == 'Ann'")), ["Rex", "Rover"])
        XCTAssertEqual(names(try dogs.filter("owner.name BEGINSWITH[c] %@", "b")), ["Fido"])
        XCTAssertEqual(names(try dogs.filter("owner.age > 35")), ["Fido"])
        XCTAssertEqual(names(try cars.filter("owner.address.city == 'Rome'")), ["Polo"])
        XCTAssertEqual(names(try cars.filter("owner.partner.name == 'Ann'")), ["Polo"])
        XCTAssertEqual(names(try cars.filter("owner.partner.address.city == 'Oslo'")), ["Polo"])
        // A nil link on the way reads as nil (as in Realm): `== nil` and `!= 'Ann'` hold, orderings do not.
        XCTAssertEqual(names(try cars.filter("owner.name == nil")), ["Up"])
        XCTAssertEqual(names(try cars.filter("owner.name != 'Ann'")), ["Polo", "Up"])
        XCTAssertEqual(names(try cars.filter("owner.name != nil")), ["Golf", "Polo"])
        XCTAssertEqual(names(try cars.filter("owner.partner.name != 'Ann'")), ["Golf", "Up"])
        XCTAssertEqual(names(try cars.filter("owner.name > 'A'")), ["Golf", "Polo"])
        XCTAssertEqual(names(try cars.filter("owner.name BEGINSWITH 'A'")), ["Golf"])
        XCTAssertEqual(names(try cars.filter("owner.address.city == nil")), ["Up"])
        XCTAssertEqual(names(try cars.filter("owner.partner.name == nil")), ["Golf", "Up"])
        XCTAssertEqual(names(try cars.filter("NOT owner.name == 'Ann'")), ["Polo", "Up"])
        XCTAssertEqual(names(try dogs.filter("owner.name IN {'Bo', 'Zed'}")), ["Fido"])
        XCTAssertEqual(names(try dogs.filter("owner.age BETWEEN {25, 35}")), ["Rex", "Rover"])
        XCTAssertEqual(names(try dogs.filter("owner.name == 'Ann' AND age > 2")), ["Rover"])
        XCTAssertEqual(names(try dogs.filter("%K.name == %@", "owner", "Bo")), ["Fido"])
    }

    /// `count` of objects found through links to other objects (`owner == %@`, counted from the backlink
    /// table without reading the objects where it can) against the objects read and tested here, also
    /// sorted, after relinking, deleting either side and another handle's commit.
    func testCountsOfObjectsFoundThroughLinks() throws {
        var rng = SplitMix64(state: 5)
        func random(_ n: Int) -> Int { Int(rng.next() % UInt64(n)) }
        try lattice.write {
            let people = try (0..<8).map { i in try LPerson(value: ["name": "p\(i)", "age": 20 + 5 * i]) }
            for p in people { try lattice.add(p) }
            for i in 0..<200 {
                let dog = try LDog(value: ["name": "d\(i)", "age": random(15)])
                dog.owner = random(6) == 0 ? nil : people[random(8)]
                try lattice.add(dog)
                // Lists with repeats: a dog listed twice by one person counts that person once.
                for _ in 0..<random(3) { people[random(8)].dogs.append(dog) }
            }
        }
        let dogs = lattice.objects(LDog.self), people = lattice.objects(LPerson.self)
        func check(_ label: String) throws {
            let everyone = Array(people), all = Array(dogs)
            let (p0, p1) = (everyone[0], everyone[5])
            let cases: [(String, [Any], (LDog) -> Bool)] = [
                ("owner == %@", [p0], { $0.owner?.name == p0.name }),
                ("owner IN %@", [[p0, p1]], { [p0.name, p1.name].contains($0.owner?.name ?? "") }),
                ("owner.age > 30", [], { ($0.owner?.age ?? 0) > 30 }),
                ("owner.age > 30 AND age < 5", [], { ($0.owner?.age ?? 0) > 30 && $0.age < 5 }),
                ("owner == nil", [], { $0.owner == nil }),
                ("ANY walkers == %@", [p1], { dog in p1.dogs.contains { $0.name == dog.name } }),
            ]
            for (query, arguments, test) in cases {
                let expected = all.filter(test).count
                XCTAssertEqual(try dogs.filter(query, argumentArray: arguments).count, expected, "\(label): \(query)")
                XCTAssertEqual(try dogs.filter(query, argumentArray: arguments).sorted(byKeyPath: "age").count, expected, "\(label): \(query) sorted")
                XCTAssertEqual(Array(try dogs.filter(query, argumentArray: arguments)).count, expected, "\(label): \(query) read")
            }
            let listed = all[7]
            XCTAssertEqual(try people.filter("ANY dogs == %@", listed).count, everyone.filter { $0.dogs.contains(listed) }.count, "\(label): a List")
        }
        try check("start")
        try lattice.write {
            for dog in dogs.prefix(40) { dog.owner = people[random(8)] }
            try lattice.delete(people[3])
            try lattice.delete(dogs.filter("age == 4"))
        }
        try check("after a write")
        let other = try Lattice(configuration: config)
        try other.write {
            let p = other.objects(LPerson.self)[0]
            for dog in try other.objects(LDog.self).filter("age < 3") { dog.owner = p }
        }
        lattice.refresh()
        try check("after another handle's commit")
    }

    /// The objects linking to an object found through the backlink table, a page of links at a time, for
    /// one link, a few, and more than a page holds, against the objects read and tested here.
    func testObjectsLinkingToAnObjectThroughManyLinks() throws {
        try lattice.write {
            let people = try (0..<3).map { i in try LPerson(value: ["name": "p\(i)", "age": i]) }
            for p in people { try lattice.add(p) }
            for i in 0..<1_500 {
                // p0: most dogs (several pages of links); p1: every 50th; p2: one.
                let owner = i == 7 ? people[2] : i % 50 == 0 ? people[1] : people[0]
                try lattice.add(try LDog(value: ["name": "d\(i)", "age": i % 15, "owner": owner]))
            }
        }
        func check(_ label: String) throws {
            let all = Array(lattice.objects(LDog.self))
            for person in lattice.objects(LPerson.self) {
                let expected = all.filter { $0.owner?.name == person.name }.map(\.name).sorted()
                let found = try lattice.objects(LDog.self).filter("owner == %@", person)
                XCTAssertEqual(found.map(\.name).sorted(), expected, "\(label): \(person.name)")
                XCTAssertEqual(found.count, expected.count, "\(label): \(person.name): count")
                XCTAssertEqual(try found.filter("age == 3").count, all.filter { $0.owner?.name == person.name && $0.age == 3 }.count,
                               "\(label): \(person.name) and age")
            }
        }
        try check("start")
        try lattice.write {
            try lattice.delete(lattice.objects(LDog.self).filter("age == 2"))
            let p2 = try lattice.objects(LPerson.self).filter("name == 'p2'")[0]
            for dog in try lattice.objects(LDog.self).filter("age == 5").prefix(300) { dog.owner = p2 }
        }
        try check("after a write")
    }

    func testKeyPathsThroughLinksComparedWithEachOther() throws {
        try makeSample()
        let dogs = lattice.objects(LDog.self), cars = lattice.objects(LCar.self)
        try lattice.write { try lattice.objects(LDog.self).filter("name == 'Fido'").first?.age = 40 }
        XCTAssertEqual(names(try dogs.filter("owner.age == age")), ["Fido"])
        XCTAssertEqual(names(try dogs.filter("age < owner.age")), ["Rex", "Rover"])
        XCTAssertEqual(names(try dogs.filter("owner.age != age")), ["Rex", "Rover", "Stray"], "a nil link reads as nil here")
        XCTAssertEqual(names(try cars.filter("owner.partner.age < owner.age")), ["Polo"])
        XCTAssertEqual(names(try cars.filter("owner.name BEGINSWITH[c] owner.partner.name")), [])
        XCTAssertEqual(try dogs.filter("owner.age == age").explain(), "LDog: full scan (~4 rows) -> filter owner.age == age")
    }

    func testLinkComparedWithObjectIsIdentity() throws {
        let (ann, bo, _) = try makeSample()
        let dogs = lattice.objects(LDog.self), cars = lattice.objects(LCar.self)
        XCTAssertEqual(names(try dogs.filter("owner == %@", ann)), ["Rex", "Rover"])
        XCTAssertEqual(names(try dogs.filter("owner != %@", ann)), ["Fido", "Stray"])
        XCTAssertEqual(names(try dogs.filter("owner == nil")), ["Stray"])
        XCTAssertEqual(names(try dogs.filter("owner != nil")), ["Fido", "Rex", "Rover"])
        XCTAssertEqual(names(try dogs.filter("owner IN %@", [ann, bo])), ["Fido", "Rex", "Rover"])
        XCTAssertEqual(names(try cars.filter("owner.partner == %@", ann)), ["Polo"])
        // The same stored object reached another way, or through another handle of the file, is the same.
        let annAgain = try XCTUnwrap(lattice.objects(LPerson.self).filter("name == 'Ann'").first)
        XCTAssertEqual(names(try dogs.filter("owner == %@", annAgain)), ["Rex", "Rover"])
        let other = try Lattice(configuration: config)
        let annOther = try XCTUnwrap(other.objects(LPerson.self).filter("name == 'Ann'").first)
        XCTAssertEqual(names(try dogs.filter("owner == %@", annOther)), ["Rex", "Rover"])
        // Unmanaged or foreign objects never match.
        let unmanaged = LPerson()
        XCTAssertEqual(try dogs.filter("owner == %@", unmanaged).count, 0)
        XCTAssertEqual(try dogs.filter("owner != %@", unmanaged).count, 4)
        let foreignURL = FileManager.default.temporaryDirectory.appendingPathComponent("querylink-\(UUID().uuidString).lattice")
        let foreignConfig = Lattice.Configuration(fileURL: foreignURL, objectTypes: [LPerson.self, LDog.self, LAddress.self, LCar.self])
        defer { _ = try? Lattice.deleteFiles(for: foreignConfig) }
        let foreign = try Lattice(configuration: foreignConfig)
        let stranger = LPerson()
        try foreign.write { try foreign.add(stranger) }
        XCTAssertEqual(stranger._key, ann._key, "same key in another file")
        XCTAssertEqual(try dogs.filter("owner == %@", stranger).count, 0)
        assertInvalid(dogs, "owner == %@", LDog(), contains: ["type mismatch", "owner", "LDog"])
        assertInvalid(dogs, "owner == 'Ann'", contains: ["type mismatch", "owner", "LPerson"])
        assertInvalid(dogs, "owner < %@", ann, contains: ["<", "owner"])
    }

    func testToManyPathsWithQuantifiers() throws {
        try makeSample()
        let people = lattice.objects(LPerson.self)
        XCTAssertEqual(names(try people.filter("ANY dogs.age < 2")), ["Ann", "Bo"])
        XCTAssertEqual(names(try people.filter("SOME dogs.age > 4")), ["Bo"])
        XCTAssertEqual(names(try people.filter("dogs.age > 4")), ["Bo"], "no quantifier means ANY")
        XCTAssertEqual(names(try people.filter("ALL dogs.age < 4")), ["Ann", "Cy"], "ALL of nothing is true")
        XCTAssertEqual(names(try people.filter("NONE dogs.age < 2")), ["Cy"])
        XCTAssertEqual(names(try people.filter("ANY dogs.name BEGINSWITH 'R' AND ANY dogs.name == 'Fido'")), ["Bo"])
        XCTAssertEqual(names(try people.filter("ANY friends.name == 'Fido'")), ["Ann"])
        XCTAssertEqual(names(try people.filter("ANY pets.name == 'Rex'")), ["Ann"])
        XCTAssertEqual(names(try people.filter("ANY dogs.owner.name == 'Bo'")), ["Bo"])
        XCTAssertEqual(names(try people.filter("ANY dogs.weight == nil")), ["Bo"])
        XCTAssertEqual(names(try people.filter("ANY dogs.age IN {3, 5}")), ["Ann", "Bo"])
        XCTAssertEqual(names(try people.filter("ANY cars.model == 'Golf'")), ["Ann"])
        XCTAssertEqual(names(try people.filter("ANY partner.dogs.name == 'Rover'")), ["Bo"])
        assertInvalid(people, "ANY name == 'x'", contains: ["'LPerson.name'", "ANY", "to-many"])
        assertInvalid(people, "ALL partner.name == 'x'", contains: ["ALL", "to-many"])
    }

    func testCollectionsOfValues() throws {
        try makeSample()
        let people = lattice.objects(LPerson.self)
        XCTAssertEqual(names(try people.filter("ANY nicknames BEGINSWITH 'a'")), ["Ann"])
        XCTAssertEqual(names(try people.filter("nicknames == 'bobby'")), ["Bo"])
        XCTAssertEqual(names(try people.filter("'a' IN nicknames")), ["Ann"])
        XCTAssertEqual(names(try people.filter("%@ IN nicknames", "bobby")), ["Bo"])
        XCTAssertEqual(names(try people.filter("NONE nicknames CONTAINS[c] 'B'")), ["Ann", "Cy"])
        XCTAssertEqual(names(try people.filter("ALL scores > 3")), ["Bo", "Cy"])
        XCTAssertEqual(names(try people.filter("'vip' IN tags")), ["Ann"])
        XCTAssertEqual(names(try people.filter("ANY ratings > 5")), ["Ann"])
        XCTAssertEqual(names(try people.filter("ANY optInts == nil")), ["Ann"])
        XCTAssertEqual(names(try people.filter("ANY partner.nicknames == 'annie'")), ["Bo"])
        assertInvalid(people, "ANY nicknames > 3", contains: ["type mismatch", "nicknames"])
        assertInvalid(people, "nicknames.length == 3", contains: ["nicknames", "cannot continue"])
    }

    func testObjectInCollection() throws {
        let (ann, bo, _) = try makeSample()
        let rex = try XCTUnwrap(lattice.objects(LDog.self).filter("name == 'Rex'").first)
        let fido = try XCTUnwrap(lattice.objects(LDog.self).filter("name == 'Fido'").first)
        let people = lattice.objects(LPerson.self)
        XCTAssertEqual(names(try people.filter("%@ IN dogs", rex)), ["Ann", "Bo"])
        XCTAssertEqual(names(try people.filter("%@ IN dogs", fido)), ["Bo"])
        XCTAssertEqual(names(try people.filter("%@ IN friends", fido)), ["Ann"])
        XCTAssertEqual(names(try people.filter("ANY dogs == %@", fido)), ["Bo"])
        XCTAssertEqual(names(try people.filter("NONE dogs == %@", rex)), ["Cy"])
        XCTAssertEqual(names(try lattice.objects(LDog.self).filter("%@ IN walkers", bo)), ["Fido", "Rex"])
        XCTAssertEqual(names(try lattice.objects(LDog.self).filter("ANY walkers IN %@", [ann])), ["Rex", "Rover"])
        XCTAssertEqual(try people.filter("%@ IN dogs", LDog()).count, 0)
        assertInvalid(people, "5 IN name", contains: ["'LPerson.name'", "not a collection"])
    }

    func testCollectionOperators() throws {
        try makeSample()
        let people = lattice.objects(LPerson.self), dogs = lattice.objects(LDog.self)
        XCTAssertEqual(names(try people.filter("dogs.@count == 2")), ["Ann", "Bo"])
        XCTAssertEqual(names(try people.filter("dogs.@count == 0")), ["Cy"])
        XCTAssertEqual(names(try people.filter("nicknames.@count > 1")), ["Ann"])
        XCTAssertEqual(names(try people.filter("ratings.@count == 1")), ["Bo"])
        XCTAssertEqual(names(try people.filter("tags.@count == 0")), ["Bo", "Cy"])
        XCTAssertEqual(names(try people.filter("dogs.@avg.age == 2")), ["Ann"])
        XCTAssertEqual(names(try people.filter("dogs.@avg.age > 2.5")), ["Bo"])
        XCTAssertEqual(names(try people.filter("dogs.@min.age == 1")), ["Ann", "Bo"])
        XCTAssertEqual(names(try people.filter("dogs.@max.age >= 5")), ["Bo"])
        XCTAssertEqual(names(try people.filter("dogs.@sum.age == 6")), ["Bo"])
        XCTAssertEqual(names(try people.filter("dogs.@sum.age == 0")), ["Cy"], "the sum of nothing is 0")
        XCTAssertEqual(names(try people.filter("dogs.@avg.age == nil")), ["Cy"], "the average of nothing is nil")
        // A property reached through a link of each element (Rex and Rover are Ann's, Fido is Bo's).
        XCTAssertEqual(names(try people.filter("dogs.@sum.owner.age == 70")), ["Bo"])
        XCTAssertEqual(names(try people.filter("dogs.@avg.owner.age == 30")), ["Ann"])
        XCTAssertEqual(names(try people.filter("dogs.@max.owner.age >= 40")), ["Bo"])
        XCTAssertEqual(names(try people.filter("dogs.@max.weight == 20")), ["Ann"])
        XCTAssertEqual(names(try people.filter("dogs.@sum.weight == 10")), ["Bo"], "nil weights are skipped")
        XCTAssertEqual(names(try people.filter("dogs.@max.born == %@", Date(timeIntervalSinceReferenceDate: 0))), ["Ann", "Bo"])
        XCTAssertEqual(names(try people.filter("scores.@max > 5")), ["Ann"])
        XCTAssertEqual(names(try people.filter("scores.@sum == 10.5")), ["Ann"])
        XCTAssertEqual(names(try people.filter("ratings.@sum == 10")), ["Ann"])
        XCTAssertEqual(names(try people.filter("ratings.@avg == 5")), ["Ann"])
        XCTAssertEqual(names(try people.filter("cars.@count == 1")), ["Ann", "Bo"])
        XCTAssertEqual(names(try dogs.filter("walkers.@count == 0")), ["Stray"])
        XCTAssertEqual(names(try dogs.filter("walkers.@count == 2")), ["Rex"])
        XCTAssertEqual(names(try dogs.filter("ANY walkers.name == 'Ann'")), ["Rex", "Rover"])
        XCTAssertEqual(names(try dogs.filter("owner.dogs.@count == 2")), ["Fido", "Rex", "Rover"])
        XCTAssertEqual(names(try people.filter("partner.dogs.@count == 2")), ["Bo"])
        assertInvalid(people, "name.@count > 2", contains: ["'LPerson.name'", "@count"])
        assertInvalid(people, "dogs.@avg.name > 2", contains: ["@avg", "numbers", "dogs.@avg.name"])
        assertInvalid(people, "dogs.@avg > 2", contains: ["@avg", "needs a property"])
        assertInvalid(people, "nicknames.@max > 2", contains: ["@max", "nicknames"])
        assertInvalid(people, "dogs.@count > 'x'", contains: ["type mismatch", "dogs.@count"])
        assertInvalid(people, "dogs.@sum.nope > 1", contains: ["'LDog'", "'nope'"])
        assertInvalid(people, "ANY dogs.@count > 1", contains: ["ANY"])
        assertInvalid(people, "dogs.@count BEGINSWITH 1", contains: ["BEGINSWITH"])
    }

    func testIntegerSumOverflowComparesAsDouble() throws {
        let p = LPerson()
        p.name = "Max"
        p.ratings["a"] = Int.max
        p.ratings["b"] = Int.max
        try lattice.write { try lattice.add(p) }
        let people = lattice.objects(LPerson.self)
        XCTAssertEqual(names(try people.filter("ratings.@sum > %@", Double(Int.max))), ["Max"])
        XCTAssertEqual(names(try people.filter("ratings.@avg >= %@", Double(Int.max))), ["Max"])
    }

    func testSubquery() throws {
        try makeSample()
        let people = lattice.objects(LPerson.self)
        XCTAssertEqual(names(try people.filter("SUBQUERY(dogs, $d, $d.age < 2 AND $d.name BEGINSWITH 'R').@count > 0")), ["Ann", "Bo"])
        XCTAssertEqual(names(try people.filter("SUBQUERY(dogs, $d, $d.age > 2).@count == 1")), ["Ann", "Bo"])
        XCTAssertEqual(names(try people.filter("SUBQUERY(dogs, $d, $d.age > 0).@count == 2 AND name != 'Bo'")), ["Ann"])
        XCTAssertEqual(names(try people.filter("SUBQUERY(dogs, $d, ANY $d.walkers.name == 'Bo').@count == 2")), ["Bo"])
        XCTAssertEqual(names(try people.filter("SUBQUERY(dogs, $d, $d.owner.name == 'Bo').@count >= 1")), ["Bo"])
        // Nested: people with a dog that has a walker with a nickname starting with 'b'.
        XCTAssertEqual(names(try people.filter(
            "SUBQUERY(dogs, $d, SUBQUERY($d.walkers, $w, ANY $w.nicknames BEGINSWITH 'b').@count > 0).@count > 0")), ["Ann", "Bo"])
        XCTAssertEqual(names(try lattice.objects(LDog.self).filter("SUBQUERY(walkers, $w, $w.age > 35).@count == 1")), ["Fido", "Rex"])
        XCTAssertEqual(names(try people.filter("0 < SUBQUERY(dogs, $d, $d.age == 5).@count")), ["Bo"])
        assertInvalid(people, "SUBQUERY(dogs, $d, age < 2).@count > 0", contains: ["$d", "age"])
        assertInvalid(people, "SUBQUERY(partner, $p, $p.age < 2).@count > 0", contains: ["partner", "SUBQUERY"])
        assertInvalid(people, "SUBQUERY(dogs, $d, SUBQUERY($d.walkers, $w, $d.age > 1).@count > 0).@count > 0",
                      contains: ["$d", "innermost"])
        assertInvalid(people, "SUBQUERY(dogs, $d, $d.nope == 1).@count > 0", contains: ["'LDog'", "'nope'"])
    }

    func testErrorsNameClassPropertyAndPosition() throws {
        try makeSample()
        let dogs = lattice.objects(LDog.self)
        assertInvalid(dogs, "owner.nope == 1", contains: ["'LPerson'", "'nope'", "owner.nope", "column 1"])
        assertInvalid(dogs, "age == 1 AND owner.age == 'x'", contains: ["type mismatch", "LPerson.age", "column 14"])
        assertInvalid(dogs, "owner.name.first == 'x'", contains: ["'LPerson.name'", "not a link"])
        assertInvalid(dogs, "ANY walkers.age == age", contains: ["single value"])
        assertInvalid(dogs, "owner.name == age", contains: ["type mismatch", "'LDog.owner.name'", "'LDog.age'"])
        assertInvalid(dogs, "owner.age IN age", contains: ["IN"])
    }

    func testExplainShowsLinkAndToManyPredicates() throws {
        try makeSample()
        let people = lattice.objects(LPerson.self), dogs = lattice.objects(LDog.self), cars = lattice.objects(LCar.self)
        // Without an index on the end class, a scan of that class (no larger than four times this one) finds
        // the end objects, and the backlink table the objects linking to them.
        XCTAssertEqual(try people.filter("ANY dogs.name == 'Rex'").explain(),
                       "LPerson: full scan of LDog -> filter name == 'Rex' -> backlinks LPerson.dogs (~4 rows)")
        XCTAssertEqual(try dogs.filter("owner.name == 'Ann'").explain(),
                       "LDog: full scan of LPerson -> filter name == 'Ann' -> backlinks LDog.owner (~3 rows)")
        XCTAssertEqual(try people.filter("dogs.@count > 2").explain(), "LPerson: full scan (~3 rows) -> filter dogs.@count > 2")
        XCTAssertEqual(try people.filter("ALL dogs.age < 2").explain(), "LPerson: full scan (~3 rows) -> filter ALL dogs.age < 2")
        XCTAssertEqual(try people.filter("SUBQUERY(dogs, $d, $d.age < 2).@count > 0 AND name != 'x'").explain(),
                       "LPerson: full scan (~3 rows) -> filter SUBQUERY(dogs, $d, age < 2).@count > 0 AND name != 'x'")
        // An index on the end class drives the query through the backlink table.
        XCTAssertEqual(try people.filter("ANY dogs.age < 2").explain(), "LPerson: index range LDog.age (-inf, 2) -> backlinks LPerson.dogs (~1 rows)")
        XCTAssertEqual(try dogs.filter("owner.age > 35").explain(), "LDog: index range LPerson.age (35, +inf) -> backlinks LDog.owner (~1 rows)")
        XCTAssertEqual(try cars.filter("owner.partner.age == 30 AND model != 'x'").explain(),
                       "LCar: index seek LPerson.age == 30 -> backlinks LPerson.partner -> LCar.owner (~1 rows) -> filter model != 'x'")
        XCTAssertEqual(names(try cars.filter("owner.partner.age == 30 AND model != 'x'")), ["Polo"])
        XCTAssertEqual(names(try dogs.filter("owner.age > 35 OR name == 'Stray'")), ["Fido", "Stray"])
        // A comparison that matches nil paths cannot come from an index.
        XCTAssertTrue(try dogs.filter("owner.age IN {30, nil}").explain().contains("full scan"))
    }

    func testUnindexedEndTermsAreFoundThroughBacklinks() throws {
        let (ann, bo, cy) = try makeSample()
        let people = lattice.objects(LPerson.self), dogs = lattice.objects(LDog.self), cars = lattice.objects(LCar.self)
        // Two matching dogs in one list, and one dog twice in another: each person is found once.
        try lattice.write {
            let rex2 = LDog()
            rex2.name = "Rex"
            ann.dogs.append(rex2)
            cy.dogs.append(objectsIn: [rex2, rex2])
        }
        XCTAssertTrue(try people.filter("ANY dogs.name == 'Rex'").explain().contains("-> backlinks LPerson.dogs"))
        XCTAssertEqual(names(try people.filter("ANY dogs.name == 'Rex'")), ["Ann", "Bo", "Cy"])
        XCTAssertEqual(try people.filter("ANY dogs.name == 'Rex'").count, 3)
        XCTAssertEqual(names(try people.filter("ANY dogs.name ==[c] 'rEX' AND age > 25")), ["Ann", "Bo"])
        XCTAssertEqual(names(try dogs.filter("owner.name BEGINSWITH 'A'")), ["Rex", "Rover"])
        // Two hops, and an embedded object on the way.
        XCTAssertEqual(names(try cars.filter("owner.partner.name == 'Ann'")), ["Polo"])
        XCTAssertEqual(names(try cars.filter("owner.address.city == 'Rome'")), ["Polo"])
        // The write's own changes are seen before it commits.
        try lattice.write {
            bo.name = "Ann"
            XCTAssertEqual(names(try dogs.filter("owner.name == 'Ann'")), ["Fido", "Rex", "Rover"])
            ann.name = "Anna"
            XCTAssertEqual(names(try dogs.filter("owner.name == 'Ann'")), ["Fido"])
        }
        XCTAssertEqual(names(try dogs.filter("owner.name == 'Ann'")), ["Fido"])
        // A larger end class is scanned for a selective term; for one most of its objects pass, each object
        // here follows its own links instead (through a List, it stops at the first match).
        try lattice.write {
            for i in 0..<40 { try lattice.add(LDog(value: ["name": "pup\(i)"])) }
        }
        XCTAssertTrue(try people.filter("ANY dogs.name == 'Rex'").explain().contains("-> backlinks LPerson.dogs"))
        XCTAssertEqual(names(try people.filter("ANY dogs.name == 'Rex'")), ["Ann", "Anna", "Cy"])
        XCTAssertEqual(try people.filter("ANY dogs.name != 'zzz'").explain(),
                       "LPerson: full scan (~3 rows) -> filter ANY dogs.name != 'zzz'")
        XCTAssertEqual(names(try people.filter("ANY dogs.name != 'zzz'")), ["Ann", "Anna", "Cy"])
    }

    func testLinkingObjectsPathsAreFoundThroughTheLinksOfTheEndObjects() throws {
        let (ann, _, _) = try makeSample()
        let people = lattice.objects(LPerson.self), dogs = lattice.objects(LDog.self)
        // `walkers` is who lists the dog (LPerson.dogs); `cars` what names the person as owner (LCar.owner).
        XCTAssertTrue(try dogs.filter("ANY walkers.name == 'Ann'").explain().contains("full scan of LPerson"))
        XCTAssertEqual(names(try dogs.filter("ANY walkers.name == 'Ann'")), ["Rex", "Rover"])
        XCTAssertEqual(names(try dogs.filter("ANY walkers.name BEGINSWITH 'B'")), ["Fido", "Rex"])
        XCTAssertTrue(try dogs.filter("ANY walkers.age > 35").explain().contains("index range LPerson.age"))
        XCTAssertEqual(names(try dogs.filter("ANY walkers.age > 35")), ["Fido", "Rex"])
        XCTAssertEqual(names(try people.filter("ANY cars.model == 'Polo'")), ["Bo"])
        XCTAssertEqual(names(try people.filter("ANY cars.model == 'Polo' OR ANY dogs.name == 'Rover'")), ["Ann", "Bo"])
        XCTAssertEqual(names(try dogs.filter("ANY walkers == %@", ann)), ["Rex", "Rover"])
        // Listed twice, found once; a change inside a write is seen before it commits.
        try lattice.write {
            ann.dogs.append(ann.dogs[0])
            XCTAssertEqual(try dogs.filter("ANY walkers.name == 'Ann'").count, 2)
            ann.dogs.removeAll()
            XCTAssertEqual(names(try dogs.filter("ANY walkers.name == 'Ann'")), [])
        }
    }

    func testResultsStayLiveThroughLinkChanges() throws {
        let (ann, bo, _) = try makeSample()
        let dogs = try lattice.objects(LDog.self).filter("owner.name == 'Ann'")
        let busy = try lattice.objects(LPerson.self).filter("dogs.@count >= 2")
        XCTAssertEqual(dogs.count, 2)
        try lattice.write { ann.name = "Anna" }
        XCTAssertEqual(dogs.count, 0)
        try lattice.write {
            bo.name = "Ann"
            bo.dogs.removeAll()
        }
        XCTAssertEqual(names(dogs), ["Fido"])
        XCTAssertEqual(names(busy), ["Anna"])
        try lattice.write { try lattice.delete(bo) }
        XCTAssertEqual(dogs.count, 0)
        XCTAssertEqual(names(try lattice.objects(LCar.self).filter("owner == nil")), ["Polo", "Up"])
    }
}

/// Comparisons with given objects (`owner == %@`, `%@ IN dogs`) are answered from the backlinks of those
/// objects instead of a scan, with the same answers.
final class ObjectComparisonPlanTests: LinkQueryTestCase {
    func testObjectComparisonsUseTheBacklinksOfTheObjects() throws {
        let (ann, bo, cy) = try makeSample()
        let dogs = lattice.objects(LDog.self)
        let people = lattice.objects(LPerson.self)
        let rex = try XCTUnwrap(dogs.filter("name == 'Rex'").first)
        XCTAssertEqual(names(try dogs.filter("owner == %@", ann)), ["Rex", "Rover"])
        XCTAssertEqual(names(try dogs.filter("owner IN %@", [ann, bo])), ["Fido", "Rex", "Rover"])
        XCTAssertEqual(names(try dogs.filter("owner == %@", cy)), [])
        XCTAssertEqual(names(try people.filter("%@ IN dogs", rex)), ["Ann", "Bo"])
        XCTAssertEqual(names(try people.filter("ANY dogs == %@ AND age > 35", rex)), ["Bo"])
        XCTAssertEqual(names(try lattice.objects(LCar.self).filter("owner.partner == %@", ann)), ["Polo"])
        XCTAssertEqual(try dogs.filter("owner == %@", ann).count, 2)
        XCTAssertEqual(try dogs.filter("owner == %@", ann).sorted(byKeyPath: "name").first?.name, "Rex")
        let plan = try dogs.filter("owner == %@", ann).explain()
        XCTAssertTrue(plan.contains("object seek"), plan)
        XCTAssertTrue(try people.filter("%@ IN dogs", rex).explain().contains("-> backlinks LPerson.dogs"))
        // The same answers as the scan the negation still needs.
        XCTAssertEqual(names(try dogs.filter("NOT owner != %@", ann)), ["Rex", "Rover"])
        // An object of another file, or an unmanaged one, matches nothing.
        let otherConfig = Lattice.Configuration(fileURL: config.fileURL!.deletingLastPathComponent()
            .appendingPathComponent("other-\(UUID().uuidString).lattice"), objectTypes: config.objectTypes)
        defer { _ = try? Lattice.deleteFiles(for: otherConfig) }
        let other = try Lattice(configuration: otherConfig)
        let stranger = try other.write { try other.create(LPerson.self, value: ["name": "Ann"]) }
        XCTAssertEqual(try dogs.filter("owner == %@", stranger).count, 0)
        XCTAssertEqual(try dogs.filter("owner == %@", LPerson()).count, 0)
        // A deleted object matches nothing once its links are gone.
        try lattice.write { try lattice.delete(bo) }
        XCTAssertEqual(names(try dogs.filter("owner IN %@", [ann, bo])), ["Rex", "Rover"])
    }
}

/// `first`, `last` and `isEmpty` of a collection's filter stop at the first match from that end; they
/// give what the same question over the elements in Swift gives, duplicates and all.
final class CollectionFilterEndTests: LinkQueryTestCase {
    func testFirstLastAndIsEmptyOfACollectionsFilterMatchSwift() throws {
        var rng = SplitMix64(state: 11)
        let owner = LPerson()
        let pool = (0..<12).map { i -> LDog in let d = LDog(); d.name = "d\(i)"; d.age = i % 5; return d }
        for _ in 0..<60 { owner.dogs.append(pool[Int(rng.next() % 12)]) }
        for dog in pool.prefix(6) { owner.friends.insert(dog) }
        try lattice.write { try lattice.add(owner) }
        let dogs = Array(owner.dogs)
        let friends = Array(owner.friends)
        for age in -1...5 {
            let filtered = try owner.dogs.filter("age == %d", age)
            XCTAssertEqual(filtered.first?.name, dogs.first { $0.age == age }?.name, "first, age \(age)")
            XCTAssertEqual(filtered.last?.name, dogs.last { $0.age == age }?.name, "last, age \(age)")
            XCTAssertEqual(filtered.isEmpty, !dogs.contains { $0.age == age }, "isEmpty, age \(age)")
            let set = try owner.friends.filter("age == %d", age)
            XCTAssertEqual(set.first?.name, friends.first { $0.age == age }?.name)
            XCTAssertEqual(set.last?.name, friends.last { $0.age == age }?.name)
        }
        // Inside a write, entries appended a moment ago (their directory not stored yet) count.
        try lattice.write {
            let late = LDog(); late.name = "late"; late.age = 99
            owner.dogs.append(late)
            XCTAssertEqual(try owner.dogs.filter("age == 99").first?.name, "late")
            XCTAssertFalse(try owner.dogs.filter("age == 99").isEmpty)
        }
        // LinkingObjects: the people listing a dog.
        let dog = try XCTUnwrap(owner.dogs.first)
        XCTAssertEqual(try dog.walkers.filter("name == ''").first?.name, "")
        XCTAssertTrue(try dog.walkers.filter("age > 100").isEmpty)
        // Sets and maps: isEmpty without counting, current after each write.
        XCTAssertFalse(owner.friends.isEmpty)
        try lattice.write { owner.friends.removeAll(); owner.ratings["a"] = 1 }
        XCTAssertTrue(owner.friends.isEmpty)
        XCTAssertFalse(owner.ratings.isEmpty)
        try lattice.write { owner.ratings.removeAll() }
        XCTAssertTrue(owner.ratings.isEmpty)
        XCTAssertFalse(try XCTUnwrap(lattice.objects(LPerson.self).first).dogs.isEmpty)
    }
}

/// `contains(_:)` of results answers from the object's own record where it can, with the answer a walk
/// over the results gives.
final class ResultsContainsTests: LinkQueryTestCase {
    func testContainsMatchesAWalkOverTheResults() throws {
        try makeSample()
        let dogs = lattice.objects(LDog.self)
        let all = Array(dogs)
        let variants: [Results<LDog>] = [
            dogs, try dogs.filter("age > 2"), try dogs.filter("owner.name == 'Ann'"), try dogs.sorted(byKeyPath: "name"),
            try dogs.filter("age < 6").sorted(byKeyPath: "age", ascending: false), try dogs.distinct(by: ["owner.name"]),
            try XCTUnwrap(lattice.objects(LPerson.self).filter("name == 'Ann'").first).dogs.filter("age > 0"),
        ]
        for (i, results) in variants.enumerated() {
            let members = Array(results)
            for dog in all { XCTAssertEqual(results.contains(dog), members.contains(dog), "variant \(i), \(dog.name)") }
            XCTAssertFalse(results.contains(LDog()), "an unmanaged object is in no results")
        }
        let stray = try XCTUnwrap(dogs.filter("name == 'Stray'").first)
        try lattice.write { try lattice.delete(stray) }
        XCTAssertFalse(dogs.contains(stray), "a deleted object is in no results")
    }

    /// `contains` of linking objects: through a to-one link (the object's own link read) and a List.
    func testLinkingObjectsContains() throws {
        let (ann, bo, cy) = try makeSample()
        let cars = lattice.objects(LCar.self)
        let golf = try XCTUnwrap(cars.filter("model == 'Golf'").first), polo = try XCTUnwrap(cars.filter("model == 'Polo'").first)
        XCTAssertTrue(ann.cars.contains(golf))
        XCTAssertFalse(ann.cars.contains(polo))
        XCTAssertFalse(cy.cars.contains(golf))
        XCTAssertFalse(ann.cars.contains(LCar()), "an unmanaged car links nowhere")
        let rex = try XCTUnwrap(lattice.objects(LDog.self).filter("name == 'Rex'").first)
        XCTAssertTrue(rex.walkers.contains(ann))
        XCTAssertTrue(rex.walkers.contains(bo))
        XCTAssertFalse(rex.walkers.contains(cy))
        try lattice.write { golf.owner = bo }
        XCTAssertFalse(ann.cars.contains(golf))
        XCTAssertTrue(bo.cars.contains(golf))
        try lattice.write { try lattice.delete(golf) }
        XCTAssertFalse(bo.cars.contains(golf), "a deleted car links nowhere")

        // The collection's own view decides, whatever the element's handle has seen.
        let other = try Lattice(configuration: config)
        let polo2 = try XCTUnwrap(other.objects(LCar.self).filter("model == 'Polo'").first)
        let boCars = bo.cars
        try other.write { polo2.owner = try other.objects(LPerson.self).filter("name == 'Cy'").first }
        XCTAssertTrue(boCars.contains(polo2), "this handle has not seen the other's commit")
        let frozen = boCars.freeze()
        lattice.refresh()
        XCTAssertFalse(boCars.contains(polo2))
        XCTAssertTrue(frozen.contains(try XCTUnwrap(lattice.objects(LCar.self).filter("model == 'Polo'").first)))
    }

    /// `last` of a class's filter (a scan walks back from the class's end) is the last of a walk.
    func testLastOfAFilterIsTheLastOfAWalk() throws {
        try makeSample()
        try lattice.write { for i in 0..<40 { _ = try lattice.create(LDog.self, value: ["name": "d\(i)", "age": i % 7, "weight": Double(i)]) } }
        let dogs = lattice.objects(LDog.self)
        for predicate in ["weight > 3", "weight < 3", "weight > 100", "name BEGINSWITH 'R'", "age == 2", "age > 4 AND weight < 30",
                          "owner.name == 'Ann'", "weight == nil"] {
            let filtered = try dogs.filter(predicate)
            XCTAssertEqual(filtered.last?.name, Array(filtered).last?.name, predicate)
            XCTAssertEqual(filtered.first?.name, Array(filtered).first?.name, predicate)
        }
    }
}
