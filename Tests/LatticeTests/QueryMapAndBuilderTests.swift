import Foundation
import XCTest
@testable import Lattice

enum MBPriority: Int, PersistableEnum { case low = 1, mid = 2, high = 3 }

final class MBChild: Object {
    @Persisted var name = ""
    @Persisted(indexed: true) var age = 0
}

final class MBItem: Object {
    @Persisted var name = ""
    @Persisted var intCol = 0
    @Persisted var dateCol = Date(timeIntervalSince1970: 0)
    @Persisted var binaryCol = Data()
    @Persisted var optBinary: Data?
    @Persisted var priority = MBPriority.low
    @Persisted var optPriority: MBPriority?
    @Persisted var mapInt: Map<String, Int>
    @Persisted var mapOptInt: Map<String, Int?>
    @Persisted var mapString: Map<String, String>
    @Persisted var arrayInt: List<Int>
    @Persisted var arrayOptInt: List<Int?>
    @Persisted var setDouble: MutableSet<Double>
    @Persisted var children: List<MBChild>
    @Persisted var pets: Map<String, MBChild?>
}

/// Map queries by key, `@allKeys` and `@allValues`, and the type-safe forms Realm Swift has (ranges,
/// Data operands, enum ordering, collection aggregates, `containsAny`), each checked against the
/// objects it must find and against the string predicate it stands for.
final class QueryMapAndBuilderTests: XCTestCase {
    private var lattice: Lattice!
    private var items: Results<MBItem> { lattice.objects(MBItem.self) }

    private static func date(_ day: Int) -> Date { Date(timeIntervalSince1970: Double(day) * 86_400) }

    override func setUpWithError() throws {
        try super.setUpWithError()
        lattice = try makeTempDatabase("map-builder").open([MBItem.self, MBChild.self])
        try lattice.write {
            let ann = try lattice.create(MBItem.self, value: ["name": "Ann", "intCol": 5, "dateCol": Self.date(5),
                                                              "binaryCol": Data([1, 2, 3, 4]), "priority": MBPriority.low])
            ann.mapInt["foo"] = 1
            ann.mapInt["bar"] = 2
            ann.mapOptInt["foo"] = nil as Int?
            ann.mapOptInt["bar"] = 5
            ann.mapString["foo"] = "Hello"
            ann.mapString["Fóx"] = "x"
            ann.arrayInt.append(objectsIn: [1, 2, 3])
            ann.arrayOptInt.append(objectsIn: [nil, 4])
            ann.setDouble.insert(objectsIn: [1.5, 2.5])
            let c1 = try MBChild(value: ["name": "c1", "age": 1])
            ann.children.append(c1)
            ann.children.append(try MBChild(value: ["name": "c2", "age": 5]))
            ann.pets["rex"] = c1
            ann.pets["none"] = nil as MBChild?

            let bob = try lattice.create(MBItem.self, value: ["name": "Bob", "intCol": 6, "dateCol": Self.date(6),
                                                              "binaryCol": Data([2, 3]), "optBinary": Data([9, 9]),
                                                              "priority": MBPriority.mid, "optPriority": MBPriority.high])
            bob.mapInt["foo"] = 3
            bob.mapOptInt["foo"] = 7
            bob.mapString["FOO"] = "hello world"
            bob.arrayInt.append(5)
            let c3 = try MBChild(value: ["name": "c3", "age": 10])
            bob.children.append(c3)
            bob.pets["rex"] = c3

            _ = try lattice.create(MBItem.self, value: ["name": "Cy", "intCol": 7, "dateCol": Self.date(7),
                                                        "priority": MBPriority.high, "optPriority": MBPriority.low])
        }
    }

    override func tearDown() {
        lattice = nil
        super.tearDown()
    }

    private func names(_ results: Results<MBItem>) -> [String] { results.map(\.name).sorted() }

    private func assertFinds(_ predicate: String, _ args: Any..., finds expected: [String], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(names(try items.filter(predicate, argumentArray: args)), expected, predicate, file: file, line: line)
    }

    private func positionless(_ node: QueryNode?) -> String {
        "\(String(describing: node))".replacingOccurrences(of: #"position: \d+"#, with: "", options: .regularExpression)
    }

    /// The closure builds the string predicate's tree, and both find `expected`.
    private func assertSame(_ typed: (QueryObject<MBItem>) -> QueryPredicate, _ predicate: String, _ args: Any..., finds expected: [String],
                            file: StaticString = #filePath, line: UInt = #line) throws {
        let typedResults = items.where(typed)
        let parsed = try items.filter(predicate, argumentArray: args)
        XCTAssertEqual(positionless(typedResults.query.node), positionless(parsed.query.node), predicate, file: file, line: line)
        XCTAssertEqual(names(typedResults), expected, predicate, file: file, line: line)
        XCTAssertEqual(names(parsed), expected, predicate, file: file, line: line)
    }

    private func assertInvalid(_ predicate: String, _ args: Any..., mentions: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try items.filter(predicate, argumentArray: args), predicate, file: file, line: line) { error in
            guard case let LatticeError.invalidQuery(message) = error else { return XCTFail("\(error)", file: file, line: line) }
            XCTAssertTrue(message.contains(mentions), "\(message) should mention \(mentions)", file: file, line: line)
        }
    }

    // MARK: Maps

    func testValueAtAKey() {
        assertFinds("mapInt['foo'] == 1", finds: ["Ann"])
        assertFinds("mapInt[%@] == %@", "foo", 3, finds: ["Bob"])
        assertFinds("mapInt[$0] == $1", "foo", 3, finds: ["Bob"])
        assertFinds("mapInt[\"bar\"] == 2", finds: ["Ann"])
        assertFinds("mapInt[%s] == %d", "bar", 2, finds: ["Ann"])
        assertFinds("mapInt[$0] == $1", QueryTextArgument("foo"), QueryTextArgument("3"), finds: ["Bob"])
        // A missing key reads as nil, as in Realm: `!=` and `== nil` match it, orderings do not.
        assertFinds("mapInt['foo'] != 1", finds: ["Bob", "Cy"])
        assertFinds("NOT mapInt['foo'] == 1", finds: ["Bob", "Cy"])
        assertFinds("mapInt['bar'] == nil", finds: ["Bob", "Cy"])
        assertFinds("mapInt['foo'] > 1", finds: ["Bob"])
        assertFinds("mapInt['foo'] >= 1", finds: ["Ann", "Bob"])
        assertFinds("mapInt['foo'] < 3", finds: ["Ann"])
        assertFinds("mapInt['foo'] BETWEEN {0, 2}", finds: ["Ann"])
        assertFinds("mapInt['foo'] IN {1, 3}", finds: ["Ann", "Bob"])
        assertFinds("mapInt['nope'] == 1", finds: [])
        // A stored nil and a missing key both read as nil.
        assertFinds("mapOptInt['foo'] == nil", finds: ["Ann", "Cy"])
        assertFinds("mapOptInt['foo'] != nil", finds: ["Bob"])
        assertFinds("mapOptInt['bar'] > 4", finds: ["Ann"])
        // String operators, with [c] and [d], on the value at a key.
        assertFinds("mapString['foo'] BEGINSWITH 'He'", finds: ["Ann"])
        assertFinds("mapString['foo'] ==[c] 'hello'", finds: ["Ann"])
        assertFinds("mapString['foo'] LIKE 'H*o'", finds: ["Ann"])
        assertFinds("mapString['FOO'] CONTAINS[c] 'WORLD'", finds: ["Bob"])
        assertFinds("mapString['Fóx'] ==[cd] 'X'", finds: ["Ann"])
        assertFinds("mapString['foo'] ENDSWITH 'x'", finds: [])
        // Keys are exact: no case folding of the key.
        assertFinds("mapString['Foo'] != nil", finds: [])
        // A Map of objects: the object at a key, and its properties.
        assertFinds("pets['rex'].age > 3", finds: ["Bob"])
        assertFinds("pets['rex'].age < 3", finds: ["Ann"])
        assertFinds("pets['none'] == nil", finds: ["Ann", "Bob", "Cy"])
        assertFinds("pets['rex'] != nil", finds: ["Ann", "Bob"])
        assertFinds("pets['rex'].name != 'c1'", finds: ["Bob", "Cy"])
        assertFinds("mapInt['foo'] == 1 AND mapInt['bar'] == 2", finds: ["Ann"])
        assertFinds("mapInt['foo'] == 3 OR intCol == 7", finds: ["Bob", "Cy"])
    }

    func testAnIndexedEndBehindAKeyIsTestedPerObject() throws {
        let results = try items.filter("pets['rex'].age > 3")
        XCTAssertFalse(results.explain().contains("backlinks"), results.explain())
        XCTAssertEqual(names(results), ["Bob"])
        // Without a key the backlink table serves the same end index.
        XCTAssertTrue(try items.filter("ANY pets.age > 3").explain().contains("backlinks"))
    }

    func testMapKeyPathsReadBackInPlansAndMessages() throws {
        let plan = try items.filter("mapInt[%@] == 1", "it's").explain()
        XCTAssertTrue(plan.hasSuffix("filter mapInt['it\\'s'] == 1"), plan)
        XCTAssertTrue(try items.filter("mapString.@allKeys BEGINSWITH[c] 'a'").explain()
            .hasSuffix("filter ANY mapString.@allKeys BEGINSWITH[c] 'a'"))
        XCTAssertTrue(try items.filter("pets['rex'].age > 3").explain().hasSuffix("filter pets['rex'].age > 3"))
        assertInvalid("mapInt['foo'] == 'x'", mentions: "mapInt")
        let c1 = try XCTUnwrap(lattice.objects(MBChild.self).filter("name == 'c1'").first)
        try assertSame({ $0.pets["none"] == nil }, "pets['none'] == nil", finds: ["Ann", "Bob", "Cy"])
        try assertSame({ $0.pets["rex"] != c1 }, "pets['rex'] != %@", c1, finds: ["Bob", "Cy"])
        try assertSame({ $0.pets.values == c1 }, "pets.@allValues == %@", c1, finds: ["Ann"])
        try assertSame({ $0.pets.keys == "none" }, "pets.@allKeys == 'none'", finds: ["Ann"])
    }

    func testAllKeysAndAllValues() throws {
        assertFinds("mapInt.@allKeys == 'foo'", finds: ["Ann", "Bob"])
        assertFinds("mapInt.@allKeys == %@", "foo", finds: ["Ann", "Bob"])
        assertFinds("ANY mapInt.@allKeys == 'foo'", finds: ["Ann", "Bob"])
        assertFinds("mapInt.@allKeys != 'foo'", finds: ["Ann"])
        assertFinds("ALL mapInt.@allKeys == 'foo'", finds: ["Bob", "Cy"])
        assertFinds("NONE mapInt.@allKeys == 'foo'", finds: ["Cy"])
        assertFinds("'bar' IN mapInt.@allKeys", finds: ["Ann"])
        assertFinds("mapString.@allKeys ==[c] 'foo'", finds: ["Ann", "Bob"])
        assertFinds("mapString.@allKeys BEGINSWITH 'Fo'", finds: [])
        assertFinds("mapString.@allKeys BEGINSWITH[d] 'Fo'", finds: ["Ann"])
        assertFinds("mapString.@allKeys BEGINSWITH[cd] 'FO'", finds: ["Ann", "Bob"])
        assertFinds("mapString.@allKeys CONTAINS 'x'", finds: ["Ann"])
        assertFinds("mapString.@allKeys ENDSWITH[c] 'OO'", finds: ["Ann", "Bob"])
        assertFinds("mapString.@allKeys LIKE[c] 'f?o'", finds: ["Ann", "Bob"])
        assertFinds("mapInt.@allKeys.@count == 2", finds: ["Ann"])
        assertFinds("%K == 'foo'", "mapInt.@allKeys", finds: ["Ann", "Bob"])
        assertFinds("mapInt.@ALLKEYS == 'bar'", finds: ["Ann"])

        // @allValues is the Map itself: ANY value.
        assertFinds("mapInt.@allValues > 1", finds: ["Ann", "Bob"])
        assertFinds("mapInt > 1", finds: ["Ann", "Bob"])
        assertFinds("mapInt.@allValues == 1", finds: ["Ann"])
        assertFinds("ALL mapInt.@allValues < 3", finds: ["Ann", "Cy"])
        assertFinds("mapOptInt.@allValues == nil", finds: ["Ann"])
        assertFinds("mapString.@allValues CONTAINS[c] 'WORLD'", finds: ["Bob"])
        assertFinds("mapInt.@allValues.@max == 3", finds: ["Bob"])
        assertFinds("pets.@allValues.age > 3", finds: ["Bob"])
        assertFinds("%K > 2", "mapInt.@allValues", finds: ["Bob"])
    }

    func testBadMapKeyPathsThrowNamingTheProblem() {
        assertInvalid("intCol['foo'] == 1", mentions: "MBItem.intCol' is not a Map")
        assertInvalid("arrayInt['foo'] == 1", mentions: "MBItem.arrayInt' is not a Map")
        assertInvalid("mapInt[1] == 1", mentions: "String key")
        assertInvalid("mapInt[%@] == 1", 1, mentions: "must be a String")
        assertInvalid("mapInt['foo' == 1", mentions: "']' to close the key")
        assertInvalid("mapInt['a']['b'] == 1", mentions: "once per key path")
        assertInvalid("ANY mapInt['foo'] == 1", mentions: "ANY needs a to-many key path")
        assertInvalid("mapInt['foo'].@count == 1", mentions: "@count")
        assertInvalid("mapInt['foo'] == 'x'", mentions: "type mismatch")
        assertInvalid("arrayInt.@allKeys == 'x'", mentions: "@allKeys must follow a Map property")
        assertInvalid("intCol.@allValues == 1", mentions: "@allValues must follow a Map property")
        assertInvalid("mapInt.@allKeys.foo == 'x'", mentions: "@allKeys ends a key path")
        assertInvalid("mapInt.@allKeys > 1", mentions: "type mismatch")
        assertInvalid("mapInt.@allKeys.@max == 'a'", mentions: "keys of")
        assertInvalid("mapInt.@allKeys[c] == 'a'", mentions: "once per key path")
        assertInvalid("mapInt.@nope == 1", mentions: "@allKeys or @allValues")
    }

    func testTypedMapQueries() throws {
        let c1 = try XCTUnwrap(lattice.objects(MBChild.self).filter("name == 'c1'").first)
        try assertSame({ $0.mapInt["foo"] == 1 }, "mapInt['foo'] == 1", finds: ["Ann"])
        try assertSame({ $0.mapInt["foo"] != 1 }, "mapInt['foo'] != 1", finds: ["Bob", "Cy"])
        try assertSame({ !($0.mapInt["foo"] == 1) }, "NOT mapInt['foo'] == 1", finds: ["Bob", "Cy"])
        try assertSame({ $0.mapInt["foo"] > 1 }, "mapInt['foo'] > 1", finds: ["Bob"])
        try assertSame({ $0.mapInt["foo"] <= 1 }, "mapInt[%@] <= %@", "foo", 1, finds: ["Ann"])
        try assertSame({ $0.mapOptInt["foo"] == nil }, "mapOptInt['foo'] == nil", finds: ["Ann", "Cy"])
        try assertSame({ $0.mapString["foo"].starts(with: "he", options: .caseInsensitive) }, "mapString['foo'] BEGINSWITH[c] 'he'",
                       finds: ["Ann"])
        try assertSame({ $0.mapString["FOO"].like("*WORLD", caseInsensitive: true) }, "mapString['FOO'] LIKE[c] '*WORLD'", finds: ["Bob"])
        try assertSame({ $0.pets["rex"] == c1 }, "pets['rex'] == %@", c1, finds: ["Ann"])
        try assertSame({ $0.mapInt.keys == "foo" }, "mapInt.@allKeys == 'foo'", finds: ["Ann", "Bob"])
        try assertSame({ $0.mapInt.keys != "foo" }, "mapInt.@allKeys != 'foo'", finds: ["Ann"])
        try assertSame({ $0.mapString.keys.contains("o") }, "mapString.@allKeys CONTAINS 'o'", finds: ["Ann"])
        try assertSame({ $0.mapString.keys.starts(with: "FO", options: [.caseInsensitive, .diacriticInsensitive]) },
                       "mapString.@allKeys BEGINSWITH[cd] 'FO'", finds: ["Ann", "Bob"])
        try assertSame({ $0.mapString.keys.like("f?o", caseInsensitive: true) }, "mapString.@allKeys LIKE[c] 'f?o'", finds: ["Ann", "Bob"])
        try assertSame({ $0.mapInt.values > 1 }, "mapInt.@allValues > 1", finds: ["Ann", "Bob"])
        try assertSame({ $0.mapInt.values == 3 }, "mapInt.@allValues == 3", finds: ["Bob"])
        try assertSame({ $0.mapOptInt.values == nil }, "mapOptInt.@allValues == nil", finds: ["Ann"])
        try assertSame({ $0.mapString.values.contains("WORLD", options: .caseInsensitive) }, "mapString.@allValues CONTAINS[c] 'WORLD'",
                       finds: ["Bob"])
        try assertSame({ $0.mapInt.contains(3) }, "3 IN mapInt", finds: ["Bob"])
        try assertSame({ $0.mapInt.containsAny(in: [3, 9]) }, "ANY mapInt IN {3, 9}", finds: ["Bob"])
        try assertSame({ $0.mapInt["foo"] == 1 && $0.mapInt.keys == "bar" }, "mapInt['foo'] == 1 AND mapInt.@allKeys == 'bar'",
                       finds: ["Ann"])
    }

    // MARK: Builder additions

    func testRanges() throws {
        try assertSame({ $0.intCol.contains(5..<7) }, "intCol >= 5 AND intCol < 7", finds: ["Ann", "Bob"])
        try assertSame({ $0.intCol.contains(5...7) }, "intCol BETWEEN {5, 7}", finds: ["Ann", "Bob", "Cy"])
        try assertSame({ $0.intCol.contains(6...6) }, "intCol BETWEEN {6, 6}", finds: ["Bob"])
        try assertSame({ $0.dateCol.contains(Self.date(5)..<Self.date(7)) }, "dateCol >= %@ AND dateCol < %@", Self.date(5), Self.date(7),
                       finds: ["Ann", "Bob"])
        try assertSame({ $0.dateCol.contains(Self.date(6)...Self.date(9)) }, "dateCol BETWEEN %@", [Self.date(6), Self.date(9)],
                       finds: ["Bob", "Cy"])
        try assertSame({ $0.mapInt["foo"].contains(1..<3) }, "mapInt['foo'] >= 1 AND mapInt['foo'] < 3", finds: ["Ann"])
        try assertSame({ $0.mapOptInt["bar"].contains(4...5) }, "mapOptInt['bar'] BETWEEN {4, 5}", finds: ["Ann"])
        try assertSame({ $0.mapOptInt["foo"].contains(0..<10) }, "mapOptInt['foo'] >= 0 AND mapOptInt['foo'] < 10", finds: ["Bob"])
        // On a collection, as in Realm: every element in the range (and at least one).
        try assertSame({ $0.arrayInt.contains(1...3) }, "arrayInt.@min >= 1 AND arrayInt.@max <= 3", finds: ["Ann"])
        try assertSame({ $0.arrayInt.contains(1..<3) }, "arrayInt.@min >= 1 AND arrayInt.@max < 3", finds: [])
        try assertSame({ $0.arrayInt.contains(5...5) }, "arrayInt.@min >= 5 AND arrayInt.@max <= 5", finds: ["Bob"])
        try assertSame({ $0.arrayOptInt.contains(4...4) }, "arrayOptInt.@min >= 4 AND arrayOptInt.@max <= 4", finds: ["Ann"])
        try assertSame({ $0.setDouble.contains(1.0..<3.0) }, "setDouble.@min >= 1.0 AND setDouble.@max < 3.0", finds: ["Ann"])
        try assertSame({ $0.mapInt.contains(1...3) }, "mapInt.@min >= 1 AND mapInt.@max <= 3", finds: ["Ann", "Bob"])
        try assertSame({ $0.mapInt.values.contains(2...3) }, "mapInt.@allValues BETWEEN {2, 3}", finds: ["Ann", "Bob"])
    }

    func testStringAndDataOperands() throws {
        try assertSame({ $0.name.notEquals("ANN", options: .caseInsensitive) }, "name !=[c] 'ANN'", finds: ["Bob", "Cy"])
        try assertSame({ $0.name.notEquals("Ann") }, "name != 'Ann'", finds: ["Bob", "Cy"])
        try assertSame({ $0.name.like("b*", caseInsensitive: true) }, "name LIKE[c] 'b*'", finds: ["Bob"])
        try assertSame({ $0.name.like("b*", caseInsensitive: false) }, "name LIKE 'b*'", finds: [])
        try assertSame({ $0.name.like("C?", options: []) }, "name LIKE 'C?'", finds: ["Cy"])
        try assertSame({ $0.binaryCol.starts(with: Data([1, 2])) }, "binaryCol BEGINSWITH %@", Data([1, 2]), finds: ["Ann"])
        try assertSame({ $0.binaryCol.ends(with: Data([3])) }, "binaryCol ENDSWITH %@", Data([3]), finds: ["Bob"])
        try assertSame({ $0.binaryCol.contains(Data([2, 3])) }, "binaryCol CONTAINS %@", Data([2, 3]), finds: ["Ann", "Bob"])
        try assertSame({ $0.binaryCol.equals(Data()) }, "binaryCol == %@", Data(), finds: ["Cy"])
        try assertSame({ $0.binaryCol.notEquals(Data([2, 3])) }, "binaryCol != %@", Data([2, 3]), finds: ["Ann", "Cy"])
        try assertSame({ !$0.binaryCol.contains(Data([2, 3])) }, "NOT binaryCol CONTAINS %@", Data([2, 3]), finds: ["Cy"])
        try assertSame({ $0.optBinary.equals(Data([9, 9])) }, "optBinary == %@", Data([9, 9]), finds: ["Bob"])
        try assertSame({ $0.optBinary.notEquals(Data([9, 9])) }, "optBinary != %@", Data([9, 9]), finds: ["Ann", "Cy"])
        try assertSame({ $0.optBinary.starts(with: Data([9])) }, "optBinary BEGINSWITH %@", Data([9]), finds: ["Bob"])
    }

    func testEnumsOrderByRawValue() throws {
        try assertSame({ $0.priority > .low }, "priority > 1", finds: ["Bob", "Cy"])
        try assertSame({ $0.priority >= .mid }, "priority >= %@", MBPriority.mid, finds: ["Bob", "Cy"])
        try assertSame({ $0.priority < .high }, "priority < 3", finds: ["Ann", "Bob"])
        try assertSame({ $0.priority <= .low }, "priority <= 1", finds: ["Ann"])
        try assertSame({ $0.optPriority >= .mid }, "optPriority >= 2", finds: ["Bob"])
        try assertSame({ $0.optPriority < .high }, "optPriority < 3", finds: ["Cy"])
        try assertSame({ $0.optPriority <= nil }, "optPriority <= nil", finds: [])
        try assertSame({ $0.optPriority > .low || $0.optPriority == nil }, "optPriority > 1 OR optPriority == nil", finds: ["Ann", "Bob"])
    }

    func testCollectionAggregates() throws {
        try assertSame({ $0.arrayInt.sum > 5 }, "arrayInt.@sum > 5", finds: ["Ann"])
        try assertSame({ $0.arrayInt.sum == 0 }, "arrayInt.@sum == 0", finds: ["Cy"])
        try assertSame({ $0.arrayInt.avg == 2 }, "arrayInt.@avg == 2", finds: ["Ann"])
        assertFinds("arrayInt.@avg == nil", finds: ["Cy"])
        try assertSame({ $0.arrayInt.min == 1 }, "arrayInt.@min == 1", finds: ["Ann"])
        try assertSame({ $0.arrayInt.max >= 5 }, "arrayInt.@max >= 5", finds: ["Bob"])
        try assertSame({ $0.arrayInt.count == 0 }, "arrayInt.@count == 0", finds: ["Cy"])
        try assertSame({ $0.arrayOptInt.max == 4 }, "arrayOptInt.@max == 4", finds: ["Ann"])
        try assertSame({ $0.arrayOptInt.count == 2 }, "arrayOptInt.@count == 2", finds: ["Ann"])
        try assertSame({ $0.setDouble.avg > 1.9 }, "setDouble.@avg > 1.9", finds: ["Ann"])
        try assertSame({ $0.mapInt.sum == 3 }, "mapInt.@sum == 3", finds: ["Ann", "Bob"])
        try assertSame({ $0.mapInt.max > 2 }, "mapInt.@max > 2", finds: ["Bob"])
        try assertSame({ $0.mapOptInt.min == 5 }, "mapOptInt.@min == 5", finds: ["Ann"])
        // Through a collection of objects to a property.
        try assertSame({ $0.children.age.avg > 3 }, "children.@avg.age > 3", finds: ["Bob"])
        try assertSame({ $0.children.age.avg == 3 }, "children.@avg.age == 3", finds: ["Ann"])
        try assertSame({ $0.children.age.sum == 6 }, "children.@sum.age == 6", finds: ["Ann"])
        try assertSame({ $0.children.age.min < 2 }, "children.@min.age < 2", finds: ["Ann"])
        try assertSame({ $0.children.age.max == 10 }, "children.@max.age == 10", finds: ["Bob"])
        try assertSame({ $0.children.count == 2 }, "children.@count == 2", finds: ["Ann"])
        try assertSame({ $0.pets.age.max == 10 }, "pets.@max.age == 10", finds: ["Bob"])
        try assertSame({ $0.pets.count == 2 }, "pets.@count == 2", finds: ["Ann"])
        try assertSame({ $0.arrayInt.min <= 1 && $0.arrayInt.max >= 3 && $0.arrayInt.sum == 6 && $0.arrayInt.count != 0 },
                       "arrayInt.@min <= 1 AND arrayInt.@max >= 3 AND arrayInt.@sum == 6 AND arrayInt.@count != 0", finds: ["Ann"])
    }

    func testContainsAny() throws {
        let c1 = try XCTUnwrap(lattice.objects(MBChild.self).filter("name == 'c1'").first)
        try assertSame({ $0.arrayInt.containsAny(in: [2, 5]) }, "ANY arrayInt IN {2, 5}", finds: ["Ann", "Bob"])
        try assertSame({ $0.arrayInt.containsAny(in: []) }, "ANY arrayInt IN {}", finds: [])
        try assertSame({ $0.arrayOptInt.containsAny(in: [nil]) }, "ANY arrayOptInt IN {nil}", finds: ["Ann"])
        try assertSame({ !$0.arrayInt.containsAny(in: [5]) }, "NOT ANY arrayInt IN {5}", finds: ["Ann", "Cy"])
        try assertSame({ $0.setDouble.containsAny(in: [2.5]) }, "ANY setDouble IN {2.5}", finds: ["Ann"])
        try assertSame({ $0.children.containsAny(in: [c1]) }, "ANY children IN %@", [c1], finds: ["Ann"])
        try assertSame({ $0.pets.containsAny(in: [c1]) }, "ANY pets IN %@", [c1], finds: ["Ann"])
    }

    func testCollectionComparedWithAValueMatchesAnyElement() throws {
        let c1 = try XCTUnwrap(lattice.objects(MBChild.self).filter("name == 'c1'").first)
        try assertSame({ $0.arrayInt == 2 }, "ANY arrayInt == 2", finds: ["Ann"])
        try assertSame({ $0.arrayInt != 1 }, "ANY arrayInt != 1", finds: ["Ann", "Bob"])
        try assertSame({ $0.arrayInt > 4 }, "ANY arrayInt > 4", finds: ["Bob"])
        try assertSame({ $0.arrayOptInt == nil }, "ANY arrayOptInt == nil", finds: ["Ann"])
        try assertSame({ $0.setDouble <= 1.5 }, "ANY setDouble <= 1.5", finds: ["Ann"])
        try assertSame({ $0.mapInt >= 3 }, "ANY mapInt >= 3", finds: ["Bob"])
        try assertSame({ $0.children == c1 }, "ANY children == %@", c1, finds: ["Ann"])
        try assertSame({ $0.priority.rawValue > 1 }, "priority > 1", finds: ["Bob", "Cy"])
        try assertSame({ $0.priority.rawValue.in([1, 3]) }, "priority IN {1, 3}", finds: ["Ann", "Cy"])
    }

    func testMapKeysInAnEncryptedFile() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("map-builder-enc-\(UUID().uuidString).lattice")
        addTeardownBlock {
            for path in [url.path, url.path + "-lock"] { try? FileManager.default.removeItem(atPath: path) }
        }
        let key = Data((0..<64).map { UInt8(truncatingIfNeeded: $0 &* 5 &+ 1) })
        let encrypted = try Lattice(configuration: Lattice.Configuration(fileURL: url, objectTypes: [MBItem.self, MBChild.self],
                                                                         encryptionKey: key, initialMapSize: 8 << 20))
        try encrypted.write {
            let item = try encrypted.create(MBItem.self, value: ["name": "Eve"])
            item.mapInt["secret"] = 4
            item.pets["rex"] = try MBChild(value: ["name": "c9", "age": 9])
            _ = try encrypted.create(MBItem.self, value: ["name": "Fay"])
        }
        let all = encrypted.objects(MBItem.self)
        XCTAssertEqual(names(try all.filter("mapInt['secret'] == 4")), ["Eve"])
        XCTAssertEqual(names(try all.filter("mapInt['secret'] != 4")), ["Fay"])
        XCTAssertEqual(names(try all.filter("mapInt.@allKeys BEGINSWITH[c] 'SEC'")), ["Eve"])
        XCTAssertEqual(names(try all.filter("pets['rex'].age > 3")), ["Eve"])
        XCTAssertEqual(names(all.where { $0.mapInt["secret"] > 3 }), ["Eve"])
    }

    /// Random Map predicates (by key, over keys, over values; quantified, negated, case-insensitive)
    /// against a plain Swift evaluation of the same maps.
    func testGeneratedMapPredicatesMatchSwiftEvaluation() throws {
        struct Maps {
            var ints: [String: Int] = [:], optInts: [String: Int?] = [:], strings: [String: String] = [:]
        }
        var rng = SplitMix64(state: 11)
        let keys = ["a", "b", "A", "ab", "B"], texts = ["x", "X", "ab", "Ab", ""]
        func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &rng)] }
        var expected: [String: Maps] = [:]
        try lattice.write {
            for n in 0..<60 {
                let item = try lattice.create(MBItem.self, value: ["name": "g\(n)"])
                var maps = Maps()
                for _ in 0..<Int.random(in: 0...3, using: &rng) { maps.ints[pick(keys)] = Int.random(in: 0...4, using: &rng) }
                for _ in 0..<Int.random(in: 0...3, using: &rng) { maps.optInts[pick(keys)] = pick([nil, 0, 1, 2] as [Int?]) }
                for _ in 0..<Int.random(in: 0...3, using: &rng) { maps.strings[pick(keys)] = pick(texts) }
                for (k, v) in maps.ints { item.mapInt[k] = v }
                for (k, v) in maps.optInts { item.mapOptInt[k] = v }
                for (k, v) in maps.strings { item.mapString[k] = v }
                expected[item.name] = maps
            }
        }
        func order(_ op: String, _ v: Int?, _ c: Int?) -> Bool {
            switch op {
            case "==": return v == c
            case "!=": return v != c
            default:
                guard let v, let c else { return false }
                return op == "<" ? v < c : op == "<=" ? v <= c : op == ">" ? v > c : v >= c
            }
        }
        func text(_ op: String, _ caseInsensitive: Bool, _ v: String?, _ c: String) -> Bool {
            guard let v else { return op == "!=" }
            let (x, y) = caseInsensitive ? (v.lowercased(), c.lowercased()) : (v, c)
            switch op {
            case "==": return x == y
            case "!=": return x != y
            case "BEGINSWITH": return x.hasPrefix(y)
            case "ENDSWITH": return x.hasSuffix(y)
            default: return y.isEmpty || x.contains(y)
            }
        }
        let orderOps = ["==", "!=", "<", "<=", ">", ">="], textOps = ["==", "!=", "BEGINSWITH", "ENDSWITH", "CONTAINS"]
        let generated = lattice.objects(MBItem.self).filter { $0.name.hasPrefix("g") }.map(\.name)
        for _ in 0..<400 {
            let key = pick(keys), op = pick(orderOps), top = pick(textOps), c = Int.random(in: 0...4, using: &rng)
            let caseInsensitive = Bool.random(using: &rng), t = pick(texts)
            let flag = caseInsensitive ? "[c]" : ""
            let quantifier = pick(["", "ANY ", "ALL ", "NONE "])
            let cases: [(String, [Any], (Maps) -> Bool)] = [
                ("mapInt[%@] \(op) %@", [key, c], { order(op, $0.ints[key], c) }),
                ("mapOptInt[%@] \(op) %@", [key, c], { order(op, $0.optInts[key] ?? nil, c) }),
                ("mapOptInt[%@] \(op == "==" ? "==" : "!=") nil", [key], { ($0.optInts[key] ?? nil == nil) == (op == "==") }),
                ("mapString[%@] \(top)\(flag) %@", [key, t], { text(top, caseInsensitive, $0.strings[key], t) }),
                ("\(quantifier)mapString.@allKeys \(top)\(flag) %@", [key], { maps in
                    let hits = maps.strings.keys.map { text(top, caseInsensitive, $0, key) }
                    switch quantifier {
                    case "ALL ": return hits.allSatisfy { $0 }
                    case "NONE ": return !hits.contains(true)
                    default: return hits.contains(true)
                    }
                }),
                ("\(quantifier)mapInt.@allValues \(op) %@", [c], { maps in
                    let hits = maps.ints.values.map { order(op, $0, c) }
                    switch quantifier {
                    case "ALL ": return hits.allSatisfy { $0 }
                    case "NONE ": return !hits.contains(true)
                    default: return hits.contains(true)
                    }
                }),
            ]
            let (predicate, args, eval) = pick(cases)
            let negate = Bool.random(using: &rng)
            let results = try lattice.objects(MBItem.self).filter((negate ? "NOT (" : "(") + predicate + ")", argumentArray: args)
            let found = Set(results.map(\.name).filter { $0.hasPrefix("g") })
            let want = Set(generated.filter { name in expected[name].map { eval($0) != negate } ?? false })
            XCTAssertEqual(found, want, "\(negate ? "NOT " : "")\(predicate) \(args)")
        }
    }

    func testTypedSubqueries() throws {
        try assertSame({ ($0.children.age > 3).count > 0 }, "SUBQUERY(children, $col, $col.age > 3).@count > 0", finds: ["Ann", "Bob"])
        try assertSame({ ($0.children.age < 6).count == 2 }, "SUBQUERY(children, $col, $col.age < 6).@count == 2", finds: ["Ann"])
        try assertSame({ ($0.children.age > 0 && $0.children.name != "c2").count >= 1 },
                       "SUBQUERY(children, $col, $col.age > 0 AND $col.name != 'c2').@count >= 1", finds: ["Ann", "Bob"])
        try assertSame({ ($0.children.name.starts(with: "C", options: .caseInsensitive) || !($0.children.age == 10)).count < 2 },
                       "SUBQUERY(children, $col, $col.name BEGINSWITH[c] 'C' OR NOT $col.age == 10).@count < 2", finds: ["Bob", "Cy"])
        try assertSame({ ($0.pets.age > 3).count != 0 }, "SUBQUERY(pets, $col, $col.age > 3).@count != 0", finds: ["Bob"])
        try assertSame({ $0.intCol == 6 && ($0.children.age == 10).count == 1 },
                       "intCol == 6 AND SUBQUERY(children, $col, $col.age == 10).@count == 1", finds: ["Bob"])
        try assertSame({ ($0.children.age >= 5).count <= 0 }, "SUBQUERY(children, $col, $col.age >= 5).@count <= 0", finds: ["Cy"])
    }
}
