import Foundation
import XCTest
@testable import Lattice

/// The dynamic API (`dynamicObjects`, `dynamicCreate`, `dynamicObject(ofType:forPrimaryKey:)`) on a
/// handle opened with model classes, as Realm allows on any Realm: the same objects, read and written
/// as `DynamicObject`s or as model objects, through one handle.
final class DynamicTypedHandleTests: XCTestCase {
    private let types: [Object.Type] = [LPerson.self, LDog.self, LAddress.self, LCar.self]

    func testReadsAndWritesTheModelClassesObjectsByName() throws {
        let db = makeTempDatabase()
        let lattice = try db.open(types)
        XCTAssertFalse(lattice.isDynamic)
        try lattice.write {
            try lattice.create(LPerson.self, value: ["name": "Ann", "age": 30, "dogs": [["name": "Rex", "age": 3]], "address": ["city": "Oslo"]])
        }
        // Reading: a model object's data, its links as dynamic objects.
        let people = lattice.dynamicObjects("LPerson")
        XCTAssertEqual(people.count, 1)
        let ann = try XCTUnwrap(people.first)
        XCTAssertEqual(ann.objectSchema.className, "LPerson")
        XCTAssertEqual(ann["name"] as? String, "Ann")
        XCTAssertEqual(ann["age"] as? Int, 30)
        let rex = try XCTUnwrap(ann.dynamicList("dogs").first)
        XCTAssertEqual(rex["name"] as? String, "Rex")
        XCTAssertEqual((rex["walkers"] as? LinkingObjects<DynamicObject>)?.first?["name"] as? String, "Ann")
        XCTAssertEqual((ann["address"] as? DynamicObject)?["city"] as? String, "Oslo")
        XCTAssertEqual(try people.filter("ANY dogs.name == 'Rex' AND age > 20").count, 1)

        // Writing: dynamic objects and model objects of one file link to each other, whichever the side.
        let typedAnn = try XCTUnwrap(lattice.objects(LPerson.self).first)
        XCTAssertTrue(typedAnn.isSameObject(as: ann), "one stored object, read as either kind")
        XCTAssertEqual(typedAnn, ann)
        try lattice.write {
            let bob = try lattice.dynamicCreate("LPerson", value: ["name": "Bob", "age": 40, "partner": typedAnn, "dogs": [rex, ["name": "Max"]]])
            try lattice.dynamicCreate("LDog", value: ["name": "Spot", "owner": bob])
            try lattice.create(LCar.self, value: ["model": "Volvo", "owner": bob, "driver": ann])
            ann["age"] = 31
            ann["partner"] = bob
            rex["owner"] = typedAnn
            ann.dynamicMutableSet("friends").insert(rex)
            ann.dynamicMap("pets")["best"] = rex
        }
        // The model objects see it all at once (same handle, no refresh), and the results of both kinds count it.
        XCTAssertEqual(typedAnn.age, 31)
        XCTAssertEqual(typedAnn.partner?.name, "Bob")
        XCTAssertEqual(typedAnn.partner?.partner?.name, "Ann")
        XCTAssertEqual(typedAnn.partner?.dogs.map(\.name), ["Rex", "Max"])
        XCTAssertEqual(typedAnn.dogs.first?.owner?.name, "Ann")
        XCTAssertEqual(typedAnn.friends.first?.name, "Rex")
        XCTAssertEqual((typedAnn.pets["best"] ?? nil)?.name, "Rex")
        XCTAssertEqual(lattice.objects(LPerson.self).count, 2)
        XCTAssertEqual(lattice.dynamicObjects("LDog").count, 3)
        XCTAssertEqual(try lattice.objects(LDog.self).filter("owner.name == 'Bob'").map(\.name), ["Spot"])
        XCTAssertEqual(lattice.dynamicObjects("LCar").first?["model"] as? String, "Volvo")
        XCTAssertEqual(((lattice.dynamicObjects("LCar").first?["driver"]) as? DynamicObject)?["name"] as? String, "Ann")

        // Deleting a dynamic object deletes the model object.
        try lattice.write { try lattice.delete(try XCTUnwrap(lattice.dynamicObjects("LDog").filter("name == 'Spot'").first)) }
        XCTAssertEqual(lattice.objects(LDog.self).count, 2)

        // Reopened from disk.
        let again = try db.open(types)
        let bob = try XCTUnwrap(again.objects(LPerson.self).filter("name == 'Bob'").first)
        XCTAssertEqual(bob.partner?.name, "Ann")
        XCTAssertEqual(bob.dogs.map(\.name), ["Rex", "Max"])
        XCTAssertEqual(bob.cars.first?.model, "Volvo")
        XCTAssertEqual(again.dynamicObjects("LPerson").filter { $0["age"] as? Int == 31 }.count, 1)
    }

    func testPrimaryKeyLookupAndUnknownClassesOnATypedHandle() throws {
        let db = makeTempDatabase()
        let lattice = try db.open([FixtureItem.self, FixturePerson.self, FixtureLogLine.self])
        try lattice.write {
            try lattice.create(FixtureItem.self, value: ["id": 7, "name": "typed"])
            try lattice.dynamicCreate("FixtureItem", value: ["id": 8, "name": "dynamic"])
        }
        XCTAssertEqual(try lattice.dynamicObject(ofType: "FixtureItem", forPrimaryKey: 7)?["name"] as? String, "typed")
        XCTAssertEqual(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 8)?.name, "dynamic")
        XCTAssertNil(try lattice.dynamicObject(ofType: "FixtureItem", forPrimaryKey: 9))
        // A class the schema does not have: a typed error, never a stop (except `dynamicObjects`, whose
        // precondition is documented).
        assertLatticeError(try lattice.dynamicObject(ofType: "Dog", forPrimaryKey: 1), .classNotInSchema(className: "Dog"))
        try lattice.write {
            assertLatticeError(try lattice.dynamicCreate("Dog", value: ["name": "Rex"]), .classNotInSchema(className: "Dog"))
            assertLatticeError(try lattice.dynamicCreate("FixtureItem", value: ["id": 7]), .duplicatePrimaryKey(className: "FixtureItem", value: "7"))
            assertLatticeError(try lattice.dynamicCreate("FixtureItem", value: ["id": 9, "nope": 1]),
                               .unknownProperty(className: "FixtureItem", property: "nope"))
        }
        assertLatticeError(try lattice.dynamicObject(ofType: "FixtureLogLine", forPrimaryKey: 1),
                           .noPrimaryKey(className: "FixtureLogLine", operation: "dynamicObject(ofType:forPrimaryKey:)"))
        // Outside a write transaction, creating throws as for model classes.
        guard case .notInWriteTransaction? = latticeError(try lattice.dynamicCreate("FixtureItem", value: ["id": 10])) else { return XCTFail() }
        XCTAssertEqual(try db.open([FixtureItem.self, FixturePerson.self, FixtureLogLine.self]).objects(FixtureItem.self).map(\.id), [7, 8])
    }

    /// Results of dynamic objects on a typed handle stay live and observable, freeze and thaw, and
    /// a model write invalidates what they cached (and the other way round).
    func testDynamicResultsStayLiveFreezeAndAreObserved() throws {
        let db = makeTempDatabase()
        let lattice = try db.open(types)
        let dogs = try lattice.dynamicObjects("LDog").filter("age > 2")
        let typedDogs = try lattice.objects(LDog.self).filter("age > 2")
        XCTAssertEqual(dogs.count, 0)
        XCTAssertEqual(typedDogs.count, 0)
        try lattice.write { try lattice.create(LDog.self, value: ["name": "Rex", "age": 3]) }
        XCTAssertEqual(dogs.count, 1, "a model write is seen by dynamic results")
        try lattice.write { try lattice.dynamicCreate("LDog", value: ["name": "Max", "age": 4]) }
        XCTAssertEqual(typedDogs.count, 2, "a dynamic write is seen by model results")
        try lattice.write { lattice.dynamicObjects("LDog").first?["age"] = 1 }
        XCTAssertEqual(typedDogs.map(\.name), ["Max"])
        XCTAssertEqual(dogs.map { $0["name"] as? String }, ["Max"])

        // Observed: another handle's commit is delivered with the dynamic results.
        var counts: [Int] = []
        let token = dogs.observe { change in
            if case .initial(let r) = change { counts.append(r.count) }
            if case .update(let r, _, let insertions, _) = change { counts.append(r.count * 100 + insertions.count) }
        }
        lattice.refresh()
        let other = try db.open(types)
        try other.write { try other.create(LDog.self, value: ["name": "Bo", "age": 9]) }
        lattice.refresh()
        XCTAssertEqual(counts, [1, 201])
        token.invalidate()

        // On a queue: the results are rebuilt on a handle of the queue, as dynamic results.
        let queue = DispatchQueue(label: "dynamic-results")
        let initial = expectation(description: "initial on the queue")
        let names = Locked<[String]>([])
        let queued = dogs.observe(on: queue) { change in
            if case .initial(let r) = change {
                names.withLock { $0 = r.map { $0["name"] as? String ?? "?" } }
                initial.fulfill()
            }
        }
        wait(for: [initial], timeout: 10)
        XCTAssertEqual(names.withLock { $0 }, ["Max", "Bo"])
        let seen = Locked<[String]>([])
        let changed = expectation(description: "a change on the queue")
        changed.assertForOverFulfill = false
        let observed = try XCTUnwrap(dogs.first).observe(keyPaths: nil, on: queue) { change in
            defer { changed.fulfill() }
            switch change {
            case .change(let object, let properties):
                // Integers are Ints in a dynamic object's changes too.
                let isInt = properties.first?.newValue is Int && properties.first?.oldValue is Int
                seen.withLock { $0.append("\(object["name"] as? String ?? "?") \(properties.map(\.name)) \(isInt)") }
            case .deleted: seen.withLock { $0.append("deleted") }
            case .error(let error): seen.withLock { $0.append("error \(error)") }
            }
        }
        // The observer registers on the queue, in a block queued before this one: once it ran, the
        // observer has taken the object as it is, and the next commit is a change.
        queue.sync {}
        try other.write { other.objects(LDog.self).filter { $0.name == "Max" }.first?.age = 10 }
        wait(for: [changed], timeout: 10)
        XCTAssertEqual(seen.withLock { $0.first }, "Max [\"age\"] true")
        queued.invalidate()
        observed.invalidate()

        let frozen = dogs.freeze()
        XCTAssertEqual(frozen.first?["name"] as? String, "Max")
        XCTAssertEqual(frozen.first?.isFrozen, true)
        let thawed = try XCTUnwrap(frozen.thaw())
        XCTAssertEqual(thawed.first?["name"] as? String, "Max")
        let rex = try XCTUnwrap(lattice.dynamicObjects("LDog").filter("name == 'Rex'").first)
        XCTAssertEqual(rex.freeze()["age"] as? Int, 1)
    }

    /// `dynamicList`, `dynamicMutableSet` and `dynamicMap` in a migration block: the collections of
    /// objects by name; a property of another kind fails the migration, naming it.
    func testDynamicCollectionsInAMigration() throws {
        let db = makeTempDatabase()
        do {
            let lattice = try db.open(types)
            try lattice.write {
                let ann = try lattice.create(LPerson.self, value: ["name": "Ann", "dogs": [["name": "Rex"]]])
                ann.friends.insert(ann.dogs[0])
                ann.pets["best"] = ann.dogs[0]
            }
        }
        var wrong = db.configuration(types, schemaVersion: 1)
        wrong.migrationBlock = { migration, _ in
            migration.enumerateObjects(ofType: "LPerson") { _, new in _ = new!.dynamicList("name") }
        }
        assertLatticeError(try Lattice(configuration: wrong),
                           .wrongType(className: "LPerson", property: "name", expected: "a List of objects", found: "String"))
        var config = db.configuration(types, schemaVersion: 1)
        config.migrationBlock = { migration, _ in
            migration.enumerateObjects(ofType: "LPerson") { old, new in
                XCTAssertEqual(old!.dynamicList("dogs").map { $0["name"] as? String }, ["Rex"])
                XCTAssertEqual(old!.dynamicMutableSet("friends").first?["name"] as? String, "Rex")
                XCTAssertEqual((old!.dynamicMap("pets")["best"] ?? nil)?["name"] as? String, "Rex")
                let list = new!.dynamicList("dogs")
                list.append(migration.create("LDog", value: ["name": "Max"]))
                XCTAssertEqual(new!.dynamicList("dogs").count, 2)
                new!.dynamicMap("pets")["second"] = list[1]
            }
        }
        _ = try Lattice(configuration: config)
        let lattice = try db.open(types, schemaVersion: 1)
        let ann = try XCTUnwrap(lattice.objects(LPerson.self).first)
        XCTAssertEqual(ann.dogs.map(\.name), ["Rex", "Max"])
        XCTAssertEqual((ann.pets["second"] ?? nil)?.name, "Max")
    }
}
