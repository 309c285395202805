/// A lazy, live collection of the objects of one class.
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
    let cache: ResultsKeyCache

    init(lattice: Lattice, info: ClassInfo?, query: ResultsQuery = ResultsQuery(), source: ResultsSource = .all) {
        self.lattice = lattice
        self.info = info
        self.query = query
        self.source = source
        var wholeClass = false
        var columns: UInt64?
        var indexOrder: ResultsKeyCache.IndexOrder?
        if case .all = source {
            wholeClass = query.bound == nil && query.ops.isEmpty
            columns = query.columnMask
            if query.ops.count == 1, case let .sort(descriptors) = query.ops[0], descriptors.count == 1,
               let column = descriptors[0].path.rootColumn {
                indexOrder = .init(column: column, ascending: descriptors[0].ascending, filtered: query.bound != nil)
            }
        }
        cache = ResultsKeyCache(wholeClass: wholeClass, columns: columns, indexOrder: indexOrder,
                                patching: columns == nil ? nil : query)
    }

    /// The matching object keys in result order, evaluated once per change of the handle's view.
    func keys() -> [Int64] {
        guard let info else { return [] }
        return lattice.synchronized { cache.keysOrStop(lattice, info) { try evaluateKeys($0, $1) } }
    }

    /// `keys()` for throwing APIs: a storage error (a damaged record) is thrown instead of stopping.
    func checkedKeys() throws -> [Int64] {
        guard let info else { return [] }
        return try lattice.synchronized { try cache.keys(lattice, info) { try evaluateKeys($0, $1) } }
    }

    /// The objects, read through throwing paths (see `CheckedObjects`).
    func checkedObjects() throws -> [Object] {
        guard let info else { return [] }
        return try checkedKeys().compactMap { try lattice.fetchObject(info, key: $0, type: Element.self) }
    }

    func everyObject(on handle: Lattice) -> ClassInfo? {
        guard lattice === handle, case .all = source, query.node == nil, query.bound == nil,
              !query.ops.contains(where: \.isDistinct) else { return nil }
        return info
    }

    /// Takes `keys` as the result at the handle's current view (a notifier that proved the order did not
    /// change), so the next read does not evaluate the query again.
    func adoptKeys(_ keys: [Int64]) {
        guard let info else { return }
        cache.adopt(keys, lattice, info)
    }

    /// True when the results can no longer be read: those of a List, MutableSet or LinkingObjects whose
    /// owner was deleted or whose handle was invalidated. Results of a whole class stay valid: after
    /// ``Lattice/invalidate()`` they read the latest commit (where Realm's would be invalidated).
    public var isInvalidated: Bool {
        if case let .collection(owner, _) = source { return owner.isInvalidated }
        return false
    }

    /// 0.
    public var startIndex: Int { 0 }
    /// ``count``.
    public var endIndex: Int { count }
    // Not the standard library's defaults, which check `i` against `endIndex` (a `count`) on every step
    // of `reversed()`, `last(where:)` and slices; the subscript checks its position itself.
    /// `i + 1`.
    public func index(after i: Int) -> Int { i + 1 }
    /// `i - 1`.
    public func index(before i: Int) -> Int { i - 1 }

    /// The number of objects, read without decoding any.
    public var count: Int {
        guard let info else { return 0 }
        return lattice.synchronized {
            if cache.isCurrent(lattice, info) { return cache.keys.count }
            if let n = cache.countIfCurrent(lattice, info) { return n }
            if let n = lattice.reading("the count of '\(info.name)'", { try countWithoutReading(info, $0) }) {
                cache.keepCount(n, lattice, info)
                return n
            }
            // Sorting changes no count.
            return lattice.reading("the count of '\(info.name)'") { try unsortedKeys(info, $0) }.count
        }
    }

    /// The object at `position`; out of range stops with a message.
    public subscript(position: Int) -> Element {
        guard let info else {
            preconditionFailure("Index \(position) is out of range: these results of '\(Element.self)' have 0 objects.")
        }
        // The cache creates instances of `Element.self` only.
        return unsafeDowncast(cache.object(at: position, lattice: lattice, info: info, type: Element.self,
                                           evaluate: { try evaluateKeys($0, $1) }, matches: { try unorderedKeys($0, $1) }),
                              to: Element.self)
    }

    /// Whether the results are every object of the class in key order: then the class's table itself is read.
    private var isWholeClass: Bool { cache.wholeClass }

    /// The first object, or nil: one object read (the first entry of the class's table for all objects of
    /// a class, one end of the index for a whole class sorted by an indexed property), never a batch.
    public var first: Element? { end(first: true) }

    /// The last object, or nil: one object read, as ``first``.
    public var last: Element? { end(first: false) }

    private func end(first: Bool) -> Element? {
        guard let info else { return nil }
        if isWholeClass {
            // `classEnd` creates an instance of `Element.self`.
            guard let object = lattice.classEnd(Element.self, info, first: first) else { return nil }
            return unsafeDowncast(object, to: Element.self)
        }
        guard let key = sortedEnd(info, first: first) ?? endKey(info, first: first) else { return nil }
        // `materializeReading` creates an instance of `Element.self`.
        return unsafeDowncast(lattice.materializeReading(Element.self, info, key: key), to: Element.self)
    }

    /// Whether there are no objects: the count when it is known without reading objects (cached keys,
    /// an index, the class's table), otherwise the query run until its first match (a scan stops there).
    public var isEmpty: Bool {
        guard let info else { return true }
        let known: Int? = lattice.synchronized {
            if cache.isCurrent(lattice, info) { return cache.keys.count }
            return lattice.reading("the count of '\(info.name)'") { try countWithoutReading(info, $0) }
        }
        if let known { return known == 0 }
        return firstKey(info) == nil
    }

    /// The key of the first or last object of sorted results (sorted once, no distinct) without sorting
    /// them: for a whole class sorted by one indexed property, an end of its index (see
    /// `ResultsOrdering.indexEnd`); otherwise one pass over the sort values of the filtered objects.
    /// nil when the results are not such, or their keys are at hand already.
    private func sortedEnd(_ info: ClassInfo, first: Bool) -> Int64?? {
        guard query.ops.count == 1, case let .sort(descriptors) = query.ops[0],
              !lattice.synchronized({ cache.isCurrent(lattice, info) }) else { return nil }
        if let known = lattice.synchronized({ cache.endIfCurrent(first: first, lattice, info) }) { return known }
        let end: Int64? = lattice.reading("the objects of '\(info.name)'") { txn in
            if case .all = source, query.bound == nil, descriptors.count == 1, let column = descriptors[0].path.rootColumn,
               // Ties keep object-key order either way: the first object sorted descending is the first of the
               // highest value's objects.
               let end = try ResultsOrdering.indexEnd(info, column, low: first == descriptors[0].ascending, lastOfTies: !first,
                                                       skippingNil: false, txn) {
                return end
            }
            let matches = try cache.matches(lattice, info, txn) { try unorderedKeys($0, $1) }
            // A class's filtered objects (their keys ascend) sorted by an indexed property: from the index's end.
            if case .all = source, query.bound != nil, descriptors.count == 1, lattice.writer == nil,
               let column = descriptors[0].path.rootColumn,
               let end = try ResultsOrdering.indexEnd(of: matches, descriptors[0].path, column, ascending: descriptors[0].ascending,
                                                      first: first, info, lattice, txn) {
                return end
            }
            return try ResultsOrdering.sortedEnd(descriptors, matches, first: first, info, lattice, txn)
        }
        lattice.synchronized { cache.keepEnd(end, first: first, lattice, info) }
        return end
    }

    /// The key of the first object (see `endKey`).
    private func firstKey(_ info: ClassInfo) -> Int64? { endKey(info, first: true) }

    /// The key of the first or last object, evaluating no more than needed: the cached keys when current;
    /// for unsorted results of a class, its query run until its first match (keys come in ascending
    /// order), walking back from the class's end for the last when it scans the class; for a
    /// collection's unsorted filter, its elements checked from that end until one matches (a List's
    /// entries read one by one for the first). Otherwise every key is evaluated (and kept).
    private func endKey(_ info: ClassInfo, first: Bool) -> Int64? {
        let cached: Int64?? = lattice.synchronized { cache.isCurrent(lattice, info) ? .some(first ? cache.keys.first : cache.keys.last) : nil }
        if let cached { return cached }
        guard query.ops.isEmpty else { return first ? keys().first : keys().last }
        switch source {
        case .all:
            return lattice.reading("the objects of '\(info.name)'") { txn in
                let plan = try QueryPlanner(info: info, txn: txn, lattice: lattice).plan(query.bound)
                let executor = QueryExecutor(info: info, txn: txn, lattice: lattice)
                return try first ? executor.keys(plan, limit: 1).first : executor.lastKey(plan)
            }
        case let .collection(owner, path):
            return lattice.reading("the objects of '\(info.name)'") { txn in
                let test = query.bound?.compile()
                let executor = QueryExecutor(info: info, txn: txn, lattice: lattice)
                // The first of a List: its entries read in order until one matches, not all of them first.
                if first, path.hops.count == 1, case .list = path.hops[0].kind, !owner.isInvalidated {
                    do {
                        try lattice.forEachListPayload(path.hops[0].property, owner: owner._key) { payload in
                            guard let key = lattice.linkedKey(payload) else { return }
                            if try test.map({ try executor.matches(key, $0) }) ?? true { throw FirstMatch(key: key) }
                        }
                    } catch let found as FirstMatch {
                        return found.key
                    }
                    return nil
                }
                guard let base = try source.keys(lattice, txn) else { return nil }
                guard let test else { return first ? base.first : base.last }
                return try first ? base.first { try executor.matches($0, test) } : base.last { try executor.matches($0, test) }
            }
        }
    }

    /// The objects transformed in order, read as a `for … in` loop reads them (in batches, an instance not
    /// kept by `transform` handed out again): `Collection.map` would read them by position.
    public func map<T>(_ transform: (Element) throws -> T) rethrows -> [T] {
        var out: [T] = []
        out.reserveCapacity(count)
        for object in self { out.append(try transform(object)) }
        return out
    }

    /// Whether `object` is one of these results. For results of a class without `distinct`, the object's
    /// own record is checked against the filter (one lookup, however many objects the results hold).
    public func contains(_ object: Element) -> Bool {
        guard case .all = source, !query.ops.contains(where: \.isDistinct), let info else { return index(of: object) != nil }
        guard object._lattice?.env === lattice.env, object._info === info, (try? object.currentRecord(lattice)) != nil else { return false }
        guard let bound = query.bound else { return true }
        return lattice.reading("an object of '\(info.name)'") { txn in
            try QueryExecutor(info: info, txn: txn, lattice: lattice).matches(object._key, bound.compile())
        }
    }

    /// The position of `object` in the results, or nil.
    public func index(of object: Element) -> Int? {
        guard object._lattice?.env === lattice.env, object._info === info, (try? object.currentRecord(lattice)) != nil else { return nil }
        let keys = keys()
        // Only unordered results of a whole class are in object-key order.
        if case .collection = source { return keys.firstIndex(of: object._key) }
        if !query.ops.isEmpty { return keys.firstIndex(of: object._key) }
        return keys.position(ofAscending: object._key)
    }

    /// `contains(_:)` of an object of this handle is ``index(of:)``: a search of the results' keys, no
    /// object read. Objects of another handle on the same file are compared one by one with `==`.
    public func _customContainsEquatableElement(_ element: Element) -> Bool? {
        if element._lattice == nil { return false }  // unmanaged: equal to no stored object
        return element._lattice === lattice ? index(of: element) != nil : nil
    }

    /// `firstIndex(of:)` of an object of this handle is ``index(of:)`` (see `contains(_:)`).
    public func _customIndexOfEquatableElement(_ element: Element) -> Int?? {
        if element._lattice == nil { return .some(nil) }
        return element._lattice === lattice ? .some(index(of: element)) : nil
    }

    /// An iterator over the objects as they are now; later changes do not affect it.
    public func makeIterator() -> Iterator { _makeIterator(reversed: false) }

    /// The iterator, walking the objects from the last to the first with `reversed`.
    public func _makeIterator(reversed: Bool) -> Iterator {
        // All objects of a class, read outside a write: one cursor walk reads keys and records together.
        if let info, isWholeClass, lattice.writer == nil {
            let start = lattice.reading("the objects of '\(info.name)'") { txn in
                (txn.id, try ObjectTable(table: info.objectsTable).lastKey(txn))
            }
            return Iterator(results: self, keys: nil, walk: ResultsWalk(snapshot: start.0, lastKey: start.1 ?? .min, downward: reversed))
        }
        // Sorted by an indexed property, outside a write: the keys are taken from the index a batch at a
        // time, so a loop that breaks early reads what it reached.
        if !reversed, let info, lattice.writer == nil, let walk = lattice.synchronized({ cache.keyWalk(lattice, info) { try unorderedKeys($0, $1) } }) {
            return Iterator(results: self, keys: walk.keys, growing: walk)
        }
        return Iterator(results: self, keys: reversed ? keys().reversed() : keys())
    }

    /// The objects from the last to the first. A loop over them reads them as a `for … in` loop over the
    /// results does, backwards: in batches, an instance the loop did not keep handed out again.
    public func reversed() -> ReversedLatticeCollection<Results> { ReversedLatticeCollection(self) }

    /// The last object that satisfies `predicate`, or nil: the objects tested from the last, read as
    /// ``reversed()`` reads them.
    public func last(where predicate: (Element) throws -> Bool) rethrows -> Element? {
        try reversed().first(where: predicate)
    }

    /// Walks the objects as they were when the loop began; objects deleted meanwhile are skipped.
    ///
    /// Filtered or sorted results (and loops inside a write) take a snapshot of the matching keys first;
    /// a loop over all objects of a class walks the class in key order and passes over objects created
    /// after it began; a loop over a class sorted by an indexed property takes the keys from the index a
    /// batch at a time (a loop that breaks early reads only what it reached), still those of its start.
    /// Each object is as fresh as one fetched when it is reached. When the loop kept no reference to the
    /// object returned last, the iterator may return that same instance again, now standing for the next
    /// object (see the *Concurrency* article).
    public struct Iterator: IteratorProtocol {
        private var reader: ResultsReader
        /// Keys still being taken from an index (see `IndexKeyWalk`), and how many the reader has.
        private let growing: IndexKeyWalk?
        private var taken: Int

        init(results: Results, keys: [Int64]?, walk: ResultsWalk? = nil, growing: IndexKeyWalk? = nil) {
            reader = ResultsReader(lattice: results.lattice, info: results.info, type: Element.self, keys: keys, walk: walk)
            self.growing = growing
            taken = keys?.count ?? 0
        }

        /// The next object still present, or nil at the end.
        public mutating func next() -> Element? {
            while true {
                // The reader creates instances of `Element.self` only.
                if let object = reader.next() { return unsafeDowncast(object, to: Element.self) }
                guard let growing, let keys = growing.keys(after: taken) else { return nil }
                reader.extend(keys: keys)
                taken = keys.count
            }
        }
    }

    /// For example `Results<Dog> [ [0] Dog { ... } ]` (at most 100 objects shown).
    public var description: String {
        let shown = prefix(100).enumerated().map { "\t[\($0.offset)] \($0.element)" }
        let more = count > 100 ? "\n\t... \(count - 100) more" : ""
        return "Results<\(Element.self)> [\n" + shown.joined(separator: ",\n") + more + "\n]"
    }
}

/// The object keys of a ``Results`` in order, computed once per change of the handle's view, and the
/// reader that serves positional access (`results[i]`) in batches. Not nested in the generic `Results`:
/// a class nested there is generic too, and its fields are then reached through its metadata.
/// It is shared by copies of the results (frozen ones are read from several threads): callers hold the
/// handle's `synchronized`, except `object(at:)`, which takes it.
final class ResultsKeyCache {
    /// Whether the results are every object of the class, in key order.
    let wholeClass: Bool
    /// For results of a whole class selected and ordered by the objects' own values, those columns
    /// (`ResultsQuery.columnMask`; 0 for every object in key order): the keys change only when an object
    /// of the class is added or deleted, one of these columns is written or the handle's view moves, so
    /// `results[i].property = value` in a loop does not evaluate them again on every step. Nil: any
    /// change of the handle's generation may change them.
    private let columns: UInt64?
    /// What `keys` were evaluated at (nil: never).
    private var stamp: KeyStamp?
    private(set) var keys: [Int64] = []
    /// The handle's count of its own commits when `keys` were taken outside a write transaction (nil
    /// inside one): commits the handle made since can be patched in (see `patch`).
    private var stampCommit: UInt64?

    struct KeyStamp: Equatable {
        let view: UInt64
        let membership: UInt64
        let columns: UInt64
    }

    init(wholeClass: Bool, columns: UInt64?, indexOrder: IndexOrder? = nil, patching query: ResultsQuery? = nil) {
        self.wholeClass = wholeClass
        self.columns = columns
        self.indexOrder = indexOrder
        self.query = query
    }

    /// The query of results of a whole class whose keys depend on its own columns only (nil otherwise):
    /// what `patch` places the objects of the handle's own commits by.
    private let query: ResultsQuery?
    /// The placement `patch` uses, made from `query` once (`.some(nil)`: these results cannot be placed),
    /// so that a stale read compiles the filter once, not on every patch.
    private var placement: ResultsPlacement??

    private func placement(_ info: ClassInfo) -> ResultsPlacement? {
        if let made = placement { return made }
        let made = query.flatMap { ResultsPlacement(info: info, query: $0, source: .all) }
        placement = .some(made)
        return made
    }

    /// A class's objects (all, or those a filter matches) sorted by one property of their own.
    struct IndexOrder {
        let column: ScalarColumn
        let ascending: Bool
        /// Whether a filter selects the objects (see `matches`).
        let filtered: Bool
    }

    /// For a class sorted by one property: that property and the direction. When it is indexed, positions
    /// near the start are read from the start of the index (`prefix`), so the first screenful of a large
    /// class sorted by date reads that screenful, not the whole index, after each change; for filtered
    /// results, the index is walked among the filter's matches when that is shorter than sorting them
    /// (see `ResultsOrdering.firstKeys`).
    private let indexOrder: IndexOrder?

    /// The filter's matches (ascending keys, or the collection's order; before sorting) and the stamp they
    /// were found at, while `keys` are not current: what a count, an end or the first screenful of sorted
    /// results needs, found once for each change of the view and sorted when every key is asked for.
    @exclusivity(unchecked) private var matched: (stamp: KeyStamp, keys: [Int64])?

    /// The filter's matches at the handle's current view (`find` runs the filter in `txn`, the current
    /// read transaction), kept until the view changes or every key is evaluated.
    func matches(_ lattice: Lattice, _ info: ClassInfo, _ txn: Transaction,
                 _ find: (ClassInfo, Transaction) throws -> [Int64]) throws -> [Int64] {
        let current = currentStamp(lattice, info)
        if let matched, matched.stamp == current { return matched.keys }
        let found = try find(info, txn)
        matched = (current, found)
        return found
    }

    /// The matches `matches` kept for the handle's current view, if any.
    func keptMatches(_ lattice: Lattice, _ info: ClassInfo) -> [Int64]? {
        guard let matched, matched.stamp == currentStamp(lattice, info) else { return nil }
        return matched.keys
    }
    /// The first keys in that order, under `prefixStamp` (see `prefixObject`).
    @exclusivity(unchecked) private var prefix: [Int64] = []
    @exclusivity(unchecked) private var prefixStamp: KeyStamp?

    /// The stamp computed last and the handle's generation then: every change a stamp follows also
    /// changes the generation, so within one generation the stamp is the same (no lookup per read).
    @exclusivity(unchecked) private var lastStamp: (generation: UInt64, stamp: KeyStamp)?

    private func currentStamp(_ lattice: Lattice, _ info: ClassInfo) -> KeyStamp {
        guard let columns else { return KeyStamp(view: lattice.generation, membership: 0, columns: 0) }
        if let last = lastStamp, last.generation == lattice.generation { return last.stamp }
        let version = lattice.selectionVersion(of: info, columns: columns)
        let stamp = KeyStamp(view: version.view, membership: version.membership, columns: version.columns)
        lastStamp = (lattice.generation, stamp)
        return stamp
    }

    /// Whether `keys` are those of the handle's current view, after patching in the handle's own commits
    /// where it can (see `patch`).
    func isCurrent(_ lattice: Lattice, _ info: ClassInfo) -> Bool {
        let current = currentStamp(lattice, info)
        return stamp == current || patch(lattice, info, current)
    }

    /// A count found without the keys (an index's entries counted), and its stamp: `count` is asked again
    /// and again (slicing reads `endIndex` several times: `Array(results.prefix(20))` asked it seven times).
    @exclusivity(unchecked) private var counted: (stamp: KeyStamp, count: Int)?

    /// The count kept by `keepCount` when nothing it depends on changed since.
    func countIfCurrent(_ lattice: Lattice, _ info: ClassInfo) -> Int? {
        guard let counted, counted.stamp == currentStamp(lattice, info) else { return nil }
        return counted.count
    }

    /// Keeps `count`, found at the handle's current view without the keys.
    func keepCount(_ count: Int, _ lattice: Lattice, _ info: ClassInfo) {
        counted = (currentStamp(lattice, info), count)
    }

    /// The first and last keys found without the keys (see `Results.sortedEnd`: one pass over the sort
    /// values), and the stamp they were found at: `first` read again and again costs that pass once.
    @exclusivity(unchecked) private var ends: (stamp: KeyStamp, first: Int64??, last: Int64??)?

    /// The first (or last) key kept by `keepEnd` when nothing it depends on changed since; nil when none is
    /// kept (`.some(nil)`: the results were found empty).
    func endIfCurrent(first: Bool, _ lattice: Lattice, _ info: ClassInfo) -> Int64?? {
        guard let ends, ends.stamp == currentStamp(lattice, info) else { return nil }
        return first ? ends.first : ends.last
    }

    /// Keeps the first (or last) key, found at the handle's current view without the keys.
    func keepEnd(_ key: Int64?, first: Bool, _ lattice: Lattice, _ info: ClassInfo) {
        let current = currentStamp(lattice, info)
        var kept: (stamp: KeyStamp, first: Int64??, last: Int64??) = (current, nil, nil)
        if let ends, ends.stamp == current { kept = ends }
        if first { kept.first = .some(key) } else { kept.last = .some(key) }
        ends = kept
    }

    /// Takes `keys` as those of the handle's current view.
    func adopt(_ keys: [Int64], _ lattice: Lattice, _ info: ClassInfo) {
        self.keys = keys
        matched = nil
        stamp = currentStamp(lattice, info)
        stampCommit = lattice.writer == nil ? lattice.ownCommitCount : nil
    }

    /// Brings stale `keys` up to the `current` stamp when only commits made through the handle came since
    /// they were taken (the same view of the file, no write open) and the results are of a class filtered
    /// and sorted on its own columns: the objects those commits inserted, deleted or changed in a column
    /// the query reads are placed into them, as an observer places them (`ResultsPlacement`), instead of
    /// evaluating the query again. Whether it did.
    private func patch(_ lattice: Lattice, _ info: ClassInfo, _ current: KeyStamp) -> Bool {
        guard let since = stampCommit, let old = stamp, old.view == current.view, lattice.writer == nil,
              let placement = placement(info), let changes = lattice.ownChanges(after: since), !changes.isEmpty,
              let change = placement.change(old: keys, ChangeSummary(changes, after: 0, in: lattice), lattice, checkAll: false,
                                            alsoModified: [], isModified: { _ in false }) else { return false }
        keys = change.elements
        stamp = current
        stampCommit = lattice.ownCommitCount
        return true
    }

    // Without runtime exclusivity checks (a call on every read): only `object(at:)` touches it, under the
    // handle's `synchronized`, and nothing it calls comes back here.
    @exclusivity(unchecked) private var positional = PositionalReader()

    /// The keys, evaluated by `evaluate` when the handle's view changed since they were last.
    func keys(_ lattice: Lattice, _ info: ClassInfo, _ evaluate: (ClassInfo, Transaction) throws -> [Int64]) throws -> [Int64] {
        let current = currentStamp(lattice, info)
        if stamp == current || patch(lattice, info, current) { return keys }
        keys = try evaluate(info, lattice.readTransaction())
        matched = nil
        stamp = current
        stampCommit = lattice.writer == nil ? lattice.ownCommitCount : nil
        return keys
    }

    /// `keys`, stopping with a message on a storage error (for accessors that cannot throw).
    func keysOrStop(_ lattice: Lattice, _ info: ClassInfo, _ evaluate: (ClassInfo, Transaction) throws -> [Int64]) -> [Int64] {
        do {
            return try keys(lattice, info, evaluate)
        } catch {
            fatalError(Lattice.stopMessage("reading the objects of '\(info.name)'", path: lattice.env.path, error))
        }
    }

    /// Positions of a whole class read while `keys` are not current (see `ClassPositions`); made on first use.
    @exclusivity(unchecked) private var classPositions: ClassPositions?

    /// `results[position]`: an instance of `type`; out of range stops with a message. Here rather than in
    /// the generic subscript, where every field of `Results` would be reached through its metadata.
    func object(at position: Int, lattice: Lattice, info: ClassInfo, type: Object.Type,
                evaluate: (ClassInfo, Transaction) throws -> [Int64], matches: (ClassInfo, Transaction) throws -> [Int64]) -> Object {
        let (object, key): (Object?, Int64) = lattice.synchronized {
            // Read ahead with the keys of this generation of the view: nothing to evaluate or check.
            if let object = positional.batched(at: position) { return (object, object._key) }
            if indexOrder != nil, position >= 0, position < ClassPositions.jumpLimit,
               let found = prefixObject(at: position, lattice: lattice, info: info, type: type, matches: matches) {
                return found
            }
            if wholeClass {
                let current = currentStamp(lattice, info)
                if stamp != current {
                    let positions = classPositions ?? ClassPositions()
                    classPositions = positions
                    let found = lattice.reading("the objects of '\(info.name)'") { txn in
                        try positions.object(at: position, lattice: lattice, info: info, type: type, current, txn)
                    }
                    if positions.isComplete {
                        // Both ends met: every key is known; later reads use them.
                        adopt(positions.completeKeys, lattice, info)
                        classPositions = nil
                        positional = PositionalReader()
                    }
                    if let found { return found }
                }
            }
            let keys = keysOrStop(lattice, info, evaluate)
            precondition(position >= 0 && position < keys.count,
                         "Index \(position) is out of range: these results of '\(info.name)' have \(keys.count) objects.")
            return (self.positional.object(at: position, of: keys, lattice: lattice, info: info, type: type), keys[position])
        }
        // Gone since the keys were taken: an instance that reads as deleted.
        return object ?? lattice.materialize(type, info, key: key, record: nil)
    }

    /// For a loop over a class (or its filtered objects) sorted by an indexed property whose keys are not
    /// current: the first keys from the index, with the walk that takes more. nil when the keys are
    /// current, the index cannot give the order, or the first walk took every key (they are then `keys`).
    /// `matches` runs the filter.
    func keyWalk(_ lattice: Lattice, _ info: ClassInfo, matches: (ClassInfo, Transaction) throws -> [Int64]) -> IndexKeyWalk? {
        guard let order = indexOrder, stamp != currentStamp(lattice, info) else { return nil }
        let among = order.filtered ? lattice.reading("the objects of '\(info.name)'") { try self.matches(lattice, info, $0, matches) } : nil
        guard let walk = IndexKeyWalk(lattice, info, order.column, ascending: order.ascending, among: among) else { return nil }
        if walk.complete {
            adopt(walk.keys, lattice, info)
            return nil
        }
        return walk
    }

    /// `object(at:)` for a position near the start of a class (or its filtered objects) sorted by an indexed
    /// property while `keys` are not current: the first keys read from the index, at least twice as many
    /// as last time (so reading positions one after another walks the index about twice). nil when the
    /// keys are current, the index cannot give the order (see `ResultsOrdering.firstKeys`) or the position
    /// is past the end: the caller goes on as for any results. Once a walk reaches the end (or the
    /// filter's matches are sorted instead), its keys are `keys`.
    private func prefixObject(at position: Int, lattice: Lattice, info: ClassInfo, type: Object.Type,
                              matches: (ClassInfo, Transaction) throws -> [Int64]) -> (Object?, Int64)? {
        guard let order = indexOrder, !order.filtered || lattice.writer == nil else { return nil }
        let current = currentStamp(lattice, info)
        if stamp == current { return nil }
        if prefixStamp != current { (prefix, prefixStamp) = ([], current) }
        if position >= prefix.count {
            let limit = max(position + 1, 2 * prefix.count, 32)
            guard let walked = lattice.reading("the objects of '\(info.name)'", { txn in
                try ResultsOrdering.firstKeys(info, order.column, ascending: order.ascending, limit: limit,
                                              among: order.filtered ? self.matches(lattice, info, txn, matches) : nil, lattice, txn)
            }) else { return nil }
            if walked.complete {
                adopt(walked.keys, lattice, info)
                (prefix, prefixStamp) = ([], nil)
                positional = PositionalReader()
                return nil
            }
            prefix = walked.keys
        }
        guard position < prefix.count else { return nil }
        return (lattice.materializeReading(type, info, key: prefix[position]), prefix[position])
    }
}

/// Sequences of objects that can list them with storage errors thrown rather than stopping the process,
/// for throwing APIs that take any sequence (`Lattice.delete(_:)`).
protocol CheckedObjects {
    func checkedObjects() throws -> [Object]
    /// The class of which these are every object (in any order), read by `handle`; nil otherwise.
    func everyObject(on handle: Lattice) -> ClassInfo?
}

extension Results: CheckedObjects {}

/// Ends a walk over a List's entries at its first match (the walk has no other way to stop).
private struct FirstMatch: Error {
    let key: Int64
}
