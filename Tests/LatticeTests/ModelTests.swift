import Foundation
import XCTest
@testable import Lattice

final class ModelDog: Object {
    @Persisted(primaryKey: true) var id = UUID()
    @Persisted var name = ""
    @Persisted(indexed: true) var age = 0
    @Persisted var nickname: String?
    @Persisted var born = Date(timeIntervalSince1970: 0)
    var scratch = 0                       // not @Persisted: ignored
    var computed: String { name + "!" }   // computed: ignored
    let constant = "c"                    // plain stored constant: ignored
}

final class ModelNoKey: Object {
    @Persisted var title = ""
    @Persisted var score: Double = 0
    @Persisted var flag: Bool?
}

final class ModelTwoKeys: Object {
    @Persisted(primaryKey: true) var a = 0
    @Persisted(primaryKey: true) var b = ""
}

final class ModelDoubleKey: Object {
    @Persisted(primaryKey: true) var id: Double = 0
}

final class ModelDoubleIndexed: Object {
    @Persisted(indexed: true) var value: Double = 0
}

final class ModelDataKey: Object {
    @Persisted(primaryKey: true) var id = Data()
}

// 58 bytes: one over the limit.
final class ModelClassNameThatIsExactlyFiftyEightBytesLongForTheTest12: Object {
    @Persisted var x = 0
}

// 57 bytes: at the limit.
final class ModelClassNameThatIsExactlyFiftySevenBytesLongForTheTest1: Object {
    @Persisted var x = 0
}

final class ModelLongProperty: Object {
    // 64 bytes: one over the limit.
    @Persisted var propertyNameThatIsSixtyFourBytesLongWhichIsOneMoreThanAllowed064 = 0
}

final class ModelMaxProperty: Object {
    // 63 bytes: at the limit.
    @Persisted var propertyNameThatIsSixtyThreeBytesLongWhichIsExactlyAllowed63000 = 0
}

final class ModelOptionalKeys: Object {
    @Persisted(primaryKey: true) var id: Int?
    @Persisted(indexed: true) var when: Date?
    @Persisted(indexed: true) var tag: ObjectId?
    @Persisted(indexed: true) var on = false
}

final class ModelTests: XCTestCase {
    // MARK: Schema derivation

    func testSchemaIsDerivedFromPersistedPropertiesInDeclarationOrder() throws {
        let schema = try ModelMetadata.of(ModelDog.self).schema
        XCTAssertEqual(schema.className, "ModelDog")
        XCTAssertEqual(schema.properties, [
            Property(name: "id", type: .uuid, isIndexed: true, isPrimaryKey: true),
            Property(name: "name", type: .string),
            Property(name: "age", type: .int, isIndexed: true),
            Property(name: "nickname", type: .string, isOptional: true),
            Property(name: "born", type: .date),
        ])
        XCTAssertEqual(schema.primaryKeyProperty?.name, "id")
        XCTAssertNil(schema["scratch"])
        XCTAssertNil(schema["computed"])
        XCTAssertNil(schema["constant"])
        XCTAssertEqual(schema.description,
                       "ModelDog { id: UUID (primary key); name: String; age: Int (indexed); nickname: String?; born: Date }")
    }

    func testSchemaIsCachedAndStoredInTheFile() throws {
        let first = try ModelMetadata.of(ModelDog.self)
        let second = try ModelMetadata.of(ModelDog.self)
        XCTAssertEqual(first.schema, second.schema)
        XCTAssertEqual(first.fields.map(\.offset), second.fields.map(\.offset))

        let db = makeTempDatabase("model")
        do {
            let lattice = try db.open([ModelDog.self, ModelNoKey.self])
            XCTAssertEqual(lattice.schema.objectSchemas.map(\.className), ["ModelDog", "ModelNoKey"])
            XCTAssertEqual(lattice.schema["ModelDog"], first.schema)
        }
        let reopened = try db.open([ModelNoKey.self, ModelDog.self])
        XCTAssertEqual(reopened.schema["ModelDog"], first.schema)
        XCTAssertEqual(reopened.schema["ModelNoKey"]?.properties.map(\.name), ["title", "score", "flag"])
        XCTAssertNil(reopened.schema["ModelNoKey"]?.primaryKeyProperty)
        XCTAssertEqual(ModelDog().objectSchema, first.schema)
    }

    func testOptionalKeysAndIndexableTypesAreAllowed() throws {
        let schema = try ModelMetadata.of(ModelOptionalKeys.self).schema
        XCTAssertEqual(schema["id"], Property(name: "id", type: .int, isOptional: true, isIndexed: true, isPrimaryKey: true))
        XCTAssertEqual(schema["when"], Property(name: "when", type: .date, isOptional: true, isIndexed: true))
        XCTAssertEqual(schema["tag"], Property(name: "tag", type: .objectId, isOptional: true, isIndexed: true))
        XCTAssertEqual(schema["on"], Property(name: "on", type: .bool, isIndexed: true))
        XCTAssertNoThrow(try ModelMetadata.of(ModelClassNameThatIsExactlyFiftySevenBytesLongForTheTest1.self))
        XCTAssertNoThrow(try ModelMetadata.of(ModelMaxProperty.self))
    }

    // MARK: Validation

    func testTwoPrimaryKeysAreRejected() {
        let expected = LatticeError.invalidSchema(className: "ModelTwoKeys",
                                                  reason: "only one property can be the primary key; found 'a', 'b'.")
        assertLatticeError(try ModelMetadata.of(ModelTwoKeys.self), expected)
        assertLatticeError(try Lattice.register(ModelTwoKeys.self), expected)
        let db = makeTempDatabase("model")
        assertLatticeError(try db.open([ModelTwoKeys.self]), expected)
        XCTAssertFalse(FileManager.default.fileExists(atPath: db.path), "a rejected schema creates no file")
        assertLatticeError(try ModelTwoKeys(value: ["a": 1]), expected)
    }

    func testPrimaryKeyTypesAreChecked() {
        let allowed = "(allowed: Int types, String, UUID, ObjectId and their optionals)."
        assertLatticeError(try ModelMetadata.of(ModelDoubleKey.self),
                           .invalidSchema(className: "ModelDoubleKey",
                                          reason: "property 'id' of type Double cannot be a primary key \(allowed)"))
        assertLatticeError(try ModelMetadata.of(ModelDataKey.self),
                           .invalidSchema(className: "ModelDataKey",
                                          reason: "property 'id' of type Data cannot be a primary key \(allowed)"))
    }

    func testIndexTypesAreChecked() {
        assertLatticeError(try ModelMetadata.of(ModelDoubleIndexed.self),
                           .invalidSchema(className: "ModelDoubleIndexed",
                                          reason: "property 'value' of type Double cannot be indexed "
                                              + "(allowed: Bool, Int types, String, Date, UUID, ObjectId and their optionals)."))
    }

    func testNameLengthLimits() {
        let longClass = "ModelClassNameThatIsExactlyFiftyEightBytesLongForTheTest12"
        XCTAssertEqual(longClass.utf8.count, 58)
        assertLatticeError(try ModelMetadata.of(ModelClassNameThatIsExactlyFiftyEightBytesLongForTheTest12.self),
                           .invalidSchema(className: longClass, reason: "class names must be 1 to 57 bytes long."))
        let longProperty = "propertyNameThatIsSixtyFourBytesLongWhichIsOneMoreThanAllowed064"
        XCTAssertEqual(longProperty.utf8.count, 64)
        assertLatticeError(try ModelMetadata.of(ModelLongProperty.self),
                           .invalidSchema(className: "ModelLongProperty",
                                          reason: "property name '\(longProperty)' must be 1 to 63 bytes long."))
        XCTAssertEqual("propertyNameThatIsSixtyThreeBytesLongWhichIsExactlyAllowed63000".utf8.count, 63)
        XCTAssertEqual("ModelClassNameThatIsExactlyFiftySevenBytesLongForTheTest1".utf8.count, 57)
    }

    func testErrorMessagesNameTheClass() {
        let error = latticeError(try ModelMetadata.of(ModelDoubleKey.self))
        XCTAssertEqual(error.map { "\($0)" },
                       "Invalid model class 'ModelDoubleKey': property 'id' of type Double cannot be a primary key "
                           + "(allowed: Int types, String, UUID, ObjectId and their optionals).")
    }

    // MARK: Unmanaged and managed objects

    func testUnmanagedObjectsArePlainObjects() {
        let dog = ModelDog()
        XCTAssertNil(dog.lattice)
        XCTAssertFalse(dog.isInvalidated)
        dog.name = "Rex"
        dog.age = 3
        dog.nickname = "R"
        dog.scratch = 9
        XCTAssertEqual(dog.name, "Rex")
        XCTAssertEqual(dog.age, 3)
        XCTAssertEqual(dog.nickname, "R")
        XCTAssertEqual(dog.computed, "Rex!")
        let other = ModelDog()
        XCTAssertNotEqual(dog.id, other.id, "each instance gets its own initial UUID")
    }

    func testDescriptionFormat() throws {
        let dog = ModelDog()
        dog.id = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        dog.name = "Rex"
        dog.age = 1
        let expected = "ModelDog { id = E621E1F8-C36C-495A-93FC-0C247A3E6E5F; name = Rex; age = 1; nickname = nil; "
            + "born = \(Date(timeIntervalSince1970: 0)) }"
        XCTAssertEqual(dog.description, expected)

        let db = makeTempDatabase("model")
        let lattice = try db.open([ModelDog.self])
        try lattice.write { try lattice.add(dog) }
        XCTAssertEqual(dog.description, expected, "managed objects describe their stored values")
        try lattice.write { dog.nickname = "R" }
        XCTAssertEqual(dog.description, expected.replacingOccurrences(of: "nickname = nil", with: "nickname = R"))
        try lattice.write { try lattice.delete(dog) }
        XCTAssertEqual(dog.description, "ModelDog { invalidated }")
    }

    func testEqualityAndHashOfUnmanagedObjectsIsIdentity() throws {
        let a = ModelNoKey()
        let b = ModelNoKey()
        XCTAssertNotEqual(a, b, "unmanaged objects with equal values are different objects")
        XCTAssertNotEqual(a, try ModelNoKey(value: a), "a copy is another object")
        XCTAssertEqual(Set([a, b, a]).count, 2)
    }

    func testEqualityAndHashOfManagedObjectsIsStoredIdentity() throws {
        let db = makeTempDatabase("model")
        let lattice = try db.open([ModelDog.self, ModelNoKey.self])
        let rex = ModelDog()
        rex.name = "Rex"
        let fido = ModelDog()
        fido.name = "Rex"
        try lattice.write { try lattice.add(contentsOf: [rex, fido]) }
        let rexAgain = try XCTUnwrap(lattice.object(ofType: ModelDog.self, forPrimaryKey: rex.id))
        XCTAssertFalse(rexAgain === rex)
        XCTAssertEqual(rexAgain, rex)
        XCTAssertEqual(rexAgain.hashValue, rex.hashValue)
        XCTAssertNotEqual(rex, fido, "equal values, different stored objects")
        XCTAssertEqual(Set([rex, rexAgain, fido]).count, 2)
        XCTAssertEqual(Set(lattice.objects(ModelDog.self)).count, 2)

        // The same stored object seen through a second handle on the file.
        let second = try db.open([ModelDog.self, ModelNoKey.self])
        let viaSecond = try XCTUnwrap(second.object(ofType: ModelDog.self, forPrimaryKey: rex.id))
        XCTAssertEqual(viaSecond, rex)
        XCTAssertEqual(viaSecond.hashValue, rex.hashValue)

        // The same key in another file is another object.
        let otherDB = makeTempDatabase("model")
        let other = try otherDB.open([ModelDog.self, ModelNoKey.self])
        try other.write { try other.create(ModelDog.self, value: ["id": rex.id, "name": "Rex"]) }
        let inOther = try XCTUnwrap(other.object(ofType: ModelDog.self, forPrimaryKey: rex.id))
        XCTAssertNotEqual(inOther, rex)

        // Objects of different classes never compare equal, even with the same object key.
        try lattice.write { try lattice.add(ModelNoKey()) }
        let noKey = try XCTUnwrap(lattice.objects(ModelNoKey.self).first)
        let firstDog = try XCTUnwrap(lattice.objects(ModelDog.self).first)
        XCTAssertNotEqual(noKey as Object, firstDog as Object)
    }

    func testLatticePropertyAndIsInvalidated() throws {
        let db = makeTempDatabase("model")
        let lattice = try db.open([ModelDog.self])
        let dog = ModelDog()
        XCTAssertNil(dog.lattice)
        try lattice.write { try lattice.add(dog) }
        XCTAssertTrue(dog.lattice === lattice)
        XCTAssertFalse(dog.isInvalidated)
        let fetched = try XCTUnwrap(lattice.objects(ModelDog.self).first)
        XCTAssertTrue(fetched.lattice === lattice)
        try lattice.write { try lattice.delete(dog) }
        XCTAssertTrue(dog.isInvalidated)
        XCTAssertTrue(fetched.isInvalidated, "every instance of a deleted object is invalidated")
        XCTAssertTrue(dog.lattice === lattice)
    }

    func testManagedObjectsReadThroughToStorage() throws {
        let db = makeTempDatabase("model")
        let lattice = try db.open([ModelDog.self])
        let dog = ModelDog()
        try lattice.write { try lattice.add(dog) }
        let other = try XCTUnwrap(lattice.object(ofType: ModelDog.self, forPrimaryKey: dog.id))
        try lattice.write { dog.name = "Changed" }
        XCTAssertEqual(other.name, "Changed", "another instance of the same object sees the write")
        dog.scratch = 5  // plain properties stay plain
        XCTAssertEqual(dog.scratch, 5)
        XCTAssertEqual(other.scratch, 0)
    }

    // MARK: Misuse that cannot throw stops with a message

    /// A property setter or getter cannot throw, so misuse stops the process: checked in a child process
    /// (this test binary re-run on this one test) whose output must name the class and property.
    func testMisuseInsidePropertyAccessorsStopsWithAClearMessage() throws {
        let environment = ProcessInfo.processInfo.environment
        if let scenario = environment["LATTICE_MODEL_MISUSE"], let path = environment["LATTICE_MODEL_MISUSE_FILE"] {
            try runMisuse(scenario, path: path)
            return
        }
        let db = makeTempDatabase("model")
        let id = UUID()
        do {
            let lattice = try db.open([ModelDog.self])
            try lattice.write { try lattice.create(ModelDog.self, value: ["id": id, "name": "Rex"]) }
        }
        let scenarios = [
            ("setter", "Cannot set 'ModelDog.name' outside a write transaction"),
            ("deleted", "The 'ModelDog' object has been deleted or invalidated."),
            ("readOnly", "was opened read-only; setting 'ModelDog.age' is not allowed"),
        ]
        for (scenario, expected) in scenarios {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
            process.arguments = ["LatticeTests.ModelTests/testMisuseInsidePropertyAccessorsStopsWithAClearMessage"]
            var childEnvironment = environment
            childEnvironment["LATTICE_MODEL_MISUSE"] = scenario
            childEnvironment["LATTICE_MODEL_MISUSE_FILE"] = db.path
            childEnvironment["LATTICE_MODEL_MISUSE_ID"] = id.uuidString
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
        // Nothing the children did reached the file.
        let lattice = try db.open([ModelDog.self])
        XCTAssertEqual(lattice.objects(ModelDog.self).count, 1)
        XCTAssertEqual(lattice.object(ofType: ModelDog.self, forPrimaryKey: id)?.name, "Rex")
    }

    /// Runs in the child process; every scenario is expected to stop the process.
    private func runMisuse(_ scenario: String, path: String) throws {
        let id = UUID(uuidString: ProcessInfo.processInfo.environment["LATTICE_MODEL_MISUSE_ID"] ?? "") ?? UUID()
        let url = URL(fileURLWithPath: path)
        switch scenario {
        case "setter":
            let lattice = try Lattice(configuration: .init(fileURL: url, objectTypes: [ModelDog.self]))
            let dog = lattice.object(ofType: ModelDog.self, forPrimaryKey: id)!
            dog.name = "outside"
        case "deleted":
            let lattice = try Lattice(configuration: .init(fileURL: url, objectTypes: [ModelDog.self]))
            let dog = lattice.object(ofType: ModelDog.self, forPrimaryKey: id)!
            lattice.beginWriteIgnoringErrors()
            try lattice.delete(dog)
            print(dog.name)
        default:
            let lattice = try Lattice(configuration: .init(fileURL: url, readOnly: true, objectTypes: [ModelDog.self]))
            let dog = lattice.object(ofType: ModelDog.self, forPrimaryKey: id)!
            dog.age = 5
        }
        XCTFail("scenario \(scenario) should have stopped the process")
    }

    // MARK: Object(value:)

    func testObjectFromDictionaryAndArray() throws {
        let id = UUID()
        let born = Date(timeIntervalSince1970: 99)
        let fromDictionary = try ModelDog(value: ["id": id, "name": "Rex", "age": 4, "nickname": "R", "born": born])
        XCTAssertNil(fromDictionary.lattice)
        XCTAssertEqual(fromDictionary.id, id)
        XCTAssertEqual(fromDictionary.name, "Rex")
        XCTAssertEqual(fromDictionary.age, 4)
        XCTAssertEqual(fromDictionary.nickname, "R")
        XCTAssertEqual(fromDictionary.born, born)

        let partial = try ModelDog(value: ["name": "Only"])
        XCTAssertEqual(partial.name, "Only")
        XCTAssertEqual(partial.age, 0, "missing keys keep the initial value")
        XCTAssertNil(partial.nickname)

        let fromArray = try ModelDog(value: [id.uuidString, "Arr", 2, NSNull(), born] as [Any])
        XCTAssertEqual(fromArray.id, id, "a UUID may be given as its string")
        XCTAssertEqual(fromArray.name, "Arr")
        XCTAssertEqual(fromArray.age, 2)
        XCTAssertNil(fromArray.nickname)

        let numbers = try ModelNoKey(value: ["title": "t", "score": 3, "flag": true])
        XCTAssertEqual(numbers.score, 3.0, "an integer converts to Double")
        XCTAssertEqual(numbers.flag, true)
    }

    func testObjectFromValueErrors() {
        assertLatticeError(try ModelDog(value: ["name": "Rex", "color": "brown"]),
                           .unknownProperty(className: "ModelDog", property: "color"))
        assertLatticeError(try ModelDog(value: ["scratch": 1]),
                           .unknownProperty(className: "ModelDog", property: "scratch"))
        assertLatticeError(try ModelDog(value: ["age": "four"]),
                           .wrongType(className: "ModelDog", property: "age", expected: "Int", found: "String"))
        assertLatticeError(try ModelDog(value: ["age": 1.5]),
                           .wrongType(className: "ModelDog", property: "age", expected: "Int", found: "Double"))
        assertLatticeError(try ModelDog(value: ["nickname": 7]),
                           .wrongType(className: "ModelDog", property: "nickname", expected: "String?", found: "Int"))
        assertLatticeError(try ModelDog(value: ["name": NSNull()]),
                           .missingValue(className: "ModelDog", property: "name"))
        assertLatticeError(try ModelDog(value: ["name": String?.none as Any]),
                           .missingValue(className: "ModelDog", property: "name"))
        assertLatticeError(try ModelDog(value: ["id": "not-a-uuid"]),
                           .wrongType(className: "ModelDog", property: "id", expected: "UUID", found: "String"))
        let arrayOfFive = "an array of at most 5 values, in declaration order (id, name, age, nickname, born)"
        XCTAssertEqual(try ModelDog(value: [UUID(), "Rex"] as [Any]).age, 0, "the properties not given keep their defaults")
        assertLatticeError(try ModelDog(value: [UUID(), "Rex", 1, "R", Date(), "extra"] as [Any]),
                           .wrongType(className: "ModelDog", property: "(value)", expected: arrayOfFive, found: "an array of 6"))
        assertLatticeError(try ModelDog(value: 42),
                           .wrongType(className: "ModelDog", property: "(value)", expected: "[String: Any], [Any] or an object", found: "Int"))
    }
}

extension Lattice {
    /// `beginWrite()` for the child-process scenarios (which stop the process before committing).
    fileprivate func beginWriteIgnoringErrors() {
        do { try beginWrite() } catch { XCTFail("beginWrite failed: \(error)") }
    }
}

/// Describing an object never traps, whatever its values (Foundation's `Date.description` traps on NaN).
final class DescriptionSafetyTests: XCTestCase {
    func testNonFiniteDatesAreDescribed() throws {
        let db = makeTempDatabase("model")
        let lattice = try db.open([ModelDog.self])
        let dog = ModelDog()
        dog.born = Date(timeIntervalSinceReferenceDate: .nan)
        XCTAssertTrue(dog.description.contains("born = Date(timeIntervalSinceReferenceDate: nan)"), dog.description)
        dog.born = Date(timeIntervalSinceReferenceDate: -.infinity)
        try lattice.write { try lattice.add(dog) }
        XCTAssertTrue(dog.description.contains("born = Date(timeIntervalSinceReferenceDate: -inf)"), dog.description)
    }
}
