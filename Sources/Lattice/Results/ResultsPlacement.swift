/// A collection change computed without evaluating the collection again: the new elements and the
/// changeset from the old ones.
struct IncrementalChange<Identity> {
    let elements: [Identity]
    let deletions: [Int]
    let insertions: [Int]
    let modifications: [Int]
}

/// Incremental changesets for the results of a whole class filtered and sorted on the class's own
/// columns (see "Incremental changesets" in the *Notifications* article).
///
/// The objects a commit did not insert, delete or change in a filtered or sorted column keep their
/// relative order, so only the others move: they are taken out of the old order, tested against the
/// filter, and placed back by binary search on their sort values, reading only the records the search
/// visits. The result is what a full evaluation gives: sorts compare in the query's order (the last
/// `sorted` call first) and ties fall back to the object key, as the evaluation's stable sort over
/// key-ordered candidates does.
struct ResultsPlacement {
    let info: ClassInfo
    /// The filter; nil: every object matches.
    let test: RowTest?
    /// Sort keys, most significant first (plain columns of the class).
    let sorts: [(path: ResolvedPath, ascending: Bool)]
    /// The columns the filter and sorts read.
    let queryColumns: UInt64

    /// Below this many placed objects a commit is always handled incrementally.
    static let minimumFallback = 64
    /// A commit that places more than one in `fallbackFraction` of the results is evaluated in full.
    static let fallbackFraction = 8

    /// Whether placing `changed` objects into `count` results costs more than evaluating them again.
    static func fallsBack(changed: Int, of count: Int) -> Bool {
        changed > minimumFallback && changed > count / fallbackFraction
    }

    /// The placement of `results`; nil for results of a collection property, with `distinct`, or with a
    /// filter or sort that reads through links or collections.
    init?<Element>(_ results: Results<Element>) {
        self.init(info: results.info, query: results.query, source: results.source)
    }

    /// The placement of the results of `query` over `source` (see `init(_:)`).
    init?(info: ClassInfo?, query: ResultsQuery, source: ResultsSource) {
        guard let info, case .all = source, let queryColumns = query.plainColumns(of: info) else { return nil }
        var sorts: [(path: ResolvedPath, ascending: Bool)] = []
        // A later `sorted` step re-sorts stably: its keys come first, the earlier steps break its ties.
        for step in query.ops.reversed() {
            guard case let .sort(keys) = step else { return nil }
            sorts += keys
        }
        self.info = info
        self.queryColumns = queryColumns
        self.sorts = sorts
        test = query.bound?.compile()
    }

    /// The change from `old` (the elements at the previous delivery) given what the commits since changed;
    /// nil when the results must be evaluated again (many objects to place, or a read failed).
    /// `isModified` tells whether an object kept in place counts as modified; with `checkAll` every
    /// kept object is asked (changes reached through links), else only those the commits modified and
    /// `alsoModified` (those reaching a change through links).
    func change(old: [Int64], _ summary: ChangeSummary, _ lattice: Lattice, checkAll: Bool, alsoModified: Set<Int64>,
                isModified: (Int64) -> Bool) -> IncrementalChange<Int64>? {
        guard let own = summary.changes(of: info.name) else {
            let modifications = checkAll ? old.indices.filter { isModified(old[$0]) }
                : locate(alsoModified, in: old).values.filter { isModified(old[$0]) }.sorted()
            return IncrementalChange(elements: old, deletions: [], insertions: [], modifications: modifications)
        }
        var affected = own.inserted.union(own.deleted)
        for (key, columns) in own.modified where columns & queryColumns != 0 { affected.insert(key) }
        if ResultsPlacement.fallsBack(changed: affected.count, of: old.count) { return nil }
        guard let txn = try? lattice.readTransaction() else { return nil }
        let failure = RowFailure()

        // Old positions of the objects to place and of the other modified objects.
        let positions = locate(affected.union(own.modified.keys).union(alsoModified), in: old)
        let removed = affected.compactMap { positions[$0] }.sorted()
        // The old elements without the removed ones, read in place (`affected` is small: see `fallsBack`),
        // so that a commit that moves nothing copies no array of the results' length.
        let remainingCount = old.count - removed.count
        func remainingKey(_ index: Int) -> Int64 {
            // Skip the removed positions before it: those whose position less their rank is at most `index`.
            var low = 0, high = removed.count
            while low < high {
                let mid = (low + high) / 2
                if removed[mid] - mid <= index { low = mid + 1 } else { high = mid }
            }
            return old[index + low]
        }

        // The objects to place that exist and match, with their sort values, in result order.
        var placed: [(key: Int64, values: [ScalarValue])] = []
        for key in affected {
            let context = RowContext(txn: txn, lattice: lattice, key: key, failure: failure)
            let values: [ScalarValue]?? = context.record(info, key) { view in
                if let test, !test(view, context) { return nil }
                return sorts.map { $0.path.value(view, context) }
            }
            if let values = values ?? nil { placed.append((key, values)) }
        }
        placed.sort { precedes($0.values, $0.key, $1.values, $1.key) }

        // Each one's place among the remaining elements (non-decreasing, as `placed` is in order).
        var cache: [Int: [ScalarValue]] = [:]
        func values(at index: Int) -> [ScalarValue] {
            if let known = cache[index] { return known }
            let key = remainingKey(index)
            let context = RowContext(txn: txn, lattice: lattice, key: key, failure: failure)
            let read = context.record(info, key) { view in sorts.map { $0.path.value(view, context) } } ?? []
            cache[index] = read
            return read
        }
        var slots: [Int] = []
        slots.reserveCapacity(placed.count)
        for object in placed {
            var low = slots.last ?? 0, high = remainingCount
            while low < high {
                let mid = (low + high) / 2
                let before = sorts.isEmpty ? remainingKey(mid) < object.key
                    : precedes(values(at: mid), remainingKey(mid), object.values, object.key)
                if before { low = mid + 1 } else { high = mid }
            }
            slots.append(low)
        }
        if failure.error != nil { return nil }

        // Keep in place (as a modification) each placed object that was in the old results with as many
        // remaining elements before it as before: its order relative to them is unchanged. Placed
        // objects before it and remaining elements up to its slot precede it in the new results.
        var insertions: [Int] = []
        var keptOld: [Int] = []
        var lastKept = -1
        for (i, (object, slot)) in zip(placed, slots).enumerated() {
            if let was = positions[object.key], was > lastKept,
               was - removed.partitionIndex(where: { $0 >= was }) == slot {
                keptOld.append(was)
                lastKept = was
            } else {
                insertions.append(slot + i)
            }
        }
        // Every placed object kept where it was, none gone: the results are the old ones.
        var elements = old
        if !insertions.isEmpty || keptOld.count != removed.count {
            var remaining: [Int64] = []
            remaining.reserveCapacity(remainingCount)
            var from = 0
            for at in removed {
                remaining += old[from..<at]
                from = at + 1
            }
            remaining += old[from...]
            elements = []
            elements.reserveCapacity(remainingCount + placed.count)
            from = 0
            for (object, slot) in zip(placed, slots) {
                elements += remaining[from..<slot]
                from = slot
                elements.append(object.key)
            }
            elements += remaining[from...]
        }

        let kept = Set(keptOld)
        let deletions = removed.filter { !kept.contains($0) }
        var modifications = keptOld.filter { isModified(old[$0]) }
        if checkAll {
            let moved = Set(removed)
            modifications += old.indices.filter { !moved.contains($0) && isModified(old[$0]) }
        } else {
            for key in Set(own.modified.keys).union(alsoModified) where !affected.contains(key) {
                if let at = positions[key], isModified(key) { modifications.append(at) }
            }
        }
        return IncrementalChange(elements: elements, deletions: deletions, insertions: insertions, modifications: modifications.sorted())
    }

    /// Whether (a, aKey) sorts before (b, bKey).
    private func precedes(_ a: [ScalarValue], _ aKey: Int64, _ b: [ScalarValue], _ bKey: Int64) -> Bool {
        for (i, sort) in sorts.enumerated() where i < a.count && i < b.count {
            let c = ScalarValue.compare(a[i], b[i])
            if c != 0 { return sort.ascending ? c < 0 : c > 0 }
        }
        return aKey < bKey
    }

    /// The positions in `old` of those of `keys` it holds.
    private func locate(_ keys: Set<Int64>, in old: [Int64]) -> [Int64: Int] {
        var out: [Int64: Int] = [:]
        if sorts.isEmpty {
            // Unsorted results are in key order.
            for key in keys { out[key] = old.position(ofAscending: key) }
        } else if keys.count <= 16 {
            for key in keys { if let at = old.firstIndex(of: key) { out[key] = at } }
        } else {
            for (i, key) in old.enumerated() where keys.contains(key) { out[key] = i }
        }
        return out
    }
}

extension Array {
    /// The first index whose element satisfies `predicate`, which must hold for a suffix of the array
    /// (binary search); `count` when none does.
    func partitionIndex(where predicate: (Element) -> Bool) -> Int {
        var low = 0, high = count
        while low < high {
            let mid = (low + high) / 2
            if predicate(self[mid]) { high = mid } else { low = mid + 1 }
        }
        return low
    }
}

extension Array where Element == Int64 {
    /// Where `key` is in this array, whose elements ascend (binary search); nil when absent.
    func position(ofAscending key: Int64) -> Int? {
        let at = partitionIndex { $0 >= key }
        return at < count && self[at] == key ? at : nil
    }
}
