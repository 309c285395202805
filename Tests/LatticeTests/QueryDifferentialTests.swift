import Foundation
import XCTest
@testable import Lattice

/// Thousands of generated predicates, each checked against a plain Swift filter over all objects,
/// with indexed and unindexed copies of the same values, before and after updates and deletes.
final class QueryDifferentialTests: QueryTestCase {
    struct Generated {
        var text: String
        var args: [Any]
        var eval: (QItem) -> Bool
    }

    enum Op: String, CaseIterable { case eq = "==", ne = "!=", lt = "<", le = "<=", gt = ">", ge = ">=" }

    static func holds<T: Comparable>(_ op: Op, _ v: T?, _ c: T?) -> Bool {
        switch op {
        case .eq: return v == c
        case .ne: return v != c
        default:
            guard let v, let c else { return false }
            switch op {
            case .lt: return v < c
            case .le: return v <= c
            case .gt: return v > c
            default: return v >= c
            }
        }
    }

    struct Bytes: Comparable {
        let b: [UInt8]
        static func < (x: Bytes, y: Bytes) -> Bool { x.b.lexicographicallyPrecedes(y.b) }
    }

    struct Gen {
        var rng: SplitMix64
        var argCount = 0

        mutating func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &rng)] }
        mutating func chance(_ n: Int) -> Bool { Int.random(in: 0..<n, using: &rng) == 0 }

        mutating func literal(_ s: String) -> String {
            let escaped = s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'")
            return chance(2) ? "'\(escaped)'" : "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }

        mutating func predicate(_ depth: Int) -> Generated {
            let roll = Int.random(in: 0..<100, using: &rng)
            if depth > 0 && roll < 12 {
                let a = predicate(depth - 1), b = predicate(depth - 1)
                let word = pick(["AND", "and", "&&"])
                return Generated(text: "(\(a.text) \(word) \(b.text))", args: a.args + b.args, eval: { a.eval($0) && b.eval($0) })
            }
            if depth > 0 && roll < 24 {
                let a = predicate(depth - 1), b = predicate(depth - 1)
                let word = pick(["OR", "or", "||"])
                return Generated(text: "(\(a.text) \(word) \(b.text))", args: a.args + b.args, eval: { a.eval($0) || b.eval($0) })
            }
            if depth > 0 && roll < 30 {
                let a = predicate(depth - 1)
                return Generated(text: "\(pick(["NOT", "!"])) (\(a.text))", args: a.args, eval: { !a.eval($0) })
            }
            if roll < 31 { return Generated(text: "TRUEPREDICATE", args: [], eval: { _ in true }) }
            if roll < 32 { return Generated(text: "FALSEPREDICATE", args: [], eval: { _ in false }) }
            return atom()
        }

        mutating func atom() -> Generated {
            switch Int.random(in: 0..<10, using: &rng) {
            case 0, 1, 2: return intAtom()
            case 3: return doubleAtom()
            case 4, 5, 6: return stringAtom()
            case 7: return boolAtom()
            case 8: return dateAtom()
            default: return miscAtom()
            }
        }

        mutating func intAtom() -> Generated {
            let props: [(String, Bool, (QItem) -> Int?)] = [
                ("int", false, { $0.int }), ("intIdx", false, { $0.intIdx }), ("optInt", true, { $0.optInt }),
                ("optIntIdx", true, { $0.optIntIdx }), ("int8", false, { Int($0.int8) }), ("int16", false, { Int($0.int16) }),
                ("int32", false, { Int($0.int32) }), ("int64", false, { Int($0.int64) }), ("id", false, { $0.id }),
            ]
            let (name, optional, get) = pick(props)
            let values = QueryTestCase.ints + [4, 6, 100, -100, 127, -128, 300]
            switch Int.random(in: 0..<6, using: &rng) {
            case 0:
                let a = pick(values), b = pick(values)
                return Generated(text: "\(name) BETWEEN {\(a), \(b)}", args: [], eval: { get($0).map { $0 >= a && $0 <= b } ?? false })
            case 1:
                let list = (0..<Int.random(in: 0...4, using: &rng)).map { _ in pick(values) }
                if chance(2) {
                    return Generated(text: "\(name) IN %@", args: [list], eval: { get($0).map(list.contains) ?? false })
                }
                return Generated(text: "\(name) in {\(list.map(String.init).joined(separator: ", "))}", args: [],
                                 eval: { get($0).map(list.contains) ?? false })
            case 2:
                let op = pick(Op.allCases)
                let d = pick([0.5, -0.5, 2.5, 3.0, -5.0, 1e20, -1e20, 6.999])
                return Generated(text: "\(name) \(op.rawValue) \(d)", args: [],
                                 eval: { QueryDifferentialTests.holds(op, get($0).map(Double.init), d) })
            case 3 where optional:
                let op = pick([Op.eq, Op.ne])
                return Generated(text: "\(name) \(op.rawValue) \(pick(["nil", "NULL", "%@"]))", args: [NSNull()],
                                 eval: { QueryDifferentialTests.holds(op, get($0), nil) })
                    .fixingArgs()
            default:
                let op = pick(Op.allCases)
                let c = pick(values)
                if chance(3) {
                    return Generated(text: "\(c) \(QueryDifferentialTests.flip(op).rawValue) \(name)", args: [],
                                     eval: { QueryDifferentialTests.holds(op, get($0), c) })
                }
                let form = pick(["\(c)", "%d", "%@", "%ld", "$ARG"])
                return Generated(text: "\(name) \(pick(op == .eq ? ["==", "="] : [op.rawValue])) \(form)",
                                 args: form.hasPrefix("%") || form == "$ARG" ? [c] : [],
                                 eval: { QueryDifferentialTests.holds(op, get($0), c) })
            }
        }

        mutating func doubleAtom() -> Generated {
            let props: [(String, (QItem) -> Double?, Bool)] = [
                ("double", { $0.double }, false), ("optDouble", { $0.optDouble }, false), ("float", { Double($0.float) }, true),
            ]
            let (name, get, isFloat) = pick(props)
            let op = pick(Op.allCases)
            let c = pick(QueryTestCase.doubles + [1.5, -1, 3, .nan])
            let constant = isFloat ? Double(Float(c)) : c
            let form = c.isNaN ? pick(["%f", "%@"]) : pick(["\(c)", "%f", "%@"])
            return Generated(text: "\(name) \(op.rawValue) \(form)", args: form.hasPrefix("%") ? [c] : [],
                             eval: { QueryDifferentialTests.holds(op, get($0), constant) })
        }

        mutating func stringAtom() -> Generated {
            let props: [(String, (QItem) -> String?)] = [
                ("string", { $0.string }), ("stringIdx", { $0.stringIdx }), ("optString", { $0.optString }),
                ("optStringIdx", { $0.optStringIdx }),
            ]
            let (name, get) = pick(props)
            let options = pick(["", "", "[c]", "[c]", "[d]", "[cd]", "[C]"])
            let c = chance(3) ? pick(QueryTestCase.strings)
                : pick(["", "a", "A", "re", "RÉ", "ss", "STRA", "x", "p", "ppp", "Ro", "r", "σί", "ΣΊ", "b", "abc", "ÄRGER", "resume"])
            let ci = options.lowercased().contains("c"), di = options.contains("d")
            func fold(_ s: String) -> [UInt8] { Array(CaseFolding.fold(s, caseInsensitive: ci, diacriticInsensitive: di).utf8) }
            let fc = fold(c)
            let useArg = chance(2)
            let rhs = useArg ? "%@" : literal(c)
            let args: [Any] = useArg ? [c] : []
            switch Int.random(in: 0..<8, using: &rng) {
            case 0:
                return Generated(text: "\(name) BEGINSWITH\(options) \(rhs)", args: args,
                                 eval: { get($0).map { fold($0).starts(with: fc) } ?? false })
            case 1:
                return Generated(text: "\(name) endswith\(options) \(rhs)", args: args,
                                 eval: { get($0).map { fold($0).reversed().starts(with: fc.reversed()) } ?? false })
            case 2:
                return Generated(text: "\(name) CONTAINS\(options) \(rhs)", args: args,
                                 eval: { get($0).map { QueryDifferentialTests.containsBytes(fold($0), fc) } ?? false })
            case 3:
                let pattern = pick(["*", "?", "a*", "*e", "r?v*", "x?y", "x*y", "*ss*", "R*", "?b?", "", "p*1", "*", "σ*"])
                let fp = CaseFolding.fold(pattern, caseInsensitive: ci, diacriticInsensitive: di)
                let regex = try! NSRegularExpression(pattern: "^" + fp.map { ch -> String in
                    ch == "?" ? "." : ch == "*" ? ".*" : NSRegularExpression.escapedPattern(for: String(ch))
                }.joined() + "$", options: [.dotMatchesLineSeparators])
                return Generated(text: "\(name) LIKE\(options) \(literal(pattern))", args: [], eval: { item in
                    guard let s = get(item) else { return false }
                    let f = CaseFolding.fold(s, caseInsensitive: ci, diacriticInsensitive: di)
                    return regex.firstMatch(in: f, range: NSRange(f.startIndex..., in: f)) != nil
                })
            case 4:
                let list = (0..<Int.random(in: 0...3, using: &rng)).map { _ in pick(QueryTestCase.strings) }
                return Generated(text: "\(name) IN\(options) %@", args: [list],
                                 eval: { item in get(item).map { v in list.contains { fold($0) == fold(v) } } ?? false })
            default:
                let op = pick(Op.allCases)
                return Generated(text: "\(name) \(op.rawValue)\(options) \(rhs)", args: args,
                                 eval: { QueryDifferentialTests.holds(op, get($0).map { Bytes(b: fold($0)) }, Bytes(b: fc)) })
            }
        }

        mutating func boolAtom() -> Generated {
            let props: [(String, (QItem) -> Bool?)] = [("bool", { $0.bool }), ("boolIdx", { $0.boolIdx }), ("optBool", { $0.optBool })]
            let (name, get) = pick(props)
            let v = Bool.random(using: &rng)
            let op = pick([Op.eq, Op.ne])
            let literal = v ? pick(["true", "TRUE", "YES", "%@"]) : pick(["false", "False", "NO", "%@"])
            if name == "optBool" && chance(3) {
                return Generated(text: "\(name) \(op.rawValue) nil", args: [], eval: { QueryDifferentialTests.holds(op, get($0).map { $0 ? 1 : 0 }, nil) })
            }
            return Generated(text: "\(name) \(op.rawValue) \(literal)", args: literal == "%@" ? [v] : [],
                             eval: { QueryDifferentialTests.holds(op, get($0).map { $0 ? 1 : 0 }, v ? 1 : 0) })
        }

        mutating func dateAtom() -> Generated {
            let props: [(String, (QItem) -> Date?)] = [("date", { $0.date }), ("dateIdx", { $0.dateIdx }), ("optDate", { $0.optDate })]
            let (name, get) = pick(props)
            let c = pick(QueryTestCase.dates + [Date(timeIntervalSinceReferenceDate: 0.5)])
            if chance(4) {
                let c2 = pick(QueryTestCase.dates)
                return Generated(text: "\(name) BETWEEN %@", args: [[c, c2]], eval: { get($0).map { $0 >= c && $0 <= c2 } ?? false })
            }
            let op = pick(Op.allCases)
            return Generated(text: "\(name) \(op.rawValue) %@", args: [c], eval: { QueryDifferentialTests.holds(op, get($0), c) })
        }

        mutating func miscAtom() -> Generated {
            switch Int.random(in: 0..<6, using: &rng) {
            case 0:
                let (name, get): (String, (QItem) -> UUID) = pick([("uuid", { $0.uuid }), ("uuidIdx", { $0.uuidIdx })])
                let c = pick(QueryTestCase.uuids)
                let op = pick([Op.eq, Op.ne])
                let form = chance(2) ? "%@" : "uuid(\(c.uuidString))"
                return Generated(text: "\(name) \(op.rawValue) \(form)", args: form == "%@" ? [c] : [],
                                 eval: { QueryDifferentialTests.holds(op, Bytes(b: withUnsafeBytes(of: get($0).uuid) { Array($0) }),
                                                                      Bytes(b: withUnsafeBytes(of: c.uuid) { Array($0) })) })
            case 1:
                let (name, get): (String, (QItem) -> ObjectId) = pick([("objectId", { $0.objectId }), ("objectIdIdx", { $0.objectIdIdx })])
                let c = pick(QueryTestCase.objectIds)
                let op = pick(Op.allCases)
                let form = chance(2) ? "%@" : "oid(\(c.stringValue))"
                return Generated(text: "\(name) \(op.rawValue) \(form)", args: form == "%@" ? [c] : [],
                                 eval: { QueryDifferentialTests.holds(op, get($0), c) })
            case 2:
                let (name, get): (String, (QItem) -> Data?) = pick([("data", { $0.data }), ("optData", { $0.optData })])
                let c = pick(QueryTestCase.datas)
                switch Int.random(in: 0..<3, using: &rng) {
                case 0:
                    let op = pick([Op.eq, Op.ne])
                    return Generated(text: "\(name) \(op.rawValue) %@", args: [c],
                                     eval: { QueryDifferentialTests.holds(op, get($0).map { Bytes(b: Array($0)) }, Bytes(b: Array(c))) })
                case 1:
                    return Generated(text: "\(name) BEGINSWITH %@", args: [c], eval: { get($0).map { $0.starts(with: c) } ?? false })
                default:
                    return Generated(text: "\(name) CONTAINS %@", args: [c],
                                     eval: { get($0).map { QueryDifferentialTests.containsBytes(Array($0), Array(c)) } ?? false })
                }
            case 3:
                let (name, get): (String, (QItem) -> Decimal?) = pick([("decimal", { $0.decimal }), ("optDecimal", { $0.optDecimal })])
                let c = pick(QueryTestCase.decimals)
                let op = pick(Op.allCases)
                return Generated(text: "\(name) \(op.rawValue) %@", args: [c], eval: { QueryDifferentialTests.holds(op, get($0), c) })
            case 4:
                let c = pick(QKind.allCases)
                let op = pick([Op.eq, Op.ne])
                let form = chance(2) ? "%@" : "'\(c.rawValue)'"
                return Generated(text: "kind \(op.rawValue) \(form)", args: form == "%@" ? [c] : [],
                                 eval: { QueryDifferentialTests.holds(op, $0.kind.rawValue, c.rawValue) })
            default:
                // Property against property.
                let op = pick(Op.allCases)
                return pick([
                    Generated(text: "int \(op.rawValue) optInt", args: [], eval: { QueryDifferentialTests.holds(op, $0.int, $0.optInt) }),
                    Generated(text: "int \(op.rawValue) double", args: [],
                              eval: { QueryDifferentialTests.holds(op, Double($0.int), $0.double) }),
                    Generated(text: "string \(op.rawValue) optString", args: [],
                              eval: { QueryDifferentialTests.holds(op, Bytes(b: Array($0.string.utf8)), $0.optString.map { Bytes(b: Array($0.utf8)) }) }),
                ])
            }
        }
    }

    static func flip(_ op: Op) -> Op {
        switch op {
        case .lt: return .gt
        case .le: return .ge
        case .gt: return .lt
        case .ge: return .le
        default: return op
        }
    }

    static func numberPositionals(_ text: String, _ args: [Any]) -> (String, [Any]) {
        let pattern = try! NSRegularExpression(pattern: "%@|%ld|%d|%f|\\$ARG")
        let matches = pattern.matches(in: text, range: NSRange(text.startIndex..., in: text))
        var percent: [Any] = [], positional: [Any] = []
        for (i, m) in matches.enumerated() {
            if (text as NSString).substring(with: m.range) == "$ARG" { positional.append(args[i]) } else { percent.append(args[i]) }
        }
        var out = text
        for j in 0..<positional.count {
            if let r = out.range(of: "$ARG") { out.replaceSubrange(r, with: "$\(percent.count + j)") }
        }
        return (out, percent + positional)
    }

    static func containsBytes(_ s: [UInt8], _ p: [UInt8]) -> Bool {
        if p.isEmpty { return true }
        if s.count < p.count { return false }
        return (0...(s.count - p.count)).contains { Array(s[$0..<($0 + p.count)]) == p }
    }

    func check(_ count: Int, _ gen: inout Gen, phase: String) throws {
        let all = Array(lattice.objects(QItem.self))
        for _ in 0..<count {
            let g = gen.predicate(2)
            // `%` placeholders take the arguments in order; `$N` names argument N: put the `$` arguments last.
            let (text, args) = QueryDifferentialTests.numberPositionals(g.text, g.args)
            let results: Results<QItem>
            do {
                results = try lattice.objects(QItem.self).filter(text, argumentArray: args)
            } catch {
                XCTFail("[\(phase)] \(text) threw \(error)")
                continue
            }
            let expected = Set(all.filter(g.eval).map(\.id))
            let actual = Set(results.map(\.id))
            if expected != actual {
                XCTFail("[\(phase)] \(text) args \(g.args): expected \(expected.count) objects, got \(actual.count); "
                    + "missing \(expected.subtracting(actual).sorted().prefix(5)), extra \(actual.subtracting(expected).sorted().prefix(5)); "
                    + "plan: \(results.explain())")
                return
            }
            XCTAssertEqual(results.count, expected.count, "[\(phase)] count of \(text)")
            let plan = results.explain()
            if plan.contains("index") || plan.contains("primary key") { indexPlans += 1 }
            if plan.contains("full scan") { scanPlans += 1 }
        }
    }

    var indexPlans = 0
    var scanPlans = 0

    func testGeneratedPredicatesMatchSwiftFilter() throws {
        var rng = SplitMix64(state: 42)
        try lattice.write {
            for id in 0..<300 {
                let item = QItem()
                item.id = id * 3 - 200
                QueryTestCase.randomize(item, &rng)
                try lattice.add(item)
            }
        }
        var gen = Gen(rng: SplitMix64(state: 7))
        try check(1500, &gen, phase: "initial")
        try lattice.write {
            var updates = SplitMix64(state: 99)
            for (i, item) in lattice.objects(QItem.self).enumerated() {
                if i % 3 == 0 { QueryTestCase.randomize(item, &updates) }
            }
            for (i, item) in Array(lattice.objects(QItem.self)).enumerated() where i % 5 == 0 {
                try lattice.delete(item)
            }
        }
        try check(1000, &gen, phase: "after updates and deletes")
        // Inside a write transaction the results see the uncommitted state.
        try lattice.write {
            var updates = SplitMix64(state: 5)
            for item in lattice.objects(QItem.self).prefix(40) { QueryTestCase.randomize(item, &updates) }
            try check(300, &gen, phase: "inside a write")
        }
        // Both kinds of plan were exercised, so indexed and unindexed copies were compared.
        XCTAssertGreaterThan(indexPlans, 250)
        XCTAssertGreaterThan(scanPlans, 250)
    }
}

extension QueryDifferentialTests {
    /// Random sorts (one to three keys, with and without a filter, with index walks) against a stable
    /// Swift sort of the objects in object-key order.
    func testGeneratedSortsMatchSwiftSort() throws {
        var rng = SplitMix64(state: 11)
        try lattice.write {
            for id in 0..<250 {
                let item = QItem()
                item.id = id
                QueryTestCase.randomize(item, &rng)
                try lattice.add(item)
            }
        }
        func order<T: Comparable>(_ a: T?, _ b: T?) -> Int {
            switch (a, b) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case let (x?, y?): return x < y ? -1 : x == y ? 0 : 1
            }
        }
        func doubles(_ a: Double?, _ b: Double?) -> Int {
            // nil first, then NaN, then numbers.
            order(a.map { $0.isNaN ? 0 : 1 }, b.map { $0.isNaN ? 0 : 1 }) != 0 ? order(a.map { $0.isNaN ? 0 : 1 }, b.map { $0.isNaN ? 0 : 1 })
                : order(a.flatMap { $0.isNaN ? nil : $0 }, b.flatMap { $0.isNaN ? nil : $0 })
        }
        let keys: [(String, (QItem, QItem) -> Int)] = [
            ("int", { order($0.int, $1.int) }), ("intIdx", { order($0.intIdx, $1.intIdx) }),
            ("optInt", { order($0.optInt, $1.optInt) }), ("optIntIdx", { order($0.optIntIdx, $1.optIntIdx) }),
            ("string", { order(Bytes(b: Array($0.string.utf8)), Bytes(b: Array($1.string.utf8))) }),
            ("stringIdx", { order(Bytes(b: Array($0.stringIdx.utf8)), Bytes(b: Array($1.stringIdx.utf8))) }),
            ("optStringIdx", { order($0.optStringIdx.map { Bytes(b: Array($0.utf8)) }, $1.optStringIdx.map { Bytes(b: Array($0.utf8)) }) }),
            ("double", { doubles($0.double, $1.double) }), ("optDouble", { doubles($0.optDouble, $1.optDouble) }),
            ("date", { order($0.date, $1.date) }), ("dateIdx", { order($0.dateIdx, $1.dateIdx) }),
            ("bool", { order($0.bool ? 1 : 0, $1.bool ? 1 : 0) }), ("boolIdx", { order($0.boolIdx ? 1 : 0, $1.boolIdx ? 1 : 0) }),
            ("decimal", { order($0.decimal, $1.decimal) }), ("objectIdIdx", { order($0.objectIdIdx, $1.objectIdIdx) }),
            ("id", { order($0.id, $1.id) }),
        ]
        var gen = Gen(rng: SplitMix64(state: 13))
        let all = Array(lattice.objects(QItem.self))
        var walks = 0
        for round in 0..<300 {
            let chosen = (0..<Int.random(in: 1...3, using: &gen.rng)).map { _ in
                (gen.pick(keys), Bool.random(using: &gen.rng))
            }
            var results = lattice.objects(QItem.self)
            var filtered = all
            if round % 3 == 0 {
                let g = gen.predicate(1)
                let (text, args) = QueryDifferentialTests.numberPositionals(g.text, g.args)
                results = try results.filter(text, argumentArray: args)
                filtered = all.filter(g.eval)
            }
            let descriptors = chosen.map { SortDescriptor(keyPath: $0.0.0, ascending: $0.1) }
            let sorted = try results.sorted(by: descriptors)
            // `first` and `last` of fresh results find their object without sorting (an index end or one pass).
            let (first, last) = (try results.sorted(by: descriptors).first?.id, try results.sorted(by: descriptors).last?.id)
            if sorted.explain().contains("walk") { walks += 1 }
            let expected = filtered.enumerated().sorted { a, b in
                for ((_, compare), ascending) in chosen {
                    let c = compare(a.element, b.element)
                    if c != 0 { return ascending ? c < 0 : c > 0 }
                }
                return a.offset < b.offset
            }.map(\.element.id)
            XCTAssertEqual(sorted.map(\.id), expected, "\(chosen.map { "\($0.0.0) \($0.1)" }) plan \(sorted.explain())")
            XCTAssertEqual(first, expected.first, "first, \(chosen.map { "\($0.0.0) \($0.1)" }) plan \(sorted.explain())")
            XCTAssertEqual(last, expected.last, "last, \(chosen.map { "\($0.0.0) \($0.1)" }) plan \(sorted.explain())")
        }
        XCTAssertGreaterThan(walks, 10)
    }
}

extension QueryDifferentialTests.Generated {
    /// `nil`/`NULL` literals take no argument.
    func fixingArgs() -> Self {
        var copy = self
        if !text.hasSuffix("%@") { copy.args = [] }
        return copy
    }
}
