import Foundation
import Lattice

/// Models of the read-paths scenario: the workload's person, on a team (a to-one link) and listed by it.
final class ReadPerson: Object {
    @Persisted(primaryKey: true) var id: Int64
    @Persisted var name: String
    @Persisted var email: String
    @Persisted(indexed: true) var age: Int
    @Persisted var score: Double
    @Persisted var created: Date
    @Persisted var team: ReadTeam?
    override class var reusesInstancesWhileIterating: Bool { true }
}

final class ReadTeam: Object {
    @Persisted(primaryKey: true) var id: Int64
    @Persisted var members: List<ReadPerson>
    @Persisted(originProperty: "team") var players: LinkingObjects<ReadPerson>
}

extension ReadPerson {
    /// An unmanaged object holding the workload's person `p`.
    static func copy(of p: Person) -> ReadPerson {
        let o = ReadPerson()
        o.id = p.id; o.name = p.name; o.email = p.email; o.age = p.age; o.score = p.score; o.created = p.created
        return o
    }

    /// A new file at `path` of the read-paths models (and `others`), holding `people` (added in one write).
    static func file(_ path: String, holding people: ArraySlice<Person>, others: [Object.Type] = []) throws -> Lattice {
        let lattice = try Lattice(configuration: Lattice.Configuration(fileURL: URL(fileURLWithPath: path),
                                                                      objectTypes: [ReadPerson.self, ReadTeam.self] + others))
        try lattice.write { for p in people { try lattice.add(copy(of: p)) } }
        return lattice
    }
}

/// What the paths call, so that a generic harness reaches each collection's own `map`, `first`, `last`,
/// `reversed()` and `last(where:)` (as a user's code calling them on the concrete type does) and not the
/// `Collection` extensions' versions.
protocol ReadableObjects: RandomAccessCollection where Element == ReadPerson, Index == Int {
    associatedtype Backwards: Sequence where Backwards.Element == ReadPerson
    func map<T>(_ transform: (ReadPerson) throws -> T) rethrows -> [T]
    var first: ReadPerson? { get }
    var last: ReadPerson? { get }
    func reversed() -> Backwards
    func last(where predicate: (ReadPerson) throws -> Bool) rethrows -> ReadPerson?
}

// `reversed()` as a call on the concrete type resolves it (Swift prefers the type's own method).
extension Results: ReadableObjects where Element == ReadPerson {
    typealias Backwards = ReversedLatticeCollection<Results<ReadPerson>>
}
extension List: ReadableObjects where Element == ReadPerson {
    typealias Backwards = ReversedCollection<List<ReadPerson>>
}
extension LinkingObjects: ReadableObjects where Element == ReadPerson {
    typealias Backwards = ReversedLatticeCollection<LinkingObjects<ReadPerson>>
}

extension Person {
    @inline(__always)
    init(_ o: ReadPerson) {
        self.init(id: o.id, name: o.name, email: o.email, age: o.age, score: o.score, created: o.created)
    }
}

/// Every idiomatic way to read a collection's objects into structs, timed against the fastest of them
/// over the same objects (`Benchmarks/README.md`, "Read paths").
enum ReadPathScenario {
    /// One measured path: its name and the work, which returns a checksum of what it read.
    struct Path {
        let name: String
        /// Whether the path reads every object of the collection (the others are compared with their own reference).
        let full: Bool
        let run: () -> Double
    }

    /// One row of the table: path × collection.
    struct Row: Codable {
        let collection: String
        let path: String
        let seconds: Double
        let reference: Double
        var ratio: Double { seconds / reference }
        var met: Bool { ratio <= ReadPathScenario.bound }
    }

    static let bound = 1.2

    /// Fills a file with `n` of the workload's people; every 5th is a member of team 1's list, every 5th
    /// (offset by 2) plays for team 2 (a link, so team 2's `players` are linking objects).
    static func build(_ path: String, people: ArraySlice<Person>) throws -> Lattice {
        let lattice = try Lattice(configuration: Lattice.Configuration(fileURL: URL(fileURLWithPath: path),
                                                                      objectTypes: [ReadPerson.self, ReadTeam.self]))
        try lattice.write {
            let listed = ReadTeam()
            listed.id = 1
            let linked = ReadTeam()
            linked.id = 2
            try lattice.add(listed)
            try lattice.add(linked)
            for p in people {
                let o = ReadPerson.copy(of: p)
                if p.id % 5 == 2 { o.team = linked }
                try lattice.add(o)
                if p.id % 5 == 0 { listed.members.append(o) }
            }
        }
        return lattice
    }

    /// The paths over one collection.
    static func paths<C: ReadableObjects>(_ c: C, sortedReference: @escaping () -> [ReadPerson]) -> [Path] {
        func sum(_ people: [Person]) -> Double { people.reduce(0) { $0 + $1.score } }
        let half = c.count / 2
        return [
            Path(name: "for … in", full: true) {
                var out: [Person] = []
                out.reserveCapacity(c.count)
                for o in c { out.append(Person(o)) }
                return sum(out)
            },
            Path(name: "map", full: true) { sum(c.map(Person.init)) },
            Path(name: "compactMap", full: true) { sum(c.compactMap { $0.age >= 0 ? Person($0) : nil }) },
            Path(name: "Array(_:) then map", full: true) { sum(Array(c).map(Person.init)) },
            Path(name: "index loop c[i]", full: true) {
                var out: [Person] = []
                let n = c.count
                out.reserveCapacity(n)
                for i in 0..<n { out.append(Person(c[i])) }
                return sum(out)
            },
            Path(name: "reduce(into:)", full: true) { sum(c.reduce(into: [Person]()) { $0.append(Person($1)) }) },
            Path(name: "forEach", full: true) {
                var out: [Person] = []
                c.forEach { out.append(Person($0)) }
                return sum(out)
            },
            Path(name: "contains(where:)", full: true) {
                var out: [Person] = []
                _ = c.contains { out.append(Person($0)); return false }
                return sum(out)
            },
            Path(name: "lazy.map", full: true) { sum(Array(c.lazy.map(Person.init))) },
            Path(name: "reversed() loop", full: true) {
                var out: [Person] = []
                out.reserveCapacity(c.count)
                // Named by type: in generic code Swift would pick the standard library's `reversed()`
                // over the requirement (a call on the concrete type picks the type's own).
                for o in c.reversed() as C.Backwards { out.append(Person(o)) }
                return sum(out)
            },
            Path(name: "last(where:)", full: true) {
                var out: [Person] = []
                _ = c.last { out.append(Person($0)); return false }
                return sum(out)
            },
            Path(name: "filter { }.map", full: true) { sum(c.filter { $0.age >= 0 }.map(Person.init)) },
            Path(name: "indices.map", full: true) { sum(c.indices.map { Person(c[$0]) }) },
            // Against a for-in loop over the same first half.
            Path(name: "prefix(n/2).map", full: false) { sum(c.prefix(half).map(Person.init)) },
            Path(name: "(ref) for … in, first half", full: false) {
                var out: [Person] = []
                for o in c {
                    if out.count == half { break }
                    out.append(Person(o))
                }
                return sum(out)
            },
            // Against reading the same objects in the same order sorted by the engine.
            Path(name: "sorted { score < }", full: false) { sum(c.sorted { $0.score < $1.score }.map(Person.init)) },
            Path(name: "(ref) sorted(byKeyPath:)", full: false) { sum(sortedReference().map(Person.init)) },
            // Against a lookup by primary key of the same object (added by `run`).
            Path(name: "first", full: false) { c.first.map { Person($0).score } ?? 0 },
            Path(name: "last", full: false) { c.last.map { Person($0).score } ?? 0 },
        ]
    }

    /// Runs every path over every collection; returns the rows. `only` (a path's name) and `collection` (a
    /// collection's name) restrict the run to the paths and collections named, for profiles.
    static func run(_ path: String, people: ArraySlice<Person>, reps: Int = 11, only: String? = nil,
                    collection: String? = nil) throws -> [Row] {
        let lattice = try build(path, people: people)
        let all = lattice.objects(ReadPerson.self)
        let filtered = try all.filter("age >= 20 AND age < 30")
        let sorted = try all.sorted(byKeyPath: "name")
        guard let listed = lattice.object(ofType: ReadTeam.self, forPrimaryKey: Int64(1)),
              let linked = lattice.object(ofType: ReadTeam.self, forPrimaryKey: Int64(2)) else { return [] }
        var rows: [Row] = []
        func measure<C: ReadableObjects>(_ name: String, _ c: C, sortedBy: @escaping () -> [ReadPerson], firstLast: (Int64, Int64)) {
            if let collection, collection != name { return }
            let label = "\(name) (\(c.count))"
            var paths = paths(c, sortedReference: sortedBy)
            // Against a lookup by primary key of the same object.
            for (name, id) in [("(ref) first by id", firstLast.0), ("(ref) last by id", firstLast.1)] {
                paths.append(Path(name: name, full: false) { Person(lattice.object(ofType: ReadPerson.self, forPrimaryKey: id)!).score })
            }
            if let only { paths.removeAll { $0.name != only } }
            // Rounds over every path in turn, so that the machine's load changes them alike; medians.
            var samples: [String: [Double]] = [:]
            for round in 0...reps {
                for p in paths {
                    // Single reads (first, last and their references): 1,000 of them.
                    let single = !p.full && (p.name.contains("first") && !p.name.contains("half") || p.name.contains("last"))
                    let (t, _) = timed { single ? (0..<1_000).reduce(0) { s, _ in s + p.run() } : p.run() }
                    if round > 0 { samples[p.name, default: []].append(t) }  // round 0 warms up
                }
            }
            let times = samples.mapValues(median)
            let fastest = paths.filter(\.full).compactMap { times[$0.name] }.min() ?? .nan
            for p in paths where !p.name.hasPrefix("(ref)") {
                let reference: Double?
                switch p.name {
                case "prefix(n/2).map": reference = times["(ref) for … in, first half"]
                case "sorted { score < }": reference = times["(ref) sorted(byKeyPath:)"]
                case "first": reference = times["(ref) first by id"]
                case "last": reference = times["(ref) last by id"]
                default: reference = fastest
                }
                rows.append(Row(collection: label, path: p.name, seconds: times[p.name] ?? .nan, reference: reference ?? .nan))
            }
        }
        func ends(_ c: some RandomAccessCollection<ReadPerson>) -> (Int64, Int64) { (c.first!.id, c.last!.id) }
        // The engine's sort (a failure would leave the reference empty and the checksums apart).
        func byScore(_ results: () throws -> Results<ReadPerson>) -> [ReadPerson] { (try? Array(results())) ?? [] }
        measure("Results, all", all, sortedBy: { byScore { try all.sorted(byKeyPath: "score") } }, firstLast: ends(all))
        measure("Results, filtered", filtered, sortedBy: { byScore { try filtered.sorted(byKeyPath: "score") } },
                firstLast: ends(filtered))
        measure("Results, sorted", sorted, sortedBy: { byScore { try sorted.sorted(byKeyPath: "score") } }, firstLast: ends(sorted))
        measure("List", listed.members, sortedBy: { byScore { try listed.members.sorted(byKeyPath: "score") } },
                firstLast: ends(listed.members))
        measure("LinkingObjects", linked.players, sortedBy: { byScore { try linked.players.sorted(byKeyPath: "score") } },
                firstLast: ends(linked.players))
        return rows
    }

    /// The table: one line per path, one column per collection (ms, ratio, met/MISSED).
    static func printTable(_ rows: [Row]) {
        var collections: [String] = []
        for r in rows where !collections.contains(r.collection) { collections.append(r.collection) }
        var paths: [String] = []
        for r in rows where !paths.contains(r.path) { paths.append(r.path) }
        print("\n== Read paths (median ms; ratio to the fastest way to read the same objects; target <= \(bound)x) ==")
        let width = 26
        print("path".padding(toLength: 20, withPad: " ", startingAt: 0)
              + collections.map { " | " + $0.padding(toLength: width, withPad: " ", startingAt: 0) }.joined())
        for p in paths {
            var line = p.padding(toLength: 20, withPad: " ", startingAt: 0)
            for c in collections {
                let cell = rows.first { $0.collection == c && $0.path == p }.map {
                    String(format: "%8.3f %5.2fx %@", $0.seconds * 1000, $0.ratio, $0.met ? "met" : "MISSED")
                } ?? "-"
                line += " | " + cell.padding(toLength: width, withPad: " ", startingAt: 0)
            }
            print(line)
        }
        let met = rows.filter(\.met).count
        print("read paths within \(bound)x of the fastest: \(met) of \(rows.count)")
    }
}
