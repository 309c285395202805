import Foundation
import XCTest
@testable import Lattice

// Model versions live in namespaces: each version's classes have the same stored names.

/// The Exams example models (Schemas/ExamsV0.lattice.json and ExamsV2.lattice.json), version 0.
enum ExamsV0 {
    final class Exam: Object {
        @Persisted var name = ""
        @Persisted var date = Date(timeIntervalSinceReferenceDate: 0)
        @Persisted var subject: Subject?
        @Persisted var result: String?
    }

    final class Subject: Object {
        @Persisted var name = ""
        @Persisted var credits = 0
    }
}

/// Version 1: the free-text result is renamed (by the migration block).
enum ExamsV1 {
    final class Exam: Object {
        @Persisted var name = ""
        @Persisted var date = Date(timeIntervalSinceReferenceDate: 0)
        @Persisted var subject: Subject?
        @Persisted var legacyResult: String?
    }

    typealias Subject = ExamsV0.Subject
}

/// Version 2: the name becomes the id (a model-side rename), the result a link to a shared Result.
enum ExamsV2 {
    final class Exam: Object {
        @Persisted(originalName: "name") var id = ""
        @Persisted var date = Date(timeIntervalSinceReferenceDate: 0)
        @Persisted var subject: Subject?
        @Persisted var passed: Result?
        @Persisted var isMultipleChoice = false
    }

    typealias Subject = ExamsV0.Subject

    final class Result: Object {
        @Persisted(primaryKey: true) var result = ""
    }

    /// Every exam's result becomes a shared Result object.
    static let block: MigrationBlock = { migration, oldVersion in
        if oldVersion < 2 {
            var results: [String: MigrationObject] = [:]
            migration.enumerateObjects(ofType: "Exam") { old, new in
                // Version 1 renamed the free-text result.
                let text = old?[oldVersion < 1 ? "result" : "legacyResult"] as? String ?? "unknown"
                if results[text] == nil { results[text] = migration.create("Result", value: ["result": text]) }
                new?["passed"] = results[text]
                new?["isMultipleChoice"] = false
            }
        }
    }
}

/// A class that changes in every automatic way.
enum ShapesV0 {
    final class Shape: Object {
        @Persisted var name = ""
        @Persisted var sides = 0
        @Persisted var color: String?
        @Persisted var note = ""
        @Persisted var weight = 0.0
        @Persisted var tags: List<String>
        @Persisted var origin: Point?
    }

    final class Point: Object {
        @Persisted var x = 0
    }

    final class Retired: Object {
        @Persisted var what = ""
        @Persisted var shape: Shape?
    }
}

enum ShapesV1 {
    final class Shape: Object {
        @Persisted(indexed: true) var name = ""   // index added
        @Persisted var sides: Int?                // made optional
        @Persisted var color = ""                 // made required (nil becomes "")
        // note: removed
        @Persisted var weight = 0.0
        @Persisted(originalName: "tags") var labels: List<String>  // renamed collection
        @Persisted var origin: Point?
        @Persisted var area = 0.0                 // added
        @Persisted var id = UUID()                // added, random default: filled per object
        @Persisted(originProperty: "shape") var owners: LinkingObjects<Owner>
    }

    typealias Point = ShapesV0.Point

    final class Owner: Object {                   // added class
        @Persisted var shape: Shape?
    }
    // Retired: removed
}

enum KeysV0 {
    final class Account: Object {
        @Persisted var email = ""
        @Persisted var balance = 0
    }
}

enum KeysV1 {
    final class Account: Object {
        @Persisted(primaryKey: true) var email = ""
        @Persisted var balance = 0
    }
}

enum TypesV1 {
    final class Account: Object {
        @Persisted var email = ""
        @Persisted var balance = ""   // Int → String
    }
}

final class MigrationTests: XCTestCase {
    private func open(_ db: TempDatabase, _ types: [Object.Type], version: UInt64, block: MigrationBlock? = nil) throws -> Lattice {
        var config = db.configuration(types, schemaVersion: version)
        config.migrationBlock = block
        return try Lattice(configuration: config)
    }

    /// Every record of every class, raw, with the stored schema and version: what must not change.
    private func snapshot(_ db: TempDatabase) throws -> String {
        let lattice = try Lattice(configuration: .init(fileURL: db.url, dynamicSchema: true))
        var out = "version \(lattice.configuration.schemaVersion)\n\(lattice.schema)\n"
        for info in lattice.classesByName.values.sorted(by: { $0.name < $1.name }) {
            for entry in try lattice.allEntries(info.objectsTable) {
                out += "\(info.name) \(entry.key) \(entry.value)\n"
            }
        }
        return out
    }

    private func writeExamsV0(_ db: TempDatabase) throws {
        let lattice = try open(db, [ExamsV0.Exam.self, ExamsV0.Subject.self], version: 0)
        try lattice.write {
            let maths = try lattice.create(ExamsV0.Subject.self, value: ["name": "Maths", "credits": 6])
            try lattice.create(ExamsV0.Exam.self, value: ["name": "Algebra", "subject": maths, "result": "passed"])
            try lattice.create(ExamsV0.Exam.self, value: ["name": "Geometry", "subject": maths, "result": "failed"])
            try lattice.create(ExamsV0.Exam.self, value: ["name": "Topology", "result": "passed"])
            try lattice.create(ExamsV0.Exam.self, value: ["name": "Logic"])
        }
    }

    private func checkExamsV2(_ lattice: Lattice, file: StaticString = #filePath, line: UInt = #line) throws {
        let exams = try lattice.objects(ExamsV2.Exam.self).sorted(byKeyPath: "id")
        XCTAssertEqual(exams.map(\.id), ["Algebra", "Geometry", "Logic", "Topology"], file: file, line: line)
        XCTAssertEqual(exams.map { $0.passed?.result ?? "-" }, ["passed", "failed", "unknown", "passed"], file: file, line: line)
        XCTAssertEqual(exams.map { $0.subject?.name ?? "-" }, ["Maths", "Maths", "-", "-"], file: file, line: line)
        XCTAssertEqual(lattice.objects(ExamsV2.Result.self).count, 3, file: file, line: line)
        XCTAssertEqual(lattice.objects(ExamsV2.Subject.self).first?.credits, 6, file: file, line: line)
        XCTAssertEqual(lattice.schema["Exam"]?.properties.map(\.name), ["id", "date", "subject", "passed", "isMultipleChoice"], file: file, line: line)
        XCTAssertNil(lattice.schema["Exam"]?["id"]?.originalName, "former names are not stored", file: file, line: line)
    }

    func testExamsFixtureThroughEveryVersion() throws {
        let db = makeTempDatabase()
        try writeExamsV0(db)
        do {
            let v1 = try open(db, [ExamsV1.Exam.self, ExamsV1.Subject.self], version: 1) { migration, _ in
                migration.renameProperty(onType: "Exam", from: "result", to: "legacyResult")
            }
            let exams = try v1.objects(ExamsV1.Exam.self).sorted(byKeyPath: "name")
            XCTAssertEqual(exams.map { $0.legacyResult ?? "-" }, ["passed", "failed", "-", "passed"])
            XCTAssertEqual(exams[0].subject?.name, "Maths")
        }
        try checkExamsV2(try open(db, [ExamsV2.Exam.self, ExamsV2.Subject.self, ExamsV2.Result.self], version: 2, block: ExamsV2.block))
        // Reopened from disk, at the same version: no migration, same data.
        try checkExamsV2(try open(db, [ExamsV2.Exam.self, ExamsV2.Subject.self, ExamsV2.Result.self], version: 2))

        // Straight from version 0 to 2.
        let direct = makeTempDatabase()
        try writeExamsV0(direct)
        try checkExamsV2(try open(direct, [ExamsV2.Exam.self, ExamsV2.Subject.self, ExamsV2.Result.self], version: 2, block: ExamsV2.block))
    }

    /// `enumerateObjects` visits the objects the file held before the block and still holds: created
    /// objects are not visited, deleted ones neither (as in Realm), and every visited one has a `new`.
    func testEnumerationVisitsTheOldObjectsTheBlockNeitherCreatedNorDeleted() throws {
        let db = makeTempDatabase()
        try writeExamsV0(db)
        let seen = Locked<[String]>([])
        let lattice = try open(db, [ExamsV1.Exam.self, ExamsV1.Subject.self], version: 1) { migration, _ in
            migration.renameProperty(onType: "Exam", from: "result", to: "legacyResult")
            migration.create("Exam", value: ["name": "Created", "legacyResult": "new"])
            migration.enumerateObjects(ofType: "Exam") { old, new in
                if old?["name"] as? String == "Algebra", let new { migration.delete(new) }
            }
            migration.enumerateObjects(ofType: "Subject") { _, new in
                if let new { migration.delete(new) }
            }
            _ = migration.create("Subject", value: ["name": "Physics", "credits": 3])
            migration.enumerateObjects(ofType: "Exam") { old, new in
                let name = old?["name"] as? String ?? "?"
                seen.withLock { $0.append("\(name) \(old?["legacyResult"] as? String ?? "-") \(new == nil ? "gone" : "kept")") }
            }
            migration.enumerateObjects(ofType: "Subject") { old, _ in
                seen.withLock { $0.append("\(old?["name"] as? String ?? "?")") }
            }
        }
        XCTAssertEqual(seen.withLock { $0 }, ["Geometry failed kept", "Topology passed kept", "Logic - kept"])
        let exams = try lattice.objects(ExamsV1.Exam.self).sorted(byKeyPath: "name")
        XCTAssertEqual(exams.map(\.name), ["Created", "Geometry", "Logic", "Topology"])
        XCTAssertEqual(lattice.objects(ExamsV1.Subject.self).map(\.name), ["Physics"])
    }

    func testAutomaticMigration() throws {
        let db = makeTempDatabase()
        do {
            let lattice = try open(db, [ShapesV0.Shape.self, ShapesV0.Point.self, ShapesV0.Retired.self], version: 0)
            try lattice.write {
                let square = try lattice.create(ShapesV0.Shape.self, value: ["name": "square", "sides": 4, "color": "red", "note": "n",
                                                                              "weight": 1.5, "tags": ["a", "b"], "origin": ["x": 3]])
                try lattice.create(ShapesV0.Shape.self, value: ["name": "circle", "sides": 0, "note": "round"])
                try lattice.create(ShapesV0.Retired.self, value: ["what": "old", "shape": square])
            }
        }
        // No block: adding, removing, renaming (model side), optionality and indexes are automatic.
        let lattice = try open(db, [ShapesV1.Shape.self, ShapesV1.Point.self, ShapesV1.Owner.self], version: 1)
        let shapes = try lattice.objects(ShapesV1.Shape.self).sorted(byKeyPath: "name")
        XCTAssertEqual(shapes.map(\.name), ["circle", "square"])
        XCTAssertEqual(shapes.map(\.sides), [0, 4])
        XCTAssertEqual(shapes.map(\.color), ["", "red"])
        XCTAssertEqual(shapes.map(\.weight), [0, 1.5])
        XCTAssertEqual(Array(shapes[1].labels), ["a", "b"])
        XCTAssertEqual(shapes[1].origin?.x, 3)
        XCTAssertEqual(shapes.map(\.area), [0, 0])
        XCTAssertNotEqual(shapes[0].id, shapes[1].id)
        XCTAssertEqual(shapes[1].id, shapes[1].id, "an added UUID is stored, not drawn again on each read")
        XCTAssertEqual(shapes[1].owners.count, 0)
        XCTAssertNil(lattice.schema["Retired"])
        XCTAssertNil(lattice.schema["Shape"]?["note"])
        // The added index serves queries.
        let byName = try lattice.objects(ShapesV1.Shape.self).filter("name == 'square'")
        XCTAssertEqual(byName.count, 1)
        XCTAssertTrue(byName.explain().contains("i:Shape.name") || byName.explain().lowercased().contains("index"), byName.explain())
        try lattice.write {
            let owner = try lattice.create(ShapesV1.Owner.self, value: ["shape": shapes[1]])
            shapes[1].labels.append("c")
            XCTAssertEqual(shapes[1].owners.first, owner)
        }
        // Reopened from disk.
        let again = try open(db, [ShapesV1.Shape.self, ShapesV1.Point.self, ShapesV1.Owner.self], version: 1)
        XCTAssertEqual(Array(try XCTUnwrap(try again.objects(ShapesV1.Shape.self).filter("name == 'square'").first).labels), ["a", "b", "c"])
        XCTAssertEqual(again.objects(ShapesV1.Point.self).first?.x, 3)
    }

    func testAddingAPropertyToManyObjectsRewritesNoRecord() throws {
        let db = makeTempDatabase()
        let count = 100_000
        do {
            let lattice = try open(db, [KeysV0.Account.self], version: 0)
            try lattice.write {
                for i in 0..<count { try lattice.create(KeysV0.Account.self, value: ["email": "user\(i)@example.com", "balance": i]) }
            }
        }
        let before = try snapshot(db)
        let started = Date()
        let lattice = try open(db, [AddedV1.Account.self], version: 1)
        print("Adding a property to \(count) objects took \(Date().timeIntervalSince(started)) s")
        XCTAssertEqual(lattice.objects(AddedV1.Account.self).count, count)
        XCTAssertNil(try lattice.objects(AddedV1.Account.self).filter("balance == 77").first?.nickname)
        // The records are byte for byte what they were: only the schema and version changed.
        let after = try snapshot(db)
        XCTAssertEqual(after.split(separator: "\n").dropFirst(2), before.split(separator: "\n").dropFirst(2))
        XCTAssertTrue(after.hasPrefix("version 1"))
    }

    func testPrimaryKeyWithDuplicatesThrowsNamingTheValueAndChangesNothing() throws {
        let db = makeTempDatabase()
        do {
            let lattice = try open(db, [KeysV0.Account.self], version: 0)
            try lattice.write {
                try lattice.create(KeysV0.Account.self, value: ["email": "a@x", "balance": 1])
                try lattice.create(KeysV0.Account.self, value: ["email": "b@x", "balance": 2])
                try lattice.create(KeysV0.Account.self, value: ["email": "a@x", "balance": 3])
            }
        }
        let before = try snapshot(db)
        assertLatticeError(try open(db, [KeysV1.Account.self], version: 1),
                           .duplicatePrimaryKey(className: "Account", value: "'a@x'"))
        XCTAssertEqual(try snapshot(db), before)
        // The block can resolve the duplicates; then the key is unique and serves lookups.
        let lattice = try open(db, [KeysV1.Account.self], version: 1) { migration, _ in
            var seen = Set<String>()
            migration.enumerateObjects(ofType: "Account") { old, new in
                guard let email = old?["email"] as? String, let new else { return }
                if !seen.insert(email).inserted { migration.delete(new) }
            }
        }
        XCTAssertEqual(lattice.objects(KeysV1.Account.self).count, 2)
        XCTAssertEqual(lattice.object(ofType: KeysV1.Account.self, forPrimaryKey: "b@x")?.balance, 2)
        XCTAssertEqual(lattice.schema["Account"]?.primaryKeyProperty?.name, "email")
    }

    func testThrowingBlockAndBlockErrorsLeaveTheFileUnchanged() throws {
        let db = makeTempDatabase()
        try writeExamsV0(db)
        let before = try snapshot(db)
        struct Stop: Error {}
        let types: [Object.Type] = [ExamsV2.Exam.self, ExamsV2.Subject.self, ExamsV2.Result.self]
        XCTAssertThrowsError(try open(db, types, version: 2) { migration, _ in
            migration.enumerateObjects(ofType: "Exam") { _, new in new?["isMultipleChoice"] = true }
            throw Stop()
        }) { XCTAssertTrue($0 is Stop, "\($0)") }
        XCTAssertEqual(try snapshot(db), before)
        // An error inside a call that cannot throw (a wrong value type, a missing class) fails the migration.
        assertLatticeError(try open(db, types, version: 2) { migration, _ in
            migration.enumerateObjects(ofType: "Exam") { _, new in new?["isMultipleChoice"] = "yes" }
        }, .wrongType(className: "Exam", property: "isMultipleChoice", expected: "Bool", found: "String"))
        assertLatticeError(try open(db, types, version: 2) { migration, _ in
            migration.create("Missing")
        }, .classNotInSchema(className: "Missing"))
        XCTAssertEqual(try snapshot(db), before)
        // And the file still opens with its old models.
        XCTAssertEqual(try open(db, [ExamsV0.Exam.self, ExamsV0.Subject.self], version: 0).objects(ExamsV0.Exam.self).count, 4)
    }

    func testVersionsAndTypeChanges() throws {
        let db = makeTempDatabase()
        do {
            let lattice = try open(db, [KeysV0.Account.self], version: 3)
            try lattice.write { try lattice.create(KeysV0.Account.self, value: ["email": "a@x", "balance": 12]) }
        }
        let path = try XCTUnwrap(realpath(db.path, nil).map { p in defer { free(p) }; return String(cString: p) })
        // A downgrade names both versions.
        assertLatticeError(try open(db, [KeysV0.Account.self], version: 2),
                           .schemaVersionTooOld(path: path, fileVersion: 3, configuredVersion: 2))
        // The same version with another schema lists the differences.
        guard case .schemaMismatch? = latticeError(try open(db, [TypesV1.Account.self], version: 3)) else { return XCTFail() }
        // A changed type needs a block.
        guard case let .migrationFailed(className, reason)? = latticeError(try open(db, [TypesV1.Account.self], version: 4)) else {
            return XCTFail()
        }
        XCTAssertEqual(className, "Account")
        XCTAssertTrue(reason.contains("'balance' changed type from Int to String"), reason)
        let lattice = try open(db, [TypesV1.Account.self], version: 4) { migration, _ in
            migration.enumerateObjects(ofType: "Account") { old, new in
                new?["balance"] = "\(old?["balance"] as? Int ?? 0) EUR"
            }
        }
        XCTAssertEqual(lattice.objects(TypesV1.Account.self).first?.balance, "12 EUR")
    }

    func testAHandleOnTheOldSchemaGetsAClearErrorOnItsNextWrite() throws {
        let db = makeTempDatabase()
        let old = try open(db, [KeysV0.Account.self], version: 0)
        try old.write { try old.create(KeysV0.Account.self, value: ["email": "a@x"]) }
        _ = try open(db, [AddedV1.Account.self], version: 1)
        assertLatticeError(try old.write {}, .schemaChanged(path: old.configuration.fileURL.map { _ in old.env.path } ?? "", fileVersion: 1, handleVersion: 0))
    }

    /// `refresh()` (and so the run loop's deliveries) on a handle of the old schema does not stop the
    /// process: it returns false, and its observers end with `schemaChanged`.
    func testRefreshAfterAnotherHandleMigratedEndsObserversWithoutStopping() throws {
        let db = makeTempDatabase()
        let old = try open(db, [KeysV0.Account.self], version: 0)
        try old.write { try old.create(KeysV0.Account.self, value: ["email": "a@x"]) }
        let accounts = old.objects(KeysV0.Account.self)
        var errors: [LatticeError] = []
        var initial = 0
        let token = accounts.observe { change in
            switch change {
            case .initial: initial += 1
            case .update: XCTFail("no update from a migrated file")
            case .error(let error): errors.append(error as? LatticeError ?? .frozen(operation: "not a LatticeError"))
            }
        }
        old.refresh()
        XCTAssertEqual(initial, 1)
        _ = try open(db, [AddedV1.Account.self], version: 1)
        XCTAssertFalse(old.refresh(), "the handle cannot read the migrated file")
        XCTAssertEqual(errors.count, 1)
        guard case .schemaChanged(_, 1, 0)? = errors.first else { return XCTFail("\(errors)") }
        old.refresh()
        XCTAssertEqual(errors.count, 1, "ended once")
        token.invalidate()
    }
}

enum AddedV1 {
    final class Account: Object {
        @Persisted var email = ""
        @Persisted var balance = 0
        @Persisted var nickname: String?
        @Persisted(indexed: true) var joined = Date(timeIntervalSinceReferenceDate: 0)
    }
}

enum ClassRenameV0 {
    final class Dot: Object {
        @Persisted(indexed: true) var x = 0
        @Persisted var tags: List<String>
    }

    final class Holder: Object {
        @Persisted var dot: Dot?
    }
}

enum ClassRenameV1 {
    final class Point: Object {
        override class var originalName: String? { "Dot" }
        @Persisted(indexed: true) var x = 0
        @Persisted var tags: List<String>
        @Persisted(originProperty: "dot") var holders: LinkingObjects<Holder>
    }

    final class Holder: Object {
        @Persisted var dot: Point?
    }
}

final class ClassRenameTests: XCTestCase {
    func testAClassRenamedOnTheModelKeepsItsObjectsLinksCollectionsAndIndexes() throws {
        let db = makeTempDatabase()
        do {
            let lattice = try Lattice(configuration: db.configuration([ClassRenameV0.Dot.self, ClassRenameV0.Holder.self]))
            try lattice.write {
                let dot = try lattice.create(ClassRenameV0.Dot.self, value: ["x": 5, "tags": ["a", "b"]])
                try lattice.create(ClassRenameV0.Dot.self, value: ["x": 6])
                try lattice.create(ClassRenameV0.Holder.self, value: ["dot": dot])
            }
        }
        let lattice = try Lattice(configuration: db.configuration([ClassRenameV1.Point.self, ClassRenameV1.Holder.self], schemaVersion: 1))
        XCTAssertNil(lattice.schema["Dot"])
        XCTAssertEqual(lattice.objects(ClassRenameV1.Point.self).count, 2)
        let holder = try XCTUnwrap(lattice.objects(ClassRenameV1.Holder.self).first)
        XCTAssertEqual(holder.dot?.x, 5)
        XCTAssertEqual(Array(try XCTUnwrap(holder.dot).tags), ["a", "b"])
        XCTAssertEqual(holder.dot?.holders.count, 1, "backlinks follow the renamed class")
        let six = try lattice.objects(ClassRenameV1.Point.self).filter("x == 6")
        XCTAssertEqual(six.count, 1)
        try lattice.write {
            try lattice.create(ClassRenameV1.Point.self, value: ["x": 7])
            try lattice.delete(try XCTUnwrap(holder.dot))
        }
        XCTAssertNil(holder.dot, "deleting the renamed class's object unlinks it")
        XCTAssertEqual(try lattice.objects(ClassRenameV1.Point.self).filter("x >= 6").count, 2)
    }
}
