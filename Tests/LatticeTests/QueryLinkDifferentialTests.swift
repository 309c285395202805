import Foundation
import XCTest
@testable import Lattice

/// Thousands of generated predicates through links, lists, sets, maps and backlinks, each checked
/// against a plain Swift evaluation of a snapshot of the objects, before and after updates and deletes;
/// and sorts through to-one links against a stable Swift sort.
final class QueryLinkDifferentialTests: LinkQueryTestCase {
    typealias Op = QueryDifferentialTests.Op

    /// The objects as plain values, read through the object API.
    struct Snapshot {
        struct Dog { var key: Int64; var name: String; var age: Int; var weight: Double?; var owner: Int64?; var walkers: [Int64] }
        struct Person {
            var key: Int64; var name: String; var age: Int; var dogs: [Int64]; var friends: [Int64]; var pets: [Int64?]
            var nicknames: [String]; var scores: [Double]; var optInts: [Int?]; var tags: [String]; var ratings: [Int]
            var city: String?; var zip: Int??; var partner: Int64?; var cars: [Int64]
        }
        var dogs: [Int64: Dog] = [:]
        var people: [Int64: Person] = [:]
        var dogObjects: [LDog] = []
        var personObjects: [LPerson] = []

        init(_ lattice: Lattice) {
            dogObjects = Array(lattice.objects(LDog.self))
            personObjects = Array(lattice.objects(LPerson.self))
            for d in dogObjects {
                dogs[d._key] = Dog(key: d._key, name: d.name, age: d.age, weight: d.weight, owner: d.owner?._key, walkers: d.walkers.map(\._key))
            }
            for p in personObjects {
                people[p._key] = Person(key: p._key, name: p.name, age: p.age, dogs: p.dogs.map(\._key), friends: p.friends.map(\._key),
                                        pets: p.pets.values.map { $0?._key }, nicknames: Array(p.nicknames), scores: Array(p.scores),
                                        optInts: Array(p.optInts), tags: Array(p.tags), ratings: p.ratings.values,
                                        city: p.address?.city, zip: p.address.map { $0.zip }, partner: p.partner?._key,
                                        cars: p.cars.map(\._key))
            }
        }
    }

    struct Generated {
        var text: String
        var args: [Any]
        var eval: (Snapshot, Int64) -> Bool
    }

    static let names = ["Ann", "Bo", "Cy", "Rex", "Rover", "Fido", "Ra", "B"]
    static let words = ["a", "ab", "abc", "b", "ba", "bob", "x", ""]
    static let doubles = [-1.5, 0.0, 0.5, 2.0, 7.25]

    /// `value op constant` with nil semantics (nil equals only nil; ordering with nil is false).
    static func holds<T: Comparable>(_ op: Op, _ v: T?, _ c: T?) -> Bool { QueryDifferentialTests.holds(op, v, c) }

    /// A leaf value reached through a path: `.broken` when a link on the way is nil.
    enum Leaf<T> { case broken, value(T) }

    /// A comparison of to-one leaves: a broken path reads as nil (`!= 'x'` holds, as in Realm).
    static func compare<T: Comparable>(_ leaf: Leaf<T?>, _ op: Op, _ c: T?) -> Bool {
        switch leaf {
        case .broken: return holds(op, nil, c)
        case let .value(v): return holds(op, v, c)
        }
    }

    static func quantify<T>(_ q: String, _ leaves: [T], _ test: (T) -> Bool) -> Bool {
        switch q {
        case "ALL ": return leaves.allSatisfy(test)
        case "NONE ": return !leaves.contains(where: test)
        default: return leaves.contains(where: test)
        }
    }

    static func stringOp(_ op: String, _ s: String, _ p: String) -> Bool {
        let a = Array(s.utf8), b = Array(p.utf8)
        switch op {
        case "BEGINSWITH": return a.starts(with: b)
        case "ENDSWITH": return a.reversed().starts(with: b.reversed())
        default: return b.isEmpty || (a.count >= b.count && (0...(a.count - b.count)).contains { Array(a[$0..<$0 + b.count]) == b })
        }
    }

    struct Gen {
        var rng: SplitMix64
        let snapshot: Snapshot

        mutating func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &rng)] }
        mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &rng) }
        mutating func op() -> Op { pick(Op.allCases) }
        mutating func quantifier() -> String { pick(["ANY ", "ALL ", "NONE ", "SOME ", ""]) }

        mutating func predicate(_ depth: Int, dog: Bool) -> Generated {
            let roll = int(0...99)
            if depth > 0 && roll < 15 {
                let a = predicate(depth - 1, dog: dog), b = predicate(depth - 1, dog: dog)
                return Generated(text: "(\(a.text) AND \(b.text))", args: a.args + b.args, eval: { a.eval($0, $1) && b.eval($0, $1) })
            }
            if depth > 0 && roll < 30 {
                let a = predicate(depth - 1, dog: dog), b = predicate(depth - 1, dog: dog)
                return Generated(text: "(\(a.text) OR \(b.text))", args: a.args + b.args, eval: { a.eval($0, $1) || b.eval($0, $1) })
            }
            if depth > 0 && roll < 38 {
                let a = predicate(depth - 1, dog: dog)
                return Generated(text: "NOT \(a.text)", args: a.args, eval: { !a.eval($0, $1) })
            }
            return dog ? dogAtom() : personAtom()
        }

        // MARK: Dogs

        mutating func dogAtom() -> Generated {
            let o = op()
            switch int(0...9) {
            case 9:
                // Two single values of each row; a nil link on the way reads as nil.
                let partner = int(0...1) == 0
                let text = partner ? "owner.partner.age \(o.rawValue) owner.age" : "owner.age \(o.rawValue) age"
                return Generated(text: text, args: []) { s, k in
                    let dog = s.dogs[k]!
                    let owner = dog.owner.flatMap { s.people[$0] }
                    let lhs = partner ? owner?.partner.flatMap { s.people[$0] }?.age : owner?.age
                    return holds(o, lhs, partner ? owner?.age : dog.age)
                }
            case 0:
                let c = pick(QueryLinkDifferentialTests.names)
                return Generated(text: "owner.name \(o.rawValue) %@", args: [c]) { s, k in
                    let owner = s.dogs[k]!.owner.map { s.people[$0]!.name }
                    return compare(owner.map { .value(QueryDifferentialTests.Bytes(b: Array($0.utf8))) } ?? .broken, o,
                                   QueryDifferentialTests.Bytes(b: Array(c.utf8)))
                }
            case 1:
                let c: String? = int(0...3) == 0 ? nil : pick(["Oslo", "Rome", "Kyiv"])
                return Generated(text: "owner.address.city == %@", args: [c as Any]) { s, k in
                    guard let owner = s.dogs[k]!.owner else { return c == nil }
                    guard let city = s.people[owner]!.city else { return c == nil }
                    return city == c
                }
            case 2:
                let target: LPerson? = int(0...4) == 0 ? nil : pick(snapshot.personObjects)
                let eq = int(0...1) == 0
                return Generated(text: "owner \(eq ? "==" : "!=") %@", args: [target as Any]) { s, k in
                    (s.dogs[k]!.owner == target?._key) == eq
                }
            case 3:
                let n = int(0...4)
                return Generated(text: "owner.dogs.@count \(o.rawValue) \(n)", args: []) { s, k in
                    // A collection reached through a nil link is empty.
                    return holds(o, s.dogs[k]!.owner.map { s.people[$0]!.dogs.count } ?? 0, n)
                }
            case 4:
                let n = int(0...3)
                return Generated(text: "walkers.@count \(o.rawValue) \(n)", args: []) { s, k in holds(o, s.dogs[k]!.walkers.count, n) }
            case 5:
                let q = quantifier(), n = int(0...9)
                return Generated(text: "\(q)walkers.age \(o.rawValue) \(n)", args: []) { s, k in
                    quantify(q, s.dogs[k]!.walkers) { holds(o, s.people[$0]!.age, n) }
                }
            case 6:
                let n = int(0...9)
                return Generated(text: "owner.partner.age \(o.rawValue) \(n)", args: []) { s, k in
                    guard let owner = s.dogs[k]!.owner, let partner = s.people[owner]!.partner else { return holds(o, nil, n) }
                    return holds(o, s.people[partner]!.age, n)
                }
            case 7:
                let q = quantifier(), c = pick(QueryLinkDifferentialTests.words)
                return Generated(text: "\(q)walkers.nicknames BEGINSWITH %@", args: [c]) { s, k in
                    quantify(q, s.dogs[k]!.walkers.flatMap { s.people[$0]!.nicknames }) { stringOp("BEGINSWITH", $0, c) }
                }
            default:
                let n = int(0...9)
                return Generated(text: "(age \(o.rawValue) \(n) AND owner != nil)", args: []) { s, k in
                    holds(o, s.dogs[k]!.age, n) && s.dogs[k]!.owner != nil
                }
            }
        }

        // MARK: People

        mutating func personAtom() -> Generated {
            let o = op()
            switch int(0...17) {
            case 0:
                let c = pick(QueryLinkDifferentialTests.names)
                return Generated(text: "partner.name \(o.rawValue) '\(c)'", args: []) { s, k in
                    let name = s.people[k]!.partner.map { s.people[$0]!.name }
                    return compare(name.map { .value(QueryDifferentialTests.Bytes(b: Array($0.utf8))) } ?? .broken, o,
                                   QueryDifferentialTests.Bytes(b: Array(c.utf8)))
                }
            case 1:
                let c: Int? = int(0...3) == 0 ? nil : int(0...5)
                return Generated(text: "address.zip \(o.rawValue) %@", args: [c as Any]) { s, k in
                    guard let zip = s.people[k]!.zip else { return holds(o, nil, c) }
                    return holds(o, zip, c)
                }
            case 2:
                let n = int(0...9)
                return Generated(text: "partner.partner.age \(o.rawValue) \(n)", args: []) { s, k in
                    guard let p = s.people[k]!.partner, let pp = s.people[p]!.partner else { return holds(o, nil, n) }
                    return holds(o, s.people[pp]!.age, n)
                }
            case 3:
                let q = quantifier(), n = int(0...9)
                return Generated(text: "\(q)dogs.age \(o.rawValue) \(n)", args: []) { s, k in
                    quantify(q, s.people[k]!.dogs) { holds(o, s.dogs[$0]!.age, n) }
                }
            case 4:
                let q = quantifier(), c = pick(["R", "F", "Ro", ""]), sop = pick(["BEGINSWITH", "ENDSWITH", "CONTAINS"])
                return Generated(text: "\(q)friends.name \(sop) '\(c)'", args: []) { s, k in
                    quantify(q, s.people[k]!.friends) { stringOp(sop, s.dogs[$0]!.name, c) }
                }
            case 5:
                let q = quantifier(), n = int(0...9)
                return Generated(text: "\(q)pets.age \(o.rawValue) \(n)", args: []) { s, k in
                    quantify(q, s.people[k]!.pets) { key in key.map { holds(o, s.dogs[$0]!.age, n) } ?? false }
                }
            case 6:
                let q = quantifier(), c = pick(QueryLinkDifferentialTests.names)
                return Generated(text: "\(q)dogs.owner.name == '\(c)'", args: []) { s, k in
                    quantify(q, s.people[k]!.dogs) { d in s.dogs[d]!.owner.map { s.people[$0]!.name == c } ?? false }
                }
            case 7:
                let q = quantifier(), c = pick(QueryLinkDifferentialTests.words), sop = pick(["BEGINSWITH", "ENDSWITH", "CONTAINS", "=="])
                return Generated(text: "\(q)nicknames \(sop) '\(c)'", args: []) { s, k in
                    quantify(q, s.people[k]!.nicknames) { sop == "==" ? $0 == c : stringOp(sop, $0, c) }
                }
            case 8:
                let c = pick(QueryLinkDifferentialTests.words), tags = int(0...1) == 0
                return Generated(text: "%@ IN \(tags ? "tags" : "nicknames")", args: [c]) { s, k in
                    (tags ? s.people[k]!.tags : s.people[k]!.nicknames).contains(c)
                }
            case 9:
                let q = quantifier(), d = pick(QueryLinkDifferentialTests.doubles)
                return Generated(text: "\(q)scores \(o.rawValue) \(d)", args: []) { s, k in quantify(q, s.people[k]!.scores) { holds(o, $0, d) } }
            case 10:
                let q = quantifier(), c: Int? = int(0...2) == 0 ? nil : int(0...5)
                return Generated(text: "\(q)optInts \(o.rawValue) %@", args: [c as Any]) { s, k in
                    quantify(q, s.people[k]!.optInts) { holds(o, $0, c) }
                }
            case 11:
                let n = int(0...4), which = pick(["dogs", "friends", "pets", "nicknames", "tags", "ratings", "cars", "scores"])
                return Generated(text: "\(which).@count \(o.rawValue) \(n)", args: []) { s, k in
                    let p = s.people[k]!
                    let counts = ["dogs": p.dogs.count, "friends": p.friends.count, "pets": p.pets.count, "nicknames": p.nicknames.count,
                                  "tags": p.tags.count, "ratings": p.ratings.count, "cars": p.cars.count, "scores": p.scores.count]
                    return holds(o, counts[which]!, n)
                }
            case 12:
                let agg = pick(["@min", "@max", "@sum", "@avg"]), n = int(0...12)
                return Generated(text: "dogs.\(agg).age \(o.rawValue) \(n)", args: []) { s, k in
                    let ages = s.people[k]!.dogs.map { s.dogs[$0]!.age }
                    switch agg {
                    case "@min": return holds(o, ages.min(), n)
                    case "@max": return holds(o, ages.max(), n)
                    case "@sum": return holds(o, ages.reduce(0, +), n)
                    default: return holds(o, ages.isEmpty ? nil : Double(ages.reduce(0, +)) / Double(ages.count), Double(n))
                    }
                }
            case 13:
                let agg = pick(["@min", "@max", "@sum", "@avg"]), d = pick(QueryLinkDifferentialTests.doubles)
                let onScores = int(0...1) == 0
                return Generated(text: onScores ? "scores.\(agg) \(o.rawValue) \(d)" : "dogs.\(agg).weight \(o.rawValue) \(d)", args: []) { s, k in
                    let values = onScores ? s.people[k]!.scores : s.people[k]!.dogs.compactMap { s.dogs[$0]!.weight }
                    switch agg {
                    case "@min": return holds(o, values.min(), d)
                    case "@max": return holds(o, values.max(), d)
                    case "@sum": return holds(o, values.reduce(0, +), d)
                    default: return holds(o, values.isEmpty ? nil : values.reduce(0, +) / Double(values.count), d)
                    }
                }
            case 14:
                let n = int(0...9), c = pick(["R", "F", ""]), m = int(0...2)
                return Generated(text: "SUBQUERY(dogs, $d, $d.age \(o.rawValue) \(n) AND $d.name BEGINSWITH '\(c)').@count >= \(m)", args: []) { s, k in
                    s.people[k]!.dogs.filter { holds(o, s.dogs[$0]!.age, n) && stringOp("BEGINSWITH", s.dogs[$0]!.name, c) }.count >= m
                }
            case 15:
                let target: LPerson? = int(0...4) == 0 ? nil : pick(snapshot.personObjects)
                let eq = int(0...1) == 0
                return Generated(text: "partner \(eq ? "==" : "!=") %@", args: [target as Any]) { s, k in
                    (s.people[k]!.partner == target?._key) == eq
                }
            case 16:
                let dog = pick(snapshot.dogObjects), set = int(0...1) == 0
                return Generated(text: "%@ IN \(set ? "friends" : "dogs")", args: [dog]) { s, k in
                    (set ? s.people[k]!.friends : s.people[k]!.dogs).contains(dog._key)
                }
            default:
                let q = quantifier(), c = pick(QueryLinkDifferentialTests.names)
                return Generated(text: "\(q)dogs.walkers.name == '\(c)'", args: []) { s, k in
                    quantify(q, s.people[k]!.dogs.flatMap { s.dogs[$0]!.walkers }) { s.people[$0]!.name == c }
                }
            }
        }
    }

    // MARK: Data

    func populate(_ rng: inout SplitMix64, people: Int, dogs: Int) throws {
        func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &rng)] }
        func int(_ r: ClosedRange<Int>) -> Int { Int.random(in: r, using: &rng) }
        try lattice.write {
            var allDogs: [LDog] = []
            for _ in 0..<dogs {
                let d = LDog()
                d.name = pick(QueryLinkDifferentialTests.names)
                d.age = int(0...9)
                d.weight = int(0...3) == 0 ? nil : pick(QueryLinkDifferentialTests.doubles)
                try lattice.add(d)
                allDogs.append(d)
            }
            var allPeople: [LPerson] = []
            for _ in 0..<people {
                let p = LPerson()
                p.name = pick(QueryLinkDifferentialTests.names)
                p.age = int(0...9)
                p.nicknames.append(contentsOf: (0..<int(0...3)).map { _ in pick(QueryLinkDifferentialTests.words) })
                p.scores.append(contentsOf: (0..<int(0...3)).map { _ in pick(QueryLinkDifferentialTests.doubles) })
                p.optInts.append(contentsOf: (0..<int(0...2)).map { _ in int(0...2) == 0 ? nil : int(0...5) })
                for _ in 0..<int(0...2) { p.tags.insert(pick(QueryLinkDifferentialTests.words)) }
                for i in 0..<int(0...2) { p.ratings["r\(i)"] = int(0...9) }
                if int(0...2) > 0 {
                    let a = LAddress()
                    a.city = pick(["Oslo", "Rome", "Kyiv"])
                    a.zip = int(0...2) == 0 ? nil : int(0...5)
                    p.address = a
                }
                try lattice.add(p)
                allPeople.append(p)
            }
            for p in allPeople {
                p.dogs.append(contentsOf: (0..<int(0...4)).map { _ in pick(allDogs) })
                for _ in 0..<int(0...2) { p.friends.insert(pick(allDogs)) }
                for i in 0..<int(0...2) { p.pets["p\(i)"] = int(0...3) == 0 ? nil : pick(allDogs) }
                if int(0...2) > 0 { p.partner = pick(allPeople) }
            }
            for d in allDogs where int(0...3) > 0 { d.owner = pick(allPeople) }
            for _ in 0..<people / 2 {
                let c = LCar()
                c.model = pick(["Golf", "Polo"])
                try lattice.add(c)
                if int(0...3) > 0 { c.owner = pick(allPeople) }
            }
        }
    }

    func check(_ count: Int, seed: UInt64, phase: String) throws {
        let snapshot = Snapshot(lattice)
        var gen = Gen(rng: SplitMix64(state: seed), snapshot: snapshot)
        var selective = 0
        defer { XCTAssertGreaterThan(selective, count / 3, "[\(phase)] most predicates should select some but not all objects") }
        for i in 0..<count {
            let dog = i % 3 == 0
            let g = gen.predicate(2, dog: dog)
            let keys = dog ? Array(snapshot.dogs.keys) : Array(snapshot.people.keys)
            let expected = Set(keys.filter { g.eval(snapshot, $0) })
            let actual: Set<Int64>
            do {
                actual = dog ? Set(try lattice.objects(LDog.self).filter(g.text, argumentArray: g.args).map(\._key))
                    : Set(try lattice.objects(LPerson.self).filter(g.text, argumentArray: g.args).map(\._key))
            } catch {
                XCTFail("[\(phase)] \(g.text) threw \(error)")
                continue
            }
            if expected != actual {
                XCTFail("[\(phase)] \(g.text) args \(g.args.map { "\($0)" }): expected \(expected.count), got \(actual.count); "
                    + "missing \(expected.subtracting(actual).sorted().prefix(5)), extra \(actual.subtracting(expected).sorted().prefix(5))")
                return
            }
            if !expected.isEmpty && expected.count < keys.count { selective += 1 }
            let plan = dog ? try lattice.objects(LDog.self).filter(g.text, argumentArray: g.args).explain()
                : try lattice.objects(LPerson.self).filter(g.text, argumentArray: g.args).explain()
            if plan.contains("backlinks") { backlinkPlans += 1 }
        }
    }

    var backlinkPlans = 0

    func testGeneratedLinkPredicatesMatchSwiftEvaluation() throws {
        var rng = SplitMix64(state: 2024)
        try populate(&rng, people: 60, dogs: 90)
        try check(1500, seed: 11, phase: "initial")
        // Updates (ages, links, list entries) and deletes (dogs leave lists, sets, maps; links to deleted people become nil).
        try lattice.write {
            let dogs = Array(lattice.objects(LDog.self)), people = Array(lattice.objects(LPerson.self))
            for (i, d) in dogs.enumerated() where i % 4 == 0 {
                d.age = Int.random(in: 0...9, using: &rng)
                d.owner = i % 8 == 0 ? nil : people[Int.random(in: 0..<people.count, using: &rng)]
            }
            for (i, p) in people.enumerated() where i % 5 == 0 && !p.dogs.isEmpty { p.dogs.remove(at: 0) }
            for (i, p) in people.enumerated() where i % 6 == 1 { p.nicknames.append("bob") }
            for (i, d) in dogs.enumerated() where i % 7 == 3 { try lattice.delete(d) }
            for (i, p) in people.enumerated() where i % 9 == 4 { try lattice.delete(p) }
        }
        try check(1000, seed: 12, phase: "after updates and deletes")
        try lattice.write {
            for p in lattice.objects(LPerson.self).prefix(10) { p.age = (p.age + 3) % 10 }
            try check(300, seed: 13, phase: "inside a write")
        }
        // Indexed ages drove many link predicates through the backlink table, and the answers agreed.
        XCTAssertGreaterThan(backlinkPlans, 150)
    }

    /// Random sorts through to-one links against a stable Swift sort of the objects in key order.
    func testGeneratedLinkSortsMatchSwiftSort() throws {
        var rng = SplitMix64(state: 77)
        try populate(&rng, people: 40, dogs: 80)
        let snapshot = Snapshot(lattice)
        typealias Key = (path: String, value: (Snapshot.Dog) -> QueryDifferentialTests.Bytes?)
        func bytes(_ s: String?) -> QueryDifferentialTests.Bytes? { s.map { QueryDifferentialTests.Bytes(b: Array($0.utf8)) } }
        func int(_ i: Int?) -> QueryDifferentialTests.Bytes? {
            i.map { var out: [UInt8] = []; KeyCodec.appendInt(Int64($0), to: &out); return QueryDifferentialTests.Bytes(b: out) }
        }
        let owner = { (d: Snapshot.Dog) in d.owner.flatMap { snapshot.people[$0] } }
        let keys: [Key] = [
            ("name", { bytes($0.name) }), ("age", { int($0.age) }),
            ("owner.name", { bytes(owner($0)?.name) }), ("owner.age", { int(owner($0)?.age) }),
            ("owner.address.city", { bytes(owner($0)?.city) }),
            ("owner.partner.name", { bytes(owner($0)?.partner.flatMap { snapshot.people[$0] }?.name) }),
        ]
        for _ in 0..<200 {
            let chosen = (0..<Int.random(in: 1...3, using: &rng)).map { _ in
                (keys[Int.random(in: 0..<keys.count, using: &rng)], Bool.random(using: &rng))
            }
            let sorted = try lattice.objects(LDog.self).sorted(by: chosen.map { SortDescriptor(keyPath: $0.0.path, ascending: $0.1) })
            let expected = snapshot.dogs.values.sorted { $0.key < $1.key }.enumerated().sorted { a, b in
                for (key, ascending) in chosen {
                    let x = key.value(a.element), y = key.value(b.element)
                    if x == y { continue }
                    guard let x else { return ascending }
                    guard let y else { return !ascending }
                    return ascending ? x < y : y < x
                }
                return a.offset < b.offset
            }.map(\.element.key)
            XCTAssertEqual(sorted.map(\._key), expected, "sorted by \(chosen.map { "\($0.0.path) \($0.1)" })")
            let again = { try self.lattice.objects(LDog.self).sorted(by: chosen.map { SortDescriptor(keyPath: $0.0.path, ascending: $0.1) }) }
            XCTAssertEqual(try again().first?._key, expected.first, "first, sorted by \(chosen.map { "\($0.0.path) \($0.1)" })")
            XCTAssertEqual(try again().last?._key, expected.last, "last, sorted by \(chosen.map { "\($0.0.path) \($0.1)" })")
        }
    }
}
