/// What `Results.Iterator` does, for any class: not generic, so that the per-object path is compiled
/// once, optimized, instead of running unspecialized in every client.
///
/// Records are read in batches, one cursor walk each (a cursor stays on its leaf page from one key to
/// the next, where a lookup per object descends the tree and takes the map lock every time). A batch
/// is read again from the current position once the handle's view changed (a write in the loop), so
/// every object is as fresh as one fetched when it is reached; batches shrink while that keeps
/// happening, so a loop that writes on every step reads one record at a time.
///
/// Which objects the loop began with: filtered or sorted results (and loops inside a write) take a
/// snapshot of the matching keys first. A loop over all objects of a class walks the class in key
/// order instead and recognizes objects created after it began: their creation stamp (classes keyed
/// by an integer primary key) is above the snapshot's transaction, or their key (never reused) is
/// above the last key the class had.
struct ResultsReader {
    let lattice: Lattice
    let info: ClassInfo?
    /// The class instantiated: the iterator's element type.
    let type: Object.Type
    /// `info.recyclable` (for `type`), kept apart so the per-object path does not touch `info`.
    private let recyclable: Bool
    /// The snapshot of keys, or nil while walking the class.
    private var keys: [Int64]?
    private var walk: ResultsWalk?
    /// The position in `keys` of the next object (used with a snapshot of keys).
    private var position = 0
    /// The position in `keys` of the batch's first entry, and the position `object(at:)` was asked last.
    private var batchStart = 0
    private var asked = -2
    /// The objects read ahead, their records all in `batchStorage`, or in the map when the snapshot
    /// lends them (see `Lattice.lendsRecords`; the batch is then used only within its generation).
    private var batch: [BatchEntry] = []
    private var batchStorage: RecordStorage?
    private var batchOffset = 0
    private var batchGeneration: UInt64 = 0
    private var batchSize = 1
    /// The object returned last: handed out again for the next one when the loop kept no reference
    /// to it (see `Object.recycled`).
    private var spare: Object?

    /// The most records read ahead at once.
    static var maxBatch: Int { 256 }
    /// The most read ahead at once when the keys are not in ascending order (sorted results): each batch
    /// is looked up in key order, so the more keys a batch holds, the more of them share a run. Bounded
    /// by bytes too, after the records of the batch before (see `BatchRead.maxScatteredBytes`).
    static var maxScatteredBatch: Int { 8_192 }
    /// Whether the keys of the batch read last were not in ascending order and its records lent (told batch
    /// by batch: a scan of every key would cost a loop that writes, and so starts a reader, on every step
    /// that much each time).
    private var scattered = false
    /// The records' mean size in the batch read last (0 before the first).
    private var recordBytes = 0

    init(lattice: Lattice, info: ClassInfo?, type: Object.Type, keys: [Int64]?, walk: ResultsWalk?) {
        self.lattice = lattice
        self.info = info
        self.type = type
        recyclable = info.map { $0.type == type && $0.recyclable } ?? false
        self.keys = keys
        self.walk = walk
    }

    /// Goes on with `keys`, which begin with the keys so far: a loop that takes its keys a batch at a time.
    mutating func extend(keys: [Int64]) { self.keys = keys }

    /// The next object still present, or nil at the end.
    mutating func next() -> Object? {
        while true {
            if batchOffset >= batch.count || batchGeneration != lattice.generation {
                guard let info else { return nil }
                // Grow while batches are used up; start over small when a write made one stale.
                batchSize = batchOffset >= batch.count ? Swift.min(batchSize * 4, maxBatchSize) : 1
                if !readBatch(info) { return nil }
            }
            let entry = batch[batchOffset]
            batchOffset += 1
            position += 1
            walk?.after = entry.key
            guard let slice = entry.slice else { continue }
            return instance(entry.key, slice)
        }
    }

    /// The object at `index` of the snapshot of keys (nil when it is gone), from the batch read last
    /// when that holds it. Otherwise a new batch is read: one ending at `index` when `index + 1` was asked
    /// last (a loop walking backwards: `reversed()`, `last(where:)`), one starting there otherwise.
    /// Batches grow fourfold while positions are asked one after another, either way, from one object
    /// after a jump.
    mutating func object(at index: Int) -> Object? {
        guard let info, let keys, keys.indices.contains(index) else { return nil }
        if batchGeneration != lattice.generation || index < batchStart || index >= batchStart + batch.count {
            let backward = index + 1 == asked
            let inOrder = backward || index == asked + 1
            // A jump reads only the object asked (random access reads nothing it does not use).
            batchSize = inOrder && batchGeneration == lattice.generation ? Swift.min(batchSize * 4, maxBatchSize) : 1
            position = index
            if !readBatch(info, backward: backward) { return nil }
        }
        asked = index
        let entry = batch[index - batchStart]
        guard entry.key == keys[index], let slice = entry.slice else { return nil }
        return instance(entry.key, slice)
    }

    /// The object at `index` of the snapshot of keys when the batch read last holds it and is current,
    /// else nil (the caller then asks `object(at:)`). The common step of an index loop, `reversed()` or
    /// `last(where:)`: the keys and the batch were read in this generation of the handle's view, so
    /// `index` is in range and the entry is the key's (nothing to check again).
    @inline(__always)
    mutating func batched(at index: Int) -> Object? {
        guard keys != nil, batchGeneration == lattice.generation, index >= batchStart, index < batchStart + batch.count,
              let slice = batch[index - batchStart].slice else { return nil }
        asked = index
        return instance(batch[index - batchStart].key, slice)
    }

    /// In a walk: the object at `index` (counted in walk order from the walk's start) when the batch
    /// read last holds it and is current, else nil. Serves a position asked again without reading.
    mutating func walked(at index: Int) -> Object? {
        guard walk != nil, batchGeneration == lattice.generation,
              index >= batchStart, index < batchStart + batchOffset, let slice = batch[index - batchStart].slice else { return nil }
        return instance(batch[index - batchStart].key, slice)
    }

    /// The instance for the object `key` whose record is `slice` (in `batchStorage`, or lent by the
    /// snapshot): the one returned last when the caller kept no reference to it, a new one otherwise.
    @inline(__always)
    private mutating func instance(_ key: Int64, _ slice: RecordSlice) -> Object? {
        let storage = batchStorage.map(Unmanaged.passUnretained)
        if recyclable, let object = Object.recycled(&spare, lattice, key: key, storage: storage, slice: slice) {
            return object
        }
        guard let info else { return nil }
        let object = info.instance(type)
        object.attach(to: lattice, info: info, key: key, storage: storage?.takeUnretainedValue(), slice: slice)
        spare = object
        return object
    }

    /// The most records the next batch may read.
    private var maxBatchSize: Int {
        guard scattered else { return Self.maxBatch }
        return Swift.max(Self.maxBatch, Swift.min(Self.maxScatteredBatch, BatchRead.maxScatteredBytes / Swift.max(recordBytes, 1)))
    }

    /// Reads the next batch from the current position (with a snapshot of keys and `backward`: the batch
    /// ending at the current position); false at the end.
    private mutating func readBatch(_ info: ClassInfo, backward: Bool = false) -> Bool {
        var read = BatchRead(size: batchSize)
        let keys = self.keys
        let position = self.position
        let walk = self.walk
        var entries: [BatchEntry] = []
        swap(&entries, &batch)   // refilled in place, keeping its capacity
        batchStorage = lattice.reading("the objects of '\(info.name)'") { txn in
            read.lends = lattice.lendsRecords(txn)
            return try txn.withCursor(info.objectsTable) { cursor in
                if let walk {
                    var entry = try walk.downward ? walk.entry(before: &cursor) : walk.entry(after: &cursor)
                    // On another snapshot than the loop's, objects created since are passed over: keys
                    // above the class's last key then, or (keyed by primary key) a later creation stamp.
                    let snapshot = walk.snapshot ?? txn.id
                    let sameSnapshot = txn.id == snapshot
                    while let e = entry, read.count < read.size {
                        let key = KeyCodec.int(e.key)
                        if key > walk.lastKey { break }
                        if sameSnapshot || !info.keyedByPrimaryKey || (RecordLayout(e.value)?.stamp ?? 0) <= UInt64(snapshot) {
                            if !read.take(key, e.value) { break }
                        }
                        entry = try walk.downward ? cursor.previous() : cursor.next()
                    }
                } else if let keys {
                    // Backwards: from the current position down, the batch reversed below.
                    let step = backward ? -1 : 1
                    let end = backward ? Swift.max(position - read.size, -1) : Swift.min(position + read.size, keys.count)
                    let positions = backward ? end + 1..<position + 1 : position..<end
                    // Keys that descend (the keys of results in reverse, `reversed()`) are walked down the class.
                    let descending = !zip(keys[positions], keys[positions].dropFirst()).contains { $0 <= $1 }
                    // Only records read where they are gain from key order (copies keep to small batches).
                    scattered = read.lends && !descending && zip(keys[positions], keys[positions].dropFirst()).contains { $0 >= $1 }
                    if scattered {
                        read.maxBytes = BatchRead.maxScatteredBytes
                        try read.takeInKeyOrder(stride(from: position, to: end, by: step).map { keys[$0] }, &cursor)
                        return read.lend(into: &entries)
                    }
                    var previous: Int64?
                    for index in stride(from: position, to: end, by: step) {
                        let key = keys[index]
                        // After the key before it, the neighbouring entry is usually the wanted one (unless
                        // objects were added or deleted since the snapshot of keys).
                        let record = try ObjectTable.record(&cursor, key: key, after: previous, step: descending ? Int64(-step) : Int64(step))
                        previous = record == nil ? nil : key
                        if !read.take(key, record) { break }
                    }
                }
                // Records lent by the snapshot are read where they are; others (in a write transaction,
                // decrypted) stay valid only until the cursor closes: copy them all at once now.
                return read.lends ? read.lend(into: &entries) : read.copy(into: &entries)
            }
        }
        if backward && keys != nil { entries.reverse() }
        recordBytes = read.count > 0 ? read.bytes / read.count : 0
        batch = entries
        batchOffset = 0
        batchStart = backward ? position - entries.count + 1 : position
        batchGeneration = lattice.generation
        return !batch.isEmpty
    }
}

/// Positional reads (`collection[i]`) of the objects a snapshot of keys names: reads ahead from the
/// position asked last, in the direction the positions go, so that index loops, slices, `reversed()`
/// and `Collection` algorithms read records in batches (one cursor walk per batch) instead of one
/// lookup per object. Kept inline in the key cache of a collection (a class that copies of the collection
/// share), which serializes access with the handle's `synchronized`: no allocation of its own.
struct PositionalReader {
    private var reader: ResultsReader?
    private var generation: UInt64 = 0

    /// The object at `position` of `keys` (an instance of `type`), or nil when it is gone or cannot be
    /// read ahead (the caller then looks it up alone).
    mutating func object(at position: Int, of keys: [Int64], lattice: Lattice, info: ClassInfo?, type: Object.Type) -> Object? {
        // The keys are the same array while the handle's view is (see `ResultsKeyCache`).
        if reader == nil || generation != lattice.generation {
            reader = ResultsReader(lattice: lattice, info: info, type: type, keys: keys, walk: nil)
            generation = lattice.generation
        }
        return reader?.object(at: position)
    }

    /// The object at `position` when the batch read last holds it and is current (see
    /// `ResultsReader.batched(at:)`); nil otherwise, and then `object(at:of:…)` reads it.
    @inline(__always)
    mutating func batched(at position: Int) -> Object? {
        reader?.batched(at: position)
    }
}

/// The objects of a List or LinkingObjects, as their keys were when the loop began, read in batches by
/// a `ResultsReader`. Every key names an object unless one was deleted since (then it is passed over, as
/// a loop over `Results` passes over it): a key naming no object while nothing changed is a damaged file,
/// reported as a link read alone reports it.
struct KeyedObjects {
    private var reader: ResultsReader
    private let keys: [Int64]
    private var index = 0
    private let generation: UInt64

    init(lattice: Lattice, info: ClassInfo, type: Object.Type, keys: [Int64]) {
        reader = ResultsReader(lattice: lattice, info: info, type: type, keys: keys, walk: nil)
        self.keys = keys
        generation = lattice.generation
    }

    /// The next object, or nil at the end.
    mutating func next() -> Object? {
        guard index < keys.count else { return nil }
        let object = reader.next()
        if let object, object._key == keys[index] {
            index += 1
            return object
        }
        if reader.lattice.generation == generation, let info = reader.info {
            let missing = keys[index]
            let lattice = reader.lattice
            let _: Void = lattice.reading("a linked '\(info.name)'") { _ in throw LatticeError.danglingLink(lattice.env.path, info, missing) }
        }
        // Objects deleted since the loop began: carry on after the one the reader found.
        guard let object, let found = keys[index...].firstIndex(of: object._key) else { return nil }
        index = found + 1
        return object
    }
}

/// Where an iterator walking a whole class stands (see `ResultsReader`).
struct ResultsWalk {
    /// The transaction id of the snapshot the loop began on; nil: every object of the handle's current
    /// view is read (positional reads of a class, which know that no object was added or deleted since
    /// they began, see `ClassPositions`).
    let snapshot: Int?
    /// The class's last key when the loop began.
    let lastKey: Int64
    /// Whether the walk goes from the last key down.
    var downward = false
    /// The key of the object returned last, nil before the first.
    var after: Int64?

    /// The entry after `after` (the first without it), the cursor left there.
    func entry(after cursor: inout Cursor) throws -> Cursor.Entry? {
        guard let after else { return try cursor.first() }
        let entry = try KeyCodec.withObjectKey(after) { try cursor.seek(atLeast: $0) }
        if let e = entry, KeyCodec.int(e.key) == after { return try cursor.next() }
        return entry
    }

    /// The entry before `after` (the last without it), the cursor left there; before the first, the
    /// entry of the last key at most `lastKey` (objects created since the walk began are above it).
    func entry(before cursor: inout Cursor) throws -> Cursor.Entry? {
        guard let after else {
            guard lastKey < .max, let e = try KeyCodec.withObjectKey(lastKey, { try cursor.seek(atLeast: $0) }) else { return try cursor.last() }
            return KeyCodec.int(e.key) == lastKey ? e : try cursor.previous()
        }
        // Past the first key at least `after`, or past the end when none is.
        if try KeyCodec.withObjectKey(after, { try cursor.seek(atLeast: $0) }) == nil { return try cursor.last() }
        return try cursor.previous()
    }
}

/// An object read ahead: its key, and its record copy (nil: the object is gone).
private struct BatchEntry {
    let key: Int64
    let slice: RecordSlice?
}

/// One batch being read: keys and records in order, gathered inside a cursor walk, then copied.
private struct BatchRead {
    /// A batch ends early once its records reach `maxBytes`: by default this many, so that a batch's
    /// storage (which lives while any of its objects does) or the mapped pages a walk holds stay few.
    static let defaultMaxBytes = 64 << 10
    /// The bound for a batch of scattered keys whose records stay where they are: looked up in key order,
    /// such a batch gains from its size, and its records are not copied.
    static let maxScatteredBytes = 512 << 10
    let size: Int
    var maxBytes = BatchRead.defaultMaxBytes
    /// Whether the records stay where they are (`Lattice.lendsRecords`).
    var lends = false
    /// The entries in order, records still in the map.
    private var found: [(key: Int64, bytes: UnsafeRawBufferPointer?)] = []
    /// The bytes of the records taken.
    private(set) var bytes = 0

    init(size: Int) {
        self.size = size
        found.reserveCapacity(size)
    }

    /// The number of entries taken.
    var count: Int { found.count }

    /// Adds an entry (nil: the object is gone); false once the batch is full enough.
    mutating func take(_ key: Int64, _ value: UnsafeRawBufferPointer?) -> Bool {
        found.append((key, value))
        bytes += value?.count ?? 0
        // A batch's storage lives while any of its objects does: keep it small.
        return bytes < maxBytes
    }

    /// Takes the records of `keys` in their order, looked up in ascending key order: after one lookup,
    /// the next key is usually in the run the cursor stands on or the one beside it (no tree search).
    mutating func takeInKeyOrder(_ keys: [Int64], _ cursor: inout Cursor) throws {
        let order = keys.indices.sorted { keys[$0] < keys[$1] }
        var records = [UnsafeRawBufferPointer?](repeating: nil, count: keys.count)
        var previous: Int64?
        for i in order {
            records[i] = try ObjectTable.record(&cursor, key: keys[i], after: previous)
            previous = records[i] == nil ? nil : keys[i]
        }
        for (key, record) in zip(keys, records) where !take(key, record) { break }
    }

    /// Fills `entries` (emptied, its capacity reused) with the gathered records where they are; no storage.
    func lend(into entries: inout [BatchEntry]) -> RecordStorage? {
        entries.removeAll(keepingCapacity: true)
        entries.reserveCapacity(found.count)
        for (key, bytes) in found { entries.append(BatchEntry(key: key, slice: bytes.map(RecordSlice.init))) }
        return nil
    }

    /// Copies the gathered records out of the map into one storage, returned; `entries` (emptied,
    /// its capacity reused) receives them in order.
    func copy(into entries: inout [BatchEntry]) -> RecordStorage {
        entries.removeAll(keepingCapacity: true)
        entries.reserveCapacity(found.count)
        return RecordStorage.copy(found, total: bytes) { key, copy in
            entries.append(BatchEntry(key: key, slice: copy.map(RecordSlice.init)))
        }
    }
}
