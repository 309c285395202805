import Foundation
import Lattice

/// Ways users change every object of a collection inside one write transaction, each timed against the
/// fastest of them: loops over `Results` (whole class, filtered, sorted) by iteration and by position,
/// a loop of lookups by primary key, and `setValue(_:forKey:)`; and a loop changing an indexed property.
enum WritePathScenario {
    /// Fills a file with `n` of the workload's people, then adds 1 to every score each way, and 1 to
    /// every age (modulo 100) once (median of 3 passes), and prints the table. Returns (path → seconds per pass, and nanoseconds per object).
    static func run(_ path: String, people: ArraySlice<Person>) throws -> [String: Double] {
        let lattice = try ReadPerson.file(path, holding: people)
        let n = people.count
        let all = lattice.objects(ReadPerson.self)
        let filtered = try all.filter("age >= 0")     // every object, through the query engine
        let sorted = try all.sorted(byKeyPath: "name")
        let cases: [(String, () throws -> Void)] = [
            ("lookup by primary key", { try lattice.write { for p in people { lattice.object(ofType: ReadPerson.self, forPrimaryKey: p.id)?.score += 1 } } }),
            ("for … in", { try lattice.write { for o in all { o.score += 1 } } }),
            ("for … in, indexed age", { try lattice.write { for o in all { o.age = (o.age + 1) % 100 } } }),
            ("forEach", { try lattice.write { all.forEach { $0.score += 1 } } }),
            ("index loop results[i]", { try lattice.write { for i in 0..<all.count { all[i].score += 1 } } }),
            ("filtered, for … in", { try lattice.write { for o in filtered { o.score += 1 } } }),
            ("filtered, index loop", { try lattice.write { for i in 0..<filtered.count { filtered[i].score += 1 } } }),
            ("sorted, index loop", { try lattice.write { for i in 0..<sorted.count { sorted[i].score += 1 } } }),
            ("setValue(_:forKey:)", { try lattice.write { try all.setValue(1.0, forKey: "score") } }),
        ]
        var out: [String: Double] = [:]
        print("\n== Write paths (\(n) objects, each changed once in one write; median of 3; ratio to the fastest) ==")
        var medians: [(String, Double)] = []
        for (name, body) in cases {
            var times: [Double] = []
            for _ in 0..<3 { times.append(try timed { try body() }.0) }
            medians.append((name, times.sorted()[1]))
        }
        let fastest = medians.map(\.1).min() ?? .nan
        for (name, median) in medians {
            out[name] = median
            out[name + " (ns per object)"] = median / Double(n) * 1e9
            print(name.padding(toLength: 24, withPad: " ", startingAt: 0)
                  + String(format: "%9.2f ms  %6.0f ns per object  %5.2fx", median * 1000, median / Double(n) * 1e9, median / fastest))
        }
        return out
    }
}
