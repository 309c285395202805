/// One access to an index (or, for a non-optional integer primary key, to the objects database,
/// whose keys are the primary key values).
struct IndexScan {
    enum Shape {
        /// Seeks of exact keys (equality, `IN`).
        case keys([[UInt8]])
        /// Keys between bounds (nil: unbounded).
        case range(lower: [UInt8]?, lowerInclusive: Bool, upper: [UInt8]?, upperInclusive: Bool)
        /// Keys starting with the bytes (`BEGINSWITH`).
        case prefix([UInt8])
    }

    let property: PropertyInfo
    let dbi: Table
    /// True when `dbi` is the objects database (keys are object keys, values records).
    let objectsDB: Bool
    let folded: Bool
    let shape: Shape
    /// True when every key the scan yields satisfies its terms (no truncated or ambiguous key involved),
    /// so the terms need no re-check on the records.
    let exact: Bool
    let label: Label

    /// `Class.property`.
    var name: String { property.qualifiedName }

    /// What `text` says, kept apart so that it is built only by `explain()` (an `IN` list may hold
    /// many values).
    enum Label {
        /// `Person.age IN {1, 2}`.
        case term(ScalarTerm)
        /// The bounds of a range as written (nil: unbounded); the brackets follow the shape.
        case range(lower: (() -> String)?, upper: (() -> String)?)
        /// Given objects, found by key: the comparison as written.
        case objects(() -> String)
    }

    /// For example `Person.age [20, 30)`.
    var text: String {
        switch label {
        case let .term(term):
            return "\(name) \(term.comparison)"
        case let .objects(describe):
            return describe()
        case let .range(lower, upper):
            guard case let .range(_, lowerInclusive, _, upperInclusive) = shape else { return name }
            return "\(name) \(lower.map { (lowerInclusive ? "[" : "(") + $0() } ?? "(-inf"), "
                + "\(upper.map { $0() + (upperInclusive ? "]" : ")") } ?? "+inf)")"
        }
    }

    var kind: String {
        if case .objects = label { return "object seek" }
        let base: String
        switch shape {
        case .keys: base = objectsDB ? "primary key seek" : "index seek"
        case .range: base = objectsDB ? "primary key range" : "index range"
        case .prefix: base = "index prefix"
        }
        return folded ? "case-insensitive " + base : base
    }
}

/// A plan for finding the objects that match a predicate.
indirect enum QueryAccess {
    /// Nothing can match.
    case none
    /// Every object of the class is read.
    case all
    case index(IndexScan)
    /// The union of several plans (an `OR` whose every branch uses an index).
    case union([QueryPlan])
    /// The objects that reach, through `hops`, an end object the plan of the end class finds (an index
    /// scan, or a scan of the end class when its term has no index): that plan, then the backlink table
    /// once per hop (from the last to the first).
    case backlinks(QueryPlan, hops: [ResolvedPath.Hop])
}

/// An access path plus the predicate still to check on each candidate record.
struct QueryPlan {
    var access: QueryAccess
    var residual: BoundNode?
    /// Estimated (for the chosen index: counted) number of candidates.
    var estimate: Int

    var description: String {
        var text: String
        switch access {
        case .none: text = "empty (the predicate can never match)"
        case .all: text = "full scan (~\(estimate) rows)"
        case let .index(scan): text = "\(scan.kind) \(scan.text) (~\(estimate) rows)"
        case let .union(parts): text = "union(" + parts.map(\.description).joined(separator: " | ") + ") (~\(estimate) rows)"
        case let .backlinks(end, hops):
            if case let .index(scan) = end.access { text = "\(scan.kind) \(scan.text)" } else { text = "full scan of \(hops.last?.to.name ?? "")" }
            if let filter = end.residual { text += " -> filter \(filter.description)" }
            text += " -> backlinks " + hops.reversed().map { "\($0.from.name).\($0.property.name)" }.joined(separator: " -> ")
                + " (~\(estimate) rows)"
        }
        if let residual { text += " -> filter \(residual.description)" }
        return text
    }

    /// True when the result is exactly the scan's candidates (count without reading records).
    var isExactIndexScan: Bool {
        if residual != nil { return false }
        if case let .index(scan) = access { return scan.exact }
        return false
    }
}
