import CLMDB
import Foundation
import XCTest
@testable import Lattice
#if canImport(Glibc)
import Glibc
#endif

// The same model as Sources/LatticeTestHelper/main.swift: child processes and these tests open the
// same file, so names, properties and their order must match.
final class MultiProcessItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var writer = 0
    @Persisted var sequence = 0
    @Persisted var payload = ""
    @Persisted var checksum = 0
}

final class MultiProcessCounter: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var value = 0
}

/// Multi-process behaviour with real child processes running `LatticeTestHelper`.
/// Children report progress as lines on stdout; every wait has a timeout that kills the child and
/// fails the test instead of hanging.
final class MultiProcessTests: XCTestCase {
    private var database: TempDatabase!
    private var path: String { database.path }

    override func setUp() {
        super.setUp()
        // A child that dies early must not take the test process down when we write to its stdin.
        signal(SIGPIPE, SIG_IGN)
        database = makeTempDatabase("multiprocess")
    }

    private func configuration(initialMapSize: Int = 8 << 20) -> Lattice.Configuration {
        database.configuration([MultiProcessItem.self, MultiProcessCounter.self], initialMapSize: initialMapSize)
    }

    private func open(initialMapSize: Int = 8 << 20) throws -> Lattice {
        try Lattice(configuration: configuration(initialMapSize: initialMapSize))
    }

    /// Adds items `ids` with payloads of `size` bytes in one transaction.
    private func addItems(_ lattice: Lattice, _ ids: Range<Int>, size: Int) throws {
        try lattice.write {
            for id in ids { try lattice.add(makeItem(id: id, size: size)) }
        }
    }

    /// Checks every item's payload and checksum; returns the count and the sum of checksums
    /// (the numbers `LatticeTestHelper verify` prints).
    private func verifyItems(_ lattice: Lattice, file: StaticString = #filePath, line: UInt = #line) -> (count: Int, sum: Int) {
        var count = 0
        var sum = 0
        for item in lattice.objects(MultiProcessItem.self) {
            XCTAssertEqual(item.checksum, checksum(item.payload), "checksum of item \(item.id)", file: file, line: line)
            XCTAssertEqual(item.payload, payload(id: item.id, size: item.payload.utf8.count), "payload of item \(item.id)",
                           file: file, line: line)
            count += 1
            sum = sum &+ item.checksum
        }
        return (count, sum)
    }

    // MARK: Scenarios

    /// A child commits while this process holds a snapshot: the old state stays visible until `refresh()`.
    func testChildCommitIsInvisibleUntilRefresh() throws {
        try addItems(open(), 0..<10, size: 100)

        let lattice = try open()
        let items = lattice.objects(MultiProcessItem.self)
        XCTAssertEqual(items.count, 10)
        let first = try XCTUnwrap(lattice.object(ofType: MultiProcessItem.self, forPrimaryKey: 0))
        XCTAssertEqual(first.payload.utf8.count, 100)

        // The child overwrites items 0..<10 with 300-byte payloads and adds 10..<35.
        let child = try Helper(["add", path, "0", "35", "300"])
        XCTAssertEqual(try child.readLine(), "done")
        try child.waitForSuccess()

        XCTAssertEqual(items.count, 10, "the snapshot must not move without refresh()")
        XCTAssertEqual(lattice.objects(MultiProcessItem.self).count, 10)
        XCTAssertNil(lattice.object(ofType: MultiProcessItem.self, forPrimaryKey: 20))
        XCTAssertEqual(first.payload.utf8.count, 100)

        XCTAssertTrue(lattice.refresh())
        XCTAssertEqual(items.count, 35)
        XCTAssertEqual(first.payload.utf8.count, 300)
        XCTAssertEqual(lattice.object(ofType: MultiProcessItem.self, forPrimaryKey: 20)?.payload, payload(id: 20, size: 300))
        XCTAssertEqual(verifyItems(lattice).count, 35)
        XCTAssertFalse(lattice.refresh(), "nothing was committed since the last refresh")
    }

    /// Where the address space is limited below the default 64 GiB map, opening reserves a smaller map
    /// instead of failing.
    func testOpeningWithLimitedAddressSpaceReservesASmallerMap() throws {
        let child = try Helper(["open-limited", path])
        XCTAssertEqual(try child.readLine(), "count 1")
        try child.waitForSuccess()
    }

    /// Opening a file whose schema is stored, read-write, never waits for another process's write; its
    /// own write waits until that write ends.
    func testOpeningDoesNotWaitForAnotherProcesssWrite() throws {
        try addItems(open(), 0..<3, size: 10)
        let writer = try Helper(["hold-write", path])
        XCTAssertEqual(try writer.readLine(), "writing")
        let lattice = try open()  // would block here if opening took the writer lock
        XCTAssertEqual(lattice.objects(MultiProcessItem.self).count, 3)
        XCTAssertNil(lattice.object(ofType: MultiProcessItem.self, forPrimaryKey: 999_999), "the other write is not committed")
        writer.closeInput()
        try writer.waitForSuccess()
        try lattice.write { try lattice.add(makeItem(id: 4, size: 10)) }
        XCTAssertEqual(lattice.objects(MultiProcessItem.self).count, 4)
    }

    /// A failed nested `beginWrite` through another handle on the same thread, and opening a handle in
    /// the middle of a write, must not release the cross-process writer lock the outer write holds.
    func testNestedFailureKeepsTheOuterWritersLock() throws {
        let outer = try open()
        let inner = try open()
        func probe() throws -> String {
            let child = try Helper(["probe-writer", path])
            defer { try? child.waitForSuccess() }
            return try child.readLine()
        }
        XCTAssertEqual(try probe(), "free")
        try outer.beginWrite()
        try outer.add(makeItem(id: 1, size: 10))
        XCTAssertEqual(try probe(), "busy")
        assertLatticeError(try inner.beginWrite(), .alreadyInWriteTransaction)
        XCTAssertEqual(try probe(), "busy", "the failed nested begin released the outer write's lock")
        let opened = try open()  // opening reads the stored schema: no lock needed, none released
        XCTAssertEqual(opened.objects(MultiProcessItem.self).count, 0)
        XCTAssertEqual(try probe(), "busy", "opening a handle inside the write released its lock")
        try outer.commitWrite()
        XCTAssertEqual(try probe(), "free")
        // A child can now commit, and this process sees it.
        let child = try Helper(["add", path, "10", "5", "20"])
        XCTAssertEqual(try child.readLine(), "done")
        try child.waitForSuccess()
        XCTAssertTrue(inner.refresh())
        XCTAssertEqual(inner.objects(MultiProcessItem.self).count, 6)
    }

    /// Objects read in place stay whole while another process rewrites every record many times: the
    /// pages this process's snapshot reads are not reused until it ends, and after `refresh()` the same
    /// objects read the new records.
    func testObjectsReadInPlaceSurviveAnotherProcessRewritingEverything() throws {
        let lattice = try open()
        try addItems(lattice, 0..<200, size: 100)
        var kept = Array(lattice.objects(MultiProcessItem.self))
        kept += (0..<200).compactMap { lattice.object(ofType: MultiProcessItem.self, forPrimaryKey: $0) }
        XCTAssertEqual(kept.count, 400)
        // Twenty commits rewrite the 200 items with 300-byte payloads, freeing the pages this snapshot reads.
        let child = try Helper(["add", path, "0", "200", "300", "\(8 << 20)", "20"])
        XCTAssertEqual(try child.readLine(), "done")
        try child.waitForSuccess()
        for item in kept {
            XCTAssertEqual(item.payload, payload(id: item.id, size: 100), "item \(item.id) before refresh")
            XCTAssertEqual(item.checksum, checksum(item.payload))
        }
        XCTAssertTrue(lattice.refresh())
        for item in kept {
            XCTAssertEqual(item.payload, payload(id: item.id, size: 300), "item \(item.id) after refresh")
            XCTAssertEqual(item.checksum, checksum(item.payload))
        }
    }

    /// Four processes commit 200 transactions each at the same time; no commit is lost and each
    /// increment saw the one before it.
    func testConcurrentWritersLoseNoCommit() throws {
        let writers = 4, transactions = 200
        do {
            let lattice = try open()
            try lattice.write { try lattice.add(MultiProcessCounter()) }
        }

        let children = try (1...writers).map { try Helper(["hammer", path, "\($0)", "\(transactions)"]) }
        for child in children { XCTAssertEqual(try child.readLine(), "ready") }
        for child in children { child.send("go") }  // all start together
        for child in children {
            XCTAssertEqual(try child.readLine(), "done")
            try child.waitForSuccess()
        }

        let lattice = try open()
        let total = writers * transactions
        XCTAssertEqual(lattice.object(ofType: MultiProcessCounter.self, forPrimaryKey: 0)?.value, total)
        let items = lattice.objects(MultiProcessItem.self)
        XCTAssertEqual(items.count, total)
        // Every transaction stamped its row with the counter value it wrote: all of 1...total once.
        XCTAssertEqual(items.map(\.sequence).sorted(), Array(1...total))
        for writer in 1...writers {
            let rows = items.filter { $0.writer == writer }
            XCTAssertEqual(rows.map(\.id).sorted(), (0..<transactions).map { writer * 1_000_000 + $0 })
            // Each writer's own commits are in order.
            let sequences = rows.sorted { $0.id < $1.id }.map(\.sequence)
            XCTAssertEqual(sequences, sequences.sorted(), "writer \(writer)")
        }
    }

    /// A writer killed with SIGKILL in the middle of a large transaction: the file opens, every earlier
    /// commit is intact, nothing of the killed transaction is visible, and the writer lock is free.
    func testWriterKilledMidTransactionLosesNothingCommitted() throws {
        let expected: (count: Int, sum: Int)
        do {
            let lattice = try open()
            for batch in 0..<3 { try addItems(lattice, batch * 100..<(batch + 1) * 100, size: 500) }
            let before = verifyItems(lattice)
            XCTAssertEqual(before.count, 300)

            // This process keeps the environment open, so the lock file (and the LMDB writer mutex the
            // child dies holding) is not re-initialised: the next writer must recover it.
            let child = try Helper(["crash", path])
            XCTAssertEqual(try child.readLine(), "writing")
            try child.kill()
            XCTAssertEqual(child.terminationReason, .uncaughtSignal)
            XCTAssertEqual(child.terminationStatus, SIGKILL)

            XCTAssertFalse(lattice.refresh(), "the killed transaction must not have committed")
            let after = verifyItems(lattice)
            XCTAssertEqual(after.count, before.count)
            XCTAssertEqual(after.sum, before.sum)
            XCTAssertEqual(lattice.objects(MultiProcessItem.self).filter { $0.id >= 1_000_000 }.count, 0)
            XCTAssertNotNil(lattice.object(ofType: MultiProcessItem.self, forPrimaryKey: 0), "deleted by the killed transaction")

            // The writer lock was released by the child's death: another process can write (with a
            // timeout, so a lock that stayed held fails the test instead of hanging it) ...
            let writer = try Helper(["add", path, "300", "10", "500"])
            XCTAssertEqual(try writer.readLine(), "done")
            try writer.waitForSuccess()
            XCTAssertTrue(lattice.refresh())
            XCTAssertEqual(lattice.objects(MultiProcessItem.self).count, 310)
            // ... and so can this one.
            try addItems(lattice, 310..<311, size: 500)
            expected = verifyItems(lattice)
            XCTAssertEqual(expected.count, 311)
        }

        // A fresh process, and a fresh environment in this one, read the same state.
        XCTAssertFalse(try Environment.isOpen(path: Lattice.storagePath(configuration())))
        let verifier = try Helper(["verify", path])
        XCTAssertEqual(try verifier.readLine(), "count \(expected.count) sum \(expected.sum)")
        try verifier.waitForSuccess()
        let reopened = try open()
        let fresh = verifyItems(reopened)
        XCTAssertEqual(fresh.count, expected.count)
        XCTAssertEqual(fresh.sum, expected.sum)
    }

    /// A reader killed with SIGKILL leaves a stale slot that would pin the pages of its snapshot; the
    /// next write of a process that has the file open (its check runs at most every 100 ms) frees the
    /// slot, and the pages are reused.
    func testKilledReaderSlotIsReclaimed() throws {
        try addItems(open(), 0..<100, size: 200)
        let child = try Helper(["hold", path])
        XCTAssertEqual(try child.readLine(), "holding 100")
        let lattice = try open()
        let env = lattice.env
        let held = try env.readerSlots().filter { $0.pid == child.pid }
        XCTAssertEqual(held.count, 1, "the child holds one snapshot")
        XCTAssertNotNil(held.first?.snapshot)

        try child.kill()
        XCTAssertEqual(try env.readerSlots().filter { $0.pid == child.pid }, held, "the dead reader's slot is stale")

        // The writes free it (the check is due: as if 100 ms had passed since this process last checked),
        // and the pages freed after its snapshot are reused: the file does not grow with the commits.
        env.readerCheck.withLock { $0 = 0 }
        _ = try pagesUsed(by: 20, rewritesIn: lattice)
        XCTAssertEqual(try env.readerSlots().filter { $0.pid == child.pid }, [])
        XCTAssertEqual(try env.clearStaleReaders(), 0)
        let freedGrowth = try pagesUsed(by: 20, rewritesIn: lattice)
        XCTAssertLessThanOrEqual(freedGrowth, 2)
        XCTAssertEqual(lattice.objects(MultiProcessItem.self).count, 100)
    }

    /// Opening the file frees the slots of dead readers (`mdb_reader_check` at open).
    func testOpeningFileFreesDeadReaderSlots() throws {
        try addItems(open(), 0..<100, size: 200)
        // A live reader keeps the lock file in use, so it is not re-initialised when this process
        // reopens the file: only the check at open can then free the dead reader's slot.
        let keeper = try Helper(["hold", path])
        XCTAssertEqual(try keeper.readLine(), "holding 100")
        let victim = try Helper(["hold", path])
        XCTAssertEqual(try victim.readLine(), "holding 100")
        do {
            let lattice = try open()
            XCTAssertEqual(try lattice.env.readerSlots().filter { $0.pid == victim.pid }.count, 1)
            try victim.kill()
            XCTAssertEqual(try lattice.env.readerSlots().filter { $0.pid == victim.pid }.count, 1, "stale until checked")
        }
        XCTAssertFalse(try Environment.isOpen(path: Lattice.storagePath(configuration())), "this process closed the file")

        let reopened = try open()
        let slots = try reopened.env.readerSlots()
        XCTAssertEqual(slots.filter { $0.pid == victim.pid }, [], "opening the file freed the dead reader's slot")
        XCTAssertEqual(slots.filter { $0.pid == keeper.pid }.count, 1, "a live reader keeps its slot")
        XCTAssertEqual(try reopened.env.clearStaleReaders(), 0)
        XCTAssertEqual(reopened.objects(MultiProcessItem.self).count, 100)
        keeper.closeInput()
        try keeper.waitForSuccess()
    }

    /// Rewrites item 0 `count` times, one commit each; returns how many pages the file grew by.
    private func pagesUsed(by count: Int, rewritesIn lattice: Lattice) throws -> Int {
        var stat = MDB_stat()
        mdb_env_stat(lattice.env.handle, &stat)
        let pageSize = Int(stat.ms_psize)
        let start = lattice.env.usedBytes
        for n in 0..<count {
            try lattice.write {
                let item = try XCTUnwrap(lattice.object(ofType: MultiProcessItem.self, forPrimaryKey: 0))
                item.sequence = n
            }
        }
        return (lattice.env.usedBytes - start) / pageSize
    }

    /// Another process grows the map far beyond this process's: a refresh adopts the new size, reads
    /// everything, and this process can write afterwards.
    func testMapGrownByAnotherProcessIsAdopted() throws {
        let small = 256 << 10
        let lattice = try open(initialMapSize: small)
        try addItems(lattice, 0..<10, size: 100)
        XCTAssertEqual(lattice.objects(MultiProcessItem.self).count, 10)
        XCTAssertEqual(lattice.env.mapSize, small)

        // About 10 MB in ten commits.
        let child = try Helper(["add", path, "10", "2500", "4000", "\(small)", "10"])
        XCTAssertEqual(try child.readLine(), "done")
        try child.waitForSuccess()

        XCTAssertEqual(lattice.objects(MultiProcessItem.self).count, 10)
        XCTAssertTrue(lattice.refresh())
        XCTAssertGreaterThan(lattice.env.mapSize, 10 << 20, "the grown map size is adopted")
        XCTAssertEqual(verifyItems(lattice).count, 2510)
        XCTAssertEqual(lattice.object(ofType: MultiProcessItem.self, forPrimaryKey: 2509)?.payload, payload(id: 2509, size: 4000))

        try addItems(lattice, 2510..<3010, size: 4000)
        XCTAssertEqual(lattice.objects(MultiProcessItem.self).count, 3010)

        // Grown again while this process holds a snapshot; this time it writes without refreshing,
        // so beginning the write transaction finds the data beyond its map and grows the map first.
        let mapSize = lattice.env.mapSize
        let grower = try Helper(["add", path, "3010", "1500", "4000", "\(small)", "3"])
        XCTAssertEqual(try grower.readLine(), "done")
        try grower.waitForSuccess()
        XCTAssertEqual(lattice.objects(MultiProcessItem.self).count, 3010)
        try addItems(lattice, 4510..<4520, size: 4000)
        XCTAssertGreaterThan(lattice.env.mapSize, mapSize, "the grown map size is adopted")
        XCTAssertEqual(lattice.objects(MultiProcessItem.self).count, 4520)

        let expected = verifyItems(lattice)
        XCTAssertEqual(expected.count, 4520)
        let verifier = try Helper(["verify", path])
        XCTAssertEqual(try verifier.readLine(), "count 4520 sum \(expected.sum)")
        try verifier.waitForSuccess()
    }
}

extension MultiProcessTests {
    /// Another process left more data than this process maps: beginning a write grows the map before
    /// anything is written (the transaction then never meets a full map: the map does not change until
    /// the commit), and the file stays readable and writable by other processes and after reopening.
    func testWriteGrowsTheMapAheadWhenTheDataFillsMoreThanHalfOfIt() throws {
        // About 3 MB, written by a child with a map much larger than the data.
        let writer = try Helper(["add", path, "0", "600", "5000", "\(1 << 30)", "3"])
        XCTAssertEqual(try writer.readLine(), "done")
        try writer.waitForSuccess()

        let sum: Int
        let envPath: String
        do {
            // LMDB rounds a map smaller than the data up to the data's size: the map is full.
            let lattice = try open(initialMapSize: 64 << 10)
            envPath = lattice.env.path
            XCTAssertGreaterThan(lattice.env.usedBytes, lattice.env.mapSize / 2)
            try lattice.beginWrite()
            let grown = lattice.env.mapSize
            XCTAssertGreaterThanOrEqual(grown, 2 * lattice.env.usedBytes, "the map grew before the first write")
            for id in 600..<1000 { try lattice.add(makeItem(id: id, size: 5000)) }  // about 2 MB more
            XCTAssertEqual(lattice.env.mapSize, grown, "no growth inside the transaction")
            try lattice.commitWrite()
            XCTAssertEqual(lattice.env.mapSize, grown)
            let expected = verifyItems(lattice)
            XCTAssertEqual(expected.count, 1000)
            sum = expected.sum
        }

        // Another process reads it all and writes again (adopting or growing its own map as needed).
        let verifier = try Helper(["verify", path])
        XCTAssertEqual(try verifier.readLine(), "count 1000 sum \(sum)")
        try verifier.waitForSuccess()
        let more = try Helper(["add", path, "1000", "200", "5000", "\(64 << 10)", "2"])
        XCTAssertEqual(try more.readLine(), "done")
        try more.waitForSuccess()

        // Reopened from disk (the environment closed with the last handle above).
        XCTAssertFalse(Environment.isOpen(path: envPath))
        let reopened = try open(initialMapSize: 64 << 10)
        XCTAssertEqual(verifyItems(reopened).count, 1200)
        XCTAssertEqual(reopened.object(ofType: MultiProcessItem.self, forPrimaryKey: 1199)?.payload, payload(id: 1199, size: 5000))
    }
}

// MARK: - Shared with the helper

/// The payload of item `id`: `size` bytes that depend on the id (same as the helper's).
func payload(id: Int, size: Int) -> String {
    var state = UInt64(truncatingIfNeeded: id)
    var unit = [UInt8](repeating: 0, count: 61)
    for i in unit.indices {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        unit[i] = UInt8(97 + (state >> 33) % 26)
    }
    // Repeating a 61-byte unit keeps this fast in debug builds; the unit depends on the id.
    return String(String(repeating: String(decoding: unit, as: UTF8.self), count: size / unit.count + 1).prefix(size))
}

/// An FNV-1a-style hash of the payload's bytes, eight at a time (same as the helper's).
func checksum(_ text: String) -> Int {
    var text = text
    return text.withUTF8 { utf8 in
        let bytes = UnsafeRawBufferPointer(utf8)
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        var at = 0
        while at + 8 <= bytes.count {  // eight bytes a step: fast in debug builds
            hash = (hash ^ bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self)) &* 0x100_0000_01b3
            at += 8
        }
        while at < bytes.count {
            hash = (hash ^ UInt64(bytes[at])) &* 0x100_0000_01b3
            at += 1
        }
        return Int(truncatingIfNeeded: hash)
    }
}

func makeItem(id: Int, size: Int) -> MultiProcessItem {
    let item = MultiProcessItem()
    item.id = id
    item.payload = payload(id: id, size: size)
    item.checksum = checksum(item.payload)
    return item
}

// MARK: - Child processes

/// A running `LatticeTestHelper`: lines are sent to its stdin and read from its stdout; its stderr
/// goes to the test log. Every wait times out, killing the child and throwing.
final class Helper {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private static let timeout: TimeInterval = 60

    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let exited = DispatchSemaphore(value: 0)
    private var buffer: [UInt8] = []
    private var started = false
    private var reaped = false
    private let name: String

    var pid: Int32 { process.processIdentifier }
    var terminationStatus: Int32 { process.terminationStatus }
    var terminationReason: Process.TerminationReason { process.terminationReason }

    init(_ arguments: [String]) throws {
        name = "LatticeTestHelper \(arguments.first ?? "")"
        process.executableURL = try Helper.executable()
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        let exited = self.exited
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        started = true
    }

    deinit {
        if started && !reaped {
            signalChild(SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Sends `signal` to the child (never to pid 0, which would mean this whole process group).
    private func signalChild(_ signal: Int32) {
        if pid > 0 { Glibc.kill(pid, signal) }
    }

    /// The helper executable, built next to the test bundle.
    private static func executable() throws -> URL {
        var directories = [Bundle(for: Helper.self).bundleURL.deletingLastPathComponent(), Bundle.main.bundleURL]
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            directories.append(URL(fileURLWithPath: exe).deletingLastPathComponent())
        }
        let candidates = directories.map { $0.appendingPathComponent("LatticeTestHelper") }
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw Failure(description: "LatticeTestHelper is not built; looked at \(candidates.map(\.path)). "
                + "It is a dependency of the test target: run the tests with `swift test`.")
        }
        return found
    }

    /// The next line the child prints (without the newline).
    func readLine(timeout: TimeInterval = Helper.timeout) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        let fd = output.fileHandleForReading.fileDescriptor
        while true {
            if let end = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<end], as: UTF8.self)
                buffer.removeSubrange(...end)
                return line
            }
            let remaining = deadline.timeIntervalSinceNow
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = remaining > 0 ? poll(&poller, 1, Int32(remaining * 1000) + 1) : 0
            if ready < 0 && errno == EINTR { continue }
            if ready <= 0 {
                try? kill()
                throw Failure(description: "\(name) printed no line within \(Int(timeout)) s (got '\(String(decoding: buffer, as: UTF8.self))'); killed")
            }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = read(fd, &chunk, chunk.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                try waitForExit()
                throw Failure(description: "\(name) exited (\(process.terminationReason == .exit ? "status" : "signal") "
                    + "\(process.terminationStatus)) before printing a line; see its stderr above")
            }
            buffer.append(contentsOf: chunk[..<n])
        }
    }

    /// Sends one line to the child's stdin.
    func send(_ line: String) {
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    /// Closes the child's stdin (a `hold` child then exits).
    func closeInput() {
        try? input.fileHandleForWriting.close()
    }

    /// Waits for the child to exit (killing it after the timeout) and reaps it.
    func waitForExit(timeout: TimeInterval = Helper.timeout) throws {
        if reaped { return }
        if exited.wait(timeout: .now() + timeout) == .timedOut {
            signalChild(SIGKILL)
            process.waitUntilExit()
            reaped = true
            throw Failure(description: "\(name) did not exit within \(Int(timeout)) s; killed")
        }
        process.waitUntilExit()
        reaped = true
    }

    /// Waits for the child to exit and requires status 0.
    func waitForSuccess() throws {
        try waitForExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw Failure(description: "\(name) failed (\(process.terminationReason == .exit ? "status" : "signal") "
                + "\(process.terminationStatus)); see its stderr above")
        }
    }

    /// Kills the child with SIGKILL and reaps it.
    func kill() throws {
        if !reaped { signalChild(SIGKILL) }
        try waitForExit()
    }
}
