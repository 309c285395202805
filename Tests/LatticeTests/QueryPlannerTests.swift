import Foundation
import XCTest
@testable import Lattice

/// `explain()` shows the plan each predicate shape gets, and plans give right answers.
final class QueryPlannerTests: QueryTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try lattice.write {
            for i in 0..<1000 {
                let item = QItem()
                item.id = i
                item.int = i % 100
                item.intIdx = i % 100
                item.optIntIdx = i % 10 == 0 ? nil : i % 7
                item.stringIdx = i == 500 ? "unique" : ["rex", "Rover", "ROVER", "bella", "straße"][i % 5]
                item.string = item.stringIdx
                item.dateIdx = Date(timeIntervalSinceReferenceDate: Double(i % 50))
                try lattice.add(item)
            }
            for name in ["a", "b", "c"] { try lattice.add(QTag(value: ["name": name, "rank": name.count])) }
        }
    }

    private func plan(_ predicate: String, _ args: Any...) throws -> (String, Results<QItem>) {
        let results = try lattice.objects(QItem.self).filter(predicate, argumentArray: args)
        return (results.explain(), results)
    }

    private func assertPlan(_ predicate: String, _ args: Any..., contains fragments: [String], count: Int,
                            file: StaticString = #filePath, line: UInt = #line) throws {
        let results = try lattice.objects(QItem.self).filter(predicate, argumentArray: args)
        let explained = results.explain()
        for f in fragments { XCTAssertTrue(explained.contains(f), "'\(explained)' lacks '\(f)'", file: file, line: line) }
        XCTAssertEqual(results.count, count, predicate, file: file, line: line)
        XCTAssertEqual(Array(results).count, count, predicate, file: file, line: line)
    }

    func testPrimaryKeySeeksAndRangesUseTheObjectsDatabase() throws {
        try assertPlan("id == 5", contains: ["primary key seek QItem.id == 5", "(~1 rows)"], count: 1)
        try assertPlan("id IN {1, 2, 3000}", contains: ["primary key seek QItem.id IN {1, 2, 3000}", "(~2 rows)"], count: 2)
        try assertPlan("id > 10 AND id <= 20", contains: ["primary key range QItem.id (10, 20] (~10 rows)"], count: 10)
        try assertPlan("id BETWEEN {990, 2000}", contains: ["primary key range QItem.id [990, 2000]"], count: 10)
        try assertPlan("id < 2.5", contains: ["primary key range QItem.id (-inf, 2]"], count: 3)
        let tags = try lattice.objects(QTag.self).filter("name == 'b'")
        XCTAssertTrue(tags.explain().contains("index seek QTag.name == 'b' (~1 rows)"), tags.explain())
        XCTAssertEqual(tags.first?.rank, 1)
    }

    func testIndexedEqualityAndInAreSeeks() throws {
        try assertPlan("intIdx == 5", contains: ["index seek QItem.intIdx == 5 (~10 rows)"], count: 10)
        try assertPlan("intIdx IN %@", [1, 2, 2], contains: ["index seek QItem.intIdx IN {1, 2, 2} (~20 rows)"], count: 20)
        try assertPlan("optIntIdx == nil", contains: ["index seek QItem.optIntIdx == nil (~100 rows)"], count: 100)
        try assertPlan("boolIdx == false", contains: ["index seek QItem.boolIdx"], count: 1000)
        try assertPlan("dateIdx == %@", Date(timeIntervalSinceReferenceDate: 3), contains: ["index seek QItem.dateIdx"], count: 20)
        try assertPlan("stringIdx == 'rex'", contains: ["index seek QItem.stringIdx == 'rex' (~199 rows)"], count: 199)
        try assertPlan("intIdx == 2.5", contains: ["empty"], count: 0)
    }

    func testRangesBetweenAndBeginsWithAreRangeScans() throws {
        try assertPlan("intIdx >= 20 AND intIdx < 30", contains: ["index range QItem.intIdx [20, 30) (~100 rows)"], count: 100)
        try assertPlan("intIdx BETWEEN {1, 3}", contains: ["index range QItem.intIdx [1, 3] (~30 rows)"], count: 30)
        try assertPlan("intIdx > 97.5", contains: ["index range QItem.intIdx [98, +inf) (~20 rows)"], count: 20)
        try assertPlan("optIntIdx < 2", contains: ["index range QItem.optIntIdx (-inf, 2)"], count: 257)
        try assertPlan("dateIdx < %@", Date(timeIntervalSinceReferenceDate: 2), contains: ["index range QItem.dateIdx"], count: 40)
        try assertPlan("stringIdx BEGINSWITH 'R'", contains: ["index prefix QItem.stringIdx BEGINSWITH 'R' (~400 rows)"], count: 400)
        try assertPlan("intIdx > 50 AND intIdx < 40", contains: ["empty"], count: 0)
    }

    func testCaseInsensitiveIndex() throws {
        try assertPlan("stringIdx BEGINSWITH[c] 'r'", contains: ["case-insensitive index prefix QItem.stringIdx BEGINSWITH[c] 'r' (~599 rows)"],
                       count: 599)
        try assertPlan("stringIdx ==[c] 'ROVER'", contains: ["case-insensitive index seek QItem.stringIdx ==[c] 'ROVER' (~400 rows)"],
                       count: 400)
        try assertPlan("stringIdx ==[c] 'STRASSE'", contains: ["case-insensitive index seek"], count: 200)
        try assertPlan("stringIdx IN[c] {'REX', 'Unique'}", contains: ["case-insensitive index seek"], count: 200)
        // [d] folds diacritics, which the index does not: a scan.
        try assertPlan("stringIdx ==[cd] 'STRASSE'", contains: ["full scan", "-> filter stringIdx ==[cd] 'STRASSE'"], count: 200)
        // The folded index follows updates and deletes.
        try lattice.write {
            for item in try lattice.objects(QItem.self).filter("stringIdx == 'ROVER'") { item.stringIdx = "Zed" }
            try lattice.delete(lattice.objects(QItem.self).filter("stringIdx == 'rex'"))
        }
        try assertPlan("stringIdx ==[c] 'rover'", contains: ["case-insensitive index seek"], count: 200)
        try assertPlan("stringIdx ==[c] 'ZED'", contains: ["case-insensitive index seek"], count: 200)
        try assertPlan("stringIdx BEGINSWITH[c] 'R'", contains: ["case-insensitive"], count: 200)
    }

    func testAndPicksTheMostSelectiveIndexAndFiltersTheRest() throws {
        try assertPlan("intIdx == 0 AND stringIdx == 'unique'",
                       contains: ["index seek QItem.stringIdx == 'unique' (~1 rows) -> filter intIdx == 0"], count: 1)
        try assertPlan("stringIdx == 'unique' AND intIdx == 0",
                       contains: ["index seek QItem.stringIdx == 'unique' (~1 rows) -> filter intIdx == 0"], count: 1)
        try assertPlan("intIdx < 50 AND intIdx == 3 AND string BEGINSWITH 'r'",
                       contains: ["index seek QItem.intIdx == 3 (~10 rows) -> filter intIdx < 50 AND string BEGINSWITH 'r'"], count: 0)
        try assertPlan("intIdx BETWEEN {0, 1} AND stringIdx BEGINSWITH[c] 'r'",
                       contains: ["index range QItem.intIdx [0, 1] (~20 rows) -> filter stringIdx BEGINSWITH[c] 'r'"], count: 19)
    }

    func testOrOfIndexableTermsIsAUnion() throws {
        try assertPlan("intIdx == 1 OR stringIdx == 'unique' OR id == 3",
                       contains: ["union(index seek QItem.intIdx == 1 (~10 rows) | index seek QItem.stringIdx == 'unique' (~1 rows) | "
                           + "primary key seek QItem.id == 3 (~1 rows))"], count: 12)
        try assertPlan("(intIdx == 1 AND int == 1) OR intIdx == 2", contains: ["union(", "-> filter int == 1"], count: 20)
        try assertPlan("intIdx == 1 OR int == 2", contains: ["full scan (~1000 rows) -> filter intIdx == 1 OR int == 2"], count: 20)
        try assertPlan("(intIdx == 1 OR intIdx == 2) AND int >= 2", contains: ["union(", "-> filter int >= 2"], count: 10)
        try assertPlan("(intIdx == 0 OR intIdx == 2) AND stringIdx == 'unique'",
                       contains: ["index seek QItem.stringIdx == 'unique' (~1 rows) -> filter intIdx == 0 OR intIdx == 2"], count: 1)
    }

    func testEverythingElseIsAFullScanWithTheCompiledPredicate() throws {
        try assertPlan("int == 5", contains: ["full scan (~1000 rows) -> filter int == 5"], count: 10)
        try assertPlan("NOT intIdx == 5", contains: ["full scan", "NOT intIdx == 5"], count: 990)
        try assertPlan("intIdx != 5", contains: ["full scan"], count: 990)
        try assertPlan("stringIdx CONTAINS 'ove'", contains: ["full scan"], count: 200)
        try assertPlan("TRUEPREDICATE", contains: ["full scan (~1000 rows)"], count: 1000)
        try assertPlan("FALSEPREDICATE", contains: ["empty"], count: 0)
    }

    func testSortOnAnIndexedPropertyWithoutFilterWalksTheIndex() throws {
        let byIndex = try lattice.objects(QItem.self).sorted(byKeyPath: "intIdx", ascending: false)
        XCTAssertEqual(byIndex.explain(), "QItem: walk index QItem.intIdx descending (~1000 rows)")
        let bySort = try lattice.objects(QItem.self).filter("TRUEPREDICATE").sorted(byKeyPath: "int", ascending: false)
        XCTAssertTrue(bySort.explain().hasSuffix("-> sort int DESC"), bySort.explain())
        XCTAssertEqual(byIndex.map(\.id), bySort.map(\.id))
        XCTAssertEqual(byIndex.prefix(3).map(\.id), [99, 199, 299], "ties keep object order")
        let strings = try lattice.objects(QItem.self).sorted(byKeyPath: "stringIdx")
        XCTAssertTrue(strings.explain().contains("walk index QItem.stringIdx ascending"))
        XCTAssertEqual(strings.first?.stringIdx, "ROVER")
        XCTAssertEqual(strings.last?.stringIdx, "unique")
        let byKey = try lattice.objects(QItem.self).sorted(byKeyPath: "id", ascending: false)
        XCTAssertTrue(byKey.explain().contains("walk primary key QItem.id descending"))
        XCTAssertEqual(byKey.first?.id, 999)
    }

    func testCountOfAnExactIndexScanReadsNoRecord() throws {
        for predicate in ["intIdx == 5", "intIdx IN {1, 2}", "intIdx BETWEEN {1, 3}", "id < 10", "stringIdx ==[c] 'rover'"] {
            let results = try lattice.objects(QItem.self).filter(predicate)
            let info = try lattice.requireClass(QItem.self)
            let fast = try results.countWithoutReading(info, lattice.readTransaction())
            XCTAssertNotNil(fast, predicate)
            XCTAssertEqual(fast, Array(results).count, predicate)
        }
        let scanned = try lattice.objects(QItem.self).filter("int == 5")
        XCTAssertNil(try scanned.countWithoutReading(lattice.requireClass(QItem.self), lattice.readTransaction()))
    }

    func testLongIndexedStringsAreVerified() throws {
        let long = String(repeating: "x", count: 700)
        try lattice.write {
            for (i, suffix) in ["a", "b", "c"].enumerated() {
                let item = QItem()
                item.id = 5000 + i
                item.stringIdx = long + suffix
                item.optStringIdx = long + suffix
                try lattice.add(item)
            }
        }
        try assertPlan("stringIdx == %@", long + "b", contains: ["index seek", "-> filter stringIdx =="], count: 1)
        XCTAssertEqual(try lattice.objects(QItem.self).filter("optStringIdx == %@", long + "c").first?.id, 5002)
        XCTAssertEqual(try lattice.objects(QItem.self).filter("stringIdx > %@", long + "a").count, 2)
        XCTAssertEqual(try lattice.objects(QItem.self).filter("stringIdx BEGINSWITH[c] %@", long.uppercased() + "C").count, 1)
        let sorted = try lattice.objects(QItem.self).filter("stringIdx BEGINSWITH 'xxx'").sorted(byKeyPath: "stringIdx", ascending: false)
        XCTAssertEqual(sorted.map(\.id), [5002, 5001, 5000])
        let walked = try lattice.objects(QItem.self).sorted(byKeyPath: "stringIdx", ascending: false)
        XCTAssertEqual(walked.prefix(3).map(\.id), [5002, 5001, 5000])
    }
}
