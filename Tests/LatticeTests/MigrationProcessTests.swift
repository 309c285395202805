import Foundation
import XCTest
@testable import Lattice

/// The version-0 models of the migration helper commands (version 1 is in LatticeTestHelper/main.swift).
enum MigrationV0 {
    final class MigrationItem: Object {
        @Persisted(primaryKey: true) var id = 0
        @Persisted var name = ""
    }
}

/// Migrations with other processes: killed mid-migration, racing to migrate, holding the old schema.
final class MigrationProcessTests: XCTestCase {
    private func writeVersion0(_ db: TempDatabase, count: Int) throws {
        let lattice = try Lattice(configuration: db.configuration([MigrationV0.MigrationItem.self]))
        try lattice.write {
            for i in 0..<count { try lattice.create(MigrationV0.MigrationItem.self, value: ["id": i, "name": "item \(i)"]) }
        }
    }

    /// Every record with the stored schema and version.
    private func snapshot(_ db: TempDatabase) throws -> String {
        let lattice = try Lattice(configuration: .init(fileURL: db.url, dynamicSchema: true))
        var out = "version \(lattice.configuration.schemaVersion)\n\(lattice.schema)\n"
        for info in lattice.classesByName.values.sorted(by: { $0.name < $1.name }) {
            for entry in try lattice.allEntries(info.objectsTable) { out += "\(info.name) \(entry.key) \(entry.value)\n" }
        }
        return out
    }

    func testAMigrationKilledMidwayLeavesTheFileAsItWas() throws {
        let db = makeTempDatabase()
        try writeVersion0(db, count: 2_000)
        let before = try snapshot(db)
        let child = try Helper(["migrate-and-hang", db.path])
        XCTAssertEqual(try child.readLine(), "migrating")  // 500 objects changed, inside the transaction
        try child.kill()
        XCTAssertEqual(try snapshot(db), before)
        let lattice = try Lattice(configuration: db.configuration([MigrationV0.MigrationItem.self]))
        XCTAssertEqual(lattice.objects(MigrationV0.MigrationItem.self).count, 2_000)
        XCTAssertEqual(lattice.object(ofType: MigrationV0.MigrationItem.self, forPrimaryKey: 7)?.name, "item 7")
    }

    func testTwoProcessesOpeningAnOldFileMigrateItOnce() throws {
        let db = makeTempDatabase()
        try writeVersion0(db, count: 300)
        let children = try (0..<2).map { _ in try Helper(["migrate-once", db.path]) }
        for child in children { XCTAssertEqual(try child.readLine(), "ready") }
        for child in children { child.send("go") }
        for child in children { XCTAssertEqual(try child.readLine(), "done 1") }
        for child in children { try child.waitForSuccess() }
    }

    func testAProcessOnTheOldSchemaGetsAClearErrorAndDeleteIfMigrationNeededRefuses() throws {
        let db = makeTempDatabase()
        try writeVersion0(db, count: 10)
        let watcher = try Helper(["schema-watch", db.path])
        XCTAssertEqual(try watcher.readLine(), "ready")
        // While the other process has the file open, deleting it is refused.
        var config = db.configuration([MigrationV1Local.MigrationItem.self], schemaVersion: 1)
        config.deleteIfMigrationNeeded = true
        guard case let .storage(_, code, message)? = latticeError(try Lattice(configuration: config)) else { return XCTFail() }
        XCTAssertEqual(code, EBUSY)
        XCTAssertTrue(message.contains("pid \(watcher.pid)"), message)
        XCTAssertEqual(try Lattice(configuration: db.configuration([MigrationV0.MigrationItem.self])).objects(MigrationV0.MigrationItem.self).count, 10)
        // A migration instead: the other process's next write gets a clear error.
        config.deleteIfMigrationNeeded = false
        _ = try Lattice(configuration: config)
        watcher.send("write")
        let line = try watcher.readLine()
        XCTAssertTrue(line.contains("was migrated to schema version 1 after this handle opened it at version 0"), line)
        try watcher.waitForSuccess()
    }
}

enum MigrationV1Local {
    final class MigrationItem: Object {
        @Persisted(primaryKey: true) var id = 0
        @Persisted var name = ""
        @Persisted var extra = 0
    }
}
