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
        Iterator(results: self, keys: keys())
    }

    /// Walks a snapshot of the keys taken when the loop began; objects deleted meanwhile are skipped.
    ///
    /// Records are read in batches, one cursor walk each (a cursor stays on its leaf page from one key to
    /// the next, where a lookup per object descends the tree and takes the map lock every time). A batch
    /// is read again from the current position once the handle's view changed (a write in the loop), so
    /// every object is as fresh as one fetched when it is reached; batches shrink while that keeps
    /// happening, so a loop that writes on every step reads one record at a time.
    public struct Iterator: IteratorProtocol {
        let results: Results
        let keys: [Int64]
        var position = 0
        /// Records of `keys[batchStart..<batchStart + batch.count]` (nil: the object is gone), all in `batchStorage`.
        private var batch: [RecordSlice?] = []
        private var batchStorage: RecordStorage?
        private var batchStart = 0
        private var batchGeneration: UInt64 = 0
        private var batchSize = 1

        /// The most records read ahead at once.
        static var maxBatch: Int { 256 }
        /// A batch ends early once its records reach this many bytes.
        static var maxBatchBytes: Int { 64 << 10 }

        init(results: Results, keys: [Int64]) {
            self.results = results
            self.keys = keys
        }

        /// The next object still present, or nil at the end.
        public mutating func next() -> Element? {
            guard let info = results.info else { return nil }
            let lattice = results.lattice
            while position < keys.count {
                let offset = position - batchStart
                if offset >= batch.count || batchGeneration != lattice.generation {
                    // Grow while batches are used up; start over small when a write made one stale.
                    batchSize = offset >= batch.count ? Swift.min(batchSize * 4, Self.maxBatch) : 1
                    readBatch(info, lattice)
                }
                let slice = batch[position - batchStart]
                let key = keys[position]
                position += 1
                if let slice, let batchStorage {
                    return lattice.materialize(Element.self, info, key: key, storage: batchStorage, slice: slice)
                }
            }
            return nil
        }

        private mutating func readBatch(_ info: ClassInfo, _ lattice: Lattice) {
            let end = Swift.min(position + batchSize, keys.count)
            var records = batch
            records.removeAll(keepingCapacity: true)
            var storage: RecordStorage?
            lattice.reading("the objects of '\(info.name)'") { txn in
                try txn.withCursor(info.objectsDBI) { cursor in
                    // Bytes in the map stay valid until the cursor closes: gather them, then copy all at once.
                    var found: [UnsafeRawBufferPointer] = []
                    var slots: [Int] = []   // where each found record goes in `records`
                    found.reserveCapacity(end - position)
                    slots.reserveCapacity(end - position)
                    var bytes = 0
                    var positioned = false
                    for key in keys[position..<end] {
                        var entry: (key: Bytes, value: Bytes)?
                        // Usually the next entry is the wanted one; otherwise (objects added or deleted since
                        // the snapshot of keys, or results in another order) seek it.
                        if positioned, let e = try cursor.move(MDB_NEXT), KeyCodec.int(e.key) == key {
                            entry = e
                        } else {
                            entry = try KeyCodec.withObjectKey(key) { try cursor.move(MDB_SET_KEY, key: $0) }
                        }
                        positioned = entry != nil
                        records.append(nil)
                        if let value = entry?.value {
                            slots.append(records.count - 1)
                            found.append(value)
                            bytes += value.count
                            // A batch's storage lives while any of its objects does: keep it small.
                            if bytes >= Self.maxBatchBytes { break }
                        }
                    }
                    let (copied, copies) = RecordStorage.copy(found)
                    for (slot, copy) in zip(slots, copies) { records[slot] = RecordSlice(copy) }
                    storage = copied
                }
            }
            batch = records
            batchStorage = storage
            batchStart = position
            batchGeneration = lattice.generation
        }
    }

    /// For example `Results<Dog> [ [0] Dog { ... } ]` (at most 100 objects shown).
    public var description: String {
        let shown = prefix(100).enumerated().map { "\t[\($0.offset)] \($0.element)" }
        let more = count > 100 ? "\n\t... \(count - 100) more" : ""
        return "Results<\(Element.self)> [\n" + shown.joined(separator: ",\n") + more + "\n]"
    }
}
