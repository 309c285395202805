import Foundation
import XCTest
@testable import Lattice

/// `min`/`max(ofProperty:)` of a whole class's indexed property (or integer primary key), and `first`/`last`
/// of a whole class sorted by one, read one end of the index instead of every object. Each must give
/// what reading every object gives: the same values in an unindexed copy of the property are the
/// oracle. Positions near the start, read from the index's start, are checked the same way. Ties (first and last of equal values), nil, NaN (at both ends of an index, sorting first),
/// strings longer than an index key, uncommitted writes, reopening and encryption are covered.
final class IndexEndTests: XCTestCase {
    /// Indexed property, its unindexed copy.
    private static let low = String(repeating: "0", count: FileLayout.maxIndexKey + 10)
    private static let high = String(repeating: "z", count: FileLayout.maxIndexKey + 10)
    private static let pairs = [("when", "plainWhen"), ("optWhen", "plainOptWhen"), ("rank", "plainRank"), ("name", "plainName")]

    private func add(_ lattice: Lattice, id: Int, _ rng: inout SplitMix64, nan: Bool) throws {
        let item = RNaNItem()
        item.id = id
        let values: [Double] = [-1e300, -86_400, -1, -0.0, 0, 1, 86_400, 1e300, .infinity, -.infinity]
        // NaN with the sign bit set only (filed at the low end of the index), and of both signs.
        let whens = values + (nan ? [-.nan] : []), optWhens = values + (nan ? [.nan, -.nan] : [])
        item.when = Date(timeIntervalSinceReferenceDate: whens[Int(rng.next() % UInt64(whens.count))])
        item.plainWhen = item.when
        item.optWhen = rng.next() % 4 == 0 ? nil : Date(timeIntervalSinceReferenceDate: optWhens[Int(rng.next() % UInt64(optWhens.count))])
        item.plainOptWhen = item.optWhen
        item.rank = Int(rng.next() % 9) - 4
        item.plainRank = item.rank
        // Short names, "" (one data set), and the lowest and highest names sharing prefixes longer than an
        // index key (truncated keys standing for several values).
        let names = ["a", "b", "zz", Self.low + "b", Self.low + "a", Self.high + "b", Self.high + "a"] + (nan ? [""] : [])
        item.name = names[Int(rng.next() % UInt64(names.count))]
        item.plainName = item.name
        try lattice.add(item)
    }

    /// Equal values, NaN equal to NaN of the same bits.
    private func same(_ a: Date?, _ b: Date?) -> Bool {
        a?.timeIntervalSinceReferenceDate.bitPattern == b?.timeIntervalSinceReferenceDate.bitPattern
    }

    private func check(_ lattice: Lattice, _ label: String) throws {
        let all = lattice.objects(RNaNItem.self)
        for (indexed, plain) in Self.pairs {
            for ascending in [true, false] {
                let fast = try all.sorted(byKeyPath: indexed, ascending: ascending)
                let slow = try all.sorted(byKeyPath: plain, ascending: ascending)
                // Positions read before any key is: the first ones from the index's start, growing, then all.
                let expected = slow.map(\.id)
                let shown = min(70, expected.count)
                XCTAssertEqual((0..<shown).map { fast[$0].id }, Array(expected.prefix(shown)), "\(label): prefix sorted by \(indexed) ascending \(ascending)")
                XCTAssertEqual(try all.sorted(byKeyPath: indexed, ascending: ascending).prefix(20).map(\.id), Array(expected.prefix(20)), label)
                if let end = expected.indices.last { XCTAssertEqual(fast[end].id, expected[end], "\(label): the last position by \(indexed)") }
                XCTAssertEqual(fast.map(\.id), expected, "\(label): every position by \(indexed) ascending \(ascending)")
                XCTAssertEqual(fast.first?.id, slow.first?.id, "\(label): first sorted by \(indexed) ascending \(ascending)")
                XCTAssertEqual(fast.last?.id, slow.last?.id, "\(label): last sorted by \(indexed) ascending \(ascending)")
                XCTAssertEqual(fast.first?.id, Array(fast).first?.id, "\(label): first of \(indexed) as the whole order has it")
                XCTAssertEqual(fast.last?.id, Array(fast).last?.id, "\(label): last of \(indexed) as the whole order has it")
                XCTAssertEqual(slow.first?.id, Array(slow).first?.id, "\(label): first of \(plain) as the whole order has it")
                XCTAssertEqual(slow.last?.id, Array(slow).last?.id, "\(label): last of \(plain) as the whole order has it")
            }
        }
        for (indexed, plain) in [("when", "plainWhen"), ("optWhen", "plainOptWhen")] {
            XCTAssertTrue(same(try all.min(ofProperty: indexed), try all.min(ofProperty: plain)), "\(label): min of \(indexed)")
            XCTAssertTrue(same(try all.max(ofProperty: indexed), try all.max(ofProperty: plain)), "\(label): max of \(indexed)")
        }
        XCTAssertEqual(try all.min(ofProperty: "rank") as Int?, try all.min(ofProperty: "plainRank") as Int?, label)
        XCTAssertEqual(try all.max(ofProperty: "rank") as Int?, try all.max(ofProperty: "plainRank") as Int?, label)
        XCTAssertEqual(try all.min(ofProperty: "id") as Int?, all.map(\.id).min(), "\(label): the integer primary key")
        XCTAssertEqual(try all.max(ofProperty: "id") as Int?, all.map(\.id).max(), "\(label): the integer primary key")
        // Sorting does not change the extremes; distinct drops objects, so it reads the rest.
        XCTAssertEqual(try all.sorted(byKeyPath: "name").max(ofProperty: "rank") as Int?, all.map(\.rank).max(), label)
        let distinct = try all.distinct(by: ["plainName"])
        XCTAssertEqual(try distinct.max(ofProperty: "rank") as Int?, distinct.map(\.rank).max(), "\(label): over distinct objects")
        XCTAssertEqual(try all.filter("rank < 0").max(ofProperty: "rank") as Int?, all.map(\.rank).filter { $0 < 0 }.max(), label)
    }

    private func run(_ configuration: Lattice.Configuration, nan: Bool) throws {
        var rng = SplitMix64(state: nan ? 7 : 11)
        do {
            let lattice = try Lattice(configuration: configuration)
            let all = lattice.objects(RNaNItem.self)
            XCTAssertNil(try all.min(ofProperty: "rank") as Int?, "no objects")
            XCTAssertNil(try all.max(ofProperty: "optWhen") as Date?, "no objects")
            XCTAssertNil(try all.sorted(byKeyPath: "rank").first, "no objects")
            XCTAssertNil(try all.sorted(byKeyPath: "optWhen", ascending: false).last, "no objects")
            try lattice.write {
                for id in [-30, -20, -10] {
                    let item = RNaNItem()
                    item.id = id
                    item.name = "b"  // "" only in one data set
                    item.plainName = "b"
                    try lattice.add(item)
                }
            }
            XCTAssertNil(try all.max(ofProperty: "optWhen") as Date?, "only nil values")
            XCTAssertEqual(try all.sorted(byKeyPath: "optWhen", ascending: false).first?.id, -30, "nil values, the first of them")
            XCTAssertEqual(try all.sorted(byKeyPath: "optWhen").last?.id, -10, "nil values, the last of them")
            try lattice.write { for id in 3..<300 { try add(lattice, id: id, &rng, nan: nan) } }
            try check(lattice, "committed")
            try lattice.write {
                // Uncommitted: new objects at both ends of the key range, deletions, changed values.
                for id in [-5, 1_000, 1_001] { try add(lattice, id: id, &rng, nan: nan) }
                // The lowest key under the highest (truncated) name key holds its smaller value, as does the
                // highest key; with NaN, the lowest key holds the NaN filed above the other NaN.
                let lowest = try XCTUnwrap(lattice.object(ofType: RNaNItem.self, forPrimaryKey: -5))
                let highest = try XCTUnwrap(lattice.object(ofType: RNaNItem.self, forPrimaryKey: 1_001))
                for item in [lowest, highest] {
                    item.name = Self.high + "a"
                    item.plainName = item.name
                }
                if nan {
                    lowest.when = Date(timeIntervalSinceReferenceDate: Double(bitPattern: 0xFFF0_0000_0000_0001))
                    highest.when = Date(timeIntervalSinceReferenceDate: -.nan)
                    lowest.plainWhen = lowest.when
                    highest.plainWhen = highest.when
                }
                for item in Array(try all.filter("id < 40")) where item.id % 3 == 0 { try lattice.delete(item) }
                for item in Array(try all.filter("id > 250 AND id < 260")) {
                    item.rank = 100
                    item.plainRank = 100
                    item.name = Self.low
                    item.plainName = Self.low
                }
                try check(lattice, "inside a write")
            }
            try check(lattice, "after the write")
        }
        let reopened = try Lattice(configuration: configuration)
        try check(reopened, "reopened")
        XCTAssertEqual(reopened.verify(), [])
    }

    /// Sorted results that are not a whole class by one indexed property find their first and last object
    /// in one pass over the sort values: a List's objects (ties in list order, duplicates included) and
    /// filtered objects, by one key or two.
    func testFirstAndLastOfSortedListsAndFilters() throws {
        let lattice = try Lattice(configuration: makeTempDatabase("ends").configuration([Owner.self, Pet.self, Address.self]))
        let owner = Owner()
        var rng = SplitMix64(state: 3)
        try lattice.write {
            for _ in 0..<60 {
                let pet = Pet()
                pet.name = "p\(rng.next() % 7)"
                pet.age = Int(rng.next() % 5)
                owner.dogs.append(pet)
            }
            try lattice.add(owner)
            for i in [3, 40, 7] { owner.dogs.append(owner.dogs[i]) }
        }
        for keys in [[("age", true)], [("age", false)], [("name", true), ("age", false)], [("name", false), ("age", true)]] {
            let descriptors = keys.map { SortDescriptor(keyPath: $0.0, ascending: $0.1) }
            let sources: [(String, () throws -> Results<Pet>)] = [
                ("list", { try owner.dogs.sorted(by: descriptors) }),
                ("filter", { try lattice.objects(Pet.self).filter("age >= 1").sorted(by: descriptors) }),
                ("list filter", { try owner.dogs.filter("age <= 3").sorted(by: descriptors) }),
            ]
            for (label, results) in sources {
                let all = Array(try results())
                XCTAssertEqual(try results().first?._key, all.first?._key, "\(label) \(keys): first")
                XCTAssertEqual(try results().last?._key, all.last?._key, "\(label) \(keys): last")
            }
        }
        XCTAssertNil(try owner.dogs.filter("age > 10").sorted(byKeyPath: "name").first, "nothing left")
    }

    func testEndsOfIndexesWithoutNaN() throws {
        try run(makeTempDatabase("ends").configuration([RNaNItem.self]), nan: false)
    }

    func testEndsOfIndexesWithNaN() throws {
        try run(makeTempDatabase("ends").configuration([RNaNItem.self]), nan: true)
    }

    func testEndsInAnEncryptedFile() throws {
        var configuration = makeTempDatabase("ends").configuration([RNaNItem.self])
        configuration.encryptionKey = Data((0..<64).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) })
        try run(configuration, nan: false)
    }
}
