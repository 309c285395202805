import Foundation
import Lattice

/// Models of the relationship-reads scenario: owners with a short list of dogs, each dog linking back
/// to its owner (a to-one link) and listed by it (linking objects).
final class NestOwner: Object {
    @Persisted(primaryKey: true) var id: Int64
    @Persisted var age: Int
    @Persisted var dogs: List<NestDog>
    override class var reusesInstancesWhileIterating: Bool { true }
}

final class NestDog: Object {
    @Persisted(primaryKey: true) var id: Int64
    @Persisted var age: Int
    @Persisted var owner: NestOwner?
    @Persisted(originProperty: "dogs") var walkers: LinkingObjects<NestOwner>
    override class var reusesInstancesWhileIterating: Bool { true }
}

/// Reads that cross relationships, as loops over many owners write them: a loop over each owner's list,
/// `count` and `first` of each list, a to-one link and the linking objects of each dog. The cost per
/// collection or link matters here, not the cost per object of one long loop.
enum RelationshipReads {
    static let dogsPerOwner = 3

    /// Fills a file with `owners` owners of three dogs each, then times each read (median of 7 passes)
    /// and prints them. Returns (name → seconds per pass, and nanoseconds per operation).
    static func run(_ path: String, owners: Int) throws -> [String: Double] {
        let lattice = try Lattice(configuration: Lattice.Configuration(fileURL: URL(fileURLWithPath: path),
                                                                      objectTypes: [NestOwner.self, NestDog.self]))
        try lattice.write {
            var dogID: Int64 = 0
            for i in 0..<owners {
                let owner = NestOwner()
                owner.id = Int64(i)
                owner.age = i % 90
                try lattice.add(owner)
                for _ in 0..<dogsPerOwner {
                    dogID += 1
                    let dog = NestDog()
                    dog.id = dogID
                    dog.age = Int(dogID % 15)
                    dog.owner = owner
                    owner.dogs.append(dog)
                }
            }
        }
        let all = lattice.objects(NestOwner.self)
        let dogs = lattice.objects(NestDog.self)
        let dogCount = owners * dogsPerOwner
        // (name, operations per pass, the pass: returns a checksum)
        let cases: [(String, Int, () -> Int)] = [
            ("all dogs, for … in (one loop)", dogCount, { var s = 0; for d in dogs { s += d.age }; return s }),
            ("each owner's dogs, for … in", owners, { var s = 0; for o in all { for d in o.dogs { s += d.age } }; return s }),
            ("each owner's dogs, map", owners, { all.map { $0.dogs.map(\.age).reduce(0, +) }.reduce(0, +) }),
            ("each owner's dogs.count", owners, { var s = 0; for o in all { s += o.dogs.count }; return s }),
            ("each owner's dogs.first", owners, { var s = 0; for o in all { s += o.dogs.first?.age ?? 0 }; return s }),
            ("each dog's owner (to-one link)", dogCount, { var s = 0; for d in dogs { s += d.owner?.age ?? 0 }; return s }),
            ("each dog's walkers.count", dogCount, { var s = 0; for d in dogs { s += d.walkers.count }; return s }),
            ("each dog's walkers.first", dogCount, { var s = 0; for d in dogs { s += d.walkers.first?.age ?? 0 }; return s }),
        ]
        var out: [String: Double] = [:]
        print("\n== Relationship reads (\(owners) owners of \(dogsPerOwner) dogs; median of 7 passes) ==")
        for (name, operations, body) in cases {
            record(name, seconds: medianSeconds(passes: 7) { _ = body() }, operations: operations,
                   unit: operations == owners ? "owner" : "dog", width: 34, into: &out)
        }
        return out
    }
}
