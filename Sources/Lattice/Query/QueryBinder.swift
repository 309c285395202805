import Foundation

/// What a compiled test may read besides the record itself: the transaction and handle, for the link
/// hops, collections and backlinks of key paths through relationships, and the record's object key
/// (collections and backlinks are keyed by it).
struct RowContext {
    let txn: Transaction
    let lattice: Lattice
    /// The object whose record is tested (a scan sets it row by row on one context, so that the references
    /// above are not retained and released for every row).
    var key: Int64
    /// Where tests record a read failure (they cannot throw); the executor throws it.
    let failure: RowFailure
}

/// A test of one record, compiled once per query (no re-interpretation per row).
typealias RowTest = (RecordView, RowContext) -> Bool

/// A predicate bound to a class: key paths resolved, constants converted to the property's type,
/// and every comparison compiled into a closure over record payloads.
indirect enum BoundNode {
    case constant(Bool)
    case not(BoundNode)
    case and([BoundNode])
    case or([BoundNode])
    /// A stored scalar property against constants: the shape the planner can serve from an index.
    case term(ScalarTerm)
    /// Any other comparison (property against property, ...), with its description for `explain()`
    /// (built only when asked: the constants may be many).
    case test(() -> String, RowTest)
    /// A comparison at the end of a path through links, lists, sets or maps that the planner can serve
    /// from an index of the end class and the backlink table.
    case linked(LinkedTerm)

    /// The whole predicate as one closure.
    func compile() -> RowTest {
        switch self {
        case let .constant(b): return { _, _ in b }
        case let .not(inner):
            let t = inner.compile()
            return { !t($0, $1) }
        case let .and(parts):
            let tests = parts.map { $0.compile() }
            if tests.count == 2 { let a = tests[0], b = tests[1]; return { a($0, $1) && b($0, $1) } }
            return { view, context in tests.allSatisfy { $0(view, context) } }
        case let .or(parts):
            let tests = parts.map { $0.compile() }
            if tests.count == 2 { let a = tests[0], b = tests[1]; return { a($0, $1) || b($0, $1) } }
            return { view, context in tests.contains { $0(view, context) } }
        case let .term(term): return term.test
        case let .test(_, t): return t
        case let .linked(l): return l.test
        }
    }

    var description: String {
        switch self {
        case let .constant(b): return b ? "TRUEPREDICATE" : "FALSEPREDICATE"
        case let .not(inner): return "NOT " + inner.parenthesized
        case let .and(parts): return parts.map(\.parenthesized).joined(separator: " AND ")
        case let .or(parts): return parts.map(\.parenthesized).joined(separator: " OR ")
        case let .term(term): return term.description
        case let .test(text, _): return text()
        case let .linked(l): return l.describe()
        }
    }

    private var parenthesized: String {
        switch self {
        case .and, .or: return "(\(description))"
        default: return description
        }
    }
}

/// `property op constants` with the constants already in the property's comparison form.
struct ScalarTerm {
    let property: PropertyInfo
    let op: QueryOperator
    let options: QueryStringOptions
    /// One value; the list of `IN`; the two bounds of `BETWEEN`.
    let constants: [ScalarValue]
    /// The constants as written (for descriptions).
    let literals: [QueryValue]
    let test: RowTest

    /// The term without its property: `IN {1, 2}`, `==[c] 'x'`.
    var comparison: String { "\(op.rawValue)\(options.suffix) \(QueryBinder.describe(op, literals))" }

    var description: String { "\(property.name) \(comparison)" }
}

/// `ANY path.property op constants` (or a to-one path) whose path has only links, lists, sets and maps
/// of objects, and whose comparison never matches nil: the objects it selects are exactly those that reach
/// an end object matching `term`, which the backlink table lists from the end objects.
struct LinkedTerm {
    /// What the end objects must be.
    enum End {
        /// A comparison on the end class.
        case term(ScalarTerm)
        /// One of these objects (`owner == %@`, `%@ IN dogs`); those of another file match nothing.
        case objects([Object])
    }
    let hops: [ResolvedPath.Hop]
    let end: End
    /// The comparison as written, for `explain()`.
    let describe: () -> String
    let test: RowTest
}

/// Binds a ``QueryNode`` to a class.
struct QueryBinder {
    let info: ClassInfo
    /// The SUBQUERY variable whose objects are the rows (`$d`), or nil for the queried class.
    var variable: String? = nil

    func bind(_ node: QueryNode) throws -> BoundNode {
        switch node {
        case let .constant(b): return .constant(b)
        case let .not(inner): return .not(try bind(inner))
        case let .and(parts): return .and(try parts.map(bind))
        case let .or(parts): return .or(try parts.map(bind))
        case let .comparison(c): return try bind(c)
        }
    }

    func fail(_ message: String, _ position: Int) -> LatticeError {
        .invalidQuery(message: "\(message) (at column \(position)).")
    }

    private func bind(_ c: QueryComparison) throws -> BoundNode {
        var lhs = c.lhs, rhs = c.rhs, op = c.op, quantifier = c.quantifier
        if case let .subquery(collection, variable, predicate, position) = lhs {
            return try bindSubquery(collection: collection, variable: variable, predicate: predicate, op: op, rhs: rhs, position: position)
        }
        if case let .subquery(collection, variable, predicate, position) = rhs {
            guard let flipped = op.flipped else { throw fail("the left side of \(op.rawValue) must be a key path", c.position) }
            return try bindSubquery(collection: collection, variable: variable, predicate: predicate, op: flipped, rhs: lhs, position: position)
        }
        // `'x' IN nicknames`, `%@ IN dogs`: ANY element equals the value.
        if op == .in, case let .keyPath(path) = rhs, !isKeyPath(lhs) {
            let resolved = try resolvePath(path)
            guard resolved.toMany, path.collectionOperator == nil else {
                let name = resolved.rootColumn.map { "'\(info.name).\($0.name)' is a \($0.property.property.type)" } ?? "'\(path)' is one value per object"
                throw fail("\(name), not a collection; 'value IN key path' needs a List, MutableSet, Map or LinkingObjects", c.position)
            }
            if let q = quantifier { throw fail("\(q.rawValue) cannot be combined with 'value IN key path'", c.position) }
            if case .list = lhs { throw fail("'value IN key path' takes one value on the left, not the list \(lhs)", c.position) }
            swap(&lhs, &rhs)
            op = .equal
            quantifier = .any
        }
        // Put the key path on the left: `5 < age` is `age > 5`.
        if case .keyPath = rhs, !isKeyPath(lhs) {
            guard let flipped = op.flipped else { throw fail("the left side of \(op.rawValue) must be a key path", c.position) }
            swap(&lhs, &rhs)
            op = flipped
        }
        guard case let .keyPath(path) = lhs else {
            throw fail("a comparison needs a key path on at least one side (found \(lhs) \(op.rawValue) \(rhs))", c.position)
        }
        var comparison = c
        comparison.quantifier = quantifier
        let resolved = try resolvePath(path)
        guard path.collectionOperator == nil, quantifier == nil, let property = resolved.rootColumn else {
            return try bindPath(path, comparison, op: op, rhs: rhs)
        }
        if case let .keyPath(other) = rhs {
            return try bindPropertyPair(resolved, op, c.options, try resolvePath(other), c.position)
        }
        return .term(try makeTerm(property, op, c.options, try values(op, rhs, c.position), c.position))
    }

    private func isKeyPath(_ e: QueryExpression) -> Bool {
        if case .keyPath = e { return true }
        return false
    }

    // MARK: Terms

    func checkOperator(_ p: ScalarColumn, _ op: QueryOperator, _ options: QueryStringOptions, _ position: Int) throws {
        let type = p.type
        var name: String { "'\(info.name).\(p.name)' (\(type))" }
        if op.isStringOperator && type != .string && type != .data {
            throw fail("\(op.rawValue) needs a String or Data property; \(name) is not one", position)
        }
        if op.isOrdering && type == .bool {
            throw fail("\(op.rawValue) cannot order Bool values of \(name)", position)
        }
        if !options.isEmpty && type != .string {
            throw fail("the options \(options.suffix) apply only to String properties; \(name) is not one", position)
        }
    }

    /// A constant in the property's comparison form; throws on a type mismatch.
    private func convert(_ value: QueryValue, for p: ScalarColumn, _ options: QueryStringOptions, _ position: Int) throws -> ScalarValue {
        try convert(value, type: p.type, optional: p.isOptional, name: "\(info.name).\(p.name)", options, position)
    }

    /// A constant in the comparison form of a value of `type` (also aggregates: `dogs.@avg.age > 3`).
    func convert(_ value: QueryValue, type: PropertyType, optional: Bool, name: @autoclosure () -> String, _ options: QueryStringOptions,
                 _ position: Int) throws -> ScalarValue {
        func mismatch() -> LatticeError {
            fail("type mismatch: '\(name())' is \(type)\(optional ? "?" : "") and cannot be compared with "
                + "\(value) (\(value.typeName))", position)
        }
        if case let .text(text) = value {
            // Typed now that the property's type is known, then converted as that value would be.
            guard let typed = QueryTextArgument(text).value(as: type) else {
                throw fail("type mismatch: '\(name())' is \(type)\(optional ? "?" : "") and \(value) is not a value of that type", position)
            }
            return try convert(typed, type: type, optional: optional, name: name(), options, position)
        }
        switch (value, type) {
        case (.null, _): return .null
        case let (.bool(b), .bool): return .int(b ? 1 : 0)
        case let (.int(i), .int), let (.int(i), .int8), let (.int(i), .int16), let (.int(i), .int32), let (.int(i), .int64):
            return .int(i)
        case let (.double(d), .int), let (.double(d), .int8), let (.double(d), .int16), let (.double(d), .int32), let (.double(d), .int64):
            return .double(d)
        case let (.decimal(d), .int), let (.decimal(d), .int8), let (.decimal(d), .int16), let (.decimal(d), .int32), let (.decimal(d), .int64):
            return .double(NSDecimalNumber(decimal: d).doubleValue)
        // Float properties compare with constants rounded to Float, so `height == 1.1` finds 1.1 stored as Float.
        case let (.int(i), .float): return .double(Double(Float(i)))
        case let (.double(d), .float): return .double(Double(Float(d)))
        case let (.decimal(d), .float): return .double(Double(Float(NSDecimalNumber(decimal: d).doubleValue)))
        case let (.int(i), .double): return .double(Double(i))
        case let (.double(d), .double): return .double(d)
        case let (.decimal(d), .double): return .double(NSDecimalNumber(decimal: d).doubleValue)
        case let (.int(i), .decimal): return .decimal(Decimal(i))
        // A Double with no Decimal (NaN, infinities, magnitudes Foundation does not convert) stays a Double:
        // NaN matches nothing, +inf is above every Decimal and -inf below (see `compareDecimalDouble`).
        case let (.double(d), .decimal): return decimalFromDouble(d).map(ScalarValue.decimal) ?? .double(d)
        case let (.decimal(d), .decimal): return .decimal(d)
        case let (.date(d), .date): return .double(d.timeIntervalSinceReferenceDate)
        case let (.string(s), .string):
            return .bytes(options.isEmpty ? Array(s.utf8)
                : Array(CaseFolding.fold(s, caseInsensitive: options.contains(.caseInsensitive),
                                         diacriticInsensitive: options.contains(.diacriticInsensitive)).utf8))
        case let (.data(d), .data): return .bytes(Array(d))
        case let (.string(s), .data): return .bytes(Array(s.utf8))
        case let (.uuid(u), .uuid): return .bytes(withUnsafeBytes(of: u.uuid) { Array($0) })
        case let (.string(s), .uuid):
            guard let u = UUID(uuidString: s) else { throw mismatch() }
            return .bytes(withUnsafeBytes(of: u.uuid) { Array($0) })
        case let (.objectId(o), .objectId): return .bytes(o.byteArray)
        case let (.string(s), .objectId):
            guard let o = ObjectId(string: s) else { throw mismatch() }
            return .bytes(o.byteArray)
        default: throw mismatch()
        }
    }

    func makeTerm(_ p: ScalarColumn, _ op: QueryOperator, _ options: QueryStringOptions, _ literals: [QueryValue],
                  _ position: Int) throws -> ScalarTerm {
        try checkOperator(p, op, options, position)
        let constants = try literals.map { try convert($0, for: p, options, position) }
        if op.isStringOperator, constants.contains(.null) {
            throw fail("\(op.rawValue) cannot take nil", position)
        }
        let test: RowTest = p.kind.isBytes
            ? QueryBinder.bytesTest(p, op, options, constants)
            : QueryBinder.valueTest(p, op, constants)
        return ScalarTerm(property: p.property, op: op, options: options, constants: constants, literals: literals, test: test)
    }

    /// Whether a non-nil comparison result satisfies `op` (for ==, !=, <, <=, >, >=).
    @inline(__always)
    static func satisfies(_ op: QueryOperator, _ order: Int) -> Bool {
        switch op {
        case .equal: return order == 0
        case .notEqual: return order != 0
        case .less: return order < 0
        case .lessOrEqual: return order <= 0
        case .greater: return order > 0
        case .greaterOrEqual: return order >= 0
        default: return false
        }
    }

    /// Evaluates `value op constants` with nil semantics: nil equals only nil; ordering with nil is false.
    @inline(__always)
    static func evaluate(_ op: QueryOperator, _ value: ScalarValue, _ constants: [ScalarValue],
                         compare: (ScalarValue, ScalarValue) -> Int) -> Bool {
        func equal(_ c: ScalarValue) -> Bool {
            if c == .null || value == .null { return c == .null && value == .null }
            if c.isNaN || value.isNaN { return false }
            return compare(value, c) == 0
        }
        // As in IEEE 754, NaN is unordered: only `!=` holds.
        if value.isNaN && op != .notEqual && op != .in && op != .equal { return false }
        switch op {
        case .equal: return equal(constants[0])
        case .notEqual: return !equal(constants[0])
        case .in: return constants.contains(where: equal)
        case .between:
            if value == .null || constants.contains(where: { $0 == .null || $0.isNaN }) { return false }
            return compare(value, constants[0]) >= 0 && compare(value, constants[1]) <= 0
        default:
            if value == .null || constants[0] == .null || constants[0].isNaN { return false }
            return satisfies(op, compare(value, constants[0]))
        }
    }

    /// Numbers, Bool, Decimal and Date: decode to a ``ScalarValue`` (no allocation) and compare.
    private static func valueTest(_ p: ScalarColumn, _ op: QueryOperator, _ constants: [ScalarValue]) -> RowTest {
        let column = p.column
        // Exact integer equality/ordering against one integer constant: the common case, kept tight.
        if p.kind == .integer, !p.isOptional, constants.count == 1, case let .int(c) = constants[0],
           op != .in, op != .between {
            return { view, _ in
                var at = 0
                let v = view.payload(column).map { Varint.unzigzag(Varint.read($0, &at)) } ?? 0
                return satisfies(op, v < c ? -1 : v == c ? 0 : 1)
            }
        }
        // Booleans, doubles and dates against one constant, compared as themselves without a decoded
        // `ScalarValue` per row; a NaN value is unordered (only `!=` holds), as in `evaluate`.
        if !p.isOptional, constants.count == 1, op != .in, op != .between {
            switch (p.kind, constants[0]) {
            case let (.bool, .int(c)):
                return { view, _ in
                    let v: Int64 = Bool._latticeDecode(view.payload(column) ?? UnsafeRawBufferPointer(start: nil, count: 0)) ? 1 : 0
                    return satisfies(op, v < c ? -1 : v == c ? 0 : 1)
                }
            case let (.double, .double(c)) where !c.isNaN, let (.date, .double(c)) where !c.isNaN:
                return { view, _ in
                    let v = Double._latticeDecode(view.payload(column) ?? UnsafeRawBufferPointer(start: nil, count: 0))
                    if v.isNaN { return op == .notEqual }
                    return satisfies(op, v < c ? -1 : v > c ? 1 : 0)
                }
            default: break
            }
        }
        // A long `IN` list: one hash lookup per row instead of a pass over the list.
        if op == .in, constants.count > 8, let set = inSet(constants, p.kind) {
            return { view, _ in set.contains(ScalarValue.decode(view.payload(column), p)) }
        }
        return { view, _ in
            evaluate(op, ScalarValue.decode(view.payload(column), p), constants, compare: ScalarValue.compare)
        }
    }

    /// The constants of an `IN` as a set in which a row's decoded value finds its equal (for integer
    /// properties as `.int`; Double hashes -0.0 like 0.0), without those that equal nothing (NaN, a
    /// fraction for an integer property). nil for Decimal, whose equal values may hash apart.
    private static func inSet(_ constants: [ScalarValue], _ kind: ScalarKind) -> Set<ScalarValue>? {
        if kind == .decimal { return nil }
        var set = Set<ScalarValue>()
        for c in constants {
            switch c {
            case let .double(d) where kind == .integer || kind == .bool:
                if let i = Int64(exactly: d) { set.insert(.int(i)) }
            case let .double(d) where d.isNaN:
                break
            default:
                set.insert(c)
            }
        }
        return set
    }

    /// String, Data, UUID and ObjectId: compare payload bytes in place (folded first for `[c]`/`[d]`).
    private static func bytesTest(_ p: ScalarColumn, _ op: QueryOperator, _ options: QueryStringOptions,
                                  _ constants: [ScalarValue]) -> RowTest {
        let column = p.column
        let optional = p.isOptional
        let marker = p.hasMarker
        let patterns: [[UInt8]?] = constants.map { if case let .bytes(b) = $0 { return b } else { return nil } }
        // Only LIKE reads the patterns as text (a UUID's bytes, say, are not UTF-8, and repairing them costs).
        let likePatterns = op == .like ? patterns.map { $0.map { Array(String(decoding: $0, as: UTF8.self).unicodeScalars) } ?? [] } : []
        let caseInsensitive = options.contains(.caseInsensitive)
        let diacriticInsensitive = options.contains(.diacriticInsensitive)
        // A long `IN` list: one hash lookup per row instead of a pass over the list.
        let patternSet = op == .in && patterns.count > 8 ? Set(patterns.compactMap { $0 }) : nil
        // A nil value: equal only to nil; every other operator is false (but `!= x` is true).
        let nilResult: Bool = {
            switch op {
            case .equal: return patterns[0] == nil
            case .notEqual: return patterns[0] != nil
            case .in: return patterns.contains { $0 == nil }
            default: return false
            }
        }()
        func match(_ s: UnsafeRawBufferPointer) -> Bool {
            func equal(_ c: [UInt8]?) -> Bool { c.map { s.count == $0.count && compareBytes(s, $0) == 0 } ?? false }
            switch op {
            case .equal: return equal(patterns[0])
            case .notEqual: return !equal(patterns[0])
            case .in: return patternSet.map { $0.contains(Array(s)) } ?? patterns.contains(where: equal)
            case .between:
                guard let low = patterns[0], let high = patterns[1] else { return false }
                return compareBytes(s, low) >= 0 && compareBytes(s, high) <= 0
            case .beginsWith: return ByteMatching.hasPrefix(s, patterns[0]!)
            case .endsWith: return ByteMatching.hasSuffix(s, patterns[0]!)
            case .contains: return ByteMatching.contains(s, patterns[0]!)
            case .like: return ByteMatching.like(Array(String(decoding: s, as: UTF8.self).unicodeScalars), likePatterns[0])
            default:
                guard let c = patterns[0] else { return false }
                return satisfies(op, compareBytes(s, c))
            }
        }
        let folding = caseInsensitive || diacriticInsensitive
        return { view, _ in
            let raw = view.payload(column) ?? UnsafeRawBufferPointer(start: nil, count: 0)
            if optional && raw.isEmpty { return nilResult }
            let s = marker ? UnsafeRawBufferPointer(rebasing: raw.dropFirst()) : raw
            if !folding { return match(s) }
            return CaseFolding.withFolded(s, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive, match)
        }
    }

    // MARK: Property against property

    /// `a op b` for two single values of each row: properties of the class, or reached through to-one
    /// links (a nil link on the way reads as nil).
    func bindPropertyPair(_ pa: ResolvedPath, _ op: QueryOperator, _ options: QueryStringOptions, _ pb: ResolvedPath,
                          _ position: Int) throws -> BoundNode {
        guard !pa.toMany, !pb.toMany, case let .scalar(a) = pa.end, case let .scalar(b) = pb.end else {
            throw fail("comparing two key paths ('\(pa.text)', '\(pb.text)') needs a single value on each side: properties, "
                + "possibly through to-one links", position)
        }
        guard op != .in, op != .between else {
            throw fail("\(op.rawValue) needs a list on its right side, not the key path '\(pb.text)'", position)
        }
        try QueryBinder(info: pa.endClass).checkOperator(a, op, options, position)
        try QueryBinder(info: pb.endClass).checkOperator(b, op, options, position)
        let compatible = a.kind == b.kind || (a.kind.isNumber && b.kind.isNumber) || Set([a.kind, b.kind]) == [.string, .data]
        guard compatible else {
            throw fail("type mismatch: '\(info.name).\(pa.text)' (\(a.property.property.type)) cannot be compared with "
                + "'\(info.name).\(pb.text)' (\(b.property.property.type))", position)
        }
        let readA = QueryBinder.reader(pa), readB = QueryBinder.reader(pb)
        let caseInsensitive = options.contains(.caseInsensitive), diacriticInsensitive = options.contains(.diacriticInsensitive)
        func folded(_ v: ScalarValue) -> ScalarValue {
            guard !options.isEmpty, case let .bytes(bytes) = v else { return v }
            return .bytes(bytes.withUnsafeBytes {
                CaseFolding.withFolded($0, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive) { Array($0) }
            })
        }
        let test: RowTest = { view, context in
            let x = folded(readA(view, context))
            let y = folded(readB(view, context))
            guard op.isStringOperator else { return QueryBinder.evaluate(op, x, [y], compare: ScalarValue.compare) }
            guard case let .bytes(s) = x, case let .bytes(p) = y else { return false }
            return s.withUnsafeBytes { s in
                switch op {
                case .beginsWith: return ByteMatching.hasPrefix(s, p)
                case .endsWith: return ByteMatching.hasSuffix(s, p)
                case .contains: return ByteMatching.contains(s, p)
                default:
                    return ByteMatching.like(Array(String(decoding: s, as: UTF8.self).unicodeScalars),
                                             Array(String(decoding: p, as: UTF8.self).unicodeScalars))
                }
            }
        }
        return .test({ "\(pa.text) \(op.rawValue)\(options.suffix) \(pb.text)" }, test)
    }

    /// Reads the single value of a to-one path from a row (a column of the row itself without any lookup).
    private static func reader(_ path: ResolvedPath) -> (RecordView, RowContext) -> ScalarValue {
        if let column = path.rootColumn {
            let index = column.column
            return { view, _ in ScalarValue.decode(view.payload(index), column) }
        }
        return { view, context in path.value(view, context) }
    }
}
