import CLMDBBench
import Dispatch
import Foundation
import Lattice

/// Notification scenarios (`--notifications`): commit-to-callback latency in one process and across
/// processes, a sorted 100,000-object Results, a 10,000-commit burst with 100 observers, and the
/// file's size after many small commits with an observer attached.
final class NotePoint: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var value = 0
    /// CLOCK_MONOTONIC nanoseconds when the commit began (system-wide: comparable across processes).
    @Persisted var stamp = 0
}

enum NotificationScenarios {
    static func open(_ path: String) throws -> Lattice {
        try Lattice(configuration: .init(fileURL: URL(fileURLWithPath: path), objectTypes: [NotePoint.self], initialMapSize: 1 << 30))
    }

    static func monotonicNanos() -> Int {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return t.tv_sec * 1_000_000_000 + t.tv_nsec
    }

    static func percentiles(_ samples: [Double], _ prefix: String) -> [String: Double] {
        let s = samples.sorted()
        guard !s.isEmpty else { return [:] }
        return [prefix + "p50_ms": s[s.count / 2], prefix + "p99_ms": s[min(s.count - 1, s.count * 99 / 100)], prefix + "max_ms": s.last!]
    }

    /// Commit, then wait for the queue observer's callback; latency from before the commit to the callback.
    static func sameProcess(_ path: String, commits: Int = 1_000) throws -> [String: Double] {
        let lattice = try open(path)
        try lattice.write { _ = try lattice.create(NotePoint.self, value: ["id": 0]) }
        let arrived = DispatchSemaphore(value: 0)
        let latest = Atomicish()
        let token = lattice.objects(NotePoint.self).observe(on: DispatchQueue(label: "bench.observer")) { change in
            if case .update(let results, _, _, _) = change, let stamp = results.first?.stamp {
                latest.set(Double(monotonicNanos() - stamp) / 1e6)
                arrived.signal()
            } else if case .initial = change {
                arrived.signal()
            }
        }
        arrived.wait()
        var samples: [Double] = []
        let point = lattice.object(ofType: NotePoint.self, forPrimaryKey: 0)!
        for i in 0..<commits {
            try lattice.write {
                point.value = i
                point.stamp = monotonicNanos()
            }
            arrived.wait()
            samples.append(latest.get())
        }
        token.invalidate()
        return percentiles(samples, "")
    }

    /// A child process commits; this process's observer measures the latency from the child's stamp.
    static func crossProcess(_ path: String, commits: Int = 1_000) throws -> [String: Double] {
        let lattice = try open(path)
        try lattice.write { _ = try lattice.create(NotePoint.self, value: ["id": 0]) }
        let lock = NSCondition()
        nonisolated(unsafe) var samples: [Double] = []   // guarded by `lock`
        nonisolated(unsafe) var lastValue = 0             // guarded by `lock`
        let token = lattice.objects(NotePoint.self).observe(on: DispatchQueue(label: "bench.cross")) { change in
            if case .update(let results, _, _, _) = change, let point = results.first, point.value > 0 {
                let ms = Double(monotonicNanos() - point.stamp) / 1e6
                lock.lock(); samples.append(ms); lastValue = point.value; lock.signal(); lock.unlock()
            }
        }
        Thread.sleep(forTimeInterval: 0.2)
        let child = Process()
        child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        child.arguments = ["--notify-child", path, String(commits)]
        try child.run()
        child.waitUntilExit()
        let deadline = Date().addingTimeInterval(10)
        lock.lock()
        // Coalescing may merge commits: wait until the last commit's notification arrived.
        while lastValue < commits && Date() < deadline { _ = lock.wait(until: Date().addingTimeInterval(0.05)) }
        let taken = samples
        lock.unlock()
        token.invalidate()
        var out = percentiles(taken, "")
        out["deliveries"] = Double(taken.count)
        return out
    }

    /// The child of `crossProcess`: commits `commits` times, one at a time, pausing 2 ms between.
    static func child(_ path: String, commits: Int) throws {
        let lattice = try open(path)
        let point = lattice.object(ofType: NotePoint.self, forPrimaryKey: 0)!
        for i in 1...commits {
            try lattice.write {
                point.value = i
                point.stamp = monotonicNanos()
            }
            usleep(2_000)
        }
    }

    /// A 100,000-object Results sorted by name: commit to changeset when one non-sort property changes,
    /// and when one object is inserted (`reps` commits each), beside one full evaluation of the results
    /// (what a re-sort on every commit would cost).
    static func sorted(_ path: String, reps: Int = 200) throws -> [String: Double] {
        let lattice = try open(path)
        try lattice.write {
            for i in 0..<100_000 { _ = try lattice.create(NotePoint.self, value: ["id": i, "name": String(format: "n%06d", (i * 7919) % 100_000)]) }
        }
        let query = { try lattice.objects(NotePoint.self).sorted(byKeyPath: "name") }
        var start = monotonicNanos()
        _ = try query().last   // evaluates and sorts every key (`count` alone would not)
        let full = Double(monotonicNanos() - start) / 1e6
        let arrived = DispatchSemaphore(value: 0)
        let counts = Atomicish()
        let token = try query().observe(on: DispatchQueue(label: "bench.sorted")) { change in
            // The callback reads the results, as a UI would: the count is the new one, computed once.
            if case .update(let results, _, _, _) = change { counts.set(Double(results.count)) }
            arrived.signal()
        }
        arrived.wait()
        let point = lattice.object(ofType: NotePoint.self, forPrimaryKey: 500)!
        var modify: [Double] = [], insert: [Double] = []
        for rep in 0..<reps {
            start = monotonicNanos()
            try lattice.write { point.value = rep + 1 }
            arrived.wait()
            modify.append(Double(monotonicNanos() - start) / 1e6)
        }
        for rep in 0..<reps {
            start = monotonicNanos()
            try lattice.write { _ = try lattice.create(NotePoint.self, value: ["id": 100_000 + rep, "name": String(format: "n%06dx", (rep * 2_003) % 100_000)]) }
            arrived.wait()
            insert.append(Double(monotonicNanos() - start) / 1e6)
        }
        token.invalidate()
        var out = percentiles(modify, "modify_").merging(percentiles(insert, "insert_")) { a, _ in a }
        out["fullEvaluation_ms"] = full
        out["finalCountCorrect"] = counts.get() == Double(100_000 + reps) ? 1 : 0
        return out
    }

    /// 100 observers on one handle delivered by its run loop while another thread commits 10,000 times.
    static func burst(_ path: String, commits: Int = 10_000, observers: Int = 100) throws -> [String: Double] {
        let lattice = try open(path)
        try lattice.write { _ = try lattice.create(NotePoint.self, value: ["id": 0]) }
        var deliveries = 0
        var lastSeen = [Int](repeating: -1, count: observers)
        var tokens: [NotificationToken] = []
        for n in 0..<observers {
            tokens.append(lattice.objects(NotePoint.self).observe { change in
                deliveries += 1
                if case .update(let results, _, _, _) = change { lastSeen[n] = results.first?.value ?? -1 }
            })
        }
        let start = Date()
        let writer = Thread {
            guard let other = try? open(path), let point = other.object(ofType: NotePoint.self, forPrimaryKey: 0) else { return }
            for i in 1...commits { try? other.write { point.value = i } }
        }
        writer.start()
        while lastSeen.contains(where: { $0 != commits }) && Date().timeIntervalSince(start) < 120 {
            RunLoop.current.run(until: Date().addingTimeInterval(0.01))
        }
        let seconds = Date().timeIntervalSince(start)
        tokens.forEach { $0.invalidate() }
        return ["seconds": seconds, "deliveries": Double(deliveries), "allCorrect": lastSeen.allSatisfy { $0 == commits } ? 1 : 0]
    }

    /// The change log's bytes (and the file's) after `commits` small commits with an observer attached
    /// (the log keeps at most 1,000 entries). The commits are durable; the file is put on a tmpfs
    /// (`/dev/shm`) when there is one, so that a million fsyncs take seconds, not an hour.
    static func logSize(_ path: String, commits: Int) throws -> [String: Double] {
        let lattice = try open(path)
        try lattice.write { _ = try lattice.create(NotePoint.self, value: ["id": 0]) }
        let token = lattice.objects(NotePoint.self).observe { _ in }
        let point = lattice.object(ofType: NotePoint.self, forPrimaryKey: 0)!
        var out: [String: Double] = ["commits": Double(commits)]
        let start = monotonicNanos()
        for i in 1...commits {
            try lattice.write { point.value = i }
            if i == commits / 10 || i == commits {
                let suffix = i == commits ? "AtEnd" : "AtTenth"
                let log = try Extras.child(["--log-bytes-child", path])
                out["logBytes" + suffix] = log["bytes"] ?? .nan
                out["logEntries" + suffix] = log["entries"] ?? .nan
                out["fileBytes" + suffix] = Double((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int ?? 0)
            }
        }
        out["seconds"] = Double(monotonicNanos() - start) / 1e9
        token.invalidate()
        return out
    }

    /// A child process: prints the bytes and entries of the `changes` table of the Lattice file at
    /// `path`, read with LMDB's C API (`mdb_stat`), as `bytes=… entries=…`.
    static func logBytesChild(_ path: String) {
        var env: OpaquePointer?
        var txn: OpaquePointer?
        var dbi: MDB_dbi = 0
        var stat = MDB_stat()
        guard mdb_env_create(&env) == 0, mdb_env_set_maxdbs(env, 1_024) == 0,
              mdb_env_open(env, path, UInt32(MDB_NOSUBDIR | MDB_RDONLY), 0o644) == 0,
              mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn) == 0,
              mdb_dbi_open(txn, "changes", 0, &dbi) == 0, mdb_stat(txn, dbi, &stat) == 0 else {
            print("bytes=nan entries=nan")
            return
        }
        let pages = stat.ms_branch_pages + stat.ms_leaf_pages + stat.ms_overflow_pages
        print("bytes=\(pages * Int(stat.ms_psize)) entries=\(stat.ms_entries)")
        mdb_txn_abort(txn)
        mdb_env_close(env)
    }

    /// The notification targets of these scenarios, met or missed.
    static func targets(_ results: [String: [String: Double]]) -> [TargetResult] {
        var out: [TargetResult] = []
        func add(_ scenario: String, _ key: String, _ target: String, _ threshold: String, _ met: (Double) -> Bool, note: String? = nil) {
            guard let value = results[scenario]?[key] else { return }
            out.append(TargetResult(target: target, value: value, threshold: threshold, met: met(value), note: note))
        }
        add("same", "p50_ms", "notification, same process (queue): p50 ms", "< 1", { $0 < 1 })
        add("same", "p99_ms", "notification, same process (queue): p99 ms", "< 5", { $0 < 5 })
        add("cross", "p99_ms", "notification, another process: p99 ms", "< 10", { $0 < 10 },
            note: results["cross"].map { String(format: "p50 %.2f ms, max %.2f ms, %.0f deliveries", $0["p50_ms"] ?? .nan, $0["max_ms"] ?? .nan, $0["deliveries"] ?? .nan) })
        add("sorted", "modify_p99_ms", "sorted 100,000 Results, one non-sort property changed: commit to changeset p99 ms", "< 5", { $0 < 5 },
            note: results["sorted"].map { String(format: "p50 %.2f ms; a full evaluation takes %.1f ms", $0["modify_p50_ms"] ?? .nan, $0["fullEvaluation_ms"] ?? .nan) })
        add("sorted", "insert_p99_ms", "sorted 100,000 Results, one object inserted: commit to changeset p99 ms", "< 5", { $0 < 5 },
            note: results["sorted"].map { String(format: "p50 %.2f ms", $0["insert_p50_ms"] ?? .nan) })
        add("burst", "allCorrect", "10,000-commit burst, 100 observers: every final state correct", "= 1", { $0 == 1 },
            note: results["burst"].map { String(format: "%.0f deliveries in %.2f s", $0["deliveries"] ?? .nan, $0["seconds"] ?? .nan) })
        if let log = results["log"], let tenth = log["logBytesAtTenth"], let end = log["logBytesAtEnd"] {
            out.append(TargetResult(target: "change log bytes after \(Int(log["commits"] ?? 0)) small commits with an observer: bounded",
                                    value: end, threshold: "<= bytes at a tenth of the commits", met: end <= tenth,
                                    note: String(format: "%.0f bytes at a tenth, %.0f entries at the end", tenth, log["logEntriesAtEnd"] ?? .nan)))
        }
        return out
    }
}

/// A Double shared with the observer queue.
final class Atomicish: @unchecked Sendable {
    // @unchecked Sendable is safe: every access to `value` holds `lock`.
    private let lock = NSLock()
    private var value = 0.0
    func set(_ v: Double) { lock.lock(); value = v; lock.unlock() }
    func get() -> Double { lock.lock(); defer { lock.unlock() }; return value }
}
