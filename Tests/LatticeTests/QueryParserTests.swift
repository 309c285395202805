import Foundation
import XCTest
@testable import Lattice

/// The predicate language: every operator and form, and its errors.
final class QueryParserTests: QueryTestCase {
    /// The arguments as a variadic `Any...` call passes them (a nil as an `Any` holding nil).
    private func arguments(_ args: [Any?]) -> [Any] { args.map { $0 ?? (Optional<Any>.none as Any) } }

    private func parse(_ text: String, _ args: Any?...) throws -> QueryNode { try QueryParser.parse(text, arguments(args)) }

    private func comparison(_ text: String, _ args: Any?...) throws -> QueryComparison {
        guard case let .comparison(c) = try QueryParser.parse(text, arguments(args)) else {
            XCTFail("\(text) is not a single comparison")
            throw LatticeError.invalidQuery(message: "")
        }
        return c
    }

    private func assertInvalid(_ text: String, _ args: Any?..., contains fragments: [String], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try lattice.objects(QItem.self).filter(text, argumentArray: args.map { $0 ?? NSNull() }), file: file, line: line) { error in
            guard case let .invalidQuery(message) = error as? LatticeError else { return XCTFail("\(error)", file: file, line: line) }
            for f in fragments { XCTAssertTrue(message.contains(f), "'\(message)' lacks '\(f)'", file: file, line: line) }
        }
    }

    /// Names may hold any scalar a Swift property name may (Realm's unicode tests), outside whitespace
    /// and Unicode's pattern syntax.
    func testNonASCIINamesNeedNoKeyPathArgument() throws {
        let name = "柱колоéнǢкƱаم👍"
        let c = try comparison("\(name) == 'x'")
        XCTAssertEqual(c.lhs, .keyPath(QueryKeyPath(variable: nil, segments: [name], position: 1)))
        XCTAssertEqual(try comparison("owner.ñame👍 != 'x'").lhs, .keyPath(QueryKeyPath(variable: nil, segments: ["owner", "ñame👍"], position: 1)))
        assertInvalid("name → 'x'", contains: ["column 6", "unexpected character"])
    }

    func testComparisonOperators() throws {
        let forms: [(String, QueryOperator)] = [("==", .equal), ("=", .equal), ("!=", .notEqual), ("<>", .notEqual), ("<", .less),
                                                ("<=", .lessOrEqual), ("=<", .lessOrEqual), (">", .greater), (">=", .greaterOrEqual),
                                                ("=>", .greaterOrEqual)]
        for (symbol, op) in forms {
            let c = try comparison("age \(symbol) 3")
            XCTAssertEqual(c.op, op, symbol)
            XCTAssertEqual(c.lhs, .keyPath(QueryKeyPath(variable: nil, segments: ["age"], position: 1)))
            XCTAssertEqual(c.rhs, .value(.int(3)))
        }
        for word in ["BEGINSWITH", "beginswith", "EndsWith", "CONTAINS", "like"] {
            let c = try comparison("name \(word)[cd] 'x'")
            XCTAssertEqual(c.op.rawValue, word.uppercased())
            XCTAssertEqual(c.options, [.caseInsensitive, .diacriticInsensitive])
        }
        XCTAssertEqual(try comparison("name ==[c] 'x'").options, .caseInsensitive)
        XCTAssertEqual(try comparison("name ==[d] 'x'").options, .diacriticInsensitive)
        XCTAssertEqual(try comparison("age BETWEEN {1, 5}").rhs, .list([.value(.int(1)), .value(.int(5))]))
        XCTAssertEqual(try comparison("age IN {1, 2, 3}").rhs, .list([.value(.int(1)), .value(.int(2)), .value(.int(3))]))
        XCTAssertEqual(try comparison("age in {}").rhs, .list([]))
    }

    func testLogicalOperatorsAndPrecedence() throws {
        let a = QueryNode.comparison(try comparison("a == 1"))
        let b = QueryNode.comparison(try comparison("b == 2"))
        let c = QueryNode.comparison(try comparison("c == 3"))
        func positionless(_ n: QueryNode) -> String { "\(n)".replacingOccurrences(of: #"position: \d+"#, with: "", options: .regularExpression) }
        XCTAssertEqual(positionless(try parse("a == 1 OR b == 2 AND c == 3")), positionless(.or([a, .and([b, c])])))
        XCTAssertEqual(positionless(try parse("a == 1 || b == 2 && c == 3")), positionless(.or([a, .and([b, c])])))
        XCTAssertEqual(positionless(try parse("(a == 1 or b == 2) and c == 3")), positionless(.and([.or([a, b]), c])))
        XCTAssertEqual(positionless(try parse("NOT a == 1")), positionless(.not(a)))
        XCTAssertEqual(positionless(try parse("!(a == 1)")), positionless(.not(a)))
        XCTAssertEqual(positionless(try parse("not not a == 1")), positionless(.not(.not(a))))
        XCTAssertEqual(try parse("TRUEPREDICATE"), .constant(true))
        XCTAssertEqual(try parse("falsepredicate"), .constant(false))
    }

    /// Keywords in any mix of case; names that only contain, extend or resemble one (a dotless `ı`
    /// uppercases to `I`) stay names.
    func testKeywordsInAnyCaseAndNamesThatResembleThem() throws {
        func positionless(_ n: QueryNode) -> String { "\(n)".replacingOccurrences(of: #"position: \d+"#, with: "", options: .regularExpression) }
        let a = QueryNode.comparison(try comparison("a == 1"))
        let b = QueryNode.comparison(try comparison("b == 2"))
        XCTAssertEqual(positionless(try parse("a == 1 aNd b == 2")), positionless(.and([a, b])))
        XCTAssertEqual(positionless(try parse("a == 1 Or b == 2")), positionless(.or([a, b])))
        XCTAssertEqual(positionless(try parse("nOt a == 1")), positionless(.not(a)))
        XCTAssertEqual(try parse("TruePredicate"), .constant(true))
        XCTAssertEqual(try comparison("aNy a == 1").quantifier, .any)
        XCTAssertEqual(try comparison("SoMe a == 1").quantifier, .any)
        XCTAssertEqual(try comparison("aLl a == 1").quantifier, .all)
        XCTAssertEqual(try comparison("NoNe a == 1").quantifier, .noneMatch)
        XCTAssertEqual(try comparison("a iN {1}").op, .in)
        XCTAssertEqual(try comparison("a bEtWeEn {1, 2}").op, .between)
        XCTAssertEqual(try comparison("a == Nil").rhs, .value(.null))
        XCTAssertEqual(try comparison("a == nUlL").rhs, .value(.null))
        XCTAssertEqual(try comparison("a == yEs").rhs, .value(.bool(true)))
        XCTAssertEqual(try comparison("a == No").rhs, .value(.bool(false)))
        XCTAssertEqual(try comparison("a == tRUE").rhs, .value(.bool(true)))
        for name in ["android", "order", "notes", "anyone", "inside", "nothing", "truepredicates", "ın", "ᴀɴᴅ", "ＡＮＤ"] {
            XCTAssertEqual(try comparison("\(name) == 1").lhs, .keyPath(QueryKeyPath(variable: nil, segments: [name], position: 1)), name)
            XCTAssertEqual(try comparison("x == \(name)").rhs, .keyPath(QueryKeyPath(variable: nil, segments: [name], position: 6)), name)
        }
        assertInvalid("a MaTcHeS 'x'", contains: ["MATCHES", "not supported"])
        assertInvalid("or == 1", contains: ["keyword OR"])
        assertInvalid("a == Subquery", contains: ["'(' after SUBQUERY"])
        assertInvalid("a android 1", contains: ["expected an operator", "'android'"])
    }

    func testLiterals() throws {
        XCTAssertEqual(try comparison("a == 'it\\'s'").rhs, .value(.string("it's")))
        XCTAssertEqual(try comparison("a == \"say \\\"hi\\\"\"").rhs, .value(.string("say \"hi\"")))
        XCTAssertEqual(try comparison("a == 'tab\\tnew\\nline\\\\ \\u00e9 \\u{1F600}'").rhs, .value(.string("tab\tnew\nline\\ é 😀")))
        XCTAssertEqual(try comparison("a == \"it's\"").rhs, .value(.string("it's")))
        XCTAssertEqual(try comparison("a == -12").rhs, .value(.int(-12)))
        XCTAssertEqual(try comparison("a == +7").rhs, .value(.int(7)))
        XCTAssertEqual(try comparison("a == 0x1F").rhs, .value(.int(31)))
        XCTAssertEqual(try comparison("a == 1.5e3").rhs, .value(.double(1500)))
        XCTAssertEqual(try comparison("a == -.5").rhs, .value(.double(-0.5)))
        for (word, value) in [("nil", QueryValue.null), ("NULL", .null), ("true", .bool(true)), ("YES", .bool(true)),
                              ("FALSE", .bool(false)), ("no", .bool(false))] {
            XCTAssertEqual(try comparison("a == \(word)").rhs, .value(value), word)
        }
        let uuid = UUID()
        XCTAssertEqual(try comparison("a == uuid(\(uuid.uuidString))").rhs, .value(.uuid(uuid)))
        XCTAssertEqual(try comparison("a == UUID('\(uuid.uuidString)')").rhs, .value(.uuid(uuid)))
        let oid = ObjectId()
        XCTAssertEqual(try comparison("a == oid(\(oid.stringValue))").rhs, .value(.objectId(oid)))
    }

    func testArguments() throws {
        XCTAssertEqual(try comparison("a == %@", "x").rhs, .value(.string("x")))
        XCTAssertEqual(try comparison("a == %d", 5).rhs, .value(.int(5)))
        XCTAssertEqual(try comparison("a == %i", Int8(5)).rhs, .value(.int(5)))
        XCTAssertEqual(try comparison("a == %ld", Int64(5)).rhs, .value(.int(5)))
        XCTAssertEqual(try comparison("a == %f", 2.5).rhs, .value(.double(2.5)))
        XCTAssertEqual(try comparison("a == %f", 2).rhs, .value(.double(2)))
        XCTAssertEqual(try comparison("a == %@", Float(0.5)).rhs, .value(.double(0.5)))
        XCTAssertEqual(try comparison("%K == 1", "name").lhs, .keyPath(QueryKeyPath(variable: nil, segments: ["name"], position: 1)))
        XCTAssertEqual(try comparison("a == $1", "x", "y").rhs, .value(.string("y")))
        XCTAssertEqual(try comparison("a IN %@", [1, 2]).rhs, .list([.value(.int(1)), .value(.int(2))]))
        XCTAssertEqual(try comparison("a IN %@", Set(["q"])).rhs, .list([.value(.string("q"))]))
        XCTAssertEqual(try comparison("a == %@", nil).rhs, .value(.null))
        XCTAssertEqual(try comparison("a == %@", Optional<Int>.none as Any).rhs, .value(.null))
        XCTAssertEqual(try comparison("a == %@", Optional(3) as Any).rhs, .value(.int(3)))
        XCTAssertEqual(try comparison("a == %@", QKind.beta).rhs, .value(.string("beta")))
        XCTAssertEqual(try comparison("a == %@", true).rhs, .value(.bool(true)))
        let date = Date(timeIntervalSince1970: 5)
        XCTAssertEqual(try comparison("a == %@", date).rhs, .value(.date(date)))
        XCTAssertEqual(try comparison("a == %@", Data([1])).rhs, .value(.data(Data([1]))))
        XCTAssertEqual(try comparison("a == %@", Decimal(3)).rhs, .value(.decimal(3)))
    }

    /// A predicate text lexed once is reused by every later filter with that text: the arguments, `%K`
    /// key paths included, are still each call's own, and a malformed text fails every time.
    func testTheSameTextWithOtherArgumentsAndKeyPaths() throws {
        for value in ["x", "y", "x"] {
            XCTAssertEqual(try comparison("a == %@", value).rhs, .value(.string(value)))
        }
        for name in ["name", "age", "name"] {
            XCTAssertEqual(try comparison("%K == 1", name).lhs, .keyPath(QueryKeyPath(variable: nil, segments: [name], position: 1)))
        }
        for _ in 0..<2 { assertInvalid("age == == 1", contains: ["column 8"]) }
        // More distinct texts than are kept: each still lexes to its own tokens.
        for i in 0..<600 {
            XCTAssertEqual(try comparison("a\(i) == \(i)").rhs, .value(.int(Int64(i))), "text \(i)")
        }
        XCTAssertEqual(try comparison("a0 == 0").lhs, .keyPath(QueryKeyPath(variable: nil, segments: ["a0"], position: 1)))
    }

    func testKeyPathsCollectionOperatorsAndSubqueryParse() throws {
        XCTAssertEqual(try comparison("owner.name == 'Ann'").lhs,
                       .keyPath(QueryKeyPath(variable: nil, segments: ["owner", "name"], position: 1)))
        let any = try comparison("ANY dogs.age < 2")
        XCTAssertEqual(any.quantifier, .any)
        XCTAssertEqual(try comparison("SOME dogs.age < 2").quantifier, .any)
        XCTAssertEqual(try comparison("all dogs.age < 2").quantifier, .all)
        XCTAssertEqual(try comparison("NONE dogs.age < 2").quantifier, QueryQuantifier.noneMatch)
        XCTAssertEqual(try comparison("dogs.@count > 2").lhs,
                       .keyPath(QueryKeyPath(variable: nil, segments: ["dogs"], collectionOperator: .count, position: 1)))
        XCTAssertEqual(try comparison("dogs.@avg.age > 3").lhs,
                       .keyPath(QueryKeyPath(variable: nil, segments: ["dogs"], collectionOperator: .avg, trailing: ["age"], position: 1)))
        for op in ["@min", "@max", "@sum", "@size"] { XCTAssertNoThrow(try comparison("dogs.\(op).age > 3"), op) }
        let sub = try comparison("SUBQUERY(dogs, $d, $d.age < 2 AND $d.name BEGINSWITH 'R').@count > 0")
        guard case let .subquery(collection, variable, predicate, _) = sub.lhs else { return XCTFail("\(sub.lhs)") }
        XCTAssertEqual(collection.segments, ["dogs"])
        XCTAssertEqual(variable, "d")
        guard case let .and(parts) = predicate, case let .comparison(inner) = parts[0] else { return XCTFail("\(predicate)") }
        XCTAssertEqual(inner.lhs, .keyPath(QueryKeyPath(variable: "d", segments: ["age"], position: 20)))
        XCTAssertEqual(try comparison("owner == %@", QTag()).rhs.description, "QTag object")
        XCTAssertEqual(try comparison("ANY owners.name == 'Ann'").quantifier, .any)
        XCTAssertEqual(try comparison("%K.@count == 0", "owners").lhs,
                       .keyPath(QueryKeyPath(variable: nil, segments: ["owners"], collectionOperator: .count, position: 1)))
    }

    func testLinkAndCollectionFormsAreClearErrorsForScalarProperties() {
        assertInvalid("int.value == 1", contains: ["'QItem.int'", "not a link", "int.value"])
        assertInvalid("ANY int < 2", contains: ["'QItem.int'", "ANY", "to-many"])
        assertInvalid("ALL string == 'a'", contains: ["'QItem.string'", "ALL"])
        assertInvalid("NONE string == 'a'", contains: ["'QItem.string'", "NONE"])
        assertInvalid("int.@count > 2", contains: ["'QItem.int'", "@count"])
        assertInvalid("double.@avg.x > 2", contains: ["'QItem.double'", "@avg"])
        assertInvalid("SUBQUERY(int, $d, $d.age < 2).@count > 0", contains: ["'QItem.int'"])
        assertInvalid("SUBQUERY(nope, $d, $d.age < 2).@count > 0", contains: ["'QItem'", "'nope'"])
        assertInvalid("int == %@", QTag(), contains: ["'QItem.int'", "QTag"])
        assertInvalid("5 IN int", contains: ["'QItem.int'", "not a collection"])
    }

    func testSyntaxErrorsNameTheColumnAndWhatWasExpected() {
        assertInvalid("age ==", contains: ["column 7", "expected a property name or a value"])
        assertInvalid("int = = 3", contains: ["column 7"])
        assertInvalid("int 3", contains: ["column 5", "expected an operator"])
        assertInvalid("(int == 3", contains: ["column 10", "')'"])
        assertInvalid("int == 3)", contains: ["column 9", "expected AND, OR or the end"])
        assertInvalid("string == 'abc", contains: ["column 11", "unterminated string"])
        assertInvalid("int == 3 AND", contains: ["column 13"])
        assertInvalid("int == #", contains: ["column 8", "unexpected character"])
        assertInvalid("string BEGINSWITH[x] 'a'", contains: ["column 19", "c, d or cd"])
        assertInvalid("int BETWEEN 3", contains: ["BETWEEN expects two values"])
        assertInvalid("int BETWEEN {1, 2, 3}", contains: ["BETWEEN expects two values"])
        assertInvalid("int == %d", contains: ["argument 1", "0 arguments"])
        assertInvalid("int == %d", "x", contains: ["argument 1", "%d", "integer", "String"])
        assertInvalid("int == %f", "x", contains: ["%f", "number"])
        assertInvalid("%K == 1", 5, contains: ["%K", "key path"])
        assertInvalid("int == %x", contains: ["%x"])
        assertInvalid("string MATCHES 'a.*'", contains: ["MATCHES"])
        assertInvalid("$x.age == 1", contains: ["$x"])
        assertInvalid("int == uuid(zzz)", contains: ["malformed UUID"])
        assertInvalid("AND == 1", contains: ["keyword AND"])
        assertInvalid("SUBQUERY(a, b, c == 1).@count > 0", contains: ["variable"])
        assertInvalid("int == %@", [1, 2], contains: ["single value"])
    }

    func testUnknownPropertiesAndTypeMismatchesNameClassAndProperty() {
        assertInvalid("agee == 1", contains: ["'QItem'", "'agee'", "column 1"])
        assertInvalid("int == 'x'", contains: ["type mismatch", "'QItem.int'", "String"])
        assertInvalid("string == 3", contains: ["'QItem.string'", "Int"])
        assertInvalid("bool == 1", contains: ["'QItem.bool'"])
        assertInvalid("date == 1", contains: ["'QItem.date'"])
        assertInvalid("uuid == 'not-a-uuid'", contains: ["'QItem.uuid'"])
        assertInvalid("int BEGINSWITH 'a'", contains: ["BEGINSWITH", "'QItem.int'"])
        assertInvalid("bool < true", contains: ["Bool", "'QItem.bool'"])
        assertInvalid("int ==[c] 3", contains: ["[c]", "'QItem.int'"])
        assertInvalid("string BEGINSWITH nil", contains: ["nil"])
        assertInvalid("string == date", contains: ["'QItem.string'", "'QItem.date'"])
        assertInvalid("1 == 1", contains: ["key path"])
        assertInvalid("'a' BEGINSWITH string", contains: ["left side of BEGINSWITH"])
        assertInvalid("int IN int8", contains: ["IN needs a list"])
    }

    /// Random and mutated strings never crash the parser; every failure is `invalidQuery`.
    func testFuzzedPredicatesNeverCrash() {
        var rng = SplitMix64(state: 2024)
        let seeds = ["int == 3 AND string BEGINSWITH[c] 'ab'", "NOT (optInt == nil OR double < -2.5e3)", "intIdx IN {1, 2, 3}",
                     "SUBQUERY(dogs, $d, $d.age < 2).@count > 0", "ANY dogs.name ==[cd] \"x\\\"y\"", "date BETWEEN %@",
                     "string LIKE 'a?c*'", "%K == $0", "uuid == uuid(3F2504E0-4F89-11D3-9A0C-0305E82C3301)", "TRUEPREDICATE"]
        let alphabet = Array("abcINTxyz019 ._-+*?%@$&|!=<>(){}[],'\"\\cdKfl@\u{0}é😀\n\t") + ["AND", "OR", "NOT", "ANY", "SUBQUERY",
                                                                                             "BETWEEN", "uuid(", "oid(", "%@", "%K", "$0", "@count"].flatMap { Array($0) }
        let argumentSets: [[Any]] = [[], [1], ["int"], [[1, 2]], [NSNull(), "x", 2.5], [Date()], [Data([1])]]
        var failures = 0
        for i in 0..<6000 {
            var text: [Character]
            if i % 2 == 0 {
                text = Array(seeds[Int.random(in: 0..<seeds.count, using: &rng)])
                for _ in 0..<Int.random(in: 1...4, using: &rng) {
                    let at = Int.random(in: 0...text.count, using: &rng)
                    switch Int.random(in: 0..<3, using: &rng) {
                    case 0 where at < text.count: text.remove(at: at)
                    case 1: text.insert(alphabet[Int.random(in: 0..<alphabet.count, using: &rng)], at: at)
                    default: if at < text.count { text[at] = alphabet[Int.random(in: 0..<alphabet.count, using: &rng)] }
                    }
                }
            } else {
                text = (0..<Int.random(in: 0..<30, using: &rng)).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &rng)] }
            }
            let args = argumentSets[Int.random(in: 0..<argumentSets.count, using: &rng)]
            do {
                let results = try lattice.objects(QItem.self).filter(String(text), argumentArray: args)
                _ = results.count
            } catch let error as LatticeError {
                guard case .invalidQuery = error else { return XCTFail("\(String(text)): \(error)") }
                failures += 1
            } catch {
                XCTFail("\(String(text)): unexpected \(error)")
            }
        }
        XCTAssertGreaterThan(failures, 3000)
    }
}
