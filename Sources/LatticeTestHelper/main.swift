// The child process of Tests/LatticeTests/MultiProcessTests.swift. It uses only Lattice's public API.
//
//     LatticeTestHelper <command> <file> [arguments]
//
// Commands (each prints the lines the test waits for, flushed at once; errors go to stderr, exit 1):
//   add <file> <first id> <count> <payload bytes> [initial map size] [transactions]
//       Adds (or overwrites) items first..<first+count in `transactions` equal commits; prints "done".
//   hammer <file> <writer> <transactions>
//       Prints "ready", waits for a line on stdin, then commits `transactions` times: increments
//       counter 0 and adds item writer*1_000_000+i stamped with the new counter value; prints "done".
//   crash <file>
//       In one write transaction that is never committed: deletes items 0..<50, rewrites 50..<100,
//       adds items from 1_000_000 on; prints "writing" after 4,500 adds (past the initial map size),
//       keeps adding, then blocks.
//   hold <file>
//       Opens a snapshot (reads the item count), prints "holding <count>", blocks until stdin closes.
//   hold-write <file>
//       Begins a write transaction, adds item 999_999, prints "writing", and waits until stdin closes,
//       then rolls back.
//   open-limited <file>
//       Limits the process's address space to 8 GiB (less than the default map), then opens the file,
//       adds item 1 and prints "count <n>".
//   probe-writer <file>
//       Prints "busy" when another process holds the file's cross-process writer lock (the `flock` every
//       Lattice writer takes), "free" otherwise, without waiting.
//   compact-loop <file>
//       Opens and closes the file over and over with `shouldCompactOnLaunch` always true (so each open
//       compacts it); prints "compacting" after the first round. Runs until killed.
//   watch <file> <count> [dispatch]
//       Opens the file read-only, observes all items on the main run loop and prints "ready" after the
//       initial notification, then "update <count> <insertions>" per update; exits once <count> items exist.
//       With `dispatch`, the main thread runs `dispatchMain()` instead of its run loop, as an async `main`
//       does.
//   verify <file>
//       Checks every item's payload and checksum; prints "count <n> sum <sum of checksums>".
//   query <file> <predicate or @file holding it> [argument...]
//       Filters the query fixture (QueryRobustness.swift); prints "ok <ids>" and "plan <explain()>", or
//       "invalidQuery <message>". Arguments are named, as in `date:nan`, `tags:1`, `results:age > 2`.
//   query-fuzz <file> <seed> <count>
//       Runs `count` mutated predicates with random arguments; prints "fuzzed <count> ok <n> invalidQuery <n>
//       otherErrors <n>".
//   migrate-and-hang <file>
//       Opens the file with the version-1 migration models; the migration block changes every
//       `MigrationItem`, prints "migrating" after 500 of them, then blocks (the test kills it).
//   migrate-once <file>
//       Prints "ready", waits for a line, opens the file with the version-1 migration models (the block
//       creates one `MigrationLog`), prints "done <number of MigrationLog objects>".
//   schema-watch <file>
//       Opens the file with the schema stored in it, prints "ready", waits for a line, then tries a
//       write and prints "ok" or the error.
// The commands that open the multi-process items (add, verify, ...) use the encryption key given in
// hexadecimal in the environment variable LATTICE_TEST_KEY, when it is set.
//   damage-build, damage-read, damage-verify, open, fill, open-as-nobody: see Damage.swift.
import Foundation
import Lattice

// Keep in step with the copies in MultiProcessTests.swift (the stored schemas must match).
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

/// The payload of item `id`: `size` bytes that depend on the id.
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

/// An FNV-1a-style hash of the payload's bytes, eight at a time.
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

func item(id: Int, size: Int) -> MultiProcessItem {
    let item = MultiProcessItem()
    item.id = id
    item.payload = payload(id: id, size: size)
    item.checksum = checksum(item.payload)
    return item
}

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))  // unbuffered: the test waits for it
}

/// The version-1 models of the migration tests (version 0 is in MigrationProcessTests.swift).
enum MigrationV1 {
    final class MigrationItem: Object {
        @Persisted(primaryKey: true) var id = 0
        @Persisted var name = ""
        @Persisted var label = ""
    }

    final class MigrationLog: Object {
        @Persisted var note = ""
    }

    static func configuration(_ path: String, _ block: @escaping MigrationBlock) -> Lattice.Configuration {
        Lattice.Configuration(fileURL: URL(fileURLWithPath: path), schemaVersion: 1, migrationBlock: block,
                              objectTypes: [MigrationItem.self, MigrationLog.self], initialMapSize: 8 << 20)
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("LatticeTestHelper: \(message)\n".utf8))
    exit(1)
}

func openLattice(_ path: String, initialMapSize: Int = 8 << 20) throws -> Lattice {
    try Lattice(configuration: .init(fileURL: URL(fileURLWithPath: path),
                                     objectTypes: [MultiProcessItem.self, MultiProcessCounter.self],
                                     encryptionKey: environmentKey(),
                                     initialMapSize: initialMapSize))
}

/// The encryption key in `LATTICE_TEST_KEY` (hexadecimal), for the commands that take one; nil when unset.
func environmentKey() -> Data? {
    guard let hex = ProcessInfo.processInfo.environment["LATTICE_TEST_KEY"] else { return nil }
    var bytes: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) {
        guard let byte = UInt8(hex[index..<next], radix: 16) else { fail("LATTICE_TEST_KEY is not hexadecimal") }
        bytes.append(byte)
        index = next
    }
    return Data(bytes)
}

func integer(_ index: Int, default value: Int? = nil) -> Int {
    let arguments = CommandLine.arguments
    if index < arguments.count, let number = Int(arguments[index]) { return number }
    if let value { return value }
    fail("argument \(index) must be an integer (arguments: \(arguments.dropFirst()))")
}

func run() throws {
    let arguments = CommandLine.arguments
    guard arguments.count >= 3 else { fail("usage: LatticeTestHelper <command> <file> [arguments]") }
    let path = arguments[2]
    switch arguments[1] {
    case "add":
        let first = integer(3), count = integer(4), size = integer(5)
        let lattice = try openLattice(path, initialMapSize: integer(6, default: 8 << 20))
        let transactions = max(1, integer(7, default: 1))
        let perTransaction = (count + transactions - 1) / transactions
        for start in stride(from: first, to: first + count, by: perTransaction) {
            try lattice.write {
                for id in start..<min(start + perTransaction, first + count) {
                    try lattice.add(item(id: id, size: size), update: .all)
                }
            }
        }
        say("done")

    case "hammer":
        let writer = integer(3), transactions = integer(4)
        let lattice = try openLattice(path)
        say("ready")
        guard readLine() != nil else { fail("stdin closed before the start signal") }
        for i in 0..<transactions {
            try lattice.write {
                guard let counter = lattice.object(ofType: MultiProcessCounter.self, forPrimaryKey: 0) else {
                    fail("counter 0 is missing")
                }
                counter.value += 1
                let row = item(id: writer * 1_000_000 + i, size: 16)
                row.writer = writer
                row.sequence = counter.value
                try lattice.add(row)
            }
        }
        say("done")

    case "crash":
        let lattice = try openLattice(path)
        try lattice.beginWrite()
        for object in lattice.objects(MultiProcessItem.self) where object.id < 100 {
            if object.id < 50 {
                try lattice.delete(object)
            } else {
                object.payload = "rewritten by the killed transaction"
                object.checksum = 0
            }
        }
        // 4,500 objects of 2 kB outgrow the 8 MiB map: the transaction has been grown and replayed
        // before it reports.
        for n in 0..<6_000 {
            try lattice.add(item(id: 1_000_000 + n, size: 2_000))
            if n == 4_500 { say("writing") }
        }
        _ = readLine()  // the test kills the process before or while it waits here
        fail("the test did not kill the writer")

    case "hold":
        let lattice = try openLattice(path)
        say("holding \(lattice.objects(MultiProcessItem.self).count)")
        while readLine() != nil {}

    case "hold-write":
        let lattice = try openLattice(path)
        try lattice.beginWrite()
        try lattice.add(item(id: 999_999, size: 10))
        say("writing")
        while readLine() != nil {}
        lattice.cancelWrite()
    case "compact-loop":
        var configuration = Lattice.Configuration(fileURL: URL(fileURLWithPath: path),
                                                  objectTypes: [MultiProcessItem.self, MultiProcessCounter.self],
                                                  initialMapSize: 8 << 20)
        configuration.shouldCompactOnLaunch = { _, _ in true }
        var round = 0
        while true {
            let lattice = try Lattice(configuration: configuration)
            _ = lattice.objects(MultiProcessItem.self).count
            round += 1
            if round == 1 { say("compacting") }
        }

    case "open-limited":
        var limit = rlimit(rlim_cur: 8 << 30, rlim_max: 8 << 30)
        guard setrlimit(__rlimit_resource_t(RLIMIT_AS.rawValue), &limit) == 0 else { fail("setrlimit failed") }
        let lattice = try openLattice(path, initialMapSize: 64 << 30)
        try lattice.write { try lattice.add(item(id: 1, size: 10), update: .all) }
        say("count \(lattice.objects(MultiProcessItem.self).count)")

    case "probe-writer":
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { fail("cannot open \(path)") }
        defer { close(fd) }
        if flock(fd, LOCK_EX | LOCK_NB) == 0 {
            flock(fd, LOCK_UN)
            say("free")
        } else {
            say("busy")
        }

    case "watch":
        let target = integer(3)
        let lattice = try Lattice(configuration: .init(fileURL: URL(fileURLWithPath: path), readOnly: true,
                                                       objectTypes: [MultiProcessItem.self, MultiProcessCounter.self]))
        let items = lattice.objects(MultiProcessItem.self)
        let token = items.observe { change in
            switch change {
            case .initial(let results):
                say("ready \(results.count)")
                if results.count >= target { exit(0) }
            case let .update(results, _, insertions, _):
                say("update \(results.count) \(insertions.count)")
                if results.count >= target { exit(0) }
            case .error(let error):
                fail("\(error)")
            }
        }
        withExtendedLifetime(token) {
            if arguments.count > 4 && arguments[4] == "dispatch" { dispatchMain() }
            RunLoop.main.run()
        }
        fail("the run loop ended")

    case "verify":
        let lattice = try openLattice(path)
        var count = 0
        var sum = 0
        for object in lattice.objects(MultiProcessItem.self) {
            let text = object.payload
            guard object.checksum == checksum(text) else { fail("item \(object.id) has a wrong checksum") }
            if text != payload(id: object.id, size: text.utf8.count) {
                fail("item \(object.id) has a wrong payload")
            }
            count += 1
            sum = sum &+ object.checksum
        }
        say("count \(count) sum \(sum)")

    case "query":
        guard arguments.count >= 4 else { fail("usage: LatticeTestHelper query <file> <predicate> [argument...]") }
        try runQuery(path, arguments[3], Array(arguments.dropFirst(4)))

    case "query-fuzz":
        try runQueryFuzz(path, seed: UInt64(integer(3)), count: integer(4))
    case "migrate-and-hang":
        _ = try Lattice(configuration: MigrationV1.configuration(path) { migration, _ in
            var changed = 0
            migration.enumerateObjects(ofType: "MigrationItem") { _, new in
                new?["label"] = "migrated"
                changed += 1
                if changed == 500 {
                    say("migrating")
                    while readLine() != nil {}  // the test kills the process here
                }
            }
        })
        fail("the test did not kill the migration")

    case "migrate-once":
        say("ready")
        guard readLine() != nil else { fail("stdin closed before the start signal") }
        let lattice = try Lattice(configuration: MigrationV1.configuration(path) { migration, _ in
            migration.create("MigrationLog", value: ["note": "migrated by \(getpid())"])
        })
        say("done \(lattice.objects(MigrationV1.MigrationLog.self).count)")

    case "schema-watch":
        let lattice = try Lattice(configuration: .init(fileURL: URL(fileURLWithPath: path), dynamicSchema: true))
        say("ready")
        guard readLine() != nil else { fail("stdin closed before the signal") }
        do {
            try lattice.write {}
            say("ok")
        } catch {
            say("\(error)")
        }

    default:
        guard try damageCommand(arguments[1], path, arguments) else { fail("unknown command '\(arguments[1])'") }
    }
}

do {
    try run()
} catch {
    fail("\(error)")
}
