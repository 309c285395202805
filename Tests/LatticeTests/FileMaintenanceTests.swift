import Foundation
import Synchronization
import XCTest
@testable import Lattice
#if canImport(Glibc)
import Glibc
#endif

/// Copies, compaction on launch, deleting files and the limit on active versions, with real child
/// processes holding the file where another process matters.
final class FileMaintenanceTests: XCTestCase {
    private var database: TempDatabase!
    private var path: String { database.path }

    override func setUp() {
        super.setUp()
        signal(SIGPIPE, SIG_IGN)
        database = makeTempDatabase("files")
    }

    private func configuration() -> Lattice.Configuration {
        database.configuration([MultiProcessItem.self, MultiProcessCounter.self])
    }

    private func open(_ change: (inout Lattice.Configuration) -> Void = { _ in }) throws -> Lattice {
        var config = configuration()
        change(&config)
        return try Lattice(configuration: config)
    }

    private func fileSize(_ file: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? -1
    }

    private func item(_ id: Int, size: Int) -> MultiProcessItem {
        let item = MultiProcessItem()
        item.id = id
        item.payload = payload(id: id, size: size)
        item.checksum = checksum(item.payload)
        return item
    }

    /// Ids and checksums of every item, in key order.
    private func contents(_ lattice: Lattice) -> [Int: Int] {
        Dictionary(uniqueKeysWithValues: lattice.objects(MultiProcessItem.self).map { ($0.id, $0.checksum) })
    }

    /// 2,000 items of 1 kB, of which all but 100 are deleted again: most of the file is free pages.
    private func fillAndThin() throws -> [Int: Int] {
        let lattice = try open()
        try lattice.write { for id in 0..<2_000 { try lattice.add(item(id, size: 1_000)) } }
        try lattice.write { try lattice.delete(lattice.objects(MultiProcessItem.self).filter("id >= 100")) }
        return contents(lattice)
    }

    // MARK: writeCopy

    /// Copies taken while a thread of this process and a child process keep committing each hold one
    /// whole commit: the counter equals the number of items, as in every commit.
    func testWriteCopyUnderConcurrentWritersIsConsistent() throws {
        let lattice = try open()
        try lattice.write { try lattice.add(MultiProcessCounter()) }
        let child = try Helper(["hammer", path, "1", "300"])
        XCTAssertEqual(try child.readLine(), "ready")
        child.send("go")
        let config = configuration()
        let writer = Thread {
            guard let other = try? Lattice(configuration: config) else { return }
            for i in 0..<300 {
                try? other.write {
                    guard let counter = other.object(ofType: MultiProcessCounter.self, forPrimaryKey: 0) else { return }
                    counter.value += 1
                    let row = MultiProcessItem()
                    row.id = 2_000_000 + i
                    row.sequence = counter.value
                    try other.add(row)
                }
            }
        }
        writer.start()
        var copies: [URL] = []
        defer { for url in copies { try? FileManager.default.removeItem(at: url) } }
        for n in 0..<8 {
            let url = URL(fileURLWithPath: path + ".copy\(n)")
            try lattice.writeCopy(toFile: url)
            copies.append(url)
        }
        XCTAssertEqual(try child.readLine(), "done")
        try child.waitForSuccess()
        while !writer.isFinished { usleep(10_000) }

        for url in copies {
            var config = configuration()
            config.fileURL = url
            let copy = try Lattice(configuration: config)
            let counter = try XCTUnwrap(copy.object(ofType: MultiProcessCounter.self, forPrimaryKey: 0))
            XCTAssertEqual(counter.value, copy.objects(MultiProcessItem.self).count, "\(url.lastPathComponent) holds one whole commit")
        }
        lattice.refresh()
        XCTAssertEqual(lattice.objects(MultiProcessItem.self).count, 600)
        // An existing file is never overwritten.
        let error = latticeError(try lattice.writeCopy(toFile: copies[0]))
        guard case let .storage(_, code, _)? = error else { return XCTFail("expected a storage error, got \(String(describing: error))") }
        XCTAssertEqual(code, EEXIST)
    }

    /// A copy leaves the free pages behind: it is smaller and holds the same objects.
    func testWriteCopyIsCompacted() throws {
        let expected = try fillAndThin()
        let lattice = try open()
        let url = URL(fileURLWithPath: path + ".compact-copy")
        defer { try? FileManager.default.removeItem(at: url); try? FileManager.default.removeItem(atPath: url.path + "-lock") }
        try lattice.writeCopy(toFile: url)
        XCTAssertLessThan(fileSize(url.path), fileSize(path) / 4)
        // Written under another name and linked into place whole: nothing else is left beside it.
        let directory = url.deletingLastPathComponent().path
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix(url.lastPathComponent + ".partial") }
        XCTAssertEqual(leftovers, [])
        var config = configuration()
        config.fileURL = url
        XCTAssertEqual(contents(try Lattice(configuration: config)), expected)
    }

    // MARK: Compaction on launch

    /// While a child process has the file open, opening with `shouldCompactOnLaunch` leaves it alone
    /// (the closure is not even asked); once the child is gone, the file shrinks and keeps its data.
    func testCompactionWaitsForOtherProcesses() throws {
        let expected = try fillAndThin()
        let before = fileSize(path)
        let asked = Mutex<[(Int, Int)]>([])
        let compact: @Sendable (Int, Int) -> Bool = { total, used in
            asked.withLock { $0.append((total, used)) }
            return total > 2 * used
        }

        let child = try Helper(["hold", path])
        XCTAssertEqual(try child.readLine(), "holding 100")
        do {
            let lattice = try open { $0.shouldCompactOnLaunch = compact }
            XCTAssertEqual(contents(lattice), expected)
        }
        XCTAssertEqual(asked.withLock { $0.count }, 0, "not asked while another process has the file open")
        XCTAssertEqual(fileSize(path), before)
        child.closeInput()
        try child.waitForSuccess()

        // Not the first open in this process: not asked either.
        do {
            let first = try open()
            let second = try open { $0.shouldCompactOnLaunch = compact }
            XCTAssertEqual(contents(second), contents(first))
        }
        XCTAssertEqual(asked.withLock { $0.count }, 0, "not asked while this process has the file open")

        let lattice = try open { $0.shouldCompactOnLaunch = compact }
        let calls = asked.withLock { $0 }
        XCTAssertEqual(calls.count, 1)
        XCTAssertEqual(calls.first?.0, before)
        XCTAssertLessThan(calls.first?.1 ?? .max, before / 4)
        XCTAssertLessThan(fileSize(path), before / 4)
        XCTAssertEqual(contents(lattice), expected)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + ".compacting"))
        // A child process reads the compacted file.
        let verify = try Helper(["verify", path])
        XCTAssertEqual(try verify.readLine(), "count 100 sum \(expected.values.reduce(0, &+))")
        try verify.waitForSuccess()
    }

    /// A child compacting over and over is killed at arbitrary moments: the file always opens whole,
    /// with the same data (a compaction's leftover copy is removed by the next one).
    func testKilledCompactionLeavesAWholeFile() throws {
        let expected = try fillAndThin()
        for round in 0..<6 {
            let child = try Helper(["compact-loop", path])
            XCTAssertEqual(try child.readLine(), "compacting")
            usleep(UInt32(round * 7_000))
            try child.kill()
            let lattice = try open()
            XCTAssertEqual(contents(lattice), expected, "after kill \(round)")
        }
        let lattice = try open()
        try lattice.write { try lattice.add(item(5_000, size: 10)) }
        XCTAssertEqual(contents(lattice).count, 101)
    }

    // MARK: Deleting files

    func testDeleteFilesRemovesSideFilesAndRefusesWhileOpenElsewhere() throws {
        _ = try fillAndThin()
        // An earlier version's notification pipe, a compaction's leftover, and the pipe directory with a
        // pipe a killed process left in it.
        for side in [path + ".note", path + ".compacting"] {
            XCTAssertTrue(FileManager.default.createFile(atPath: side, contents: Data([1])))
        }
        XCTAssertEqual(mkdir(path + ".notes", 0o777), 0)
        XCTAssertEqual(mkfifo(path + ".notes/1-1", 0o666), 0)
        let child = try Helper(["hold", path])
        XCTAssertEqual(try child.readLine(), "holding 100")
        let error = latticeError(try Lattice.deleteFiles(for: configuration()))
        guard case let .storage(_, code, message)? = error else { return XCTFail("expected a storage error, got \(String(describing: error))") }
        XCTAssertEqual(code, EBUSY)
        XCTAssertTrue(message.contains("another process"), message)
        XCTAssertTrue(FileManager.default.fileExists(atPath: path))
        child.closeInput()
        try child.waitForSuccess()

        do {
            let lattice = try open()
            XCTAssertEqual(lattice.objects(MultiProcessItem.self).count, 100)
            XCTAssertNotNil(latticeError(try Lattice.deleteFiles(for: configuration())), "open in this process")
        }
        XCTAssertTrue(try Lattice.deleteFiles(for: configuration()))
        for file in [path, path + "-lock", path + ".note", path + ".notes", path + ".compacting"] {
            XCTAssertFalse(FileManager.default.fileExists(atPath: file), file)
        }
        XCTAssertFalse(try Lattice.deleteFiles(for: configuration()))
    }

    // MARK: Active versions

    /// Versions pinned by handles of this process and by another process count; releasing a pin lets
    /// writes go on.
    func testMaximumNumberOfActiveVersions() throws {
        let writer = try open { $0.maximumNumberOfActiveVersions = 2 }
        try writer.write { try writer.add(item(1, size: 10)) }
        let reader1 = try open()
        XCTAssertEqual(reader1.objects(MultiProcessItem.self).count, 1)  // pins version A
        try writer.write { try writer.add(item(2, size: 10)) }            // A pinned + the new one: 2
        let reader2 = try open()
        XCTAssertEqual(reader2.objects(MultiProcessItem.self).count, 2)  // pins version B
        let error = latticeError(try writer.write { try writer.add(item(3, size: 10)) })
        guard case let .tooManyActiveVersions(_, pinned, limit)? = error else {
            return XCTFail("expected tooManyActiveVersions, got \(String(describing: error))")
        }
        XCTAssertEqual(pinned, 2)
        XCTAssertEqual(limit, 2)
        XCTAssertFalse(writer.isInWriteTransaction)
        reader1.invalidate()
        try writer.write { try writer.add(item(3, size: 10)) }
        reader2.invalidate()

        // A child's snapshot counts too.
        let child = try Helper(["hold", path])
        XCTAssertEqual(try child.readLine(), "holding 3")
        try writer.write { try writer.add(item(4, size: 10)) }
        XCTAssertEqual(reader1.objects(MultiProcessItem.self).count, 4)  // pins the latest
        XCTAssertNotNil(latticeError(try writer.write { try writer.add(item(5, size: 10)) }))
        child.closeInput()
        try child.waitForSuccess()
        try writer.write { try writer.add(item(5, size: 10)) }
    }

    /// A forgotten snapshot counts every version after it (as Realm counts them), not one: commits on
    /// top of it run into the limit.
    func testAForgottenSnapshotCountsEveryLaterVersion() throws {
        let writer = try open { $0.maximumNumberOfActiveVersions = 3 }
        try writer.write { try writer.add(item(1, size: 10)) }
        let forgotten = try open()
        XCTAssertEqual(forgotten.objects(MultiProcessItem.self).count, 1)
        try writer.write { try writer.add(item(2, size: 10)) }
        try writer.write { try writer.add(item(3, size: 10)) }
        guard case let .tooManyActiveVersions(_, pinned, 3)? = latticeError(try writer.write { try writer.add(item(4, size: 10)) }) else {
            return XCTFail("the third commit on top of the snapshot is refused")
        }
        XCTAssertEqual(pinned, 3)
        forgotten.invalidate()
        try writer.write { try writer.add(item(4, size: 10)) }
    }

    /// The reader slots of a process killed while this one runs are freed by this one's next write (at
    /// most one check a second) and before the version limit is checked: they pin nothing any more.
    func testSlotsOfProcessesKilledMeanwhileAreFreedByARunningWriter() throws {
        let writer = try open { $0.maximumNumberOfActiveVersions = 2 }
        try writer.write { try writer.add(item(1, size: 10)) }
        let child = try Helper(["hold", path])
        XCTAssertEqual(try child.readLine(), "holding 1")
        let pid = child.pid
        XCTAssertTrue(try writer.env.readerSlots().contains { $0.pid == pid && $0.snapshot != nil })
        try child.kill()
        XCTAssertTrue(try writer.env.readerSlots().contains { $0.pid == pid }, "the dead process's slot is still there")
        // Without the check these would be refused: the dead snapshot would keep three versions alive.
        for id in 2...4 { try writer.write { try writer.add(item(id, size: 10)) } }
        XCTAssertFalse(try writer.env.readerSlots().contains { $0.pid == pid })
        // Without a version limit, the write's own check (at most every 100 ms) frees them.
        let plain = try open()
        let second = try Helper(["hold", path])
        XCTAssertEqual(try second.readLine(), "holding 4")
        let secondPid = second.pid
        try second.kill()
        plain.env.readerCheck.withLock { $0 = 0 }  // the check is due, as 100 ms after the last
        try plain.write { try plain.add(item(5, size: 10)) }
        XCTAssertFalse(try plain.env.readerSlots().contains { $0.pid == secondPid })
    }

    /// A held snapshot keeps every page it sees: rewriting the same objects grows the file. Once the
    /// pin is released, freed pages are reused and the file stops growing.
    func testFileStopsGrowingOnceThePinIsReleased() throws {
        let lattice = try open { $0.initialMapSize = 64 << 20 }
        try lattice.write { for id in 0..<200 { try lattice.add(item(id, size: 1_000)) } }
        func rewrite(_ round: Int) throws {
            try lattice.write {
                for object in lattice.objects(MultiProcessItem.self) { object.sequence = round }
            }
        }
        let pin = try open()
        XCTAssertEqual(pin.objects(MultiProcessItem.self).count, 200)
        let start = fileSize(path)
        for round in 0..<20 { try rewrite(round) }
        let pinned = fileSize(path)
        XCTAssertGreaterThan(pinned, start + 10 * 200 * 1_000, "every rewrite needs new pages while the old ones are pinned")

        pin.invalidate()
        for round in 0..<5 { try rewrite(round) }
        let settled = fileSize(path)
        for round in 0..<40 { try rewrite(round) }
        XCTAssertEqual(fileSize(path), settled, "no growth once nothing pins old versions")
        XCTAssertEqual(pin.objects(MultiProcessItem.self).first?.sequence, 39)
    }
}
