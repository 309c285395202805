import Foundation
import Lattice

/// Commits and edits between reads, as apps make them: one small commit at a time with observers
/// registered (a List observer on a long list, a Map and a MutableSet observer of 10,000 entries, a
/// thousand object observers), reads by position after each own commit, and a long List edited one
/// element at a time (`remove(at:)`, `swapAt`, `move`).
/// Each case's cost beside the same commits without observers shows what the observers add.
enum LiveEdits {
    static let commits = 300

    /// Fills a file with `people`, a team listing them all and a bag of 10,000 numbers and scores, times
    /// each case and prints them.
    /// Returns (name → seconds per pass, and nanoseconds per commit or edit).
    static func run(_ path: String, people: ArraySlice<Person>) throws -> [String: Double] {
        let lattice = try ReadPerson.file(path, holding: people, others: [EditBag.self])
        let all = lattice.objects(ReadPerson.self)
        let n = all.count
        let team = try lattice.write { () -> ReadTeam in
            let team = try lattice.create(ReadTeam.self, value: ["id": 1])
            team.members.append(objectsIn: all)
            return team
        }
        var out: [String: Double] = [:]
        var round = 0
        /// `commits` commits, each changing one person's score (and running `more`), each followed by refresh().
        func commitLoop(_ more: (Int) throws -> Void = { _ in }) throws {
            for i in 0..<commits {
                let person = all[(round * commits + i) % n]
                try lattice.write {
                    person.score += 1
                    try more(i)
                }
                lattice.refresh()
            }
            round += 1
        }
        print("\n== Live edits (\(n) objects, a List of all of them; \(commits) commits a pass, median of 3) ==")
        func measure(_ name: String, operations: Int = commits, unit: String = "commit", _ body: () throws -> Void) rethrows {
            record(name, seconds: try medianSeconds(passes: 3, body), operations: operations, key: unit, unit: unit, width: 52, into: &out)
        }
        try measure("commit + refresh, no observer") { try commitLoop() }
        var heard = 0
        let listToken = team.members.observe { _ in heard += 1 }
        try measure("commit + refresh, List observer (appends)") { try commitLoop { team.members.append(all[$0]) } }
        try measure("commit + refresh, List observer (values)") { try commitLoop() }
        listToken.invalidate()
        let bag = try lattice.write { () -> EditBag in
            let bag = try lattice.create(EditBag.self, value: ["id": 1])
            for i in 0..<10_000 {
                bag.scores["k\(i)"] = i
                bag.numbers.insert(i)
            }
            return bag
        }
        let mapToken = bag.scores.observe { _ in heard += 1 }
        try measure("commit + refresh, Map observer (10,000)") { try commitLoop { bag.scores["k\($0)"] = round * commits + $0 } }
        mapToken.invalidate()
        let setToken = bag.numbers.observe { _ in heard += 1 }
        try measure("commit + refresh, MutableSet observer (10,000)") { try commitLoop { bag.numbers.insert(-(round * commits + $0) - 1) } }
        setToken.invalidate()
        let tokens = (0..<1_000).map { all[$0 * (n / 1_000)].observe { _ in heard += 1 } }
        try measure("commit + refresh, 1,000 object observers") { try commitLoop() }
        tokens.forEach { $0.invalidate() }
        try measure("commit + refresh, then results[i] far from both ends") {
            try commitLoop { i in heard += Int(all[n / 2 + i].age) }
        }
        let edits = 1_000
        try measure("list.remove(at: 0), one write", operations: edits, unit: "edit") {
            try lattice.write { for _ in 0..<edits { team.members.remove(at: 0) } }
        }
        try measure("list.swapAt(i, j), one write", operations: edits, unit: "edit") {
            try lattice.write {
                let count = team.members.count
                for i in 0..<edits { team.members.swapAt(i, (count / 2 + i) % count) }
            }
        }
        try measure("list.move(from: i, to: j), one write", operations: edits, unit: "edit") {
            try lattice.write {
                let count = team.members.count
                for i in 0..<edits { team.members.move(from: i * 20 % count, to: (count / 2 + i * 10) % count) }
            }
        }
        precondition(heard > 0)
        return out
    }
}
