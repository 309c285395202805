import Foundation

/// The workload's data, generated before any timing starts (see Benchmarks/WORKLOAD.md).

/// splitmix64, exactly as WORKLOAD.md specifies (wrapping arithmetic).
struct SplitMix64 {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The plain struct every engine decodes into.
struct Person: Sendable {
    var id: Int64
    var name: String
    var email: String
    var age: Int
    var score: Double
    /// Seconds since 1970.
    var created: Date
}

/// Everything a round needs, generated once.
struct WorkloadData: Sendable {
    let n: Int
    /// Objects 1…N+3000: the first N are the main data set, the rest feed insert-small (3 × 1000).
    let people: [Person]
    let lookupIDs: [Int64]
    let updateIDs: [Int64]
    let deleteIDs: [Int64]

    static let smallCount = 1000

    init(n: Int) {
        self.n = n
        var rng = SplitMix64(state: 42)
        var people: [Person] = []
        people.reserveCapacity(n + 3 * Self.smallCount)
        for id in 1...(n + 3 * Self.smallCount) { people.append(Self.makePerson(id: Int64(id), &rng)) }
        self.people = people
        var lookup = SplitMix64(state: 7)
        lookupIDs = (0..<100_000).map { _ in Int64(1 + lookup.next() % UInt64(n)) }
        updateIDs = (0..<10_000).map { Int64(1 + ($0 * 7919) % n) }
        deleteIDs = (0..<10_000).map { Int64(1 + ($0 * 9973) % n) }
    }

    /// One object, drawing from `rng` in WORKLOAD.md's order.
    static func makePerson(id: Int64, _ rng: inout SplitMix64) -> Person {
        var name: [UInt8] = [UInt8(ascii: "A") + UInt8(rng.next() % 26)]
        for _ in 1...11 { name.append(UInt8(ascii: "a") + UInt8(rng.next() % 26)) }
        var email: [UInt8] = []
        for _ in 0..<12 { email.append(UInt8(ascii: "a") + UInt8(rng.next() % 26)) }
        email.append(contentsOf: Array("@example.com".utf8))
        let age = Int(rng.next() % 100)
        let score = Double(rng.next() >> 11) * 0x1p-53 * 1000
        let created = 1.6e9 + Double(rng.next() % 100_000_000_000) / 1000
        return Person(id: id, name: String(decoding: name, as: UTF8.self), email: String(decoding: email, as: UTF8.self),
                      age: age, score: score, created: Date(timeIntervalSince1970: created))
    }

    var main: ArraySlice<Person> { people[0..<n] }
    /// The objects of insert-small variant `v` (0, 1, 2).
    func small(_ v: Int) -> ArraySlice<Person> { people[(n + v * Self.smallCount)..<(n + (v + 1) * Self.smallCount)] }
}

/// Round checksums; every engine must produce exactly WORKLOAD.md's string.
struct Checksums {
    var getSum = 0          // sum(age + name[0])
    var scanN = 0
    var scanSum = 0.0
    var qidxN = 0
    var qidxSum = 0.0
    var qrangeCount = 0
    var qrangeN = 0
    var qrangeSum = 0.0
    var finalCount = 0

    var text: String {
        "get.sum(age+name[0])=\(getSum) scan.n=\(scanN) scan.sum(score)=\(String(format: "%.6f", scanSum)) "
            + "qidx.n=\(qidxN) qidx.sum(score)=\(String(format: "%.6f", qidxSum)) qrange.count=\(qrangeCount) "
            + "qrange.n=\(qrangeN) qrange.sum(score)=\(String(format: "%.6f", qrangeSum)) final.count=\(finalCount)"
    }

    /// WORKLOAD.md's checksums for N = 100,000.
    static let expected = "get.sum(age+name[0])=12711390 scan.n=100000 scan.sum(score)=49927459.670191 "
        + "qidx.n=1025 qidx.sum(score)=502931.318215 qrange.count=9974 qrange.n=9974 "
        + "qrange.sum(score)=4999529.664179 final.count=93000"
}

/// Monotonic seconds.
@inline(__always)
func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

/// Runs `body` and returns its duration in seconds and its value.
@inline(__always)
func timed<R>(_ body: () throws -> R) rethrows -> (Double, R) {
    let start = now()
    let r = try body()
    return (now() - start, r)
}

/// The median of `passes` runs of `body`, in seconds.
func medianSeconds(passes: Int, _ body: () throws -> Void) rethrows -> Double {
    var times: [Double] = []
    for _ in 0..<passes { times.append(try timed(body).0) }
    return median(times)
}

/// Keeps one case of a scenario's table in `out` (seconds per pass under `name`, nanoseconds per
/// operation under "`name` (ns per `key`)") and prints it: `name` in `width` columns, then the figures
/// (`unit` names what one operation is).
func record(_ name: String, seconds: Double, operations: Int, key: String = "op", unit: String = "op", width: Int,
            into out: inout [String: Double]) {
    let ns = seconds / Double(operations) * 1e9
    out[name] = seconds
    out[name + " (ns per \(key))"] = ns
    print(name.padding(toLength: width, withPad: " ", startingAt: 0) + String(format: "%10.3f ms %10.0f ns per %@", seconds * 1000, ns, unit))
}

/// Step identifiers, in report order, with the number of operations (for µs/op).
enum Step: String, CaseIterable, Codable {
    case insert = "1 insert"
    case insertAppend = "1b insert (MDB_APPEND)"
    case insertSmall = "2 insert-small (default sync)"
    case insertSmallB = "2b insert-small (weaker sync)"
    case insertSmallC = "2c insert-small (no sync)"
    case insertSmallFull = "2-full insert-small (GRDB synchronous=FULL)"
    case get = "3 get-by-id"
    case getCached = "3b get-by-id (cached statement)"
    case scan = "4 scan-all"
    case queryIndexed = "5 query-indexed"
    case queryRange = "6 query-range"
    case update = "7 update"
    case updateCached = "7b update (cached UPDATE)"
    case delete = "8 delete"

    func ops(n: Int) -> Int {
        switch self {
        case .insert, .insertAppend, .scan: return n
        case .insertSmall, .insertSmallB, .insertSmallC, .insertSmallFull: return WorkloadData.smallCount
        case .get, .getCached: return 100_000
        case .queryIndexed: return 100
        case .queryRange: return 10
        case .update, .updateCached, .delete: return 10_000
        }
    }
}

/// One engine variant's measurements over the rounds.
final class Series {
    let name: String
    var times: [Step: [Double]] = [:]
    var fileSizes: [String: [Int]] = [:]
    var peakRSSKB: [Int] = []
    var checksums: [String] = []
    var notes: [Step: String] = [:]

    init(name: String) { self.name = name }

    func record(_ step: Step, _ seconds: Double) { times[step, default: []].append(seconds) }
    func recordSize(_ what: String, _ bytes: Int) { fileSizes[what, default: []].append(bytes) }
}

func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    if s.isEmpty { return .nan }
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

func fileSize(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
}

/// Peak resident set size since the last reset (VmHWM), in KiB.
func peakRSSKB() -> Int { procStatus("VmHWM") }
/// Current resident set size (VmRSS), in KiB.
func currentRSSKB() -> Int { procStatus("VmRSS") }

/// Resident anonymous memory (heap, stacks) and file-backed memory (mapped database pages), in KiB.
func rssSplitKB() -> (anon: Int, file: Int) { (procStatus("RssAnon"), procStatus("RssFile")) }

private func procStatus(_ field: String) -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? 0
    }
    return 0
}

/// Resets VmHWM to the current RSS (Linux `clear_refs` 5), so a peak can be attributed to one engine.
func resetPeakRSS() {
    if let fd = fopen("/proc/self/clear_refs", "w") {
        fputs("5", fd)
        fclose(fd)
    }
}
