import Foundation
import XCTest
@testable import Lattice

/// `where { }` builds the same AST as the string predicate.
final class QueryBuilderTests: QueryTestCase {
    private func positionless(_ node: QueryNode?) -> String {
        "\(String(describing: node))".replacingOccurrences(of: #"position: \d+"#, with: "", options: .regularExpression)
    }

    private func assertSame(_ typed: Results<QItem>, _ predicate: String, _ args: Any..., file: StaticString = #filePath, line: UInt = #line) throws {
        let parsed = try lattice.objects(QItem.self).filter(predicate, argumentArray: args)
        XCTAssertEqual(positionless(typed.query.node), positionless(parsed.query.node), predicate, file: file, line: line)
        XCTAssertEqual(typed.map(\.id), parsed.map(\.id), predicate, file: file, line: line)
        XCTAssertEqual(typed.explain(), parsed.explain(), predicate, file: file, line: line)
    }

    func testTypedQueriesMatchStringQueries() throws {
        var rng = SplitMix64(state: 3)
        try lattice.write {
            for id in 0..<200 {
                let item = QItem()
                item.id = id
                QueryTestCase.randomize(item, &rng)
                try lattice.add(item)
            }
        }
        let items = lattice.objects(QItem.self)
        try assertSame(items.where { $0.int < 2 && $0.string.starts(with: "R") }, "int < 2 AND string BEGINSWITH 'R'")
        try assertSame(items.where { $0.intIdx == 3 || $0.intIdx >= 5 }, "intIdx == 3 OR intIdx >= 5")
        try assertSame(items.where { !($0.int64 <= 0) }, "NOT int64 <= 0")
        try assertSame(items.where { $0.int8 > 1 && $0.int16 != 2 && $0.int32 == 3 }, "int8 > 1 AND int16 != 2 AND int32 == 3")
        try assertSame(items.where { $0.optInt == nil }, "optInt == nil")
        try assertSame(items.where { $0.optIntIdx != nil && $0.optIntIdx > 0 }, "optIntIdx != nil AND optIntIdx > 0")
        try assertSame(items.where { $0.stringIdx.starts(with: "r", options: .caseInsensitive) }, "stringIdx BEGINSWITH[c] 'r'")
        try assertSame(items.where { $0.optString.contains("ss", options: [.caseInsensitive, .diacriticInsensitive]) },
                       "optString CONTAINS[cd] 'ss'")
        try assertSame(items.where { $0.string.ends(with: "e") }, "string ENDSWITH 'e'")
        try assertSame(items.where { $0.string.like("r?v*") }, "string LIKE 'r?v*'")
        try assertSame(items.where { $0.string.equals("ABC", options: .caseInsensitive) }, "string ==[c] 'ABC'")
        try assertSame(items.where { $0.intIdx.in([1, 2, 3]) }, "intIdx IN {1, 2, 3}")
        try assertSame(items.where { $0.double.between(0, 2.5) }, "double BETWEEN {0.0, 2.5}")
        try assertSame(items.where { $0.bool == true && $0.boolIdx != false }, "bool == true AND boolIdx != false")
        try assertSame(items.where { $0.optBool == nil }, "optBool == nil")
        try assertSame(items.where { $0.dateIdx >= QueryTestCase.dates[2] }, "dateIdx >= %@", QueryTestCase.dates[2])
        try assertSame(items.where { $0.uuidIdx == QueryTestCase.uuids[1] }, "uuidIdx == %@", QueryTestCase.uuids[1])
        try assertSame(items.where { $0.objectIdIdx == QueryTestCase.objectIds[1] }, "objectIdIdx == %@", QueryTestCase.objectIds[1])
        try assertSame(items.where { $0.decimal > Decimal(1) }, "decimal > %@", Decimal(1))
        try assertSame(items.where { $0.data == Data([1]) }, "data == %@", Data([1]))
        try assertSame(items.where { $0.kind == .beta }, "kind == 'beta'")
        try assertSame(items.where { $0.float < 1 }, "float < 1.0")
        try assertSame(items.where { $0.int == $0.intIdx }, "int == intIdx")
        try assertSame(items.where { $0.int > $0.optInt }, "int > optInt")
        try assertSame(items.where { $0.optString != $0.string && $0.bool == $0.optBool }, "optString != string AND bool == optBool")
        try assertSame(items.where { $0.date <= $0.dateIdx || $0.decimal >= $0.optDecimal }, "date <= dateIdx OR decimal >= optDecimal")
        try assertSame(items.where { QueryPredicate(true) && $0.id < 10 }, "TRUEPREDICATE AND id < 10")
        // Filters and typed queries chain into one plan.
        try assertSame(try items.filter("int > 0").where { $0.intIdx == 2 }, "int > 0 AND intIdx == 2")
    }

    func testEveryPropertyResolvesToItsOwnName() throws {
        let info = try lattice.requireClass(QItem.self)
        let resolver = KeyPathResolver<QItem>(lattice: lattice, info: info)
        XCTAssertEqual(resolver.name(of: \QItem.id), "id")
        XCTAssertEqual(resolver.name(of: \QItem.int), "int")
        XCTAssertEqual(resolver.name(of: \QItem.intIdx), "intIdx")
        XCTAssertEqual(resolver.name(of: \QItem.optInt), "optInt")
        XCTAssertEqual(resolver.name(of: \QItem.optIntIdx), "optIntIdx")
        XCTAssertEqual(resolver.name(of: \QItem.string), "string")
        XCTAssertEqual(resolver.name(of: \QItem.stringIdx), "stringIdx")
        XCTAssertEqual(resolver.name(of: \QItem.optStringIdx), "optStringIdx")
        XCTAssertEqual(resolver.name(of: \QItem.bool), "bool")
        XCTAssertEqual(resolver.name(of: \QItem.boolIdx), "boolIdx")
        XCTAssertEqual(resolver.name(of: \QItem.optBool), "optBool")
        XCTAssertEqual(resolver.name(of: \QItem.date), "date")
        XCTAssertEqual(resolver.name(of: \QItem.dateIdx), "dateIdx")
        XCTAssertEqual(resolver.name(of: \QItem.uuid), "uuid")
        XCTAssertEqual(resolver.name(of: \QItem.uuidIdx), "uuidIdx")
        XCTAssertEqual(resolver.name(of: \QItem.objectIdIdx), "objectIdIdx")
        XCTAssertEqual(resolver.name(of: \QItem.decimal), "decimal")
        XCTAssertEqual(resolver.name(of: \QItem.float), "float")
        XCTAssertEqual(resolver.name(of: \QItem.kind), "kind")
        XCTAssertEqual(resolver.name(of: \QItem.optData), "optData")
        XCTAssertEqual(lattice.objects(QItem.self).count, 0, "resolving stores nothing")
    }

    /// A live handle remembers the name it found for a key path; key paths of the same value type stay
    /// apart, queries built from remembered names mean what fresh ones do, and a frozen handle (read
    /// from any thread) remembers nothing.
    func testKeyPathNamesAreRememberedByLiveHandles() throws {
        let info = try lattice.requireClass(QItem.self)
        let resolver = KeyPathResolver<QItem>(lattice: lattice, info: info)
        let ints: [(KeyPath<QItem, Int>, String)] = [(\.id, "id"), (\.int, "int"), (\.intIdx, "intIdx")]
        let strings: [(KeyPath<QItem, String>, String)] = [(\.string, "string"), (\.stringIdx, "stringIdx")]
        for _ in 0..<2 {
            for (keyPath, name) in ints.reversed() { XCTAssertEqual(resolver.name(of: keyPath), name) }
            for (keyPath, name) in strings { XCTAssertEqual(resolver.name(of: keyPath), name) }
        }
        XCTAssertEqual(try resolver.name(ofAny: \QItem.intIdx), "intIdx")
        XCTAssertEqual(lattice.keyPathNames.count, ints.count + strings.count)
        XCTAssertEqual(lattice.keyPathNames[\QItem.stringIdx], "stringIdx")

        try lattice.write {
            for id in 0..<30 {
                let item = QItem()
                item.id = id
                item.int = id % 3
                item.intIdx = id % 5
                try lattice.add(item)
            }
        }
        let items = lattice.objects(QItem.self)
        for _ in 0..<2 {
            XCTAssertEqual(items.where { $0.int == 1 && $0.intIdx == 2 }.map(\.id), [7, 22])
            XCTAssertEqual(items.where { $0.intIdx == 1 && $0.int == 2 }.map(\.id), [11, 26])
            XCTAssertEqual(try items.sorted(by: \.intIdx, ascending: false).prefix(2).map(\.intIdx), [4, 4])
        }

        let frozen = lattice.freeze()
        let frozenItems = frozen.objects(QItem.self)
        XCTAssertEqual(frozenItems.where { $0.int == 1 && $0.intIdx == 2 }.map(\.id), [7, 22])
        XCTAssertEqual(frozenItems.where { $0.intIdx == 1 && $0.int == 2 }.map(\.id), [11, 26])
        XCTAssertTrue(frozen.keyPathNames.isEmpty)
    }
}
