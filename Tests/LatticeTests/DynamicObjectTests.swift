import Foundation
import XCTest
@testable import Lattice

/// The dynamic API on files written by compiled models: every value type, links, collections, linking
/// objects and embedded objects, read and written by name, then read back by the compiled models.
final class DynamicObjectTests: XCTestCase {
    private func dynamic(_ db: TempDatabase) throws -> Lattice {
        try Lattice(configuration: .init(fileURL: db.url, dynamicSchema: true))
    }

    func testReadsAndWritesEveryValueTypeOfATypedFile() throws {
        let db = makeTempDatabase()
        let uuid = UUID()
        let oid = ObjectId()
        let date = Date(timeIntervalSinceReferenceDate: 12_345.5)
        do {
            let typed = try db.open([CodecAllTypes.self])
            try typed.write {
                try typed.create(CodecAllTypes.self, value: [
                    "id": 1, "bool": true, "int": -5, "int8": Int8(-8), "int16": Int16(16), "int32": Int32(-32), "int64": Int64.max,
                    "float": Float(1.5), "double": 2.25, "string": "héllo", "data": Data([1, 2, 3]), "date": date, "uuid": uuid,
                    "decimal": Decimal(string: "12.345")!, "objectId": oid, "color": CodecColor.green, "level": CodecLevel.high,
                    "optInt": 7, "optString": "", "optData": Data(), "optUUID": uuid,
                ])
            }
        }
        let lattice = try dynamic(db)
        XCTAssertTrue(lattice.isDynamic)
        XCTAssertEqual(lattice.schema["CodecAllTypes"]?.properties.count, 33)
        let object = try XCTUnwrap(lattice.dynamicObjects("CodecAllTypes").first)
        XCTAssertEqual(object.objectSchema.className, "CodecAllTypes")
        XCTAssertEqual(object["id"] as? Int, 1)
        XCTAssertEqual(object["bool"] as? Bool, true)
        XCTAssertEqual(object["int"] as? Int, -5)
        // Every integer width reads as Int, as in Realm.
        XCTAssertEqual(object["int8"] as? Int, -8)
        XCTAssertEqual(object["int16"] as? Int, 16)
        XCTAssertEqual(object["int32"] as? Int, -32)
        XCTAssertEqual(object["int64"] as? Int, Int.max)
        XCTAssertEqual(object.value(forKey: "int8") as? Int, -8)
        XCTAssertEqual(try object.value(forProperty: "int32") as? Int, -32)
        XCTAssertEqual(object["float"] as? Float, 1.5)
        XCTAssertEqual(object["double"] as? Double, 2.25)
        XCTAssertEqual(object["string"] as? String, "héllo")
        XCTAssertEqual(object["data"] as? Data, Data([1, 2, 3]))
        XCTAssertEqual(object["date"] as? Date, date)
        XCTAssertEqual(object["uuid"] as? UUID, uuid)
        XCTAssertEqual(object["decimal"] as? Decimal, Decimal(string: "12.345"))
        XCTAssertEqual(object["objectId"] as? ObjectId, oid)
        XCTAssertEqual(object["color"] as? String, CodecColor.green.rawValue)  // an enum is its raw value
        XCTAssertEqual(object["level"] as? Int, CodecLevel.high.rawValue)
        XCTAssertEqual(object["optInt"] as? Int, 7)
        XCTAssertEqual(object["optString"] as? String, "")
        XCTAssertEqual(object["optData"] as? Data, Data())
        XCTAssertNil(object["optBool"] ?? nil)
        XCTAssertNil(object["optDate"] ?? nil)

        // Wrong names and types throw, naming class and property; nothing is written.
        XCTAssertEqual(latticeError(try object.value(forProperty: "nope")), .unknownProperty(className: "CodecAllTypes", property: "nope"))
        try lattice.write {
            XCTAssertEqual(latticeError(try object.setValue("x", forProperty: "int")),
                           .wrongType(className: "CodecAllTypes", property: "int", expected: "Int", found: "String"))
            XCTAssertEqual(latticeError(try object.setValue(nil, forProperty: "string")),
                           .missingValue(className: "CodecAllTypes", property: "string"))
            XCTAssertEqual(latticeError(try lattice.dynamicCreate("Nope")), .classNotInSchema(className: "Nope"))
            XCTAssertEqual(latticeError(try lattice.dynamicCreate("CodecAllTypes", value: ["id": 2, "float": "x"])),
                           .wrongType(className: "CodecAllTypes", property: "float", expected: "Float", found: "String"))
            XCTAssertEqual(latticeError(try lattice.dynamicCreate("CodecAllTypes", value: ["id": 1])),
                           .duplicatePrimaryKey(className: "CodecAllTypes", value: "1"))
            object["int"] = 42
            object["optString"] = nil
            object["string"] = "changed"
            try lattice.dynamicCreate("CodecAllTypes", value: ["id": 2, "double": 9.5, "optDate": date])
        }
        XCTAssertEqual(lattice.dynamicObjects("CodecAllTypes").count, 2)
        XCTAssertEqual(try lattice.dynamicObject(ofType: "CodecAllTypes", forPrimaryKey: 2)?["double"] as? Double, 9.5)
        XCTAssertEqual(try lattice.dynamicObjects("CodecAllTypes").filter("int == 42 AND string BEGINSWITH 'ch'").count, 1)
        XCTAssertEqual(try lattice.dynamicObjects("CodecAllTypes").sorted(byKeyPath: "double", ascending: false).first?["id"] as? Int, 2)

        // The compiled model reads what the dynamic handle wrote.
        let typed = try db.open([CodecAllTypes.self])
        let first = try XCTUnwrap(typed.object(ofType: CodecAllTypes.self, forPrimaryKey: 1))
        XCTAssertEqual(first.int, 42)
        XCTAssertEqual(first.string, "changed")
        XCTAssertNil(first.optString)
        XCTAssertEqual(first.uuid, uuid)
        let second = try XCTUnwrap(typed.object(ofType: CodecAllTypes.self, forPrimaryKey: 2))
        XCTAssertEqual(second.double, 9.5)
        XCTAssertEqual(second.optDate, date)
    }

    func testLinksCollectionsAndEmbeddedObjects() throws {
        let db = makeTempDatabase()
        let types: [Object.Type] = [LPerson.self, LDog.self, LAddress.self, LCar.self]
        do {
            let typed = try db.open(types)
            try typed.write {
                let ann = try typed.create(LPerson.self, value: [
                    "name": "Ann", "age": 30, "nicknames": ["A", "Annie"], "optInts": [1, nil], "tags": ["x", "y"],
                    "ratings": ["a": 1], "address": ["city": "Oslo", "zip": 150],
                    "dogs": [["name": "Rex", "age": 3], ["name": "Fido", "age": 5]],
                ])
                ann.friends.insert(ann.dogs[0])
                ann.pets["best"] = ann.dogs[1]
                try typed.create(LCar.self, value: ["model": "Volvo", "owner": ann])
            }
        }
        let lattice = try dynamic(db)
        let ann = try XCTUnwrap(try lattice.dynamicObjects("LPerson").filter("name == 'Ann'").first)
        let dogs = try XCTUnwrap(ann["dogs"] as? List<DynamicObject>)
        XCTAssertEqual(dogs.map { $0["name"] as? String }, ["Rex", "Fido"])
        XCTAssertEqual(dogs[0].objectSchema.className, "LDog")
        XCTAssertEqual((ann["friends"] as? MutableSet<DynamicObject>)?.first?["name"] as? String, "Rex")
        XCTAssertEqual(((ann["pets"] as? Map<String, DynamicObject?>)?["best"] ?? nil)?["name"] as? String, "Fido")
        XCTAssertEqual(Array(try XCTUnwrap(ann["nicknames"] as? List<String>)), ["A", "Annie"])
        XCTAssertEqual(Array(try XCTUnwrap(ann["optInts"] as? List<Int?>)), [1, nil])
        XCTAssertEqual(Set(try XCTUnwrap(ann["tags"] as? MutableSet<String>)), ["x", "y"])
        XCTAssertEqual((ann["ratings"] as? Map<String, Int>)?["a"], 1)
        let address = try XCTUnwrap(ann["address"] as? DynamicObject)
        XCTAssertEqual(address["city"] as? String, "Oslo")
        let cars = try XCTUnwrap(ann["cars"] as? LinkingObjects<DynamicObject>)
        XCTAssertEqual(cars.first?["model"] as? String, "Volvo")
        XCTAssertEqual((dogs[0]["walkers"] as? LinkingObjects<DynamicObject>)?.first?["name"] as? String, "Ann")
        XCTAssertEqual(try lattice.dynamicObjects("LPerson").filter("ANY dogs.age > 4").count, 1)
        XCTAssertEqual(try lattice.dynamicObjects("LCar").filter("owner.name == 'Ann'").count, 1)

        try lattice.write {
            let bob = try lattice.dynamicCreate("LPerson", value: ["name": "Bob", "partner": ann, "dogs": [dogs[1], ["name": "Max"]]])
            dogs.append(try lattice.dynamicCreate("LDog", value: ["name": "Spot", "owner": bob]))
            (ann["nicknames"] as? List<String>)?.append("Nan")
            ann["address"] = ["city": "Bergen"]
            // A value that is no object for a link is refused, naming the property.
            XCTAssertEqual(latticeError(try bob.setValue(5, forProperty: "partner")),
                           .wrongType(className: "LPerson", property: "partner", expected: "LPerson?", found: "Int"))
            try lattice.delete(try XCTUnwrap(lattice.dynamicObjects("LCar").first))
        }
        XCTAssertEqual(lattice.dynamicObjects("LDog").count, 4)

        let typed = try db.open(types)
        let typedAnn = try XCTUnwrap(typed.objects(LPerson.self).filter("name == 'Ann'").first)
        XCTAssertEqual(typedAnn.dogs.map(\.name), ["Rex", "Fido", "Spot"])
        XCTAssertEqual(Array(typedAnn.nicknames), ["A", "Annie", "Nan"])
        XCTAssertEqual(typedAnn.address?.city, "Bergen")
        XCTAssertEqual(typed.objects(LAddress.self).count, 0)  // embedded: not listed alone
        XCTAssertEqual(typedAnn.cars.count, 0)
        let bob = try XCTUnwrap(typed.objects(LPerson.self).filter("name == 'Bob'").first)
        XCTAssertEqual(bob.partner?.name, "Ann")
        XCTAssertEqual(bob.dogs.map(\.name), ["Fido", "Max"])
        XCTAssertEqual(typedAnn.dogs[2].owner?.name, "Bob")
        XCTAssertEqual(typedAnn.dogs[1].walkers.count, 2)
    }

    func testCustomSchemaCreatesAFileWithoutModelClasses() throws {
        let db = makeTempDatabase()
        let schema = Schema([
            ObjectSchema(className: "Note", properties: [
                Property(name: "id", type: .int, isPrimaryKey: true),
                Property(name: "text", type: .string, isIndexed: true),
                Property(name: "tags", type: .string, collection: .list),
                Property(name: "author", type: .object, isOptional: true, objectClassName: "Author"),
            ]),
            ObjectSchema(className: "Author", properties: [Property(name: "name", type: .string)]),
        ])
        do {
            let lattice = try Lattice(configuration: .init(fileURL: db.url, schemaVersion: 3, customSchema: schema))
            XCTAssertTrue(lattice.isDynamic)
            try lattice.write {
                let author = try lattice.dynamicCreate("Author", value: ["name": "Ann"])
                try lattice.dynamicCreate("Note", value: ["id": 1, "text": "hello", "tags": ["a", "b"], "author": author])
                XCTAssertNil(DynamicObject().objectKey)
                XCTAssertNotNil(author.objectKey)
            }
        }
        // Reopened from disk with the schema the file stores: the same schema, version and objects.
        let reopened = try dynamic(db)
        XCTAssertEqual(reopened.schema, schema)
        XCTAssertEqual(reopened.configuration.schemaVersion, 3)
        let note = try XCTUnwrap(reopened.dynamicObject(ofType: "Note", forPrimaryKey: 1))
        XCTAssertEqual(Array(try XCTUnwrap(note["tags"] as? List<String>)), ["a", "b"])
        let author = try XCTUnwrap(note["author"] as? DynamicObject)
        XCTAssertEqual(author["name"] as? String, "Ann")
        // The key names the object: the only Author has it, and it stays when the handle reads again.
        XCTAssertEqual(author.objectKey, reopened.dynamicObjects("Author").first?.objectKey)
        XCTAssertEqual(try reopened.dynamicObjects("Note").filter("text == 'hello'").count, 1)  // the index works

        // Another schema at the same version is a mismatch, as with model classes.
        let other = Schema([ObjectSchema(className: "Note", properties: [Property(name: "id", type: .int, isPrimaryKey: true)])])
        XCTAssertThrowsError(try Lattice(configuration: .init(fileURL: db.url, schemaVersion: 3, customSchema: other))) { error in
            guard case LatticeError.schemaMismatch = error else { return XCTFail("\(error)") }
        }
        // A link to a class the schema lacks is refused before any file is created.
        let broken = makeTempDatabase()
        let dangling = Schema([ObjectSchema(className: "A", properties: [
            Property(name: "b", type: .object, isOptional: true, objectClassName: "B"),
        ])])
        XCTAssertThrowsError(try Lattice(configuration: .init(fileURL: broken.url, customSchema: dangling)))
        XCTAssertFalse(FileManager.default.fileExists(atPath: broken.path))
    }

    func testDynamicOpenOfAMissingFileThrows() {
        let db = makeTempDatabase()
        XCTAssertEqual(latticeError(try dynamic(db)), .fileNotFound(path: db.path))
    }
}
