import Foundation
import XCTest
@testable import Lattice
#if canImport(Glibc)
import Glibc
#endif

/// Query inputs that once stopped the process, and the semantics fixed with them: Lattice collections as
/// arguments, NaN and infinite Dates and Doubles (also against Decimals), deep nesting, NaN in indexes and
/// long `IN` lists.
///
/// Queries that crashed run in a `LatticeTestHelper query` child (Sources/LatticeTestHelper/QueryRobustness.swift,
/// with its own fixture of twelve `RPerson`s), so that a crash fails the test instead of ending the run.
final class QueryRobustnessTests: XCTestCase {
    private var database: TempDatabase!

    override func setUp() {
        super.setUp()
        database = makeTempDatabase("robustness")
    }

    // MARK: Child processes

    /// Runs `filter(predicate, arguments)` in a child on the fixture and returns its first line: `ok <ids>` or
    /// `invalidQuery <message>`. A predicate longer than a command-line argument may be goes through a file.
    private func query(_ predicate: String, _ arguments: String..., stackKB: Int? = nil,
                       file: StaticString = #filePath, line: UInt = #line) throws -> String {
        var text = predicate
        if predicate.utf8.count > 4096 {
            let url = URL(fileURLWithPath: database.path + "-predicate-\(UUID().uuidString)")
            try predicate.write(to: url, atomically: false, encoding: .utf8)
            addTeardownBlock { try? FileManager.default.removeItem(at: url) }
            text = "@" + url.path
        }
        let output = try runHelper(["query", database.path, text] + arguments,
                                   environment: stackKB.map { ["LATTICE_HELPER_STACK_KB": "\($0)"] } ?? [:], file: file, line: line)
        return output.first ?? ""
    }

    /// Runs LatticeTestHelper to its end and returns the lines it printed; fails the test when it exits
    /// with a signal or a non-zero status (it is killed after `timeout` seconds).
    private func runHelper(_ arguments: [String], environment: [String: String] = [:], timeout: TimeInterval = 300,
                           file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        let process = Process()
        process.executableURL = try helperExecutable()
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let pid = process.processIdentifier
        let watchdog = DispatchWorkItem { if pid > 0 { kill(pid, SIGKILL) } }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: watchdog)
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        watchdog.cancel()
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
        let name = "LatticeTestHelper \(arguments.first ?? "") \(arguments.dropFirst(2).first?.prefix(80) ?? "")"
        if process.terminationReason != .exit || process.terminationStatus != 0 {
            XCTFail("\(name) \(process.terminationReason == .exit ? "exited with status" : "was stopped by signal") "
                + "\(process.terminationStatus); output: \(lines)", file: file, line: line)
        }
        return lines
    }

    private func helperExecutable() throws -> URL {
        var directories = [Bundle(for: QueryRobustnessTests.self).bundleURL.deletingLastPathComponent(), Bundle.main.bundleURL]
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            directories.append(URL(fileURLWithPath: exe).deletingLastPathComponent())
        }
        let candidates = directories.map { $0.appendingPathComponent("LatticeTestHelper") }
        return try XCTUnwrap(candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) },
                             "LatticeTestHelper is not built; looked at \(candidates.map(\.path))")
    }

    // MARK: Lattice collections as arguments

    /// A List, MutableSet, Map, LinkingObjects or Results argument stands for its elements (a Map: its
    /// values), managed or not; objects compare by identity. Each of these overflowed the stack.
    func testLatticeCollectionsAsArgumentsAreTheirElements() throws {
        // Person 3's tags are Ann, bob and Cy; persons 0 and 5 are named Ann, 1 bob, 2 Cy.
        XCTAssertEqual(try query("name IN %@", "tags:3"), "ok 0,1,2,5")
        XCTAssertEqual(try query("name IN %@", "tags:3"), try query("name IN {'Ann', 'bob', 'Cy'}"))
        XCTAssertEqual(try query("ANY tags IN %@", "unmanaged-tags:Ann"), try query("ANY tags IN {'Ann'}"))
        XCTAssertEqual(try query("ANY tags IN %@", "unmanaged-tags:"), "ok ")
        // Person 4's numbers are 0, 4, 8, 12.
        XCTAssertEqual(try query("age IN %@", "numbers:4"), try query("age IN {0, 4, 8, 12}"))
        XCTAssertEqual(try query("age IN %@", "unmanaged-numbers:0,4"), try query("age IN {0, 4}"))
        // A Map stands for its values: person 3's are +inf and NaN (which equals nothing).
        XCTAssertEqual(try query("score IN %@", "scores:3"), "ok 5")
        XCTAssertEqual(try query("score IN %@", "unmanaged-scores:nan,inf,1"), try query("score IN {1}  OR score == %@", "double:inf"))
        // Objects by identity: Results, managed and unmanaged Lists, a LinkingObjects, a MutableSet, a Map.
        XCTAssertEqual(try query("owner IN %@", "results:age > 2"), try query("owner.age > 2"))
        XCTAssertEqual(try query("ANY friends IN %@", "friends:3"), try query("ANY friends IN %@", "array-person:3,8,1"))
        XCTAssertEqual(try query("ANY friends IN %@", "unmanaged-friends:3,8,1"), try query("ANY friends IN %@", "array-person:3,8,1"))
        XCTAssertEqual(try query("owner IN %@", "friend-of:4"), try query("ANY owner.friends == %@", "person:4"))
        XCTAssertEqual(try query("ANY pets IN %@", "pets:1"), try query("ANY pets.name == 'pet1'"))
        XCTAssertEqual(try query("ANY petsByName IN %@", "pets-by-name:5"), try query("ANY petsByName.name == 'pet5' OR ANY petsByName == nil"))
        XCTAssertNotEqual(try query("ANY friends IN %@", "friends:3"), "ok ")
        // An argument the predicate never uses, and collections that do not fit.
        XCTAssertEqual(try query("age > 1", "tags:3", "results:"), try query("age > 1"))
        XCTAssertEqual(try query("owner IN %@", "pet-results"),
                       "invalidQuery type mismatch: 'owner' (RPerson objects) cannot be compared with a RPet object (at column 1).")
        XCTAssertTrue(try query("age IN %@", "array-lists").hasPrefix(
            "invalidQuery argument 1: the elements of a list argument must be single values, not List<String> at column 8"))
        XCTAssertTrue(try query("%@ IN friends", "pets:1").hasPrefix("invalidQuery 'value IN key path' takes one value on the left"))
    }

    // MARK: NaN and infinite Dates, Doubles against Decimals

    /// A NaN Date as an argument: no match on an indexed or plain Date (NaN equals nothing), and error
    /// messages and plans that show it without trapping (Foundation traps printing a NaN Date).
    func testNaNDateArgumentsMatchNothingAndPrintSafely() throws {
        XCTAssertEqual(try query("when == %@", "date:nan"), "ok ")
        XCTAssertEqual(try query("plainWhen == %@", "date:nan"), "ok ")
        XCTAssertEqual(try query("when IN %@", "array-date:nan,0"), try query("when == %@", "date:0"))
        XCTAssertEqual(try query("when != %@", "date:nan"), try query("TRUEPREDICATE"))
        XCTAssertEqual(try query("when > %@ OR when <= %@", "date:nan", "date:-nan"), "ok ")
        XCTAssertEqual(try query("when BETWEEN {%@, %@} OR optWhen < %@", "date:-inf", "date:nan", "date:nan"), "ok ")
        XCTAssertEqual(try query("plainWhen >= %@ OR when IN %@", "date:nan", "array-date:nan"), "ok ")
        XCTAssertEqual(try query("owner == %@", "date:nan"), "invalidQuery type mismatch: 'owner' (RPerson objects) can only be compared "
            + "with RPerson objects or nil, not Date(timeIntervalSinceReferenceDate: nan) (Date) (at column 1).")
        XCTAssertEqual(try query("name == %@", "date:-inf"), "invalidQuery type mismatch: 'RPerson.name' is String and cannot be "
            + "compared with Date(timeIntervalSinceReferenceDate: -inf) (Date) (at column 1).")
        XCTAssertEqual(try query("name == %@", "date:0"), "invalidQuery type mismatch: 'RPerson.name' is String and cannot be "
            + "compared with 2001-01-01T00:00:00Z (Date) (at column 1).")
        let plan = try runHelper(["query", database.path, "plainWhen == %@ OR when < %@", "date:nan", "date:1e300"])
        XCTAssertEqual(plan.last, "plan RPerson: full scan (~12 rows) -> filter plainWhen == Date(timeIntervalSinceReferenceDate: nan) "
            + "OR when < Date(timeIntervalSinceReferenceDate: 1e+300)")
    }

    /// Non-finite Doubles against a Decimal property (once a trap in `Decimal(_:)`): NaN matches nothing
    /// but `!=`, +inf is above every Decimal and -inf below; so are Doubles beyond Decimal's range.
    func testNonFiniteDoublesAgainstDecimals() throws {
        let allButNaN = "ok 0,1,2,4,5,6,7,9,10,11"   // decimals 3 and 8 are NaN
        XCTAssertEqual(try query("dec == %@", "double:-inf"), "ok ")
        XCTAssertEqual(try query("dec == %@", "double:inf"), "ok ")
        XCTAssertEqual(try query("dec < %@", "double:inf"), allButNaN)
        XCTAssertEqual(try query("dec > %@", "double:-inf"), allButNaN)
        XCTAssertEqual(try query("dec > %@", "double:inf"), "ok ")
        XCTAssertEqual(try query("dec <= %@", "double:-inf"), "ok ")
        XCTAssertEqual(try query("dec < %@", "double:1e300"), allButNaN)
        XCTAssertEqual(try query("dec > %@", "double:-1e300"), allButNaN)
        XCTAssertEqual(try query("dec BETWEEN {%@, %@}", "double:-inf", "double:inf"), allButNaN)
        XCTAssertEqual(try query("dec >= %@", "double:nan"), "ok ")
        XCTAssertEqual(try query("dec == %@", "double:nan"), "ok ")
        XCTAssertEqual(try query("dec != %@", "double:nan"), try query("TRUEPREDICATE"))
        XCTAssertEqual(try query("dec IN %@", "array-double:nan,inf,-inf,1"), try query("dec == 1"))
        XCTAssertEqual(try query("optDec < %@", "double:inf"), "ok 2,3,4,7,8,9,11")
        XCTAssertEqual(try query("dec < %@", "double:5e-324"), try query("dec <= 0"))
        // Property against property: decimal i against score i (-1 < 2.5, 1e100 < inf, Decimal's largest < 1e300).
        XCTAssertEqual(try query("dec < score"), "ok 2,5,7")
        // Averages (some overflow to NaN) against infinities.
        let finiteAverages = try query("friends.@avg.dec < %@", "double:inf")
        XCTAssertEqual(finiteAverages, try query("friends.@avg.dec > %@", "double:-inf"))
        XCTAssertNotEqual(finiteAverages, "ok ")
        XCTAssertEqual(try query("friends.@avg.dec > %@", "double:inf"), "ok ")
    }

    // MARK: Nesting

    /// 100,000 `(`, `NOT`, `!`, `{` or `SUBQUERY`s overflowed the stack; past 200 levels the predicate is
    /// rejected, naming the column where it went too deep.
    func testDeepNestingIsRejectedAtItsColumn() throws {
        let deep = 100_000
        let message = "invalidQuery the predicate nests parentheses, NOT, lists and SUBQUERY more than 200 levels deep at column"
        XCTAssertTrue(try query(String(repeating: "(", count: deep) + "age > 1" + String(repeating: ")", count: deep))
            .hasPrefix("\(message) 201 of \"...((((("))
        XCTAssertTrue(try query(String(repeating: "NOT ", count: deep) + "age > 1").hasPrefix("\(message) 801 of \"...NOT NOT"))
        XCTAssertTrue(try query(String(repeating: "!", count: deep) + "age > 1").hasPrefix("\(message) 201 of"))
        XCTAssertTrue(try query("age IN " + String(repeating: "{", count: deep) + "1" + String(repeating: "}", count: deep))
            .hasPrefix("\(message) 208 of"))
        XCTAssertTrue(try query(nestedSubquery(201)).hasPrefix("\(message) "))
        XCTAssertTrue(try query(nestedSubquery(5_000)).hasPrefix("\(message) "))
        XCTAssertTrue(try query(String(repeating: "(", count: 201) + "age > 1" + String(repeating: ")", count: 201)).hasPrefix("\(message) 201 of"))
    }

    /// 200 levels parse, bind, plan and run; on a thread with a 4 MB stack even in a debug build.
    func testNestingUpToTheLimitRuns() throws {
        let plain = try query("age > 1")
        XCTAssertEqual(try query(String(repeating: "(", count: 200) + "age > 1" + String(repeating: ")", count: 200), stackKB: 4096), plain)
        XCTAssertEqual(try query(String(repeating: "NOT ", count: 200) + "age > 1", stackKB: 4096), plain)
        XCTAssertEqual(try query(String(repeating: "!(", count: 100) + "age > 1" + String(repeating: ")", count: 100), stackKB: 4096), plain)
        XCTAssertEqual(try query(String(repeating: "(age > 9 OR (age > 0 AND ", count: 100) + "age > 1" + String(repeating: "))", count: 100),
                             stackKB: 4096), plain)
        let lists = try query("age IN " + String(repeating: "{", count: 199) + "1" + String(repeating: "}", count: 199), stackKB: 4096)
        XCTAssertTrue(lists.hasPrefix("invalidQuery IN expects a list of values, found {{{{") && lists.hasSuffix("}}}} (at column 1)."), lists)
        // Persons 1 and 3 have person 1 among their friends, and person 1 is its own only friend.
        XCTAssertEqual(try query(nestedSubquery(200), stackKB: 4096), "ok 1,3")
    }

    /// `SUBQUERY(friends, $v0, $v0.id == 1 AND SUBQUERY($v0.friends, $v1, ...).@count > 0).@count > 0`, `depth` deep.
    private func nestedSubquery(_ depth: Int) -> String {
        var text = "$v\(depth - 1).id == 1"
        for k in stride(from: depth - 1, through: 0, by: -1) {
            let source = k == 0 ? "friends" : "$v\(k - 1).friends"
            text = "SUBQUERY(\(source), $v\(k), \(k == depth - 1 ? text : "$v\(k).id == 1 AND " + text)).@count > 0"
        }
        return text
    }

    // MARK: Fuzzing

    /// 100,000 mutated predicates with arguments of every type: every call returns results or throws a
    /// LatticeError; the child exits 0 and reports the count.
    func testFuzzedPredicatesNeverStopTheProcess() throws {
        let lines = try runHelper(["query-fuzz", database.path, "20240601", "100000"])
        let report = try XCTUnwrap(lines.last)
        XCTAssertTrue(report.hasPrefix("fuzzed 100000 ok "), report)
        // Enough of them are valid to reach planning and evaluation.
        let ok = Int(report.split(separator: " ")[3]) ?? 0
        XCTAssertGreaterThan(ok, 10_000, report)
    }
}

// MARK: - NaN in indexes (in process)

/// Dates with an index and without, optional and not, and Doubles and Floats (which cannot be indexed).
final class RNaNItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted(indexed: true) var when = Date(timeIntervalSinceReferenceDate: 0)
    @Persisted var plainWhen = Date(timeIntervalSinceReferenceDate: 0)
    @Persisted(indexed: true) var optWhen: Date?
    @Persisted var plainOptWhen: Date?
    @Persisted var score = 0.0
    @Persisted var ratio: Float = 0
    @Persisted(indexed: true) var rank = 0
    @Persisted var plainRank = 0
    @Persisted(indexed: true) var name = ""
    @Persisted var plainName = ""
}

final class QueryNaNIndexTests: XCTestCase {
    private var config: Lattice.Configuration!
    private var lattice: Lattice!

    /// NaN of both signs (quiet and signalling), infinities, zeros of both signs and ordinary values.
    static let values: [Double] = [.nan, -.nan, Double(bitPattern: 0x7FF0_0000_0000_0001), Double(bitPattern: 0xFFF0_0000_0000_0001),
                                   .infinity, -.infinity, 0, -0.0, 1, -1, 1e300, -1e300, .leastNonzeroMagnitude, 86_400]

    override func setUpWithError() throws {
        config = makeTempDatabase("nan").configuration([RNaNItem.self])
        let writer = try Lattice(configuration: config)
        try writer.write {
            for id in 0..<Self.values.count * 2 {
                let item = RNaNItem()
                item.id = id
                let v = Self.values[(id * 5) % Self.values.count]
                item.when = Date(timeIntervalSinceReferenceDate: v)
                item.plainWhen = item.when
                item.optWhen = id % 3 == 0 ? nil : item.when
                item.plainOptWhen = item.optWhen
                item.score = v
                item.ratio = Float(v)
                item.rank = id % 7
                item.plainRank = item.rank
                item.name = "n\(id % 9)"
                item.plainName = item.name
                try writer.add(item)
            }
        }
        // The queries read the file through a new handle.
        lattice = try Lattice(configuration: config)
    }

    override func tearDownWithError() throws {
        lattice = nil
    }

    private func ids(_ predicate: String, _ arguments: Any...) throws -> [Int] {
        try lattice.objects(RNaNItem.self).filter(predicate, argumentArray: arguments).map(\.id)
    }

    /// The ids whose value (nil: absent) satisfies `test`, as IEEE 754 comparisons decide.
    private func expected(_ value: (RNaNItem) -> Double?, _ test: (Double) -> Bool) -> [Int] {
        lattice.objects(RNaNItem.self).filter { value($0).map(test) ?? false }.map(\.id).sorted()
    }

    /// No comparison with NaN is true but `!=`; ranges on an indexed Date skip the NaN keys at both ends of
    /// the index; indexed and plain Dates, and Doubles and Floats, agree with IEEE 754. (NaN Date constants,
    /// which once stopped the process, are tested in a child by QueryRobustnessTests.)
    func testNaNIsUnorderedWithAndWithoutIndexes() throws {
        let comparisons: [(String, (Double, Double) -> Bool)] = [("<", (<)), ("<=", (<=)), (">", (>)), (">=", (>=)), ("==", (==)), ("!=", (!=))]
        for c in Self.values {
            let date = Date(timeIntervalSinceReferenceDate: c)
            for (op, test) in comparisons {
                let label = "\(op) \(c) (bits \(String(c.bitPattern, radix: 16)))"
                let dates = expected({ $0.when.timeIntervalSinceReferenceDate }) { test($0, c) }
                XCTAssertEqual(try ids("score \(op) %@", c), dates, "score \(label)")
                XCTAssertEqual(try ids("ratio \(op) %@", c), expected({ Double($0.ratio) }) { test($0, Double(Float(c))) }, "ratio \(label)")
                if c.isNaN { continue }
                XCTAssertEqual(try ids("when \(op) %@", date), dates, "indexed when \(label)")
                XCTAssertEqual(try lattice.objects(RNaNItem.self).filter("when \(op) %@", date).count, dates.count, "count of when \(label)")
                XCTAssertEqual(try ids("plainWhen \(op) %@", date), dates, "plainWhen \(label)")
                // nil satisfies only `!=` a value.
                let optional = expected({ $0.optWhen?.timeIntervalSinceReferenceDate }) { test($0, c) }
                    + (op == "!=" ? lattice.objects(RNaNItem.self).filter { $0.optWhen == nil }.map(\.id) : [])
                XCTAssertEqual(try ids("optWhen \(op) %@", date), optional.sorted(), "indexed optWhen \(label)")
                XCTAssertEqual(try ids("plainOptWhen \(op) %@", date), optional.sorted(), "plainOptWhen \(label)")
            }
            for d in Self.values where !c.isNaN && !d.isNaN {
                let bounds = [date, Date(timeIntervalSinceReferenceDate: d)]
                let between = expected({ $0.when.timeIntervalSinceReferenceDate }) { $0 >= c && $0 <= d }
                XCTAssertEqual(try ids("when BETWEEN %@", bounds), between, "when BETWEEN {\(c), \(d)}")
                XCTAssertEqual(try ids("when > %@ AND when <= %@", bounds[0], bounds[1]),
                               expected({ $0.when.timeIntervalSinceReferenceDate }) { $0 > c && $0 <= d }, "when in (\(c), \(d)]")
                XCTAssertEqual(try ids("plainWhen BETWEEN %@", bounds), between, "plainWhen BETWEEN {\(c), \(d)}")
                XCTAssertEqual(try ids("when IN %@", bounds), expected({ $0.when.timeIntervalSinceReferenceDate }) { $0 == c || $0 == d },
                               "when IN {\(c), \(d)}")
            }
        }
    }

    /// Sorting puts NaN first (after nil) ascending and last (before nil) descending, NaNs in object-key
    /// order, whether read from the index or sorted from the records.
    func testNaNSortsFirstWithAndWithoutIndexes() throws {
        func reference(_ value: (RNaNItem) -> Double?, ascending: Bool) -> [Int] {
            // Rank: nil, then NaN, then numbers; ties keep ids ascending.
            func rank(_ v: Double?) -> Int { v.map { $0.isNaN ? 1 : 2 } ?? 0 }
            return lattice.objects(RNaNItem.self).map { (id: $0.id, v: value($0)) }.sorted { a, b in
                let (ra, rb) = (rank(a.v), rank(b.v))
                if ra != rb { return ascending ? ra < rb : ra > rb }
                if ra == 2, let x = a.v, let y = b.v, x != y { return ascending ? x < y : x > y }
                return a.id < b.id
            }.map(\.id)
        }
        for ascending in [true, false] {
            let sorted = reference({ $0.when.timeIntervalSinceReferenceDate }, ascending: ascending)
            let walked = try lattice.objects(RNaNItem.self).sorted(byKeyPath: "when", ascending: ascending)
            XCTAssertTrue(walked.explain().contains("walk index"), walked.explain())
            XCTAssertEqual(walked.map(\.id), sorted, "when ascending: \(ascending)")
            XCTAssertEqual(try lattice.objects(RNaNItem.self).sorted(byKeyPath: "plainWhen", ascending: ascending).map(\.id), sorted)
            XCTAssertEqual(try lattice.objects(RNaNItem.self).sorted(byKeyPath: "score", ascending: ascending).map(\.id), sorted)
            XCTAssertEqual(try lattice.objects(RNaNItem.self).filter("id >= 0").sorted(byKeyPath: "when", ascending: ascending).map(\.id), sorted)
            let optional = reference({ $0.optWhen?.timeIntervalSinceReferenceDate }, ascending: ascending)
            XCTAssertEqual(try lattice.objects(RNaNItem.self).sorted(byKeyPath: "optWhen", ascending: ascending).map(\.id), optional)
            XCTAssertEqual(try lattice.objects(RNaNItem.self).sorted(byKeyPath: "plainOptWhen", ascending: ascending).map(\.id), optional)
        }
        let first = try XCTUnwrap(lattice.objects(RNaNItem.self).sorted(byKeyPath: "when").first)
        XCTAssertTrue(first.when.timeIntervalSinceReferenceDate.isNaN)
    }

    // MARK: Long IN lists

    /// `IN` with 100,000 values (each twice): the index seek takes each key once, the filter hashes; the
    /// results are exact on a primary key, an index, a plain property and Strings. (Once quadratic.)
    func testLongInListsMatchExactly() throws {
        let numbers = (0..<100_000).map { 3 + $0 / 2 }   // 3 ... 50_002, each twice
        let all = lattice.objects(RNaNItem.self)
        let ranked = all.filter { $0.rank >= 3 }.map(\.id)
        XCTAssertEqual(try ids("rank IN %@", numbers), ranked)
        XCTAssertEqual(try lattice.objects(RNaNItem.self).filter("rank IN %@", numbers).count, ranked.count)
        // Shorter lists for the other paths (each call converts and binds every value again).
        let some = Array(numbers.prefix(20_000))
        XCTAssertEqual(try ids("id IN %@", some), all.map(\.id).filter { $0 >= 3 })
        XCTAssertEqual(try ids("plainRank IN %@", some), ranked)
        XCTAssertEqual(try ids("plainRank IN %@", some.map(Double.init) + [.nan, 4.5]), ranked)
        let names = some.map { "n\($0)" }
        XCTAssertEqual(try ids("name IN %@", names), all.filter { $0.name >= "n3" }.map(\.id))
        XCTAssertEqual(try ids("plainName IN %@", names), all.filter { $0.name >= "n3" }.map(\.id))
        let plan = try lattice.objects(RNaNItem.self).filter("rank IN %@", numbers).explain()
        XCTAssertTrue(plan.hasPrefix("RNaNItem: index seek RNaNItem.rank IN {3, 3, 4, 4, 5, 5, "), plan)
        XCTAssertTrue(plan.contains(", ... (100000 values)}"), plan)
    }
}
