import Foundation
import Lattice

/// The workload's model, as WORKLOAD.md's Lattice section declares it.
final class PersonObject: Object {
    @Persisted(primaryKey: true) var id: Int64
    @Persisted var name: String
    @Persisted var email: String
    @Persisted(indexed: true) var age: Int
    @Persisted var score: Double
    @Persisted var created: Date
    // No initializer or deinitializer of its own: loops may reuse instances (as generated models do).
    override class var reusesInstancesWhileIterating: Bool { true }
}

extension Person {
    /// "Decoded into the struct": every property read, so a lazy accessor cannot skip work.
    @inline(__always)
    init(_ o: PersonObject) {
        self.init(id: o.id, name: o.name, email: o.email, age: o.age, score: o.score, created: o.created)
    }
}

/// The workload's queries, through the query engine's public API.
enum LatticeQueries {
    /// `age == 42`.
    static func ageIs42(_ lattice: Lattice) throws -> Results<PersonObject> {
        try lattice.objects(PersonObject.self).filter("age == 42")
    }

    /// `age >= 20 AND age < 30`.
    static func ageInTwenties(_ lattice: Lattice) throws -> Results<PersonObject> {
        try lattice.objects(PersonObject.self).filter("age >= 20 AND age < 30")
    }
}

/// Lattice through its public API only.
final class LatticeEngine {
    let path: String
    var lattice: Lattice?

    /// With `encryptionKey` the file is encrypted (the `lattice-encrypted` engine).
    init(path: String, encryptionKey: Data? = nil) throws {
        self.path = path
        lattice = try Lattice(configuration: Self.configuration(path, encryptionKey: encryptionKey))
    }

    static func configuration(_ path: String, encryptionKey: Data? = nil) -> Lattice.Configuration {
        Lattice.Configuration(fileURL: URL(fileURLWithPath: path), objectTypes: [PersonObject.self], encryptionKey: encryptionKey)
    }

    /// The fixed 64-byte key of the `lattice-encrypted` engine.
    static let benchmarkKey = Data((0..<64).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) })

    /// Closes the handle (its environment closes with the last handle).
    func close() { lattice = nil }

    private var db: Lattice { lattice! }

    @inline(__always)
    private static func object(_ p: Person) -> PersonObject {
        let o = PersonObject()
        o.id = p.id
        o.name = p.name
        o.email = p.email
        o.age = p.age
        o.score = p.score
        o.created = p.created
        return o
    }

    @inline(never)  // a separate symbol per step for profiles
    func insert(_ people: ArraySlice<Person>) throws {
        let db = self.db
        try db.write { for p in people { try db.add(Self.object(p)) } }
    }

    @inline(never)  // a separate symbol per step for profiles
    func insertSmall(_ people: ArraySlice<Person>) throws {
        let db = self.db
        for p in people { try db.write { try db.add(Self.object(p)) } }
    }

    @inline(never)  // a separate symbol per step for profiles
    func getByID(_ ids: [Int64]) -> Int {
        let db = self.db
        db.refresh()
        var sum = 0
        for id in ids {
            let p = Person(db.object(ofType: PersonObject.self, forPrimaryKey: id)!)
            sum += p.age + Int(p.name.utf8.first!)
        }
        return sum
    }

    @inline(never)  // a separate symbol per step for profiles
    func scanAll() -> (Int, Double) {
        let db = self.db
        db.refresh()
        let results = db.objects(PersonObject.self)
        var all: [Person] = []
        all.reserveCapacity(results.count)
        for o in results { all.append(Person(o)) }
        return (all.count, all.reduce(0) { $0 + $1.score })
    }

    @inline(never)  // a separate symbol per step for profiles
    func queryIndexed() throws -> (Int, Double) {
        let db = self.db
        db.refresh()
        var found: [Person] = []
        for o in try LatticeQueries.ageIs42(db) { found.append(Person(o)) }
        return (found.count, found.reduce(0) { $0 + $1.score })
    }

    @inline(never)  // a separate symbol per step for profiles
    func queryRange() throws -> (Int, Int, Double) {
        let db = self.db
        db.refresh()
        let matches = try LatticeQueries.ageInTwenties(db)
        let count = matches.count
        var found: [Person] = []
        found.reserveCapacity(count)
        for o in matches { found.append(Person(o)) }
        return (count, found.count, found.reduce(0) { $0 + $1.score })
    }

    /// Object API: read, modify, write.
    @inline(never)  // a separate symbol per step for profiles
    func update(_ ids: [Int64]) throws {
        let db = self.db
        try db.write {
            for id in ids { db.object(ofType: PersonObject.self, forPrimaryKey: id)!.score += 1.0 }
        }
    }

    @inline(never)  // a separate symbol per step for profiles
    func delete(_ ids: [Int64]) throws {
        let db = self.db
        try db.write {
            for id in ids { try db.delete(db.object(ofType: PersonObject.self, forPrimaryKey: id)!) }
        }
    }

    func count() -> Int {
        db.refresh()
        return db.objects(PersonObject.self).count
    }
}
