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

    /// A 100,000-object Results sorted by name: one non-sort property changed, then one object inserted.
    static func sorted(_ path: String) throws -> [String: Double] {
        let lattice = try open(path)
        try lattice.write {
            for i in 0..<100_000 { _ = try lattice.create(NotePoint.self, value: ["id": i, "name": String(format: "n%06d", (i * 7919) % 100_000)]) }
        }
        let results = try lattice.objects(NotePoint.self).sorted(byKeyPath: "name")
        let arrived = DispatchSemaphore(value: 0)
        let token = results.observe(on: DispatchQueue(label: "bench.sorted")) { _ in arrived.signal() }
        arrived.wait()
        let point = lattice.object(ofType: NotePoint.self, forPrimaryKey: 500)!
        var start = Date()
        try lattice.write { point.value = 1 }
        arrived.wait()
        let modify = Date().timeIntervalSince(start) * 1000
        start = Date()
        try lattice.write { _ = try lattice.create(NotePoint.self, value: ["id": 100_000, "name": "n050000x"]) }
        arrived.wait()
        let insert = Date().timeIntervalSince(start) * 1000
        token.invalidate()
        return ["modify_ms": modify, "insert_ms": insert]
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

    /// File size after `commits` small commits with an observer attached (the change log keeps at most
    /// 1,000 entries).
    static func logSize(_ path: String, commits: Int) throws -> [String: Double] {
        let lattice = try open(path)
        try lattice.write { _ = try lattice.create(NotePoint.self, value: ["id": 0]) }
        let token = lattice.objects(NotePoint.self).observe { _ in }
        let point = lattice.object(ofType: NotePoint.self, forPrimaryKey: 0)!
        var sizes: [Double] = []
        for i in 1...commits {
            try lattice.write { point.value = i }
            if i == commits / 10 || i == commits {
                let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int ?? 0
                sizes.append(Double(size))
            }
        }
        token.invalidate()
        return ["commits": Double(commits), "fileBytesAtTenth": sizes.first ?? 0, "fileBytesAtEnd": sizes.last ?? 0]
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
