import Foundation
import Lattice

/// The workload's model one schema version later: the same class name with one property added.
enum MigratedModel {
    final class PersonObject: Object {
        @Persisted(primaryKey: true) var id: Int64
        @Persisted var name: String
        @Persisted var email: String
        @Persisted(indexed: true) var age: Int
        @Persisted var score: Double
        @Persisted var created: Date
        @Persisted var nickname: String?
    }

    /// Opens the file at `path` (written by the workload's model at schema version 0) with the added
    /// property at schema version 1, which migrates it; returns the seconds `Lattice(configuration:)`
    /// took and checks that every object is still there and reads the new property's default.
    static func addProperty(_ path: String, expectedCount: Int) throws -> Double {
        var configuration = Lattice.Configuration(fileURL: URL(fileURLWithPath: path), objectTypes: [PersonObject.self])
        configuration.schemaVersion = 1
        let start = now()
        let lattice = try Lattice(configuration: configuration)
        let seconds = now() - start
        let all = lattice.objects(PersonObject.self)
        guard all.count == expectedCount, all.first?.nickname == nil else {
            throw NSError(domain: "lattice-bench", code: 1,
                          userInfo: [NSLocalizedDescriptionKey: "the migrated file does not hold what was written"])
        }
        return seconds
    }
}
