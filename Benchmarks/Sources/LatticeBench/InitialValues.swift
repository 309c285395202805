import Foundation
import Lattice

/// The workload's person as models are usually declared: initial values for every property, a
/// `UUID()` primary key. On Linux Foundation's `UUID()` opens, reads and closes `/dev/urandom`
/// (a few microseconds), so an instance that ran it for every object read would cost far more than the read.
final class KeyedPerson: Object {
    @Persisted(primaryKey: true) var id = UUID()
    @Persisted var name = ""
    @Persisted var email = ""
    @Persisted(indexed: true) var age = 0
    @Persisted var score = 0.0
    @Persisted var created = Date()
    override class var reusesInstancesWhileIterating: Bool { true }  // as `ReadPerson` (and generated models)
}

/// Reads of objects whose model declares initial values (`KeyedPerson`) against the same reads of the
/// read-paths model, which declares none (`ReadPerson`): `map` into structs over every object, and
/// lookups by primary key. The two should cost the same. Also the lookup many programs write instead
/// of `object(ofType:forPrimaryKey:)`: `filter("id == %@", key).first`.
enum InitialValueReads {
    /// Fills a file with `people` as `KeyedPerson` and `ReadPerson`, times each read (median of 7
    /// passes) and prints them. Returns (name → seconds per pass, and nanoseconds per object).
    static func run(_ path: String, people: ArraySlice<Person>) throws -> [String: Double] {
        let lattice = try Lattice(configuration: Lattice.Configuration(fileURL: URL(fileURLWithPath: path),
                                                                      objectTypes: [KeyedPerson.self, ReadPerson.self, ReadTeam.self]))
        var keys: [UUID] = []
        try lattice.write {
            for p in people {
                let k = KeyedPerson()
                k.name = p.name; k.email = p.email; k.age = p.age; k.score = p.score; k.created = p.created
                keys.append(k.id)
                try lattice.add(k)
                let r = ReadPerson.copy(of: p)
                try lattice.add(r)
            }
        }
        let keyed = lattice.objects(KeyedPerson.self)
        let plain = lattice.objects(ReadPerson.self)
        let lookups = Array(keys.prefix(10_000))
        let ids = people.prefix(10_000).map(\.id)
        func person(_ o: KeyedPerson) -> Person {
            Person(id: 0, name: o.name, email: o.email, age: o.age, score: o.score, created: o.created)
        }
        // (name, objects per pass, the pass: returns a checksum)
        let cases: [(String, Int, () -> Double)] = [
            ("map, initial values", keyed.count, { keyed.map(person).reduce(0) { $0 + $1.score } }),
            ("map, no initial values", plain.count, { plain.map(Person.init).reduce(0) { $0 + $1.score } }),
            ("by primary key, initial values (UUID)", lookups.count, {
                lookups.reduce(0) { $0 + person(lattice.object(ofType: KeyedPerson.self, forPrimaryKey: $1)!).score }
            }),
            ("by primary key, no initial values (Int64)", ids.count, {
                ids.reduce(0) { $0 + Person(lattice.object(ofType: ReadPerson.self, forPrimaryKey: $1)!).score }
            }),
            // The lookup many programs write instead: a query, its first object.
            ("by query, filter(\"id == %@\").first (UUID)", lookups.count, {
                lookups.reduce(0) { $0 + person((try? keyed.filter("id == %@", $1))!.first!).score }
            }),
            ("by query, filter(\"id == %@\").first (Int64)", ids.count, {
                ids.reduce(0) { $0 + Person((try? plain.filter("id == %@", $1))!.first!).score }
            }),
        ]
        var out: [String: Double] = [:]
        print("\n== Initial values (\(people.count) objects; median of 7 passes) ==")
        for (name, objects, body) in cases {
            record(name, seconds: medianSeconds(passes: 7) { _ = body() }, operations: objects, key: "object", unit: "object",
                   width: 44, into: &out)
        }
        return out
    }
}
