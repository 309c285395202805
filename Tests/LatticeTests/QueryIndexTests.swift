import Foundation
import XCTest
@testable import Lattice

/// The indexes queries rely on: key encodings, the case-folded index, persistence.
final class QueryIndexTests: QueryTestCase {
    /// The planner's keys for constants are byte-identical to the keys `store()` writes.
    func testPlannerKeysMatchStoredIndexKeys() throws {
        let info = try lattice.requireClass(QItem.self)
        let planner = QueryPlanner(info: info, txn: try lattice.readTransaction(), lattice: lattice)
        func check(_ name: String, _ value: Any?, _ scalar: ScalarValue, file: StaticString = #filePath, line: UInt = #line) throws {
            let p = try XCTUnwrap(info.property(named: name))
            var payload: [UInt8] = []
            XCTAssertTrue(p.valueType.encodeAny(value ?? NSNull(), into: &payload), name, file: file, line: line)
            let stored = payload.withUnsafeBytes { lattice.indexKey(p, payload: $0) }
            XCTAssertEqual(payload.withUnsafeBytes { lattice.withIndexKey(p, payload: $0) { Array($0) } }, stored,
                           "the key store() writes, \(name) \(String(describing: value))", file: file, line: line)
            XCTAssertEqual(planner.key(scalar, p, optional: p.property.isOptional)?.bytes, stored, "\(name) \(String(describing: value))",
                           file: file, line: line)
        }
        for i in [Int.min, -1, 0, 1, 300, Int.max] {
            try check("intIdx", i, .int(Int64(i)))
            try check("optIntIdx", i, .int(Int64(i)))
        }
        try check("optIntIdx", nil, .null)
        try check("boolIdx", true, .int(1))
        try check("boolIdx", false, .int(0))
        for d in [-1e300, -1.5, -0.0, 0.0, 2.25, Double.greatestFiniteMagnitude] {
            try check("dateIdx", Date(timeIntervalSinceReferenceDate: d), .double(d))
        }
        for s in ["", "a", "Zürich", String(repeating: "é", count: 400)] {
            try check("stringIdx", s, .bytes(Array(s.utf8)))
            try check("optStringIdx", s, .bytes(Array(s.utf8)))
        }
        try check("optStringIdx", nil, .null)
        let uuid = UUID()
        try check("uuidIdx", uuid, .bytes(withUnsafeBytes(of: uuid.uuid) { Array($0) }))
        let oid = ObjectId()
        try check("objectIdIdx", oid, .bytes(oid.byteArray))
    }

    /// Dates, negative numbers and -0.0 order correctly in the index (range scans rely on it).
    func testIndexRangesOrderSignedValues() throws {
        let values = [-1e9, -2.5, -0.0, 0.0, 0.5, 3e9]
        try lattice.write {
            for (i, v) in values.enumerated() {
                let item = QItem()
                item.id = i
                item.dateIdx = Date(timeIntervalSinceReferenceDate: v)
                item.intIdx = Int(v.rounded())
                try lattice.add(item)
            }
        }
        let items = lattice.objects(QItem.self)
        XCTAssertEqual(try items.filter("dateIdx < %@", Date(timeIntervalSinceReferenceDate: 0)).map(\.id), [0, 1])
        XCTAssertEqual(try items.filter("dateIdx == %@", Date(timeIntervalSinceReferenceDate: 0)).map(\.id), [2, 3], "-0.0 equals 0.0")
        XCTAssertEqual(try items.filter("intIdx BETWEEN {-3, 0}").map(\.id), [1, 2, 3])
        XCTAssertEqual(try items.sorted(byKeyPath: "dateIdx", ascending: false).map(\.id), [5, 4, 2, 3, 1, 0])
    }

    /// The folded index survives reopening, and `deleteAll` empties it.
    func testFoldedIndexPersistsAndFollowsDeleteAll() throws {
        try lattice.write {
            for (i, s) in ["Rex", "REX", "rover", "Bella"].enumerated() {
                let item = QItem()
                item.id = i
                item.stringIdx = s
                item.optStringIdx = i == 3 ? nil : s.uppercased()
                try lattice.add(item)
            }
        }
        lattice = nil
        lattice = try Lattice(configuration: config)
        let items = lattice.objects(QItem.self)
        let rex = try items.filter("stringIdx ==[c] 'rEx'")
        XCTAssertTrue(rex.explain().contains("case-insensitive index seek"))
        XCTAssertEqual(rex.map(\.id), [0, 1])
        XCTAssertEqual(try items.filter("optStringIdx BEGINSWITH[c] 'r'").map(\.id), [0, 1, 2])
        XCTAssertEqual(try items.filter("optStringIdx == nil").map(\.id), [3])
        try lattice.write { try lattice.deleteAll() }
        XCTAssertEqual(rex.count, 0)
        try lattice.write { try lattice.add(QItem(value: ["id": 9, "stringIdx": "rex"])) }
        XCTAssertEqual(rex.map(\.id), [9])
    }

    /// Upserts through `add(_:update:)` and `create` keep both indexes in step.
    func testUpsertsKeepIndexesInStep() throws {
        try lattice.write {
            try lattice.add(QTag(value: ["name": "a", "rank": 1]))
            try lattice.create(QTag.self, value: ["name": "a", "rank": 5], update: .modified)
            try lattice.add(QTag(value: ["name": "b", "rank": 5, "note": "x"]), update: .all)
        }
        let tags = lattice.objects(QTag.self)
        XCTAssertEqual(try tags.filter("rank == 1").count, 0)
        XCTAssertEqual(try tags.filter("rank == 5").map(\.name), ["a", "b"])
        XCTAssertEqual(try tags.filter("name ==[c] 'A'").first?.rank, 5)
        XCTAssertTrue(try tags.filter("rank == 5").explain().contains("index seek QTag.rank"))
    }

    /// Counting by index key adds up the sizes of the key's blocks without reading their object keys: it
    /// has to agree with the objects found, over many blocks, after deletes, and with a write's own changes.
    func testIndexCountsAgreeWithTheObjectsFound() throws {
        var ranks: [String: Int] = [:]
        try lattice.write {
            for i in 0..<3_000 {
                // Spread object keys: some blocks hold keys an object apart, others far apart.
                let rank = i < 1_500 ? i % 3 : (i % 7 == 0 ? 4 : 1)
                try lattice.add(QTag(value: ["name": "t\(i)", "rank": rank]))
                ranks["t\(i)"] = rank
            }
        }
        let tags = lattice.objects(QTag.self)
        func check(_ label: String) throws {
            for rank in [0, 1, 2, 4, 9] {
                let expected = ranks.values.filter { $0 == rank }.count
                XCTAssertEqual(try tags.filter("rank == %@", rank).count, expected, "\(label): rank \(rank)")
                XCTAssertEqual(try tags.filter("rank == %@", rank).map(\.name).count, expected, "\(label): rank \(rank)")
            }
            XCTAssertEqual(try tags.filter("rank IN {0, 4, 9}").count, ranks.values.filter { [0, 4].contains($0) }.count, label)
        }
        try check("committed")
        try lattice.write {
            for i in stride(from: 0, to: 3_000, by: 5) {
                try lattice.delete(XCTUnwrap(lattice.object(ofType: QTag.self, forPrimaryKey: "t\(i)")))
                ranks["t\(i)"] = nil
            }
            for i in 3_000..<3_400 {
                try lattice.add(QTag(value: ["name": "t\(i)", "rank": 2]))
                ranks["t\(i)"] = 2
            }
            try check("inside the write")
        }
        try check("after the commit")
    }

    /// A non-optional integer primary key is the object key: seeks and ranges need no index database.
    func testOptionalIntegerPrimaryKeyUsesItsIndex() throws {
        try lattice.write {
            try lattice.add(QOpt(value: ["code": NSNull(), "label": "none"]))
            for code in [-3, 0, 4] { try lattice.add(QOpt(value: ["code": code, "label": "\(code)"])) }
        }
        let opts = lattice.objects(QOpt.self)
        XCTAssertEqual(try opts.filter("code == nil").map(\.label), ["none"])
        XCTAssertTrue(try opts.filter("code == nil").explain().contains("index seek QOpt.code == nil"))
        XCTAssertEqual(try opts.filter("code < 1").map(\.label).sorted(), ["-3", "0"])
        XCTAssertTrue(try opts.filter("code < 1").explain().contains("index range QOpt.code"))
        XCTAssertEqual(try opts.sorted(byKeyPath: "code").map(\.label), ["none", "-3", "0", "4"])
    }
}
