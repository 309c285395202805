import Foundation
import XCTest
@testable import Lattice

/// `Lattice.schemaVersion(at:encryptionKey:)` and `Lattice.performMigration(for:)` (Realm's
/// `schemaVersionAtURL` and `performMigration`).
final class SchemaVersionAtTests: XCTestCase {
    private let key = Data((0..<64).map { UInt8(truncatingIfNeeded: $0 &* 5 &+ 1) })

    private func configuration(_ db: TempDatabase, version: UInt64, ran: Locked<Int>? = nil) -> Lattice.Configuration {
        var config = db.configuration([EnumerationV0.StringItem.self], schemaVersion: version)
        if let ran { config.migrationBlock = { _, _ in ran.withLock { $0 += 1 } } }
        return config
    }

    func testPerformMigrationRunsTheBlockOnceAndKeepsNoHandle() throws {
        let db = makeTempDatabase()
        assertLatticeError(try Lattice.schemaVersion(at: db.url), .fileNotFound(path: db.path))
        do {
            let lattice = try Lattice(configuration: configuration(db, version: 0))
            try lattice.write { try lattice.create(EnumerationV0.StringItem.self, value: ["a"]) }
        }
        XCTAssertEqual(try Lattice.schemaVersion(at: db.url), 0)
        let path = try storagePath(of: db)
        XCTAssertFalse(Environment.isOpen(path: path), "reading the version keeps nothing open")

        let ran = Locked(0)
        try Lattice.performMigration(for: configuration(db, version: 1, ran: ran))
        XCTAssertEqual(ran.withLock { $0 }, 1)
        XCTAssertFalse(Environment.isOpen(path: path), "performMigration keeps no handle")
        XCTAssertEqual(try Lattice.schemaVersion(at: db.url), 1)
        // Again at the same version: nothing to migrate.
        try Lattice.performMigration(for: configuration(db, version: 1, ran: ran))
        XCTAssertEqual(ran.withLock { $0 }, 1)
        // Opening at a higher version migrates as well.
        XCTAssertEqual(try Lattice(configuration: configuration(db, version: 2, ran: ran)).objects(EnumerationV0.StringItem.self).count, 1)
        XCTAssertEqual(ran.withLock { $0 }, 2)
        XCTAssertEqual(try Lattice.schemaVersion(at: db.url), 2)
        // A failed migration changes nothing.
        var failing = configuration(db, version: 3)
        failing.migrationBlock = { migration, _ in migration.create("NoSuchClass") }
        assertLatticeError(try Lattice.performMigration(for: failing), .classNotInSchema(className: "NoSuchClass"))
        XCTAssertEqual(try Lattice.schemaVersion(at: db.url), 2)
    }

    /// With the file open in this process, the version is read through the shared environment, which
    /// stays usable for read-write opens; another migration shows at once.
    func testReadsTheVersionOfAFileOpenInThisProcess() throws {
        let db = makeTempDatabase()
        let open = try Lattice(configuration: configuration(db, version: 4))
        XCTAssertEqual(try Lattice.schemaVersion(at: db.url), 4)
        try open.write { try open.create(EnumerationV0.StringItem.self, value: ["b"]) }
        XCTAssertEqual(try Lattice(configuration: configuration(db, version: 4)).objects(EnumerationV0.StringItem.self).count, 1)
        // Without any handle open first: the version is read, and a read-write open afterwards works.
        let other = makeTempDatabase()
        _ = try Lattice(configuration: configuration(other, version: 7))
        XCTAssertEqual(try Lattice.schemaVersion(at: other.url), 7)
        let lattice = try Lattice(configuration: configuration(other, version: 7))
        try lattice.write { try lattice.create(EnumerationV0.StringItem.self, value: ["c"]) }
        // With the file open read-only in this process, the version is read through that environment.
        let readOnly = makeTempDatabase()
        _ = try Lattice(configuration: configuration(readOnly, version: 3))
        var config = configuration(readOnly, version: 3)
        config.readOnly = true
        let reader = try Lattice(configuration: config)
        XCTAssertEqual(try Lattice.schemaVersion(at: readOnly.url), 3)
        XCTAssertTrue(reader.isEmpty)
    }

    func testForeignEmptyAndEncryptedFiles() throws {
        let db = makeTempDatabase()
        // An empty file holds no database, and stays empty.
        XCTAssertTrue(FileManager.default.createFile(atPath: db.path, contents: Data()))
        guard case .invalidFile? = latticeError(try Lattice.schemaVersion(at: db.url)) else { return XCTFail() }
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: db.path)[.size] as? Int, 0)
        // Another kind of file.
        try Data("not a database, but long enough to be read as one: ".utf8 + Array(repeating: 0x41, count: 8192)).write(to: db.url)
        guard case .invalidFile? = latticeError(try Lattice.schemaVersion(at: db.url)) else { return XCTFail() }
        // A device.
        XCTAssertNotNil(latticeError(try Lattice.schemaVersion(at: URL(fileURLWithPath: "/dev/null"))))

        let encrypted = makeTempDatabase()
        do {
            var config = configuration(encrypted, version: 5)
            config.encryptionKey = key
            _ = try Lattice(configuration: config)
        }
        let path = try storagePath(of: encrypted)
        assertLatticeError(try Lattice.schemaVersion(at: encrypted.url), .encryptionKeyRequired(path: path))
        var wrong = key
        wrong[0] ^= 1
        assertLatticeError(try Lattice.schemaVersion(at: encrypted.url, encryptionKey: wrong), .wrongEncryptionKey(path: path))
        assertLatticeError(try Lattice.schemaVersion(at: encrypted.url, encryptionKey: Data([1])), .invalidEncryptionKey(path: path, length: 1))
        XCTAssertEqual(try Lattice.schemaVersion(at: encrypted.url, encryptionKey: key), 5)
        let plain = makeTempDatabase()
        _ = try Lattice(configuration: configuration(plain, version: 1))
        assertLatticeError(try Lattice.schemaVersion(at: plain.url, encryptionKey: key), .notEncrypted(path: try storagePath(of: plain)))
    }
}
