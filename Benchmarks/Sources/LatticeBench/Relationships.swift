import Foundation
import Lattice

/// Models of the relationship scenarios (extra scenarios; no peer engine runs them).
final class ListHolder: Object {
    @Persisted(primaryKey: true) var id: Int64
    @Persisted var items: List<Int>
}

final class Node: Object {
    @Persisted(primaryKey: true) var id: Int64
    @Persisted var parent: Node?
    @Persisted(originProperty: "parent") var children: LinkingObjects<Node>
}

enum RelationshipScenarios {
    private static func open(_ path: String, _ types: [Object.Type]) throws -> Lattice {
        try Lattice(configuration: Lattice.Configuration(fileURL: URL(fileURLWithPath: path), objectTypes: types))
    }

    /// A 100,000-entry `List<Int>`: 100,000 appends in one write, reading every entry by index, 1,000
    /// inserts in the middle in one write (per insert), removing one entry (its own durable write).
    static func list(_ path: String) throws -> [String: Double] {
        let lattice = try open(path, [ListHolder.self])
        let holder = ListHolder()
        holder.id = 1
        try lattice.write { try lattice.add(holder) }
        let count = 100_000
        let (tAppend, _) = try timed { try lattice.write { for i in 0..<count { holder.items.append(i) } } }
        let (tRead, sum) = timed { () -> Int in
            var sum = 0
            let items = holder.items
            for i in 0..<items.count { sum &+= items[i] }
            return sum
        }
        precondition(sum == count * (count - 1) / 2, "list checksum")
        // 1,000 inserts in the middle, in one write (no chunk is split into one array per entry).
        let (tInsert, _) = try timed { try lattice.write { for i in 0..<1_000 { holder.items.insert(-i, at: count / 3) } } }
        precondition(holder.items.count == count + 1_000 && holder.items[count / 3] == -999, "list after inserts")
        let (tRemove, _) = try timed { try lattice.write { _ = holder.items.remove(at: count / 2) } }
        precondition(holder.items.count == count + 999, "list after remove")
        return ["appendSeconds": tAppend, "indexedReadSeconds": tRead, "insertMiddleSeconds": tInsert / 1_000,
                "removeOneSeconds": tRemove, "entries": Double(count)]
    }

    /// Backlinks: a 1,000,000-object file where 10,000 objects link to one; counts its incoming links.
    static func backlinks(_ path: String) throws -> [String: Double] {
        let lattice = try open(path, [Node.self])
        let start = now()
        var id: Int64 = 0
        for chunk in 0..<10 {
            try lattice.write {
                let target = chunk == 0 ? nil : lattice.object(ofType: Node.self, forPrimaryKey: Int64(1))
                for _ in 0..<100_000 {
                    id += 1
                    let node = Node()
                    node.id = id
                    // Every 100th object links to object 1: 10,000 incoming links.
                    if id % 100 == 0 { node.parent = target ?? lattice.object(ofType: Node.self, forPrimaryKey: Int64(1)) }
                    try lattice.add(node)
                }
            }
        }
        let build = now() - start
        let reader = try open(path, [Node.self])
        let target = reader.object(ofType: Node.self, forPrimaryKey: Int64(1))!
        let (tFirst, n) = timed { target.children.count }
        let (tAgain, _) = timed { reader.object(ofType: Node.self, forPrimaryKey: Int64(1))!.children.count }
        precondition(n == 10_000, "backlink count \(n)")
        // The count alone, 1,000 times (a fresh `LinkingObjects` each time: nothing cached): median of 5.
        var times: [Double] = []
        for _ in 0..<5 {
            let (t, total) = timed { (0..<1_000).reduce(0) { sum, _ in sum + target.children.count } }
            precondition(total == 10_000_000, "backlink counts")
            times.append(t / 1_000)
        }
        return ["count": Double(n), "firstCountSeconds": tFirst, "countAgainSeconds": tAgain, "countSeconds": median(times),
                "buildSeconds": build]
    }
}
