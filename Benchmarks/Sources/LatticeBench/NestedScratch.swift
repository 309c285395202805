import Foundation
import Lattice

final class NPerson: Object {
    @Persisted(primaryKey: true) var id: Int64
    @Persisted var age: Int
    @Persisted var dogs: List<NDog>
    override class var reusesInstancesWhileIterating: Bool { true }
}

final class NDog: Object {
    @Persisted(primaryKey: true) var id: Int64
    @Persisted var age: Int
    @Persisted var owner: NPerson?
    @Persisted(originProperty: "dogs") var walkers: LinkingObjects<NPerson>
    override class var reusesInstancesWhileIterating: Bool { true }
}

enum NestedScratch {
    static func run(_ path: String, n: Int) throws {
        let lattice = try Lattice(configuration: Lattice.Configuration(fileURL: URL(fileURLWithPath: path), objectTypes: [NPerson.self, NDog.self]))
        try lattice.write {
            var dogID: Int64 = 0
            for i in 0..<n {
                let p = NPerson(); p.id = Int64(i); p.age = i % 90
                try lattice.add(p)
                for _ in 0..<3 {
                    dogID += 1
                    let d = NDog(); d.id = dogID; d.age = Int(dogID % 15); d.owner = p
                    try lattice.add(d)
                    p.dogs.append(d)
                }
            }
        }
        let persons = lattice.objects(NPerson.self)
        let dogs = lattice.objects(NDog.self)
        let cases: [(String, () -> Int)] = [
            ("flat dogs for-in", { var s = 0; for d in dogs { s += d.age }; return s }),
            ("persons for-in", { var s = 0; for p in persons { s += p.age }; return s }),
            ("nested for-in", { var s = 0; for p in persons { for d in p.dogs { s += d.age } }; return s }),
            ("nested dogs.count", { var s = 0; for p in persons { s += p.dogs.count }; return s }),
            ("nested dogs.first", { var s = 0; for p in persons { s += p.dogs.first?.age ?? 0 }; return s }),
            ("nested map", { persons.map { $0.dogs.map(\.age).reduce(0, +) }.reduce(0, +) }),
            ("to-one owner", { var s = 0; for d in dogs { s += d.owner?.age ?? 0 }; return s }),
            ("backlink count", { var s = 0; for d in dogs { s += d.walkers.count }; return s }),
            ("backlink first", { var s = 0; for d in dogs { s += d.walkers.first?.age ?? 0 }; return s }),
        ]
        let only = ProcessInfo.processInfo.environment["ONLY"]
        for (name, body) in cases where only == nil || name == only {
            var times: [Double] = []
            var check = 0
            for _ in 0..<7 {
                let t0 = DispatchTime.now().uptimeNanoseconds
                check = body()
                times.append(Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6)
            }
            times.sort()
            print(name.padding(toLength: 20, withPad: " ", startingAt: 0), String(format: "%8.3f ms", times[3]), check)
        }
    }
}
