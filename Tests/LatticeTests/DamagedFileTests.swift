import Foundation
import XCTest
@testable import Lattice

/// Damages copies of a real file in many places and ways, and reads each copy in a child process:
/// every case must end in a typed error, a stop with a message, or the original data; never in a hang
/// or a wrong value read back without a word.
final class DamagedFileTests: XCTestCase {
    private enum Read: String, CaseIterable {
        /// Every object, property, collection, lookup and query read back as in the original.
        case identical
        /// A LatticeError was thrown.
        case typedError
        /// A non-throwing read stopped the process with Lattice's message.
        case stopped
        /// Index or backlink entries (derived from the records, carrying no checksum) were damaged: a query
        /// or `LinkingObjects` found other objects, while every object, property and collection read back
        /// as it was. `verify()` must find the damage.
        case derivedDiffers
        /// SIGSEGV/SIGBUS inside LMDB, or one of its assertions (it trusts its pages; damaged branch pages
        /// can crash it).
        case crashInLMDB
        /// Any other crash: a Swift trap or a fault outside LMDB.
        case otherCrash
        case hang
        /// The read finished without an error but read something else than the original.
        case silentlyWrong
    }

    private enum Verify: String, CaseIterable {
        case foundProblems, foundNothing, refusedToOpen, died, hang
    }

    /// One way of damaging a copy.
    private enum Damage: Sendable {
        case bytes(at: Int, [UInt8])
        case zeroPage(at: Int)
        case flips([(at: Int, bit: Int)])
        case truncate(to: Int)

        var name: String {
            switch self {
            case let .bytes(at, bytes): return "\(bytes.count) random bytes at \(at)"
            case let .zeroPage(at): return "zeroed page at \(at)"
            case let .flips(flips): return "bits " + flips.map { "\($0.at).\($0.bit)" }.joined(separator: ",")
            case let .truncate(size): return "truncated to \(size)"
            }
        }

        func apply(_ data: inout Data) {
            switch self {
            case let .bytes(at, bytes):
                for (j, byte) in bytes.enumerated() where at + j < data.count { data[at + j] = byte }
            case let .zeroPage(at):
                let end = min(at + 4096, data.count)
                data.replaceSubrange(at..<end, with: Data(count: end - at))
            case let .flips(flips):
                for flip in flips where flip.at < data.count { data[flip.at] ^= 1 << flip.bit }
            case let .truncate(size):
                data = data.prefix(size)
            }
        }
    }

    private struct Outcome: Sendable {
        let name: String
        let read: Read
        let verify: Verify
        let detail: String
    }

    func testDamagedCopiesNeverHangOrReadBackWrongData() throws {
        let db = makeTempDatabase("damage")
        let build = try ChildRun(["damage-build", db.path, "500"], timeout: 300)
        XCTAssertEqual(build.stdout, "built\n", "\(build)")
        let original = try Data(contentsOf: db.url)
        let reference = try ChildRun(["damage-read", db.path])
        XCTAssertEqual(reference.status, 0, "\(reference)")
        XCTAssertEqual(reference.stdout.split(separator: "\n").count, 4, reference.stdout)
        let clean = try ChildRun(["damage-verify", db.path])
        XCTAssertEqual(clean.stdout, "problems 0\n", "\(clean)")

        // 200 places across the file, three kinds of damage; then 40 truncations.
        var random = SplitMix64(state: 0x1A77_1CE5)
        var cases: [Damage] = []
        let size = original.count
        for i in 0..<200 {
            let offset = Int(random.next() % UInt64(size))
            switch i % 3 {
            case 0: cases.append(.bytes(at: offset, (0...(random.next() % 64)).map { _ in UInt8(truncatingIfNeeded: random.next()) }))
            case 1: cases.append(.zeroPage(at: offset / 4096 * 4096))
            default: cases.append(.flips((0...(random.next() % 3)).map { _ in (offset + Int(random.next() % 16), Int(random.next() % 8)) }))
            }
        }
        for i in 0..<40 {
            cases.append(.truncate(to: i % 2 == 0 ? (i + 1) * size / 41 / 4096 * 4096 : 4096 + Int(random.next() % UInt64(size - 4096))))
        }
        let referenceOutput = reference.stdout
        let damages = cases

        let outcomes = Locked<[Outcome]>([])
        let directory = FileManager.default.temporaryDirectory
        DispatchQueue.concurrentPerform(iterations: cases.count) { index in
            let path = directory.appendingPathComponent("damaged-\(UUID().uuidString).lattice").path
            defer {
                unlink(path)
                unlink(path + "-lock")
            }
            var copy = original
            damages[index].apply(&copy)
            do {
                try copy.write(to: URL(fileURLWithPath: path))
                let read = try ChildRun(["damage-read", path], timeout: 30)
                let verify = try ChildRun(["damage-verify", path], timeout: 30)
                let outcome = Outcome(name: damages[index].name, read: Self.classify(read, reference: referenceOutput),
                                      verify: Self.classify(verify), detail: "read: \(read)\nverify: \(verify)")
                outcomes.withLock { $0.append(outcome) }
            } catch {
                outcomes.withLock { $0.append(Outcome(name: damages[index].name, read: .otherCrash, verify: .died, detail: "\(error)")) }
            }
        }

        let all = outcomes.withLock { $0 }
        XCTAssertEqual(all.count, cases.count)
        var summary = "Damaged copies: \(all.count) cases.\n  read:"
        for kind in Read.allCases { summary += " \(kind.rawValue) \(all.filter { $0.read == kind }.count)," }
        summary += "\n  verify:"
        for kind in Verify.allCases { summary += " \(kind.rawValue) \(all.filter { $0.verify == kind }.count)," }
        print(summary)
        for outcome in all where [.otherCrash, .hang, .silentlyWrong].contains(outcome.read) || outcome.verify == .hang {
            XCTFail("\(outcome.name): read \(outcome.read.rawValue), verify \(outcome.verify.rawValue)\n\(outcome.detail)")
        }
        // Whenever the read did not get the original data, verify() finds a problem (or cannot run).
        for outcome in all where outcome.read != .identical && outcome.verify == .foundNothing {
            XCTFail("\(outcome.name): read \(outcome.read.rawValue) but verify() found nothing\n\(outcome.detail)")
        }
    }

    private static func classify(_ run: ChildRun, reference: String) -> Read {
        if run.timedOut { return .hang }
        if run.crashed {
            if run.stderr.contains("Lattice stopped while") || run.stderr.contains("run `Lattice.verify()` on it") { return .stopped }
            if run.stderr.contains("mdb.c:") && run.stderr.contains("Assertion") { return .crashInLMDB }
            // The helper's handler, then libc's signal trampoline, then the faulting code (past libc's
            // own functions such as memcpy): LMDB's or not.
            var frames = ArraySlice(run.stderr.components(separatedBy: "crash frames: ").last?
                .components(separatedBy: "\n").first?.components(separatedBy: " <- ") ?? [])
            if let trampoline = frames.firstIndex(where: { $0.hasPrefix("libc.so") }) { frames = frames[(trampoline + 1)...] }
            let first = frames.first { !$0.hasPrefix("libc.so") }
            return first?.hasPrefix("liblmdb") == true ? .crashInLMDB : .otherCrash
        }
        if run.status == 3 && run.stdout.hasPrefix("error ") { return .typedError }
        if run.status == 0 {
            if run.stdout == reference { return .identical }
            // "objects" and "lookups" read records and collections; "backlinks" and "queries" go through
            // backlink and index entries.
            func part(_ output: String, _ name: String) -> Substring? { output.split(separator: "\n").first { $0.hasPrefix(name + " ") } }
            let data = ["objects", "lookups"].allSatisfy { part(run.stdout, $0) != nil && part(run.stdout, $0) == part(reference, $0) }
            return data ? .derivedDiffers : .silentlyWrong
        }
        return .otherCrash
    }

    private static func classify(_ run: ChildRun) -> Verify {
        if run.timedOut { return .hang }
        if run.crashed { return .died }
        if run.status == 3 && run.stdout.hasPrefix("error ") { return .refusedToOpen }
        if run.status == 0 { return run.stdout.hasPrefix("problems 0\n") ? .foundNothing : .foundProblems }
        return .died
    }
}
