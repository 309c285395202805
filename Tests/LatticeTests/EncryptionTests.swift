import Foundation
import XCTest
@testable import Lattice

final class SecretNote: Object {
    @Persisted(primaryKey: true) var id = ""
    @Persisted(indexed: true) var title = ""
    @Persisted(indexed: true) var rank = 0
    @Persisted var body = ""
    @Persisted var tags: MutableSet<String>
    @Persisted var scores: Map<String, Int>
    @Persisted var lines: List<String>
    @Persisted var owner: SecretOwner?
}

final class SecretOwner: Object {
    @Persisted(primaryKey: true) var number = 0
    @Persisted var name = ""
    @Persisted var friends: MutableSet<SecretOwner>
}

/// Encryption at rest: what the file holds, keys, tampering, copies, other processes, queries, notifications.
final class EncryptionTests: XCTestCase {
    private let key = Data((0..<64).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
    private let otherKey = Data((0..<64).map { UInt8(255 - $0) })

    private func configuration(_ url: URL, key: Data?) -> Lattice.Configuration {
        Lattice.Configuration(fileURL: url, objectTypes: [SecretNote.self, SecretOwner.self], encryptionKey: key, initialMapSize: 8 << 20)
    }

    /// Values that must never appear in an encrypted file's bytes.
    private let secrets = ["ZEBRA-TITLE", "QUOKKA-BODY", "PANGOLIN-TAG", "AXOLOTL-MAPKEY", "NARWHAL-LINE", "OKAPI-OWNER", "MARMOT-ID"]

    /// Fills a file with notes whose every value holds a secret word.
    private func fill(_ lattice: Lattice, notes: Int = 20) throws {
        try lattice.write {
            let owner = SecretOwner()
            owner.number = 4242
            owner.name = "OKAPI-OWNER"
            try lattice.add(owner)
            owner.friends.insert(owner)
            for i in 0..<notes {
                let note = SecretNote()
                note.id = "MARMOT-ID-\(i)"
                note.title = "ZEBRA-TITLE-\(i % 5)"
                note.rank = i
                note.body = "QUOKKA-BODY " + String(repeating: "x", count: i)
                note.tags.insert("PANGOLIN-TAG-\(i)")
                note.tags.insert("common")
                note.scores["AXOLOTL-MAPKEY-\(i)"] = i * 10
                note.lines.append("NARWHAL-LINE-\(i)")
                note.owner = owner
                try lattice.add(note)
            }
        }
    }

    private func contains(_ data: Data, _ text: String) -> Bool { data.range(of: Data(text.utf8)) != nil }

    // MARK: What the file holds

    func testNoPropertyValueAppearsInTheEncryptedFile() throws {
        let plain = makeTempDatabase("plain"), encrypted = makeTempDatabase("encrypted")
        try fill(Lattice(configuration: configuration(plain.url, key: nil)))
        try fill(Lattice(configuration: configuration(encrypted.url, key: key)))
        let plainBytes = try Data(contentsOf: plain.url), encryptedBytes = try Data(contentsOf: encrypted.url)
        for secret in secrets {
            XCTAssertTrue(contains(plainBytes, secret), "the scan finds \(secret) in the plaintext file")
            XCTAssertFalse(contains(encryptedBytes, secret), "\(secret) is in the encrypted file")
        }
        // The stored schema is sealed too: property names appear only as database names.
        XCTAssertFalse(contains(encryptedBytes, "\"isPrimaryKey\""))
    }

    func testEncryptedFileReopensWithItsKey() throws {
        let db = makeTempDatabase("encrypted")
        try fill(Lattice(configuration: configuration(db.url, key: key)))
        let lattice = try Lattice(configuration: configuration(db.url, key: key))
        XCTAssertEqual(lattice.objects(SecretNote.self).count, 20)
        let note = try XCTUnwrap(lattice.object(ofType: SecretNote.self, forPrimaryKey: "MARMOT-ID-7"))
        XCTAssertEqual(note.title, "ZEBRA-TITLE-2")
        XCTAssertEqual(note.body, "QUOKKA-BODY xxxxxxx")
        XCTAssertEqual(Set(note.tags), ["PANGOLIN-TAG-7", "common"])
        XCTAssertTrue(note.tags.contains("common"))
        XCTAssertEqual(note.scores["AXOLOTL-MAPKEY-7"], 70)
        XCTAssertNil(note.scores["missing"])
        XCTAssertEqual(Array(note.lines), ["NARWHAL-LINE-7"])
        XCTAssertEqual(note.owner?.name, "OKAPI-OWNER")
        XCTAssertEqual(lattice.object(ofType: SecretOwner.self, forPrimaryKey: 4242)?.friends.count, 1)
        try lattice.write {
            note.tags.remove("common")
            note.scores["AXOLOTL-MAPKEY-7"] = nil
            note.scores["b"] = 2
            note.scores["a"] = 1
        }
        let again = try Lattice(configuration: configuration(db.url, key: key))
        let reread = try XCTUnwrap(again.object(ofType: SecretNote.self, forPrimaryKey: "MARMOT-ID-7"))
        XCTAssertEqual(Set(reread.tags), ["PANGOLIN-TAG-7"])
        XCTAssertEqual(Array(reread.scores.keys), ["a", "b"], "map keys come back in key order")
        // Reads by position of a list of values over several chunks, each decrypted when read.
        let lines = (0..<600).map { "NARWHAL-LINE-\($0)-" + String(repeating: "y", count: $0 % 40) }
        try again.write { for line in lines { reread.lines.append(line) } }
        let all = ["NARWHAL-LINE-7"] + lines
        XCTAssertEqual((0..<reread.lines.count).map { reread.lines[$0] }, all)
        XCTAssertEqual((0..<reread.lines.count).reversed().map { reread.lines[$0] }, Array(all.reversed()))
        XCTAssertEqual(again.verify(), [])
    }

    // MARK: Keys

    func testWrongMissingAndUnexpectedKeysGiveTheirErrors() throws {
        let encrypted = makeTempDatabase("encrypted"), plain = makeTempDatabase("plain")
        try fill(Lattice(configuration: configuration(encrypted.url, key: key)), notes: 2)
        try fill(Lattice(configuration: configuration(plain.url, key: nil)), notes: 2)
        assertLatticeError(try Lattice(configuration: configuration(encrypted.url, key: otherKey)), .wrongEncryptionKey(path: encrypted.path))
        assertLatticeError(try Lattice(configuration: configuration(encrypted.url, key: nil)), .encryptionKeyRequired(path: encrypted.path))
        assertLatticeError(try Lattice(configuration: configuration(plain.url, key: key)), .notEncrypted(path: plain.path))
        assertLatticeError(try Lattice(configuration: configuration(encrypted.url, key: key.prefix(32))),
                           .invalidEncryptionKey(path: encrypted.path, length: 32))
        // A key of the wrong length creates nothing.
        let fresh = makeTempDatabase("fresh")
        assertLatticeError(try Lattice(configuration: configuration(fresh.url, key: Data(count: 10))), .invalidEncryptionKey(path: fresh.path, length: 10))
        XCTAssertFalse(FileManager.default.fileExists(atPath: fresh.path), "no file is created")
        // While a handle with the right key has it open, the others are refused all the same.
        let open = try Lattice(configuration: configuration(encrypted.url, key: key))
        assertLatticeError(try Lattice(configuration: configuration(encrypted.url, key: otherKey)), .wrongEncryptionKey(path: encrypted.path))
        assertLatticeError(try Lattice(configuration: configuration(encrypted.url, key: nil)), .encryptionKeyRequired(path: encrypted.path))
        XCTAssertEqual(open.objects(SecretNote.self).count, 2)
        // The format stays readable without the key: an older reader refuses the file by its version.
        let format = try XCTUnwrap(RawLMDB.get(encrypted.path, database: "meta", key: Array("format".utf8)))
        XCTAssertEqual(Array(format.prefix(4)), [5, 0, 0, 0])
    }

    // MARK: Tampering

    func testFlippedByteIsAnAuthenticationError() throws {
        let db = makeTempDatabase("encrypted")
        try fill(Lattice(configuration: configuration(db.url, key: key)), notes: 3)
        let objectKey = KeyCodec.withObjectKey(4242) { Array($0) }
        try RawLMDB.withWrite(db.path) { txn in
            var value = try XCTUnwrap(RawLMDB.entries(txn, database: "o:SecretOwner").first { $0.key == objectKey }?.value)
            value[value.count / 2] ^= 0x01
            try RawLMDB.put(txn, database: "o:SecretOwner", key: objectKey, value: value, dupSort: false)
        }
        let lattice = try Lattice(configuration: configuration(db.url, key: key))
        guard case .authenticationFailed(let path, let reason)? = latticeError(try lattice.objects(SecretOwner.self).max(ofProperty: "number") as Int?) else {
            return XCTFail("a flipped byte must fail authentication")
        }
        XCTAssertEqual(path, try storagePath(of: db))
        XCTAssertTrue(reason.contains("o:SecretOwner") && reason.contains("4242"), reason)
        XCTAssertEqual(lattice.verify().map(\.kind), [.damagedValue])
    }

    func testSwappedRecordsFailAuthentication() throws {
        let db = makeTempDatabase("encrypted")
        try fill(Lattice(configuration: configuration(db.url, key: key)), notes: 3)
        try RawLMDB.withWrite(db.path) { txn in
            let entries = try RawLMDB.entries(txn, database: "o:SecretNote")
            XCTAssertEqual(entries.count, 3)
            try RawLMDB.put(txn, database: "o:SecretNote", key: entries[0].key, value: entries[1].value, dupSort: false)
            try RawLMDB.put(txn, database: "o:SecretNote", key: entries[1].key, value: entries[0].value, dupSort: false)
        }
        let lattice = try Lattice(configuration: configuration(db.url, key: key))
        guard case .authenticationFailed(_, let reason)? = latticeError(try lattice.objects(SecretNote.self).max(ofProperty: "rank") as Int?) else {
            return XCTFail("swapped records must fail authentication")
        }
        XCTAssertTrue(reason.contains("o:SecretNote"), reason)
        // A record moved into another class's table fails too: each table has a key of its own.
        try RawLMDB.withWrite(db.path) { txn in
            let note = try XCTUnwrap(RawLMDB.entries(txn, database: "o:SecretNote").last)
            try RawLMDB.put(txn, database: "o:SecretOwner", key: note.key, value: note.value, dupSort: false)
        }
        let reopened = try Lattice(configuration: configuration(db.url, key: key))
        XCTAssertEqual(reopened.verify().filter { $0.database == "o:SecretOwner" }.map(\.kind), [.damagedValue])
    }

    func testTamperingIsCaughtWhileTheValueIsKeptDecrypted() throws {
        let db = makeTempDatabase("encrypted")
        let lattice = try Lattice(configuration: configuration(db.url, key: key))
        try fill(lattice, notes: 3)
        // Written and read through this handle: the record is kept decrypted in memory now.
        XCTAssertEqual(lattice.object(ofType: SecretOwner.self, forPrimaryKey: 4242)?.name, "OKAPI-OWNER")
        XCTAssertEqual(lattice.objects(SecretOwner.self).first?.name, "OKAPI-OWNER")

        // The record's stored bytes, read from a copy of the file.
        let copy = makeTempDatabase("copy")
        try FileManager.default.copyItem(at: db.url, to: copy.url)
        let objectKey = KeyCodec.withObjectKey(4242) { Array($0) }
        var stored: [UInt8] = []
        try RawLMDB.withWrite(copy.path) { txn in
            stored = try XCTUnwrap(RawLMDB.entries(txn, database: "o:SecretOwner").first { $0.key == objectKey }?.value)
        }
        // Another writer flips one byte of it in place, under the open handle.
        let file = try Data(contentsOf: db.url)
        let position = try XCTUnwrap(file.range(of: Data(stored))).lowerBound + stored.count / 2
        let handle = try FileHandle(forUpdating: db.url)
        try handle.seek(toOffset: UInt64(position))
        try handle.write(contentsOf: [file[position] ^ 0x01])
        try handle.close()

        lattice.refresh()
        guard case .authenticationFailed(_, let reason)? = latticeError(try lattice.objects(SecretOwner.self).max(ofProperty: "number") as Int?) else {
            return XCTFail("a flipped byte must fail authentication even when the value was read before")
        }
        XCTAssertTrue(reason.contains("o:SecretOwner") && reason.contains("4242"), reason)
        XCTAssertEqual(lattice.verify().map(\.kind), [.damagedValue])
    }

    func testValuesOfEverySizeReadBackFromManyThreads() throws {
        let db = makeTempDatabase("encrypted")
        let sizes = [0, 1, 27, 28, 100, 1_000, 2_100, 5_000, 70_000]
        do {
            let lattice = try Lattice(configuration: configuration(db.url, key: key))
            try lattice.write {
                for (i, size) in sizes.enumerated() {
                    let note = SecretNote()
                    note.id = "note-\(i)"
                    note.body = String(repeating: Character(UnicodeScalar(UInt8(65 + i))), count: size)
                    note.rank = size
                    try lattice.add(note)
                }
            }
            // The handle that wrote them reads them back.
            for (i, size) in sizes.enumerated() {
                XCTAssertEqual(lattice.object(ofType: SecretNote.self, forPrimaryKey: "note-\(i)")?.body.count, size)
            }
        }
        // Handles of a new environment (nothing kept in memory), one per thread, 8 threads at once, twice each.
        let config = configuration(db.url, key: key)
        let opener = try Lattice(configuration: config)
        let wrong = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            guard let lattice = try? Lattice(configuration: config) else { return wrong.withLock { $0 += 1 } }
            for _ in 0..<2 {
                for (i, size) in sizes.enumerated() {
                    let body = lattice.object(ofType: SecretNote.self, forPrimaryKey: "note-\(i)")?.body
                    if body != String(repeating: Character(UnicodeScalar(UInt8(65 + i))), count: size) { wrong.withLock { $0 += 1 } }
                }
                if lattice.objects(SecretNote.self).map(\.rank).sorted() != sizes { wrong.withLock { $0 += 1 } }
            }
        }
        _ = opener
        XCTAssertEqual(wrong.withLock { $0 }, 0)
    }

    // MARK: Queries

    func testQueriesGiveTheSameResultsAsOnAPlaintextFile() throws {
        let plainDB = makeTempDatabase("plain"), encryptedDB = makeTempDatabase("encrypted")
        let plain = try Lattice(configuration: configuration(plainDB.url, key: nil))
        let encrypted = try Lattice(configuration: configuration(encryptedDB.url, key: key))
        try fill(plain, notes: 40)
        try fill(encrypted, notes: 40)
        let predicates = ["title == 'ZEBRA-TITLE-3'", "title IN {'ZEBRA-TITLE-1', 'ZEBRA-TITLE-4'}", "rank == 7", "rank IN {1, 2, 39}",
                          "rank >= 10 AND rank < 20", "rank > 35", "title BEGINSWITH 'ZEBRA-TITLE-1'", "title ==[c] 'zebra-title-2'",
                          "id == 'MARMOT-ID-12'", "rank BETWEEN {3, 5} OR title == 'ZEBRA-TITLE-0'", "ANY tags == 'PANGOLIN-TAG-3'"]
        func ids(_ lattice: Lattice, _ predicate: String, sorted: String? = nil) throws -> [String] {
            var results = try lattice.objects(SecretNote.self).filter(predicate)
            if let sorted { results = try results.sorted(byKeyPath: sorted, ascending: false) }
            return results.map(\.id)
        }
        for predicate in predicates {
            XCTAssertEqual(try ids(encrypted, predicate), try ids(plain, predicate), predicate)
            XCTAssertEqual(try ids(encrypted, predicate, sorted: "rank"), try ids(plain, predicate, sorted: "rank"), predicate)
            XCTAssertEqual(try encrypted.objects(SecretNote.self).filter(predicate).count, try plain.objects(SecretNote.self).filter(predicate).count)
        }
        XCTAssertEqual(try encrypted.objects(SecretNote.self).sorted(byKeyPath: "title").map(\.id),
                       try plain.objects(SecretNote.self).sorted(byKeyPath: "title").map(\.id))
        // Equality still seeks the index; a range scans, and explain() says why.
        let equality = try encrypted.objects(SecretNote.self).filter("rank == 7").explain()
        XCTAssertTrue(equality.contains("index seek"), equality)
        let range = try encrypted.objects(SecretNote.self).filter("rank >= 10 AND rank < 20").explain()
        XCTAssertTrue(range.contains("full scan") && range.contains("keyed hashes"), range)
        XCTAssertTrue(try plain.objects(SecretNote.self).filter("rank >= 10 AND rank < 20").explain().contains("index range"))
        let sorted = try encrypted.objects(SecretNote.self).sorted(byKeyPath: "rank").explain()
        XCTAssertTrue(sorted.contains("keyed hashes") && !sorted.contains("walk index"), sorted)
    }

    // MARK: Copies

    func testWriteCopyEncryptsRekeysAndDecrypts() throws {
        let source = makeTempDatabase("plain")
        let plain = try Lattice(configuration: configuration(source.url, key: nil))
        try fill(plain)
        let encryptedCopy = makeTempDatabase("copy-encrypted"), rekeyed = makeTempDatabase("copy-rekeyed")
        let decrypted = makeTempDatabase("copy-decrypted"), sameKey = makeTempDatabase("copy-same-key")
        try plain.writeCopy(toFile: encryptedCopy.url, encryptionKey: key)
        let encrypted = try Lattice(configuration: configuration(encryptedCopy.url, key: key))
        try encrypted.writeCopy(toFile: rekeyed.url, encryptionKey: otherKey)
        let other = try Lattice(configuration: configuration(rekeyed.url, key: otherKey))
        try other.writeCopy(toFile: decrypted.url, encryptionKey: nil)
        try other.writeCopy(toFile: sameKey.url, encryptionKey: otherKey)
        assertLatticeError(try plain.writeCopy(toFile: decrypted.url.appendingPathExtension("x"), encryptionKey: Data([1])),
                           .invalidEncryptionKey(path: decrypted.path + ".x", length: 1))

        func snapshot(_ lattice: Lattice) throws -> [String] {
            try lattice.objects(SecretNote.self).sorted(byKeyPath: "id").map { note in
                "\(note.id)|\(note.title)|\(note.rank)|\(note.body)|\(note.tags.sorted())|\(note.scores.keys.sorted())|"
                    + "\(Array(note.lines))|\(note.owner?.name ?? "-")"
            }
        }
        let expected = try snapshot(plain)
        XCTAssertEqual(expected.count, 20)
        for (url, copyKey) in [(encryptedCopy.url, key), (rekeyed.url, otherKey), (decrypted.url, nil), (sameKey.url, otherKey)] as [(URL, Data?)] {
            let copy = try Lattice(configuration: configuration(url, key: copyKey))
            XCTAssertEqual(try snapshot(copy), expected, url.lastPathComponent)
            XCTAssertEqual(copy.verify(), [], url.lastPathComponent)
            XCTAssertNotNil(copy.object(ofType: SecretNote.self, forPrimaryKey: "MARMOT-ID-3"), url.lastPathComponent)
            XCTAssertEqual(try copy.objects(SecretNote.self).filter("title == 'ZEBRA-TITLE-3'").count, 4)
            let bytes = try Data(contentsOf: url)
            XCTAssertEqual(contains(bytes, "ZEBRA-TITLE"), copyKey == nil, url.lastPathComponent)
        }
        assertLatticeError(try Lattice(configuration: configuration(rekeyed.url, key: key)), .wrongEncryptionKey(path: rekeyed.path))
        // The re-keyed copy has a salt of its own, so even equal values hash differently.
        XCTAssertNotEqual(try RawLMDB.get(encryptedCopy.path, database: "meta", key: Array("encryption".utf8)),
                          try RawLMDB.get(rekeyed.path, database: "meta", key: Array("encryption".utf8)))
        for db in [encryptedCopy, rekeyed, decrypted, sameKey] { try? FileManager.default.removeItem(atPath: db.path + "-lock") }
    }

    // MARK: Processes and notifications

    func testAnotherProcessReadsAndWritesWithTheKey() throws {
        let db = makeTempDatabase("encrypted-mp")
        let hex = key.map { String(format: "%02x", $0) }.joined()
        let mpConfig = Lattice.Configuration(fileURL: db.url, objectTypes: [MultiProcessItem.self, MultiProcessCounter.self],
                                             encryptionKey: key, initialMapSize: 8 << 20)
        let lattice = try Lattice(configuration: mpConfig)
        try lattice.write {
            for id in 0..<10 {
                let item = MultiProcessItem()
                item.id = id
                item.payload = payload(id: id, size: 200)
                item.checksum = checksum(item.payload)
                try lattice.add(item)
            }
        }
        let child = try ChildRun(["add", db.path, "10", "15", "300"], timeout: 120, environment: ["LATTICE_TEST_KEY": hex])
        XCTAssertEqual(child.stdout, "done\n", "\(child)")
        lattice.refresh()
        XCTAssertEqual(lattice.objects(MultiProcessItem.self).count, 25)
        XCTAssertEqual(lattice.object(ofType: MultiProcessItem.self, forPrimaryKey: 20)?.payload, payload(id: 20, size: 300))
        let verify = try ChildRun(["verify", db.path], timeout: 120, environment: ["LATTICE_TEST_KEY": hex])
        let sum = lattice.objects(MultiProcessItem.self).reduce(0) { $0 &+ $1.checksum }
        XCTAssertEqual(verify.stdout, "count 25 sum \(sum)\n", "\(verify)")
        let withoutKey = try ChildRun(["verify", db.path], timeout: 120)
        XCTAssertNotEqual(withoutKey.status, 0)
        XCTAssertTrue(withoutKey.stderr.contains("is encrypted"), "\(withoutKey)")
    }

    func testNotificationsReadTheSealedChangeLog() throws {
        let db = makeTempDatabase("encrypted-notify")
        let lattice = try Lattice(configuration: configuration(db.url, key: key))
        try fill(lattice, notes: 5)
        let results = try lattice.objects(SecretNote.self).filter("rank >= 2")
        var changes: [[Int]] = []
        let token = results.observe { change in
            if case let .update(_, deletions, insertions, modifications) = change { changes.append(deletions + [-1] + insertions + [-1] + modifications) }
        }
        lattice.refresh()
        let writer = try Lattice(configuration: configuration(db.url, key: key))
        try writer.write {
            writer.object(ofType: SecretNote.self, forPrimaryKey: "MARMOT-ID-3")?.body = "changed"
            let note = SecretNote()
            note.id = "new"
            note.rank = 9
            try writer.add(note)
        }
        lattice.refresh()
        XCTAssertEqual(changes, [[-1, 3, -1, 1]], "one insertion at 3 (key order), one modification at 1")
        var log: [(key: [UInt8], value: [UInt8])] = []
        try RawLMDB.withWrite(db.path) { txn in log = try RawLMDB.entries(txn, database: "changes") }
        XCTAssertFalse(log.isEmpty, "the commit was logged")
        token.invalidate()
    }
}
