import CLatticeSupport
import Foundation
import XCTest
@testable import Lattice

// Models declared `Codable`: JSON from a web API decoded straight into objects, and unmanaged objects
// encoded back.

enum CodMood: String, PersistableEnum, Codable {
    case calm, playful, grumpy
}

final class CodEverything: Object, Codable {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var bool = false
    @Persisted var int8: Int8 = 0
    @Persisted var int16: Int16 = 0
    @Persisted var int32: Int32 = 0
    @Persisted var int64: Int64 = 0
    @Persisted var float: Float = 0
    @Persisted var double = 0.0
    @Persisted var string = ""
    @Persisted var data = Data()
    @Persisted var date = Date(timeIntervalSinceReferenceDate: 0)
    @Persisted var decimal = Decimal(0)
    @Persisted var uuid = UUID()
    @Persisted var objectId = ObjectId()
    @Persisted var mood = CodMood.calm

    @Persisted var boolOpt: Bool?
    @Persisted var intOpt: Int?
    @Persisted var int8Opt: Int8?
    @Persisted var int16Opt: Int16?
    @Persisted var int32Opt: Int32?
    @Persisted var int64Opt: Int64?
    @Persisted var floatOpt: Float?
    @Persisted var doubleOpt: Double?
    @Persisted var stringOpt: String?
    @Persisted var dataOpt: Data?
    @Persisted var dateOpt: Date?
    @Persisted var decimalOpt: Decimal?
    @Persisted var uuidOpt: UUID?
    @Persisted var objectIdOpt: ObjectId?
    @Persisted var moodOpt: CodMood?

    @Persisted var ints: List<Int>
    @Persisted var optionalDoubles: List<Double?>
    @Persisted var dates: List<Date>
    @Persisted var ids: List<ObjectId>
    @Persisted var moods: List<CodMood>
    @Persisted var tags: MutableSet<String>
    @Persisted var scores: Map<String, Int>
    @Persisted var notes: Map<String, String?>
}

final class CodToy: Object, Codable {
    @Persisted var name = ""
}

final class CodCollar: EmbeddedObject, Codable {
    @Persisted var color = ""
    @Persisted var size = 0
}

final class CodDog: Object, Codable {
    @Persisted(primaryKey: true) var id = UUID()
    @Persisted(indexed: true) var name = "unnamed"
    @Persisted var age = 1
    @Persisted var nickname: String? = "buddy"
    @Persisted(originalName: "formerColor") var color = "brown"
    @Persisted var favoriteToy: CodToy?
    @Persisted var collar: CodCollar?
    @Persisted(originProperty: "dogs") var walkers: LinkingObjects<CodWalker>
}

final class CodWalker: Object, Codable {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var dogs: List<CodDog>
    @Persisted var friends: MutableSet<CodToy>
    @Persisted var dogsByRoute: Map<String, CodDog?>
}

/// The declaration fields (`column` before an object is managed) of `object`'s properties.
private func codableDeclaredColumns(_ object: Object) throws -> [Int32] {
    let metadata = try ModelMetadata.of(type(of: object))
    let base = UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque())
    return withExtendedLifetime(object) {
        metadata.fields.map { (base + $0.offset + $0.accessor.columnOffset).load(as: Int32.self) }
    }
}

/// A model without properties, decoded inside another.
final class CodMarker: Object, Codable {}

final class CodLabelled: Object, Codable {
    @Persisted var label = "untitled"
    @Persisted var marker: CodMarker?
    @Persisted var count = 5
}

final class CodableTests: XCTestCase {
    private let types: [Object.Type] = [CodEverything.self, CodToy.self, CodCollar.self, CodDog.self, CodWalker.self]

    private func decode<T: Decodable>(_ type: T.Type, _ json: String, _ decoder: JSONDecoder = JSONDecoder()) throws -> T {
        try decoder.decode(type, from: Data(json.utf8))
    }

    private func jsonObject(_ data: Data) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    private let everythingJSON = """
    {
        "id": 7, "bool": true, "int8": -8, "int16": 1600, "int32": -320000, "int64": 6400000000,
        "float": 2.5, "double": -0.125, "string": "héllo", "data": "\(Data("bytes".utf8).base64EncodedString())",
        "date": 1000.5, "decimal": 12.75, "uuid": "6F9619FF-8B86-D011-B42D-00C04FC964FF",
        "objectId": "1234567890abcdef12345678", "mood": "grumpy",
        "boolOpt": false, "intOpt": 42, "int8Opt": 8, "int16Opt": 16, "int32Opt": 32, "int64Opt": 64,
        "floatOpt": 0.5, "doubleOpt": 1.5, "stringOpt": "opt", "dataOpt": "AAE=", "dateOpt": 0,
        "decimalOpt": 0.25, "uuidOpt": "00000000-0000-0000-0000-000000000001",
        "objectIdOpt": "aaaaaaaaaaaaaaaaaaaaaaaa", "moodOpt": "playful",
        "ints": [3, 1, 2], "optionalDoubles": [1.5, null], "dates": [0, 60],
        "ids": ["000000000000000000000001"], "moods": ["calm", "grumpy"],
        "tags": ["a", "b", "a"], "scores": {"x": 1, "y": 2}, "notes": {"k": "v", "empty": null}
    }
    """

    private func assertEverything(_ o: CodEverything, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(o.id, 7, file: file, line: line)
        XCTAssertEqual(o.bool, true, file: file, line: line)
        XCTAssertEqual(o.int8, -8, file: file, line: line)
        XCTAssertEqual(o.int16, 1600, file: file, line: line)
        XCTAssertEqual(o.int32, -320_000, file: file, line: line)
        XCTAssertEqual(o.int64, 6_400_000_000, file: file, line: line)
        XCTAssertEqual(o.float, 2.5, file: file, line: line)
        XCTAssertEqual(o.double, -0.125, file: file, line: line)
        XCTAssertEqual(o.string, "héllo", file: file, line: line)
        XCTAssertEqual(o.data, Data("bytes".utf8), file: file, line: line)
        XCTAssertEqual(o.date, Date(timeIntervalSinceReferenceDate: 1000.5), file: file, line: line)
        XCTAssertEqual(o.decimal, Decimal(string: "12.75"), file: file, line: line)
        XCTAssertEqual(o.uuid, UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF"), file: file, line: line)
        XCTAssertEqual(o.objectId, ObjectId(string: "1234567890abcdef12345678"), file: file, line: line)
        XCTAssertEqual(o.mood, .grumpy, file: file, line: line)
        XCTAssertEqual(o.boolOpt, false, file: file, line: line)
        XCTAssertEqual(o.intOpt, 42, file: file, line: line)
        XCTAssertEqual(o.int8Opt, 8, file: file, line: line)
        XCTAssertEqual(o.int16Opt, 16, file: file, line: line)
        XCTAssertEqual(o.int32Opt, 32, file: file, line: line)
        XCTAssertEqual(o.int64Opt, 64, file: file, line: line)
        XCTAssertEqual(o.floatOpt, 0.5, file: file, line: line)
        XCTAssertEqual(o.doubleOpt, 1.5, file: file, line: line)
        XCTAssertEqual(o.stringOpt, "opt", file: file, line: line)
        XCTAssertEqual(o.dataOpt, Data([0, 1]), file: file, line: line)
        XCTAssertEqual(o.dateOpt, Date(timeIntervalSinceReferenceDate: 0), file: file, line: line)
        XCTAssertEqual(o.decimalOpt, Decimal(string: "0.25"), file: file, line: line)
        XCTAssertEqual(o.uuidOpt, UUID(uuidString: "00000000-0000-0000-0000-000000000001"), file: file, line: line)
        XCTAssertEqual(o.objectIdOpt, ObjectId(string: "aaaaaaaaaaaaaaaaaaaaaaaa"), file: file, line: line)
        XCTAssertEqual(o.moodOpt, .playful, file: file, line: line)
        XCTAssertEqual(Array(o.ints), [3, 1, 2], file: file, line: line)
        XCTAssertEqual(Array(o.optionalDoubles), [1.5, nil], file: file, line: line)
        XCTAssertEqual(Array(o.dates), [Date(timeIntervalSinceReferenceDate: 0), Date(timeIntervalSinceReferenceDate: 60)],
                       file: file, line: line)
        XCTAssertEqual(Array(o.ids), [ObjectId(string: "000000000000000000000001")].compactMap { $0 }, file: file, line: line)
        XCTAssertEqual(Array(o.moods), [.calm, .grumpy], file: file, line: line)
        XCTAssertEqual(Set(o.tags), ["a", "b"], file: file, line: line)
        XCTAssertEqual(o.scores.count, 2, file: file, line: line)
        XCTAssertEqual(o.scores["x"], 1, file: file, line: line)
        XCTAssertEqual(o.scores["y"], 2, file: file, line: line)
        XCTAssertEqual(o.notes.count, 2, file: file, line: line)
        XCTAssertEqual(o.notes["k"], .some("v"), file: file, line: line)
        XCTAssertEqual(o.notes["empty"], .some(nil), file: file, line: line)
    }

    // MARK: Decoding and encoding values

    func testDecodesEveryPropertyTypeIntoAnUnmanagedObject() throws {
        let object = try decode(CodEverything.self, everythingJSON)
        XCTAssertNil(object.lattice)
        assertEverything(object)
    }

    func testEncodedObjectDecodesToTheSameValues() throws {
        let object = try decode(CodEverything.self, everythingJSON)
        let data = try JSONEncoder().encode(object)
        assertEverything(try JSONDecoder().decode(CodEverything.self, from: data))
    }

    func testValueTypesEncodeInTheirUsualJSONForms() throws {
        let object = try decode(CodEverything.self, everythingJSON)
        let json = try jsonObject(JSONEncoder().encode(object))
        XCTAssertEqual(json["objectId"] as? String, "1234567890abcdef12345678")
        XCTAssertEqual(json["uuid"] as? String, "6F9619FF-8B86-D011-B42D-00C04FC964FF")
        XCTAssertEqual(json["date"] as? Double, 1000.5)
        XCTAssertEqual(json["data"] as? String, Data("bytes".utf8).base64EncodedString())
        XCTAssertEqual(json["mood"] as? String, "grumpy")
        XCTAssertEqual(json["int64"] as? Int, 6_400_000_000)
        XCTAssertEqual(json["ints"] as? [Int], [3, 1, 2])
        XCTAssertEqual(json["ids"] as? [String], ["000000000000000000000001"])
        XCTAssertEqual((json["tags"] as? [String]).map(Set.init), ["a", "b"])
        XCTAssertEqual(json["scores"] as? [String: Int], ["x": 1, "y": 2])
        let notes = try XCTUnwrap(json["notes"] as? [String: Any])
        XCTAssertEqual(notes["k"] as? String, "v")
        XCTAssertTrue(notes["empty"] is NSNull)
        XCTAssertTrue(json["optionalDoubles"].map { ($0 as? [Any])?.last is NSNull } ?? false)
        // Nil optionals are encoded as null, as the synthesized encoding of the wrapper does.
        let empty = try jsonObject(JSONEncoder().encode(CodEverything()))
        XCTAssertTrue(empty["stringOpt"] is NSNull)
    }

    func testEncoderAndDecoderStrategiesApply() throws {
        let object = CodEverything()
        object.date = Date(timeIntervalSince1970: 86_400)
        object.dateOpt = Date(timeIntervalSince1970: 0)
        object.data = Data([0xFF, 0x00])
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.dataEncodingStrategy = .custom { data, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(data.map { String(format: "%02x", $0) }.joined())
        }
        let json = try jsonObject(encoder.encode(object))
        XCTAssertEqual(json["date"] as? String, "1970-01-02T00:00:00Z")
        XCTAssertEqual(json["dateOpt"] as? String, "1970-01-01T00:00:00Z")
        XCTAssertEqual(json["data"] as? String, "ff00")

        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        let decoded = try decode(CodEverything.self, #"{"date": 86400, "dateOpt": 60}"#, decoder)
        XCTAssertEqual(decoded.date, Date(timeIntervalSince1970: 86_400))
        XCTAssertEqual(decoded.dateOpt, Date(timeIntervalSince1970: 60))
    }

    // MARK: Missing keys, null and wrong types

    func testMissingKeysTakeTheDeclaredInitialValues() throws {
        let first = try decode(CodDog.self, "{}")
        let second = try decode(CodDog.self, #"{"age": 3}"#)
        XCTAssertEqual(first.name, "unnamed")
        XCTAssertEqual(first.age, 1)
        XCTAssertEqual(first.nickname, "buddy")
        XCTAssertEqual(first.color, "brown")
        XCTAssertNil(first.favoriteToy)
        XCTAssertEqual(second.age, 3)
        XCTAssertEqual(second.name, "unnamed")
        // `= UUID()` runs for each decoded object, as for each object made with `init()`.
        XCTAssertNotEqual(first.id, second.id)
        let everything = try decode(CodEverything.self, "{}")
        XCTAssertEqual(everything.id, 0)
        XCTAssertNil(everything.intOpt)
        XCTAssertTrue(everything.ints.isEmpty)
        XCTAssertTrue(everything.scores.isEmpty)
    }

    func testMissingKeysAroundANestedObjectWithoutPropertiesTakeTheirInitialValues() throws {
        let labelled = try decode(CodLabelled.self, #"{"marker": {}}"#)
        XCTAssertNotNil(labelled.marker)
        XCTAssertEqual(labelled.label, "untitled")
        XCTAssertEqual(labelled.count, 5)
        XCTAssertEqual(lattice_decoded_pending(), 0)
    }

    func testNullDecodesAsNilForOptionalsAndThrowsForRequiredValues() throws {
        let dog = try decode(CodDog.self, #"{"nickname": null, "favoriteToy": null}"#)
        XCTAssertNil(dog.nickname, "null is nil, not the declared initial value")
        XCTAssertNil(dog.favoriteToy)
        XCTAssertThrowsError(try decode(CodDog.self, #"{"age": null}"#)) { error in
            guard case DecodingError.valueNotFound? = error as? DecodingError else {
                return XCTFail("expected valueNotFound, got \(error)")
            }
        }
    }

    func testWrongTypesThrowTheDecoderErrors() throws {
        XCTAssertThrowsError(try decode(CodDog.self, #"{"age": "three"}"#)) { error in
            guard case let DecodingError.typeMismatch(_, context)? = error as? DecodingError else {
                return XCTFail("expected typeMismatch, got \(error)")
            }
            XCTAssertEqual(context.codingPath.map(\.stringValue), ["age"])
        }
        XCTAssertThrowsError(try decode(CodEverything.self, #"{"ints": [1, "two"]}"#)) { error in
            guard case DecodingError.typeMismatch? = error as? DecodingError else {
                return XCTFail("expected typeMismatch, got \(error)")
            }
        }
        XCTAssertThrowsError(try decode(CodEverything.self, #"{"objectId": "not-an-id"}"#)) { error in
            guard case DecodingError.dataCorrupted? = error as? DecodingError else {
                return XCTFail("expected dataCorrupted, got \(error)")
            }
        }
        XCTAssertThrowsError(try decode(CodEverything.self, #"{"mood": "sleepy"}"#)) { error in
            XCTAssertTrue(error is DecodingError, "\(error)")
        }
        // A failed decode leaves nothing behind: the next objects decode and initialize as usual.
        XCTAssertEqual(try decode(CodDog.self, #"{"name": "Rex"}"#).name, "Rex")
        XCTAssertEqual(CodDog().name, "unnamed")
    }

    // MARK: Declarations

    private func declaredColumns(_ object: Object) throws -> [Int32] { try codableDeclaredColumns(object) }

    func testDecodedPropertiesKeepTheirDeclaredFlags() throws {
        let declared = try declaredColumns(CodDog())
        let decoded = try decode(CodDog.self, #"{"id": "6F9619FF-8B86-D011-B42D-00C04FC964FF", "name": "Rex", "color": "black"}"#)
        XCTAssertEqual(try declaredColumns(decoded), declared)
        let sparse = try decode(CodDog.self, "{}")
        XCTAssertEqual(try declaredColumns(sparse), declared)
        let flags = declared.map(FormerNames.flags)
        XCTAssertEqual(flags.map(\.primaryKey), [true, false, false, false, false, false, false, false])
        XCTAssertEqual(flags.map(\.indexed), [true, true, false, false, false, false, false, false])
        XCTAssertEqual(flags[4].originalName, "formerColor")
        // Linking objects keep their origin property, whatever the JSON held for them.
        let metadata = try ModelMetadata.of(CodDog.self)
        for json in ["{}", #"{"walkers": [{"id": 3}]}"#] {
            let dog = try decode(CodDog.self, json)
            let field = try XCTUnwrap(metadata.fields.last)
            let base = UnsafeRawPointer(Unmanaged.passUnretained(dog).toOpaque())
            let walkers = withExtendedLifetime(dog) { field.accessor.value(at: base + field.offset) as? LinkingObjects<CodWalker> }
            XCTAssertEqual(walkers?.originProperty, "dogs")
            XCTAssertEqual(walkers?.count, 0)
        }
        // Nested objects (a list's elements) keep theirs too, as does the object holding them.
        let walker = try decode(CodWalker.self, #"{"id": 1, "dogs": [{"name": "A"}, {"name": "B", "age": 2}]}"#)
        XCTAssertEqual(try declaredColumns(walker), try declaredColumns(CodWalker()))
        for dog in walker.dogs { XCTAssertEqual(try declaredColumns(dog), declared) }
        XCTAssertEqual(lattice_decoded_pending(), 0)
    }

    func testSchemaOfAClassFirstUsedByDecodingIsItsDeclaration() throws {
        let dog = try decode(CodDog.self, #"{"name": "Rex"}"#)
        let schema = dog.objectSchema
        XCTAssertEqual(schema.primaryKeyProperty?.name, "id")
        XCTAssertEqual(schema.allProperties.first { $0.name == "name" }?.isIndexed, true)
        XCTAssertEqual(schema.allProperties.first { $0.name == "walkers" }?.originProperty, "dogs")
        XCTAssertEqual(schema.allProperties.first { $0.name == "color" }?.originalName, "formerColor")
    }

    func testThreadsDecodingAtOnceKeepTheirOwnDeclarations() throws {
        let declared = try declaredColumns(CodDog())
        let wrong = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for n in 0..<50 {
                let id = thread * 1000 + n
                let json = #"{"id": \#(id), "dogs": [{"name": "d\#(n)"}, {"age": 7}]}"#
                guard let walker = try? JSONDecoder().decode(CodWalker.self, from: Data(json.utf8)),
                      walker.id == id, walker.dogs.map(\.name) == ["d\(n)", "unnamed"], walker.dogs[1].age == 7,
                      walker.dogs.allSatisfy({ (try? codableDeclaredColumns($0)) == declared }),
                      lattice_decoded_pending() == 0 else {
                    wrong.withLock { $0 += 1 }
                    continue
                }
            }
        }
        XCTAssertEqual(wrong.withLock { $0 }, 0)
    }

    // MARK: Adding decoded objects

    private let walkerJSON = """
    {
        "id": 1,
        "name": "Sam",
        "dogs": [
            {"id": "00000000-0000-0000-0000-0000000000A1", "name": "Rex", "age": 4,
             "favoriteToy": {"name": "ball"}, "collar": {"color": "red", "size": 3}},
            {"id": "00000000-0000-0000-0000-0000000000A2", "name": "Fido", "nickname": null,
             "walkers": [{"id": 99}]}
        ],
        "friends": [{"name": "rope"}],
        "dogsByRoute": {"park": {"id": "00000000-0000-0000-0000-0000000000A3", "name": "Spot"}, "none": null}
    }
    """

    func testDecodedGraphIsAddedAndReadBackFromTheFile() throws {
        let db = makeTempDatabase("codable")
        let rexID = try XCTUnwrap(UUID(uuidString: "00000000-0000-0000-0000-0000000000A1"))
        do {
            let lattice = try db.open(types)
            let walker = try decode(CodWalker.self, walkerJSON)
            try lattice.write { try lattice.add(walker) }
            XCTAssertIdentical(walker.lattice, lattice)
        }
        let lattice = try db.open(types)
        let walker = try XCTUnwrap(lattice.object(ofType: CodWalker.self, forPrimaryKey: 1))
        XCTAssertEqual(walker.name, "Sam")
        XCTAssertEqual(walker.dogs.map(\.name), ["Rex", "Fido"])
        let rex = try XCTUnwrap(lattice.object(ofType: CodDog.self, forPrimaryKey: rexID))
        XCTAssertEqual(rex.age, 4)
        XCTAssertEqual(rex.nickname, "buddy")
        XCTAssertEqual(rex.color, "brown")
        XCTAssertEqual(rex.favoriteToy?.name, "ball")
        XCTAssertEqual(rex.collar?.color, "red")
        XCTAssertEqual(rex.collar?.size, 3)
        XCTAssertNil(walker.dogs[1].nickname)
        XCTAssertEqual(walker.friends.map(\.name), ["rope"])
        XCTAssertEqual(walker.dogsByRoute.count, 2)
        XCTAssertEqual(walker.dogsByRoute["park"]??.name, "Spot")
        XCTAssertEqual(walker.dogsByRoute["none"], .some(nil))
        XCTAssertEqual(lattice.objects(CodDog.self).count, 3)
        XCTAssertEqual(lattice.objects(CodToy.self).count, 2)
        // Found through the index of the indexed property.
        XCTAssertEqual(try lattice.objects(CodDog.self).filter("name == %@", "Fido").count, 1)
    }

    func testLinkingObjectsOfDecodedObjectsFollowTheirLinks() throws {
        let db = makeTempDatabase("codable")
        let lattice = try db.open(types)
        let walker = try decode(CodWalker.self, walkerJSON)
        // What the JSON held for the backlinks is skipped: they are computed from links.
        XCTAssertTrue(walker.dogs[1].walkers.isEmpty)
        try lattice.write { try lattice.add(walker) }
        XCTAssertEqual(lattice.objects(CodWalker.self).count, 1)
        for dog in walker.dogs {
            XCTAssertEqual(dog.walkers.count, 1)
            XCTAssertEqual(dog.walkers.first?.id, 1)
        }
        let second = try decode(CodWalker.self, #"{"id": 2, "name": "Kim"}"#)
        try lattice.write {
            try lattice.add(second)
            second.dogs.append(walker.dogs[0])
        }
        XCTAssertEqual(Set(walker.dogs[0].walkers.map(\.id)), [1, 2])
        XCTAssertEqual(try lattice.objects(CodDog.self).filter("walkers.@count == 2").count, 1)
    }

    func testAddingADecodedObjectWithAnExistingPrimaryKeyUpdatesIt() throws {
        let db = makeTempDatabase("codable")
        do {
            let lattice = try db.open(types)
            try lattice.write { try lattice.add(decode(CodWalker.self, #"{"id": 5, "name": "Old", "dogs": [{"name": "A"}]}"#)) }
            let update = try decode(CodWalker.self, #"{"id": 5, "name": "New", "dogs": [{"name": "B"}, {"name": "C"}]}"#)
            try lattice.write { try lattice.add(update, update: .modified) }
            XCTAssertEqual(lattice.objects(CodWalker.self).count, 1)
            // Without an update policy the existing key is refused.
            let duplicate = try decode(CodWalker.self, #"{"id": 5}"#)
            XCTAssertThrowsError(try lattice.write { try lattice.add(duplicate) })
        }
        let lattice = try db.open(types)
        let walker = try XCTUnwrap(lattice.object(ofType: CodWalker.self, forPrimaryKey: 5))
        XCTAssertEqual(walker.name, "New")
        XCTAssertEqual(walker.dogs.map(\.name), ["B", "C"])
        XCTAssertEqual(lattice.objects(CodWalker.self).count, 1)
    }

    func testDecodedValuesOfEveryTypePersist() throws {
        let db = makeTempDatabase("codable")
        do {
            let lattice = try db.open(types)
            let object = try decode(CodEverything.self, everythingJSON)
            try lattice.write { try lattice.add(object) }
        }
        let lattice = try db.open(types)
        assertEverything(try XCTUnwrap(lattice.object(ofType: CodEverything.self, forPrimaryKey: 7)))
    }

    // MARK: Encoding managed objects

    func testEncodingAManagedObjectThrowsAndNamesTheRemedy() throws {
        let db = makeTempDatabase("codable")
        let lattice = try db.open(types)
        let toy = CodToy()
        toy.name = "ball"
        try lattice.write { try lattice.add(toy) }
        XCTAssertThrowsError(try JSONEncoder().encode(toy)) { error in
            guard case let EncodingError.invalidValue(_, context)? = error as? EncodingError else {
                return XCTFail("expected invalidValue, got \(error)")
            }
            XCTAssertTrue(context.debugDescription.contains("unmanaged copy"), context.debugDescription)
            XCTAssertTrue(context.debugDescription.contains("value:"), context.debugDescription)
        }
        // The copy `init(value:)` makes is unmanaged and encodes.
        let copy = try CodToy(value: toy)
        XCTAssertNil(copy.lattice)
        XCTAssertEqual(try jsonObject(JSONEncoder().encode(copy))["name"] as? String, "ball")
    }

    func testUnmanagedCopyEncodesItsManagedLinksAndElements() throws {
        let db = makeTempDatabase("codable")
        let lattice = try db.open(types)
        let walker = try decode(CodWalker.self, walkerJSON)
        try lattice.write { try lattice.add(walker) }

        let copy = try CodWalker(value: walker)
        XCTAssertNil(copy.lattice)
        let data = try JSONEncoder().encode(copy)
        let decoded = try JSONDecoder().decode(CodWalker.self, from: data)
        XCTAssertEqual(decoded.name, "Sam")
        XCTAssertEqual(decoded.dogs.map(\.name), ["Rex", "Fido"])
        XCTAssertEqual(decoded.dogs.first?.favoriteToy?.name, "ball")
        XCTAssertEqual(decoded.dogs.first?.collar?.color, "red")
        XCTAssertEqual(decoded.friends.map(\.name), ["rope"])
        XCTAssertEqual(decoded.dogsByRoute["park"]??.name, "Spot")
        XCTAssertEqual(decoded.dogsByRoute["none"], .some(nil))
        // Encoding the copy changed nothing stored.
        XCTAssertEqual(lattice.objects(CodDog.self).count, 3)

        // Managed collections and linking objects encode on their own.
        let dogs = try jsonArray(JSONEncoder().encode(walker.dogs))
        XCTAssertEqual(dogs.compactMap { $0["name"] as? String }, ["Rex", "Fido"])
        let walkers = try jsonArray(JSONEncoder().encode(walker.dogs[0].walkers))
        XCTAssertEqual(walkers.compactMap { $0["id"] as? Int }, [1])
        XCTAssertEqual(walkers.first?["dogs"].map { ($0 as? [Any])?.count }, 2)
    }

    func testResultsEncodeAsAnArrayOfTheirObjects() throws {
        let db = makeTempDatabase("codable")
        let lattice = try db.open(types)
        try lattice.write { try lattice.add(decode(CodWalker.self, walkerJSON)) }
        let results = try lattice.objects(CodDog.self).filter("name != %@", "Spot")
        let encoded = try jsonArray(JSONEncoder().encode(results))
        XCTAssertEqual(Set(encoded.compactMap { $0["name"] as? String }), ["Rex", "Fido"])
        let rex = try XCTUnwrap(encoded.first { $0["name"] as? String == "Rex" })
        XCTAssertEqual((rex["favoriteToy"] as? [String: Any])?["name"] as? String, "ball")
        // Decoding what was encoded gives unmanaged objects with the same values.
        let decoded = try JSONDecoder().decode([CodDog].self, from: JSONEncoder().encode(results))
        XCTAssertEqual(Set(decoded.map(\.name)), ["Rex", "Fido"])
        XCTAssertTrue(decoded.allSatisfy { $0.lattice == nil })
        let erased = try jsonArray(JSONEncoder().encode(AnyLatticeCollection(results)))
        XCTAssertEqual(erased.count, 2)
    }

    private func jsonArray(_ data: Data) throws -> [[String: Any]] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [[String: Any]])
    }

    func testUnmanagedObjectEncodesLinkingObjectsAsAnEmptyArray() throws {
        let json = try jsonObject(JSONEncoder().encode(CodDog()))
        XCTAssertEqual((json["walkers"] as? [Any])?.count, 0)
        XCTAssertTrue(json["favoriteToy"] is NSNull)
        XCTAssertEqual(json["name"] as? String, "unnamed")
    }

    // MARK: Lattice types on their own

    func testObjectIdIsItsHexString() throws {
        let id = try XCTUnwrap(ObjectId(string: "0123456789abcdef01234567"))
        XCTAssertEqual(String(decoding: try JSONEncoder().encode([id]), as: UTF8.self), #"["0123456789abcdef01234567"]"#)
        XCTAssertEqual(try decode([ObjectId].self, #"["0123456789ABCDEF01234567"]"#), [id])
        XCTAssertEqual(try decode([ObjectId?].self, "[null]"), [nil])
    }

    func testCollectionsOnTheirOwn() throws {
        let list = try decode(List<Int?>.self, "[1, null, 3]")
        XCTAssertEqual(Array(list), [1, nil, 3])
        XCTAssertEqual(String(decoding: try JSONEncoder().encode(list), as: UTF8.self), "[1,null,3]")
        let set = try decode(MutableSet<String>.self, #"["x", "y", "x"]"#)
        XCTAssertEqual(set.count, 2)
        let map = try decode(Map<String, Double>.self, #"{"b": 2, "a": 1.5}"#)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        XCTAssertEqual(String(decoding: try encoder.encode(map), as: UTF8.self), #"{"a":1.5,"b":2}"#)
        XCTAssertThrowsError(try decode(Map<String, Int>.self, "[1]")) { XCTAssertTrue($0 is DecodingError) }
    }
}
