import Foundation

// lattice-bench: WORKLOAD.md three ways (raw LMDB, GRDB, Lattice) in one process, interleaved round by round.
//
//   lattice-bench [--n N] [--rounds R] [--engines lmdb,grdb,lattice,lattice-encrypted] [--no-extras] [--json PATH]
//
// The lattice-encrypted engine (opt-in) runs Lattice's round on an encrypted file; the run then ends with
// a table of encrypted against plaintext medians.
//
// With N other than 100,000 the checksums are printed but cannot be verified (profiling runs);
// --profile runs steps 5 and 6 once each (for callgrind; their times are then not the workload's).
// Child modes (used by the extra scenarios): --iterate-child PATH, --cold-child ENGINE PATH ID.
// --list-only PATH runs the List scenario alone (for profiles); --migration-only PATH the migration scenario.
// --notifications adds the notification scenarios and a Lattice series with an observer attached
// ("lattice-observed": the write-side cost of observers); --notify-commits N sets the small commits of
// the log-size scenario (default 1,000,000); --notify-child PATH N and --log-bytes-child PATH are their
// child processes.

let args = Array(CommandLine.arguments.dropFirst())
@MainActor func option(_ name: String) -> String? {
    guard let i = args.firstIndex(of: name), i + 1 < args.count else { return nil }
    return args[i + 1]
}

if let path = option("--iterate-child") {
    try Extras.iterateChild(path)
    exit(0)
}
if let path = option("--list-only") {
    print(try RelationshipScenarios.list(path))
    exit(0)
}
if let path = option("--cold-gigabyte-child") {
    try Extras.coldGigabyteChild(path)
    exit(0)
}
if let path = option("--collection-edits-only") {
    let count = (option("--n").flatMap(Int.init) ?? 100_000) / 10
    _ = try CollectionEdits.run(path, people: WorkloadData(n: count).people.prefix(count))
    exit(0)
}
if let path = option("--write-paths-only") {
    let count = (option("--n").flatMap(Int.init) ?? 100_000) / 5
    _ = try WritePathScenario.run(path, people: WorkloadData(n: count).people.prefix(count))
    exit(0)
}
if let path = option("--relationship-reads-only") {
    _ = try RelationshipReads.run(path, owners: (option("--n").flatMap(Int.init) ?? 100_000) / 5)
    exit(0)
}
if let path = option("--initial-values-only") {
    let count = option("--n").flatMap(Int.init) ?? 100_000
    _ = try InitialValueReads.run(path, people: WorkloadData(n: count).people.prefix(count))
    exit(0)
}
if let path = option("--live-edits-only") {
    let count = option("--n").flatMap(Int.init) ?? 100_000
    _ = try LiveEdits.run(path, people: WorkloadData(n: count).people.prefix(count))
    exit(0)
}
if let path = option("--query-shapes-only") {
    let count = option("--n").flatMap(Int.init) ?? 100_000
    _ = try QueryShapes.run(path, people: WorkloadData(n: count).people.prefix(count))
    exit(0)
}
if let path = option("--read-paths-only") {
    let count = option("--n").flatMap(Int.init) ?? 100_000
    let rows = try ReadPathScenario.run(path, people: WorkloadData(n: count).people.prefix(count),
                                        reps: option("--reps").flatMap(Int.init) ?? 11,
                                        only: option("--path"), collection: option("--collection"))
    ReadPathScenario.printTable(rows)
    exit(0)
}
if let i = args.firstIndex(of: "--notify-child"), i + 2 < args.count {
    try NotificationScenarios.child(args[i + 1], commits: Int(args[i + 2]) ?? 1_000)
    exit(0)
}
if let path = option("--migration-only") {
    // The migration scenario alone: build the 1,000,000-object file, then add a property.
    _ = try Extras.buildMillion(path)
    print(String(format: "migration: add a property to 1,000,000 objects: %.3f s", try MigratedModel.addProperty(path, expectedCount: 1_000_000)))
    exit(0)
}
if let path = option("--log-bytes-child") {
    NotificationScenarios.logBytesChild(path)
    exit(0)
}
if let i = args.firstIndex(of: "--cold-child"), i + 3 < args.count {
    try Extras.coldChild(engine: args[i + 1], path: args[i + 2], id: Int64(args[i + 3])!)
    exit(0)
}

let n = option("--n").flatMap(Int.init) ?? 100_000
let rounds = option("--rounds").flatMap(Int.init) ?? 5
let engines = Set((option("--engines") ?? "lmdb,grdb,lattice").split(separator: ",").map(String.init))
let extras = !args.contains("--no-extras")
let jsonPath = option("--json") ?? "results/latest.json"
let verify = n == 100_000

let base = NSTemporaryDirectory() + "lattice-bench-\(getpid())"
try? FileManager.default.removeItem(atPath: base)
try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: base) }

print("lattice-bench: N=\(n), \(rounds) rounds, engines \(engines.sorted().joined(separator: ",")), files in \(base)")
let (genSeconds, data) = timed { WorkloadData(n: n) }
print(String(format: "data generated in %.2f s (not timed)", genSeconds))

let lmdb = Series(name: "lmdb")
let grdbCodable = Series(name: "grdb-pool-codable")
let grdbManual = Series(name: "grdb-pool-manual")
let lattice = Series(name: "lattice")
let latticeEncrypted = Series(name: "lattice-encrypted")
let latticeObserved = Series(name: "lattice-observed")
let notifications = args.contains("--notifications")
var active: [Series] = []
if engines.contains("lmdb") { active.append(lmdb) }
if engines.contains("grdb") { active += [grdbCodable, grdbManual] }
if engines.contains("lattice") { active.append(lattice) }
if engines.contains("lattice-encrypted") { active.append(latticeEncrypted) }
if engines.contains("lattice") && notifications { active.append(latticeObserved) }

var runner = RoundRunner(data: data, base: base, keepFiles: false)
if args.contains("--profile") { runner.queryReps = (1, 1) }
var checksums: [String: String] = [:]
var mismatches: [String] = []
@MainActor func verifyChecksums(_ engine: String, _ round: Int, _ c: Checksums) {
    if round == 1 { checksums[engine] = c.text }
    if verify && c.text != Checksums.expected { mismatches.append("\(engine) round \(round): \(c.text)") }
}

let started = now()
for round in 1...rounds {
    let roundStart = now()
    // Before each engine (untimed): write back the dirty pages the previous engine left, so that its
    // writeback does not land in the next engine's timed fsyncs (durable insert-small).
    if engines.contains("lmdb") { sync(); verifyChecksums(lmdb.name, round, runner.runLMDB(lmdb, round: round)) }
    if engines.contains("grdb") {
        sync()
        verifyChecksums(grdbCodable.name, round, try runner.runGRDB(grdbCodable, CodablePerson.self, round: round, cachedRows: false))
        sync()
        verifyChecksums(grdbManual.name, round, try runner.runGRDB(grdbManual, ManualPerson.self, round: round, cachedRows: true))
    }
    if engines.contains("lattice") { sync(); verifyChecksums(lattice.name, round, try runner.runLattice(lattice, round: round)) }
    if engines.contains("lattice-encrypted") {
        sync()
        verifyChecksums(latticeEncrypted.name, round, try runner.runLattice(latticeEncrypted, round: round, encrypted: true))
    }
    if engines.contains("lattice") && notifications {
        sync()
        verifyChecksums(latticeObserved.name, round, try runner.runLattice(latticeObserved, round: round, observed: true))
    }
    print(String(format: "round %d done in %.1f s", round, now() - roundStart))
}

print("\n== Round-1 checksums ==")
if verify { print("  expected            \(Checksums.expected)") }
for s in active { print("  " + s.name.padding(toLength: 20, withPad: " ", startingAt: 0) + "\(checksums[s.name] ?? "-")") }
if !mismatches.isEmpty {
    print("\nCHECKSUM MISMATCH — refusing to report:")
    mismatches.forEach { print("  " + $0) }
    exit(1)
}
print(verify ? "  all checksums match WORKLOAD.md" : "  (N != 100,000: checksums not verifiable)")

if engines.contains("lattice") && engines.contains("lattice-encrypted") {
    print("\n== Encrypted Lattice (medians, seconds) ==")
    print("  " + "step".padding(toLength: 34, withPad: " ", startingAt: 0) + "plaintext   encrypted   encrypted/plaintext")
    for step in Step.allCases {
        guard let p = lattice.times[step].map(median), let e = latticeEncrypted.times[step].map(median) else { continue }
        print("  " + step.rawValue.padding(toLength: 34, withPad: " ", startingAt: 0)
              + String(format: "%-11.4f %-11.4f %.2fx", p, e, e / p))
    }
    let sizes = [lattice, latticeEncrypted].map { $0.fileSizes["after step 1"]?.max().map { String(format: "%.2f MB", Double($0) / 1e6) } ?? "-" }
    print("  file after step 1: plaintext \(sizes[0]), encrypted \(sizes[1])")
}

// MARK: Extras

var extraResults: [ExtraResult] = []
var iterateRSSMB: Double?
var coldGigabyteSeconds: Double?
var listAppendMicroseconds: Double?
var backlinkCountMicroseconds: Double?
var readPathRows: [ReadPathScenario.Row] = []
if extras && engines.contains("lattice") {
    let millionPath = base + "/million.lattice"
    let buildSeconds = try Extras.buildMillion(millionPath)
    let it = try Extras.child(["--iterate-child", millionPath])
    iterateRSSMB = (it["peakKB"] ?? 0) / 1024
    extraResults.append(ExtraResult(scenario: "iterate 1,000,000 objects reading one property (child process)",
                                    values: ["seconds": it["seconds"] ?? .nan, "peakRSSMB": iterateRSSMB!,
                                             "rssBeforeIterationMB": (it["rssBeforeKB"] ?? 0) / 1024,
                                             "fileMB": (it["fileBytes"] ?? 0) / 1e6, "buildSeconds": buildSeconds,
                                             "rssAnonAtEndMB": (it["anonKBAtEnd"] ?? 0) / 1024,
                                             "rssFileAtEndMB": (it["fileKBAtEnd"] ?? 0) / 1024],
                                    note: "peak RSS = VmHWM of the child: heap (RssAnon) plus the mapped file pages it touched (RssFile)"))
    let migrationSeconds = try MigratedModel.addProperty(millionPath, expectedCount: 1_000_000)
    extraResults.append(ExtraResult(scenario: "migration: add a property to a class of 1,000,000 objects (schema version 0 -> 1)",
                                    values: ["seconds": migrationSeconds], note: "no record is rewritten; target < 1 s"))
    try? FileManager.default.removeItem(atPath: millionPath)
    try? FileManager.default.removeItem(atPath: millionPath + "-lock")

    // Cold start: a fresh process opens a populated 100k file and runs its first read and first query.
    let coldRunner = RoundRunner(data: data, base: base + "/cold", keepFiles: true)
    try FileManager.default.createDirectory(atPath: base + "/cold", withIntermediateDirectories: true)
    let deleted = Set(data.deleteIDs)
    let id = (1...Int64(n)).first { !deleted.contains($0) }!
    var coldFiles: [(String, String)] = [("lattice", coldRunner.dir("lattice", 0) + ".lattice")]
    _ = try coldRunner.runLattice(Series(name: "cold"), round: 0)
    if engines.contains("lmdb") {
        _ = coldRunner.runLMDB(Series(name: "cold"), round: 0)
        coldFiles.append(("lmdb", coldRunner.dir("lmdb", 0)))
    }
    if engines.contains("grdb") {
        let s = Series(name: "grdb-cold")
        _ = try coldRunner.runGRDB(s, ManualPerson.self, round: 0, cachedRows: false)
        coldFiles.append(("grdb", coldRunner.dir("grdb-cold", 0) + ".sqlite"))
    }
    // Cold start on a file of more than 1 GB: open and the first indexed query, in a fresh process.
    let gigabytePath = base + "/gigabyte.lattice"
    let gigabyteBuild = try Extras.buildGigabyte(gigabytePath)
    let g = try Extras.child(["--cold-gigabyte-child", gigabytePath])
    coldGigabyteSeconds = g["firstQuery"]
    extraResults.append(ExtraResult(scenario: "cold start, 1 GB file: open, first indexed query (age == 42: count and first object)",
                                    values: ["openSeconds": g["open"] ?? .nan, "firstQuerySeconds": g["firstQuery"] ?? .nan,
                                             "allMatchesSeconds": g["allMatches"] ?? .nan, "queryN": g["n"] ?? .nan,
                                             "fileMB": (g["fileBytes"] ?? 0) / 1e6, "buildSeconds": gigabyteBuild],
                                    note: "fresh process; allMatches also reads every match"))
    try? FileManager.default.removeItem(atPath: gigabytePath)
    try? FileManager.default.removeItem(atPath: gigabytePath + "-lock")

    for (engine, path) in coldFiles {
        let c = try Extras.child(["--cold-child", engine, path, String(id)])
        extraResults.append(ExtraResult(scenario: "cold start (\(engine)): open, first read by id, first query age == 42",
                                        values: ["openSeconds": c["open"] ?? .nan, "firstReadSeconds": c["firstRead"] ?? .nan,
                                                 "firstQuerySeconds": c["firstQuery"] ?? .nan, "queryN": c["n"] ?? .nan],
                                        note: nil))
    }
}
if extras && engines.contains("lattice") {
    let listPath = base + "/list.lattice"
    let list = try RelationshipScenarios.list(listPath)
    listAppendMicroseconds = list["appendSeconds"].map { $0 / 100_000 * 1e6 }
    extraResults.append(ExtraResult(scenario: "List<Int> of 100,000 entries: append each, read each by index, insert one in the middle, remove one",
                                    values: list, note: "Lattice only"))
    let nodesPath = base + "/nodes.lattice"
    let backlinks = try RelationshipScenarios.backlinks(nodesPath)
    backlinkCountMicroseconds = backlinks["countSeconds"].map { $0 * 1e6 }
    extraResults.append(ExtraResult(scenario: "backlink count: 10,000 incoming links in a 1,000,000-object file",
                                    values: backlinks, note: "Lattice only"))
    let readPath = base + "/read-paths.lattice"
    readPathRows = try ReadPathScenario.run(readPath, people: data.people.prefix(n))
    let nestPath = base + "/relationship-reads.lattice"
    extraResults.append(ExtraResult(scenario: "relationship reads: \(n / 5) owners of \(RelationshipReads.dogsPerOwner) dogs",
                                    values: try RelationshipReads.run(nestPath, owners: n / 5),
                                    note: "seconds per pass (median of 7) and nanoseconds per operation; Lattice only"))
    let initialPath = base + "/initial-values.lattice"
    extraResults.append(ExtraResult(scenario: "initial values: \(n) objects of a model declaring `id = UUID()` and initial values, against one declaring none",
                                    values: try InitialValueReads.run(initialPath, people: data.people.prefix(n)),
                                    note: "seconds per pass (median of 7) and nanoseconds per object; Lattice only"))
    let shapesPath = base + "/query-shapes.lattice"
    extraResults.append(ExtraResult(scenario: "query shapes: \(n) objects, extremes and sorted ends of an indexed property, index candidates checked by another term, a two-key sort",
                                    values: try QueryShapes.run(shapesPath, people: data.people.prefix(n)),
                                    note: "seconds per pass (median of 7) and nanoseconds per object of the class; Lattice only"))
    let writePath = base + "/write-paths.lattice"
    extraResults.append(ExtraResult(scenario: "write paths: \(n / 5) objects, each changed once in one write",
                                    values: try WritePathScenario.run(writePath, people: data.people.prefix(n / 5)),
                                    note: "seconds per pass (median of 3) and nanoseconds per object; Lattice only"))
    let editPath = base + "/collection-edits.lattice"
    extraResults.append(ExtraResult(scenario: "collection edits: collections of \(n / 10) entries, changed and searched through the owner's property",
                                    values: try CollectionEdits.run(editPath, people: data.people.prefix(n / 10)),
                                    note: "seconds per pass (median of 3) and nanoseconds per operation; Lattice only"))
    let livePath = base + "/live-edits.lattice"
    extraResults.append(ExtraResult(scenario: "live edits: \(n) objects and a List of them all; small commits with observers, reads by position after own commits, a long List edited in place",
                                    values: try LiveEdits.run(livePath, people: data.people.prefix(n)),
                                    note: "seconds per pass (median of 3) and nanoseconds per commit or edit; Lattice only"))
    for path in [listPath, nodesPath, readPath, nestPath, initialPath, shapesPath, writePath, editPath, livePath] {
        try? FileManager.default.removeItem(atPath: path)
        try? FileManager.default.removeItem(atPath: path + "-lock")
    }
}
var notificationTargets: [TargetResult] = []
var notificationInfo: [String] = []
if notifications {
    // Opt-in: a few minutes more (a million small commits; 100,000 sorted objects).
    let commits = option("--notify-commits").flatMap(Int.init) ?? 1_000_000
    // The small commits run on a tmpfs when there is one (see `logSize`).
    let logBase = FileManager.default.isWritableFile(atPath: "/dev/shm") ? "/dev/shm/lattice-bench-\(getpid())" : base
    try FileManager.default.createDirectory(atPath: logBase, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: logBase) }
    let scenarios: [(key: String, name: String, dir: String, run: (String) throws -> [String: Double])] = [
        ("same", "notification latency, same process (queue observer, 1,000 commits)", base, { try NotificationScenarios.sameProcess($0) }),
        ("cross", "notification latency, another process commits (1,000 commits)", base, { try NotificationScenarios.crossProcess($0) }),
        ("sorted", "sorted 100,000-object Results: commit to changeset, one non-sort property / one insertion", base,
         { try NotificationScenarios.sorted($0) }),
        ("burst", "10,000-commit burst, 100 observers on one run loop", base, { try NotificationScenarios.burst($0) }),
        ("log", "change log after \(commits) small commits with an observer (capped at 1,000 entries)", logBase,
         { try NotificationScenarios.logSize($0, commits: commits) }),
    ]
    var byKey: [String: [String: Double]] = [:]
    for (n, scenario) in scenarios.enumerated() {
        let path = scenario.dir + "/notify-\(n).lattice"
        let values = try scenario.run(path)
        byKey[scenario.key] = values
        extraResults.append(ExtraResult(scenario: scenario.name, values: values, note: "Lattice only, --notifications"))
        try? FileManager.default.removeItem(atPath: path)
        try? FileManager.default.removeItem(atPath: path + "-lock")
    }
    notificationTargets = NotificationScenarios.targets(byKey)
    // Observers must not tax writes: the insert, update and delete steps cost at most 10% more with an observer
    // attached. Durable small commits are only to gain no fsync (they do not): their ratio is reported.
    for step in [Step.insert, .update, .delete, .insertSmall] {
        guard let with = latticeObserved.times[step], let without = lattice.times[step], !with.isEmpty, !without.isEmpty else { continue }
        let ratio = median(with) / median(without)
        let times = String(format: "%.4f s vs %.4f s", median(with), median(without))
        if step == .insertSmall {
            notificationInfo.append("\(step.rawValue) with an observer / without (medians): " + String(format: "%.3f", ratio)
                                    + " — \(times) (each commit also writes the change log's pages; no extra fsync)")
            continue
        }
        notificationTargets.append(TargetResult(target: "\(step.rawValue) with an observer / without (medians)", value: ratio,
                                                threshold: "<= 1.10", met: ratio <= 1.10, note: times))
    }
}
let pending: [String] = []

// MARK: Report

let report = Report(n: n, series: active, lmdb: engines.contains("lmdb") ? lmdb : nil,
                    grdb: engines.contains("grdb") ? [grdbCodable, grdbManual] : [],
                    lattice: engines.contains("lattice") ? lattice : nil)
// The start of the current performance work (`--baseline PATH`, default results/baseline.json when present):
// Lattice's medians then, to check that no step regressed.
var baseline: [String: Double]?
let baselinePath = option("--baseline") ?? "results/baseline.json"
if let json = FileManager.default.contents(atPath: baselinePath), let start = try? JSONDecoder().decode(Output.self, from: json) {
    baseline = Dictionary(uniqueKeysWithValues: start.steps.filter { $0.engine == lattice.name }.map { ($0.step, $0.medianSeconds) })
    print("baseline: \(baselinePath) (\(start.date))")
}
let figures = ExtraFigures(iterateRSSMB: iterateRSSMB, coldGigabyteSeconds: coldGigabyteSeconds,
                           listAppendMicroseconds: listAppendMicroseconds, backlinkCountMicroseconds: backlinkCountMicroseconds,
                           readPaths: readPathRows, baseline: baseline)
report.printTables(figures)
var processPeak = 0
var usage = rusage()
if getrusage(RUSAGE_SELF.rawValue, &usage) == 0 { processPeak = usage.ru_maxrss }
print("  process peak RSS (ru_maxrss): \(processPeak) KiB")
if !extraResults.isEmpty {
    print("\n== Extra scenarios ==")
    for e in extraResults {
        let values = e.values.sorted { $0.key < $1.key }.map { "\($0.key)=" + String(format: "%.4g", $0.value) }.joined(separator: " ")
        print("  \(e.scenario): \(values)" + (e.note.map { "  (\($0))" } ?? ""))
    }
}
pending.forEach { print("  " + $0) }
if !notificationTargets.isEmpty {
    print("\n== Notification targets ==")
    for t in notificationTargets {
        print("[\(t.met ? "met" : "MISSED")] \(t.target): " + String(format: "%.3f", t.value) + " (target \(t.threshold))"
              + (t.note.map { "  — \($0)" } ?? ""))
    }
    notificationInfo.forEach { print("[info] " + $0) }
}
print(String(format: "\ntotal %.1f s", now() - started))

let (summary, targets) = report.summaryAndTargets(figures)
let output = Output(
    date: ISO8601DateFormatter().string(from: Date()), n: n, rounds: rounds, checksums: checksums, checksumsVerified: verify,
    steps: report.allStats(), summary: summary, targets: targets + notificationTargets,
    fileSizesBytes: Dictionary(uniqueKeysWithValues: active.map { s in (s.name, s.fileSizes.mapValues { $0.max()! }) }),
    peakRSSKB: Dictionary(uniqueKeysWithValues: active.map { ($0.name, $0.peakRSSKB.max() ?? 0) }),
    processPeakRSSKB: processPeak, extras: extraResults, readPaths: readPathRows, pending: pending)
let encoder = JSONEncoder()
encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
let json = try encoder.encode(output)
try? FileManager.default.createDirectory(atPath: (jsonPath as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
try json.write(to: URL(fileURLWithPath: jsonPath))
print("results written to \(jsonPath)")
