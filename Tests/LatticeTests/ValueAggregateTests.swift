import Foundation
import XCTest
@testable import Lattice

final class VANumbers: Object {
    @Persisted var ints: List<Int?>
    @Persisted var doubles: List<Double?>
    @Persisted var decimals: List<Decimal>
    @Persisted var optionalDecimals: List<Decimal?>
    @Persisted var dates: List<Date?>
    @Persisted var set: MutableSet<Int?>
    @Persisted var map: Map<String, Decimal?>
    @Persisted var plainMap: Map<String, Int>
}

/// `min()`, `max()`, `sum()` and `average()` of collections of values, optional ones skipping nil,
/// managed (read back from the file) and unmanaged alike.
final class ValueAggregateTests: XCTestCase {
    func testAggregatesOfOptionalAndDecimalValues() throws {
        let db = makeTempDatabase("value-aggregates")
        let numbers = VANumbers()
        numbers.ints.append(objectsIn: [3, nil, 1, 8])
        numbers.doubles.append(objectsIn: [nil, 1.5, 2.5])
        numbers.decimals.append(objectsIn: [Decimal(string: "0.1")!, Decimal(string: "0.2")!])
        numbers.optionalDecimals.append(objectsIn: [nil, Decimal(3)])
        numbers.dates.append(objectsIn: [Date(timeIntervalSince1970: 5), nil, Date(timeIntervalSince1970: 2)])
        numbers.set.insert(objectsIn: [4, nil, 2])
        numbers.map["a"] = Decimal(1)
        numbers.map["b"] = nil
        numbers.map["c"] = Decimal(2)
        numbers.plainMap["x"] = 1
        numbers.plainMap["y"] = 2
        func check(_ n: VANumbers, _ label: String) {
            XCTAssertEqual(n.ints.min(), 1, label)
            XCTAssertEqual(n.ints.max(), 8, label)
            XCTAssertEqual(n.ints.sum(), 12, label)
            XCTAssertEqual(n.ints.average(), 4, label)
            XCTAssertEqual(n.doubles.sum(), 4, label)
            XCTAssertEqual(n.doubles.average(), 2, label)
            XCTAssertEqual(n.decimals.sum(), Decimal(string: "0.3"), label)
            XCTAssertEqual(n.decimals.average(), Decimal(string: "0.15"), label)
            XCTAssertEqual(n.optionalDecimals.average(), Decimal(3), label)
            XCTAssertEqual(n.dates.min(), Date(timeIntervalSince1970: 2), label)
            XCTAssertEqual(n.dates.max(), Date(timeIntervalSince1970: 5), label)
            XCTAssertEqual(n.set.sum(), 6, label)
            XCTAssertEqual(n.set.average(), 3, label)
            XCTAssertEqual(n.map.min(), Decimal(1), label)
            XCTAssertEqual(n.map.sum(), Decimal(3), label)
            XCTAssertEqual(n.map.average(), Decimal(string: "1.5"), label)
            XCTAssertEqual(n.plainMap.average(), 1.5, label)
        }
        check(numbers, "unmanaged")
        do {
            let lattice = try db.open([VANumbers.self])
            try lattice.write { try lattice.add(numbers) }
            check(numbers, "managed")
        }
        check(try XCTUnwrap(db.open([VANumbers.self]).objects(VANumbers.self).first), "read back")

        let empty = VANumbers()
        empty.ints.append(nil)
        XCTAssertNil(empty.ints.min())
        XCTAssertNil(empty.ints.average())
        XCTAssertEqual(empty.ints.sum(), 0)
        XCTAssertNil(empty.decimals.average())
        XCTAssertNil(empty.map.max())
    }
}
