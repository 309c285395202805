import CLMDB

/// What a ``Results`` selects and in which order: the combined predicate of every `filter`, then the
/// `sorted` and `distinct` steps in the order they were applied.
struct ResultsQuery {
    /// Every filter ANDed (nil: all objects).
    var node: QueryNode?
    /// `node` bound to the class, with its comparisons compiled.
    var bound: BoundNode?
    var ops: [Step] = []

    enum Step {
        case sort([(column: ScalarColumn, ascending: Bool)])
        case distinct([ScalarColumn])
    }
}

extension Results {
    /// Plans and runs the query in `txn`.
    func evaluateKeys(_ info: ClassInfo, _ txn: Transaction) throws -> [Int64] {
        if query.bound == nil, query.ops.count == 1, case let .sort(keys) = query.ops[0], keys.count == 1,
           let walked = try ResultsOrdering.walkIndex(info, keys[0].column, ascending: keys[0].ascending, txn) {
            return walked
        }
        let plan = try QueryPlanner(info: info, txn: txn).plan(query.bound)
        var keys = try QueryExecutor(info: info, txn: txn).keys(plan)
        for step in query.ops { keys = try ResultsOrdering.apply(step, keys, info, txn) }
        return keys
    }

    /// The count when it needs no record: all objects, or an exact index scan. nil otherwise.
    func countWithoutReading(_ info: ClassInfo, _ txn: Transaction) throws -> Int? {
        if query.ops.contains(where: { if case .distinct = $0 { return true } else { return false } }) { return nil }
        if query.bound == nil { return try txn.count(info.objectsDBI) }
        let plan = try QueryPlanner(info: info, txn: txn).plan(query.bound)
        if case .none = plan.access { return 0 }
        guard plan.isExactIndexScan, case let .index(scan) = plan.access else { return nil }
        return try QueryExecutor(info: info, txn: txn).count(scan)
    }
}

/// Sorting and distinct over object keys.
enum ResultsOrdering {
    static func apply(_ step: ResultsQuery.Step, _ keys: [Int64], _ info: ClassInfo, _ txn: Transaction) throws -> [Int64] {
        switch step {
        case let .sort(descriptors):
            let values = try load(keys, descriptors.map(\.column), info, txn)
            let order = (0..<keys.count).sorted { a, b in
                for (i, d) in descriptors.enumerated() {
                    let c = ScalarValue.compare(values[a][i], values[b][i])
                    if c != 0 { return d.ascending ? c < 0 : c > 0 }
                }
                return a < b
            }
            return order.map { keys[$0] }
        case let .distinct(properties):
            let values = try load(keys, properties, info, txn)
            var seen = Set<[ScalarValue]>()
            return zip(keys, values).compactMap { seen.insert($1).inserted ? $0 : nil }
        }
    }

    /// The values of `properties` for each key.
    private static func load(_ keys: [Int64], _ properties: [ScalarColumn], _ info: ClassInfo,
                             _ txn: Transaction) throws -> [[ScalarValue]] {
        try keys.map { key in
            try KeyCodec.withObjectKey(key) { k in
                try txn.get(info.objectsDBI, k) { bytes in
                    let view = bytes.flatMap(RecordView.init)
                    return properties.map { ScalarValue.decode(view?.payload($0.column), $0) }
                }
            }
        }
    }

    /// All objects in the order of an indexed property, read from its index; nil when not indexed.
    static func walkIndex(_ info: ClassInfo, _ column: ScalarColumn, ascending: Bool, _ txn: Transaction) throws -> [Int64]? {
        let property = column.property
        if info.keyedByPrimaryKey && property === info.primaryKey {
            var keys: [Int64] = []
            try txn.withCursor(info.objectsDBI) { cursor in
                var entry = try cursor.move(MDB_FIRST)
                while let e = entry {
                    keys.append(KeyCodec.int(e.key))
                    entry = try cursor.move(MDB_NEXT)
                }
            }
            return ascending ? keys : keys.reversed()
        }
        guard let dbi = property.indexDBI else { return nil }
        var groups: [(key: [UInt8], objects: [Int64])] = []
        try txn.withCursor(dbi) { cursor in
            var entry = try cursor.move(MDB_FIRST)
            while let e = entry {
                if groups.last.map({ compareBytes($0.key, e.key) != 0 }) ?? true { groups.append((Array(e.key), [])) }
                groups[groups.count - 1].objects.append(KeyCodec.int(e.value))
                entry = try cursor.move(MDB_NEXT)
            }
        }
        if !ascending { groups.reverse() }
        var out: [Int64] = []
        for group in groups {
            // A truncated key (or the empty string's [0]) may stand for several values: sort those by value.
            let ambiguous = column.kind == .string
                && (group.key.count >= FileLayout.maxIndexKey || (!property.property.isOptional && group.key == [0]))
            if ambiguous && group.objects.count > 1 {
                out += try apply(.sort([(column, ascending)]), group.objects, info, txn)
            } else {
                out += group.objects
            }
        }
        return out
    }
}
