/// What a ``Results`` selects and in which order: the combined predicate of every `filter`, then the
/// `sorted` and `distinct` steps in the order they were applied.
struct ResultsQuery {
    /// Every filter ANDed (nil: all objects).
    var node: QueryNode?
    /// `node` bound to the class, with its comparisons compiled.
    var bound: BoundNode?
    var ops: [Step] = []

    enum Step {
        /// Key paths through to-one links only, ending on a single-value property.
        case sort([(path: ResolvedPath, ascending: Bool)])
        case distinct([ResolvedPath])

        var isDistinct: Bool {
            if case .distinct = self { return true }
            return false
        }
    }
}

extension ResultsQuery {
    /// The columns of the class (`ChangeSet.columnBit` mask) whose values decide which objects match and
    /// in which order; nil when more than the objects' own values does (key paths through links, lists,
    /// sets, maps or subqueries, comparisons of two properties). The keys stay valid across writes of
    /// other columns of existing objects.
    var columnMask: UInt64? {
        guard var mask = bound == nil ? 0 : bound?.columnMask else { return nil }
        for step in ops {
            let paths: [ResolvedPath]
            switch step {
            case let .sort(keys): paths = keys.map(\.path)
            case let .distinct(keyPaths): paths = keyPaths
            }
            for path in paths {
                guard let column = path.rootColumn else { return nil }
                mask |= ChangeSet.columnBit(column.property.column)
            }
        }
        return mask
    }
}

extension ResultsQuery {
    /// The columns the filter and sorts read, when every key path is a plain column of the class; nil
    /// when some path goes through a link or collection.
    func plainColumns(of info: ClassInfo?) -> UInt64? {
        guard let info else { return 0 }
        var mask: UInt64 = 0
        func column(_ name: String) -> Bool {
            guard let p = info.columns.first(where: { $0.name == name }), p.property.collection == nil, !p.isLink else { return false }
            mask |= ChangeSet.columnBit(p.column)
            return true
        }
        for step in ops {
            switch step {
            case let .sort(keys): for key in keys where !column(key.path.text) { return nil }
            case let .distinct(paths): for path in paths where !column(path.text) { return nil }
            }
        }
        if let node {
            guard let names = node.plainKeyPaths() else { return nil }
            for name in names where !column(name) { return nil }
        }
        return mask
    }
}

extension QueryNode {
    /// The key paths the predicate reads, when each is one plain name of the queried class; nil otherwise.
    func plainKeyPaths() -> [String]? {
        switch self {
        case .constant: return []
        case let .not(node): return node.plainKeyPaths()
        case let .and(nodes), let .or(nodes):
            var out: [String] = []
            for node in nodes {
                guard let names = node.plainKeyPaths() else { return nil }
                out += names
            }
            return out
        case let .comparison(c):
            guard c.quantifier == nil, let l = c.lhs.plainKeyPaths(), let r = c.rhs.plainKeyPaths() else { return nil }
            return l + r
        }
    }
}

extension QueryExpression {
    /// The key paths the expression reads, when each is one plain name of the queried class; nil otherwise.
    func plainKeyPaths() -> [String]? {
        switch self {
        case let .keyPath(path):
            guard path.variable == nil, path.collectionOperator == nil, path.segments.count == 1 else { return nil }
            return path.segments
        case .value: return []
        case let .list(items):
            var out: [String] = []
            for item in items {
                guard let names = item.plainKeyPaths() else { return nil }
                out += names
            }
            return out
        case .subquery: return nil
        }
    }
}

extension BoundNode {
    /// See `ResultsQuery.columnMask`.
    var columnMask: UInt64? {
        switch self {
        case .constant: return 0
        case let .not(inner): return inner.columnMask
        case let .and(parts), let .or(parts):
            var mask: UInt64 = 0
            for part in parts {
                guard let m = part.columnMask else { return nil }
                mask |= m
            }
            return mask
        case let .term(term): return ChangeSet.columnBit(term.property.column)
        case .test, .linked: return nil
        }
    }
}

/// Where the candidate objects of a ``Results`` come from.
enum ResultsSource {
    /// Every object of the class, found through the planner (indexes, scans).
    case all
    /// The objects of a List, MutableSet or LinkingObjects property of one object, in its order (List
    /// order, duplicates kept; set element order; backlink order).
    case collection(owner: Object, path: ResolvedPath)

    /// The collection's object keys in its order; empty when its owner was deleted.
    func keys(_ lattice: Lattice, _ txn: Transaction) throws -> [Int64]? {
        guard case let .collection(owner, path) = self, let ownerInfo = path.hops.first?.from else { return nil }
        let context = RowContext(txn: txn, lattice: lattice, key: owner._key, failure: RowFailure())
        // A collection or LinkingObjects of the owner's own needs no record of it (a deleted object's
        // collections are empty, and nothing links to it).
        if path.hops.count == 1, path.hops[0].toMany {
            let keys = ResolvedPath.targets(of: path.hops[0], from: owner._key, context).compactMap { $0 }
            try context.failure.check()
            return keys
        }
        var keys: [Int64] = []
        _ = context.record(ownerInfo, owner._key) { view in
            path.forEachLeaf(view, context) { leaf, _ in
                if case let .object(key) = leaf { keys.append(key) }
                return true
            }
        }
        try context.failure.check()
        return keys
    }
}

extension Results {
    /// Plans and runs the query in `txn`.
    func evaluateKeys(_ info: ClassInfo, _ txn: Transaction) throws -> [Int64] {
        if case .all = source, query.bound == nil, query.ops.count == 1, case let .sort(sortKeys) = query.ops[0], sortKeys.count == 1,
           let column = sortKeys[0].path.rootColumn,
           let walked = try ResultsOrdering.walkIndex(info, column, ascending: sortKeys[0].ascending, lattice, txn) {
            return walked
        }
        var ops = query.ops[...]
        var keys: [Int64]
        // `distinct(by: [p])` of a whole class, p indexed: the first object of each index key.
        if case .all = source, query.bound == nil, case let .distinct(paths)? = ops.first, paths.count == 1,
           let column = paths[0].rootColumn, let firsts = try ResultsOrdering.firstOfEachIndexKey(info, column, txn) {
            keys = firsts
            ops = ops.dropFirst()
        } else {
            keys = try cache.keptMatches(lattice, info) ?? unorderedKeys(info, txn)
        }
        for step in ops { keys = try ResultsOrdering.apply(step, keys, info, lattice, txn) }
        return keys
    }

    /// The keys the filter leaves, before sorting and distinct: in the collection's order, or ascending.
    func unorderedKeys(_ info: ClassInfo, _ txn: Transaction) throws -> [Int64] {
        if let base = try source.keys(lattice, txn) {
            guard let test = query.bound?.compile() else { return base }
            // The distinct keys checked in key order, through one cursor moving forward; the collection's
            // order (and repeats) kept.
            var ascending = base.sorted().removingAdjacentDuplicates()
            ascending = try QueryExecutor(info: info, txn: txn, lattice: lattice).matching(ascending, test)
            let passed = Set(ascending)
            return base.filter(passed.contains)
        }
        let plan = try QueryPlanner(info: info, txn: txn, lattice: lattice).plan(query.bound)
        return try QueryExecutor(info: info, txn: txn, lattice: lattice).keys(plan)
    }

    /// The keys when their order does not matter: for sorted results whose keys are not current, the
    /// filter's matches (kept for the reads that usually follow), not sorted; otherwise the keys.
    func unsortedKeys(_ info: ClassInfo, _ txn: Transaction) throws -> [Int64] {
        if query.ops.isEmpty || query.ops.contains(where: \.isDistinct) || cache.isCurrent(lattice, info) { return try checkedKeys() }
        return try cache.matches(lattice, info, txn) { try unorderedKeys($0, $1) }
    }

    /// The count when it needs no record: all objects, or an exact index scan. nil otherwise.
    func countWithoutReading(_ info: ClassInfo, _ txn: Transaction) throws -> Int? {
        if case .collection = source { return nil }
        if query.ops.contains(where: \.isDistinct) { return nil }
        if query.bound == nil { return try txn.count(info.objectsTable) }
        // Primary keys listed by `IN`: finding the objects costs what counting them does, and the reading
        // that usually follows the count reuses them.
        if case let .term(term)? = query.bound, term.op == .in, term.constants.count > 1, term.property === info.primaryKey { return nil }
        let plan = try QueryPlanner(info: info, txn: txn, lattice: lattice).plan(query.bound)
        if case .none = plan.access { return 0 }
        // The objects linking through one to-one link to the objects the end plan finds (`chat == %@`): the
        // backlink table's duplicate counts, as each object links to one of them at most.
        if plan.residual == nil, case let .backlinks(endPlan, hops) = plan.access, hops.count == 1, case .link = hops[0].kind,
           let table = hops[0].to.backlinkTable {
            let targets = try QueryExecutor(info: hops[0].to, txn: txn, lattice: lattice).keys(endPlan)
            return try targets.reduce(0) { $0 + (try BacklinkTable(table: table).count(txn, target: $1, linkID: hops[0].property.linkID)) }
        }
        guard plan.isExactIndexScan, case let .index(scan) = plan.access else { return nil }
        return try QueryExecutor(info: info, txn: txn, lattice: lattice).count(scan)
    }
}

/// Sorting and distinct over object keys.
enum ResultsOrdering {
    static func apply(_ step: ResultsQuery.Step, _ keys: [Int64], _ info: ClassInfo, _ lattice: Lattice,
                      _ txn: Transaction) throws -> [Int64] {
        switch step {
        case let .sort(descriptors):
            let width = descriptors.count
            // By the integer primary key of a class keyed by it (the object key): keys in ascending order (a
            // class's filtered objects) are in that order already.
            if width == 1, info.keyedByPrimaryKey, descriptors[0].path.rootColumn?.property === info.primaryKey,
               zip(keys, keys.dropFirst()).allSatisfy({ $0 <= $1 }) {
                return descriptors[0].ascending ? keys : keys.reversed()
            }
            let values = try load(keys, descriptors.map(\.path), info, lattice, txn)
            if width == 1 { return order(values, ascending: descriptors[0].ascending).map { keys[$0] } }
            // Several keys: each column's values become ranks (equal values, equal ranks) through the one-column
            // sorts, and the rows are sorted by their ranks: integer compares instead of `ScalarValue.compare`
            // (an enum copied and switched on) in every comparison.
            var ranks = [Int32](repeating: 0, count: values.count)
            for i in 0..<width {
                let column = stride(from: i, to: values.count, by: width).map { values[$0] }
                let sorted = order(column, ascending: true)
                var rank: Int32 = 0
                for (j, row) in sorted.enumerated() {
                    if j > 0 && ScalarValue.compare(column[sorted[j - 1]], column[row]) != 0 { rank += 1 }
                    ranks[row * width + i] = rank
                }
            }
            let ascending = descriptors.map(\.ascending)
            return ranks.withUnsafeBufferPointer { r in
                (0..<keys.count).sorted { a, b in
                    for i in 0..<width {
                        let (x, y) = (r[a * width + i], r[b * width + i])
                        if x != y { return ascending[i] ? x < y : x > y }
                    }
                    return a < b
                }
            }.map { keys[$0] }
        case let .distinct(properties):
            let width = properties.count
            let values = try load(keys, properties, info, lattice, txn)
            // As in Realm, an object with a nil link on the way to a distinct property is left out.
            var linked: [Bool]?
            if properties.contains(where: { !$0.hops.isEmpty }) {
                let failure = RowFailure()
                linked = keys.map { key in
                    let context = RowContext(txn: txn, lattice: lattice, key: key, failure: failure)
                    return context.record(info, key) { view in properties.allSatisfy { $0.reachesEnd(view, context) } } ?? false
                }
                try failure.check()
            }
            if width == 1 && linked == nil {
                // One property of the objects themselves: its values hashed as they are (no slice per object).
                var seen = Set<ScalarValue>()
                return keys.indices.compactMap { seen.insert(values[$0]).inserted ? keys[$0] : nil }
            }
            var seen = Set<ArraySlice<ScalarValue>>()
            return keys.indices.compactMap { k in
                if let linked, !linked[k] { return nil }
                return seen.insert(values[k * width..<(k + 1) * width]).inserted ? keys[k] : nil
            }
        }
    }

    /// The key `apply(.sort(descriptors), keys, ...)` would put first (or last), found in one pass over the
    /// sort values instead of a sort: ties keep the keys' order.
    static func sortedEnd(_ descriptors: [(path: ResolvedPath, ascending: Bool)], _ keys: [Int64], first: Bool,
                          _ info: ClassInfo, _ lattice: Lattice, _ txn: Transaction) throws -> Int64? {
        guard !keys.isEmpty else { return nil }
        let width = descriptors.count
        let values = try load(keys, descriptors.map(\.path), info, lattice, txn)
        // Whether row `a` sorts before row `b`.
        func before(_ a: Int, _ b: Int) -> Bool {
            for i in 0..<width {
                let c = ScalarValue.compare(values[a * width + i], values[b * width + i])
                if c != 0 { return descriptors[i].ascending ? c < 0 : c > 0 }
            }
            return a < b
        }
        var best = 0
        for row in 1..<keys.count where first ? before(row, best) : before(best, row) { best = row }
        return keys[best]
    }

    /// The first (or last) of `matches` (keys of a class's objects, ascending: a filter's matches) sorted
    /// by the indexed `column`, without reading every match's sort value: the sort's index is walked from
    /// that end to the end of the first group of equal values holding a match, each key looked up among
    /// the matches, and the matches met decide by their values. Few matches (their sort values read
    /// sooner than the walk would find one) are left to the caller, and the walk gives up at sixteen
    /// times the expected distance between matches (or eight steps a match, at least 64); nil then, and
    /// when the index cannot give the order (the caller sorts the matches' values).
    static func indexEnd(of matches: [Int64], _ path: ResolvedPath, _ column: ScalarColumn, ascending: Bool, first: Bool,
                         _ info: ClassInfo, _ lattice: Lattice, _ txn: Transaction) throws -> Int64?? {
        guard !matches.isEmpty else { return .some(nil) }
        // The order `walkIndex` can give.
        let sortsByKey = info.keyedByPrimaryKey && column.property === info.primaryKey
        guard sortsByKey || (column.property.indexTable != nil && !txn.isEncrypted) else { return nil }
        // The expected walk to the first match; walked only when likely shorter than reading every match's
        // sort value (a record read at random costs about four steps of an index walk).
        let gap = try ObjectTable(table: info.objectsTable).count(txn) / matches.count + 1
        guard gap <= 4 * matches.count else { return nil }
        // The last object in sorted order is in the first group of the opposite order that holds a match.
        guard let walked = try walkIndex(info, column, ascending: first == ascending, limit: 1, lattice, txn, among: matches,
                                         steps: Swift.max(64, Swift.min(16 * gap, 8 * matches.count))),
              !walked.keys.isEmpty else { return nil }
        return .some(try sortedEnd([(path, ascending)], walked.keys, first: first, info, lattice, txn))
    }

    /// The first keys of results in the order of the indexed `column` (at least `limit` of them where there
    /// are that many) and whether they are all of them. For a whole class (`matches` nil) read from the
    /// index, nil when it cannot give the order (see `walkIndex`). For a filter's matches (ascending keys),
    /// walked from the index among them when that likely costs at most a quarter of reading every match's
    /// sort value (an index step costs about half a record read at random), so that a loop that goes on
    /// past the walk, and then sorts the matches after all, pays little more; otherwise, and when the walk
    /// runs past twice its expected length, every match sorted by its value.
    static func firstKeys(_ info: ClassInfo, _ column: ScalarColumn, ascending: Bool, limit: Int, among matches: [Int64]?,
                          _ lattice: Lattice, _ txn: Transaction) throws -> (keys: [Int64], complete: Bool)? {
        guard let matches else { return try walkIndex(info, column, ascending: ascending, limit: limit, lattice, txn) }
        if limit < matches.count {
            let gap = try ObjectTable(table: info.objectsTable).count(txn) / matches.count + 1
            if 2 * limit * gap <= matches.count,
               let walked = try walkIndex(info, column, ascending: ascending, limit: limit, lattice, txn, among: matches,
                                          steps: Swift.max(64, 2 * limit * gap)) {
                return walked
            }
        }
        let path = ResolvedPath(hops: [], end: .scalar(column), endClass: info, text: column.name)
        return (try apply(.sort([(path, ascending)]), matches, info, lattice, txn), true)
    }

    /// The positions of `values` (one per row) in sorted order; ties keep the rows' order.
    private static func order(_ values: [ScalarValue], ascending: Bool) -> [Int] {
        if let numbers = doubles(values) {
            // Numbers or dates and no nil (the common `sorted(byKeyPath:)`): compared as Doubles.
            return values.indices.sorted { a, b in
                let c = compareDoubles(numbers[a], numbers[b])
                return c != 0 ? (ascending ? c < 0 : c > 0) : a < b
            }
        }
        if let numbers = integers(values) {
            return values.indices.sorted { a, b in
                let (x, y) = (numbers[a], numbers[b])
                return x != y ? (ascending ? x < y : x > y) : a < b
            }
        }
        if let strings = PackedBytes(values) {
            // Strings (or data, UUIDs, ObjectIds): compared where they lie in one buffer, with no enum copies
            // and reference counting per comparison.
            return strings.withComparison { compare in
                values.indices.sorted { a, b in
                    let c = compare(a, b)
                    return c != 0 ? (ascending ? c < 0 : c > 0) : a < b
                }
            }
        }
        return values.indices.sorted { a, b in
            let c = ScalarValue.compare(values[a], values[b])
            return c != 0 ? (ascending ? c < 0 : c > 0) : a < b
        }
    }

    /// The values of `paths` for each key, key after key (`paths.count` values each; nil where a link on the
    /// way is nil), in one array.
    static func load(_ keys: [Int64], _ paths: [ResolvedPath], _ info: ClassInfo, _ lattice: Lattice,
                             _ txn: Transaction) throws -> [ScalarValue] {
        var values: [ScalarValue] = []
        values.reserveCapacity(keys.count * paths.count)
        let columns = paths.compactMap(\.rootColumn)
        if columns.count == paths.count {
            // The objects' own properties: one cursor walk (keys usually ascend: a class, an index's
            // matches), not one lookup per key; each value decoded straight from the record.
            try txn.withCursor(info.objectsTable) { cursor in
                var previous: Int64?
                for key in keys {
                    let record = try ObjectTable.record(&cursor, key: key, after: previous)
                    previous = record == nil ? nil : key
                    guard let view = record.flatMap(RecordView.init) else {
                        values.append(contentsOf: repeatElement(.null, count: columns.count))
                        continue
                    }
                    for column in columns { values.append(ScalarValue.decode(view.payload(column.column), column)) }
                }
            }
            return values
        }
        let failure = RowFailure()
        var row = RowContext(txn: txn, lattice: lattice, key: 0, failure: failure)
        for key in keys {
            row.key = key
            let found: Void? = row.record(info, key) { view in
                for path in paths { values.append(path.value(view, row)) }
            }
            if found == nil { values.append(contentsOf: repeatElement(.null, count: paths.count)) }
        }
        try failure.check()
        return values
    }

    /// The values as Doubles when every one is a Double (nil otherwise: a nil, another kind).
    private static func doubles(_ values: [ScalarValue]) -> [Double]? {
        converted(values) { if case let .double(d) = $0 { return d } else { return nil } }
    }

    /// The values as integers when every one is an integer (nil otherwise).
    private static func integers(_ values: [ScalarValue]) -> [Int64]? {
        converted(values) { if case let .int(i) = $0 { return i } else { return nil } }
    }

    /// Every value converted by `convert`, or nil as soon as one does not convert.
    private static func converted<T>(_ values: [ScalarValue], _ convert: (ScalarValue) -> T?) -> [T]? {
        var out: [T] = []
        out.reserveCapacity(values.count)
        for value in values {
            guard let v = convert(value) else { return nil }
            out.append(v)
        }
        return out
    }

    /// All objects in the order of an indexed property, read from its index; nil when not indexed.
    static func walkIndex(_ info: ClassInfo, _ column: ScalarColumn, ascending: Bool, _ lattice: Lattice,
                          _ txn: Transaction) throws -> [Int64]? {
        try walkIndex(info, column, ascending: ascending, limit: .max, lattice, txn)?.keys
    }

    /// The first objects in the order of an indexed property (as `walkIndex` orders all of them): at
    /// least `limit` of them where there are that many (objects of equal values are taken together),
    /// read from the end of the index that order starts at, and whether they are all of them. nil when
    /// not indexed, or when `limit` is given for a floating-point property whose index holds NaN (NaN keys
    /// lie at the two ends of its index, by sign bit, but sort first, so only a whole walk orders them).
    /// With `matches` (ascending keys: a filter's), only those objects are taken (`limit` counts them),
    /// and the walk gives up (nil) after `steps` index entries.
    static func walkIndex(_ info: ClassInfo, _ column: ScalarColumn, ascending: Bool, limit: Int, _ lattice: Lattice,
                          _ txn: Transaction, among matches: [Int64]? = nil, steps: Int = .max) throws -> (keys: [Int64], complete: Bool)? {
        let property = column.property
        func taken(_ key: Int64) -> Bool { matches.map { $0.position(ofAscending: key) != nil } ?? true }
        var walked = 0
        if info.keyedByPrimaryKey && property === info.primaryKey {
            var keys: [Int64] = []
            let complete = try txn.withCursor(info.objectsTable) { cursor -> Bool? in
                var entry = try ascending ? cursor.first() : cursor.last()
                while let e = entry {
                    if keys.count >= limit { return false }
                    walked += 1
                    if walked > steps { return nil }
                    let key = KeyCodec.int(e.key)
                    if taken(key) { keys.append(key) }
                    entry = try ascending ? cursor.next() : cursor.previous()
                }
                return true
            }
            return complete.map { (keys, $0) }
        }
        // An encrypted file's index keys are keyed hashes, in no useful order: sort the records instead.
        guard let dbi = property.indexTable, !txn.isEncrypted else { return nil }
        let nan = QueryPlanner.hasFloatingKeys(property) ? try indexEndsHoldNaN(dbi, property.property.isOptional, txn) : false
        if nan && limit != .max { return nil }
        // Descending orders walk the index backwards, except around NaN (see above).
        let backward = !ascending && !nan
        // The objects in walk order; where each group of equal keys starts in them; the keys of the groups
        // that need them (NaN regrouping, ambiguous string keys). No array per key: dates and other mostly
        // unique values make a group per object.
        var out: [Int64] = []
        var starts: [Int] = []
        var groupKeys: [(group: Int, key: [UInt8])] = []
        var previous: [UInt8] = []
        let finished = try txn.withCursor(dbi) { cursor -> Bool? in
            var entry = try backward ? cursor.last() : cursor.first()
            while let e = entry {
                if starts.isEmpty || !previous.withUnsafeBytes({ e.key.sameBytes(as: $0) }) {
                    if out.count >= limit { return false }
                    starts.append(out.count)
                    previous.removeAll(keepingCapacity: true)
                    previous.append(contentsOf: e.key)
                    if nan || isAmbiguous(e.key, column) { groupKeys.append((starts.count - 1, previous)) }
                }
                walked += 1
                if walked > steps { return nil }
                let key = KeyCodec.int(e.value)
                if taken(key) { out.append(key) }
                entry = try backward ? cursor.previous() : cursor.next()
            }
            return true
        }
        guard let complete = finished else { return nil }
        func group(_ i: Int) -> Range<Int> { starts[i]..<(i + 1 < starts.count ? starts[i + 1] : out.count) }
        if backward {
            // Equal values keep object-key order in both directions.
            for i in starts.indices where group(i).count > 1 { out[group(i)].reverse() }
        } else if nan {
            var groups = groupKeys.map { (key: $0.key, objects: Array(out[group($0.group)])) }
            groups = QueryPlanner.nanFirst(groups, property)
            if !ascending { groups.reverse() }
            return (groups.flatMap(\.objects), complete)
        }
        // A truncated key (or the empty string's [0]) may stand for several values: sort those by value.
        for (i, key) in groupKeys where group(i).count > 1 && key.withUnsafeBytes({ isAmbiguous($0, column) }) {
            let path = ResolvedPath(hops: [], end: .scalar(column), endClass: info, text: column.name)
            out.replaceSubrange(group(i), with: try apply(.sort([(path, ascending)]), Array(out[group(i)]), info, lattice, txn))
        }
        return (out, complete)
    }

    /// Whether either end of the floating-point index `dbi` holds a NaN key (the only places one can be).
    private static func indexEndsHoldNaN(_ dbi: Table, _ optional: Bool, _ txn: Transaction) throws -> Bool {
        try txn.withCursor(dbi) { cursor in
            if let last = try cursor.last(), QueryPlanner.isNaNKey(Array(last.key), optional: optional) { return true }
            guard var first = try cursor.first() else { return false }
            if optional && first.key.elementsEqual([0]) {
                guard let next = try cursor.nextKey() else { return false }
                first = next
            }
            return QueryPlanner.isNaNKey(Array(first.key), optional: optional)
        }
    }

    /// The object with the smallest key of each value of the indexed property `column`, in key order: what
    /// `distinct` by that property leaves of every object of the class, read as one step per index key
    /// instead of one value per object. nil when the index cannot tell values apart exactly (no index, an
    /// encrypted file's hashed keys, floating-point and decimal values, a key standing for several strings
    /// or data values).
    static func firstOfEachIndexKey(_ info: ClassInfo, _ column: ScalarColumn, _ txn: Transaction) throws -> [Int64]? {
        guard [.bool, .integer, .string, .uuid, .objectId].contains(column.kind),
              let dbi = column.property.indexTable, !txn.isEncrypted else { return nil }
        return try txn.withCursor(dbi) { cursor -> [Int64]? in
            var firsts: [Int64] = []
            var entry = try cursor.first()
            while let e = entry {
                if isAmbiguous(e.key, column) { return nil }
                // Duplicates are in object-key order: the first is the smallest key.
                firsts.append(KeyCodec.int(e.value))
                entry = try cursor.nextKey()
            }
            return firsts.sorted()
        }
    }

    /// Whether an index key of `column` may stand for several values: a truncated String key, or the [0]
    /// of a non-optional String (the empty string's key).
    private static func isAmbiguous(_ key: Bytes, _ column: ScalarColumn) -> Bool {
        column.kind == .string && (key.count >= FileLayout.maxIndexKey || (!column.isOptional && key.elementsEqual([0])))
    }

    /// The object at one end of a whole class ordered by `column` (as `walkIndex` orders it), read
    /// from an end of its index (or of the object table, for an integer primary key) without walking
    /// the rest. `low` asks for the object the ascending order puts first (the first of equal values,
    /// or the last of them with `lastOfTies`), otherwise the one it puts last (the first of equal
    /// values unless `lastOfTies`). With `skippingNil` the nil values do not count. nil when the ends
    /// cannot tell: no index, an encrypted file's hashed keys, NaN in the index (NaN keys lie at both
    /// ends, by sign bit, but sort first), or a string key standing for several values. `.some(nil)`
    /// when no object (with a value) is left.
    static func indexEnd(_ info: ClassInfo, _ column: ScalarColumn, low: Bool, lastOfTies: Bool, skippingNil: Bool,
                         _ txn: Transaction) throws -> Int64?? {
        let property = column.property
        if info.keyedByPrimaryKey && property === info.primaryKey {
            return try txn.withCursor(info.objectsTable) { cursor in try (low ? cursor.first() : cursor.last()).map { KeyCodec.int($0.key) } }
        }
        guard let dbi = property.indexTable, !txn.isEncrypted else { return nil }
        let optional = property.property.isOptional
        let floating = QueryPlanner.hasFloatingKeys(property)
        func isNaN(_ key: Bytes) -> Bool { floating && QueryPlanner.isNaNKey(Array(key), optional: optional) }
        func isNil(_ key: Bytes) -> Bool { optional && key.elementsEqual([0]) }
        return try txn.withCursor(dbi) { cursor -> Int64?? in
            guard let last = try cursor.last() else { return .some(nil) }
            if isNaN(last.key) { return nil }
            if skippingNil && isNil(last.key) { return .some(nil) }  // nil values only
            // Lent bytes: what the high end's key tells is kept before the cursor moves.
            let highKey = Array(last.key), highAmbiguous = isAmbiguous(last.key, column)
            guard var first = try cursor.first() else { return .some(nil) }
            if skippingNil && isNil(first.key) {
                guard let next = try cursor.nextKey() else { return .some(nil) }
                first = next
            }
            if isNaN(first.key) { return nil }
            if low {
                if isAmbiguous(first.key, column) { return nil }
                if lastOfTies, let tie = try cursor.lastDuplicate() { first = tie }
                return .some(KeyCodec.int(first.value))
            }
            if highAmbiguous { return nil }
            let end = try lastOfTies ? cursor.last() : highKey.withUnsafeBytes { try cursor.seek(exactly: $0) }
            return .some(end.map { KeyCodec.int($0.value) })
        }
    }
}

/// Byte strings (the values of a string, data, UUID or ObjectId sort key, or nil) packed in one buffer.
/// They compare as `ScalarValue.compare` does: nil first, then bytes in order, a prefix before longer.
struct PackedBytes {
    private var bytes: [UInt8] = []
    /// Where value `i` starts in `bytes`; one more entry ends the last value.
    private var starts: [Int] = [0]
    private var nulls: [Bool] = []

    /// nil when a value is neither bytes nor nil.
    init?(_ values: [ScalarValue]) {
        starts.reserveCapacity(values.count + 1)
        nulls.reserveCapacity(values.count)
        for value in values {
            switch value {
            case let .bytes(b): bytes.append(contentsOf: b); nulls.append(false)
            case .null: nulls.append(true)
            default: return nil
            }
            starts.append(bytes.count)
        }
    }

    /// `body` with a comparison of values `a` and `b` (negative, zero, positive) valid while it runs.
    func withComparison<R>(_ body: ((Int, Int) -> Int) throws -> R) rethrows -> R {
        try bytes.withUnsafeBufferPointer { bytes in
            try starts.withUnsafeBufferPointer { starts in
                try nulls.withUnsafeBufferPointer { nulls in
                    try body { a, b in
                        if nulls[a] || nulls[b] { return nulls[a] == nulls[b] ? 0 : nulls[a] ? -1 : 1 }
                        var i = starts[a], j = starts[b]
                        let (endA, endB) = (starts[a + 1], starts[b + 1])
                        while i < endA && j < endB {
                            if bytes[i] != bytes[j] { return bytes[i] < bytes[j] ? -1 : 1 }
                            i += 1
                            j += 1
                        }
                        return (endA - i) - (endB - j)
                    }
                }
            }
        }
    }
}
