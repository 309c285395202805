import Foundation
import GRDB
import Lattice

/// Scenarios reported beside the workload. Memory and cold-start figures come from child processes so
/// they are attributable (a fresh process: no warm caches, no other engine's memory).
enum Extras {
    static func selfExecutable() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// Runs this executable with `arguments` and parses the `key=value` pairs of its last output line.
    static func child(_ arguments: [String]) throws -> [String: Double] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: selfExecutable())
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw NSError(domain: "lattice-bench", code: Int(process.terminationStatus),
                          userInfo: [NSLocalizedDescriptionKey: "child \(arguments) failed"])
        }
        let last = String(decoding: output, as: UTF8.self).split(separator: "\n").last ?? ""
        var values: [String: Double] = [:]
        for pair in last.split(separator: " ") {
            let kv = pair.split(separator: "=")
            if kv.count == 2, let v = Double(kv[1]) { values[String(kv[0])] = v }
        }
        return values
    }

    /// Builds a 1,000,000-object Lattice file (10 transactions of 100,000) with the workload's generator.
    static func buildMillion(_ path: String) throws -> Double {
        let start = now()
        let lattice = try Lattice(configuration: LatticeEngine.configuration(path))
        var rng = SplitMix64(state: 42)
        var id: Int64 = 0
        for _ in 0..<10 {
            try lattice.write {
                for _ in 0..<100_000 {
                    id += 1
                    let p = WorkloadData.makePerson(id: id, &rng)
                    let o = PersonObject()
                    o.id = p.id; o.name = p.name; o.email = p.email; o.age = p.age; o.score = p.score; o.created = p.created
                    try lattice.add(o)
                }
            }
        }
        return now() - start
    }

    /// Child: iterate every object reading one property; prints RSS before/peak and the time.
    static func iterateChild(_ path: String) throws {
        let lattice = try Lattice(configuration: LatticeEngine.configuration(path))
        let before = currentRSSKB()
        resetPeakRSS()
        let start = now()
        var sum = 0
        var n = 0
        for o in lattice.objects(PersonObject.self) {
            sum &+= o.age
            n += 1
        }
        let seconds = now() - start
        let split = rssSplitKB()
        print("n=\(n) sum=\(sum) seconds=\(seconds) rssBeforeKB=\(before) peakKB=\(peakRSSKB()) fileBytes=\(fileSize(path)) "
              + "anonKBAtEnd=\(split.anon) fileKBAtEnd=\(split.file)")
    }

    /// Child: open a file and run the first read and the first query (`age == 42`, decoded).
    static func coldChild(engine: String, path: String, id: Int64) throws {
        let t0 = now()
        var tOpen = 0.0, tRead = 0.0, tQuery = 0.0
        var n = 0
        switch engine {
        case "lattice":
            let lattice = try Lattice(configuration: LatticeEngine.configuration(path))
            tOpen = now() - t0
            let p = Person(lattice.object(ofType: PersonObject.self, forPrimaryKey: id)!)
            precondition(p.id == id)
            tRead = now() - t0
            var found: [Person] = []
            for o in try LatticeQueries.ageIs42(lattice) { found.append(Person(o)) }
            n = found.count
            tQuery = now() - t0
        case "lmdb":
            let db = RawLMDB(dir: path)
            tOpen = now() - t0
            _ = db.firstRead(id)
            tRead = now() - t0
            n = db.queryIndexed().0
            tQuery = now() - t0
            db.close()
        default:
            let g = try GRDBEngine<ManualPerson>(openingExisting: path)
            tOpen = now() - t0
            _ = try g.getByID([id])
            tRead = now() - t0
            n = try g.queryIndexed().0
            tQuery = now() - t0
        }
        print("n=\(n) open=\(tOpen) firstRead=\(tRead) firstQuery=\(tQuery)")
    }

    /// Builds a file of more than 1 GB: 1,000,000 objects of about 1 KB (10 transactions of 100,000).
    static func buildGigabyte(_ path: String) throws -> Double {
        let start = now()
        let lattice = try Lattice(configuration: Lattice.Configuration(fileURL: URL(fileURLWithPath: path), objectTypes: [BulkyPerson.self]))
        var rng = SplitMix64(state: 42)
        var id: Int64 = 0
        let blob = Data((0..<1_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        for _ in 0..<10 {
            try lattice.write {
                for _ in 0..<100_000 {
                    id += 1
                    let p = WorkloadData.makePerson(id: id, &rng)
                    let o = BulkyPerson()
                    o.id = p.id; o.name = p.name; o.age = p.age; o.score = p.score; o.blob = blob
                    try lattice.add(o)
                }
            }
        }
        return now() - start
    }

    /// Child: opens the 1 GB file and runs the first indexed query, `age == 42`: its count and its first
    /// object read into a struct (then, reported apart, every match read).
    static func coldGigabyteChild(_ path: String) throws {
        let t0 = now()
        let lattice = try Lattice(configuration: Lattice.Configuration(fileURL: URL(fileURLWithPath: path), objectTypes: [BulkyPerson.self]))
        let tOpen = now() - t0
        let matches = try lattice.objects(BulkyPerson.self).filter("age == 42")
        let n = matches.count
        let first = matches.first.map { ($0.id, $0.name, $0.age, $0.score, $0.blob.count) }
        precondition(first?.2 == 42, "first match")
        let tQuery = now() - t0
        var sum = 0.0
        for o in matches { sum += o.score }
        let tAll = now() - t0
        print("n=\(n) open=\(tOpen) firstQuery=\(tQuery) allMatches=\(tAll) fileBytes=\(fileSize(path)) sum=\(sum)")
    }
}

/// The 1 GB cold-start scenario's model: the workload's person with 1,000 bytes of data.
final class BulkyPerson: Object {
    @Persisted(primaryKey: true) var id: Int64
    @Persisted var name: String
    @Persisted(indexed: true) var age: Int
    @Persisted var score: Double
    @Persisted var blob: Data
}
