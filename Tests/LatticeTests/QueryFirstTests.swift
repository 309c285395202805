import Foundation
import XCTest
@testable import Lattice

/// `first` of results filtered to one key (`filter("id == %@", key).first`, the lookup many programs write)
/// reads that key's first object with one lookup: the object with the smallest key among several under
/// an index key, nothing for a missing key, and inside a write what the write changed, in plaintext and
/// encrypted files.
final class QueryFirstTests: XCTestCase {
    private func number(_ lattice: Lattice, _ id: Int, group: Int) throws {
        let number = EditedNumber()
        number.id = id
        number.group = group
        try lattice.add(number)
    }

    private func entry(_ lattice: Lattice, _ name: String, group: Int) throws {
        let entry = EditedEntry()
        entry.name = name
        entry.group = group
        try lattice.add(entry)
    }

    private func check(_ configuration: Lattice.Configuration) throws {
        let lattice = try Lattice(configuration: configuration)
        try lattice.write {
            for id in [30, 10, 20, 40] { try number(lattice, id, group: id == 40 ? 4 : 3) }
            for name in ["c", "a", "b"] { try entry(lattice, name, group: 7) }
        }
        let numbers = lattice.objects(EditedNumber.self)
        let entries = lattice.objects(EditedEntry.self)
        XCTAssertEqual(try numbers.filter("id == %@", 20).first?.id, 20, "by the integer primary key")
        XCTAssertNil(try numbers.filter("id == %@", 21).first, "a missing primary key")
        XCTAssertEqual(try numbers.filter("group == %@", 3).first?.id, 10, "the smallest key under an index key")
        XCTAssertNil(try numbers.filter("group == %@", 5).first, "a missing index key")
        XCTAssertEqual(try entries.filter("name == %@", "b").first?.name, "b", "by a String primary key")
        XCTAssertEqual(try entries.filter("group == 7").first?.name, "c", "the first added (keys in order of adding)")
        try lattice.write {
            try lattice.delete(try XCTUnwrap(numbers.filter("id == %@", 10).first))
            XCTAssertNil(try numbers.filter("id == %@", 10).first, "deleted in this write")
            XCTAssertEqual(try numbers.filter("group == %@", 3).first?.id, 20, "its index entry removed in this write")
            try number(lattice, 5, group: 3)
            XCTAssertEqual(try numbers.filter("group == %@", 3).first?.id, 5, "filed in this write")
            try lattice.delete(try XCTUnwrap(entries.filter("name == %@", "c").first))
            XCTAssertNil(try entries.filter("name == %@", "c").first)
            XCTAssertEqual(try entries.filter("group == 7").first?.name, "a")
        }
        XCTAssertEqual(try numbers.filter("group == %@", 3).first?.id, 5)
        XCTAssertEqual(try entries.filter("group == 7").first?.name, "a")
        XCTAssertEqual(lattice.verify(), [])
    }

    func testFirstOfOneKeyInAPlaintextFile() throws {
        let db = makeTempDatabase("first")
        try check(db.configuration([EditedNumber.self, EditedEntry.self]))
    }

    func testFirstOfOneKeyInAnEncryptedFile() throws {
        let db = makeTempDatabase("first")
        let key = Data((0..<64).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) })
        try check(Lattice.Configuration(fileURL: db.url, objectTypes: [EditedNumber.self, EditedEntry.self], encryptionKey: key))
    }
}
