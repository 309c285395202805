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

    @exclusivity(unchecked) var tails = ByTable<Tail>()
    /// Entry counts the transaction changed, by table id; stored before the commit.
    @exclusivity(unchecked) var counts = ByTable<Int>()
    /// The largest key of a table when known (nil inside: the table is empty), so that a write below it
    /// does not read the last run to learn it is not an append.
    @exclusivity(unchecked) var lastKeys = ByTable<UInt64?>()
    /// LMDB cursors of the transaction on packed tables, by table id (LMDB closes them when it ends).
    @exclusivity(unchecked) var cursors = ByTable<OpaquePointer>()
    /// Pending blocks of packed indexes, by table id (see `PendingBlock`).
    @exclusivity(unchecked) var blocks = ByTable<PendingBlocks>()
    /// Where runs are rebuilt, and encoded.
    @exclusivity(unchecked) var scratch = RunWriter()
    @exclusivity(unchecked) var encoded: [UInt8] = []
    /// Where a run edit's key deltas are spliced (see `RunSplice`).
    @exclusivity(unchecked) var deltas: [UInt8] = []

    /// Forgets everything (the transaction begins again, see `Transaction.restartAndReplay`).
    func reset() {
        tails = ByTable()
        counts = ByTable()
        lastKeys = ByTable()
        cursors = ByTable()
        blocks = ByTable()
    }
}

/// Values by table id, in an array (table ids are small): what a dictionary keyed by id would do
/// without hashing on every write.
struct ByTable<Value> {
    private var values: [Value?] = []

    subscript(id: UInt32) -> Value? {
        get { Int(id) < values.count ? values[Int(id)] : nil }
        set {
            let i = Int(id)
            if i >= values.count {
                guard newValue != nil else { return }
                values.append(contentsOf: repeatElement(nil, count: i + 1 - values.count))
            }
            values[i] = newValue
        }
    }

    /// `body` run on the value of `id` where it is (its storage not copied); nil when there is none.
    mutating func modify<R>(_ id: UInt32, _ body: (inout Value) throws -> R) rethrows -> R? {
        let i = Int(id)
        guard i < values.count, values[i] != nil else { return nil }
        return try body(&values[i]!)
    }

    /// Removes the value of `id` and returns it (its storage no longer shared with the array).
    mutating func take(_ id: UInt32) -> Value? {
        guard Int(id) < values.count else { return nil }
        let value = values[Int(id)]
        values[Int(id)] = nil
        return value
    }

    /// The ids that have a value.
    var ids: [UInt32] { values.indices.filter { values[$0] != nil }.map { UInt32($0) } }
}

/// A write of a packed table that met a full map: the transaction grows it, replays and tries again.
struct MapFull: Error {}

extension Transaction {
    // MARK: Reads

    /// `get` of a packed table: the entry under the 8-byte `key` in the run that would hold it. A read
    /// transaction keeps one LMDB cursor per packed table for its lookups (`readCursor`).
    @inline(__always)
    func runGet<R>(_ table: Table, _ key: Bytes, _ body: (Bytes?) throws -> R) throws -> R {
        guard key.count == 8 else { return try body(nil) }
        guard isWrite else { return try body(runLookup(try readCursor(table), table, key)) }
        // The tail run (in memory) holds the table's largest keys: a key above it is in no run, and one
        // below it in a run the table holds. Only a key within it needs the tail written first (adding
        // objects by ascending keys looks each new key up before adding it).
        let tail = runWrites?.tails.modify(table.id) { $0.writer.count > 0 ? ($0.writer.firstKey, $0.writer.lastKey) : nil }
        if let (first, last) = tail ?? nil {
            let number = Runs.number(key)
            if number > last { return try body(nil) }
            if number >= first { try storingPending { try storeTail(table) } }
        }
        // The transaction's cursor: a lookup near the last one searches that page only.
        return try body(runLookup(try writeCursor(table), table, key))
    }

    /// The verified value under `key` in the run that would hold it, or nil.
    @inline(__always)
    private func runLookup(_ cursor: OpaquePointer?, _ table: Table, _ key: Bytes) throws -> Bytes? {
        if let (k, v) = try Runs.floor(cursor, key, env: env, table: table) {
            try ValueBounds.check(key: k, value: v, pageSize: pageSize, env)
            let runKey = Runs.number(bytes(k))
            guard let view = RunView(bytes(v), key: runKey), let found = view.find(Runs.number(key)) else {
                throw Runs.malformed(table, runKey, env)
            }
            if found.index < view.count, found.key == Runs.number(key) {
                guard let sealed = view.entry(found.index) else { throw Runs.malformed(table, runKey, env) }
                return try Cursor.opened(table, key, sealed, env)
            }
        }
        // Not there: the entries around where it would be are verified (see `RunCursor.seek(exactly:)`).
        return try RunCursor(handle: cursor, env: env, table: table, pageSize: pageSize, residentPages: nil).seek(exactly: key)?.value
    }

    /// The first (or, with `last`, the last) entry of `table`, nil when it has none, passed to `body`. A
    /// read transaction reads a packed table's end through its lookup cursor: no cursor to open, no walk.
    func withEnd<R>(_ table: Table, last: Bool, _ body: (Cursor.Entry?) throws -> R) throws -> R {
        guard lendsEnds(table) else { return try withCursor(table) { try body(last ? $0.last() : $0.first()) } }
        guard let (number, value) = try lentEnd(table, last: last) else { return try body(nil) }
        return try Runs.withKey(number) { try body(($0, value)) }
    }

    /// Whether `lentEnd` can read `table`'s ends here: a read transaction, a table packed in runs.
    func lendsEnds(_ table: Table) -> Bool { !isWrite && packing(table) == .runs }

    /// The first (or, with `last`, the last) entry of `table` (see `lendsEnds`), nil when it has none:
    /// its key as a number and its value where the map holds it, valid while the snapshot is open. No
    /// closure: `first` and `last` of a class pass no context through generic code.
    func lentEnd(_ table: Table, last: Bool) throws -> (number: UInt64, value: Bytes)? {
        if let lock = sharedLock { return try lock.withLock { try lentRunEnd(table, last: last) } }
        return try lentRunEnd(table, last: last)
    }

    private func lentRunEnd(_ table: Table, last: Bool) throws -> (number: UInt64, value: Bytes)? {
        let cursor = try readCursor(table)
        var k = MDB_val()
        var v = MDB_val()
        var rc = mdb_cursor_get(cursor, &k, &v, last ? MDB_LAST : MDB_FIRST)
        // The count entry sorts first: the table's only entry when it is the last one.
        if rc == 0, try Runs.isCountEntry(k, env: env, table: table) {
            rc = last ? MDB_NOTFOUND : mdb_cursor_get(cursor, &k, &v, MDB_NEXT)
        }
        if rc == MDB_NOTFOUND { return nil }
        try env.check(rc)
        try ValueBounds.check(key: k, value: v, pageSize: pageSize, env)
        let runKey = Runs.number(bytes(k))
        guard let view = RunView(bytes(v), key: runKey), let key = last ? view.lastKey : runKey,
              let sealed = view.entry(last ? view.count - 1 : 0) else {
            throw Runs.malformed(table, runKey, env)
        }
        return (key, try Runs.withKey(key) { try Cursor.opened(table, $0, sealed, env) })
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
        guard let writes = runWrites else { return false }
        let cursor = try writeCursor(table)
        guard let (view, place) = try currentRun(cursor, number)
                ?? runPlace(try Runs.floor(cursor, key, env: env, table: table) ?? firstRun(cursor), table, number) else {
            var run = RunWriter()
            run.append(key: number, value: value)
            try store(table, run.encoded(), first: number, count: 1, replacing: nil, cursor)
            try adjustCount(table, by: 1)
            return true
        }
        // The run edited as bytes (LMDB's copy is read before anything is written).
        let runKey = view.key
        let replacing = place.index < view.count && place.key == number
        if replacing && (mode == .insertNew || mode == .append) { return false }
        if replacing, let old = view.entry(place.index), old.count == value.count + Checksum.size {
            // The same size (a changed number, say): the run's bytes with this entry sealed anew.
            try overwrite(table, view, entry: old, key: key, value: value, cursor)
            return true
        }
        guard let spliced = RunSplice.splice(view, at: place, removing: replacing, inserting: number, value: value,
                                             into: &writes.encoded, deltas: &writes.deltas) else {
            throw Runs.malformed(table, runKey, env)
        }
        try store(table, writes.encoded, first: spliced.firstKey, count: spliced.count, replacing: runKey, cursor)
        if !replacing {
            try adjustCount(table, by: 1)
            if case let known?? = writes.lastKeys[table.id], number > known { writes.lastKeys[table.id] = .some(number) }
        }
        return true
    }

    /// `delete` of a packed table (logged by the caller); false when `key` has no entry.
    func runDelete(_ table: Table, _ key: Bytes) throws -> Bool {
        guard key.count == 8, let writes = runWrites else { return false }
        try storeTail(table)
        let number = Runs.number(key)
        let cursor = try writeCursor(table)
        guard let (view, place) = try currentRun(cursor, number) ?? runPlace(try Runs.floor(cursor, key, env: env, table: table), table, number),
              place.index < view.count, place.key == number else { return false }
        let runKey = view.key
        guard let spliced = RunSplice.splice(view, at: place, removing: true, inserting: nil, value: Bytes(start: nil, count: 0),
                                             into: &writes.encoded, deltas: &writes.deltas) else {
            throw Runs.malformed(table, runKey, env)
        }
        try store(table, writes.encoded, first: spliced.firstKey, count: spliced.count, replacing: runKey, cursor)
        try adjustCount(table, by: -1)
        if case let known?? = writes.lastKeys[table.id], number == known { writes.lastKeys[table.id] = nil }
        return true
    }

    /// The run `cursor` stands on, and the place of `number` in it, when that run holds `number`: a write
    /// of an object usually follows a read of it through the same cursor, and then needs no search. Nil
    /// otherwise (a run that does not decode included: the search that follows reports it).
    private func currentRun(_ cursor: OpaquePointer?, _ number: UInt64) -> (RunView, RunPlace)? {
        var k = MDB_val()
        var v = MDB_val()
        guard mdb_cursor_get(cursor, &k, &v, MDB_GET_CURRENT) == 0, k.mv_size == 8 else { return nil }
        let runKey = Runs.number(bytes(k))
        guard runKey <= number, let view = RunView(bytes(v), key: runKey), let place = view.place(of: number),
              place.index < view.count, place.key == number else { return nil }
        return (view, place)
    }

    /// The run stored as LMDB's entry `run` (nil: none) and where `number` is or would go in it.
    private func runPlace(_ run: (MDB_val, MDB_val)?, _ table: Table, _ number: UInt64) throws -> (RunView, RunPlace)? {
        guard let (k, v) = run else { return nil }
        let runKey = Runs.number(bytes(k))
        guard let view = RunView(bytes(v), key: runKey), let place = view.place(of: number) else { throw Runs.malformed(table, runKey, env) }
        return (view, place)
    }

    /// Writes `view` again with the entry whose value and checksum are `entry` (within it) replaced by
    /// `value` of the same size: the LMDB cursor stands on the run, so LMDB writes it where it is.
    private func overwrite(_ table: Table, _ view: RunView, entry: Bytes, key: Bytes, value: Bytes, _ cursor: OpaquePointer?) throws {
        guard let writes = runWrites, let start = view.bytes.baseAddress, let at = entry.baseAddress else { return }
        writes.encoded.removeAll(keepingCapacity: true)
        writes.encoded.append(contentsOf: view.bytes)
        try writes.encoded.withUnsafeMutableBytes { run in
            guard let base = run.baseAddress else { return }
            Checksum.seal(key: key, value: value, to: base + (at - start))
            try Runs.withKey(view.key) { runKey in
                var k = mdbVal(runKey)
                var v = mdbVal(UnsafeRawBufferPointer(run))
                let rc = mdb_cursor_put(cursor, &k, &v, UInt32(MDB_CURRENT))
                if rc == MDB_MAP_FULL { throw MapFull() }
                try env.check(rc)
            }
        }
    }

    /// The run stored as LMDB's entry `k`/`v`, with its keys decoded when it is not dense (into `runKeys`).
    private func runView(_ table: Table, _ k: MDB_val, _ v: MDB_val) throws -> RunView {
        let key = Runs.number(bytes(k))
        guard let view = RunView(bytes(v), key: key), view.isDense || view.keys(into: &runKeys) else {
            throw Runs.malformed(table, key, env)
        }
        return view
    }

    private func entryKey(_ view: RunView, _ i: Int) -> UInt64 {
        view.isDense ? view.key &+ UInt64(i) : runKeys[i]
    }


    /// `drop` of a packed table (logged by the caller): its runs and count, or its blocks, go.
    func runDrop(_ table: Table) throws {
        runWrites?.tails[table.id] = nil
        runWrites?.blocks[table.id] = nil
        try rawDrop(table)
        guard packing(table) == .runs else { return }
        runWrites?.counts[table.id] = 0
        runWrites?.lastKeys[table.id] = .some(nil)
    }

    /// Writes what the transaction holds for its packed tables: every tail run and changed count.
    /// Runs before the commit.
    func storeRuns() throws {
        guard let writes = runWrites else { return }
        for id in writes.tails.ids { try storeTail(Table(id: id)) }
        try storeBlocks(nil)
        for id in writes.counts.ids {
            guard let count = writes.counts[id] else { continue }
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
        writes.counts = ByTable()
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
        guard let tail = runWrites?.tails.take(table.id) else { return }
        let run = tail.writer.encoded()
        let flags = tail.stored ? 0 : UInt32(MDB_APPEND)
        var key = tail.writer.firstKey.bigEndian
        try withUnsafeBytes(of: &key) { k in
            try run.withUnsafeBytes { v in
                if try !rawPut(table, k, v, flags: flags) { _ = try rawPut(table, k, v, flags: 0) }
            }
        }
    }

    // MARK: Internals

    /// What an add met in the table's tail run.
    private enum TailStep { case appended, full, below }

    /// Adds `value` under `number` to the table's tail run when `number` sorts after every key of the
    /// table (the tail taken from the table's last run when there is none yet); false otherwise, with
    /// the tail written. The tail is changed where it is, so appending does not copy its bytes.
    private func appendToTail(_ table: Table, _ number: UInt64, _ value: Bytes) throws -> Bool {
        guard let writes = runWrites else { return false }
        let step = writes.tails.modify(table.id) { tail -> TailStep in
            if number <= tail.writer.lastKey { return .below }
            if tail.writer.count > 0, tail.writer.size(adding: number, valueCount: value.count) > budget { return .full }
            tail.writer.append(key: number, value: value)
            return .appended
        }
        switch step {
        case .appended?:
            break
        case .below?:
            try storeTail(table)
            return false
        case .full?:
            try storeTail(table)
            writes.tails[table.id] = newTail(number, value)
        case nil:
            if case let known?? = writes.lastKeys[table.id], number <= known { return false }
            if let last = try lastRun(table, appending: number) {
                writes.tails[table.id] = last
                return try appendToTail(table, number, value)
            }
            if case .some(.some) = writes.lastKeys[table.id] { return false }
            writes.tails[table.id] = newTail(number, value)
        }
        writes.lastKeys[table.id] = .some(number)
        try adjustCount(table, by: 1)
        return true
    }

    /// A tail run not in the table yet, holding `value` under `number`.
    private func newTail(_ number: UInt64, _ value: Bytes) -> RunWrites.Tail {
        var writer = RunWriter(capacity: budget)
        writer.append(key: number, value: value)
        return RunWrites.Tail(writer: writer, stored: false)
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
            let view = try runView(table, k, v)
            let lastKey = entryKey(view, view.count - 1)
            runWrites?.lastKeys[table.id] = .some(lastKey)
            guard number > lastKey else { return nil }
            var writer = RunWriter(capacity: budget)
            guard writer.append(0..<view.count, of: view, keys: runKeys) else {
                throw Runs.malformed(table, view.key, env)
            }
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

    /// Stores the encoded `run` (`count` entries from `first`; 0: it is empty) in place of the run under
    /// `replacing` (nil: none), on which `cursor` stands: written over it where it was when its key stays
    /// and it fits, otherwise the old run deleted and `run` written, split into runs of at most `budget`
    /// bytes when larger.
    private func store(_ table: Table, _ run: [UInt8], first: UInt64, count: Int, replacing old: UInt64?, _ cursor: OpaquePointer?) throws {
        if let old, count > 0, first == old, run.count <= budget || count == 1 {
            try Runs.withKey(old) { k in
                try run.withUnsafeBytes { v in
                    var key = mdbVal(k)
                    var value = mdbVal(v)
                    let rc = mdb_cursor_put(cursor, &key, &value, UInt32(MDB_CURRENT))
                    if rc == MDB_MAP_FULL { throw MapFull() }
                    try env.check(rc)
                }
            }
            return
        }
        if old != nil {
            let rc = mdb_cursor_del(cursor, 0)
            if rc == MDB_MAP_FULL { throw MapFull() }
            try env.check(rc)
        }
        guard count > 0 else { return }
        if run.count <= budget || count == 1 {
            try Runs.withKey(first) { k in try run.withUnsafeBytes { _ = try rawPut(table, k, $0, flags: 0) } }
            return
        }
        // Too large: split through a writer.
        var writer = RunWriter(capacity: run.count)
        try run.withUnsafeBytes { bytes in
            guard let view = RunView(bytes, key: first), view.isDense || view.keys(into: &runKeys),
                  writer.append(0..<view.count, of: view, keys: runKeys) else { throw Runs.malformed(table, first, env) }
        }
        try writer.split(budget: budget) { piece in
            try Runs.withKey(piece.firstKey) { k in try piece.encoded().withUnsafeBytes { _ = try rawPut(table, k, $0, flags: 0) } }
        }
    }

    /// The write transaction's cursor on a packed table, kept until the transaction ends (LMDB closes it
    /// then; a replay forgets it with the aborted transaction).
    func writeCursor(_ table: Table) throws -> OpaquePointer? {
        if let cursor = runWrites?.cursors[table.id] { return cursor }
        var cursor: OpaquePointer?
        try env.check(mdb_cursor_open(txn, table.id, &cursor))
        runWrites?.cursors[table.id] = cursor
        return cursor
    }

    private func adjustCount(_ table: Table, by delta: Int) throws {
        guard let writes = runWrites else { return }
        let count = try writes.counts[table.id] ?? runCount(table)
        writes.counts[table.id] = count + delta
    }

    /// Opens an LMDB cursor on `table` for `body` (which must write nothing: see `Transaction`).
    func withRawCursor<R>(_ table: Table, _ body: (OpaquePointer?) throws -> R) throws -> R {
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
