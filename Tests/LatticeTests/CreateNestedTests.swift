import Foundation
import XCTest
@testable import Lattice

// Nested values in every write entry point (create with and without update, add, Object(value:)), and
// Realm's copy idiom (`Dog(value: otherDog)`, `create(Dog.self, value: otherDog)`), each checked after
// reopening the file.

final class CNOwner: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var pet: CNPet?
    @Persisted var pets: List<CNPet>
    @Persisted var tags: List<String>
    @Persisted var flags: MutableSet<String>
    @Persisted var scores: Map<String, Int>
    @Persisted var home: CNAddress?
    @Persisted var toy: CNToy?
    @Persisted var friends: MutableSet<CNPet>
    @Persisted var petsByName: Map<String, CNPet?>
    @Persisted var places: List<CNAddress>
}

final class CNPet: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var toy: CNToy?
    @Persisted var buddy: CNPet?
    @Persisted(originProperty: "pets") var owners: LinkingObjects<CNOwner>
}

final class CNToy: Object {
    @Persisted var label = ""
}

final class CNAddress: EmbeddedObject {
    @Persisted var city = ""
    @Persisted var street = ""
}

/// A class of its own with some of `CNOwner`'s property names (the copy idiom across classes).
final class CNOwnerDraft: Object {
    @Persisted var id = 0
    @Persisted var name = ""
    @Persisted var tags: List<String>
    @Persisted var note = ""
}

/// A plain Swift value with property names of `CNOwner`.
private struct OwnerRecord {
    var id: Int
    var name: String
    var tags: [String]
    var pet: [String: Any]
}

final class CreateNestedTests: XCTestCase {
    private let types: [Object.Type] = [CNOwner.self, CNPet.self, CNToy.self, CNAddress.self, CNOwnerDraft.self]

    /// A file holding owner 1 "Ann" (tag "old", flag "old", score old=1, home Oslo/Main, pet 7 "Rex" aged 3,
    /// pets [7], place Bergen).
    private func seeded() throws -> TempDatabase {
        let db = makeTempDatabase("create-nested")
        let lattice = try db.open(types)
        try lattice.write {
            try lattice.create(CNOwner.self, value: [
                "id": 1, "name": "Ann", "tags": ["old"], "flags": ["old"], "scores": ["old": 1],
                "home": ["city": "Oslo", "street": "Main"], "pet": ["id": 7, "name": "Rex", "age": 3],
                "places": [["city": "Bergen"]],
            ])
            let owner = try XCTUnwrap(lattice.object(ofType: CNOwner.self, forPrimaryKey: 1))
            owner.pets.append(try XCTUnwrap(owner.pet))
        }
        return db
    }

    /// The number of stored objects of a class, embedded ones included (`objects(_:)` hides those).
    private func storedCount(_ lattice: Lattice, _ type: Object.Type) throws -> Int {
        let info = try lattice.requireClass(type)
        return try lattice.readTransaction().count(info.objectsTable)
    }

    private func owner(_ lattice: Lattice, _ id: Int = 1, file: StaticString = #filePath, line: UInt = #line) throws -> CNOwner {
        try XCTUnwrap(lattice.object(ofType: CNOwner.self, forPrimaryKey: id), file: file, line: line)
    }

    /// An array gives one value per stored property in declaration order; linking objects are computed,
    /// so a class with them takes an array without them, as Realm does.
    func testArrayValuesSkipLinkingObjects() throws {
        let db = makeTempDatabase("create-nested")
        do {
            let lattice = try db.open(types)
            let unmanaged = try CNPet(value: [8, "Fido", 2, NSNull(), NSNull()] as [Any])
            XCTAssertEqual(unmanaged.name, "Fido")
            try lattice.write {
                try lattice.add(unmanaged)
                let rex = try lattice.create(CNPet.self, value: [7, "Rex", 3, NSNull(), unmanaged] as [Any])
                let owner = try lattice.create(CNOwner.self, value: ["id": 1])
                owner.pets.append(rex)
                // As in Realm, properties after the last value given keep their defaults.
                let short = try lattice.create(CNPet.self, value: [9, "Short"] as [Any])
                XCTAssertEqual([short.name, "\(short.age)", "\(short.toy == nil)"], ["Short", "0", "true"])
                assertLatticeError(try lattice.create(CNPet.self, value: [10, "Long", 1, NSNull(), NSNull(), 6] as [Any]), .wrongType(
                    className: "CNPet", property: "(value)",
                    expected: "an array of at most 5 values, in declaration order (id, name, age, toy, buddy)", found: "an array of 6"))
            }
        }
        let reopened = try db.open(types)
        let rex = try XCTUnwrap(reopened.object(ofType: CNPet.self, forPrimaryKey: 7))
        XCTAssertEqual(rex.buddy?.name, "Fido")
        XCTAssertEqual(rex.owners.map(\.id), [1])
        XCTAssertEqual(reopened.objects(CNPet.self).count, 3, "the short array made one object, the long one nothing")
    }

    // MARK: create(_:value:update:) on an existing object

    /// The forms a value arrives in from dynamic code: nil as `NSNull`, as an empty Optional or as an
    /// Optional holding `NSNull`; a linked object bare, in an Optional or in an `AnyHashable`; a nested
    /// dictionary inside an Optional. Each stores what it stands for.
    func testValuesWrappedInOptionalsNSNullAndAnyHashable() throws {
        let db = makeTempDatabase("create-nested")
        let lattice = try db.open(types)
        let noPet: CNPet? = nil
        let noName: String? = nil
        try lattice.write {
            let rex = try lattice.create(CNPet.self, value: ["id": 7, "name": "Rex"])
            let maybeRex: CNPet? = rex
            let nested: [String: Any]? = ["id": 9, "name": "Nested"]
            try lattice.create(CNOwner.self, value: ["id": 1, "pet": rex, "toy": NSNull()])
            try lattice.create(CNOwner.self, value: ["id": 2, "pet": maybeRex as Any, "toy": noPet as Any])
            try lattice.create(CNOwner.self, value: ["id": 3, "pet": AnyHashable(rex), "toy": Optional<Any>.some(NSNull()) as Any])
            try lattice.create(CNOwner.self, value: ["id": 4, "pet": nested as Any, "name": "Four"])
            try lattice.create(CNOwner.self, value: ["id": 1, "pet": NSNull()], update: .modified)
            assertLatticeError(try lattice.create(CNOwner.self, value: ["id": 5, "name": NSNull()]),
                               .missingValue(className: "CNOwner", property: "name"))
            assertLatticeError(try lattice.create(CNOwner.self, value: ["id": 5, "name": noName as Any]),
                               .missingValue(className: "CNOwner", property: "name"))
            assertLatticeError(try lattice.create(CNOwner.self, value: ["id": 5, "pet": "Rex"]),
                               .wrongType(className: "CNOwner", property: "pet", expected: "CNPet?", found: "String"))
        }
        let reopened = try db.open(types)
        XCTAssertNil(try owner(reopened, 1).pet, "NSNull cleared the link")
        XCTAssertEqual(try owner(reopened, 2).pet?.id, 7)
        XCTAssertEqual(try owner(reopened, 3).pet?.id, 7)
        XCTAssertEqual(try owner(reopened, 4).pet?.name, "Nested")
        XCTAssertNil(try owner(reopened, 2).toy)
        XCTAssertNil(try owner(reopened, 3).toy)
        XCTAssertEqual(reopened.objects(CNPet.self).count, 2)
        XCTAssertNil(reopened.object(ofType: CNOwner.self, forPrimaryKey: 5))
    }

    func testUpdateStoresAToOneLink() throws {
        let db = try seeded()
        do {
            let lattice = try db.open(types)
            try lattice.write {
                try lattice.create(CNOwner.self, value: ["id": 1, "toy": ["label": "ball"], "pet": ["id": 8, "name": "Bo"]], update: .all)
            }
        }
        let lattice = try db.open(types)
        let ann = try owner(lattice)
        XCTAssertEqual(ann.toy?.label, "ball", "a nested object without primary key is created")
        XCTAssertEqual(ann.pet?.name, "Bo", "a nested object with a new primary key is created")
        XCTAssertEqual(ann.name, "Ann", "keys left out are unchanged")
        XCTAssertEqual(lattice.objects(CNPet.self).count, 2)
    }

    func testUpdateReplacesAListOfObjects() throws {
        let db = try seeded()
        do {
            let lattice = try db.open(types)
            try lattice.write {
                try lattice.create(CNOwner.self, value: ["id": 1, "pets": [["id": 8, "name": "Bo"], ["id": 9, "name": "Cy"]]], update: .modified)
            }
        }
        let lattice = try db.open(types)
        XCTAssertEqual(try owner(lattice).pets.map(\.name), ["Bo", "Cy"], "the list is replaced")
        XCTAssertEqual(lattice.objects(CNPet.self).count, 3, "an object leaving a list is not deleted")
        XCTAssertEqual(lattice.object(ofType: CNPet.self, forPrimaryKey: 9)?.owners.map(\.id), [1], "backlinks follow")
    }

    func testUpdateReplacesAListOfValues() throws {
        let db = try seeded()
        do {
            let lattice = try db.open(types)
            try lattice.write { try lattice.create(CNOwner.self, value: ["id": 1, "tags": ["a", "b", "a"]], update: .all) }
        }
        XCTAssertEqual(Array(try owner(try db.open(types)).tags), ["a", "b", "a"])
    }

    func testUpdateReplacesAMutableSet() throws {
        let db = try seeded()
        do {
            let lattice = try db.open(types)
            try lattice.write {
                try lattice.create(CNOwner.self, value: ["id": 1, "flags": ["x", "y"], "friends": [["id": 8]]], update: .modified)
            }
        }
        let ann = try owner(try db.open(types))
        XCTAssertEqual(Set(ann.flags), ["x", "y"])
        XCTAssertEqual(ann.friends.map(\.id), [8])
    }

    func testUpdateReplacesAMap() throws {
        let db = try seeded()
        do {
            let lattice = try db.open(types)
            try lattice.write {
                try lattice.create(CNOwner.self, value: ["id": 1, "scores": ["a": 1, "b": 2], "petsByName": ["rex": ["id": 7], "bo": ["id": 8, "name": "Bo"]]],
                                   update: .modified)
            }
        }
        let lattice = try db.open(types)
        let ann = try owner(lattice)
        XCTAssertEqual(ann.scores.keys, ["a", "b"])
        XCTAssertEqual(ann.scores["b"], 2)
        XCTAssertEqual(ann.petsByName["rex"]??.name, "Rex", "an existing object named by primary key keeps its other values")
        XCTAssertEqual(ann.petsByName["bo"]??.name, "Bo")
    }

    func testUpdateOfAnEmbeddedObjectUpdatesItInPlace() throws {
        let db = try seeded()
        do {
            let lattice = try db.open(types)
            try lattice.write {
                try lattice.create(CNOwner.self, value: ["id": 1, "home": ["city": "Rome"], "places": [["city": "Pisa"], ["city": "Bari"]]], update: .modified)
            }
            XCTAssertEqual(try storedCount(lattice, CNAddress.self), 3, "the list's stored element is updated in place, the other one added: none is orphaned")
        }
        let lattice = try db.open(types)
        let ann = try owner(lattice)
        XCTAssertEqual(ann.home?.city, "Rome")
        XCTAssertEqual(ann.home?.street, "Main", "as with Realm, the existing embedded object is updated, keys left out unchanged")
        XCTAssertEqual(ann.places.map(\.city), ["Pisa", "Bari"])
    }

    func testUpdateStoresNestedNestedValues() throws {
        let db = try seeded()
        do {
            let lattice = try db.open(types)
            try lattice.write {
                try lattice.create(CNOwner.self, value: [
                    "id": 1,
                    "pet": ["id": 7, "toy": ["label": "bone"], "buddy": ["id": 8, "name": "Bo", "toy": ["label": "rope"]]],
                    "pets": [["id": 9, "toy": ["label": "ball"]]],
                ], update: .all)
            }
        }
        let lattice = try db.open(types)
        let ann = try owner(lattice)
        XCTAssertEqual(ann.pet?.toy?.label, "bone")
        XCTAssertEqual(ann.pet?.name, "Rex")
        XCTAssertEqual(ann.pet?.buddy?.name, "Bo")
        XCTAssertEqual(ann.pet?.buddy?.toy?.label, "rope")
        XCTAssertEqual(ann.pets.first?.toy?.label, "ball")
        XCTAssertEqual(lattice.objects(CNToy.self).count, 3)
    }

    func testNestedObjectsFollowTheUpdatePolicy() throws {
        let db = try seeded()
        do {
            let lattice = try db.open(types)
            // Without update, a nested object whose primary key exists is an error, as at the top level.
            assertLatticeError(try lattice.write { try lattice.create(CNOwner.self, value: ["id": 2, "pet": ["id": 7, "name": "Max"]]) },
                               .duplicatePrimaryKey(className: "CNPet", value: "7"))
            for policy in [Lattice.UpdatePolicy.modified, .all] {
                try lattice.write {
                    try lattice.create(CNOwner.self, value: ["id": 2, "pet": ["id": 7, "age": policy == .all ? 5 : 4]], update: policy)
                }
            }
        }
        let lattice = try db.open(types)
        let rex = try XCTUnwrap(lattice.object(ofType: CNPet.self, forPrimaryKey: 7))
        XCTAssertEqual(rex.age, 5)
        XCTAssertEqual(rex.name, "Rex", "a nested dictionary is a partial update too")
        XCTAssertEqual(try owner(lattice, 2).pet, rex)
        XCTAssertEqual(lattice.objects(CNPet.self).count, 1)
    }

    func testUpdateLinksExistingManagedObjects() throws {
        let db = try seeded()
        do {
            let lattice = try db.open(types)
            let rex = try XCTUnwrap(lattice.object(ofType: CNPet.self, forPrimaryKey: 7))
            try lattice.write {
                let bo = try lattice.create(CNPet.self, value: ["id": 8, "name": "Bo"])
                try lattice.create(CNOwner.self, value: ["id": 1, "pet": bo, "pets": [bo, rex, bo], "friends": [rex]], update: .modified)
            }
        }
        let lattice = try db.open(types)
        let ann = try owner(lattice)
        XCTAssertEqual(ann.pet?.name, "Bo")
        XCTAssertEqual(ann.pets.map(\.id), [8, 7, 8])
        XCTAssertEqual(ann.friends.map(\.id), [7])
        XCTAssertEqual(lattice.objects(CNPet.self).count, 2)
    }

    func testBadNestedValueOnUpdateChangesNothing() throws {
        let db = try seeded()
        do {
            let lattice = try db.open(types)
            try lattice.write {
                assertLatticeError(try lattice.create(CNOwner.self, value: ["id": 1, "name": "Zed", "pets": [["id": 8, "age": "old"]]], update: .modified),
                                   .wrongType(className: "CNPet", property: "age", expected: "Int", found: "String"))
                assertLatticeError(try lattice.create(CNOwner.self, value: ["id": 1, "pet": ["id": 8, "colour": "red"]], update: .modified),
                                   .unknownProperty(className: "CNPet", property: "colour"))
                // The existing object's own values are checked before a new nested object is added.
                let newPet: [String: Any] = ["id": 9, "name": "New"]
                assertLatticeError(try lattice.create(CNOwner.self, value: ["id": 1, "pet": newPet, "name": 5], update: .modified),
                                   .wrongType(className: "CNOwner", property: "name", expected: "String", found: "Int"))
                assertLatticeError(try lattice.create(CNOwner.self, value: ["id": 1, "pets": [newPet], "name": NSNull()], update: .all),
                                   .missingValue(className: "CNOwner", property: "name"))
                assertLatticeError(try lattice.create(CNOwner.self, value: ["id": 1, "friends": [newPet], "pet": 3], update: .modified),
                                   .wrongType(className: "CNOwner", property: "pet", expected: "CNPet?", found: "Int"))
                assertLatticeError(try lattice.create(CNOwner.self, value: ["id": 1, "pet": newPet, "tags": 3], update: .modified),
                                   .wrongType(className: "CNOwner", property: "tags", expected: "List<String>", found: "Int"))
                assertLatticeError(try lattice.create(CNOwner.self, value: ["id": 1, "pet": newPet, "nickname": "Z"], update: .modified),
                                   .unknownProperty(className: "CNOwner", property: "nickname"))
                let limit = 16 * 1024 * 1024
                assertLatticeError(try lattice.create(CNOwner.self, value: ["id": 1, "pet": newPet, "name": String(repeating: "x", count: limit + 1)],
                                                      update: .modified),
                                   .valueTooLarge(className: "CNOwner", property: "name", size: limit + 1, limit: limit))
            }
        }
        let lattice = try db.open(types)
        XCTAssertEqual(try owner(lattice).name, "Ann", "the errors were found before anything was written")
        XCTAssertEqual(lattice.objects(CNPet.self).count, 1)
    }

    // MARK: New objects: create, add, Object(value:)

    private let everything: [String: Any] = [
        "id": 5, "name": "Eve", "pet": ["id": 20, "name": "Pip", "toy": ["label": "cube"]],
        "pets": [["id": 21, "name": "Q"], ["id": 22, "name": "R"]], "tags": ["t1", "t2"], "flags": ["f"],
        "scores": ["s": 3], "home": ["city": "Lyon"], "toy": ["label": "top"], "friends": [["id": 23, "name": "S"]],
        "petsByName": ["u": ["id": 24, "name": "U"]], "places": [["city": "Nice"]],
    ]

    private func assertEverything(_ db: TempDatabase, file: StaticString = #filePath, line: UInt = #line) throws {
        let lattice = try db.open(types)
        let eve = try owner(lattice, 5, file: file, line: line)
        XCTAssertEqual(eve.name, "Eve", file: file, line: line)
        XCTAssertEqual(eve.pet?.toy?.label, "cube", file: file, line: line)
        XCTAssertEqual(eve.pets.map(\.name), ["Q", "R"], file: file, line: line)
        XCTAssertEqual(Array(eve.tags), ["t1", "t2"], file: file, line: line)
        XCTAssertEqual(Array(eve.flags), ["f"], file: file, line: line)
        XCTAssertEqual(eve.scores["s"], 3, file: file, line: line)
        XCTAssertEqual(eve.home?.city, "Lyon", file: file, line: line)
        XCTAssertEqual(eve.toy?.label, "top", file: file, line: line)
        XCTAssertEqual(eve.friends.map(\.name), ["S"], file: file, line: line)
        XCTAssertEqual(eve.petsByName["u"]??.name, "U", file: file, line: line)
        XCTAssertEqual(eve.places.map(\.city), ["Nice"], file: file, line: line)
        XCTAssertEqual(lattice.objects(CNPet.self).count, 5, file: file, line: line)
    }

    func testCreateStoresEveryNestedValue() throws {
        let db = makeTempDatabase("create-nested")
        do {
            let lattice = try db.open(types)
            try lattice.write { try lattice.create(CNOwner.self, value: everything) }
        }
        try assertEverything(db)
    }

    func testCreateWithUpdateOfANewObjectStoresEveryNestedValue() throws {
        let db = makeTempDatabase("create-nested")
        do {
            let lattice = try db.open(types)
            try lattice.write { try lattice.create(CNOwner.self, value: everything, update: .modified) }
        }
        try assertEverything(db)
    }

    func testAddOfAnObjectBuiltFromNestedValuesStoresThemAll() throws {
        let db = makeTempDatabase("create-nested")
        do {
            let lattice = try db.open(types)
            let eve = try CNOwner(value: everything)
            XCTAssertEqual(eve.pets.count, 2)
            XCTAssertEqual(eve.home?.city, "Lyon")
            try lattice.write { try lattice.add(eve) }
        }
        try assertEverything(db)
    }

    func testAddWithUpdateReplacesNestedValues() throws {
        let db = try seeded()
        do {
            let lattice = try db.open(types)
            let ann = try CNOwner(value: ["id": 1, "name": "Ann", "pet": ["id": 7, "name": "Rex", "age": 4], "tags": ["new"],
                                         "home": ["city": "Rome"], "places": [["city": "Pisa"]]])
            try lattice.write { try lattice.add(ann, update: .modified) }
        }
        let lattice = try db.open(types)
        let ann = try owner(lattice)
        XCTAssertEqual(ann.pet?.age, 4)
        XCTAssertEqual(Array(ann.tags), ["new"])
        XCTAssertEqual(ann.home?.city, "Rome")
        XCTAssertEqual(ann.places.map(\.city), ["Pisa"])
        XCTAssertEqual(ann.pets.count, 0, "add writes every property")
        XCTAssertEqual(try storedCount(lattice, CNAddress.self), 2, "the replaced embedded objects are deleted, none is orphaned")
    }

    // MARK: The copy idiom

    func testDetachingAManagedObject() throws {
        let db = try seeded()
        let lattice = try db.open(types)
        let managed = try owner(lattice)
        let copy = try CNOwner(value: managed)
        XCTAssertNil(copy.lattice, "the copy is unmanaged")
        XCTAssertEqual(copy.id, 1)
        XCTAssertEqual(copy.name, "Ann")
        XCTAssertEqual(Array(copy.tags), ["old"])
        XCTAssertFalse(copy.tags.isManaged, "collections are copied element by element")
        XCTAssertEqual(Array(copy.flags), ["old"])
        XCTAssertEqual(copy.scores["old"], 1)
        XCTAssertEqual(copy.pet, managed.pet, "a link stays a reference to the same stored object")
        XCTAssertEqual(copy.pets.map(\.id), [7])
        XCTAssertNil(copy.home?.lattice, "an embedded object is copied (it has one parent)")
        XCTAssertEqual(copy.home?.street, "Main")
        XCTAssertEqual(copy.places.map(\.city), ["Bergen"])

        // Independent of the file: changed outside a write, the stored object stays as it was, and the
        // copy outlives the stored object.
        copy.name = "Copy"
        copy.tags.append("mine")
        copy.home?.city = "Elsewhere"
        XCTAssertEqual(managed.name, "Ann")
        XCTAssertEqual(Array(managed.tags), ["old"])
        XCTAssertEqual(managed.home?.city, "Oslo")
        try lattice.write { try lattice.delete(managed) }
        XCTAssertEqual(copy.name, "Copy")
        XCTAssertEqual(Array(copy.tags), ["old", "mine"])
        XCTAssertEqual(copy.places.first?.city, "Bergen")
    }

    func testCopyIntoTheSameFileLinksTheSameObjects() throws {
        let db = try seeded()
        do {
            let lattice = try db.open(types)
            let managed = try owner(lattice)
            try lattice.write {
                let copy = try CNOwner(value: managed)
                copy.id = 2
                try lattice.add(copy)
                let same = try lattice.create(CNOwner.self, value: managed, update: .modified)
                XCTAssertEqual(same, managed, "the object copied onto itself")
                XCTAssertEqual(Array(same.tags), ["old"], "keeps its lists")
                XCTAssertEqual(same.home?.city, "Oslo")
            }
            XCTAssertThrowsError(try lattice.write { try lattice.create(CNOwner.self, value: managed) }, "same primary key, no update")
        }
        let lattice = try db.open(types)
        let ann = try owner(lattice), two = try owner(lattice, 2)
        XCTAssertEqual(two.name, "Ann")
        XCTAssertEqual(two.pet, ann.pet, "links point at the same stored objects")
        XCTAssertEqual(two.pets.map(\.id), [7])
        XCTAssertEqual(Array(two.tags), ["old"])
        XCTAssertEqual(two.home?.street, "Main")
        XCTAssertEqual(ann.home?.street, "Main")
        XCTAssertEqual(ann.places.map(\.city), ["Bergen"])
        XCTAssertEqual(lattice.objects(CNPet.self).count, 1)
        XCTAssertEqual(try storedCount(lattice, CNAddress.self), 4, "two homes and two places, none orphaned")
    }

    func testCopyFromOneFileIntoAnother() throws {
        let first = try seeded()
        let second = makeTempDatabase("create-nested-copy")
        do {
            let source = try first.open(types)
            let ann = try owner(source)
            try source.write {
                let bo = try source.create(CNPet.self, value: ["id": 8, "name": "Bo", "buddy": ann.pet as Any])
                ann.pet?.buddy = bo  // a cycle: Rex <-> Bo
                ann.friends.insert(bo)
                ann.petsByName["bo"] = bo
            }
            let target = try second.open(types)
            try target.write {
                try target.create(CNPet.self, value: ["id": 7, "name": "Old Rex", "age": 1])
                try target.create(CNOwner.self, value: ann, update: .modified)
            }
            XCTAssertTrue(ann.lattice === source, "the source object is left as it was")
        }
        let target = try second.open(types)
        let ann = try owner(target)
        XCTAssertEqual(ann.name, "Ann")
        XCTAssertEqual(ann.pet?.name, "Rex", "the existing object with the same primary key is updated")
        XCTAssertEqual(ann.pet?.age, 3)
        XCTAssertEqual(ann.pet?.buddy?.name, "Bo")
        XCTAssertEqual(ann.pet?.buddy?.buddy, ann.pet, "the cycle is copied once")
        XCTAssertEqual(ann.pets.map(\.id), [7])
        XCTAssertEqual(ann.friends.map(\.id), [8])
        XCTAssertEqual(ann.petsByName["bo"]??.id, 8)
        XCTAssertEqual(Array(ann.tags), ["old"])
        XCTAssertEqual(ann.home?.city, "Oslo")
        XCTAssertEqual(ann.places.map(\.city), ["Bergen"])
        XCTAssertEqual(target.objects(CNPet.self).count, 2)

        let again = try first.open(types)
        XCTAssertEqual(try owner(again).pet?.name, "Rex", "the first file is unchanged")
        XCTAssertEqual(again.objects(CNPet.self).count, 2)
    }

    func testCopyFromAnotherFileWithoutUpdateCreates() throws {
        let first = try seeded()
        let second = makeTempDatabase("create-nested-copy")
        do {
            let source = try first.open(types)
            let target = try second.open(types)
            try target.write { try target.create(CNOwner.self, value: try owner(source)) }
            XCTAssertThrowsError(try target.write { try target.add(try self.owner(source)) }, "add does not copy: the object is another file's")
        }
        let ann = try owner(try second.open(types))
        XCTAssertEqual(ann.pet?.name, "Rex")
        XCTAssertEqual(ann.pets.first, ann.pet)
    }

    func testValuesFromAnObjectOfAnotherClassOrAPlainValue() throws {
        let db = makeTempDatabase("create-nested")
        do {
            let lattice = try db.open(types)
            let draft = CNOwnerDraft()
            draft.id = 3
            draft.name = "Draft"
            draft.tags.append("d")
            draft.note = "not a CNOwner property: ignored"
            try lattice.write {
                try lattice.create(CNOwner.self, value: draft)
                try lattice.create(CNOwner.self, value: OwnerRecord(id: 4, name: "Rec", tags: ["r"], pet: ["id": 9, "name": "Nine"]))
            }
            let unmanaged = try CNOwner(value: draft)
            XCTAssertEqual(unmanaged.name, "Draft")
        }
        let lattice = try db.open(types)
        XCTAssertEqual(try owner(lattice, 3).name, "Draft")
        XCTAssertEqual(Array(try owner(lattice, 3).tags), ["d"])
        XCTAssertEqual(try owner(lattice, 4).pet?.name, "Nine")
        XCTAssertEqual(Array(try owner(lattice, 4).tags), ["r"])
    }

    func testCopyingAnInvalidatedObjectThrows() throws {
        let db = try seeded()
        let lattice = try db.open(types)
        let managed = try owner(lattice)
        try lattice.write { try lattice.delete(managed) }
        assertLatticeError(try CNOwner(value: managed), .objectInvalidated(className: "CNOwner"))
        assertLatticeError(try lattice.write { try lattice.create(CNOwner.self, value: managed) }, .objectInvalidated(className: "CNOwner"))
    }
}
