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
}
