/// Runs a ``QueryPlan``: yields the keys of the matching objects in ascending object-key order.
struct QueryExecutor {
    let info: ClassInfo
    let txn: Transaction
    let lattice: Lattice
    /// Read failures of compiled tests (relationships), thrown once the scan is done.
    private let failure = RowFailure()

    init(info: ClassInfo, txn: Transaction, lattice: Lattice) {
        self.info = info
        self.txn = txn
        self.lattice = lattice
    }

    /// The matching keys; with `limit`, the first `limit` of them (a scan of the class stops there).
    func keys(_ plan: QueryPlan, limit: Int = .max) throws -> [Int64] {
        let out = try unchecked(plan, limit: limit)
        try failure.check()
        return out.count > limit ? Array(out.prefix(limit)) : out
    }

    /// The last matching key (the highest): a scan of the class walks back from its end and stops at the
    /// first match; other plans find every match.
    func lastKey(_ plan: QueryPlan) throws -> Int64? {
        guard case .all = plan.access else { return try keys(plan).last }
        let test = plan.residual?.compile()
        var found: Int64?
        try txn.withCursor(info.objectsTable) { cursor in
            var row = context(0)
            var entry = try cursor.last()
            while let e = entry {
                row.key = KeyCodec.int(e.key)
                if passes(test, e.value, row) { found = row.key; return }
                entry = try cursor.previous()
            }
        }
        try failure.check()
        return found
    }

    private func context(_ key: Int64) -> RowContext { RowContext(txn: txn, lattice: lattice, key: key, failure: failure) }

    /// Whether the record `value` of `row.key` passes `test` (no test: every record does).
    @inline(__always)
    private func passes(_ test: RowTest?, _ value: UnsafeRawBufferPointer, _ row: RowContext) -> Bool {
        guard let test else { return true }
        guard let view = RecordView(value) else { return false }
        return test(view, row)
    }

    private func unchecked(_ plan: QueryPlan, limit: Int = .max) throws -> [Int64] {
        let test = plan.residual?.compile()
        switch plan.access {
        case .none:
            return []
        case .all:
            // Every object: the keys straight from the table's runs, no record opened.
            if test == nil, let numbers = try txn.withCursor(info.objectsTable, { try $0.packedKeys(limit: limit) }) {
                return numbers.map(KeyCodec.int(number:))
            }
            var out: [Int64] = []
            try txn.withCursor(info.objectsTable) { cursor in
                var row = context(0)
                var entry = try cursor.first()
                while let e = entry, out.count < limit {
                    row.key = KeyCodec.int(e.key)
                    if passes(test, e.value, row) { out.append(row.key) }
                    entry = try cursor.next()
                }
            }
            return out
        case let .index(scan):
            if limit == 1, test == nil, case let .keys(keys) = scan.shape, keys.count == 1 {
                // The first object of one key (`filter("id == %@", x).first`): one lookup, no cursor.
                return try keys[0].withUnsafeBytes { k in
                    if scan.objectsDB { return try txn.get(scan.dbi, k) { $0 == nil ? [] : [KeyCodec.int(k)] } }
                    return try txn.withFirstDuplicate(scan.dbi, k) { $0.map { [KeyCodec.int($0)] } ?? [] }
                }
            }
            var out: [Int64] = []
            // A range or prefix of the objects table is walked in key order: its first matches are the first.
            var inKeyOrder = scan.objectsDB
            if case .keys = scan.shape { inKeyOrder = false }
            var row = context(0)
            try QueryExecutor.walkKeys(scan, txn) { cursor in
                if scan.objectsDB {
                    guard let e = try cursor.current() else { return true }
                    row.key = KeyCodec.int(e.key)
                    if passes(test, e.value, row) { out.append(row.key) }
                    return !inKeyOrder || out.count < limit
                }
                var entry = try cursor.current()
                while let e = entry {
                    out.append(KeyCodec.int(e.value))
                    entry = try cursor.nextDuplicate()
                }
                return true
            }
            out.sort()
            if !scan.objectsDB, let test { out = try matching(out, test, limit: limit) }
            return out
        case let .backlinks(endPlan, hops):
            guard let end = hops.last?.to else { return [] }
            var keys = try QueryExecutor(info: end, txn: txn, lattice: lattice).keys(endPlan)
            for hop in hops.reversed() {
                var sources: [Int64]
                if case .backlinks = hop.kind {
                    // A LinkingObjects hop, read backwards: the links of the objects found.
                    sources = ResolvedPath.origins(of: hop, keys, context(0))
                    try failure.check()
                } else {
                    guard let table = hop.to.backlinkTable else { return [] }
                    sources = try BacklinkTable(table: table).sources(txn, targets: keys, linkID: hop.property.linkID)
                }
                // An object linking to several matches (through a List) is found once.
                sources.sort()
                keys = sources.removingAdjacentDuplicates()
            }
            return try test.map { try matching(keys, $0, limit: limit) } ?? keys
        case let .union(parts):
            var all = Set<Int64>()
            for part in parts { all.formUnion(try unchecked(part)) }
            return try test.map { try matching(all.sorted(), $0) } ?? all.sorted()
        }
    }

    /// The keys of `keys` (ascending) whose stored records pass `test`, the first `limit` of them, read
    /// through one cursor moving forward: keys near each other are found in the run already read instead
    /// of by a search from the root each.
    func matching(_ keys: [Int64], _ test: @escaping RowTest, limit: Int = .max) throws -> [Int64] {
        var out: [Int64] = []
        try txn.withCursor(info.objectsTable) { cursor in
            var row = context(0)
            for key in keys where out.count < limit {
                let entry = try KeyCodec.withObjectKey(key) { try cursor.seek(exactly: $0) }
                row.key = key
                if let e = entry, passes(test, e.value, row) { out.append(key) }
            }
        }
        return out
    }

    /// The share of this class's first `rows` records that pass `test`: a guess at the share of all that
    /// do (half a record's worth when none of them does; 0 for a class with no object).
    func sampledShare(_ test: @escaping RowTest, rows: Int) throws -> Double {
        var read = 0, passed = 0
        try txn.withCursor(info.objectsTable) { cursor in
            var row = context(0)
            var entry = try cursor.first()
            while let e = entry, read < rows {
                read += 1
                row.key = KeyCodec.int(e.key)
                if passes(test, e.value, row) { passed += 1 }
                entry = try cursor.next()
            }
        }
        try failure.check()
        return read == 0 ? 0 : max(Double(passed), 0.5) / Double(read)
    }

    /// Whether the stored record of `key` passes `test`.
    func matches(_ key: Int64, _ test: RowTest) throws -> Bool {
        let matched = try KeyCodec.withObjectKey(key) { k in
            try txn.get(info.objectsTable, k) { $0.flatMap(RecordView.init).map { test($0, context(key)) } ?? false }
        }
        try failure.check()
        return matched
    }

    /// Number of matches of an exact index scan, read from the index without touching records.
    func count(_ scan: IndexScan) throws -> Int {
        if case let .keys(keys) = scan.shape, !scan.objectsDB {
            // Each key's count from the index alone: no object key decoded.
            return try txn.withCursor(scan.dbi) { cursor in
                try keys.reduce(0) { n, key in try n + key.withUnsafeBytes { try cursor.count(ofKey: $0) } }
            }
        }
        var n = 0
        try QueryExecutor.walkKeys(scan, txn) { cursor in
            n += scan.objectsDB ? 1 : try cursor.duplicateCount()
            return true
        }
        return n
    }

    /// Positions a cursor on each distinct key the scan covers, in key order, until `body` returns false.
    static func walkKeys(_ scan: IndexScan, _ txn: Transaction, _ body: (inout Cursor) throws -> Bool) throws {
        try txn.withCursor(scan.dbi) { cursor in
            // The objects table has one entry per key; an index has duplicates to skip.
            func next() throws -> Cursor.Entry? { scan.objectsDB ? try cursor.next() : try cursor.nextKey() }
            switch scan.shape {
            case let .keys(keys):
                for key in keys {
                    let found = try key.withUnsafeBytes { k in try cursor.seek(exactly: k) }
                    if found != nil, try !body(&cursor) { return }
                }
            case let .prefix(prefix):
                var entry = try prefix.withUnsafeBytes { k in prefix.isEmpty ? try cursor.first() : try cursor.seek(atLeast: k) }
                while let e = entry, ByteMatching.hasPrefix(e.key, prefix) {
                    if try !body(&cursor) { return }
                    entry = try next()
                }
            case let .range(lower, lowerInclusive, upper, upperInclusive):
                var entry: (key: Bytes, value: Bytes)?
                if let lower {
                    entry = try lower.withUnsafeBytes { k in try cursor.seek(atLeast: k) }
                    if !lowerInclusive, let e = entry, compareBytes(e.key, lower) == 0 { entry = try next() }
                } else {
                    entry = try cursor.first()
                }
                while let e = entry {
                    if let upper {
                        let order = compareBytes(e.key, upper)
                        if order > 0 || (order == 0 && !upperInclusive) { return }
                    }
                    if try !body(&cursor) { return }
                    entry = try next()
                }
            }
        }
    }
}
