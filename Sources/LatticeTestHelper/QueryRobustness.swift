// The `query` and `query-fuzz` commands of LatticeTestHelper (see main.swift), launched by
// Tests/LatticeTests/QueryRobustnessTests.swift: queries that once stopped the process run here, so that
// a crash fails one test instead of ending the test run.
import Foundation
import Lattice

enum RKind: String, PersistableEnum { case alpha, beta }

/// Every kind of property a predicate can name: scalars (indexed and plain), collections of values and
/// of objects, links and backlinks.
final class RPerson: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted(indexed: true) var age = 0
    @Persisted(indexed: true) var when = Date(timeIntervalSinceReferenceDate: 0)
    @Persisted var plainWhen = Date(timeIntervalSinceReferenceDate: 0)
    @Persisted(indexed: true) var optWhen: Date?
    @Persisted var score = 0.0
    @Persisted var ratio: Float = 0
    @Persisted var optScore: Double?
    @Persisted var dec: Decimal = 0
    @Persisted var optDec: Decimal?
    @Persisted var flag = false
    @Persisted var data = Data()
    @Persisted var uuid = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    @Persisted var oid = ObjectId(bytes: [UInt8](repeating: 0, count: 12))!
    @Persisted var kind = RKind.alpha
    @Persisted var tags: List<String>
    @Persisted var numbers: MutableSet<Int>
    @Persisted var scores: Map<String, Double>
    @Persisted var owner: RPerson?
    @Persisted var friends: List<RPerson>
    @Persisted var pets: MutableSet<RPet>
    @Persisted var petsByName: Map<String, RPet?>
    @Persisted(originProperty: "friends") var friendOf: LinkingObjects<RPerson>
}

final class RPet: Object {
    @Persisted var name = ""
    @Persisted(indexed: true) var age = 0
    @Persisted var born = Date(timeIntervalSinceReferenceDate: 0)
    @Persisted var owner: RPerson?
}

/// The values of person `i` of the fixture: NaN (both signs, and a signalling payload), infinities,
/// nil, -0.0 and Decimal NaN among them.
enum RFixture {
    static let count = 12
    static let times: [Double] = [0, 1, -1, .nan, -.nan, .infinity, -.infinity, 1e9, 86_400,
                                  Double(bitPattern: 0x7FF0_0000_0000_0001), -1000, 0]
    static let scores: [Double] = [0, -0.0, 2.5, .nan, -.nan, .infinity, -.infinity, 1e300, -3, 7, .nan, 1]
    static let decimals: [Decimal] = [0, 1, -1, .nan, Decimal(string: "0.1")!, Decimal(string: "1e100")!,
                                      Decimal(string: "-1e100")!, .greatestFiniteMagnitude, .nan, 7, -7, 3]
    static let names = ["Ann", "bob", "Cy", "dé", "", "Ann", "Zoë", "x*y", "ann", "Bob", "ß", "e\u{301}"]

    static func fill(_ lattice: Lattice) throws {
        guard lattice.objects(RPerson.self).isEmpty else { return }
        try lattice.write {
            var people: [RPerson] = []
            for i in 0..<count {
                let p = RPerson()
                p.id = i
                p.name = names[i]
                p.age = (i * 5) % 7
                p.when = Date(timeIntervalSinceReferenceDate: times[i])
                p.plainWhen = p.when
                p.optWhen = i % 4 == 0 ? nil : Date(timeIntervalSinceReferenceDate: times[(i + 3) % count])
                p.score = scores[i]
                p.ratio = Float(scores[(i + 1) % count])
                p.optScore = i % 3 == 0 ? nil : scores[(i + 5) % count]
                p.dec = decimals[i]
                p.optDec = i % 5 == 0 ? nil : decimals[(i + 2) % count]
                p.flag = i % 2 == 0
                p.data = Data(names[i].utf8)
                p.uuid = UUID(uuid: (UInt8(i), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
                p.oid = ObjectId(bytes: [UInt8](repeating: UInt8(i), count: 12))!
                p.kind = i % 3 == 0 ? .beta : .alpha
                p.tags.append(contentsOf: names.prefix(i % 4).map { $0 })
                for n in 0..<(i % 5) { p.numbers.insert(n * i) }
                p.scores["a"] = scores[(i + 2) % count]
                if i % 2 == 1 { p.scores["b"] = scores[i] }
                try lattice.add(p)
                people.append(p)
            }
            for (i, p) in people.enumerated() {
                p.owner = i == 0 ? nil : people[(i * 7) % count]
                p.friends.append(contentsOf: (0..<(i % 4)).map { people[($0 * 5 + i) % count] })
                let pet = RPet()
                pet.name = "pet\(i)"
                pet.age = i % 6
                pet.born = Date(timeIntervalSinceReferenceDate: times[(i + 4) % count])
                pet.owner = p
                try lattice.add(pet)
                if i % 3 != 2 { p.pets.insert(pet) }
                p.petsByName["pet\(i)"] = pet
                if i % 4 == 1 { p.petsByName["none"] = .some(nil) }
            }
        }
    }

    static func open(_ path: String) throws -> Lattice {
        let lattice = try Lattice(configuration: .init(fileURL: URL(fileURLWithPath: path), objectTypes: [RPerson.self, RPet.self]))
        try fill(lattice)
        return lattice
    }
}

/// A value the helper cannot store or compare.
struct RUnsupported {}

/// The argument named `spec`, for example `date:nan`, `double:-inf`, `tags:1` (person 1's managed List of
/// Strings), `results:age > 2` (Results of RPerson). See `RArguments.specs` for every form.
func queryArgument(_ spec: String, _ lattice: Lattice) throws -> Any {
    let (kind, text) = spec.firstIndex(of: ":").map { (String(spec[..<$0]), String(spec[spec.index(after: $0)...])) } ?? (spec, "")
    func person(_ id: String) throws -> RPerson {
        guard let n = Int(id), let p = lattice.object(ofType: RPerson.self, forPrimaryKey: n) else { fail("no person '\(id)' in \(spec)") }
        return p
    }
    func number(_ s: String) -> Double {
        guard let d = Double(s) else { fail("'\(s)' is not a number in \(spec)") }
        return d
    }
    let list = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
    switch kind {
    case "int": return Int(text) ?? 0
    case "int8": return Int8(clamping: Int(text) ?? 0)
    case "int16": return Int16(clamping: Int(text) ?? 0)
    case "int32": return Int32(clamping: Int(text) ?? 0)
    case "uint64": return UInt64(text) ?? UInt64.max
    case "double": return number(text)
    case "float": return Float(number(text))
    case "date": return Date(timeIntervalSinceReferenceDate: number(text))
    case "decimal": return text == "nan" ? Decimal.nan : Decimal(string: text) ?? Decimal.greatestFiniteMagnitude
    case "string": return text
    case "substring": return text.dropFirst()
    case "data": return Data(text.utf8)
    case "uuid": return UUID(uuidString: text) ?? UUID(uuid: (1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
    case "oid": return ObjectId(string: text) ?? ObjectId(bytes: [UInt8](repeating: 3, count: 12))!
    case "bool": return text == "true"
    case "nil": return Optional<Int>.none as Any
    case "null": return NSNull()
    case "kind": return RKind(rawValue: text) ?? RKind.beta
    case "person": return try person(text)
    case "unmanaged-person": return RPerson()
    case "pet": return lattice.objects(RPet.self).first ?? RPet()
    case "tags": return try person(text).tags
    case "friends": return try person(text).friends
    case "numbers": return try person(text).numbers
    case "scores": return try person(text).scores
    case "pets": return try person(text).pets
    case "pets-by-name": return try person(text).petsByName
    case "friend-of": return try person(text).friendOf
    case "unmanaged-tags":
        let l = List<String>()
        l.append(contentsOf: list)
        return l
    case "unmanaged-numbers":
        let s = MutableSet<Int>()
        for v in list { s.insert(Int(v) ?? 0) }
        return s
    case "unmanaged-scores":
        let m = Map<String, Double>()
        for (i, v) in list.enumerated() { m["k\(i)"] = number(v) }
        return m
    case "unmanaged-friends":
        let l = List<RPerson>()
        l.append(contentsOf: try list.map(person))
        return l
    case "results": return try lattice.objects(RPerson.self).filter(text.isEmpty ? "TRUEPREDICATE" : text)
    case "pet-results": return lattice.objects(RPet.self)
    case "array-int": return list.map { Int($0) ?? 0 }
    // n integers, each twice (`many-ints:100000`): large IN lists.
    case "many-ints": return (0..<(Int(text) ?? 0)).map { $0 / 2 }
    case "many-strings": return (0..<(Int(text) ?? 0)).map { "s\($0 / 2)" }
    case "array-double": return list.map(number)
    case "array-string": return list
    case "array-date": return list.map { Date(timeIntervalSinceReferenceDate: number($0)) }
    case "array-person": return try list.map(person)
    case "array-mixed": return [1, "a", 2.5, Optional<Int>.none as Any, Date(timeIntervalSinceReferenceDate: .nan)] as [Any]
    case "array-nested": return [[1, 2], [3]]
    case "array-lists": return [try person("1").tags, try person("2").tags]
    case "set-int": return Set(list.map { Int($0) ?? 0 })
    case "range": return 1..<4
    case "unsupported": return RUnsupported()
    default: fail("unknown argument '\(spec)'")
    }
}

enum RArguments {
    /// Arguments of every type the fuzz draws from.
    static let specs: [String] = [
        "int:0", "int:3", "int:-1", "int:9223372036854775807", "int:-9223372036854775808", "int8:5", "int16:-3", "int32:7",
        "uint64:18446744073709551615",
        "double:0", "double:-0.0", "double:2.5", "double:nan", "double:inf", "double:-inf", "double:1e308", "double:-1e308",
        "double:5e-324", "double:1e100", "double:9.3e18", "float:nan", "float:inf", "float:1.1",
        "date:0", "date:1", "date:nan", "date:-nan", "date:inf", "date:-inf", "date:1e300", "date:-1e300",
        "decimal:0", "decimal:0.1", "decimal:nan", "decimal:1e100", "decimal:huge", "decimal:-3",
        "string:", "string:Ann", "string:age", "string:owner.name", "string:friends.@count", "string:@avg", "string:.",
        "string:a.b.c.d", "string:dé", "string:ß", "string:'", "substring:xAnn", "data:Ann", "data:",
        "uuid:00010203-0405-0607-0809-0A0B0C0D0E0F", "uuid:bad", "oid:000000000000000000000000", "oid:bad",
        "bool:true", "bool:false", "nil", "null", "kind:alpha", "kind:beta",
        "person:1", "person:3", "unmanaged-person", "pet",
        "tags:3", "tags:0", "friends:3", "friends:0", "numbers:4", "scores:3", "pets:1", "pets-by-name:5", "friend-of:4",
        "unmanaged-tags:Ann,bob", "unmanaged-tags:", "unmanaged-numbers:0,4", "unmanaged-scores:nan,inf,1", "unmanaged-friends:1,2",
        "results:age > 2", "results:", "results:flag == true", "pet-results",
        "array-int:1,2,3", "array-int:", "array-double:nan,inf,-inf,1", "array-string:Ann,Cy", "array-date:nan,0,inf",
        "array-person:1,4", "array-mixed", "array-nested", "array-lists", "set-int:1,2", "range", "unsupported",
    ]
}

/// Runs `filter(predicate, arguments)` on RPerson; prints `ok <ids in ascending order>` and `plan <explain()>`,
/// or `invalidQuery <message>` (another LatticeError: `error <description>`). With `LATTICE_HELPER_STACK_KB`
/// set, the query runs on a thread with that much stack.
func runQuery(_ path: String, _ predicateArgument: String, _ specs: [String]) throws {
    guard let kb = ProcessInfo.processInfo.environment["LATTICE_HELPER_STACK_KB"].flatMap(Int.init) else {
        return try query(path, predicateArgument, specs)
    }
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        do { try query(path, predicateArgument, specs) } catch { fail("\(error)") }
        done.signal()
    }
    thread.stackSize = kb << 10
    thread.start()
    done.wait()
}

private func query(_ path: String, _ predicateArgument: String, _ specs: [String]) throws {
    let lattice = try RFixture.open(path)
    // `@file` reads the predicate from a file (predicates larger than a command-line argument may be).
    let predicate = predicateArgument.hasPrefix("@")
        ? try String(contentsOfFile: String(predicateArgument.dropFirst()), encoding: .utf8) : predicateArgument
    let arguments = try specs.map { try queryArgument($0, lattice) }
    do {
        let results = try lattice.objects(RPerson.self).filter(predicate, argumentArray: arguments)
        say("ok " + results.map(\.id).sorted().map(String.init).joined(separator: ","))
        say("plan " + results.explain())
    } catch let LatticeError.invalidQuery(message) {
        say("invalidQuery \(message)")
    } catch let error as LatticeError {
        say("error \(error)")
    }
}

/// Valid predicates the fuzz mutates, each with the family its `%@` and `$N` arguments are mostly drawn
/// from (`N` numbers, `D` dates, `S` strings and other single values, `O` objects, `C` collections and arrays).
private let fuzzCorpus: [(family: Character, predicate: String)] = [
    ("N", "age > %@"), ("C", "age IN %@"), ("C", "name IN %@"), ("C", "ANY tags IN %@"), ("S", "%@ IN tags"), ("D", "when == %@"),
    ("D", "when > %@ AND when < %@"), ("D", "plainWhen >= %@"), ("D", "optWhen == %@"), ("D", "optWhen BETWEEN {%@, %@}"),
    ("C", "when BETWEEN %@"), ("N", "dec == %@"), ("N", "dec < %@"), ("N", "optDec != %@"), ("C", "dec IN %@"), ("N", "score > %@"),
    ("N", "ratio == %@"), ("N", "optScore <= %@"), ("S", "name BEGINSWITH[c] %@"), ("S", "name LIKE[cd] %@"), ("S", "data CONTAINS %@"),
    ("O", "owner == %@"), ("C", "owner IN %@"), ("O", "%@ IN friends"), ("C", "ANY friends IN %@"), ("N", "friends.@count > %@"),
    ("N", "tags.@count == %d"), ("N", "scores.@max > %f"), ("N", "scores.@avg < %@"), ("N", "numbers.@sum >= %@"),
    ("N", "friends.@avg.age > %@"), ("D", "friends.@min.when < %@"), ("D", "SUBQUERY(friends, $f, $f.age > 2 AND $f.when < %@).@count > 0"),
    ("D", "SUBQUERY(pets, $p, $p.born > %@).@count == 1"), ("N", "NOT (score < %@ OR ratio >= %@)"), ("S", "!(age == 1) && owner.name ==[c] %@"),
    ("S", "uuid == %@"), ("S", "oid == %@"), ("S", "kind == %@"), ("S", "flag == %@"), ("N", "ANY pets.age < %@"), ("N", "ALL friends.score > %@"),
    ("S", "NONE petsByName.name == %@"), ("N", "friendOf.@count == %@"), ("S", "%K == 'Ann'"), ("S", "%K.@count > 1"), ("N", "$0 > $1"),
    ("C", "$0 IN $1"), ("N", "age BETWEEN {%@, %@}"), ("N", "TRUEPREDICATE"), ("N", "FALSEPREDICATE OR age < 3"), ("N", "owner.owner.dec > %@"),
    ("D", "ANY friends.friends.when > %@"), ("S", "name == nil"), ("D", "optWhen != nil AND when != %@"), ("N", "5 < age"), ("S", "%@ == name"),
    ("N", "ANY scores > %@"), ("N", "scores.@count BETWEEN {1, %d}"), ("N", "age == %d OR age == %i OR score == %lf"), ("S", "name == %s"),
    ("N", "((((age > 1))))"), ("S", "NOT NOT NOT flag == true"), ("N", "{1, 2} IN age"), ("N", "age IN {1, {2, 3}}"),
    ("S", "uuid == uuid(00010203-0405-0607-0809-0A0B0C0D0E0F)"), ("S", "oid != oid(000000000000000000000000)"),
    ("N", "when < 1e308 AND when > -1e308"), ("N", "age == 0x7fffffffffffffff"), ("S", "name == 'a\\'b' OR name == \"\\u{1F600}\""),
    ("N", "dec > 1e400"), ("N", "age > -9223372036854775808"), ("D", "when < %@ OR optWhen > %@"), ("N", "score BETWEEN {%@, %@}"),
    ("C", "score IN %@"), ("C", "ratio IN %@"), ("C", "when IN %@"), ("C", "optWhen IN %@"), ("C", "uuid IN %@"), ("C", "ANY pets IN %@"),
]

/// The argument specs of each family (see `fuzzCorpus`).
private func fuzzFamily(_ family: Character) -> [String] {
    RArguments.specs.filter { spec in
        let kind = spec.split(separator: ":").first.map(String.init) ?? spec
        switch family {
        case "N": return ["int", "int8", "int16", "int32", "uint64", "double", "float", "decimal", "nil"].contains(kind)
        case "D": return ["date", "nil", "double"].contains(kind)
        case "S": return ["string", "substring", "data", "uuid", "oid", "bool", "kind", "nil", "null"].contains(kind)
        case "O": return ["person", "unmanaged-person", "pet", "nil"].contains(kind)
        default: return kind.hasPrefix("array") || kind.hasPrefix("unmanaged-") || kind.hasPrefix("results") || kind.hasPrefix("set")
            || ["tags", "friends", "numbers", "scores", "pets", "pets-by-name", "friend-of", "range", "pet-results"].contains(kind)
        }
    }
}

private let fuzzTokens: [String] = [
    "(", ")", "{", "}", ",", ".", " AND ", " OR ", " NOT ", "!", "&&", "||", "==", "!=", "<", ">=", " IN ", " BETWEEN ",
    " BEGINSWITH ", " LIKE ", "[c]", "[cd]", "[x]", "%@", "%K", "%d", "%f", "%s", "%", "$0", "$1", "$9", "$f", "$", "@count",
    "@avg", "@size", "@bogus", "SUBQUERY(", "ANY ", "ALL ", "NONE ", "SOME ", "nil", "TRUEPREDICATE", "'", "\"", "\\", "\\u{",
    "1e308", "-0", "0x", "0xffffffffffffffffff", "nan", "inf", "99999999999999999999999", "-9223372036854775808", ".5", "1e",
    "uuid(", "oid(", "uuid(x)", "age", "name", "when", "dec", "friends", "tags", "owner", "scores", "pets", "friendOf", "é", "\u{0}",
    "MATCHES", " ", "  ", "\n", "-", "+",
]

/// Mutates corpus predicates `count` times with random arguments of every type; prints
/// `fuzzed <count> ok <n> invalidQuery <n> otherErrors <n>`. Exits 1 on an error that is not a LatticeError.
func runQueryFuzz(_ path: String, seed: UInt64, count: Int) throws {
    let lattice = try RFixture.open(path)
    var rng = FuzzRandom(state: seed)
    let pool = try RArguments.specs.map { try queryArgument($0, lattice) }
    var families: [Character: [Any]] = [:]
    for family in "NDSOC" { families[family] = try fuzzFamily(family).map { try queryArgument($0, lattice) } }
    var ok = 0, invalid = 0, other = 0
    for n in 0..<count {
        let entry = fuzzCorpus[rng.below(fuzzCorpus.count)]
        // A quarter unmutated (valid predicates with odd arguments), the rest mutated.
        let predicate = rng.below(4) == 0 ? entry.predicate : mutate(entry.predicate, &rng)
        let fitting = families[entry.family] ?? pool
        let arguments = (0..<(1 + rng.below(3))).map { _ in rng.below(4) == 0 ? pool[rng.below(pool.count)] : fitting[rng.below(fitting.count)] }
        do {
            var results = try lattice.objects(RPerson.self).filter(predicate, argumentArray: arguments)
            let keyPaths = ["when", "plainWhen", "score", "ratio", "dec", "optWhen", "owner.when", "name", "tags", "bogus"]
            switch rng.below(10) {
            case 0: results = try results.sorted(byKeyPath: keyPaths[rng.below(keyPaths.count)], ascending: rng.below(2) == 0)
            case 1: _ = results.explain()
            case 2: _ = try lattice.objects(RPerson.self).first?.friends.filter(predicate, argumentArray: arguments).count
            case 3: results = try results.distinct(by: [keyPaths[rng.below(keyPaths.count)]])
            case 4: _ = try lattice.objects(RPerson.self).index(matching: predicate, arguments.first as Any)
            default: break
            }
            _ = results.count
            if n % 4 == 0 { _ = results.map(\.id) }
            ok += 1
        } catch LatticeError.invalidQuery {
            invalid += 1
        } catch is LatticeError {
            other += 1
        } catch {
            fail("predicate \(predicate.debugDescription) with \(arguments.count) arguments threw \(type(of: error)): \(error)")
        }
    }
    say("fuzzed \(count) ok \(ok) invalidQuery \(invalid) otherErrors \(other)")
}

/// One random edit (or a few) of a corpus predicate: characters and tokens deleted, inserted or replaced,
/// two predicates spliced, deep nesting, odd numbers.
private func mutate(_ text: String, _ rng: inout FuzzRandom) -> String {
    var scalars = Array(text.unicodeScalars)
    for _ in 0...(rng.below(4) == 0 ? 2 : 0) {
        let at = rng.below(scalars.count + 1)
        switch rng.below(9) {
        case 0: if at < scalars.count { scalars.remove(at: at) }
        case 1: scalars.insert(Unicode.Scalar(UInt8(32 + rng.below(95))), at: at)
        case 2: if at < scalars.count { scalars[at] = Unicode.Scalar(UInt8(32 + rng.below(95))) }
        case 3, 4: scalars.insert(contentsOf: fuzzTokens[rng.below(fuzzTokens.count)].unicodeScalars, at: at)
        case 5:
            // Delete a run.
            let end = min(scalars.count, at + rng.below(8))
            scalars.removeSubrange(at..<end)
        case 6:
            // Nest: balanced (up to past the depth limit) or not.
            let depth = [1, 5, 100, 200, 201, 300][rng.below(6)]
            let open = ["(", "NOT ", "!", "{", "((", "NOT ("][rng.below(6)]
            let close = open.contains("(") ? String(repeating: ")", count: open.filter { $0 == "(" }.count) : open == "{" ? "}" : ""
            scalars = Array((String(repeating: open, count: depth) + String(String.UnicodeScalarView(scalars))
                + String(repeating: close, count: rng.below(2) == 0 ? depth : rng.below(depth + 1))).unicodeScalars)
        case 7:
            // Splice another corpus predicate.
            let other = Array(fuzzCorpus[rng.below(fuzzCorpus.count)].predicate.unicodeScalars)
            let from = rng.below(other.count + 1)
            scalars.insert(contentsOf: other[from...], at: at)
        default:
            // An odd number.
            let numbers = ["1e308", "-1e309", "0x8000000000000000", "-0x1", "18446744073709551616", "1.7976931348623157e308",
                           "4.9e-324", "-.0", "00", "1e-400", "123456789012345678901234567890"]
            scalars.insert(contentsOf: (" " + numbers[rng.below(numbers.count)] + " ").unicodeScalars, at: at)
        }
    }
    return String(String.UnicodeScalarView(scalars))
}

/// SplitMix64: deterministic, so a failing run reproduces from its seed.
struct FuzzRandom {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in 0..<n (0 when n is 0).
    mutating func below(_ n: Int) -> Int { n <= 0 ? 0 : Int(next() % UInt64(n)) }
}
