import Foundation

/// A step's statistics for one engine variant.
struct StepStats: Codable {
    let engine: String
    let step: String
    let medianSeconds: Double
    let minSeconds: Double
    let maxSeconds: Double
    let microsecondsPerOp: Double
    let rounds: [Double]
    let note: String?
}

/// Figures of the extra scenarios that targets judge, and the start's medians to compare with.
struct ExtraFigures {
    var iterateRSSMB: Double?
    var coldGigabyteSeconds: Double?
    var listAppendMicroseconds: Double?
    var backlinkCountMicroseconds: Double?
    var readPaths: [ReadPathScenario.Row] = []
    /// Lattice's median per step (by `Step` raw value) in the run given with `--baseline`.
    var baseline: [String: Double]?
}

/// One target and whether this run met it.
struct TargetResult: Codable {
    let target: String
    let value: Double
    let threshold: String
    let met: Bool
    let note: String?
}

struct ExtraResult: Codable {
    let scenario: String
    let values: [String: Double]
    let note: String?
}

struct Output: Codable {
    let date: String
    let n: Int
    let rounds: Int
    let checksums: [String: String]
    let checksumsVerified: Bool
    let steps: [StepStats]
    let summary: [[String: String]]
    let targets: [TargetResult]
    let fileSizesBytes: [String: [String: Int]]
    let peakRSSKB: [String: Int]
    let processPeakRSSKB: Int
    let extras: [ExtraResult]
    let readPaths: [ReadPathScenario.Row]?
    let pending: [String]
}

struct Report {
    let n: Int
    let series: [Series]
    let lmdb: Series?
    let grdb: [Series]
    let lattice: Series?

    func stats(_ s: Series, _ step: Step) -> StepStats? {
        guard let xs = s.times[step], !xs.isEmpty else { return nil }
        let m = median(xs)
        return StepStats(engine: s.name, step: step.rawValue, medianSeconds: m, minSeconds: xs.min()!, maxSeconds: xs.max()!,
                         microsecondsPerOp: m * 1e6 / Double(step.ops(n: n)), rounds: xs, note: s.notes[step])
    }

    func allStats() -> [StepStats] {
        var out: [StepStats] = []
        for step in Step.allCases { for s in series { if let st = stats(s, step) { out.append(st) } } }
        return out
    }

    /// GRDB's fastest variant for `steps` (the first that has a time wins per variant): (seconds, label).
    func grdbFastest(_ steps: [Step]) -> (Double, String)? {
        var best: (Double, String)?
        for s in grdb {
            for step in steps {
                guard let xs = s.times[step] else { continue }
                let m = median(xs)
                if best == nil || m < best!.0 { best = (m, "\(s.name) \(step.rawValue.split(separator: " ").first!)") }
            }
        }
        return best
    }

    func med(_ s: Series?, _ step: Step) -> Double? { s?.times[step].map(median) }

    /// Comparable steps: Lattice step, LMDB step, GRDB steps that may stand in, LMDB bound, GRDB factor.
    var comparisons: [(name: String, step: Step, grdb: [Step], lmdbBound: Double, grdbFactor: Double)] {
        [("insert", .insert, [.insert], 1.3, 3),
         ("get-by-id", .get, [.get, .getCached], 1.3, 3),
         ("scan-all", .scan, [.scan], 2.5, 3),
         ("query-indexed", .queryIndexed, [.queryIndexed], 1.3, 3),
         ("query-range", .queryRange, [.queryRange], 2, 3),
         ("update", .update, [.update, .updateCached], 1.3, 2),
         ("delete", .delete, [.delete], 1.3, 2)]
    }

    func summaryAndTargets(_ extra: ExtraFigures) -> ([[String: String]], [TargetResult]) {
        let iterateRSSMB = extra.iterateRSSMB
        var rows: [[String: String]] = []
        var targets: [TargetResult] = []
        func f(_ x: Double?) -> String { x.map { String(format: "%.4f", $0) } ?? "-" }
        func r(_ x: Double?) -> String { x.map { String(format: "%.2fx", $0) } ?? "-" }
        for c in comparisons {
            let l = med(lattice, c.step)
            let raw = med(lmdb, c.step)
            let g = grdbFastest(c.grdb)
            let lr = (l != nil && raw != nil) ? l! / raw! : nil
            let gr = (l != nil && g != nil) ? g!.0 / l! : nil
            let pending = lattice?.notes[c.step]
            rows.append(["step": c.name, "lmdb": f(raw), "grdbFastest": f(g?.0), "grdbVariant": g?.1 ?? "-", "lattice": f(l),
                         "lattice/lmdb": r(lr), "grdb/lattice": r(gr), "note": pending ?? ""])
            if let lr {
                targets.append(TargetResult(target: "\(c.name): Lattice/LMDB", value: lr, threshold: "<= \(c.lmdbBound)x",
                                            met: lr <= c.lmdbBound, note: pending))
            }
            if let gr {
                targets.append(TargetResult(target: "\(c.name): GRDB fastest/Lattice", value: gr, threshold: ">= \(c.grdbFactor)x",
                                            met: gr >= c.grdbFactor, note: pending))
            }
        }
        // Durable insert-small: Lattice 2 vs LMDB 2 (both fsync every commit) and vs GRDB synchronous=FULL.
        let l2 = med(lattice, .insertSmall)
        let raw2 = med(lmdb, .insertSmall)
        let gFull = grdbFastest([.insertSmallFull])
        let gAny = grdbFastest([.insertSmall, .insertSmallFull, .insertSmallC])
        rows.append(["step": "insert-small (durable)", "lmdb": f(raw2), "grdbFastest": f(gFull?.0), "grdbVariant": gFull?.1 ?? "-",
                     "lattice": f(l2), "lattice/lmdb": r(l2.flatMap { a in raw2.map { a / $0 } }),
                     "grdb/lattice": r(l2.flatMap { a in gFull.map { $0.0 / a } }),
                     "note": "GRDB's fastest non-durable: \(f(gAny?.0)) (\(gAny?.1 ?? "-"))"])
        if let l2, let raw2 {
            targets.append(TargetResult(target: "insert-small durable: Lattice/LMDB", value: l2 / raw2, threshold: "<= 1.1x",
                                        met: l2 / raw2 <= 1.1, note: nil))
            if let gFull {
                let ok = l2 < gFull.0 || l2 / raw2 <= 1.1
                targets.append(TargetResult(target: "insert-small durable: faster than GRDB synchronous=FULL or within 1.1x of LMDB",
                                            value: gFull.0 / l2, threshold: "GRDB-FULL/Lattice > 1 or Lattice/LMDB <= 1.1",
                                            met: ok, note: nil))
            }
        }
        let lSize = lattice?.fileSizes["after step 1"].map { Double($0.max()!) }
        let gSize = grdb.compactMap { $0.fileSizes["after step 1"].map { Double($0.max()!) } }.min()
        if let lSize, let gSize {
            targets.append(TargetResult(target: "file size after step 1: Lattice/GRDB", value: lSize / gSize, threshold: "<= 1.0",
                                        met: lSize <= gSize, note: String(format: "Lattice %.2f MB, GRDB %.2f MB", lSize / 1e6, gSize / 1e6)))
        }
        if let iterateRSSMB {
            targets.append(TargetResult(target: "iterate 1,000,000 objects, one property: peak RSS (MB)", value: iterateRSSMB,
                                        threshold: "< 100", met: iterateRSSMB < 100, note: "child process VmHWM"))
        }
        if let us = extra.backlinkCountMicroseconds {
            targets.append(TargetResult(target: "backlink count of 10,000 links (µs)", value: us, threshold: "< 10",
                                        met: us < 10, note: "LinkingObjects.count in a 1,000,000-object file"))
        }
        if let us = extra.listAppendMicroseconds {
            targets.append(TargetResult(target: "List append to 100,000 entries (µs per append)", value: us, threshold: "< 2",
                                        met: us < 2, note: "one at a time, in one write"))
        }
        if let seconds = extra.coldGigabyteSeconds {
            targets.append(TargetResult(target: "cold start, 1 GB file: open + first indexed query (ms)", value: seconds * 1000,
                                        threshold: "< 10", met: seconds < 0.010, note: "fresh process"))
        }
        if !extra.readPaths.isEmpty {
            let met = extra.readPaths.filter(\.met).count
            let worst = extra.readPaths.max { $0.ratio < $1.ratio }!
            targets.append(TargetResult(target: "read paths within \(ReadPathScenario.bound)x of the fastest (paths met)", value: Double(met),
                                        threshold: "= \(extra.readPaths.count)", met: met == extra.readPaths.count,
                                        note: String(format: "worst: %@ over %@, %.2fx (table above)", worst.path, worst.collection, worst.ratio)))
        }
        if let baseline = extra.baseline, let lattice {
            for step in Step.allCases {
                guard let now = med(lattice, step), let before = baseline[step.rawValue] else { continue }
                targets.append(TargetResult(target: "no regression: \(step.rawValue), now/start", value: now / before, threshold: "<= 1.05",
                                            met: now / before <= 1.05, note: String(format: "start %.4f s", before)))
            }
        }
        return (rows, targets)
    }

    func printTables(_ extra: ExtraFigures) {
        print("\n== Per step (seconds: median [min–max], µs/op) ==")
        let names = series.map(\.name)
        for step in Step.allCases {
            let cells = series.compactMap { s -> String? in
                guard let st = stats(s, step) else { return nil }
                return "  " + s.name.padding(toLength: 20, withPad: " ", startingAt: 0)
                    + String(format: " %9.4f [%.4f–%.4f] %10.2f µs/op", st.medianSeconds, st.minSeconds, st.maxSeconds,
                             st.microsecondsPerOp) + (st.note.map { "  (\($0))" } ?? "")
            }
            if cells.isEmpty { continue }
            print(step.rawValue)
            cells.forEach { print($0) }
        }
        _ = names
        if !extra.readPaths.isEmpty { ReadPathScenario.printTable(extra.readPaths) }
        let (rows, targets) = summaryAndTargets(extra)
        print("\n== Summary (medians, seconds) ==")
        let header = ["step", "lmdb", "grdbFastest", "grdbVariant", "lattice", "lattice/lmdb", "grdb/lattice"]
        let widths = [24, 9, 11, 26, 9, 12, 12]
        func line(_ cells: [String]) -> String {
            zip(cells, widths).map { $0.padding(toLength: max($1, $0.count), withPad: " ", startingAt: 0) }.joined(separator: " | ")
        }
        print(line(header))
        for row in rows { print(line(header.map { row[$0] ?? "" }) + (row["note"].map { $0.isEmpty ? "" : "  " + $0 } ?? "")) }
        print("\n== Targets ==")
        for t in targets {
            print("[\(t.met ? "met" : "MISSED")] \(t.target): " + String(format: "%.2f", t.value) + " (target \(t.threshold))"
                  + (t.note.map { "  — \($0)" } ?? ""))
        }
        print("\n== File sizes (bytes, max over rounds) and peak RSS per engine round (KiB, max) ==")
        for s in series {
            let sizes = s.fileSizes.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value.max()!)" }.joined(separator: ", ")
            print("  \(s.name): \(sizes); peak RSS \(s.peakRSSKB.max() ?? 0) KiB")
        }
    }
}
