import Foundation
import XCTest
@testable import Lattice

final class WriteTests: XCTestCase {
    private let types: [Object.Type] = [FixtureItem.self, FixturePerson.self, FixtureDevice.self, FixtureLogLine.self]

    private func item(_ id: Int, _ name: String, rank: Int = 0, note: String? = nil) -> FixtureItem {
        let item = FixtureItem()
        item.id = id
        item.name = name
        item.rank = rank
        item.note = note
        return item
    }

    private func person(_ name: String, _ age: Int, _ email: String? = nil) -> FixturePerson {
        let p = FixturePerson()
        p.name = name
        p.age = age
        p.email = email
        return p
    }

    /// A file holding items 1 "one" and 2 "two", and person Ann (30, ann@x).
    private func seeded() throws -> TempDatabase {
        let db = makeTempDatabase("write")
        let lattice = try db.open(types)
        try lattice.write {
            try lattice.add(item(1, "one", rank: 10))
            try lattice.add(item(2, "two", rank: 20))
            try lattice.add(person("Ann", 30, "ann@x"))
        }
        return db
    }

    /// Reopens the file in a new environment and checks the seeded data is intact.
    private func assertSeedIntact(_ db: TempDatabase, file: StaticString = #filePath, line: UInt = #line) throws {
        let lattice = try db.open(types)
        XCTAssertEqual(lattice.objects(FixtureItem.self).count, 2, file: file, line: line)
        XCTAssertEqual(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 1)?.name, "one", file: file, line: line)
        XCTAssertEqual(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 2)?.name, "two", file: file, line: line)
        XCTAssertEqual(lattice.objects(FixturePerson.self).count, 1, file: file, line: line)
        let ann = lattice.object(ofType: FixturePerson.self, forPrimaryKey: "Ann")
        XCTAssertEqual(ann?.age, 30, file: file, line: line)
        XCTAssertEqual(ann?.email, "ann@x", file: file, line: line)
    }

    // MARK: add

    func testAddPersistsAndManagesTheObject() throws {
        let db = makeTempDatabase("write")
        let device = FixtureDevice()
        device.label = "phone"
        do {
            let lattice = try db.open(types)
            XCTAssertTrue(lattice.isEmpty)
            try lattice.write { try lattice.add(device) }
            XCTAssertTrue(device.lattice === lattice)
            XCTAssertFalse(lattice.isEmpty)
            try lattice.write { device.label = "tablet" }
        }
        let lattice = try db.open(types)
        XCTAssertEqual(lattice.objects(FixtureDevice.self).count, 1)
        XCTAssertEqual(lattice.object(ofType: FixtureDevice.self, forPrimaryKey: device.id)?.label, "tablet")
        XCTAssertNil(lattice.object(ofType: FixtureDevice.self, forPrimaryKey: UUID()))
        XCTAssertNil(lattice.object(ofType: FixtureDevice.self, forPrimaryKey: "not a uuid"))
        XCTAssertNil(lattice.object(ofType: FixtureLogLine.self, forPrimaryKey: 1), "no primary key: nil")
    }

    func testAddContentsOfAndObjectsWithoutPrimaryKey() throws {
        let db = makeTempDatabase("write")
        do {
            let lattice = try db.open(types)
            try lattice.write {
                try lattice.add(contentsOf: (0..<100).map { n -> FixtureLogLine in
                    let line = FixtureLogLine()
                    line.text = "line \(n)"
                    line.level = n % 3
                    return line
                })
            }
            XCTAssertEqual(lattice.objects(FixtureLogLine.self).count, 100)
        }
        let lattice = try db.open(types)
        let lines = lattice.objects(FixtureLogLine.self)
        XCTAssertEqual(lines.count, 100)
        XCTAssertEqual(lines.map(\.text), (0..<100).map { "line \($0)" }, "insertion order is key order")
        XCTAssertEqual(lines.map(\.level).reduce(0, +), (0..<100).map { $0 % 3 }.reduce(0, +))
    }

    func testObjectKeysAreNeverReusedAcrossDeletesAndReopens() throws {
        let db = makeTempDatabase("write")
        var stale: FixtureLogLine?
        do {
            let lattice = try db.open(types)
            try lattice.write { try lattice.add(contentsOf: [FixtureLogLine(), FixtureLogLine(), FixtureLogLine()]) }
            stale = lattice.objects(FixtureLogLine.self)[2]
            XCTAssertEqual(lattice.objects(FixtureLogLine.self).map(\._key), [1, 2, 3])
            try lattice.write { try lattice.delete(stale!) }
            // A cancelled write does not consume keys either way it ends.
            try lattice.beginWrite()
            try lattice.add(FixtureLogLine())
            lattice.cancelWrite()
        }
        stale = nil
        let lattice = try db.open(types)
        try lattice.write {
            let line = FixtureLogLine()
            line.text = "new"
            try lattice.add(line)
        }
        XCTAssertEqual(lattice.objects(FixtureLogLine.self).map(\._key), [1, 2, 4])
        XCTAssertEqual(lattice.objects(FixtureLogLine.self).last?.text, "new")
    }

    func testAddingAnAlreadyManagedObjectDoesNothing() throws {
        let db = try seeded()
        let lattice = try db.open(types)
        let one = try XCTUnwrap(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 1))
        let second = try db.open(types)
        try lattice.write {
            try lattice.add(one)
            try lattice.add(one, update: .all)
        }
        let viaSecond = try XCTUnwrap(second.object(ofType: FixtureItem.self, forPrimaryKey: 2))
        try lattice.write { try lattice.add(viaSecond) }  // same file, another handle: also managed here
        XCTAssertEqual(lattice.objects(FixtureItem.self).count, 2)
    }

    // MARK: Update policies

    func testAddUpdatePolicies() throws {
        let db = try seeded()
        do {
            let lattice = try db.open(types)
            let existing = try XCTUnwrap(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 1))
            assertLatticeError(try lattice.write { try lattice.add(self.item(1, "dup")) },
                               .duplicatePrimaryKey(className: "FixtureItem", value: "1"))
            let modified = item(1, "one, modified", rank: 11)
            try lattice.write { try lattice.add(modified, update: .modified) }
            XCTAssertTrue(modified.lattice === lattice)
            XCTAssertEqual(modified, existing, "the added object is now the stored one")
            XCTAssertEqual(existing.name, "one, modified")
            XCTAssertEqual(existing.rank, 11)
            try lattice.write { try lattice.add(self.item(2, "two, all", rank: 21, note: "n"), update: .all) }
            try lattice.write { try lattice.add(self.item(3, "three (new via .all)"), update: .all) }
            try lattice.write { try lattice.add(self.person("Ann", 31), update: .modified) }
            XCTAssertEqual(lattice.objects(FixtureItem.self).count, 3)
        }
        let lattice = try db.open(types)
        XCTAssertEqual(lattice.objects(FixtureItem.self).count, 3)
        XCTAssertEqual(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 1)?.name, "one, modified")
        XCTAssertEqual(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 2)?.note, "n")
        XCTAssertEqual(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 3)?.name, "three (new via .all)")
        let ann = try XCTUnwrap(lattice.object(ofType: FixturePerson.self, forPrimaryKey: "Ann"))
        XCTAssertEqual(ann.age, 31)
        XCTAssertNil(ann.email, "add(update:) replaces every property, nil included")
        XCTAssertEqual(lattice.objects(FixturePerson.self).count, 1)
    }

    func testUpdatePoliciesNeedAPrimaryKey() throws {
        let db = makeTempDatabase("write")
        let lattice = try db.open(types)
        try lattice.write {
            assertLatticeError(try lattice.add(FixtureLogLine(), update: .modified),
                               .noPrimaryKey(className: "FixtureLogLine", operation: "add(_:update: .modified)"))
            assertLatticeError(try lattice.add(FixtureLogLine(), update: .all),
                               .noPrimaryKey(className: "FixtureLogLine", operation: "add(_:update: .all)"))
            assertLatticeError(try lattice.create(FixtureLogLine.self, value: ["text": "x"], update: .modified),
                               .noPrimaryKey(className: "FixtureLogLine", operation: "create(_:value:update: .modified)"))
            try lattice.add(FixtureLogLine(), update: .error)
        }
        XCTAssertEqual(lattice.objects(FixtureLogLine.self).count, 1)
    }

    // MARK: create

    func testCreateFromDictionaryAndArray() throws {
        let db = makeTempDatabase("write")
        let deviceID = UUID()
        do {
            let lattice = try db.open(types)
            try lattice.write {
                let a = try lattice.create(FixtureItem.self, value: ["id": 1, "name": "one", "rank": 5])
                XCTAssertTrue(a.lattice === lattice)
                XCTAssertEqual(a.note, nil)
                let b = try lattice.create(FixtureItem.self, value: [2, "two", 6, "note"] as [Any])
                XCTAssertEqual(b.note, "note")
                try lattice.create(FixturePerson.self, value: ["name": "Bob"])
                try lattice.create(FixtureDevice.self, value: ["id": deviceID.uuidString, "label": "d"])
                try lattice.create(FixtureLogLine.self)
            }
        }
        let lattice = try db.open(types)
        XCTAssertEqual(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 1)?.rank, 5)
        XCTAssertEqual(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 2)?.name, "two")
        XCTAssertEqual(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 2)?.note, "note")
        XCTAssertEqual(lattice.object(ofType: FixturePerson.self, forPrimaryKey: "Bob")?.age, 0)
        XCTAssertEqual(lattice.object(ofType: FixtureDevice.self, forPrimaryKey: deviceID)?.label, "d")
        XCTAssertEqual(lattice.objects(FixtureLogLine.self).count, 1)
    }

    func testCreatePartialUpdateAndNilClearing() throws {
        let db = try seeded()
        do {
            let lattice = try db.open(types)
            let ann = try XCTUnwrap(lattice.object(ofType: FixturePerson.self, forPrimaryKey: "Ann"))
            try lattice.write {
                let updated = try lattice.create(FixturePerson.self, value: ["name": "Ann", "age": 31], update: .modified)
                XCTAssertEqual(updated, ann)
            }
            XCTAssertEqual(ann.age, 31)
            XCTAssertEqual(ann.email, "ann@x", "keys left out are unchanged")
            try lattice.write { try lattice.create(FixturePerson.self, value: ["name": "Ann", "email": NSNull()], update: .all) }
            XCTAssertNil(ann.email, "nil clears an optional")
            XCTAssertEqual(ann.age, 31)
            try lattice.write { try lattice.create(FixtureItem.self, value: [1, "one!", 12, "x"] as [Any], update: .modified) }
            try lattice.write { try lattice.create(FixtureItem.self, value: ["id": 2, "note": String?.none as Any], update: .modified) }
            try lattice.write { try lattice.create(FixtureItem.self, value: ["id": 9, "name": "nine"], update: .modified) }
        }
        let lattice = try db.open(types)
        let ann = try XCTUnwrap(lattice.object(ofType: FixturePerson.self, forPrimaryKey: "Ann"))
        XCTAssertEqual(ann.age, 31)
        XCTAssertNil(ann.email)
        let one = try XCTUnwrap(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 1))
        XCTAssertEqual([one.name, "\(one.rank)", one.note ?? "nil"], ["one!", "12", "x"])
        let two = try XCTUnwrap(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 2))
        XCTAssertEqual(two.name, "two")
        XCTAssertEqual(two.rank, 20)
        XCTAssertEqual(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 9)?.name, "nine")
        XCTAssertEqual(lattice.objects(FixtureItem.self).count, 3)
    }

    func testCreateRejectsBadValuesAndLosesNothing() throws {
        let db = try seeded()
        do {
            let lattice = try db.open(types)
            let fixtureArray = "an array of at most 4 values, in declaration order (id, name, rank, note)"
            let cases: [(Any, Lattice.UpdatePolicy, LatticeError)] = [
                (["id": 5, "name": 7], .error,
                 .wrongType(className: "FixtureItem", property: "name", expected: "String", found: "Int")),
                (["id": "five"], .error,
                 .wrongType(className: "FixtureItem", property: "id", expected: "Int", found: "String")),
                (["id": "five"], .modified,
                 .wrongType(className: "FixtureItem", property: "id", expected: "Int", found: "String")),
                (["id": 5, "rank": 2.5], .error,
                 .wrongType(className: "FixtureItem", property: "rank", expected: "Int", found: "Double")),
                (["id": 1, "rank": "high"], .modified,
                 .wrongType(className: "FixtureItem", property: "rank", expected: "Int", found: "String")),
                (["id": 5, "name": NSNull()], .error,
                 .missingValue(className: "FixtureItem", property: "name")),
                (["id": 1, "name": NSNull()], .modified,
                 .missingValue(className: "FixtureItem", property: "name")),
                (["id": 5, "colour": "red"], .error,
                 .unknownProperty(className: "FixtureItem", property: "colour")),
                (["id": 1, "colour": "red"], .all,
                 .unknownProperty(className: "FixtureItem", property: "colour")),
                (["five"] as [Any], .error,
                 .wrongType(className: "FixtureItem", property: "id", expected: "Int", found: "String")),
                ([5, "five", 1, nil, 99] as [Any?], .error,
                 .wrongType(className: "FixtureItem", property: "(value)", expected: fixtureArray, found: "an array of 5")),
                ("a string", .error,
                 .wrongType(className: "FixtureItem", property: "(value)", expected: "[String: Any], [Any] or an object", found: "String")),
                (["id": 1, "name": "dup"], .error,
                 .duplicatePrimaryKey(className: "FixtureItem", value: "1")),
            ]
            for (value, policy, expected) in cases {
                assertLatticeError(try lattice.write {
                    try lattice.create(FixtureItem.self, value: ["id": 7, "name": "written before the error"])
                    try lattice.create(FixtureItem.self, value: value, update: policy)
                }, expected)
                XCTAssertFalse(lattice.isInWriteTransaction)
                XCTAssertNil(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 7), "rolled back for \(expected)")
            }
            assertLatticeError(try lattice.write { try lattice.create(FixturePerson.self, value: ["name": "Ann"]) },
                               .duplicatePrimaryKey(className: "FixturePerson", value: "'Ann'"))
            assertLatticeError(try lattice.write { try lattice.create(FixturePerson.self, value: ["name": "Ann", "age": NSNull()], update: .modified) },
                               .missingValue(className: "FixturePerson", property: "age"))
        }
        try assertSeedIntact(db)
    }

    // MARK: Duplicate primary keys

    func testDuplicatePrimaryKeysOfEveryKeyKind() throws {
        let db = try seeded()
        let deviceID = UUID()
        do {
            let lattice = try db.open(types)
            try lattice.write {
                let device = FixtureDevice()
                device.id = deviceID
                try lattice.add(device)
            }
            assertLatticeError(try lattice.write { try lattice.add(self.item(2, "again")) },
                               .duplicatePrimaryKey(className: "FixtureItem", value: "2"))
            assertLatticeError(try lattice.write { try lattice.add(self.person("Ann", 1)) },
                               .duplicatePrimaryKey(className: "FixturePerson", value: "'Ann'"))
            assertLatticeError(try lattice.write {
                let device = FixtureDevice()
                device.id = deviceID
                device.label = "clone"
                try lattice.add(device)
            }, .duplicatePrimaryKey(className: "FixtureDevice", value: "\(deviceID)"))
            // Within one transaction: the second of two new objects, and the whole write rolls back.
            assertLatticeError(try lattice.write {
                try lattice.add(contentsOf: [self.item(50, "a"), self.item(51, "b"), self.item(50, "c")])
            }, .duplicatePrimaryKey(className: "FixtureItem", value: "50"))
            assertLatticeError(try lattice.write {
                try lattice.add(self.person("Zed", 1))
                try lattice.add(self.person("Zed", 2))
            }, .duplicatePrimaryKey(className: "FixturePerson", value: "'Zed'"))
            XCTAssertNil(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 50))
            XCTAssertNil(lattice.object(ofType: FixturePerson.self, forPrimaryKey: "Zed"))
            XCTAssertEqual(lattice.object(ofType: FixtureDevice.self, forPrimaryKey: deviceID)?.label, "")
        }
        try assertSeedIntact(db)
    }

    func testLongStringPrimaryKeysSharingATruncatedIndexPrefix() throws {
        let db = makeTempDatabase("write")
        let prefix = String(repeating: "k", count: 600)
        do {
            let lattice = try db.open(types)
            try lattice.write {
                try lattice.add(person(prefix + "A", 1))
                try lattice.add(person(prefix + "B", 2))
                try lattice.add(person(prefix, 3))
            }
            assertLatticeError(try lattice.write { try lattice.add(self.person(prefix + "B", 9)) },
                               .duplicatePrimaryKey(className: "FixturePerson", value: "'\(prefix)B'"))
        }
        let lattice = try db.open(types)
        XCTAssertEqual(lattice.objects(FixturePerson.self).count, 3)
        XCTAssertEqual(lattice.object(ofType: FixturePerson.self, forPrimaryKey: prefix + "A")?.age, 1)
        XCTAssertEqual(lattice.object(ofType: FixturePerson.self, forPrimaryKey: prefix + "B")?.age, 2)
        XCTAssertEqual(lattice.object(ofType: FixturePerson.self, forPrimaryKey: prefix)?.age, 3)
        XCTAssertNil(lattice.object(ofType: FixturePerson.self, forPrimaryKey: prefix + "C"))
    }

    // MARK: Primary key changes

    func testChangingThePrimaryKeyOfAManagedObjectFailsTheCommit() throws {
        let db = try seeded()
        do {
            let lattice = try db.open(types)
            let one = try XCTUnwrap(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 1))
            assertLatticeError(try lattice.write {
                one.name = "renamed in the failed write"
                one.id = 99
                try lattice.add(self.item(3, "added in the failed write"))
            }, .primaryKeyChanged(className: "FixtureItem", property: "id"))
            XCTAssertFalse(lattice.isInWriteTransaction)
            XCTAssertEqual(one.id, 1)
            XCTAssertEqual(one.name, "one")
            XCTAssertNil(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 99))
            XCTAssertNil(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 3))

            let ann = try XCTUnwrap(lattice.object(ofType: FixturePerson.self, forPrimaryKey: "Ann"))
            try lattice.beginWrite()
            ann.name = "Anne"
            assertLatticeError(try lattice.commitWrite(), .primaryKeyChanged(className: "FixturePerson", property: "name"))
            XCTAssertFalse(lattice.isInWriteTransaction)
            XCTAssertEqual(ann.name, "Ann")

            // Setting the key to its current value is not a change.
            try lattice.write {
                one.id = 1
                ann.name = "Ann"
                ann.age = 30
            }
        }
        try assertSeedIntact(db)
    }

    // MARK: Objects from elsewhere, deleted objects

    func testObjectsManagedByAnotherFileAreRejected() throws {
        let db = try seeded()
        let otherDB = try seeded()
        do {
            let lattice = try db.open(types)
            let other = try otherDB.open(types)
            let foreign = try XCTUnwrap(other.object(ofType: FixtureItem.self, forPrimaryKey: 1))
            assertLatticeError(try lattice.write { try lattice.add(foreign) },
                               .objectFromAnotherLattice(className: "FixtureItem"))
            assertLatticeError(try lattice.write { try lattice.add(foreign, update: .modified) },
                               .objectFromAnotherLattice(className: "FixtureItem"))
            assertLatticeError(try lattice.write { try lattice.delete(foreign) },
                               .objectFromAnotherLattice(className: "FixtureItem"))
            assertLatticeError(try lattice.write { try lattice.delete(FixtureItem()) },
                               .objectNotManaged(className: "FixtureItem", operation: "delete(_:)"))
            XCTAssertFalse(foreign.isInvalidated)

            let inMemory = try Lattice(configuration: .init(inMemoryIdentifier: "write-\(UUID())", objectTypes: types))
            try inMemory.write { try inMemory.add(self.item(1, "memory")) }
            let memoryItem = try XCTUnwrap(inMemory.objects(FixtureItem.self).first)
            assertLatticeError(try lattice.write { try lattice.add(memoryItem) },
                               .objectFromAnotherLattice(className: "FixtureItem"))
        }
        try assertSeedIntact(db)
        try assertSeedIntact(otherDB)
    }

    func testUsingADeletedObjectThrows() throws {
        let db = try seeded()
        do {
            let lattice = try db.open(types)
            let two = try XCTUnwrap(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 2))
            let twoAgain = try XCTUnwrap(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 2))
            try lattice.write { try lattice.delete(two) }
            XCTAssertTrue(two.isInvalidated)
            XCTAssertTrue(twoAgain.isInvalidated)
            assertLatticeError(try lattice.write { try lattice.delete(two) }, .objectInvalidated(className: "FixtureItem"))
            assertLatticeError(try lattice.write { try lattice.add(twoAgain) }, .objectInvalidated(className: "FixtureItem"))
            assertLatticeError(try lattice.write { try lattice.add(two, update: .all) }, .objectInvalidated(className: "FixtureItem"))
        }
        let lattice = try db.open(types)
        XCTAssertNil(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 2))
        XCTAssertEqual(lattice.objects(FixtureItem.self).count, 1)
        XCTAssertEqual(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 1)?.name, "one")
    }

    /// A deleted object stays invalidated. Re-adding an object with the same integer primary
    /// key (which is the object key) must not revive old instances with the new object's values.
    func testDeletedObjectStaysInvalidatedWhenItsPrimaryKeyIsReused() throws {
        let db = try seeded()
        let lattice = try db.open(types)
        let two = try XCTUnwrap(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 2))
        try lattice.write { try lattice.delete(two) }
        XCTAssertTrue(two.isInvalidated)
        try lattice.write { try lattice.add(self.item(2, "two again")) }
        XCTAssertTrue(two.isInvalidated, "an instance of the deleted object must not become the new object")
        let again = try XCTUnwrap(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 2))
        XCTAssertEqual(again.name, "two again")
        XCTAssertNotEqual(two, again, "the deleted object is not the new one")
        XCTAssertFalse(two.isSameObject(as: again))
        XCTAssertFalse(Set([two]).contains(again))
        XCTAssertEqual(again, lattice.objects(FixtureItem.self).filter { $0.id == 2 }.first)
        // Same for a String primary key (object keys are never reused there).
        let ann = try XCTUnwrap(lattice.object(ofType: FixturePerson.self, forPrimaryKey: "Ann"))
        try lattice.write { try lattice.delete(ann) }
        try lattice.write { try lattice.add(self.person("Ann", 5)) }
        XCTAssertTrue(ann.isInvalidated)
    }

    // MARK: delete

    func testDeleteObjectSequenceAndAll() throws {
        let db = try seeded()
        do {
            let lattice = try db.open(types)
            try lattice.write {
                try lattice.add(contentsOf: (3...10).map { self.item($0, "n\($0)", rank: $0) })
                try lattice.add(contentsOf: [FixtureLogLine(), FixtureLogLine()])
            }
            let one = try XCTUnwrap(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 1))
            try lattice.write { try lattice.delete(one) }
            XCTAssertNil(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 1))
            let evens = lattice.objects(FixtureItem.self).filter { $0.id % 2 == 0 }
            try lattice.write { try lattice.delete(evens) }
            XCTAssertEqual(lattice.objects(FixtureItem.self).map(\.id), [3, 5, 7, 9])
            try lattice.write { try lattice.delete(lattice.objects(FixtureLogLine.self)) }
            XCTAssertEqual(lattice.objects(FixtureLogLine.self).count, 0)
        }
        do {
            let lattice = try db.open(types)
            XCTAssertEqual(lattice.objects(FixtureItem.self).map(\.id), [3, 5, 7, 9])
            XCTAssertEqual(lattice.objects(FixturePerson.self).count, 1)
            XCTAssertEqual(lattice.objects(FixtureLogLine.self).count, 0)
            let seven = try XCTUnwrap(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 7))
            try lattice.write { try lattice.deleteAll() }
            XCTAssertTrue(lattice.isEmpty)
            XCTAssertTrue(seven.isInvalidated)
            XCTAssertNil(lattice.object(ofType: FixturePerson.self, forPrimaryKey: "Ann"))
        }
        let lattice = try db.open(types)
        XCTAssertTrue(lattice.isEmpty)
        XCTAssertNil(lattice.object(ofType: FixturePerson.self, forPrimaryKey: "Ann"))
        // The emptied file takes new objects with the old keys.
        try lattice.write {
            try lattice.add(self.person("Ann", 1))
            try lattice.add(self.item(7, "seven"))
        }
        XCTAssertEqual(lattice.object(ofType: FixturePerson.self, forPrimaryKey: "Ann")?.age, 1)
        XCTAssertEqual(lattice.objects(FixtureItem.self).count, 1)
    }

    func testIndexesFollowUpdatesAndDeletes() throws {
        let db = makeTempDatabase("write")
        let lattice = try db.open(types)
        let info = try XCTUnwrap(lattice.classesByName["FixtureItem"])
        let rank = try XCTUnwrap(info.property(named: "rank"))
        func keys(rank value: Int) throws -> [Int64] {
            var payload: [UInt8] = []
            value._latticeEncode(into: &payload)
            return try lattice.indexLookup(rank, payload: payload).sorted()
        }
        try lattice.write {
            try lattice.add(contentsOf: [item(1, "a", rank: 5), item(2, "b", rank: 5), item(3, "c", rank: 6)])
        }
        XCTAssertEqual(try keys(rank: 5), [1, 2])
        XCTAssertEqual(try keys(rank: 6), [3])
        try lattice.write { lattice.object(ofType: FixtureItem.self, forPrimaryKey: 2)!.rank = 6 }
        XCTAssertEqual(try keys(rank: 5), [1])
        XCTAssertEqual(try keys(rank: 6), [2, 3])
        try lattice.write { try lattice.add(self.item(1, "a", rank: 7), update: .modified) }
        XCTAssertEqual(try keys(rank: 5), [])
        XCTAssertEqual(try keys(rank: 7), [1])
        try lattice.write { try lattice.create(FixtureItem.self, value: ["id": 3, "rank": 7], update: .modified) }
        XCTAssertEqual(try keys(rank: 7), [1, 3])
        try lattice.write { try lattice.delete(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 3)!) }
        XCTAssertEqual(try keys(rank: 7), [1])
        lattice.beginWriteForTest { try lattice.deleteAll() }
        XCTAssertEqual(try keys(rank: 7), [])
        XCTAssertEqual(try keys(rank: 6), [])
    }

    func testAFailedAddLeavesTheObjectUnmanagedAndTheTransactionUsable() throws {
        let db = try seeded()
        do {
            let lattice = try db.open(types)
            let duplicate = item(1, "duplicate")
            let fresh = item(3, "three")
            try lattice.beginWrite()
            assertLatticeError(try lattice.add(duplicate), .duplicatePrimaryKey(className: "FixtureItem", value: "1"))
            XCTAssertNil(duplicate.lattice, "an object that failed to be added stays unmanaged")
            duplicate.name = "still a plain object"
            try lattice.add(fresh)
            try lattice.commitWrite()
            XCTAssertEqual(duplicate.name, "still a plain object")
            XCTAssertTrue(fresh.lattice === lattice)
        }
        let lattice = try db.open(types)
        XCTAssertEqual(lattice.objects(FixtureItem.self).count, 3)
        XCTAssertEqual(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 1)?.name, "one")
        XCTAssertEqual(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 3)?.name, "three")
    }

    func testDeletingWhileIteratingResults() throws {
        let db = makeTempDatabase("write")
        let lattice = try db.open(types)
        try lattice.write { try lattice.add(contentsOf: (1...20).map { self.item($0, "n\($0)") }) }
        let results = lattice.objects(FixtureItem.self)
        var visited: [Int] = []
        try lattice.write {
            for object in results {
                let id = object.id
                visited.append(id)
                if id % 2 == 1 {
                    try lattice.delete(object)
                    // Deleting the next object too: the loop skips it instead of handing out a deleted object.
                    if id % 4 == 1, let next = lattice.object(ofType: FixtureItem.self, forPrimaryKey: id + 1) {
                        try lattice.delete(next)
                    }
                }
            }
        }
        XCTAssertEqual(visited, (1...20).filter { $0 % 4 != 2 })
        XCTAssertEqual(results.map(\.id), (1...20).filter { $0 % 4 == 0 })
        XCTAssertEqual(try db.open(types).objects(FixtureItem.self).map(\.id), [4, 8, 12, 16, 20])
    }

    func testResultsBasics() throws {
        let db = makeTempDatabase("write")
        let lattice = try db.open(types)
        let results = lattice.objects(FixtureItem.self)
        XCTAssertTrue(results.isEmpty)
        XCTAssertNil(results.first)
        XCTAssertEqual(results.description, "Results<FixtureItem> [\n\n]")
        try lattice.write { try lattice.add(contentsOf: [self.item(2, "b"), self.item(1, "a")]) }
        XCTAssertFalse(results.isEmpty)
        XCTAssertEqual(results.count, 2)
        XCTAssertEqual(results.first?.name, "a")
        XCTAssertEqual(results.last?.name, "b")
        let b = try XCTUnwrap(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 2))
        XCTAssertEqual(results.index(of: b), 1)
        XCTAssertNil(results.index(of: item(2, "unmanaged")))
        XCTAssertEqual(results.description,
                       "Results<FixtureItem> [\n\t[0] FixtureItem { id = 1; name = a; rank = 0; note = nil },\n"
                           + "\t[1] FixtureItem { id = 2; name = b; rank = 0; note = nil }\n]")
        try lattice.write { try lattice.delete(b) }
        XCTAssertNil(results.index(of: b))
        XCTAssertEqual(results.count, 1)
    }

    // MARK: Writing outside a write, read-only handles

    func testWritesOutsideAWriteTransactionThrow() throws {
        let db = try seeded()
        do {
            let lattice = try db.open(types)
            let one = try XCTUnwrap(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 1))
            assertLatticeError(try lattice.add(item(5, "x")), .notInWriteTransaction(operation: "add(_:)"))
            assertLatticeError(try lattice.add(contentsOf: [item(5, "x")]), .notInWriteTransaction(operation: "add(_:)"))
            assertLatticeError(try lattice.create(FixtureItem.self, value: ["id": 5]),
                               .notInWriteTransaction(operation: "create(_:value:)"))
            assertLatticeError(try lattice.delete(one), .notInWriteTransaction(operation: "delete(_:)"))
            assertLatticeError(try lattice.delete([one]), .notInWriteTransaction(operation: "delete(_:)"))
            assertLatticeError(try lattice.deleteAll(), .notInWriteTransaction(operation: "deleteAll()"))
            assertLatticeError(try lattice.commitWrite(), .notInWriteTransaction(operation: "commitWrite()"))
            lattice.cancelWrite()  // nothing to cancel: harmless
        }
        try assertSeedIntact(db)
    }

    func testReadOnlyHandleRefusesEveryWrite() throws {
        let db = try seeded()
        do {
            let lattice = try db.open(types, readOnly: true)
            let path = try storagePath(of: db)
            let one = try XCTUnwrap(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 1))
            XCTAssertEqual(one.name, "one")
            assertLatticeError(try lattice.write { try lattice.add(self.item(5, "x")) },
                               .readOnly(path: path, operation: "beginWrite()"))
            assertLatticeError(try lattice.beginWrite(), .readOnly(path: path, operation: "beginWrite()"))
            XCTAssertFalse(lattice.isInWriteTransaction)
            assertLatticeError(try lattice.add(item(5, "x")), .readOnly(path: path, operation: "add(_:)"))
            assertLatticeError(try lattice.create(FixtureItem.self, value: ["id": 5]),
                               .readOnly(path: path, operation: "create(_:value:)"))
            assertLatticeError(try lattice.delete(one), .readOnly(path: path, operation: "delete(_:)"))
            assertLatticeError(try lattice.deleteAll(), .readOnly(path: path, operation: "deleteAll()"))
        }
        try assertSeedIntact(db)
    }
}

extension Lattice {
    /// `write` for a block whose errors the caller asserts on separately (fails the test on a throw).
    fileprivate func beginWriteForTest(_ block: () throws -> Void, file: StaticString = #filePath, line: UInt = #line) {
        do {
            try write(block)
        } catch {
            XCTFail("write failed: \(error)", file: file, line: line)
        }
    }
}

final class WriteOptionalKeys: Object {
    @Persisted(primaryKey: true) var id: Int?
    @Persisted var text = ""
}

final class WriteOptionalStringKey: Object {
    @Persisted(primaryKey: true) var code: String?
    @Persisted var text = ""
}

final class WriteOptionalKeyTests: XCTestCase {
    func testOptionalPrimaryKeysIncludingNil() throws {
        let db = makeTempDatabase("write")
        let types: [Object.Type] = [WriteOptionalKeys.self, WriteOptionalStringKey.self]
        do {
            let lattice = try db.open(types)
            try lattice.write {
                try lattice.create(WriteOptionalKeys.self, value: ["id": NSNull(), "text": "nil key"])
                try lattice.create(WriteOptionalKeys.self, value: ["id": 0, "text": "zero"])
                try lattice.create(WriteOptionalKeys.self, value: ["id": Int.min, "text": "min"])
                try lattice.create(WriteOptionalStringKey.self, value: ["code": NSNull(), "text": "nil code"])
                try lattice.create(WriteOptionalStringKey.self, value: ["code": "", "text": "empty code"])
            }
            assertLatticeError(try lattice.write { try lattice.create(WriteOptionalKeys.self, value: ["text": "second nil"]) },
                               .duplicatePrimaryKey(className: "WriteOptionalKeys", value: "nil"))
            assertLatticeError(try lattice.write { try lattice.create(WriteOptionalStringKey.self, value: ["code": ""]) },
                               .duplicatePrimaryKey(className: "WriteOptionalStringKey", value: "''"))
            try lattice.write {
                try lattice.create(WriteOptionalKeys.self, value: ["id": NSNull(), "text": "nil key, updated"], update: .modified)
            }
        }
        let lattice = try db.open(types)
        XCTAssertEqual(lattice.objects(WriteOptionalKeys.self).count, 3)
        XCTAssertEqual(lattice.object(ofType: WriteOptionalKeys.self, forPrimaryKey: Int?.none)?.text, "nil key, updated")
        XCTAssertEqual(lattice.object(ofType: WriteOptionalKeys.self, forPrimaryKey: 0)?.text, "zero")
        XCTAssertEqual(lattice.object(ofType: WriteOptionalKeys.self, forPrimaryKey: Int.min)?.text, "min")
        XCTAssertEqual(lattice.object(ofType: WriteOptionalStringKey.self, forPrimaryKey: String?.none)?.text, "nil code")
        XCTAssertEqual(lattice.object(ofType: WriteOptionalStringKey.self, forPrimaryKey: "")?.text, "empty code")
        XCTAssertNil(lattice.object(ofType: WriteOptionalStringKey.self, forPrimaryKey: "x"))
    }
}

/// A class that links nowhere (values and collections of values only).
final class ClearNote: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted(indexed: true) var tag = ""
    @Persisted var words = List<String>()
    @Persisted var counts = Map<String, Int>()
    @Persisted var marks = MutableSet<Int>()
    @Persisted(originProperty: "note") var owners: LinkingObjects<ClearOwner>
    @Persisted(originProperty: "notes") var listers: LinkingObjects<ClearOwner>
}

/// A class that links to `ClearNote`.
final class ClearOwner: Object {
    @Persisted var name = ""
    @Persisted var note: ClearNote?
    @Persisted var notes = List<ClearNote>()
}

final class ClearPart: EmbeddedObject {
    @Persisted var size = 0
}

/// A class with an embedded object.
final class ClearHolder: Object {
    @Persisted var name = ""
    @Persisted var part: ClearPart?
}

/// Deleting every object of a class, as `lattice.delete(lattice.objects(T.self))` does it.
final class DeleteEveryObjectTests: XCTestCase {
    private let types: [Object.Type] = [ClearNote.self, ClearOwner.self, ClearPart.self, ClearHolder.self]

    private func fill(_ lattice: Lattice, _ ids: Range<Int>) throws {
        try lattice.write {
            for id in ids {
                try lattice.create(ClearNote.self, value: ["id": id, "tag": id % 2 == 0 ? "even" : "odd", "words": ["w\(id)", "x"],
                                                           "counts": ["a": id], "marks": [id, id + 1]])
            }
        }
    }

    func testDeletingEveryObjectOfAClassNothingLinksTo() throws {
        let db = makeTempDatabase("clear")
        do {
            let lattice = try db.open(types)
            try fill(lattice, 0..<50)
            try lattice.write { _ = try lattice.create(ClearOwner.self, value: ["name": "keeps"]) }
            let held = try XCTUnwrap(lattice.object(ofType: ClearNote.self, forPrimaryKey: 7))
            var deletions: [Int] = []
            var heldDeleted = false
            let token = lattice.objects(ClearNote.self).observe { change in
                if case .update(_, let deleted, _, _) = change { deletions = deleted }
            }
            let objectToken = held.observe { change in if case .deleted = change { heldDeleted = true } }
            lattice.refresh()
            // Sorted results are every object too; a write cancelled after it loses nothing.
            try lattice.beginWrite()
            try lattice.delete(lattice.objects(ClearNote.self).sorted(byKeyPath: "tag"))
            XCTAssertEqual(lattice.objects(ClearNote.self).count, 0)
            lattice.cancelWrite()
            XCTAssertEqual(lattice.objects(ClearNote.self).count, 50)
            XCTAssertEqual([held.words.count, held.counts.count, held.marks.count], [2, 1, 2])

            try lattice.write { try lattice.delete(lattice.objects(ClearNote.self)) }
            lattice.refresh()
            XCTAssertEqual(deletions, Array(0..<50), "observers hear of every deletion")
            XCTAssertTrue(heldDeleted)
            XCTAssertTrue(held.isInvalidated)
            XCTAssertEqual(lattice.objects(ClearNote.self).count, 0)
            XCTAssertEqual(try lattice.objects(ClearNote.self).filter("tag == 'even'").count, 0)
            XCTAssertEqual(lattice.objects(ClearOwner.self).first?.name, "keeps", "other classes keep their objects")
            // The same handle, which read those collections, sees a new object's empty.
            let reborn = try lattice.write { try lattice.create(ClearNote.self, value: ["id": 7]) }
            XCTAssertEqual([reborn.words.count, reborn.counts.count, reborn.marks.count], [0, 0, 0])
            try lattice.write { try lattice.delete(lattice.objects(ClearNote.self)) }
            token.invalidate()
            objectToken.invalidate()
        }
        // From disk: gone, and the same keys take new objects whose collections start empty.
        let lattice = try db.open(types)
        XCTAssertEqual(lattice.objects(ClearNote.self).count, 0)
        XCTAssertNil(lattice.object(ofType: ClearNote.self, forPrimaryKey: 7))
        try lattice.write { _ = try lattice.create(ClearNote.self, value: ["id": 7, "tag": "even"]) }
        let again = try XCTUnwrap(lattice.object(ofType: ClearNote.self, forPrimaryKey: 7))
        XCTAssertEqual(again.words.count, 0)
        XCTAssertEqual(again.counts.count, 0)
        XCTAssertEqual(again.marks.count, 0)
        XCTAssertEqual(try lattice.objects(ClearNote.self).filter("tag == 'even'").map(\.id), [7])
        XCTAssertEqual(lattice.verify(), [])
    }

    func testDeletingEveryObjectOfAClassThatLinksOutRemovesItsBacklinks() throws {
        let db = makeTempDatabase("clear")
        do {
            let lattice = try db.open(types)
            try fill(lattice, 0..<10)
            func note(_ id: Int) -> ClearNote? { lattice.object(ofType: ClearNote.self, forPrimaryKey: id) }
            try lattice.write {
                _ = try lattice.create(ClearOwner.self, value: ["name": "a", "note": note(3) as Any, "notes": [note(1), note(2), note(2)].compactMap { $0 }])
                _ = try lattice.create(ClearOwner.self, value: ["name": "b", "note": note(3) as Any])
                _ = try lattice.create(ClearHolder.self, value: ["name": "h", "part": ["size": 4]])
            }
            XCTAssertEqual(note(3)?.owners.count, 2)
            XCTAssertEqual(note(2)?.listers.count, 2)
            try lattice.write { try lattice.delete(lattice.objects(ClearOwner.self)) }
            XCTAssertEqual(lattice.objects(ClearOwner.self).count, 0)
            XCTAssertEqual(lattice.objects(ClearNote.self).count, 10, "deleting the source leaves the target")
            XCTAssertEqual(note(3)?.owners.count, 0)
            XCTAssertEqual(note(2)?.listers.count, 0)
            XCTAssertEqual(try lattice.objects(ClearNote.self).filter("owners.@count > 0 OR listers.@count > 0").count, 0)
            // An embedded object goes with its parent.
            try lattice.write { try lattice.delete(lattice.objects(ClearHolder.self)) }
            XCTAssertEqual(lattice.objects(ClearHolder.self).count, 0)
            XCTAssertEqual(lattice.verify(), [])
        }
        let lattice = try db.open(types)
        XCTAssertEqual(lattice.objects(ClearOwner.self).count, 0)
        XCTAssertEqual(lattice.object(ofType: ClearNote.self, forPrimaryKey: 3)?.owners.count, 0)
        XCTAssertEqual(lattice.verify(), [])
        // Nothing links to the notes now: they go at once too.
        try lattice.write { try lattice.delete(lattice.objects(ClearNote.self)) }
        XCTAssertEqual(lattice.objects(ClearNote.self).count, 0)
        XCTAssertEqual(lattice.verify(), [])
    }

    func testDeletingEveryObjectOfAClassSomethingLinksToClearsTheLinks() throws {
        let db = makeTempDatabase("clear")
        let lattice = try db.open(types)
        try fill(lattice, 0..<10)
        try lattice.write {
            _ = try lattice.create(ClearOwner.self, value: ["name": "o", "note": lattice.object(ofType: ClearNote.self, forPrimaryKey: 3) as Any])
        }
        try lattice.write { try lattice.delete(lattice.objects(ClearNote.self)) }
        XCTAssertEqual(lattice.objects(ClearNote.self).count, 0)
        XCTAssertNil(lattice.objects(ClearOwner.self).first?.note)
        XCTAssertEqual(lattice.verify(), [])
        // Filtered results delete their objects only.
        try fill(lattice, 0..<10)
        try lattice.write { try lattice.delete(lattice.objects(ClearNote.self).filter("tag == 'odd'")) }
        XCTAssertEqual(lattice.objects(ClearNote.self).map(\.id).sorted(), [0, 2, 4, 6, 8])
        XCTAssertEqual(try db.open(types).objects(ClearNote.self).count, 5)
    }
}
