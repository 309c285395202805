import Foundation
import Lattice

/// Query shapes whose cost depends on how they are planned rather than on reading objects: extremes
/// and sorted ends of an indexed property (one end of the index), index candidates checked by another
/// term, and multi-key sorts, each beside the same question asked of an unindexed property (which
/// reads every object).
enum QueryShapes {
    /// Fills a file with `people` as `ReadPerson`, times each query (median of 7 passes) and prints them.
    /// Returns (name → seconds per pass, and nanoseconds per object of the class).
    static func run(_ path: String, people: ArraySlice<Person>) throws -> [String: Double] {
        let lattice = try ReadPerson.file(path, holding: people)
        let all = lattice.objects(ReadPerson.self)
        let n = all.count
        // (name, the pass: returns a checksum)
        let cases: [(String, () throws -> Double)] = [
            ("max(ofProperty: \"age\"), indexed", { Double(try all.max(ofProperty: "age") as Int? ?? 0) }),
            ("max(ofProperty: \"id\"), primary key", { Double(try all.max(ofProperty: "id") as Int64? ?? 0) }),
            ("max(ofProperty: \"score\"), not indexed", { try all.max(ofProperty: "score") as Double? ?? 0 }),
            ("sorted(byKeyPath: \"age\", ascending: false).first", { try all.sorted(byKeyPath: "age", ascending: false).first!.score }),
            ("sorted(byKeyPath: \"score\", ascending: false).first", { try all.sorted(byKeyPath: "score", ascending: false).first!.score }),
            ("filter(\"score > 0.5\").count, full scan", { Double(try all.filter("score > 0.5").count) }),
            ("filter(\"age >= 1 AND score > 0.5\").count", { Double(try all.filter("age >= 1 AND score > 0.5").count) }),
            ("filter(\"age >= 20 AND age < 30 AND score > 0.5\").count", { Double(try all.filter("age >= 20 AND age < 30 AND score > 0.5").count) }),
            ("sorted(by: [age, score]), every object read", {
                try all.sorted(by: [SortDescriptor(keyPath: "age"), SortDescriptor(keyPath: "score")]).reduce(0) { $0 + $1.score }
            }),
        ]
        var out: [String: Double] = [:]
        print("\n== Query shapes (\(n) objects; median of 7 passes; ns per object of the class) ==")
        for (name, body) in cases {
            record(name, seconds: try medianSeconds(passes: 7) { _ = try body() }, operations: n, key: "object", unit: "object",
                   width: 56, into: &out)
        }
        return out
    }
}
