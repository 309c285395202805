import CLMDB
#if canImport(Glibc)
import Glibc
#endif

/// A write transaction's blocks of packed indexes (see `Blocks`) that LMDB does not hold yet: while
/// object keys are filed under an index key above every key it has (objects added in key order), they
/// collect in the key's last block here, which is written once full, before anything else reads or
/// changes the table, and before the commit, instead of once per object.
struct PendingBlock {
    var writer: BlockWriter
    /// The block as the table holds it now (nil: a new block), deleted when this one is written.
    var stored: [UInt8]?
}

/// A block the table holds that a write transaction changed inside (an object key removed, or filed
/// between two it holds): the edits collect here and the block is written once, in place of `stored`,
/// before anything else reads or changes the index key and before the commit, instead of once per edit.
struct EditedBlock {
    /// The block as the table holds it.
    let stored: [UInt8]
    /// The first and last object keys of `stored`: the object keys it covers (the blocks of an index key
    /// never overlap), which the edit is found by.
    let first: UInt64
    let last: UInt64
    /// The block as it is to be stored (empty: no key left). Never over `Blocks.budget`: an edit that
    /// outgrows it is written at once (see `Transaction.edit`).
    var current: [UInt8]

    init(stored: Bytes, _ view: BlockView, current: [UInt8]) {
        self.stored = Array(stored)
        (first, last) = (view.first, view.last)
        self.current = current
    }
}

/// The pending blocks of one index, by index key (a class: blocks change in place, never copied).
final class PendingBlocks {
    @exclusivity(unchecked) var byKey: [IndexKey: PendingBlock] = [:]
    /// Edited stored blocks, by index key, in the order of their first object keys.
    @exclusivity(unchecked) private(set) var edits: [IndexKey: [EditedBlock]] = [:]
    /// The number of edited blocks.
    @exclusivity(unchecked) private(set) var editCount = 0
    /// Where the next edit of a block is written (see `Transaction.edit`).
    @exclusivity(unchecked) var scratch: [UInt8] = []

    /// Where an edited block is: its index key's entry in `edits` and its position there.
    struct Place {
        let slot: Dictionary<IndexKey, [EditedBlock]>.Index
        let position: Int
    }

    /// Whether `key` has a block here, pending or edited.
    func holds(_ key: IndexKey) -> Bool { byKey[key] != nil || edits[key] != nil }

    /// The edited block of `key` whose stored block begins at `first`, or (`covering`) holds `first`
    /// between its first and last object keys.
    func place(_ key: IndexKey, _ first: UInt64, covering: Bool = false) -> Place? {
        guard !edits.isEmpty, let slot = edits.index(forKey: key) else { return nil }
        let blocks = edits.values[slot]
        // The last block whose first key is not above `first`.
        let after = PendingBlocks.position(after: first, in: blocks)
        guard after > 0 else { return nil }
        let block = blocks[after - 1]
        guard covering ? first <= block.last : first == block.first else { return nil }
        return Place(slot: slot, position: after - 1)
    }

    /// The position of the first of `blocks` whose first key is above `first`.
    private static func position(after first: UInt64, in blocks: [EditedBlock]) -> Int {
        var low = 0
        var high = blocks.count
        while low < high {
            let middle = (low + high) / 2
            if blocks[middle].first <= first { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The block as it is to be stored at `place`, changed where it is.
    func withCurrent<R>(_ place: Place, _ body: (inout [UInt8]) throws -> R) rethrows -> R {
        try body(&edits.values[place.slot][place.position].current)
    }

    func keep(_ edit: EditedBlock, under key: IndexKey) {
        if let slot = edits.index(forKey: key) {
            edits.values[slot].insert(edit, at: PendingBlocks.position(after: edit.first, in: edits.values[slot]))
        } else {
            edits[key] = [edit]
        }
        editCount += 1
    }

    /// Removes the edited block at `place` and returns it.
    func forget(_ place: Place) -> EditedBlock {
        let edit = edits.values[place.slot].remove(at: place.position)
        if edits.values[place.slot].isEmpty { edits.remove(at: place.slot) }
        editCount -= 1
        return edit
    }

    /// Takes the edits of `key`.
    func takeEdits(of key: IndexKey) -> [EditedBlock] {
        guard let taken = edits.removeValue(forKey: key) else { return [] }
        editCount -= taken.count
        return taken
    }

    /// Takes every edit.
    func takeEdits() -> [IndexKey: [EditedBlock]] {
        defer { (edits, editCount) = ([:], 0) }
        return edits
    }
}

/// An index key as a dictionary key. Keys of up to 16 bytes (numbers, dates, short strings: most indexed
/// values) are held in two words, zero-padded, so that a lookup allocates nothing; longer ones in an
/// array. Hashed as one run of bytes (an array of bytes hashes byte by byte).
struct IndexKey: Hashable {
    private let count: Int
    private let low: UInt64
    private let high: UInt64
    private let long: [UInt8]?

    init(_ key: UnsafeRawBufferPointer) {
        count = key.count
        guard key.count <= 16 else {
            (low, high, long) = (0, 0, Array(key))
            return
        }
        var words: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: key) }
        (low, high, long) = (words.0, words.1, nil)
    }

    /// The key's bytes.
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        if let long { return try long.withUnsafeBytes(body) }
        let words = (low, high)
        return try withUnsafeBytes(of: words) { try body(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
    }

    func hash(into hasher: inout Hasher) {
        withBytes { hasher.combine(bytes: $0) }
    }
}

extension Transaction {
    /// The most pending blocks a table keeps before writing them all (a bound on memory).
    private static let pendingLimit = 4_096

    /// Files the 8-byte object key `value` under `key` in a packed index (logged by the caller); `last`:
    /// the caller expects it above every key filed there.
    func blockAdd(_ table: Table, _ key: Bytes, _ value: Bytes, last: Bool) throws {
        guard value.count == 8, let writes = runWrites else {
            throw LatticeError.storage(path: env.path, code: EINVAL, message: "a value of \(value.count) bytes for a packed index (8 expected).")
        }
        let number = Runs.number(value)
        let indexKey = IndexKey(key)
        if last {
            // The key's last block as LMDB holds it is read below: the key's edits are written first.
            let all = writes.blocks[table.id]
            if let all, !all.edits.isEmpty { try storeEdits(table, indexKey, all) }
            if let all, let i = all.byKey.index(forKey: indexKey) {
                if number > all.byKey.values[i].writer.last {
                    // The usual case: one more key at the end of the pending block, appended where it is.
                    try append(table, indexKey, number, to: &all.byKey.values[i])
                    return
                }
                try writeBlock(table, indexKey, all.byKey.remove(at: i).value)
            } else {
                // A new index key: one block of one key, and nothing to read.
                if try rawPutBlock(table, key, Blocks.single(number), flags: UInt32(MDB_NOOVERWRITE)) { return }
                let cursor = try writeCursor(table)
                var k = mdbVal(key)
                var v = MDB_val()
                try env.check(mdb_cursor_get(cursor, &k, &v, MDB_SET_KEY))
                try env.check(mdb_cursor_get(cursor, &k, &v, MDB_LAST_DUP))
                guard let view = BlockView(bytes(v)) else { throw damagedBlock(table, key) }
                if number > view.last {
                    var pending = PendingBlock(writer: BlockWriter(view), stored: Array(bytes(v)))
                    try append(table, indexKey, number, to: &pending)
                    try keepPending(table, indexKey, pending)
                    return
                }
            }
        }
        try insert(table, key, number)
    }

    /// Removes the 8-byte object key `value` from under `key` (logged by the caller); false when absent.
    /// An empty `value` removes every object key filed under `key`.
    func blockRemove(_ table: Table, _ key: Bytes, _ value: Bytes) throws -> Bool {
        try storeBlock(table, key)
        if value.isEmpty {
            // Every block of the key goes, as stored: its edits are dropped, not written.
            if let all = runWrites?.blocks[table.id], !all.edits.isEmpty { _ = all.takeEdits(of: IndexKey(key)) }
            var k = mdbVal(key)
            let rc = mdb_del(txn, table.id, &k, nil)
            if rc == MDB_MAP_FULL { throw MapFull() }
            if rc == MDB_NOTFOUND { return false }
            try env.check(rc)
            return true
        }
        guard value.count == 8 else { return false }
        let number = Runs.number(value)
        let indexKey = IndexKey(key)
        // A number within a block the write edited already is removed there, with no search of LMDB.
        if let all = runWrites?.blocks[table.id], let place = all.place(indexKey, number, covering: true) {
            return try edit(table, key, indexKey, all, place, removing: true, number)
        }
        let cursor = try writeCursor(table)
        // Below every stored block's first key, the number may still be in the first block's edit.
        guard let stored = try floorBlock(cursor, table, key, number) ?? firstBlock(cursor, key) else { return false }
        return try edit(table, key, indexKey, stored: stored, removing: true, number)
    }

    /// Writes every pending block of `table` (nil: of every table).
    func storeBlocks(_ table: Table?) throws {
        guard let writes = runWrites else { return }
        for id in table.map({ [$0.id] }) ?? writes.blocks.ids {
            guard let pending = writes.blocks.take(id) else { continue }
            for (key, block) in pending.byKey { try writeBlock(Table(id: id), key, block) }
            for (key, edits) in pending.takeEdits() {
                for edit in edits { try writeEdit(Table(id: id), key, edit) }
            }
        }
    }

    /// The number of object keys filed in a packed index (a walk of its blocks: `verify()` asks).
    func blockCount(_ table: Table) throws -> Int {
        if isWrite { try storingPending { try storeBlocks(table) } }
        return try withRawCursor(table) { cursor in
            var k = MDB_val()
            var v = MDB_val()
            var n = 0
            var rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST)
            while rc == 0 {
                n += BlockView(bytes(v))?.count ?? 1
                rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)
            }
            if rc != MDB_NOTFOUND { try env.check(rc) }
            return n
        }
    }

    // MARK: Internals

    /// Appends `number` to a pending block, writing it first when full (a new block then begins).
    private func append(_ table: Table, _ key: IndexKey, _ number: UInt64, to pending: inout PendingBlock) throws {
        if pending.writer.size(adding: number) > Blocks.budget {
            try writeBlock(table, key, pending)
            pending = PendingBlock(writer: BlockWriter(), stored: nil)
        }
        pending.writer.append(number)
    }

    /// Keeps `pending` as the pending block of `key` (every pending block of the table written first
    /// when they reach `pendingLimit`).
    private func keepPending(_ table: Table, _ key: IndexKey, _ pending: PendingBlock) throws {
        guard let all = pendingBlocks(table) else { return }
        if all.byKey.count >= Transaction.pendingLimit {
            let full = all.byKey
            all.byKey = [:]
            for (k, block) in full { try writeBlock(table, k, block) }
        }
        all.byKey[key] = pending
    }

    /// The pending blocks of `table`, made when it has none.
    private func pendingBlocks(_ table: Table) -> PendingBlocks? {
        guard let writes = runWrites else { return nil }
        if let existing = writes.blocks[table.id] { return existing }
        let all = PendingBlocks()
        writes.blocks[table.id] = all
        return all
    }

    /// Writes a pending block in place of the one it grew from.
    private func writeBlock(_ table: Table, _ key: IndexKey, _ pending: PendingBlock) throws {
        try key.withBytes { k in
            if let stored = pending.stored { try deleteStored(table, k, stored) }
            _ = try rawPutBlock(table, k, pending.writer.encoded(), flags: 0)
        }
    }

    /// Writes an edited block in place of the stored one: none when no key is left, in two halves with
    /// room to grow when it outgrew `Blocks.budget`.
    private func writeEdit(_ table: Table, _ key: IndexKey, _ edit: EditedBlock) throws {
        try key.withBytes { k in
            try deleteStored(table, k, edit.stored)
            if edit.current.isEmpty { return }
            if edit.current.count <= Blocks.budget {
                _ = try rawPutBlock(table, k, edit.current, flags: 0)
                return
            }
            var keys: [UInt64] = []
            guard edit.current.withUnsafeBytes({ BlockView($0)?.keys(into: &keys) ?? false }) else { throw damagedBlock(table, k) }
            let half = keys.count / 2
            for part in [keys[..<half], keys[half...]] {
                for piece in BlockWriter.blocks(part) { _ = try rawPutBlock(table, k, piece, flags: 0) }
            }
        }
    }

    /// Deletes the block `stored` of `key` from the table.
    private func deleteStored(_ table: Table, _ key: Bytes, _ stored: [UInt8]) throws {
        try stored.withUnsafeBytes { v in
            var kv = mdbVal(key)
            var vv = mdbVal(v)
            let rc = mdb_del(txn, table.id, &kv, &vv)
            if rc == MDB_MAP_FULL { throw MapFull() }
            if rc != MDB_NOTFOUND { try env.check(rc) }
        }
    }

    /// Writes the edited blocks of `key` in `all`, if any.
    private func storeEdits(_ table: Table, _ key: IndexKey, _ all: PendingBlocks) throws {
        for edit in all.takeEdits(of: key) { try writeEdit(table, key, edit) }
    }

    /// Removes `number` from, or files it in, the block the table holds as `stored` under `key`, or the
    /// transaction's edit of it: kept as an edit, written later (see `EditedBlock`). False when the
    /// number was absent (a removal) or filed already.
    private func edit(_ table: Table, _ key: Bytes, _ indexKey: IndexKey, stored: Bytes, removing: Bool, _ number: UInt64) throws -> Bool {
        guard let storedView = BlockView(stored) else { throw damagedBlock(table, key) }
        guard let all = pendingBlocks(table) else {
            throw LatticeError.storage(path: env.path, code: EINVAL, message: "a packed index changed outside a write transaction.")
        }
        if let place = all.place(indexKey, storedView.first) { return try edit(table, key, indexKey, all, place, removing: removing, number) }
        // The edit is written into the scratch buffer, which then becomes the edit's block.
        guard let block = try editedBlock(table, key, all, {
            removing ? storedView.removing(number, into: &$0) : storedView.inserting(number, into: &$0)
        }) else { return false }
        let edit = EditedBlock(stored: stored, storedView, current: block)
        if block.count > Blocks.budget {
            // Full: written now, split in two, so that no edit outgrows a block by much (keys filed
            // one after another, each above the last, would otherwise make one ever longer).
            try writeEdit(table, indexKey, edit)
            return true
        }
        if all.editCount >= Transaction.pendingLimit {
            // A bound on memory: every edit of the table written.
            for (other, edits) in all.takeEdits() {
                for edit in edits { try writeEdit(table, other, edit) }
            }
        }
        all.keep(edit, under: indexKey)
        return true
    }

    /// `edit` of the block the write edited already at `place`: the edit is written into the scratch
    /// buffer, which then trades places with the block it replaces, so that a block edited again and
    /// again allocates nothing.
    private func edit(_ table: Table, _ key: Bytes, _ indexKey: IndexKey, _ all: PendingBlocks, _ place: PendingBlocks.Place,
                      removing: Bool, _ number: UInt64) throws -> Bool {
        guard var block = try editedBlock(table, key, all, { block in
            all.withCurrent(place) { current -> BlockEdit in
                // An edit that removed every key holds an empty block.
                if current.isEmpty {
                    if removing { return .unchanged }
                    block = Blocks.single(number)
                    return .edited
                }
                return current.withUnsafeBytes { bytes in
                    guard let view = BlockView(bytes) else { return .damaged }
                    return removing ? view.removing(number, into: &block) : view.inserting(number, into: &block)
                }
            }
        }) else { return false }
        if block.count > Blocks.budget {
            // Full: written now, split in two (see above).
            var edit = all.forget(place)
            edit.current = block
            try writeEdit(table, indexKey, edit)
        } else {
            all.withCurrent(place) { swap(&$0, &block) }
            swap(&block, &all.scratch)
        }
        return true
    }

    /// The block `change` writes into the scratch buffer of `all` (taken out meanwhile), or nil when it
    /// found nothing to change (the buffer is put back); throws for a damaged block.
    private func editedBlock(_ table: Table, _ key: Bytes, _ all: PendingBlocks, _ change: (inout [UInt8]) -> BlockEdit) throws -> [UInt8]? {
        var block: [UInt8] = []
        swap(&block, &all.scratch)
        switch change(&block) {
        case .unchanged:
            swap(&block, &all.scratch)
            return nil
        case .damaged:
            throw damagedBlock(table, key)
        case .edited:
            return block
        }
    }

    /// Writes the pending block of `key`, if any.
    private func storeBlock(_ table: Table, _ key: Bytes) throws {
        // Most edits find nothing pending: no dictionary key is made for them.
        guard let all = runWrites?.blocks[table.id], !all.byKey.isEmpty else { return }
        let indexKey = IndexKey(key)
        guard let pending = all.byKey.removeValue(forKey: indexKey) else { return }
        try writeBlock(table, indexKey, pending)
    }

    /// Files `number` under `key` wherever it goes among the key's blocks: in the block it falls in, as
    /// an edit of it (see `edit`).
    private func insert(_ table: Table, _ key: Bytes, _ number: UInt64) throws {
        try storeBlock(table, key)
        let indexKey = IndexKey(key)
        if let all = runWrites?.blocks[table.id], let place = all.place(indexKey, number, covering: true) {
            _ = try edit(table, key, indexKey, all, place, removing: false, number)
            return
        }
        let cursor = try writeCursor(table)
        guard let stored = try floorBlock(cursor, table, key, number) ?? firstBlock(cursor, key) else {
            // The key has no block (nor, then, an edited one).
            _ = try rawPutBlock(table, key, Blocks.single(number), flags: 0)
            return
        }
        _ = try edit(table, key, indexKey, stored: stored, removing: false, number)  // false: filed already
    }

    /// The block of `key` whose first object key is the greatest not above `number` (the LMDB cursor left
    /// on it), or nil when `number` is below every block (or the key has none).
    private func floorBlock(_ cursor: OpaquePointer?, _ table: Table, _ key: Bytes, _ number: UInt64) throws -> Bytes? {
        try Runs.withKey(number) { value in
            var k = mdbVal(key)
            var v = mdbVal(value)
            var rc = mdb_cursor_get(cursor, &k, &v, MDB_GET_BOTH_RANGE)
            if rc == 0, v.mv_size >= 8, Runs.number(bytes(v)) == number { return bytes(v) }
            if rc == 0 {
                rc = mdb_cursor_get(cursor, &k, &v, MDB_PREV_DUP)
            } else if rc == MDB_NOTFOUND {
                k = mdbVal(key)
                guard mdb_cursor_get(cursor, &k, &v, MDB_SET_KEY) == 0 else { return nil }
                rc = mdb_cursor_get(cursor, &k, &v, MDB_LAST_DUP)
            }
            if rc == MDB_NOTFOUND { return nil }
            try env.check(rc)
            return bytes(v)
        }
    }

    /// The first block of `key` (the LMDB cursor left on it), or nil when it has none.
    private func firstBlock(_ cursor: OpaquePointer?, _ key: Bytes) throws -> Bytes? {
        var k = mdbVal(key)
        var v = MDB_val()
        let rc = mdb_cursor_get(cursor, &k, &v, MDB_SET_KEY)
        if rc == MDB_NOTFOUND { return nil }
        try env.check(rc)
        return bytes(v)
    }

    /// `mdb_put` of a block; false for `MDB_KEYEXIST`, `MapFull` for a full map.
    private func rawPutBlock(_ table: Table, _ key: Bytes, _ block: [UInt8], flags: UInt32) throws -> Bool {
        try block.withUnsafeBytes { v in
            var k = mdbVal(key)
            var value = mdbVal(v)
            let rc = mdb_put(txn, table.id, &k, &value, flags)
            if rc == MDB_KEYEXIST { return false }
            if rc == MDB_MAP_FULL { throw MapFull() }
            try env.check(rc)
            return true
        }
    }

    /// The error for a block filed under `key` that does not decode.
    func damagedBlock(_ table: Table, _ key: Bytes) -> LatticeError {
        .corruptFile(path: env.path, reason: "the object keys filed under \(env.seals.describe(key: key, in: table)) in "
            + "'\(env.seals.name(of: table))' do not decode (a damaged value).")
    }
}
