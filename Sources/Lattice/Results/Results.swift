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
        lattice.reading("the objects of '\(info?.name ?? "\(Element.self)")'") { _ in try checkedKeys() }
    }

    /// `keys()` for throwing APIs: a storage error (a damaged record) is thrown instead of stopping.
    func checkedKeys() throws -> [Int64] {
        guard let info else { return [] }
        if cache.generation == lattice.generation { return cache.keys }
        cache.keys = try evaluateKeys(info, lattice.readTransaction())
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
            return Iterator(results: self, keys: nil, walk: ResultsWalk(snapshot: start.0, lastKey: start.1 ?? .min))
        }
        return Iterator(results: self, keys: keys())
    }

    /// Walks the objects as they were when the loop began; objects deleted meanwhile are skipped.
    ///
    /// Filtered or sorted results (and loops inside a write) take a snapshot of the matching keys first;
    /// a loop over all objects of a class walks the class in key order and passes over objects created
    /// after it began. Each object is as fresh as one fetched when it is reached. When the loop kept no
    /// reference to the object returned last, the iterator may return that same instance again, now
    /// standing for the next object (see the *Concurrency* article).
    public struct Iterator: IteratorProtocol {
        private var reader: ResultsReader

        init(results: Results, keys: [Int64]?, walk: ResultsWalk? = nil) {
            reader = ResultsReader(lattice: results.lattice, info: results.info, type: Element.self, keys: keys, walk: walk)
        }

        /// The next object still present, or nil at the end.
        public mutating func next() -> Element? {
            guard let object = reader.next() else { return nil }
            // The reader creates instances of `Element.self` only.
            return unsafeDowncast(object, to: Element.self)
        }
    }

    /// For example `Results<Dog> [ [0] Dog { ... } ]` (at most 100 objects shown).
    public var description: String {
        let shown = prefix(100).enumerated().map { "\t[\($0.offset)] \($0.element)" }
        let more = count > 100 ? "\n\t... \(count - 100) more" : ""
        return "Results<\(Element.self)> [\n" + shown.joined(separator: ",\n") + more + "\n]"
    }
}
