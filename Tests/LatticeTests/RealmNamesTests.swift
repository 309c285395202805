import Foundation
import XCTest
@testable import Lattice

// The names Realm users reach for daily, on Object, List, MutableSet, Map, Results and LinkingObjects.

final class RNDog: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var owner: RNPerson?
    @Persisted var tricks: List<String>
}

final class RNPerson: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var dogs: List<RNDog>
    @Persisted var numbers: List<Int>
    @Persisted var tags: MutableSet<String>
    @Persisted var scores: Map<String, Int>
    @Persisted(originProperty: "owner") var pets: LinkingObjects<RNDog>
}

final class RealmNamesTests: XCTestCase {
    private let types: [Object.Type] = [RNDog.self, RNPerson.self]

    /// A file holding person 1 "Ann" with dogs 1 "a", 2 "b", 3 "c" (ages 1, 2, 3), each owned by Ann.
    private func seeded() throws -> TempDatabase {
        let db = makeTempDatabase("realm-names")
        let lattice = try db.open(types)
        try lattice.write {
            let ann = try lattice.create(RNPerson.self, value: ["id": 1, "name": "Ann"])
            for (id, name) in [(1, "a"), (2, "b"), (3, "c")] {
                ann.dogs.append(try lattice.create(RNDog.self, value: ["id": id, "name": name, "age": id, "owner": ann]))
            }
        }
        return db
    }

    private func ann(_ lattice: Lattice) throws -> RNPerson {
        try XCTUnwrap(lattice.object(ofType: RNPerson.self, forPrimaryKey: 1))
    }

    // MARK: List

    /// Every range type, through a `let` list (List is a class), mirrored on an Array.
    private func applyRangeEdits(_ list: List<Int>, _ expected: inout [Int]) {
        list.removeSubrange(8...); expected.removeSubrange(8...)
        list.removeSubrange(...0); expected.removeSubrange(...0)
        list.removeSubrange(..<1); expected.removeSubrange(..<1)
        list.removeSubrange(1...2); expected.removeSubrange(1...2)
        list.removeSubrange(1..<2); expected.removeSubrange(1..<2)
        list.replaceSubrange(1...1, with: [60, 61]); expected.replaceSubrange(1...1, with: [60, 61])
        list.replaceSubrange(3..., with: [70]); expected.replaceSubrange(3..., with: [70])
        list.replaceSubrange(..<1, with: [Int]()); expected.replaceSubrange(..<1, with: [Int]())
        list.replaceSubrange(...0, with: [1]); expected.replaceSubrange(...0, with: [1])
        list.replaceSubrange(0..<1, with: [0]); expected.replaceSubrange(0..<1, with: [0])
        // A range subscript set to fewer (or more) elements, as on an Array.
        list[1..<3] = list[0..<1]; expected[1..<3] = expected[0..<1]
        list[0..<1] = list[0..<2]; expected[0..<1] = expected[0..<2]
        XCTAssertEqual(Array(list[1..<2]), Array(expected[1..<2]))
        XCTAssertEqual(Array(list), expected)
        list.replaceSubrange(..., with: [9, 8, 7]); expected.replaceSubrange(0..., with: [9, 8, 7])
        XCTAssertEqual(Array(list), [9, 8, 7])
    }

    func testRangeRemovalsAndReplacementsOnALetList() throws {
        let db = try seeded()
        var expected = Array(0..<10)
        do {
            let lattice = try db.open(types)
            let numbers = try ann(lattice).numbers
            try lattice.write {
                numbers.append(objectsIn: 0..<10)
                applyRangeEdits(numbers, &expected)
            }
        }
        XCTAssertEqual(Array(try ann(try db.open(types)).numbers), [9, 8, 7])

        var unmanagedExpected = Array(0..<10)
        let unmanaged = List<Int>()
        unmanaged.append(objectsIn: 0..<10)
        applyRangeEdits(unmanaged, &unmanagedExpected)

        do {
            let lattice = try db.open(types)
            let numbers = try ann(lattice).numbers
            try lattice.write { numbers.removeSubrange(...) }
        }
        XCTAssertEqual(try ann(try db.open(types)).numbers.count, 0)
    }

    func testAddingASequenceOfObjects() throws {
        let db = makeTempDatabase("realm-names")
        let lattice = try db.open(types)
        let dogs = (1...3).map { id -> RNDog in
            let dog = RNDog()
            dog.id = id
            dog.name = "dog \(id)"
            return dog
        }
        try lattice.write { try lattice.add(dogs) }
        XCTAssertEqual(lattice.objects(RNDog.self).map(\.name), ["dog 1", "dog 2", "dog 3"])
        // A duplicate primary key throws, as one `add` does; with `.modified` the objects are updated.
        let again = RNDog()
        again.id = 2
        again.name = "renamed"
        XCTAssertThrowsError(try lattice.write { try lattice.add([again]) })
        try lattice.write { try lattice.add([again], update: .modified) }
        XCTAssertEqual(try db.open(types).object(ofType: RNDog.self, forPrimaryKey: 2)?.name, "renamed")
    }

    func testListMutatorsOfRealm() throws {
        let db = try seeded()
        do {
            let lattice = try db.open(types)
            let dogs = try ann(lattice).dogs
            let numbers = try ann(lattice).numbers
            try lattice.write {
                numbers.append(objectsIn: [10, 11, 12, 13, 14, 15])
                numbers.insert(contentsOf: [1, 2], at: 1)          // 10 1 2 11 12 13 14 15
                numbers.move(from: 0, to: 3)                         // 1 2 11 10 12 13 14 15
                numbers.swapAt(0, 7)                                 // 15 2 11 10 12 13 14 1
                numbers.remove(atOffsets: IndexSet([1, 2, 5]))       // 15 10 12 14 1
                numbers.move(fromOffsets: IndexSet([0, 2]), toOffset: 4)  // Realm's order: 10 12 1 15 14
                numbers.replace(index: 4, object: 100)               // 10 12 1 15 100
                dogs.move(fromOffsets: IndexSet([2]), toOffset: 0)   // c a b
            }
        }
        let ann = try ann(try db.open(types))
        XCTAssertEqual(Array(ann.numbers), [10, 12, 1, 15, 100])
        // Realm's own cases: one offset as an Array moves it; several in Realm's order.
        let list = List<String>()
        list.append(objectsIn: ["1", "2", "3"])
        list.move(fromOffsets: IndexSet([1]), toOffset: 0)
        XCTAssertEqual(Array(list), ["2", "1", "3"])
        list.move(fromOffsets: IndexSet([0]), toOffset: 3)
        XCTAssertEqual(Array(list), ["1", "3", "2"])
        list.move(fromOffsets: IndexSet([0]), toOffset: 0)
        list.move(fromOffsets: IndexSet(), toOffset: 1)
        XCTAssertEqual(Array(list), ["1", "3", "2"])
        list.replaceSubrange(0..., with: ["1", "2", "3"])
        list.move(fromOffsets: IndexSet([0, 2]), toOffset: 1)
        XCTAssertEqual(Array(list), ["2", "3", "1"])
        XCTAssertEqual(ann.dogs.map(\.name), ["c", "a", "b"])
    }

    func testIndexMatchingObjectsAtAndValueForKey() throws {
        let db = try seeded()
        let lattice = try db.open(types)
        let ann = try ann(lattice)
        XCTAssertEqual(try ann.dogs.index(matching: "age >= %d", 2), 1)
        XCTAssertNil(try ann.dogs.index(matching: "name == %@", "z"))
        XCTAssertEqual(ann.dogs.objects(at: IndexSet([0, 2])).map(\.name), ["a", "c"])
        let sorted = try lattice.objects(RNDog.self).sorted(byKeyPath: "age", ascending: false)
        XCTAssertEqual(sorted.objects(at: IndexSet(integersIn: 0...1)).map(\.name), ["c", "b"])
        XCTAssertEqual(ann.dogs.value(forKey: "name") as? [String], ["a", "b", "c"])
        XCTAssertEqual(ann.pets.index(of: ann.dogs[1]).map { ann.pets[$0].name }, "b")
        XCTAssertEqual(ann.pets.objects(at: IndexSet([0])).count, 1)
        XCTAssertEqual(List<Int>().objects(at: IndexSet()), [])
        XCTAssertThrowsError(try List<RNDog>().index(matching: "age > 1"), "an unmanaged list cannot be queried")

        XCTAssertEqual(ann.dogs.value(forKeyPath: "owner.name") as? [String], ["Ann", "Ann", "Ann"])
        // Realm's key-value coding of collections: the objects themselves and collection operators.
        let ages = ann.dogs.map(\.age)
        let all = lattice.objects(RNDog.self)
        XCTAssertEqual((ann.dogs.value(forKey: "self") as? [RNDog])?.map(\.name), ["a", "b", "c"])
        XCTAssertEqual(all.value(forKeyPath: "@count") as? Int, all.count)
        XCTAssertEqual(ann.dogs.value(forKey: "@count") as? Int, 3)
        XCTAssertEqual(ann.dogs.value(forKeyPath: "@min.age") as? Int, ages.min())
        XCTAssertEqual(ann.dogs.value(forKeyPath: "@max.age") as? Int, ages.max())
        XCTAssertEqual(ann.dogs.value(forKeyPath: "@sum.age") as? Int, ages.reduce(0, +))
        XCTAssertEqual(ann.dogs.value(forKeyPath: "@avg.age") as? Double, Double(ages.reduce(0, +)) / 3)
        XCTAssertNil(try ann.dogs.filter("age > 100").value(forKeyPath: "@max.age"), "no values")
        XCTAssertEqual(try ann.dogs.filter("age > 100").value(forKeyPath: "@sum.age") as? Int, 0)
        XCTAssertEqual(List<RNDog>().value(forKeyPath: "@count") as? Int, 0, "unmanaged collections too")

        // An unmanaged List finds a stored object by `==`, as `contains` does.
        let unmanaged = List<RNDog>()
        unmanaged.append(ann.dogs[1])
        let again = try XCTUnwrap(lattice.object(ofType: RNDog.self, forPrimaryKey: 2))
        XCTAssertTrue(unmanaged.contains(again))
        XCTAssertEqual(unmanaged.index(of: again), 0)
        XCTAssertEqual(ann.dogs[0].value(forKeyPath: "owner.id") as? Int, 1)
        XCTAssertNil(RNDog().value(forKeyPath: "owner.name"), "a nil link on the way")

        try lattice.write { try ann.dogs.setValue(9, forKey: "age") }
        XCTAssertEqual(ann.dogs.map(\.age), [9, 9, 9])
        XCTAssertTrue(ann.dogs.lattice === lattice)
        XCTAssertNil(List<Int>().lattice)
    }

    // MARK: MutableSet and Map as Swift collections

    private func elements<C: Collection>(_ collection: C) -> [C.Element] { collection.indices.map { collection[$0] } }

    func testMutableSetIsASwiftCollection() throws {
        let db = try seeded()
        do {
            let lattice = try db.open(types)
            let tags = try ann(lattice).tags
            try lattice.write {
                tags.insert(objectsIn: ["b", "a", "c", "a"])
                XCTAssertEqual(elements(tags), ["a", "b", "c"], "positions follow the set's order")
                XCTAssertEqual(tags.first, "a")
                XCTAssertEqual(tags.last, "c")
                XCTAssertEqual(tags.index(of: "c"), 2)
                XCTAssertEqual(tags.map { $0.uppercased() }, ["A", "B", "C"])
                XCTAssertEqual(tags.remove(at: 1), "b")
                XCTAssertTrue(tags.isSubset(of: ["a", "c", "d"]))
                XCTAssertTrue(tags.intersects(["c"]))
                tags.formUnion(["d"])
                tags.subtract(["a"])
                tags.formIntersection(["c", "d", "e"])
            }
        }
        XCTAssertEqual(elements(try ann(try db.open(types)).tags), ["c", "d"])
        let unmanaged = MutableSet<Int>()
        unmanaged.insert(objectsIn: [3, 1, 3])
        XCTAssertEqual(elements(unmanaged).sorted(), [1, 3])
        XCTAssertEqual(unmanaged.sorted(ascending: false), [3, 1])
    }

    func testValuesSortedAscendingOrNot() throws {
        let lattice = try seeded().open(types)
        let ann = try ann(lattice)
        try lattice.write { ann.numbers.append(objectsIn: [5, 1, 3, 1]) }
        XCTAssertEqual(ann.numbers.sorted(ascending: true), [1, 1, 3, 5])
        XCTAssertEqual(ann.numbers.sorted(ascending: false), [5, 3, 1, 1])
        XCTAssertEqual(Array(ann.numbers), [5, 1, 3, 1], "the list keeps its order")
        XCTAssertEqual(ann.numbers.sorted(), [1, 1, 3, 5], "Swift's own sorted() is still there")
        // Optional values: nil first ascending, last descending.
        let optionals = List<Int?>()
        optionals.append(objectsIn: [3, nil, 1])
        XCTAssertEqual(optionals.sorted(ascending: true), [nil, 1, 3])
        XCTAssertEqual(optionals.sorted(ascending: false), [3, 1, nil])
        XCTAssertEqual(optionals.sorted(), [nil, 1, 3])
    }

    func testMapIsASwiftCollectionOfKeyValuePairs() throws {
        let db = try seeded()
        do {
            let lattice = try db.open(types)
            let scores = try ann(lattice).scores
            try lattice.write {
                scores["b"] = 2
                scores["a"] = 1
                let entry: Map<String, Int>.Element = scores[0]
                XCTAssertEqual(entry.key, "a")
                XCTAssertEqual(entry.value, 1)
                XCTAssertEqual(scores.keys, ["a", "b"])
                XCTAssertEqual(scores.values, [1, 2])
                XCTAssertEqual(elements(scores).map(\.key), ["a", "b"])
                var seen: [String] = []
                for (key, value) in scores { seen.append("\(key)=\(value)") }
                XCTAssertEqual(seen, ["a=1", "b=2"])
                XCTAssertEqual(scores.updateValue(20, forKey: "b"), 2)
                XCTAssertNil(scores.updateValue(3, forKey: "c"))
                XCTAssertEqual(scores.removeValue(forKey: "a"), 1)
                XCTAssertNil(scores.removeValue(forKey: "a"))
                scores.merge(["c": 30, "d": 4]) { $0 + $1 }
                XCTAssertEqual(scores.remove(at: 0).key, "b")
                XCTAssertTrue(scores.contains { $0.value == 4 })
                XCTAssertEqual([scores.min(), scores.max()], [4, 33])
                XCTAssertEqual(scores.sum(), 37)
                XCTAssertEqual(scores.last?.key, "d")
            }
        }
        let scores = try ann(try db.open(types)).scores
        XCTAssertEqual(scores.asKeyValueSequence().map(\.key), ["c", "d"])
        XCTAssertEqual(scores["c"], 33)
        let unmanaged = Map<String, Int>()
        unmanaged["z"] = 26
        unmanaged["y"] = 25
        XCTAssertEqual(elements(unmanaged).map(\.key), ["y", "z"])
    }

    // MARK: Invalidation

    func testIsInvalidatedOfResultsAndCollections() throws {
        let db = try seeded()
        let lattice = try db.open(types)
        let ann = try ann(lattice)
        let all = lattice.objects(RNDog.self)
        let dogs = ann.dogs, tags = ann.tags, scores = ann.scores, pets = ann.pets
        let listResults = try dogs.filter("age > 0")
        XCTAssertFalse(all.isInvalidated || listResults.isInvalidated || dogs.isInvalidated || pets.isInvalidated)
        try lattice.write { try lattice.delete(ann) }
        XCTAssertTrue(dogs.isInvalidated)
        XCTAssertTrue(tags.isInvalidated)
        XCTAssertTrue(scores.isInvalidated)
        XCTAssertTrue(pets.isInvalidated)
        XCTAssertTrue(listResults.isInvalidated, "results of a deleted owner's list")
        lattice.invalidate()
        XCTAssertFalse(all.isInvalidated, "results of a class read the latest commit after invalidate()")
        XCTAssertEqual(all.count, 3)
        XCTAssertFalse(List<Int>().isInvalidated)
    }

    // MARK: Object by name

    func testKeyValueAccessOfObjects() throws {
        let db = try seeded()
        do {
            let lattice = try db.open(types)
            let dog = try XCTUnwrap(lattice.object(ofType: RNDog.self, forPrimaryKey: 1))
            XCTAssertEqual(dog["name"] as? String, "a")
            XCTAssertEqual(dog.value(forKey: "age") as? Int, 1)
            XCTAssertEqual((dog["owner"] as? RNPerson)?.name, "Ann")
            try lattice.write {
                dog["name"] = "Max"
                dog.setValue(7, forKey: "age")
                dog["tricks"] = ["sit", "roll"]
                dog["owner"] = ["id": 5, "name": "Pat"]
                try dog.setValue(nil, forProperty: "owner")
                try dog.setValue(["id": 6, "name": "Quinn"], forProperty: "owner")
                dog["id"] = 1  // the same primary key: allowed
            }
            XCTAssertEqual(dog.name, "Max")
        }
        let lattice = try db.open(types)
        let dog = try XCTUnwrap(lattice.object(ofType: RNDog.self, forPrimaryKey: 1))
        XCTAssertEqual(dog.name, "Max")
        XCTAssertEqual(dog.age, 7)
        XCTAssertEqual(Array(dog.tricks), ["sit", "roll"])
        XCTAssertEqual(dog.owner?.name, "Quinn")
        XCTAssertEqual(lattice.objects(RNPerson.self).count, 3, "each dictionary built a person")

        let unmanaged = RNDog()
        unmanaged["name"] = "Free"
        unmanaged.setValue(["x"], forKey: "tricks")
        XCTAssertEqual(unmanaged.name, "Free")
        XCTAssertEqual(unmanaged.value(forKey: "tricks").map { Array($0 as? List<String> ?? List()) }, ["x"])
    }

    func testThrowingKeyValueAccess() throws {
        let db = try seeded()
        let lattice = try db.open(types)
        let dog = try XCTUnwrap(lattice.object(ofType: RNDog.self, forPrimaryKey: 1))
        assertLatticeError(try dog.value(forProperty: "colour"), .unknownProperty(className: "RNDog", property: "colour"))
        assertLatticeError(try dog.setValue("Max", forProperty: "name"),
                           .notInWriteTransaction(operation: "setValue(_:forKey:) of 'RNDog.name'"))
        try lattice.write {
            assertLatticeError(try dog.setValue(1, forProperty: "colour"), .unknownProperty(className: "RNDog", property: "colour"))
            assertLatticeError(try dog.setValue("old", forProperty: "age"),
                               .wrongType(className: "RNDog", property: "age", expected: "Int", found: "String"))
            assertLatticeError(try dog.setValue(nil, forProperty: "name"), .missingValue(className: "RNDog", property: "name"))
            assertLatticeError(try dog.setValue(2, forProperty: "id"), .primaryKeyChanged(className: "RNDog", property: "id"))
            assertLatticeError(try dog.setValue(["name": 5], forProperty: "owner"),
                               .wrongType(className: "RNPerson", property: "name", expected: "String", found: "Int"))
        }
        XCTAssertEqual(dog.age, 1, "nothing was written")
        XCTAssertEqual(dog.owner?.name, "Ann")
        assertLatticeError(try RNDog().setValue("old", forProperty: "age"),
                           .wrongType(className: "RNDog", property: "age", expected: "Int", found: "String"))
        try lattice.write { try lattice.delete(dog) }
        assertLatticeError(try dog.value(forProperty: "name"), .objectInvalidated(className: "RNDog"))
    }

    func testIdentityAndClassNames() throws {
        let db = try seeded()
        let lattice = try db.open(types)
        let a = try XCTUnwrap(lattice.object(ofType: RNDog.self, forPrimaryKey: 1))
        let again = try XCTUnwrap(lattice.object(ofType: RNDog.self, forPrimaryKey: 1))
        XCTAssertFalse(a === again)
        XCTAssertTrue(a.isSameObject(as: again), "two instances of one stored object")
        XCTAssertFalse(a.isSameObject(as: lattice.object(ofType: RNDog.self, forPrimaryKey: 2)))
        XCTAssertFalse(a.isSameObject(as: nil))
        let unmanaged = RNDog()
        XCTAssertTrue(unmanaged.isSameObject(as: unmanaged))
        XCTAssertFalse(unmanaged.isSameObject(as: RNDog()))
        XCTAssertEqual(RNDog.className(), "RNDog")
        XCTAssertEqual(RNDog.primaryKey(), "id")
        XCTAssertNil(CNToy.primaryKey())
        XCTAssertEqual(RNDog.sharedSchema()?.properties.map(\.name), ["id", "name", "age", "owner", "tricks"])
        XCTAssertEqual(a.objectSchema.className, RNDog.className())
    }

    // MARK: Misuse that cannot throw stops with a message

    /// A subscript cannot throw: misuse stops the process, as Realm's exception does. Checked in a child
    /// process (this test binary re-run on this one test) whose output must name the class and property.
    func testSubscriptMisuseStopsWithAClearMessage() throws {
        let environment = ProcessInfo.processInfo.environment
        if let scenario = environment["LATTICE_NAMES_MISUSE"], let path = environment["LATTICE_NAMES_MISUSE_FILE"] {
            try runMisuse(scenario, path: path)
            return
        }
        let db = try seeded()
        let scenarios = [
            ("get", "'RNDog' has no persisted property named 'colour'."),
            ("setUnmanaged", "'RNDog' has no persisted property named 'colour'."),
            ("type", "Property 'RNDog.age' expects a value of type Int, not String."),
            ("outside", "setValue(_:forKey:) of 'RNDog.name' must be called inside a write transaction."),
        ]
        for (scenario, expected) in scenarios {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
            process.arguments = ["LatticeTests.RealmNamesTests/testSubscriptMisuseStopsWithAClearMessage"]
            var childEnvironment = environment
            childEnvironment["LATTICE_NAMES_MISUSE"] = scenario
            childEnvironment["LATTICE_NAMES_MISUSE_FILE"] = db.path
            process.environment = childEnvironment
            let output = Pipe()
            process.standardOutput = output
            process.standardError = output
            try process.run()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            XCTAssertEqual(process.terminationReason, .uncaughtSignal, "\(scenario): the child must stop\n\(text)")
            XCTAssertTrue(text.contains(expected), "\(scenario): expected '\(expected)' in:\n\(text)")
        }
        let dog = try db.open(types).object(ofType: RNDog.self, forPrimaryKey: 1)
        XCTAssertEqual(dog?.name, "a", "nothing the children did reached the file")
        XCTAssertEqual(dog?.age, 1)
    }

    /// Runs in the child process; every scenario is expected to stop the process.
    private func runMisuse(_ scenario: String, path: String) throws {
        let lattice = try Lattice(configuration: .init(fileURL: URL(fileURLWithPath: path), objectTypes: types))
        let dog = try XCTUnwrap(lattice.object(ofType: RNDog.self, forPrimaryKey: 1))
        switch scenario {
        case "get":
            print(dog["colour"] ?? "nil")
        case "setUnmanaged":
            RNDog()["colour"] = "brown"
        case "type":
            try lattice.write { dog["age"] = "old" }
        default:
            dog["name"] = "outside"
        }
        XCTFail("scenario \(scenario) should have stopped the process")
    }

    func testSortDescriptorsAndSchemaUnderRealmsNames() throws {
        let lattice = try seeded().open(types)
        let byName: [Lattice.SortDescriptor] = ["name"]
        XCTAssertEqual(try lattice.objects(RNDog.self).sorted(by: byName.map { $0.reversed() }).map(\.name), ["c", "b", "a"])
        XCTAssertEqual(try lattice.objects(RNDog.self).sorted(by: ["age", "name"]).map(\.name), ["a", "b", "c"])
        let person = try XCTUnwrap(lattice.schema.objectSchema.first { $0.className == "RNPerson" })
        XCTAssertEqual(person.properties.filter(\.isArray).map(\.name), ["dogs", "numbers"])
        XCTAssertEqual(person.properties.filter(\.isSet).map(\.name), ["tags"])
        XCTAssertEqual(person.properties.filter(\.isMap).map(\.name), ["scores"])
        // Linking objects are computed, kept apart from the stored properties as Realm keeps them.
        XCTAssertEqual(person.properties.map(\.name), ["id", "name", "dogs", "numbers", "tags", "scores"])
        XCTAssertEqual(person.computedProperties.map(\.name), ["pets"])
        XCTAssertEqual(person["pets"]?.originProperty, "owner")
        XCTAssertEqual(RNPerson().objectSchema.properties.count, 6)
    }

    /// The key-path aggregates read an unmanaged collection's objects, and a map of objects has them
    /// (and `sorted(by:)`), as Realm's do.
    func testKeyPathAggregatesOfUnmanagedCollectionsAndMaps() throws {
        let dogs = List<RNDog>()
        for (id, age) in [(1, 4), (2, 9), (3, 2)] { dogs.append(try RNDog(value: ["id": id, "age": age])) }
        XCTAssertEqual(try dogs.min(of: \.age), 2)
        XCTAssertEqual(try dogs.max(of: \.age), 9)
        XCTAssertEqual(try dogs.sum(of: \.age), 15)
        XCTAssertEqual(try dogs.average(of: \.age), 5)
        XCTAssertNil(try List<RNDog>().max(of: \.age))
        XCTAssertThrowsError(try dogs.sorted(by: \.age), "sorting needs a managed collection")
        let set = MutableSet<RNDog>()
        set.insert(objectsIn: Array(dogs))
        XCTAssertEqual(try set.sum(of: \.id), 6)

        let db = makeTempDatabase("map-keypaths")
        let lattice = try db.open([RNMapOwner.self, RNDog.self, RNPerson.self])
        let owner = try lattice.write { () -> RNMapOwner in
            let owner = try lattice.create(RNMapOwner.self, value: [:])
            for dog in dogs { owner.dogs["d\(dog.id)"] = try lattice.create(RNDog.self, value: ["id": dog.id, "age": dog.age]) }
            owner.dogs["none"] = RNDog?.none
            return owner
        }
        XCTAssertEqual(try owner.dogs.min(of: \.age), 2)
        XCTAssertEqual(try owner.dogs.max(of: \.age), 9)
        XCTAssertEqual(try owner.dogs.sum(of: \.age), 15)
        XCTAssertEqual(try owner.dogs.average(of: \.age), 5)
        XCTAssertEqual(try owner.dogs.sorted(by: \.age, ascending: false).map(\.id), [2, 1, 3])
    }

    func testMoreOfRealmsNames() throws {
        XCTAssertNotEqual(ObjectId.generate(), ObjectId.generate())
        XCTAssertEqual(ObjectId("6058f12682b2fbb1f334ef1d"), ObjectId(string: "6058f12682b2fbb1f334ef1d"))
        XCTAssertEqual(PropertyType.UUID, .uuid)
        XCTAssertEqual(PropertyType.decimal128, .decimal)
        let db = makeTempDatabase("realm-names-file")
        let configuration = db.configuration(types)
        XCTAssertFalse(Lattice.fileExists(for: configuration))
        XCTAssertFalse(Lattice.fileExists(for: Lattice.Configuration(inMemoryIdentifier: "x")))
        let lattice = try Lattice(configuration: configuration)
        XCTAssertTrue(Lattice.fileExists(for: configuration))
        XCTAssertEqual(lattice.schema["RNDog"]?.properties.filter(\.isPrimary).map(\.name), ["id"])
        let previous = Lattice.Configuration.defaultConfiguration
        defer { Lattice.Configuration.defaultConfiguration = previous }
        Lattice.Configuration.defaultConfiguration = configuration
        let byURL = try Lattice(fileURL: db.url)
        XCTAssertEqual(byURL.configuration.fileURL?.path, db.url.path)
        XCTAssertTrue(byURL.objects(RNDog.self).isEmpty)
    }
}

extension RealmNamesTests {
    /// As Realm's: unmanaged collections are equal by their elements, managed ones when they are the
    /// same stored collection (through any handle), and never one of each.
    func testCollectionsAreEqualAsRealmsAre() throws {
        let a = try RNDog(value: ["id": 1]), b = try RNDog(value: ["id": 2])
        let list1 = List<RNDog>(), list2 = List<RNDog>()
        XCTAssertEqual(list1, list2, "empty")
        list1.append(objectsIn: [a, b])
        list2.append(objectsIn: [a, b])
        XCTAssertEqual(list1, list2)
        list2.swapAt(0, 1)
        XCTAssertNotEqual(list1, list2, "order counts")
        let set1 = MutableSet<String>(), set2 = MutableSet<String>()
        set1.insert(objectsIn: ["x", "y"])
        set2.insert(objectsIn: ["y", "x"])
        XCTAssertEqual(set1, set2)
        set2.insert("z")
        XCTAssertNotEqual(set1, set2)
        let map1 = Map<String, Int>(), map2 = Map<String, Int>()
        map1["k"] = 1
        map2["k"] = 1
        XCTAssertEqual(map1, map2)
        map2["k"] = 2
        XCTAssertNotEqual(map1, map2)

        let db = try seeded()
        let lattice = try db.open(types), other = try db.open(types)
        let ann = try self.ann(lattice)
        XCTAssertEqual(ann.dogs, try self.ann(other).dogs, "the same stored list through another handle")
        XCTAssertEqual(ann.tags, ann.tags)
        let copy = List<RNDog>()
        copy.append(objectsIn: Array(ann.dogs))
        XCTAssertNotEqual(ann.dogs, copy, "managed and unmanaged")
        let frozen = ann.dogs.freeze()
        XCTAssertNotEqual(ann.dogs, frozen, "a snapshot is not the live list")
        XCTAssertEqual(frozen, ann.dogs.freeze(), "one version, one snapshot")
    }
}

extension RealmNamesTests {
    /// As Realm's `testIntSizes`: by name, an integer of any width reads as an `Int` (typed access keeps
    /// the declared width), managed or not, and in observed changes; any integer type that fits sets it.
    func testIntegersOfEveryWidthReadByNameAsInt() throws {
        let db = makeTempDatabase("int-sizes")
        let lattice = try db.open([CodecAllTypes.self])
        let values: [String: Int] = ["int8": 1 << 6, "int16": 1 << 12, "int32": 1 << 30, "int64": 1 << 40]
        let unmanaged = CodecAllTypes()
        for (name, value) in values { unmanaged[name] = NSNumber(value: value) }
        for (name, value) in values { XCTAssertEqual(unmanaged[name] as? Int, value, name) }
        XCTAssertEqual(unmanaged.int8, 1 << 6)
        let object = try lattice.write { try lattice.create(CodecAllTypes.self, value: ["id": 1]) }
        var changes: [[String: Int]] = []
        let token = object.observe { change in
            guard case let .change(_, properties) = change else { return }
            changes.append(Dictionary(uniqueKeysWithValues: properties.compactMap { p in (p.newValue as? Int).map { (p.name, $0) } }))
        }
        try lattice.write { for (name, value) in values { object[name] = value } }
        lattice.refresh()
        for (name, value) in values {
            XCTAssertEqual(object[name] as? Int, value, name)
            XCTAssertEqual(object.value(forKey: name) as? Int, value, name)
        }
        XCTAssertEqual(object.int64, 1 << 40)
        XCTAssertNil(object["optInt8"])
        XCTAssertEqual(changes, [values])
        // Enums read by name as their raw values, optional or not (as Realm stores them).
        try lattice.write {
            object.level = .high
            object.optLevel = .low
            object.optColor = .blue
        }
        XCTAssertEqual(object["level"] as? Int, 1000)
        XCTAssertEqual(object["optLevel"] as? Int, -1)
        XCTAssertEqual(object["optColor"] as? String, "blue")
        XCTAssertEqual(object["color"] as? String, "red")
        XCTAssertEqual(CodecAllTypes()["optLevel"] as? Int, nil)
        assertLatticeError(try lattice.write { try object.setValue(300, forProperty: "int8") },
                           .wrongType(className: "CodecAllTypes", property: "int8", expected: "Int8", found: "Int"))
        token.invalidate()
    }
}

extension RealmNamesTests {
    /// Realm's `AnyRealmCollection`: results, a List, a MutableSet or LinkingObjects behind one type,
    /// read, queried, observed and frozen as the collection it wraps.
    func testAnyLatticeCollectionWrapsEveryCollectionOfObjects() throws {
        let db = try seeded()
        try db.open(types).write {}  // the seeded file, then one with a set of dogs too
        let lattice = try Lattice(configuration: db.configuration(types + [RNKennel.self], schemaVersion: 1))
        let ann = try ann(lattice)
        let kennel = try lattice.write { try lattice.create(RNKennel.self, value: ["dogs": Array(ann.dogs)]) }
        func names(_ c: AnyLatticeCollection<RNDog>) -> [String] { c.map(\.name).sorted() }
        let all = [AnyLatticeCollection(lattice.objects(RNDog.self)), AnyLatticeCollection(ann.dogs),
                   AnyLatticeCollection(kennel.dogs), AnyLatticeCollection(ann.pets)]
        for c in all {
            XCTAssertEqual(names(c), ["a", "b", "c"], c.description)
            XCTAssertEqual(c.count, 3)
            XCTAssertTrue(c.lattice === lattice)
            XCTAssertEqual(try c.filter("age > 1").count, 2)
            XCTAssertEqual(try c.sorted(byKeyPath: "age", ascending: false).first?.name, "c")
            XCTAssertEqual(try c.sum(ofProperty: "age") as Int, 6)
            XCTAssertEqual(c.value(forKeyPath: "@max.age") as? Int, 3)
            XCTAssertEqual(c.index(of: c[1]), 1)
            XCTAssertEqual(names(c.freeze()), ["a", "b", "c"])
            XCTAssertTrue(c.freeze().isFrozen)
        }
        var changes: [String] = []
        let token = AnyLatticeCollection(ann.dogs).observe { change in
            switch change {
            case .initial(let c): changes.append("initial \(c.count)")
            case let .update(c, _, insertions, _): changes.append("update \(c.count) +\(insertions)")
            case .error(let error): changes.append("\(error)")
            }
        }
        lattice.refresh()
        try lattice.write { ann.dogs.append(try lattice.create(RNDog.self, value: ["id": 4, "name": "d"])) }
        lattice.refresh()
        XCTAssertEqual(changes, ["initial 3", "update 4 +[3]"])
        token.invalidate()
        let unmanaged = AnyLatticeCollection(List<RNDog>())
        XCTAssertNil(unmanaged.lattice)
        XCTAssertThrowsError(try unmanaged.filter("age > 1"), "a query needs a managed collection")
    }
}

final class RNKennel: Object {
    @Persisted var dogs: MutableSet<RNDog>
}

final class RNMapOwner: Object {
    @Persisted var dogs: Map<String, RNDog?>
}

