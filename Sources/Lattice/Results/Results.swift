import CLMDB
/// A lazy, live collection of the objects of one class (FEATURES Q1–Q3).
///
/// Nothing is read until asked: `count` reads only counters or an index where the query allows, elements are loaded on access. Results are
/// live: after the handle's own writes (also inside its write transaction) and after `refresh()` they
/// show the new state. A `for … in` loop walks the objects as they were when the loop started.
/// Unsorted results of a class have no guaranteed order; the results of a List, MutableSet or
/// LinkingObjects (`person.dogs.filter("age < 2")`) keep the collection's order.
public struct Results<Element: Object>: RandomAccessCollection, LatticeCollection {
    /// The handle the results read from.
    public let lattice: Lattice
    let info: ClassInfo?
    /// The predicate, sorts and distinct steps (see Results+Query.swift).
    let query: ResultsQuery
    /// Where the candidate objects come from: the whole class, or one object's collection.
    let source: ResultsSource
    private let cache = KeyCache()

    init(lattice: Lattice, info: ClassInfo?, query: ResultsQuery = ResultsQuery(), source: ResultsSource = .all) {
        self.lattice = lattice
        self.info = info
        self.query = query
        self.source = source
    }

    /// Object keys in order, computed once per change of the handle's view.
    final class KeyCache {
        var generation: UInt64 = 0
        var keys: [Int64] = []
    }

    /// The matching object keys in result order, evaluated once per change of the handle's view.
    func keys() -> [Int64] {
        guard let info else { return [] }
        if cache.generation == lattice.generation { return cache.keys }
        cache.keys = lattice.reading("the objects of '\(info.name)'") { txn in try evaluateKeys(info, txn) }
        cache.generation = lattice.generation
        return cache.keys
    }

    /// 0.
    public var startIndex: Int { 0 }
    /// ``count``.
    public var endIndex: Int { count }

    /// The number of objects, read without decoding any.
    public var count: Int {
        guard let info else { return 0 }
        if cache.generation == lattice.generation { return cache.keys.count }
        if let n = lattice.reading("the count of '\(info.name)'", { try countWithoutReading(info, $0) }) { return n }
        return keys().count
    }

    /// The object at `position`; out of range stops with a message.
    public subscript(position: Int) -> Element {
        let keys = keys()
        precondition(position >= 0 && position < keys.count,
                     "Index \(position) is out of range: these results of '\(info?.name ?? "\(Element.self)")' have \(keys.count) objects.")
        return lattice.materialize(Element.self, info!, key: keys[position], record: nil)
    }

    /// The position of `object` in the results, or nil.
    public func index(of object: Element) -> Int? {
        guard object._lattice?.env === lattice.env, object._info === info, (try? object.currentRecord(lattice)) != nil else { return nil }
        let keys = keys()
        // Only unordered results of a whole class are in object-key order.
        if case .collection = source { return keys.firstIndex(of: object._key) }
        if !query.ops.isEmpty { return keys.firstIndex(of: object._key) }
        var low = 0
        var high = keys.count
        while low < high {
            let mid = (low + high) / 2
            if keys[mid] < object._key { low = mid + 1 } else { high = mid }
        }
        return low < keys.count && keys[low] == object._key ? low : nil
    }

    /// An iterator over the objects as they are now; later changes do not affect it.
    public func makeIterator() -> Iterator {
        // All objects of a class, read outside a write: one cursor walk reads keys and records together.
        if let info, case .all = source, query.bound == nil, query.ops.isEmpty, lattice.writer == nil {
            let start = lattice.reading("the objects of '\(info.name)'") { txn in
                (txn.id, try txn.withCursor(info.objectsDBI) { try $0.move(MDB_LAST).map { KeyCodec.int($0.key) } })
            }
            return Iterator(results: self, walk: ResultsWalk(snapshot: start.0, lastKey: start.1 ?? .min))
        }
        return Iterator(results: self, keys: keys())
    }

    /// Walks the objects as they were when the loop began; objects deleted meanwhile are skipped.
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
    public struct Iterator: IteratorProtocol {
        let results: Results
        /// The snapshot of keys, or nil while walking the class.
        private let keys: [Int64]?
        private var walk: ResultsWalk?
        /// The position in `keys` (snapshot), or the number of objects returned (walk).
        private var position = 0
        /// The records read ahead (nil: the object is gone), all in `batchStorage`, and their keys.
        private var batch: [RecordSlice?] = []
        private var batchKeys: [Int64] = []
        private var batchStorage: RecordStorage?
        private var batchOffset = 0
        private var batchGeneration: UInt64 = 0
        private var batchSize = 1

        /// The most records read ahead at once.
        static var maxBatch: Int { 256 }

        init(results: Results, keys: [Int64]) {
            self.results = results
            self.keys = keys
        }

        init(results: Results, walk: ResultsWalk) {
            self.results = results
            self.keys = nil
            self.walk = walk
        }

        /// The next object still present, or nil at the end.
        public mutating func next() -> Element? {
            guard let info = results.info else { return nil }
            let lattice = results.lattice
            while true {
                if batchOffset >= batch.count || batchGeneration != lattice.generation {
                    // Grow while batches are used up; start over small when a write made one stale.
                    batchSize = batchOffset >= batch.count ? Swift.min(batchSize * 4, Self.maxBatch) : 1
                    if !readBatch(info, lattice) { return nil }
                }
                let slice = batch[batchOffset]
                let key = batchKeys[batchOffset]
                batchOffset += 1
                position += 1
                walk?.after = key
                if let slice, let batchStorage {
                    return lattice.materialize(Element.self, info, key: key, storage: batchStorage, slice: slice)
                }
            }
        }

        /// Reads the next batch from the current position; false at the end.
        private mutating func readBatch(_ info: ClassInfo, _ lattice: Lattice) -> Bool {
            var read = BatchRead(size: batchSize, keys: batchKeys, records: batch)
            let keys = self.keys
            let position = self.position
            let walk = self.walk
            read = lattice.reading("the objects of '\(info.name)'") { txn in
                try txn.withCursor(info.objectsDBI) { cursor in
                    if let walk {
                        var entry = try walk.after.map { after in
                            try KeyCodec.withObjectKey(after) { try cursor.move(MDB_SET_RANGE, key: $0) }
                        } ?? cursor.move(MDB_FIRST)
                        if let e = entry, let after = walk.after, KeyCodec.int(e.key) == after { entry = try cursor.move(MDB_NEXT) }
                        // On another snapshot than the loop's, objects created since are passed over: keys
                        // above the class's last key then, or (keyed by primary key) a later creation stamp.
                        let sameSnapshot = txn.id == walk.snapshot
                        while let e = entry, read.keys.count < read.size {
                            let key = KeyCodec.int(e.key)
                            if key > walk.lastKey { break }
                            if sameSnapshot || !info.keyedByPrimaryKey || (RecordLayout(e.value)?.stamp ?? 0) <= UInt64(walk.snapshot) {
                                if !read.take(key, e.value) { break }
                            }
                            entry = try cursor.move(MDB_NEXT)
                        }
                    } else if let keys {
                        var positioned = false
                        for key in keys[position..<Swift.min(position + read.size, keys.count)] {
                            var entry: (key: Bytes, value: Bytes)?
                            // Usually the next entry is the wanted one; otherwise (objects added or deleted since
                            // the snapshot of keys, or results in another order) seek it.
                            if positioned, let e = try cursor.move(MDB_NEXT), KeyCodec.int(e.key) == key {
                                entry = e
                            } else {
                                entry = try KeyCodec.withObjectKey(key) { try cursor.move(MDB_SET_KEY, key: $0) }
                            }
                            positioned = entry != nil
                            if !read.take(key, entry?.value) { break }
                        }
                    }
                    // Bytes in the map stay valid until the cursor closes: copy them all at once now.
                    read.copy()
                    return read
                }
            }
            batch = read.records
            batchKeys = read.keys
            batchStorage = read.storage
            batchOffset = 0
            batchGeneration = lattice.generation
            return !batch.isEmpty
        }
    }

    /// For example `Results<Dog> [ [0] Dog { ... } ]` (at most 100 objects shown).
    public var description: String {
        let shown = prefix(100).enumerated().map { "\t[\($0.offset)] \($0.element)" }
        let more = count > 100 ? "\n\t... \(count - 100) more" : ""
        return "Results<\(Element.self)> [\n" + shown.joined(separator: ",\n") + more + "\n]"
    }
}

/// Where an iterator walking a whole class stands (see `Results.Iterator`).
struct ResultsWalk {
    /// The transaction id of the snapshot the loop began on.
    let snapshot: Int
    /// The class's last key when the loop began.
    let lastKey: Int64
    /// The key of the object returned last, nil before the first.
    var after: Int64?
}

/// One batch being read: keys and records in order, gathered inside a cursor walk, then copied.
private struct BatchRead {
    /// A batch ends early once its records reach this many bytes.
    static let maxBytes = 64 << 10
    let size: Int
    var keys: [Int64]
    var records: [RecordSlice?]
    var storage: RecordStorage?
    private var found: [UnsafeRawBufferPointer] = []
    private var slots: [Int] = []   // where each found record goes in `records`
    private var bytes = 0

    /// Reuses the arrays of the previous batch.
    init(size: Int, keys: [Int64], records: [RecordSlice?]) {
        self.size = size
        self.keys = keys
        self.records = records
        self.keys.removeAll(keepingCapacity: true)
        self.records.removeAll(keepingCapacity: true)
        found.reserveCapacity(size)
        slots.reserveCapacity(size)
    }

    /// Adds an entry (nil: the object is gone); false once the batch is full enough.
    mutating func take(_ key: Int64, _ value: UnsafeRawBufferPointer?) -> Bool {
        keys.append(key)
        records.append(nil)
        guard let value else { return true }
        slots.append(records.count - 1)
        found.append(value)
        bytes += value.count
        // A batch's storage lives while any of its objects does: keep it small.
        return bytes < BatchRead.maxBytes
    }

    /// Copies the gathered records out of the map into one storage.
    mutating func copy() {
        let (copied, copies) = RecordStorage.copy(found)
        for (slot, bytes) in zip(slots, copies) { records[slot] = RecordSlice(bytes) }
        storage = copied
    }
}
