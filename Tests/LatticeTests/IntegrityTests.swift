import CLMDB
import Foundation
import Synchronization
import XCTest
@testable import Lattice

/// Truncated, foreign and damaged files: typed errors with clear messages, no stray lock files, checksums
/// verified on every read, `verify()`, and format-1 files upgraded without checksums being added.
final class IntegrityTests: XCTestCase {
    // MARK: Truncated files

    func testTruncatedFilesAreRefusedAtOpen() throws {
        let db = makeTempDatabase("integrity")
        try buildFixture(db.path, owners: 400)
        let original = try Data(contentsOf: db.url)
        XCTAssertGreaterThan(original.count, 64 << 10)
        for size in [8192, 12288, original.count / 2, original.count - 4096, 5000, 200] {
            let copy = makeTempDatabase("truncated")
            try original.prefix(size).write(to: copy.url)
            for mode in ["ro", "rw"] {
                let run = try ChildRun(["open", copy.path, mode])
                XCTAssertFalse(run.crashed, "size \(size) \(mode): \(run)")
                XCTAssertEqual(run.status, 3, "size \(size) \(mode): \(run)")
                XCTAssertTrue(run.stdout.contains("is not a Lattice database: the file is truncated: it is \(size) bytes long"),
                              "size \(size) \(mode): \(run.stdout)")
                XCTAssertFalse(FileManager.default.fileExists(atPath: copy.path + "-lock"), "no lock file left behind")
            }
            XCTAssertEqual(try Data(contentsOf: copy.url).count, size, "the file is left as it was")
        }
        // The whole file still opens and reads.
        let run = try ChildRun(["damage-read", db.path])
        XCTAssertEqual(run.status, 0, "\(run)")
    }

    /// Meta pages that disagree are damage only when they stay so. Other processes' commits between the
    /// two reads make a live file look that way for a moment: here a thread keeps rewriting the second
    /// meta page's transaction id (another bad id each time, then the right one), as commits would.
    func testMetaPagesThatDisagreeAreDamageOnlyWhileTheyStaySo() throws {
        let db = makeTempDatabase("meta-race")
        try buildFixture(db.path, owners: 10)
        let fd = open(db.path, O_RDWR)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        var pageSize: UInt32 = 0
        XCTAssertEqual(pread(fd, &pageSize, 4, 16 + 24), 4)
        let idOffset = off_t(Int(pageSize) + 144)
        var original: UInt64 = 0
        XCTAssertEqual(pread(fd, &original, 8, idOffset), 8)
        try FileCheck.checkSize(fd: fd, path: db.path)

        // A damaged file stays as it is: refused.
        var bad = original + 2
        XCTAssertEqual(pwrite(fd, &bad, 8, idOffset), 8)
        XCTAssertThrowsError(try FileCheck.checkSize(fd: fd, path: db.path)) { error in
            guard case LatticeError.corruptFile = error else { return XCTFail("\(error)") }
        }

        // A file that keeps changing while it is read: read again until a reading holds together.
        let running = Mutex(true)
        let right = original
        let toggler = Thread {
            var step: UInt64 = 1
            while running.withLock({ $0 }) {
                var id = step % 2 == 0 ? right : right + 2 * step
                _ = pwrite(fd, &id, 8, idOffset)
                step += 1
                usleep(50)
            }
            var id = right
            _ = pwrite(fd, &id, 8, idOffset)
        }
        toggler.start()
        for _ in 0..<50 { XCTAssertNoThrow(try FileCheck.checkSize(fd: fd, path: db.path)) }
        running.withLock { $0 = false }
        while !toggler.isFinished { usleep(1_000) }
        try FileCheck.checkSize(fd: fd, path: db.path)
    }

    /// A transaction can allocate pages past the end of the file and free them before it commits; LMDB
    /// never writes them, so the file ends before the last page its meta page names. Such a file is whole
    /// and must open; the same file cut short must still be refused.
    func testAFileEndingInFreedPagesOpensAndATruncatedOneDoesNot() throws {
        let db = makeTempDatabase("freed-tail")
        let long = String(repeating: "x", count: 500)
        do {
            let lattice = try db.open([FreedTailNote.self])
            try lattice.write {
                for i in 0..<30 { try lattice.create(FreedTailNote.self, value: ["id": i, "text": "note \(i)"]) }
            }
            // Pages the transaction adds at the end of the file (a value on overflow pages) and frees again
            // before it commits.
            try lattice.write {
                try lattice.create(FreedTailNote.self, value: ["id": 30, "text": String(repeating: long, count: 2_000)])
                try lattice.delete(try lattice.objects(FreedTailNote.self).filter("text BEGINSWITH 'xxx'"))
            }
        }
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: db.path)[.size] as? Int)
        // The scenario this test is about: the meta page names pages past the end of the file.
        var env: OpaquePointer?
        XCTAssertEqual(mdb_env_create(&env), 0)
        XCTAssertEqual(mdb_env_open(env, db.path, UInt32(MDB_NOSUBDIR | MDB_RDONLY), 0o644), 0)
        var info = MDB_envinfo()
        var stat = MDB_stat()
        mdb_env_info(env, &info)
        mdb_env_stat(env, &stat)
        mdb_env_close(env)
        XCTAssertLessThan(size, (info.me_last_pgno + 1) * Int(stat.ms_psize), "the file should end before its last page")

        for readOnly in [true, false] {
            let lattice = try db.open([FreedTailNote.self], readOnly: readOnly)
            XCTAssertEqual(lattice.objects(FreedTailNote.self).count, 30)
            XCTAssertEqual(lattice.object(ofType: FreedTailNote.self, forPrimaryKey: 29)?.text, "note 29")
            XCTAssertEqual(lattice.verify().count, 0)
        }
        let cut = makeTempDatabase("freed-tail-cut")
        try Data(contentsOf: db.url).prefix(size / 2 / 4096 * 4096).write(to: cut.url)
        let run = try ChildRun(["open", cut.path, "ro"])
        XCTAssertFalse(run.crashed, "\(run)")
        XCTAssertTrue(run.stdout.contains("the file is truncated"), run.stdout)
    }

    // MARK: Foreign files

    func testFailedOpensLeaveNoLockFileAndSayWhatHappened() throws {
        var random = SystemRandomNumberGenerator()
        let cases: [(name: String, contents: Data?, readOnly: Bool, reason: String)] = [
            ("text", Data("milk\neggs\nbread\n".utf8), false, "it has no LMDB header."),
            ("zeros", Data(count: 16384), false, "it has no LMDB header."),
            ("random", Data((0..<16384).map { _ in UInt8.random(in: 0...255, using: &random) }), true,
             "it has no LMDB header."),
            ("directory", nil, false, "it is a directory; give the path of a database file."),
            ("empty read-only", Data(), true, "the file is empty: it holds no database, and a read-only handle cannot create one "
                + "(open it read-write once, or check the path)."),
        ]
        for test in cases {
            let db = makeTempDatabase("foreign")
            if let contents = test.contents {
                try contents.write(to: db.url)
            } else {
                try FileManager.default.createDirectory(at: db.url, withIntermediateDirectories: false)
            }
            assertLatticeError(try db.open([FixtureItem.self], readOnly: test.readOnly),
                               .invalidFile(path: try storagePath(of: db), reason: test.reason))
            XCTAssertFalse(FileManager.default.fileExists(atPath: db.path + "-lock"), "\(test.name): no lock file")
            if let contents = test.contents { XCTAssertEqual(try Data(contentsOf: db.url), contents, "\(test.name): untouched") }
        }
    }

    func testALockFileThatExistedIsKept() throws {
        let db = makeTempDatabase("foreign")
        try Data("not a database".utf8).write(to: db.url)
        try Data().write(to: URL(fileURLWithPath: db.path + "-lock"))
        XCTAssertNotNil(latticeError(try db.open([FixtureItem.self])))
        XCTAssertTrue(FileManager.default.fileExists(atPath: db.path + "-lock"), "only what the open created is removed")
    }

    func testAnEmptyFileOpenedReadWriteBecomesADatabase() throws {
        let db = makeTempDatabase("foreign")
        try Data().write(to: db.url)
        let lattice = try db.open([FixtureItem.self])
        try lattice.write { try lattice.create(FixtureItem.self, value: ["id": 1, "name": "one"]) }
        XCTAssertEqual(try db.open([FixtureItem.self], readOnly: true).object(ofType: FixtureItem.self, forPrimaryKey: 1)?.name, "one")
    }

    func testAReadOnlyFileOpenedReadWriteSaysPermissionDenied() throws {
        // Root ignores file permissions: the child drops to user nobody first.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("integrity-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        addTeardownBlock { try? FileManager.default.removeItem(at: directory) }
        chmod(directory.path, 0o777)
        let path = directory.appendingPathComponent("readonly.lattice").path
        try buildFixture(path, owners: 10)
        unlink(path + "-lock")
        chmod(path, 0o444)
        let run = try ChildRun(getuid() == 0 ? ["open-as-nobody", path] : ["open", path, "rw"])
        XCTAssertEqual(run.status, 3, "\(run)")
        let resolved = try Lattice.storagePath(.init(fileURL: URL(fileURLWithPath: path), objectTypes: [FixtureItem.self]))
        XCTAssertEqual(run.stdout.trimmingCharacters(in: .newlines), "error \(LatticeError.permissionDenied(path: resolved, operation: "open for reading and writing"))")
        XCTAssertTrue(run.stdout.contains("open it read-only"), run.stdout)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + "-lock"), "no lock file left behind")
    }

    /// A file in a directory this user cannot write (so no lock file can be made) opens read-only and
    /// reads, as a file shipped with an application would.
    func testAFileInAReadOnlyDirectoryOpensReadOnly() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("integrity-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        addTeardownBlock { chmod(directory.path, 0o755); try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("shipped.lattice").path
        try buildFixture(path, owners: 10)
        unlink(path + "-lock")
        chmod(path, 0o444)
        chmod(directory.path, 0o555)
        // Root ignores permissions: the child drops to user nobody first.
        let run = try ChildRun(getuid() == 0 ? ["open-as-nobody", path, "ro"] : ["open", path, "ro"])
        XCTAssertEqual(run.status, 0, "\(run)")
        XCTAssertEqual(run.stdout.trimmingCharacters(in: .newlines), "opened 9 owners", "the fixture deletes owner 7")
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + "-lock"))
    }

    func testAFullDiskSaysTheDiskMayBeFullAndKeepsWhatWasCommitted() throws {
        let db = makeTempDatabase("full")
        let run = try ChildRun(["fill", db.path, "\(3 << 20)"])
        XCTAssertEqual(run.status, 3, "\(run)")
        XCTAssertTrue(run.stdout.contains("the disk may be full") || run.stdout.contains("largest size this process may write"),
                      run.stdout)
        XCTAssertFalse(run.stdout.contains("Input/output error\n"), run.stdout)
        // Every transaction committed before the failure is there, whole (200 owners each).
        let lattice = try Lattice(configuration: .init(fileURL: db.url, readOnly: true, objectTypes: [DamageOwner.self, DamagePet.self]))
        let count = lattice.objects(DamageOwner.self).count
        XCTAssertGreaterThan(count, 0)
        XCTAssertEqual(count % 200, 0)
        XCTAssertEqual(lattice.verify(), [])
    }

    // MARK: Checksums

    func testTheChecksumCatchesEveryChangedByteAndAMovedValue() {
        let key: [UInt8] = [0x80, 0, 0, 0, 0, 0, 0, 42]
        let other: [UInt8] = [0x80, 0, 0, 0, 0, 0, 0, 43]
        for length in [0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 64, 301] {
            let value = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            let sealed = key.withUnsafeBytes { k in value.withUnsafeBytes { Checksum.sealed(key: k, value: $0) } }
            XCTAssertEqual(sealed.count, length + 4)
            func opens(_ bytes: [UInt8], under key: [UInt8]) -> [UInt8]? {
                key.withUnsafeBytes { k in bytes.withUnsafeBytes { Checksum.open(key: k, sealed: $0).map(Array.init) } }
            }
            XCTAssertEqual(opens(sealed, under: key), value)
            XCTAssertNil(opens(sealed, under: other), "a value under another key fails")
            XCTAssertNil(opens(Array(sealed.dropLast()), under: key), "a shortened value fails")
            for i in sealed.indices {
                for bit in [0, 3, 7] {
                    var damaged = sealed
                    damaged[i] ^= 1 << bit
                    XCTAssertNil(opens(damaged, under: key), "length \(length): bit \(bit) of byte \(i)")
                }
            }
        }
    }

    /// A file of 50 items, ranked 0-49, whose item 17 has one byte of its name changed in the file (LMDB's
    /// page structure untouched), and the error reading it gives.
    private func itemsWithADamagedRecord() throws -> (TempDatabase, LatticeError) {
        let db = makeTempDatabase("integrity")
        do {
            let lattice = try db.open([FixtureItem.self])
            try lattice.write {
                for i in 0..<50 { try lattice.create(FixtureItem.self, value: ["id": i, "name": "item-\(i)-marker", "rank": i]) }
            }
        }
        try damageEvery("item-17-marker", at: 5, in: db.url)
        return (db, .corruptFile(path: try storagePath(of: db), reason: "the value under object key 17 in 'o:FixtureItem' fails its checksum."))
    }

    func testADamagedRecordIsReportedNeverReturned() throws {
        let (db, expected) = try itemsWithADamagedRecord()
        let lattice = try db.open([FixtureItem.self], readOnly: true)
        // Throwing reads of every record throw it (`max` of the indexed rank reads one end of the index).
        assertLatticeError(try lattice.objects(FixtureItem.self).average(ofProperty: "rank") as Double?, expected)
        XCTAssertEqual(try lattice.objects(FixtureItem.self).max(ofProperty: "rank") as Int?, 49)
        assertLatticeError(try lattice.objects(FixtureItem.self).sum(ofProperty: "rank") as Int, expected)
        XCTAssertTrue("\(expected)".contains("Run `Lattice.verify()`"), "\(expected)")
        // Other objects read as they were.
        XCTAssertEqual(lattice.object(ofType: FixtureItem.self, forPrimaryKey: 16)?.name, "item-16-marker")
        XCTAssertEqual(try lattice.objects(FixtureItem.self).filter("rank == 18").first?.name, "item-18-marker")
        // verify() lists it.
        XCTAssertEqual(lattice.verify(), [IntegrityProblem(kind: .damagedValue, database: "o:FixtureItem", detail:
            "the value under object key 17 in 'o:FixtureItem' fails its checksum.")])
    }

    func testDeletingResultsHoldingADamagedRecordThrows() throws {
        let (db, expected) = try itemsWithADamagedRecord()
        let lattice = try db.open([FixtureItem.self])
        // A throwing call: it throws (instead of stopping the process) and deletes nothing.
        assertLatticeError(try lattice.write { try lattice.delete(try lattice.objects(FixtureItem.self).filter("rank >= 10")) }, expected)
        XCTAssertEqual(lattice.objects(FixtureItem.self).count, 50)
    }

    func testANonThrowingReadOfADamagedRecordStopsWithAClearMessage() throws {
        let db = makeTempDatabase("integrity")
        try buildFixture(db.path, owners: 30)
        try damageEvery("note 13", at: 5, in: db.url)
        let run = try ChildRun(["damage-read", db.path])
        XCTAssertTrue(run.crashed, "\(run)")
        XCTAssertTrue(run.stderr.contains("Lattice stopped while reading"), run.stderr)
        XCTAssertTrue(run.stderr.contains("'\(try storagePath(of: db))' is damaged: the value under object key 13 in 'o:DamageOwner' "
            + "fails its checksum."), run.stderr)
        XCTAssertTrue(run.stderr.contains("Run `Lattice.verify()`"), run.stderr)
        let verify = try ChildRun(["damage-verify", db.path])
        XCTAssertTrue(verify.stdout.hasPrefix("problems 1\ndamagedValue in o:DamageOwner: the value under object key 13"), verify.stdout)
    }

    func testALoopOverAListWithALinkToAMissingObjectStopsWithAClearMessage() throws {
        let db = makeTempDatabase("integrity")
        try buildFixture(db.path, owners: 30)  // owner 3's pets: pet-3, pet-2, pet-1 (object keys 4, 3, 2)
        let before = try ChildRun(["damage-list", db.path, "3"])
        XCTAssertEqual(before.stdout, "pet-3\npet-2\npet-1\n", "\(before)")
        // Remove pet-2's record behind Lattice's back: the list still names it.
        try RawLMDB.withWrite(db.path) { txn in try RawLMDB.deleteRecord(txn, database: "o:DamagePet", key: objectKey(3)) }
        let run = try ChildRun(["damage-list", db.path, "3"])
        XCTAssertTrue(run.crashed, "\(run)")
        XCTAssertEqual(run.stdout, "pet-3\n", "the objects before it are read")
        XCTAssertTrue(run.stderr.contains("a link names 'DamagePet' object key 3, which does not exist."), run.stderr)
    }

    // MARK: verify()

    func testVerifyFindsNothingInAHealthyFile() throws {
        let db = makeTempDatabase("integrity")
        try buildFixture(db.path, owners: 300)
        let lattice = try Lattice(configuration: .init(fileURL: db.url, objectTypes: [DamageOwner.self, DamagePet.self]))
        XCTAssertEqual(lattice.verify(), [])
    }

    func testVerifyListsIndexBacklinkAndListProblems() throws {
        let db = makeTempDatabase("integrity")
        try buildFixture(db.path, owners: 120)
        do {
            let lattice = try Lattice(configuration: .init(fileURL: db.url, objectTypes: [DamageOwner.self, DamagePet.self]))
            XCTAssertEqual(lattice.verify(), [])
            let owner = try XCTUnwrap(lattice.object(ofType: DamageOwner.self, forPrimaryKey: 100))
            XCTAssertEqual(owner.age, 10)
            XCTAssertEqual(owner.tags.count, 700, "several chunks")
        }
        let owner100 = objectKey(100)
        let linkID = FileLayout.linkID("DamageOwner", "best")
        // Raw edits behind Lattice's back: drop owner 100's age index entry, add a backlink entry for a
        // link that does not exist, drop the first chunk of owner 100's tag list.
        try RawLMDB.withWrite(db.path) { txn in
            var ageKey: [UInt8] = []
            KeyCodec.appendInt(10, to: &ageKey)
            try RawLMDB.unfile(txn, database: "i:DamageOwner.age", key: ageKey, objectKey: owner100)
            // Five links from owner 100 through `best`: five values, numbered 0 to 4.
            for ordinal in 0..<5 {
                try RawLMDB.put(txn, database: "b:DamagePet", key: BacklinkTable.key(1, linkID),
                                value: BacklinkTable.value(100, UInt32(ordinal)), dupSort: true)
            }
            try RawLMDB.delete(txn, database: "l:DamageOwner.tags", key: owner100 + [0, 0, 0, 1])
        }
        let fresh = try Lattice(configuration: .init(fileURL: db.url, readOnly: true, objectTypes: [DamageOwner.self, DamagePet.self]))
        let problems = fresh.verify()
        XCTAssertEqual(problems.map(\.kind), [.listMismatch, .missingIndexEntry, .staleBacklink], "\(problems)")
        XCTAssertEqual(problems.map(\.database), ["l:DamageOwner.tags", "i:DamageOwner.age", "b:DamagePet"])
        XCTAssertEqual(problems[0].detail, "the list of object key 100: chunk 1 of its directory is missing.")
        XCTAssertEqual(problems[1].detail, "object key 100 has no entry for its value.")
        XCTAssertEqual(problems[2].detail, "object key 1 counts 5 links from object key 100, the source holds 0.")
    }

    func testVerifyReportsBacklinkValuesOutOfSequence() throws {
        let db = makeTempDatabase("integrity")
        try buildFixture(db.path, owners: 30)
        // Owner 3 links to pet-2 (object key 3) once through `pets`: its value is number 0. Add number 2
        // (number 1 missing) behind Lattice's back.
        let key = BacklinkTable.key(3, FileLayout.linkID("DamageOwner", "pets"))
        try RawLMDB.withWrite(db.path) { txn in
            try RawLMDB.put(txn, database: "b:DamagePet", key: key, value: BacklinkTable.value(3, 2), dupSort: true)
        }
        let lattice = try Lattice(configuration: .init(fileURL: db.url, readOnly: true, objectTypes: [DamageOwner.self, DamagePet.self]))
        let problems = lattice.verify()
        XCTAssertEqual(problems.map(\.kind), [.staleBacklink, .staleBacklink], "\(problems)")
        XCTAssertEqual(problems.first?.detail, "object key 3 has link number 2 from object key 3 where number 1 was expected.")
        XCTAssertEqual(problems.last?.detail, "object key 3 counts 2 links from object key 3, the source holds 1.")
    }

    // MARK: Format 1

    func testFormatOneFilesAreReadAndWrittenWithoutChecksums() throws {
        let db = makeTempDatabase("integrity")
        try buildFixture(db.path, owners: 200)
        let before = try ChildRun(["damage-read", db.path])
        XCTAssertEqual(before.status, 0, "\(before)")
        try convertToFormatOne(db.path)
        // Read-only, a format-1 file cannot be upgraded: the open fails and leaves the file as it is.
        let readOnly = try ChildRun(["damage-read", db.path])
        XCTAssertEqual(readOnly.status, 3, "\(readOnly)")
        XCTAssertTrue(readOnly.stdout.contains("upgrading it from file format 1"), readOnly.stdout)
        XCTAssertEqual(try RawLMDB.get(db.path, database: "meta", key: "format"), [1, 0, 0, 0])
        // A read-write open upgrades it to format 3 (backlinks keyed by link property, values still without
        // checksums), which reads the same.
        do { _ = try Lattice(configuration: .init(fileURL: db.url, objectTypes: [DamageOwner.self, DamagePet.self])) }
        XCTAssertEqual(try RawLMDB.get(db.path, database: "meta", key: "format"), [3, 0, 0, 0])
        let after = try ChildRun(["damage-read", db.path])
        XCTAssertEqual(after.stdout, before.stdout, "a format-1 file reads the same once upgraded")
        // Writing to it adds no checksum.
        do {
            let lattice = try Lattice(configuration: .init(fileURL: db.url, objectTypes: [DamageOwner.self, DamagePet.self]))
            try lattice.write {
                let owner = DamageOwner()
                owner.id = 5000
                owner.name = "new"
                try lattice.add(owner)
            }
            XCTAssertEqual(lattice.verify(), [])
        }
        XCTAssertEqual(try RawLMDB.get(db.path, database: "meta", key: "format"), [3, 0, 0, 0])
        let record = try XCTUnwrap(try RawLMDB.get(db.path, database: "o:DamageOwner", key: objectKey(5000)))
        // Header, creation stamp (a small transaction id: 1 byte), count, 10 one-byte ends; payloads: id 5000
        // (2 bytes), "new", age (1), score (8). No checksum.
        XCTAssertEqual(record.count, 1 + 1 + 1 + 10 + 2 + 3 + 1 + 8)
    }

    func testFormatOneFilesMigrateAndNotifyWithoutChecksums() throws {
        let db = makeTempDatabase("integrity")
        try buildFixture(db.path, owners: 50)  // owner 7 is deleted: 49 remain
        try convertToFormatOne(db.path)
        var config = db.configuration([DamageOwner.self, DamagePet.self], schemaVersion: 1)
        config.migrationBlock = { migration, _ in
            migration.enumerateObjects(ofType: "DamageOwner") { _, new in new?["note"] = "migrated" }
        }
        do {
            let lattice = try Lattice(configuration: config)
            XCTAssertEqual(lattice.objects(DamageOwner.self).filter { $0.note == "migrated" }.count, 49)
        }
        // The migration stored the new schema version without a checksum; the format is the unsealed 3.
        XCTAssertEqual(try RawLMDB.get(db.path, database: "meta", key: "format"), [3, 0, 0, 0])
        XCTAssertEqual(try RawLMDB.get(db.path, database: "meta", key: "schemaVersion"), [1, 0, 0, 0, 0, 0, 0, 0])

        // Notifications read the change log another handle writes (unsealed in format 3). No raw LMDB
        // access from here on: the notifier keeps the file open in this process.
        let lattice = try Lattice(configuration: config)
        var counts: [Int] = []
        let token = lattice.objects(DamageOwner.self).observe { change in
            if case .initial(let r) = change { counts.append(r.count) }
            if case .update(let r, _, _, _) = change { counts.append(r.count) }
        }
        lattice.refresh()
        let other = try Lattice(configuration: config)
        try other.write {
            let owner = DamageOwner()
            owner.id = 9000
            try other.add(owner)
        }
        lattice.refresh()
        XCTAssertEqual(counts, [49, 50])
        token.invalidate()
        XCTAssertEqual(lattice.verify(), [])
        // Format 3 reads values as stored: an entry with a checksum would be 4 bytes longer than its encoding.
        let table = try XCTUnwrap(try lattice.changeLogTable())
        let lengths = try lattice.readTransaction().withCursor(table) { cursor in
            var out: [(stored: Int, encoded: Int)] = []
            var entry = try cursor.first()
            while let e = entry {
                if let decoded = ChangeLog.decode(e.value) { out.append((e.value.count, ChangeLog.encode(decoded).count)) }
                entry = try cursor.next()
            }
            return out
        }
        XCTAssertFalse(lengths.isEmpty, "the observed commit was logged")
        for length in lengths { XCTAssertEqual(length.stored, length.encoded) }
    }

    // MARK: Helpers

    /// Turns the file into what format 1 wrote: the same values without their checksums, backlinks by target.
    private func convertToFormatOne(_ path: String) throws {
        try RawLMDB.withWrite(path) { txn in
            // Object tables one record per entry and indexes one object per duplicate, as formats before 6 store them.
            for name in try RawLMDB.databaseNames(txn) {
                if SealedTables().packs(name) {
                    try RawLMDB.store(txn, database: name, records: try RawLMDB.records(txn, database: name), unpacked: true)
                } else if SealedTables().packsDuplicates(name) {
                    try RawLMDB.unpackIndex(txn, database: name)
                }
            }
            for name in try RawLMDB.databaseNames(txn) where SealedTables().seals(name) {
                for (key, value) in try RawLMDB.entries(txn, database: name) {
                    try RawLMDB.put(txn, database: name, key: key, value: Array(value.dropLast(4)), dupSort: false)
                }
            }
        }
        // Backlinks as formats 1 and 2 keyed them: by target alone, each value `[link id][source][u32 count]`.
        try RawLMDB.withWrite(path) { txn in
            for name in try RawLMDB.databaseNames(txn) where name.hasPrefix("b:") {
                let entries = try RawLMDB.entries(txn, database: name)
                var grouped: [(target: [UInt8], link: [UInt8], count: UInt32)] = []
                for (key, value) in entries {
                    let target = Array(key[0..<8])
                    let link = Array(key[8..<12]) + Array(value[0..<8])
                    if let last = grouped.last, last.target == target, last.link == link {
                        grouped[grouped.count - 1].count += 1
                    } else {
                        grouped.append((target, link, 1))
                    }
                }
                for key in Set(entries.map(\.key)) { try RawLMDB.delete(txn, database: name, key: key) }
                for entry in grouped {
                    let value = entry.link + withUnsafeBytes(of: entry.count.bigEndian) { Array($0) }
                    try RawLMDB.put(txn, database: name, key: entry.target, value: value, dupSort: true)
                }
            }
        }
        try RawLMDB.withWrite(path) { txn in try RawLMDB.put(txn, database: "meta", key: "format", value: [1, 0, 0, 0]) }
    }

    private func objectKey(_ key: Int64) -> [UInt8] { KeyCodec.withObjectKey(key) { Array($0) } }

    /// Flips the low bit of byte `offset` of every copy of `text` in the file (old page versions too).
    private func damageEvery(_ text: String, at offset: Int, in url: URL) throws {
        var data = try Data(contentsOf: url)
        var from = data.startIndex
        var found = 0
        while let range = data.range(of: Data(text.utf8), in: from..<data.endIndex) {
            data[range.lowerBound + offset] ^= 0x01
            from = range.upperBound
            found += 1
        }
        XCTAssertGreaterThan(found, 0)
        try data.write(to: url)
    }

    /// Builds the helper's fixture (`damage-build`) in a child process.
    private func buildFixture(_ path: String, owners: Int) throws {
        let run = try ChildRun(["damage-build", path, "\(owners)"], timeout: 120)
        XCTAssertEqual(run.stdout, "built\n", "\(run)")
    }
}

// MARK: - The helper's fixture classes (keep in step with Sources/LatticeTestHelper/Damage.swift)

final class DamageOwner: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted(indexed: true) var name = ""
    @Persisted(indexed: true) var age = 0
    @Persisted var score = 0.0
    @Persisted var note: String?
    @Persisted var best: DamagePet?
    @Persisted var pets: List<DamagePet>
    @Persisted var tags: List<String>
    @Persisted var numbers: MutableSet<Int>
    @Persisted var ratings: Map<String, Int>
}

final class DamagePet: Object {
    @Persisted(primaryKey: true) var code = ""
    @Persisted var kind = ""
    @Persisted var weight = 0.0
    @Persisted(originProperty: "pets") var keepers: LinkingObjects<DamageOwner>
    @Persisted(originProperty: "best") var fans: LinkingObjects<DamageOwner>
}

// MARK: - Child processes

/// One run of `LatticeTestHelper` to its end: stdout and stderr (through files, so a child that prints a
/// lot never blocks), how it ended, and whether the watchdog killed it.
struct ChildRun: CustomStringConvertible {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let status: Int32
    /// Ended by a signal (`status` is the signal number).
    let crashed: Bool
    /// Killed by the watchdog after `timeout` seconds.
    let timedOut: Bool
    let stdout: String
    let stderr: String

    init(_ arguments: [String], timeout: TimeInterval = 60, environment extra: [String: String] = [:]) throws {
        let process = Process()
        process.executableURL = try ChildRun.executable()
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment.merging(extra) { $1 }
        environment["SWIFT_BACKTRACE"] = "enable=no"  // a crash ends at once, without minutes of symbolication
        process.environment = environment
        let directory = FileManager.default.temporaryDirectory
        let out = directory.appendingPathComponent("child-\(UUID().uuidString).out")
        let err = directory.appendingPathComponent("child-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: out)
            try? FileManager.default.removeItem(at: err)
        }
        let outHandle = try FileHandle(forWritingTo: out), errHandle = try FileHandle(forWritingTo: err)
        defer {
            try? outHandle.close()
            try? errHandle.close()
        }
        process.standardOutput = outHandle
        process.standardError = errHandle
        process.standardInput = FileHandle.nullDevice
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        var killed = false
        if exited.wait(timeout: .now() + timeout) == .timedOut {
            let pid = process.processIdentifier
            if pid > 0 { kill(pid, SIGKILL) }
            killed = true
            exited.wait()
        }
        process.waitUntilExit()
        timedOut = killed
        crashed = process.terminationReason == .uncaughtSignal
        status = process.terminationStatus
        stdout = (try? String(contentsOf: out, encoding: .utf8)) ?? ""
        stderr = (try? String(contentsOf: err, encoding: .utf8)) ?? ""
    }

    var description: String {
        "\(timedOut ? "timed out" : crashed ? "signal \(status)" : "status \(status)"); stdout: \(stdout.prefix(600)); "
            + "stderr: \(stderr.prefix(600))"
    }

    private static func executable() throws -> URL {
        var directories = [Bundle.main.bundleURL]
        for bundle in Bundle.allBundles { directories.append(bundle.bundleURL.deletingLastPathComponent()) }
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            directories.append(URL(fileURLWithPath: exe).deletingLastPathComponent())
        }
        let candidates = directories.map { $0.appendingPathComponent("LatticeTestHelper") }
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw Failure(description: "LatticeTestHelper is not built; looked at \(candidates.map(\.path)).")
        }
        return found
    }
}

// MARK: - Raw LMDB edits behind Lattice's back

extension RawLMDB {
    /// Names of the named databases.
    static func databaseNames(_ txn: OpaquePointer?) throws -> [String] {
        try entries(txn, database: nil).map { String(decoding: $0.key, as: UTF8.self) }
    }

    /// Every (key, value) of a database (every duplicate of a sorted-duplicates one).
    static func entries(_ txn: OpaquePointer?, database: String?) throws -> [(key: [UInt8], value: [UInt8])] {
        var dbi = MDB_dbi()
        try check(mdb_dbi_open(txn, database, 0, &dbi))
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, dbi, &cursor))
        defer { mdb_cursor_close(cursor) }
        var out: [([UInt8], [UInt8])] = []
        var k = MDB_val(), v = MDB_val()
        var op = MDB_FIRST
        while mdb_cursor_get(cursor, &k, &v, op) == 0 {
            out.append((Array(UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)),
                        Array(UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))))
            op = MDB_NEXT
        }
        return out
    }

    /// Deletes one duplicate of a sorted-duplicates database.
    static func deleteDuplicate(_ txn: OpaquePointer?, database: String, key: [UInt8], value: [UInt8]) throws {
        var dbi = MDB_dbi()
        try check(mdb_dbi_open(txn, database, UInt32(MDB_DUPSORT | MDB_DUPFIXED), &dbi))
        try key.withUnsafeBytes { k in
            try value.withUnsafeBytes { v in
                var kv = MDB_val(mv_size: k.count, mv_data: UnsafeMutableRawPointer(mutating: k.baseAddress))
                var vv = MDB_val(mv_size: v.count, mv_data: UnsafeMutableRawPointer(mutating: v.baseAddress))
                try check(mdb_del(txn, dbi, &kv, &vv))
            }
        }
    }

    /// Deletes the value under a binary key.
    static func delete(_ txn: OpaquePointer?, database: String, key: [UInt8]) throws {
        var dbi = MDB_dbi()
        try check(mdb_dbi_open(txn, database, 0, &dbi))
        try key.withUnsafeBytes { k in
            var kv = MDB_val(mv_size: k.count, mv_data: UnsafeMutableRawPointer(mutating: k.baseAddress))
            try check(mdb_del(txn, dbi, &kv, nil))
        }
    }

    /// The value under a binary key, or nil.
    static func get(_ path: String, database: String, key: [UInt8]) throws -> [UInt8]? {
        var found: [UInt8]?
        try withWrite(path) { txn in found = try entries(txn, database: database).first { $0.key == key }?.value }
        return found
    }

    /// The records of a packed object table (file format 6, see `Runs`) as format 4 stores them: each with
    /// its checksum under its 8-byte key.
    static func records(_ txn: OpaquePointer?, database: String) throws -> [(key: [UInt8], value: [UInt8])] {
        var out: [(key: [UInt8], value: [UInt8])] = []
        for (key, run) in try entries(txn, database: database) where key.count == 8 {
            try run.withUnsafeBytes { bytes in
                let view = try XCTUnwrap(RunView(bytes, key: key.withUnsafeBytes { Runs.number($0) }), "a run that does not parse")
                var keys: [UInt64] = []
                XCTAssertTrue(view.keys(into: &keys))
                for (i, number) in keys.enumerated() {
                    out.append((Runs.withKey(number) { Array($0) }, Array(try XCTUnwrap(view.entry(i)))))
                }
            }
        }
        return out
    }

    /// Rewrites a packed object table with `records` (format 4's form, as `records` returns them):
    /// packed into runs again (with their count) or, `unpacked`, one per entry as format 4 stores them.
    static func store(_ txn: OpaquePointer?, database: String, records: [(key: [UInt8], value: [UInt8])], unpacked: Bool = false) throws {
        for (key, _) in try entries(txn, database: database) { try delete(txn, database: database, key: key) }
        if unpacked {
            for record in records { try put(txn, database: database, key: record.key, value: record.value, dupSort: false) }
            return
        }
        var run = RunWriter()
        func flush() throws {
            guard run.count > 0 else { return }
            try put(txn, database: database, key: Runs.withKey(run.firstKey) { Array($0) }, value: run.encoded(), dupSort: false)
            run.reset()
        }
        for record in records {
            let number = record.key.withUnsafeBytes { Runs.number($0) }
            if run.size(adding: number, valueCount: record.value.count - 4) > Runs.budget(pageSize: 4096) { try flush() }
            record.value.withUnsafeBytes { run.append(key: number, sealed: $0) }
        }
        try flush()
        if !records.isEmpty {
            let count = withUnsafeBytes(of: Int64(records.count).littleEndian) { Array($0) }
            try put(txn, database: database, key: Runs.countKey,
                    value: Runs.countKey.withUnsafeBytes { k in count.withUnsafeBytes { Checksum.sealed(key: k, value: $0) } }, dupSort: false)
        }
    }

    /// The (index key, 8-byte object key) pairs of a packed index (file format 6, see `Blocks`).
    static func indexEntries(_ txn: OpaquePointer?, database: String) throws -> [(key: [UInt8], value: [UInt8])] {
        var out: [(key: [UInt8], value: [UInt8])] = []
        for (key, block) in try entries(txn, database: database) {
            var keys: [UInt64] = []
            try block.withUnsafeBytes { XCTAssertTrue(try XCTUnwrap(BlockView($0), "a block that does not parse").keys(into: &keys)) }
            for number in keys { out.append((key, Runs.withKey(number) { Array($0) })) }
        }
        return out
    }

    /// Rewrites a packed index as format 4 stores one: one 8-byte duplicate per object, in a table
    /// created again with fixed-size duplicates.
    static func unpackIndex(_ txn: OpaquePointer?, database: String) throws {
        let all = try indexEntries(txn, database: database)
        var dbi = MDB_dbi()
        try check(mdb_dbi_open(txn, database, 0, &dbi))
        try check(mdb_drop(txn, dbi, 1))
        try check(mdb_dbi_open(txn, database, UInt32(MDB_CREATE | MDB_DUPSORT | MDB_DUPFIXED), &dbi))
        for entry in all { try put(txn, database: database, key: entry.key, value: entry.value, dupSort: true) }
    }

    /// Removes an object key from a packed index behind Lattice's back.
    static func unfile(_ txn: OpaquePointer?, database: String, key: [UInt8], objectKey: [UInt8]) throws {
        let number = objectKey.withUnsafeBytes { Runs.number($0) }
        var dbi = MDB_dbi()
        try check(mdb_dbi_open(txn, database, 0, &dbi))
        for (k, block) in try entries(txn, database: database) where k == key {
            var keys: [UInt64] = []
            block.withUnsafeBytes { _ = BlockView($0)?.keys(into: &keys) }
            guard let i = keys.firstIndex(of: number) else { continue }
            keys.remove(at: i)
            try key.withUnsafeBytes { kb in
                try block.withUnsafeBytes { vb in
                    var kv = MDB_val(mv_size: kb.count, mv_data: UnsafeMutableRawPointer(mutating: kb.baseAddress))
                    var vv = MDB_val(mv_size: vb.count, mv_data: UnsafeMutableRawPointer(mutating: vb.baseAddress))
                    try check(mdb_del(txn, dbi, &kv, &vv))
                }
            }
            for rest in BlockWriter.blocks(keys) {
                try key.withUnsafeBytes { kb in
                    try rest.withUnsafeBytes { vb in
                        var kv = MDB_val(mv_size: kb.count, mv_data: UnsafeMutableRawPointer(mutating: kb.baseAddress))
                        var vv = MDB_val(mv_size: vb.count, mv_data: UnsafeMutableRawPointer(mutating: vb.baseAddress))
                        try check(mdb_put(txn, dbi, &kv, &vv, 0))
                    }
                }
            }
            return
        }
    }

    /// Deletes a record from a packed object table behind Lattice's back.
    static func deleteRecord(_ txn: OpaquePointer?, database: String, key: [UInt8]) throws {
        try store(txn, database: database, records: try records(txn, database: database).filter { $0.key != key })
    }

    /// Adds a value (a duplicate, with `dupSort`).
    static func put(_ txn: OpaquePointer?, database: String, key: [UInt8], value: [UInt8], dupSort: Bool) throws {
        var dbi = MDB_dbi()
        try check(mdb_dbi_open(txn, database, dupSort ? UInt32(MDB_DUPSORT | MDB_DUPFIXED) : 0, &dbi))
        try key.withUnsafeBytes { k in
            try value.withUnsafeBytes { v in
                var kv = MDB_val(mv_size: k.count, mv_data: UnsafeMutableRawPointer(mutating: k.baseAddress))
                var vv = MDB_val(mv_size: v.count, mv_data: UnsafeMutableRawPointer(mutating: v.baseAddress))
                try check(mdb_put(txn, dbi, &kv, &vv, 0))
            }
        }
    }
}

/// A note of the freed-tail test.
final class FreedTailNote: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var text = ""
}
