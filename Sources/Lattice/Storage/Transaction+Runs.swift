import CLMDB
#if canImport(Glibc)
import Glibc
#endif

/// What a write transaction holds for its packed tables (see `Runs`) that LMDB does not hold yet.
///
/// Exclusivity checks are off for its fields: it belongs to one write transaction, used by the thread
/// that began it (`Transaction` checks), and every access is a short mutation that calls out to nothing
/// that could touch the same field.
final class RunWrites {
    /// The last run of a table while entries are added above every key it holds (a loop of adds): the
    /// entries collect here and the run is written once it is full, before anything else reads or changes
    /// the table, and before the commit, instead of once per entry.
    struct Tail {
        var writer: RunWriter
        /// Whether the table holds a shorter version of this run under its key already.
        var stored: Bool
    }

    @exclusivity(unchecked) var tails: [UInt32: Tail] = [:]
    /// Entry counts the transaction changed, by table id; stored before the commit.
    @exclusivity(unchecked) var counts: [UInt32: Int] = [:]
    /// The largest key of a table when known (nil inside: the table is empty), so that a write below it
    /// does not read the last run to learn it is not an append.
    @exclusivity(unchecked) var lastKeys: [UInt32: UInt64?] = [:]

    /// Forgets everything (the transaction begins again, see `Transaction.restartAndReplay`).
    func reset() {
        tails = [:]
        counts = [:]
        lastKeys = [:]
    }
}

/// A write of a packed table that met a full map: the transaction grows it, replays and tries again.
struct MapFull: Error {}

extension Transaction {
    // MARK: Reads

    /// `get` of a packed table: the entry under the 8-byte `key` in the run that would hold it.
    func runGet<R>(_ table: Table, _ key: Bytes, _ body: (Bytes?) throws -> R) throws -> R {
        guard key.count == 8 else { return try body(nil) }
        if isWrite { try storingPending { try storeTail(table) } }
        let found = try withRawCursor(table) { cursor -> Bytes? in
            try RunCursor(handle: cursor, env: env, table: table, pageSize: pageSize, residentPages: nil).seek(exactly: key)?.value
        }
        return try body(found)
    }

    /// The number of entries of a packed table.
    func runCount(_ table: Table) throws -> Int {
        if let count = runWrites?.counts[table.id] { return count }
        return try Runs.countKey.withUnsafeBytes { k in
            var key = mdbVal(k)
            var v = MDB_val()
            let rc = mdb_get(txn, table.id, &key, &v)
            if rc == MDB_NOTFOUND { return 0 }
            try env.check(rc)
            guard v.mv_size == 8 + Checksum.size, let value = Checksum.open(key: k, sealed: bytes(v)) else {
                throw LatticeError.corruptFile(path: env.path, reason: "the entry count of '\(env.seals.name(of: table))' is damaged.")
            }
            return Int(Int64(littleEndian: value.loadUnaligned(as: Int64.self)))
        }
    }

    // MARK: Writes

    /// `put` of a packed table (logged by the caller). Returns false when `mode` refused it.
    func runPut(_ table: Table, _ key: Bytes, _ value: Bytes, mode: PutMode) throws -> Bool {
        guard key.count == 8 else {
            throw LatticeError.storage(path: env.path, code: EINVAL, message: "a key of \(key.count) bytes for a packed table (8 expected).")
        }
        let number = Runs.number(key)
        if try appendToTail(table, number, value) { return true }
        // Read phase, cursor closed before any write (see `Transaction`): the run rebuilt in memory.
        let rebuilt = try withRawCursor(table) { cursor -> (old: UInt64?, run: RunWriter, inserted: Bool)? in
            var writer = RunWriter(capacity: budget)
            guard let (k, v) = try Runs.floor(cursor, key, env: env, table: table) ?? firstRun(cursor) else {
                writer.append(key: number, value: value)
                return (nil, writer, true)
            }
            let run = bytes(v)
            let old = Runs.number(bytes(k))
            var scanner = RunScanner(run, key: old)
            var placed = false
            var replaced = false
            while let e = scanner.next() {
                if !placed && e.key >= number {
                    if e.key == number {
                        if mode == .insertNew || mode == .append { return nil }
                        replaced = true
                    }
                    writer.append(key: number, value: value)
                    placed = true
                    if replaced { continue }  // the old entry is left out
                }
                writer.append(e, of: run)
            }
            if scanner.malformed { throw Runs.malformed(table, old, env) }
            if !placed { writer.append(key: number, value: value) }
            return (old, writer, !replaced)
        }
        guard let rebuilt else { return false }
        try replaceRun(table, old: rebuilt.old, with: rebuilt.run)
        if rebuilt.inserted { try adjustCount(table, by: 1) }
        if case let known?? = runWrites?.lastKeys[table.id], number > known { runWrites?.lastKeys[table.id] = .some(number) }
        return true
    }

    /// `delete` of a packed table (logged by the caller); false when `key` has no entry.
    func runDelete(_ table: Table, _ key: Bytes) throws -> Bool {
        guard key.count == 8 else { return false }
        try storeTail(table)
        let number = Runs.number(key)
        let rebuilt = try withRawCursor(table) { cursor -> (old: UInt64, run: RunWriter)? in
            guard let (k, v) = try Runs.floor(cursor, key, env: env, table: table) else { return nil }
            let run = bytes(v)
            let old = Runs.number(bytes(k))
            var scanner = RunScanner(run, key: old)
            var writer = RunWriter(capacity: run.count)
            var found = false
            while let e = scanner.next() {
                if e.key == number { found = true } else { writer.append(e, of: run) }
            }
            if scanner.malformed { throw Runs.malformed(table, old, env) }
            return found ? (old, writer) : nil
        }
        guard let rebuilt else { return false }
        try replaceRun(table, old: rebuilt.old, with: rebuilt.run)
        try adjustCount(table, by: -1)
        if case let known?? = runWrites?.lastKeys[table.id], number == known { runWrites?.lastKeys[table.id] = nil }
        return true
    }

    /// `drop` of a packed table (logged by the caller): its runs and count go.
    func runDrop(_ table: Table) throws {
        runWrites?.tails[table.id] = nil
        try rawDrop(table)
        runWrites?.counts[table.id] = 0
        runWrites?.lastKeys[table.id] = .some(nil)
    }

    /// Writes what the transaction holds for its packed tables: every tail run and changed count.
    /// Runs before the commit.
    func storeRuns() throws {
        guard let writes = runWrites else { return }
        for id in Array(writes.tails.keys) { try storeTail(Table(id: id)) }
        for (id, count) in writes.counts {
            let table = Table(id: id)
            try Runs.countKey.withUnsafeBytes { k in
                if count == 0 {
                    try rawDelete(table, k)
                } else {
                    var value: [UInt8] = []
                    appendLE(Int64(count), to: &value)
                    _ = try value.withUnsafeBytes { try Checksum.sealed(key: k, value: $0).withUnsafeBytes { try rawPut(table, k, $0, flags: 0) } }
                }
            }
        }
        writes.counts = [:]
    }

    /// Runs a write of pending entries (no operation of its own to log), growing the map and replaying
    /// when it meets a full one.
    func storingPending(_ body: () throws -> Void) throws {
        while true {
            do {
                return try body()
            } catch is MapFull {
                try growAndReplay()
            }
        }
    }

    /// Writes the tail run of `table`, if it has one.
    func storeTail(_ table: Table) throws {
        guard let tail = runWrites?.tails.removeValue(forKey: table.id) else { return }
        try Runs.withKey(tail.writer.firstKey) { k in
            try tail.writer.bytes.withUnsafeBytes { v in
                if try tail.stored || !rawPut(table, k, v, flags: UInt32(MDB_APPEND)) {
                    _ = try rawPut(table, k, v, flags: 0)
                }
            }
        }
    }

    // MARK: Internals

    /// Adds `value` under `number` to the table's tail run when `number` sorts after every key of the
    /// table (the tail taken from the table's last run when there is none yet); false otherwise, with
    /// the tail written.
    private func appendToTail(_ table: Table, _ number: UInt64, _ value: Bytes) throws -> Bool {
        guard let writes = runWrites else { return false }
        var tail: RunWrites.Tail
        if let taken = writes.tails.removeValue(forKey: table.id) {
            // Taken out of the dictionary, so that appending does not copy its bytes.
            tail = taken
            guard number > tail.writer.lastKey else {
                writes.tails[table.id] = tail
                try storeTail(table)
                return false
            }
        } else {
            if case let known?? = writes.lastKeys[table.id], number <= known { return false }
            guard let last = try lastRun(table, appending: number) else {
                if case .some(.some) = writes.lastKeys[table.id] { return false }
                tail = RunWrites.Tail(writer: RunWriter(capacity: budget), stored: false)
                return try addToTail(table, &tail, number, value)
            }
            tail = last
        }
        return try addToTail(table, &tail, number, value)
    }

    private func addToTail(_ table: Table, _ tail: inout RunWrites.Tail, _ number: UInt64, _ value: Bytes) throws -> Bool {
        if tail.writer.count > 0, tail.writer.size(adding: number, valueCount: value.count) > budget {
            runWrites?.tails[table.id] = tail
            try storeTail(table)
            tail = RunWrites.Tail(writer: RunWriter(capacity: budget), stored: false)
        }
        tail.writer.append(key: number, value: value)
        runWrites?.tails[table.id] = tail
        runWrites?.lastKeys[table.id] = .some(number)
        try adjustCount(table, by: 1)
        return true
    }

    /// When `number` sorts after every key of the table: its last run as a tail (stored), or nil when
    /// the table is empty. Otherwise nil, with the table's largest key noted in `lastKeys`.
    private func lastRun(_ table: Table, appending number: UInt64) throws -> RunWrites.Tail? {
        try withRawCursor(table) { cursor in
            var k = MDB_val()
            var v = MDB_val()
            let rc = mdb_cursor_get(cursor, &k, &v, MDB_LAST)
            if rc != MDB_NOTFOUND { try env.check(rc) }
            if try rc == MDB_NOTFOUND || Runs.isCountEntry(k, env: env, table: table) {
                runWrites?.lastKeys[table.id] = .some(nil)
                return nil
            }
            let run = bytes(v)
            let key = Runs.number(bytes(k))
            var scanner = RunScanner(run, key: key)
            var lastKey = key
            while let e = scanner.next() { lastKey = e.key }
            if scanner.malformed { throw Runs.malformed(table, key, env) }
            runWrites?.lastKeys[table.id] = .some(lastKey)
            guard number > lastKey else { return nil }
            var writer = RunWriter(capacity: budget)
            writer.append(run: run, firstKey: key, lastKey: lastKey, count: scanner.count)
            return RunWrites.Tail(writer: writer, stored: true)
        }
    }

    /// The first run of the table (the LMDB cursor on it), or nil when it has none.
    private func firstRun(_ cursor: OpaquePointer?) throws -> (MDB_val, MDB_val)? {
        var k = MDB_val()
        var v = MDB_val()
        var rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST)
        if rc == 0, k.mv_size != 8 { rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT) }
        if rc == MDB_NOTFOUND { return nil }
        try env.check(rc)
        return (k, v)
    }

    /// Replaces the run stored under `old` (nil: none) with `run`, split into runs of at most `budget`
    /// bytes (about equal, so that the next inserts do not split them again) when it is larger.
    private func replaceRun(_ table: Table, old: UInt64?, with run: RunWriter) throws {
        if let old, run.count == 0 || run.firstKey != old {
            _ = try Runs.withKey(old) { try rawDelete(table, $0) }
        }
        guard run.count > 0 else { return }
        let total = run.bytes.count
        guard total > budget, run.count > 1 else {
            try Runs.withKey(run.firstKey) { k in try run.bytes.withUnsafeBytes { _ = try rawPut(table, k, $0, flags: 0) } }
            return
        }
        let target = total / ((total + budget - 1) / budget)
        try run.bytes.withUnsafeBytes { all in
            var scanner = RunScanner(all, key: run.firstKey)
            var piece = RunWriter(capacity: budget)
            func write() throws {
                try Runs.withKey(piece.firstKey) { k in try piece.bytes.withUnsafeBytes { _ = try rawPut(table, k, $0, flags: 0) } }
                piece.reset()
            }
            while let e = scanner.next() {
                let size = piece.size(adding: e.key, valueCount: e.end - e.value - Checksum.size)
                if piece.count > 0 && (size > budget || piece.bytes.count >= target) { try write() }
                piece.append(e, of: all)
            }
            if piece.count > 0 { try write() }
        }
    }

    private func adjustCount(_ table: Table, by delta: Int) throws {
        guard let writes = runWrites else { return }
        let count = try writes.counts[table.id] ?? runCount(table)
        writes.counts[table.id] = count + delta
    }

    /// Opens an LMDB cursor on `table` for `body` (which must write nothing: see `Transaction`).
    private func withRawCursor<R>(_ table: Table, _ body: (OpaquePointer?) throws -> R) throws -> R {
        var cursor: OpaquePointer?
        try env.check(mdb_cursor_open(txn, table.id, &cursor))
        defer { mdb_cursor_close(cursor) }
        return try body(cursor)
    }

    /// `mdb_put` as it is; false for `MDB_KEYEXIST`, `MapFull` for a full map.
    @discardableResult
    private func rawPut(_ table: Table, _ key: Bytes, _ value: Bytes, flags: UInt32) throws -> Bool {
        var k = mdbVal(key)
        var v = mdbVal(value)
        let rc = mdb_put(txn, table.id, &k, &v, flags)
        if rc == MDB_KEYEXIST { return false }
        if rc == MDB_MAP_FULL { throw MapFull() }
        try env.check(rc)
        return true
    }

    /// `mdb_del` as it is; false when absent, `MapFull` for a full map.
    @discardableResult
    private func rawDelete(_ table: Table, _ key: Bytes) throws -> Bool {
        var k = mdbVal(key)
        let rc = mdb_del(txn, table.id, &k, nil)
        if rc == MDB_NOTFOUND { return false }
        if rc == MDB_MAP_FULL { throw MapFull() }
        try env.check(rc)
        return true
    }

    private func rawDrop(_ table: Table) throws {
        let rc = mdb_drop(txn, table.id, 0)
        if rc == MDB_MAP_FULL { throw MapFull() }
        try env.check(rc)
    }
}
