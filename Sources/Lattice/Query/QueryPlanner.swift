import Foundation

/// Chooses how to evaluate a bound predicate: an index seek or range when a term allows it (the most
/// selective one under `AND`, counted from the index itself), a union for an `OR` of indexable branches,
/// otherwise a full scan with the compiled predicate.
struct QueryPlanner {
    let info: ClassInfo
    let txn: Transaction
    let lattice: Lattice
    /// Count the candidates of an access even when there is nothing to choose between (for `explain()`).
    var countAlways = false

    func plan(_ node: BoundNode?) throws -> QueryPlan {
        guard let node else { return QueryPlan(access: .all, residual: nil, estimate: try txn.count(info.objectsTable)) }
        switch node {
        case .constant(true): return QueryPlan(access: .all, residual: nil, estimate: try txn.count(info.objectsTable))
        case .constant(false): return QueryPlan(access: .none, residual: nil, estimate: 0)
        case let .and(parts): return try planAnd(parts)
        case .term, .linked: return try planAnd([node])
        case let .or(parts):
            var plans: [QueryPlan] = []
            for part in parts {
                let p = try plan(part)
                if case .all = p.access { return try fullScan(node) }
                if case .none = p.access { continue }
                plans.append(p)
            }
            if plans.isEmpty { return QueryPlan(access: .none, residual: nil, estimate: 0) }
            if plans.count == 1 { return plans[0] }
            return QueryPlan(access: .union(plans), residual: nil, estimate: plans.reduce(0) { $0 + $1.estimate })
        default: return try fullScan(node)
        }
    }

    private func fullScan(_ node: BoundNode) throws -> QueryPlan {
        QueryPlan(access: .all, residual: node, estimate: try txn.count(info.objectsTable))
    }

    /// A candidate access for a conjunction, with the parts it accounts for.
    private struct Candidate {
        var access: QueryAccess
        var consumed: [Int]
        var exact: Bool
    }

    private func planAnd(_ parts: [BoundNode]) throws -> QueryPlan {
        if parts.count == 1, case let .term(term) = parts[0], !countAlways {
            // One term: its index if it has one, nothing to choose between or to count.
            switch try scan(for: term) {
            case .impossible: return QueryPlan(access: .none, residual: nil, estimate: 0)
            case .unindexed: return try fullScan(parts[0])
            case let .scan(s): return QueryPlan(access: .index(s), residual: s.exact ? nil : parts[0], estimate: 0)
            }
        }
        var candidates: [Candidate] = []
        var ranges: [ObjectIdentifier: [(index: Int, term: ScalarTerm, scan: IndexScan)]] = [:]
        for (i, part) in parts.enumerated() {
            switch part {
            case .constant(false): return QueryPlan(access: .none, residual: nil, estimate: 0)
            case let .term(term):
                switch try scan(for: term) {
                case .impossible: return QueryPlan(access: .none, residual: nil, estimate: 0)
                case .unindexed: break
                case let .scan(s):
                    candidates.append(Candidate(access: .index(s), consumed: [i], exact: s.exact))
                    if case .range = s.shape { ranges[ObjectIdentifier(term.property), default: []].append((i, term, s)) }
                }
            case let .linked(linked):
                if let endPlan = try endPlan(linked) {
                    candidates.append(Candidate(access: .backlinks(endPlan, hops: linked.hops), consumed: [i], exact: true))
                }
            case .or:
                let p = try plan(part)
                switch p.access {
                case .none: return QueryPlan(access: .none, residual: nil, estimate: 0)
                case .all: break
                default: candidates.append(Candidate(access: p.access, consumed: [i], exact: p.residual == nil))
                }
            default: break
            }
        }
        // Two bounds on one property (`age >= 20 AND age < 30`) make one range.
        for group in ranges.values where group.count > 1 {
            if let merged = merge(group.map(\.scan)) {
                if case let .range(lower, _, upper, _) = merged.shape, let lower, let upper, compareBytes(lower, upper) > 0 {
                    return QueryPlan(access: .none, residual: nil, estimate: 0)
                }
                candidates.append(Candidate(access: .index(merged), consumed: group.map(\.index), exact: merged.exact))
            }
        }
        var best: (candidate: Candidate, estimate: Int)?
        if candidates.count == 1 && !countAlways {
            best = (candidates[0], 0)  // nothing to choose between: counted only for explain()
        } else {
            // Likely-small candidates first, so that later counts stop early.
            for candidate in candidates.sorted(by: { $0.access.countingOrder < $1.access.countingOrder }) {
                let n = try estimate(candidate.access, limit: best?.estimate ?? Int.max)
                if best.map({ n < $0.estimate }) ?? true { best = (candidate, n) }
            }
        }
        guard let (chosen, estimate) = best else {
            return try fullScan(parts.count == 1 ? parts[0] : .and(parts))
        }
        var rest: [BoundNode] = []
        for (i, part) in parts.enumerated() where !(chosen.exact && chosen.consumed.contains(i)) {
            if case .constant(true) = part { continue }
            rest.append(part)
        }
        let residual: BoundNode? = rest.isEmpty ? nil : rest.count == 1 ? rest[0] : .and(rest)
        return QueryPlan(access: chosen.access, residual: residual, estimate: estimate)
    }

    /// How to find the end objects of a linked term, when finding them and following their backlinks
    /// beats testing the path from every object of this class: an index of the end class (the term
    /// checked again on each candidate when the index is not exact), else a scan of the end class with
    /// the term when that costs less. Costs are counted in records read in order: following a link from
    /// an object is a random lookup, about four; the backlinks of the matches, looked up in key order
    /// through one cursor, about one each. Testing from each object reads it and follows its links
    /// (through a List, until a match: about one in `share`); the scan reads every end object and looks
    /// up the backlinks of the matches, `share` of them by the first records of the end class.
    private func endPlan(_ linked: LinkedTerm) throws -> QueryPlan? {
        guard let end = linked.hops.last?.to else { return nil }
        let term: BoundNode? = if case let .term(t) = linked.end { .term(t) } else { nil }
        if let s = try QueryPlanner(info: end, txn: txn, lattice: lattice).scan(for: linked) {
            return QueryPlan(access: .index(s), residual: s.exact ? nil : term, estimate: 0)
        }
        guard let term else { return nil }
        let endCount = Double(try txn.count(end.objectsTable)), count = Double(try txn.count(info.objectsTable))
        let share = try QueryExecutor(info: end, txn: txn, lattice: lattice).sampledShare(term.compile(), rows: 64)
        var fanout = 1.0, lookups = 0.0
        for hop in linked.hops {
            if hop.toMany { fanout *= min(max(1, endCount / max(count, 1)), 1 / share) }
            lookups += fanout
        }
        guard endCount * (1 + share) < count * (1 + 4 * lookups) else { return nil }
        return QueryPlan(access: .all, residual: term, estimate: Int(endCount))
    }

    // MARK: Terms to scans

    enum TermScan {
        case scan(IndexScan)
        case unindexed
        case impossible
    }

    /// The scan of this (the end) class that finds the end objects of a linked term, if any serves.
    func scan(for linked: LinkedTerm) throws -> IndexScan? {
        switch linked.end {
        case let .term(term):
            guard case let .scan(s) = try scan(for: term) else { return nil }
            return s
        case let .objects(objects):
            // Their keys in the objects table: those of this file's objects (another file's match nothing).
            let keys = objects.compactMap { $0._lattice?.env === txn.env ? $0._key : nil }.map { key -> [UInt8] in
                var bytes: [UInt8] = []
                KeyCodec.appendInt(key, to: &bytes)
                return bytes
            }
            guard let link = linked.hops.last?.property else { return nil }
            return IndexScan(property: link, dbi: info.objectsTable, objectsDB: true, folded: false, shape: .keys(keys), exact: true,
                             label: .objects(linked.describe))
        }
    }

    /// The index, key bytes and exactness of a term; `.unindexed` when no index serves it.
    func scan(for term: ScalarTerm) throws -> TermScan {
        let p = term.property
        let objectsDB = info.keyedByPrimaryKey && p === info.primaryKey
        let folded: Bool
        let dbi: Table
        if term.options.isEmpty {
            guard let d = objectsDB ? info.objectsTable : p.indexTable else { return .unindexed }
            dbi = d
            folded = false
        } else if term.options == .caseInsensitive, let d = p.foldedIndexTable, term.op == .equal || term.op == .in || term.op == .beginsWith {
            dbi = d
            folded = true
        } else {
            return .unindexed
        }
        func make(_ shape: IndexScan.Shape, exact: Bool, _ label: IndexScan.Label) -> TermScan {
            .scan(IndexScan(property: p, dbi: dbi, objectsDB: objectsDB, folded: folded, shape: shape, exact: exact, label: label))
        }
        let optional = p.property.isOptional && !objectsDB
        // An encrypted file's index keys are keyed hashes: equal values still share a key, order is gone.
        let hasher = objectsDB ? nil : txn.keyHasher(dbi)
        if txn.isEncrypted && !objectsDB && term.op != .equal && term.op != .in { return .unindexed }
        switch term.op {
        case .equal, .in:
            // Each key once, in key order: the cursor then seeks forward, often within the page it is on.
            // NaN equals nothing.
            var keys: [[UInt8]] = []
            var exact = true
            for c in term.constants where !c.isNaN {
                guard let k = key(c, p, optional: optional) else { continue }
                if !k.clean { exact = false }
                keys.append(hasher.map { $0.hash(k.bytes) } ?? k.bytes)
            }
            if keys.isEmpty { return .impossible }
            if keys.count > 1 {
                keys.sort { a, b in a.withUnsafeBytes { x in b.withUnsafeBytes { x.sortsBefore($0) } } }
                keys = keys.removingAdjacentDuplicates()
            }
            return make(.keys(keys), exact: exact, .term(term))
        case .less, .lessOrEqual, .greater, .greaterOrEqual, .between:
            // Ordering never matches nil or NaN.
            if term.constants.contains(where: { $0 == .null || $0.isNaN }) { return .impossible }
            var lower: (key: [UInt8], inclusive: Bool, text: () -> String)?
            var upper: (key: [UInt8], inclusive: Bool, text: () -> String)?
            var exact = true
            let literals = term.literals
            var bounds: [(QueryOperator, ScalarValue, () -> String)] = []
            if term.op == .between {
                bounds = [(.greaterOrEqual, term.constants[0], { literals[0].description }),
                          (.lessOrEqual, term.constants[1], { literals[1].description })]
            } else {
                bounds = [(term.op, term.constants[0], { literals[0].description })]
            }
            for (op, value, text) in bounds {
                var op = op, value = value, text = text
                if p.property.type.isInteger, case let .double(d) = value {
                    guard let b = integerBound(op, d) else { return .impossible }
                    guard let (o, i) = b else { continue }
                    op = o
                    value = .int(i)
                    text = { "\(i)" }
                }
                guard let k = key(value, p, optional: optional) else { return .impossible }
                // A truncated or ambiguous key stands for several values: include it and let the filter decide.
                if !k.clean { exact = false }
                if op == .greater || op == .greaterOrEqual {
                    lower = (k.bytes, op == .greaterOrEqual || !k.clean, text)
                } else {
                    upper = (k.bytes, op == .lessOrEqual || !k.clean, text)
                }
            }
            var lowerKey = lower?.key, upperKey = upper?.key
            if QueryPlanner.hasFloatingKeys(p) {
                // NaN keys lie beyond the infinities (below -inf with the sign bit set, above +inf without):
                // an open end stops at the infinity. That also passes over nil's tag.
                if lowerKey == nil { lowerKey = key(.double(-.infinity), p, optional: optional)?.bytes }
                if upperKey == nil { upperKey = key(.double(.infinity), p, optional: optional)?.bytes }
            } else if lowerKey == nil && optional {
                // Ordering never matches nil: an optional's range starts after the nil tag.
                lowerKey = [1]
            }
            return make(.range(lower: lowerKey, lowerInclusive: lower?.inclusive ?? true, upper: upperKey,
                               upperInclusive: upper?.inclusive ?? true),
                        exact: exact, .range(lower: lower?.text, upper: upper?.text))
        case .beginsWith:
            guard let k = key(term.constants[0], p, optional: optional) else { return .impossible }
            var prefix = k.bytes
            // An empty string's key is [0]; an empty prefix matches every non-nil key.
            if case let .bytes(b) = term.constants[0], b.isEmpty { prefix = optional ? [1] : [] }
            return make(.prefix(prefix), exact: k.clean, .term(term))
        default:
            return .unindexed
        }
    }

    /// In an encrypted file, `Class.property` of each indexed property whose terms in `node` fall back to a
    /// scan because its index holds keyed hashes (ranges, `BEGINSWITH`); empty for a plaintext file.
    func hashedIndexFallbacks(_ node: BoundNode?) -> [String] {
        guard txn.isEncrypted, let node else { return [] }
        var out: [String] = []
        func visit(_ node: BoundNode, _ info: ClassInfo) {
            switch node {
            case let .not(inner): visit(inner, info)
            case let .and(parts), let .or(parts): for part in parts { visit(part, info) }
            case let .term(term):
                let p = term.property
                let keyed = info.keyedByPrimaryKey && p === info.primaryKey
                if !keyed, p.indexTable != nil, term.op != .equal, term.op != .in {
                    let name = "\(info.name).\(p.name)"
                    if !out.contains(name) { out.append(name) }
                }
            case let .linked(linked):
                if let end = linked.hops.last?.to, case let .term(term) = linked.end { visit(.term(term), end) }
            default: break
            }
        }
        visit(node, info)
        return out
    }

    /// The note `explain()` adds for the properties of `hashedIndexFallbacks` (or a sort) in an encrypted file.
    static func hashedIndexNote(_ names: [String]) -> String {
        " (encrypted file: the index of \(names.joined(separator: ", ")) holds keyed hashes, so ranges, BEGINSWITH and sorts "
            + "on \(names.count == 1 ? "it" : "them") scan)"
    }

    /// Whether the index keys of `p` are sortable doubles (Date; Double and Float if they get indexes),
    /// among which NaN keys must be passed over.
    static func hasFloatingKeys(_ p: PropertyInfo) -> Bool {
        switch p.property.type {
        case .date, .double, .float: return true
        default: return false
        }
    }

    /// The groups of an index walk (key, then its objects) in query order: NaN keys, which lie at both ends
    /// of the index (by sign bit), become one group of NaN objects in object-key order, right after nil and
    /// before every number, where `ScalarValue.compare` sorts NaN.
    static func nanFirst(_ groups: [(key: [UInt8], objects: [Int64])], _ p: PropertyInfo) -> [(key: [UInt8], objects: [Int64])] {
        guard hasFloatingKeys(p) else { return groups }
        let optional = p.property.isOptional
        var rest = groups
        rest.removeAll { isNaNKey($0.key, optional: optional) }
        if rest.count == groups.count { return groups }
        let nans = groups.filter { isNaNKey($0.key, optional: optional) }.flatMap(\.objects).sorted()
        rest.insert((key: [], objects: nans), at: optional && rest.first?.key == [0] ? 1 : 0)
        return rest
    }

    /// Whether a key of such an index holds NaN.
    static func isNaNKey(_ key: [UInt8], optional: Bool) -> Bool {
        let bytes = optional ? key.dropFirst() : key[...]
        guard bytes.count == 8 else { return false }
        let u = bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        // The inverse of `KeyCodec.appendDouble`.
        let bits = u & (1 << 63) != 0 ? u ^ (1 << 63) : ~u
        return Double(bitPattern: bits).isNaN
    }

    /// Converts a bound with a Double constant on an integer property: nil when nothing can match,
    /// `.some(nil)` when the bound excludes nothing.
    private func integerBound(_ op: QueryOperator, _ d: Double) -> (QueryOperator, Int64)?? {
        if d.isNaN { return nil }
        let isLower = op == .greater || op == .greaterOrEqual
        if d >= 9_223_372_036_854_775_808.0 { return isLower ? nil : .some(nil) }
        if d < -9_223_372_036_854_775_808.0 { return isLower ? .some(nil) : nil }
        let integral = d.rounded(.towardZero) == d
        switch op {
        case .less: return integral ? (.less, Int64(d)) : (.lessOrEqual, Int64(d.rounded(.down)))
        case .lessOrEqual: return (.lessOrEqual, Int64(d.rounded(.down)))
        case .greater: return integral ? (.greater, Int64(d)) : (.greaterOrEqual, Int64(d.rounded(.up)))
        default: return (.greaterOrEqual, Int64(d.rounded(.up)))
        }
    }

    /// The index key of a constant (as `_latticeKey` of the property's type builds it, truncated like
    /// `Lattice.indexKey`). `clean` is false when stored keys equal to it may belong to other values.
    /// nil when the constant cannot be stored in the property (a fractional Double for an integer).
    func key(_ value: ScalarValue, _ p: PropertyInfo, optional: Bool) -> (bytes: [UInt8], clean: Bool)? {
        var out: [UInt8] = []
        if case .null = value { return optional ? ([0], true) : nil }
        if optional { out.append(1) }
        switch (value, p.property.type) {
        case let (.int(i), .bool): out.append(i != 0 ? 1 : 0)
        case let (.int(i), _): KeyCodec.appendInt(i, to: &out)
        case let (.double(d), .date), let (.double(d), .double), let (.double(d), .float): KeyCodec.appendDouble(d, to: &out)
        case let (.double(d), _):
            guard d.rounded(.towardZero) == d, let i = Int64(exactly: d) else { return nil }
            KeyCodec.appendInt(i, to: &out)
        case let (.bytes(b), _): out += b
        default: return nil
        }
        var clean = true
        if out.isEmpty || (!optional && p.property.type == .string && out.first == 0) { clean = false }
        if out.isEmpty { out.append(0) }
        if out.count >= FileLayout.maxIndexKey {
            clean = false
            out.removeLast(out.count - FileLayout.maxIndexKey)
        }
        return (out, clean)
    }

    /// Intersects the ranges of several terms on one property.
    private func merge(_ scans: [IndexScan]) -> IndexScan? {
        guard let first = scans.first else { return nil }
        var lower: [UInt8]?, lowerInclusive = true, upper: [UInt8]?, upperInclusive = true
        var lowerText: (() -> String)?, upperText: (() -> String)?
        for s in scans {
            guard s.folded == first.folded, case let .range(l, li, u, ui) = s.shape, case let .range(lt, ut) = s.label else { return nil }
            if let l, lower.map({ compareBytes(l, $0) > 0 || (compareBytes(l, $0) == 0 && !li) }) ?? true {
                lower = l; lowerInclusive = li; lowerText = lt
            }
            if let u, upper.map({ compareBytes(u, $0) < 0 || (compareBytes(u, $0) == 0 && !ui) }) ?? true {
                upper = u; upperInclusive = ui; upperText = ut
            }
        }
        return IndexScan(property: first.property, dbi: first.dbi, objectsDB: first.objectsDB, folded: first.folded,
                         shape: .range(lower: lower, lowerInclusive: lowerInclusive, upper: upper, upperInclusive: upperInclusive),
                         exact: scans.allSatisfy(\.exact), label: .range(lower: lowerText, upper: upperText))
    }

    // MARK: Estimates

    /// The number of candidates of an access, counted from the index and stopping once above `limit`.
    func estimate(_ access: QueryAccess, limit: Int) throws -> Int {
        switch access {
        case .none: return 0
        case .all: return try txn.count(info.objectsTable)
        case let .union(parts):
            var n = 0
            for part in parts where n <= limit { n += try estimate(part.access, limit: limit - n) }
            return n
        case let .index(scan):
            var n = 0
            try QueryExecutor.walkKeys(scan, txn) { cursor in
                n += scan.objectsDB ? 1 : try cursor.duplicateCount()
                return n <= limit
            }
            return n
        case let .backlinks(endPlan, hops):
            // The end objects found (for a scan of the end class: the objects it reads); each usually links
            // back to about one object per hop.
            guard let end = hops.last?.to else { return 0 }
            if case .all = endPlan.access { return endPlan.estimate }
            return try QueryPlanner(info: end, txn: txn, lattice: lattice).estimate(endPlan.access, limit: limit)
        }
    }
}

extension QueryAccess {
    /// Seeks before ranges and prefixes (two-sided ranges first), unions last.
    fileprivate var countingOrder: Int {
        switch self {
        case .none: return 0
        case let .index(scan):
            switch scan.shape {
            case .keys: return 1
            case let .range(lower, _, upper, _): return lower != nil && upper != nil ? 2 : 3
            case .prefix: return 2
            }
        case .backlinks: return 4
        case .union: return 4
        case .all: return 5
        }
    }
}
