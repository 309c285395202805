import Foundation
import Lattice

/// One object holding a List, a MutableSet and a Map of values, and a List of people.
final class EditBag: Object {
    @Persisted(primaryKey: true) var id: Int64
    @Persisted var ints: List<Int>
    @Persisted var people: List<ReadPerson>
    @Persisted var numbers: MutableSet<Int>
    @Persisted var scores: Map<String, Int>
}

/// Edits and searches of collections as users write them, each through the owner's property (a new
/// collection instance every time, as `bag.ints.insert(…)` is): per operation, so that a cost growing
/// with the collection's size shows.
enum CollectionEdits {
    /// Fills a file with `n` of the workload's people and one bag, times each case (median of 3) on
    /// collections of `n` entries and prints the table. Returns (case → seconds per pass, and ns per op).
    static func run(_ path: String, people: ArraySlice<Person>) throws -> [String: Double] {
        let lattice = try Lattice(configuration: Lattice.Configuration(fileURL: URL(fileURLWithPath: path),
                                                                      objectTypes: [ReadPerson.self, ReadTeam.self, EditBag.self]))
        let n = people.count
        let bag = EditBag()
        bag.id = 1
        try lattice.write {
            for p in people {
                let o = ReadPerson.copy(of: p)
                try lattice.add(o)
            }
            try lattice.add(bag)
        }
        let all = lattice.objects(ReadPerson.self)
        let sorted = try all.sorted(byKeyPath: "score")
        let middle = all[n / 2]
        let cases: [(String, Int, () throws -> Void)] = [
            ("List<Int>: append", n, { try lattice.write { bag.ints.removeAll(); for i in 0..<n { bag.ints.append(i) } } }),
            ("List<Int>: insert at the front", n, { try lattice.write { bag.ints.removeAll(); for i in 0..<n { bag.ints.insert(i, at: 0) } } }),
            ("List<Int>: insert in the middle", n, { try lattice.write { bag.ints.removeAll(); for i in 0..<n { bag.ints.insert(i, at: i / 2) } } }),
            ("List<Int>: move(from:to:)", n, { try lattice.write { for i in 0..<n { bag.ints.move(from: i, to: n - 1 - i) } } }),
            ("List<Int>: remove(at: 0)", n, { try lattice.write { for _ in 0..<n { bag.ints.remove(at: 0) }; bag.ints.append(contentsOf: 0..<n) } }),
            ("List<Int>: for … in", n, { var s = 0; for v in bag.ints { s &+= v }; precondition(s >= 0) }),
            ("List<Int>: contains (last)", n, { precondition(bag.ints.contains(bag.ints[n - 1])) }),
            ("MutableSet<Int>: insert", n, { try lattice.write { bag.numbers.removeAll(); for i in 0..<n { bag.numbers.insert(i) } } }),
            ("MutableSet<Int>: insert, then count", n, { try lattice.write { bag.numbers.removeAll(); for i in 0..<n { bag.numbers.insert(i); precondition(bag.numbers.count == i + 1) } } }),
            ("MutableSet<Int>: index loop set[i]", n, { var s = 0; for i in 0..<bag.numbers.count { s &+= bag.numbers[i] }; precondition(s >= 0) }),
            ("Map<String, Int>: set", n, { try lattice.write { bag.scores.removeAll(); for i in 0..<n { bag.scores["k\(i)"] = i } } }),
            ("Map<String, Int>: set, then count", n, { try lattice.write { bag.scores.removeAll(); for i in 0..<n { bag.scores["k\(i)"] = i; precondition(bag.scores.count == i + 1) } } }),
            ("Map<String, Int>: index loop map[i]", n, { var s = 0; for i in 0..<bag.scores.count { s &+= bag.scores[i].value }; precondition(s >= 0) }),
            ("Results, new each time: [0]", 1, { precondition(lattice.objects(ReadPerson.self)[0].id == 1) }),
            ("Results, new each time: prefix(10)", 1, { precondition(lattice.objects(ReadPerson.self).prefix(10).map(\.id).count == 10) }),
            ("Results: contains (an object)", 1, { precondition(all.contains(middle)) }),
            ("Results, sorted: firstIndex(of:)", 1, { precondition(sorted.firstIndex(of: middle) != nil) }),
            ("List<ReadPerson>: contains (last)", 1, { precondition(bag.people.contains(middle)) }),
        ]
        try lattice.write { bag.people.append(objectsIn: all.prefix(n / 2)); bag.people.append(middle) }
        var out: [String: Double] = [:]
        print("\n== Collection edits (\(n) entries, each change through the owner's property; median of 3) ==")
        for (name, ops, body) in cases {
            record(name, seconds: try medianSeconds(passes: 3) { _ = try body() }, operations: ops, width: 38, into: &out)
        }
        // Deleting the members of one long list: together (`delete(_:)` of the Results), and one by one.
        let team = ReadTeam()
        team.id = 1
        try lattice.write { try lattice.add(team, update: .modified) }
        let members = try all.filter("id >= %lld", Int64(1_000_000))
        for (name, together) in [("List<ReadPerson>: delete together", true), ("List<ReadPerson>: delete one by one", false)] {
            var times: [Double] = []
            for _ in 0..<3 {
                try lattice.write {
                    for i in 0..<n {
                        let o = ReadPerson()
                        o.id = Int64(1_000_000 + i)
                        team.members.append(o)
                    }
                }
                times.append(try timed {
                    try lattice.write {
                        if together { try lattice.delete(members) } else { for o in Array(members) { try lattice.delete(o) } }
                    }
                }.0)
            }
            record(name, seconds: median(times), operations: n, width: 38, into: &out)
        }
        return out
    }
}
