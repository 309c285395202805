import Foundation
import XCTest
@testable import Lattice

// MARK: - The fixture's classes (their schema is stored in the fixture files: do not change them)

final class UpgradePerson: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var dogs: List<UpgradeDog>
    @Persisted var favourite: UpgradeDog?
    @Persisted var toys: MutableSet<UpgradeDog>
    @Persisted var byName: Map<String, UpgradeDog?>
    @Persisted var numbers: List<Int>
    @Persisted var address: UpgradeAddress?
}

final class UpgradeDog: Object {
    @Persisted var name = ""
    @Persisted(indexed: true) var age = 0
    @Persisted(originProperty: "dogs") var walkers: LinkingObjects<UpgradePerson>
    @Persisted(originProperty: "favourite") var fans: LinkingObjects<UpgradePerson>
}

final class UpgradeAddress: EmbeddedObject {
    @Persisted var street = ""
}

final class FormatUpgradeTests: XCTestCase {
    static let types: [Object.Type] = [UpgradePerson.self, UpgradeDog.self, UpgradeAddress.self]

    /// The fixtures under `Fixtures/` were written by this function, run by the code of the format they
    /// hold (`LATTICE_WRITE_FIXTURE=<path> swift test --filter testWriteFixture`); kept to show what they hold.
    func testWriteFixture() throws {
        guard let path = ProcessInfo.processInfo.environment["LATTICE_WRITE_FIXTURE"] else {
            throw XCTSkip("set LATTICE_WRITE_FIXTURE to write a fixture file")
        }
        let lattice = try Lattice(configuration: .init(fileURL: URL(fileURLWithPath: path), objectTypes: Self.types))
        try lattice.write {
            var dogs: [UpgradeDog] = []
            for i in 0..<300 {
                let dog = UpgradeDog()
                dog.name = "dog \(i)"
                dog.age = i % 17
                try lattice.add(dog)
                dogs.append(dog)
            }
            for p in 1...40 {
                let person = UpgradePerson()
                person.id = p
                person.name = "person \(p)"
                // Dog 0 is walked by every person, twice by the even ones; dog p walked by person p.
                person.dogs.append(dogs[0])
                person.dogs.append(dogs[p])
                if p % 2 == 0 { person.dogs.append(dogs[0]) }
                person.favourite = dogs[p % 5]
                person.toys.insert(dogs[100 + p % 3])
                person.byName["first"] = dogs[200 + p]
                person.byName["none"] = nil
                for n in 0..<(p == 1 ? 700 : p) { person.numbers.append(n * p) }
                let address = UpgradeAddress()
                address.street = "\(p) Main Street"
                person.address = address
                try lattice.add(person)
            }
        }
        // Some changes after the first commit: a removed link, a deleted dog, a deleted person.
        try lattice.write {
            let first = try XCTUnwrap(lattice.object(ofType: UpgradePerson.self, forPrimaryKey: 1))
            first.dogs.remove(at: 1)
            first.numbers.remove(at: 300)
            try lattice.delete(try lattice.objects(UpgradeDog.self).filter("name == 'dog 3'"))
            try lattice.delete(try XCTUnwrap(lattice.object(ofType: UpgradePerson.self, forPrimaryKey: 40)))
        }
        XCTAssertEqual(lattice.verify(), [])
    }

    // MARK: Upgrading format 2

    /// A copy of a fixture (`format2` or `format4`) in a temporary file.
    private func fixtureCopy(_ name: String = "format2") throws -> TempDatabase {
        let db = makeTempDatabase("upgrade")
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(name).lattice")
        try FileManager.default.copyItem(at: fixture, to: db.url)
        return db
    }

    private func open(_ db: TempDatabase, readOnly: Bool = false) throws -> Lattice {
        try Lattice(configuration: db.configuration(Self.types, readOnly: readOnly))
    }

    /// The backlink keys of the file's `b:UpgradeDog` table, read with LMDB's C API.
    private func backlinkKeySizes(_ db: TempDatabase) throws -> Set<Int> {
        var sizes = Set<Int>()
        try RawLMDB.withWrite(db.path) { txn in
            for entry in try RawLMDB.entries(txn, database: "b:UpgradeDog") { sizes.insert(entry.key.count) }
        }
        return sizes
    }

    func testAFormatTwoFileIsUpgradedOnOpenWithNothingLost() throws {
        let db = try fixtureCopy()
        XCTAssertEqual(try RawLMDB.get(db.path, database: "meta", key: "format"), RawLMDB.sealed(key: "format", [2, 0, 0, 0]))
        XCTAssertEqual(try backlinkKeySizes(db), [8], "format 2 keys backlinks by target")
        do {
            let lattice = try open(db)
            XCTAssertEqual(lattice.verify(), [])
            try assertFixtureContent(lattice)
        }
        XCTAssertEqual(try RawLMDB.get(db.path, database: "meta", key: "format"), RawLMDB.sealed(key: "format", [6, 0, 0, 0]))
        XCTAssertEqual(try backlinkKeySizes(db), [12], "format 4 and later key backlinks by target and link property")
        try assertPacked(db)

        // Read from disk again by a fresh handle, changed, and read again: counts follow the links.
        do {
            let lattice = try open(db)
            try assertFixtureContent(lattice)
            let dog0 = try XCTUnwrap(lattice.objects(UpgradeDog.self).first { $0.name == "dog 0" })
            try lattice.write {
                let two = try XCTUnwrap(lattice.object(ofType: UpgradePerson.self, forPrimaryKey: 2))
                two.dogs.remove(at: 2)                 // one of its two links to dog 0
                try lattice.delete(try XCTUnwrap(lattice.object(ofType: UpgradePerson.self, forPrimaryKey: 4)))  // two links
                let five = try XCTUnwrap(lattice.object(ofType: UpgradePerson.self, forPrimaryKey: 5))
                five.dogs.append(dog0)
                five.dogs.append(dog0)                 // three links now
                five.favourite = nil                   // dog 0 loses a fan
            }
            XCTAssertEqual(dog0.walkers.count, 58 - 1 - 2 + 2)
            XCTAssertEqual(Array(dog0.walkers).count, 57)
            XCTAssertEqual(dog0.fans.count, 6)
            XCTAssertEqual(lattice.verify(), [])
        }
        let reopened = try open(db)
        let dog0 = try XCTUnwrap(reopened.objects(UpgradeDog.self).first { $0.name == "dog 0" })
        XCTAssertEqual(dog0.walkers.count, 57)
        XCTAssertEqual(dog0.walkers.filter { $0.id == 5 }.count, 3)
        XCTAssertEqual(dog0.fans.count, 6)
        XCTAssertEqual(reopened.verify(), [])
    }

    /// The object tables of `db` hold runs (file format 6): fewer LMDB entries than records, the count
    /// entry first, and every record whole with its checksum.
    private func assertPacked(_ db: TempDatabase, file: StaticString = #filePath, line: UInt = #line) throws {
        try RawLMDB.withWrite(db.path) { txn in
            for (name, count) in [("o:UpgradeDog", 299), ("o:UpgradePerson", 39), ("o:UpgradeAddress", 39)] {
                let entries = try RawLMDB.entries(txn, database: name)
                XCTAssertEqual(entries.first?.key, Runs.countKey, name, file: file, line: line)
                XCTAssertLessThan(entries.count, count / 2, "\(name): several records per entry", file: file, line: line)
                let records = try RawLMDB.records(txn, database: name)
                XCTAssertEqual(records.count, count, name, file: file, line: line)
                for record in records {
                    let opened = record.key.withUnsafeBytes { k in record.value.withUnsafeBytes { Checksum.open(key: k, sealed: $0) != nil } }
                    XCTAssertTrue(opened, "\(name): a record fails its checksum", file: file, line: line)
                }
            }
            // The index of the dogs' ages: blocks of object keys, one entry per dog in all.
            let blocks = try RawLMDB.entries(txn, database: "i:UpgradeDog.age")
            XCTAssertLessThan(blocks.count, 299 / 4, "several object keys per block", file: file, line: line)
            XCTAssertEqual(try RawLMDB.indexEntries(txn, database: "i:UpgradeDog.age").count, 299, file: file, line: line)
        }
    }

    /// What `testWriteFixture` wrote.
    private func assertFixtureContent(_ lattice: Lattice) throws {
        let dogs = lattice.objects(UpgradeDog.self)
        XCTAssertEqual(dogs.count, 299, "dog 3 was deleted")
        let people = lattice.objects(UpgradePerson.self)
        XCTAssertEqual(people.count, 39, "person 40 was deleted")
        func dog(_ i: Int) throws -> UpgradeDog { try XCTUnwrap(dogs.first { $0.name == "dog \(i)" }) }
        for person in people {
            let p = person.id
            var expected = ["dog 0"]
            if p != 1 && p != 3 { expected.append("dog \(p)") }   // person 1 removed dog 1; dog 3 is gone
            if p % 2 == 0 { expected.append("dog 0") }
            XCTAssertEqual(person.dogs.map(\.name), expected, "person \(p)")
            XCTAssertEqual(person.favourite?.name, p % 5 == 3 ? nil : "dog \(p % 5)")
            XCTAssertEqual(person.toys.map(\.name), ["dog \(100 + p % 3)"])
            XCTAssertEqual(person.byName["first"]??.name, "dog \(200 + p)")
            XCTAssertEqual(person.byName.count, 1, "setting nil removed \"none\"")
            XCTAssertEqual(person.address?.street, "\(p) Main Street")
            var numbers = (0..<(p == 1 ? 700 : p)).map { $0 * p }
            if p == 1 { numbers.remove(at: 300) }
            XCTAssertEqual(Array(person.numbers), numbers)
        }
        // Dog 0: every person walks it once, the even ones twice; persons 5, 10, ..., 35 favour it.
        let dog0 = try dog(0)
        XCTAssertEqual(dog0.walkers.count, 20 + 19 * 2)
        XCTAssertEqual(Array(dog0.walkers).count, 58)
        XCTAssertEqual(dog0.walkers.filter { $0.id == 2 }.count, 2)
        XCTAssertEqual(dog0.fans.map(\.id).sorted(), [5, 10, 15, 20, 25, 30, 35])
        XCTAssertEqual(dog0.fans.count, 7)
        XCTAssertEqual(try dog(1).walkers.count, 0)
        XCTAssertEqual(try dog(2).walkers.map(\.id), [2])
    }

    // MARK: Upgrading format 4

    /// Format 4 (one record per LMDB entry, written by the code of commit a459a36, the last that wrote
    /// it) is packed on the first read-write open: every object, link, collection, backlink and index
    /// reads the same, in a file read again from disk, and stays writable.
    func testAFormatFourFileIsPackedOnOpenWithNothingLost() throws {
        let db = try fixtureCopy("format4")
        XCTAssertEqual(try RawLMDB.get(db.path, database: "meta", key: "format"), RawLMDB.sealed(key: "format", [4, 0, 0, 0]))
        try RawLMDB.withWrite(db.path) { txn in
            XCTAssertEqual(try RawLMDB.entries(txn, database: "o:UpgradeDog").count, 299, "format 4: one entry per record")
        }
        assertLatticeError(try open(db, readOnly: true),
                           .readOnly(path: try storagePath(of: db),
                                     operation: "upgrading it from file format 4 (open it read-write once with this version)"))
        do {
            let lattice = try open(db)
            XCTAssertEqual(lattice.verify(), [])
            try assertFixtureContent(lattice)
        }
        XCTAssertEqual(try RawLMDB.get(db.path, database: "meta", key: "format"), RawLMDB.sealed(key: "format", [6, 0, 0, 0]))
        try assertPacked(db)

        do {
            let reopened = try open(db, readOnly: true)
            try assertFixtureContent(reopened)
            XCTAssertEqual(try reopened.objects(UpgradeDog.self).filter("age == 5").count, 18, "the index reads the same")
            XCTAssertEqual(reopened.verify(), [])
        }
        // Written after the upgrade: objects added, changed and deleted, in a file read from disk again.
        do {
            let lattice = try open(db)
            try lattice.write {
                for i in 300..<400 {
                    let dog = UpgradeDog()
                    dog.name = "dog \(i)"
                    dog.age = 5
                    try lattice.add(dog)
                }
                try lattice.delete(try lattice.objects(UpgradeDog.self).filter("name == 'dog 7'"))
                try XCTUnwrap(lattice.objects(UpgradeDog.self).first { $0.name == "dog 8" }).name = "renamed"
            }
        }
        let final = try open(db)
        XCTAssertEqual(final.objects(UpgradeDog.self).count, 299 + 100 - 1)
        XCTAssertEqual(try final.objects(UpgradeDog.self).filter("age == 5").count, 18 + 100)
        XCTAssertEqual(try final.objects(UpgradeDog.self).filter("name == 'renamed'").count, 1)
        XCTAssertEqual(final.verify(), [])
    }

    func testAReadOnlyOpenOfAFormatTwoFileFailsAndLeavesIt() throws {
        let db = try fixtureCopy()
        let path = try storagePath(of: db)
        assertLatticeError(try open(db, readOnly: true),
                           .readOnly(path: path, operation: "upgrading it from file format 2 (open it read-write once with this version)"))
        XCTAssertEqual(try RawLMDB.get(db.path, database: "meta", key: "format"), RawLMDB.sealed(key: "format", [2, 0, 0, 0]))
        XCTAssertEqual(try backlinkKeySizes(db), [8])
        // Read-write once, then read-only works.
        do { _ = try open(db) }
        try assertFixtureContent(try open(db, readOnly: true))
    }
}
