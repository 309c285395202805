import Foundation
import XCTest
@testable import Lattice

// What `Migration.enumerateObjects` visits after (and while) the block deletes objects, and class names
// the schemas do not know: Realm's semantics, which Realm migration blocks rely on (`new!`).

enum EnumerationV0 {
    final class StringItem: Object {
        @Persisted var stringCol = ""
    }

    final class IntItem: Object {
        @Persisted var intCol = 0
    }

    final class BoolItem: Object {
        @Persisted var boolCol = false
    }

    final class Retired: Object {
        @Persisted var what = ""
    }
}

/// Objects of a migration block kept between its calls (the block is `@Sendable`; it runs on the
/// opening thread only).
private final class Kept: @unchecked Sendable {
    var objects: [MigrationObject] = []
    var count = 0
}

final class MigrationEnumerationTests: XCTestCase {
    private let types: [Object.Type] = [EnumerationV0.StringItem.self, EnumerationV0.IntItem.self, EnumerationV0.BoolItem.self]

    private func populate(_ db: TempDatabase, _ types: [Object.Type]? = nil) throws {
        let lattice = try Lattice(configuration: db.configuration(types ?? self.types))
        try lattice.write {
            for s in ["1", "2", "3"] { try lattice.create(EnumerationV0.StringItem.self, value: [s]) }
            for i in [1, 2, 3] { try lattice.create(EnumerationV0.IntItem.self, value: [i]) }
            for b in [true, false, true] { try lattice.create(EnumerationV0.BoolItem.self, value: [b]) }
        }
    }

    /// Opens `db` at version 1 with `block` (the schema unchanged), then reopens it from disk.
    private func migrate(_ db: TempDatabase, _ types: [Object.Type]? = nil, _ block: @escaping MigrationBlock) throws -> Lattice {
        var config = db.configuration(types ?? self.types, schemaVersion: 1)
        config.migrationBlock = block
        _ = try Lattice(configuration: config)
        return try Lattice(configuration: db.configuration(types ?? self.types, schemaVersion: 1))
    }

    func testObjectsDeletedByAnEarlierEnumerationAreNotVisited() throws {
        let db = makeTempDatabase()
        try populate(db)
        let kept = Kept()
        let lattice = try migrate(db) { migration, _ in
            migration.enumerateObjects(ofType: "StringItem") { old, new in
                XCTAssertEqual(new!["stringCol"] as? String, old!["stringCol"] as? String)
                if old!["stringCol"] as? String == "2" { migration.delete(new!) }
            }
            kept.count = 0
            migration.enumerateObjects(ofType: "StringItem") { old, new in
                XCTAssertEqual(new!["stringCol"] as? String, old!["stringCol"] as? String)
                kept.count += 1
            }
            XCTAssertEqual(kept.count, 2)

            kept.count = 0
            migration.enumerateObjects(ofType: "IntItem") { old, new in
                if old!["intCol"] as? Int == 1 { migration.delete(new!) }
            }
            migration.enumerateObjects(ofType: "IntItem") { old, new in
                XCTAssertEqual(new!["intCol"] as? Int, old!["intCol"] as? Int)
                kept.count += 1
            }
            XCTAssertEqual(kept.count, 2)

            migration.enumerateObjects(ofType: "BoolItem") { _, new in migration.delete(new!) }
            migration.enumerateObjects(ofType: "BoolItem") { _, _ in XCTFail("every BoolItem was deleted") }
        }
        XCTAssertEqual(lattice.objects(EnumerationV0.StringItem.self).map(\.stringCol).sorted(), ["1", "3"])
        XCTAssertEqual(lattice.objects(EnumerationV0.IntItem.self).map(\.intCol).sorted(), [2, 3])
        XCTAssertEqual(lattice.objects(EnumerationV0.BoolItem.self).count, 0)
    }

    func testObjectsCreatedInPlaceOfDeletedOnesAreNotVisitedEither() throws {
        let db = makeTempDatabase()
        try populate(db)
        let kept = Kept()
        let lattice = try migrate(db) { migration, _ in
            migration.enumerateObjects(ofType: "StringItem") { old, new in
                if old!["stringCol"] as? String == "2" {
                    migration.delete(new!)
                    migration.create("StringItem", value: ["A"])
                }
            }
            migration.enumerateObjects(ofType: "StringItem") { old, new in
                XCTAssertEqual(new!["stringCol"] as? String, old!["stringCol"] as? String)
                kept.count += 1
            }
            XCTAssertEqual(kept.count, 2)
            migration.enumerateObjects(ofType: "BoolItem") { _, new in
                migration.delete(new!)
                migration.create("BoolItem", value: [false])
            }
            migration.enumerateObjects(ofType: "BoolItem") { _, _ in XCTFail("every old BoolItem was deleted") }
        }
        XCTAssertEqual(lattice.objects(EnumerationV0.StringItem.self).map(\.stringCol).sorted(), ["1", "3", "A"])
        XCTAssertEqual(lattice.objects(EnumerationV0.BoolItem.self).map(\.boolCol), [false, false, false])
    }

    func testDeleteDataHidesEveryOldObject() throws {
        let db = makeTempDatabase()
        try populate(db)
        let kept = Kept()
        let lattice = try migrate(db) { migration, _ in
            migration.enumerateObjects(ofType: "StringItem") { _, _ in kept.count += 1 }
            XCTAssertEqual(kept.count, 3)
            XCTAssertTrue(migration.deleteData(forType: "StringItem"))
            migration.create("StringItem", value: ["A"])
            migration.enumerateObjects(ofType: "StringItem") { _, _ in XCTFail("deleteData deleted every old object") }
        }
        XCTAssertEqual(lattice.objects(EnumerationV0.StringItem.self).map(\.stringCol), ["A"])
    }

    /// An object the block deletes during an enumeration, before its turn, is skipped; one deleted after
    /// its turn was visited already.
    func testAnObjectDeletedLaterInTheSameEnumerationIsSkipped() throws {
        let db = makeTempDatabase()
        try populate(db)
        let kept = Kept()
        let visited = Locked<[String]>([])
        let lattice = try migrate(db) { migration, _ in
            migration.enumerateObjects(ofType: "StringItem") { _, new in kept.objects.append(new!) }
            migration.enumerateObjects(ofType: "StringItem") { old, new in
                let value = old!["stringCol"] as? String ?? "?"
                visited.withLock { $0.append(value + "=" + (new!["stringCol"] as? String ?? "?")) }
                if value == "1" { migration.delete(kept.objects[2]) }  // "3", not visited yet
                if value == "2" { migration.delete(kept.objects[0]) }  // "1", visited already
            }
            kept.objects = []
            // deleteData during an enumeration: nothing after the current object is visited.
            kept.count = 0
            migration.enumerateObjects(ofType: "IntItem") { _, _ in
                kept.count += 1
                XCTAssertTrue(migration.deleteData(forType: "IntItem"))
            }
            XCTAssertEqual(kept.count, 1)
        }
        XCTAssertEqual(visited.withLock { $0 }, ["1=1", "2=2"])
        XCTAssertEqual(lattice.objects(EnumerationV0.StringItem.self).map(\.stringCol), ["2"])
        XCTAssertEqual(lattice.objects(EnumerationV0.IntItem.self).count, 0)
    }

    /// A class keyed by its integer primary key: an object created with a deleted object's key is
    /// neither the deleted object nor visited.
    func testAKeyTakenOverByACreatedObjectIsNotVisited() throws {
        let db = makeTempDatabase()
        do {
            let lattice = try Lattice(configuration: db.configuration([FixtureItem.self]))
            try lattice.write {
                for id in 1...3 { try lattice.create(FixtureItem.self, value: ["id": id, "name": "old \(id)"]) }
            }
        }
        let visited = Locked<[Int]>([])
        let lattice = try migrate(db, [FixtureItem.self]) { migration, _ in
            migration.enumerateObjects(ofType: "FixtureItem") { old, new in
                if old!["id"] as? Int == 2 {
                    migration.delete(new!)
                    migration.create("FixtureItem", value: ["id": 2, "name": "new 2"])
                }
            }
            migration.enumerateObjects(ofType: "FixtureItem") { old, _ in visited.withLock { $0.append(old!["id"] as? Int ?? -1) } }
        }
        XCTAssertEqual(visited.withLock { $0 }, [1, 3])
        XCTAssertEqual(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 2)?.name, "new 2")
    }

    /// A class removed from the schema is enumerated with no new objects, until `deleteData` deletes them.
    func testARemovedClassIsEnumeratedUntilItsDataIsDeleted() throws {
        let db = makeTempDatabase()
        do {
            let lattice = try Lattice(configuration: db.configuration(types + [EnumerationV0.Retired.self]))
            try lattice.write {
                try lattice.create(EnumerationV0.Retired.self, value: ["a"])
                try lattice.create(EnumerationV0.Retired.self, value: ["b"])
            }
        }
        let visited = Locked<[String]>([])
        let lattice = try migrate(db) { migration, _ in
            migration.enumerateObjects(ofType: "Retired") { old, new in
                XCTAssertNil(new)
                visited.withLock { $0.append(old!["what"] as? String ?? "?") }
            }
            XCTAssertTrue(migration.deleteData(forType: "Retired"))
            XCTAssertFalse(migration.deleteData(forType: "Retired"))
            migration.enumerateObjects(ofType: "Retired") { _, _ in XCTFail("deleted") }
        }
        XCTAssertEqual(visited.withLock { $0 }, ["a", "b"])
        XCTAssertNil(lattice.schema["Retired"])
    }

    /// A class in neither schema: enumerating it visits nothing and `deleteData` returns false; neither
    /// fails the migration (Realm's "shouldn't throw").
    func testUnknownClassNamesAreNoOps() throws {
        let db = makeTempDatabase()
        try populate(db)
        let lattice = try migrate(db) { migration, _ in
            migration.enumerateObjects(ofType: "NoSuchClass") { _, _ in XCTFail("nothing to enumerate") }
            XCTAssertFalse(migration.deleteData(forType: "NoSuchClass"))
            migration.enumerateObjects(ofType: "StringItem") { _, new in new!["stringCol"] = "migrated" }
        }
        XCTAssertEqual(lattice.configuration.schemaVersion, 1)
        XCTAssertEqual(lattice.objects(EnumerationV0.StringItem.self).map(\.stringCol), ["migrated", "migrated", "migrated"])
        XCTAssertEqual(lattice.objects(EnumerationV0.IntItem.self).count, 3)
    }

    /// In a migration block integers of every width read as `Int` (Realm blocks cast `as! Int`); writes
    /// take any integer type that fits the stored width, and one that does not fails the migration.
    /// Compiled models keep their widths in typed access.
    func testIntegerPropertiesOfEveryWidthReadAsInt() throws {
        let db = makeTempDatabase()
        do {
            let lattice = try Lattice(configuration: db.configuration([CodecAllTypes.self]))
            try lattice.write {
                try lattice.create(CodecAllTypes.self, value: ["id": 1, "int": 1, "int8": Int8(-8), "int16": Int16(16), "int32": Int32(-32),
                                                               "int64": Int64.min, "optInt8": Int8(8), "level": CodecLevel.high])
            }
        }
        var overflow = db.configuration([CodecAllTypes.self], schemaVersion: 1)
        overflow.migrationBlock = { migration, _ in
            migration.enumerateObjects(ofType: "CodecAllTypes") { _, new in new!["int8"] = 300 }
        }
        assertLatticeError(try Lattice(configuration: overflow),
                           .wrongType(className: "CodecAllTypes", property: "int8", expected: "Int8", found: "Int"))
        let lattice = try migrate(db, [CodecAllTypes.self]) { migration, _ in
            migration.enumerateObjects(ofType: "CodecAllTypes") { old, new in
                for object in [old!, new!] {
                    XCTAssertEqual(object["int"] as! Int, 1)
                    XCTAssertEqual(object["int8"] as! Int, -8)
                    XCTAssertEqual(object["int16"] as! Int, 16)
                    XCTAssertEqual(object["int32"] as! Int, -32)
                    XCTAssertEqual(object["int64"] as! Int, Int.min)
                    XCTAssertEqual(object["optInt8"] as! Int, 8)
                    XCTAssertNil(object["optInt16"] ?? nil)
                    XCTAssertEqual(object["level"] as! Int, CodecLevel.high.rawValue)
                    XCTAssertEqual(object.value(forKey: "int16") as? Int, 16)
                }
                new!["int8"] = Int64(Int8.max)
                new!["int16"] = (old!["int16"] as! Int) * 2
                new!["optInt32"] = UInt8(7)
            }
        }
        let object = try XCTUnwrap(lattice.object(ofType: CodecAllTypes.self, forPrimaryKey: 1))
        XCTAssertEqual(object.int8, Int8.max)
        XCTAssertEqual(object.int16, 32)
        XCTAssertEqual(object.optInt32, 7)
        XCTAssertEqual(object.int64, Int64.min)
        XCTAssertTrue(object.value(forKey: "int8") is Int, "by name on compiled models too, as in Realm")
    }
}
