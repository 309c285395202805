import Foundation

/// Binding of comparisons whose key path goes through relationships (links, collections, backlinks),
/// collection operators, SUBQUERY and object comparisons. The comparison at the end of a path is
/// compiled by the same code as a plain property's (`makeTerm` on the end class), then applied to each
/// leaf the path reaches (see ``ResolvedPath``).
extension QueryBinder {
    /// Resolves the segments of `path` (before any collection operator) from the queried class, or from
    /// the SUBQUERY variable's class.
    func resolvePath(_ path: QueryKeyPath) throws -> ResolvedPath {
        if let v = path.variable, v != variable {
            guard let current = variable else { throw fail("'$\(v)' can only be used inside SUBQUERY over a to-many key path", path.position) }
            throw fail("'$\(v)' is not the variable of the innermost SUBQUERY ('$\(current)'); outer variables cannot be used", path.position)
        }
        if path.variable == nil, let variable {
            throw fail("inside SUBQUERY, key paths start with the variable ('$\(variable).\(path.segments.joined(separator: "."))', "
                + "not '\(path)')", path.position)
        }
        if path.segments.isEmpty && path.variable == nil { throw fail("empty key path", path.position) }
        var cls = info
        var hops: [ResolvedPath.Hop] = []
        var text: String { path.description }
        let segments = path.segments
        var i = 0
        while i < segments.count {
            let name = segments[i]
            // `map['key']` applies to this segment; `map.@allKeys` and `map.@allValues` read the next one.
            let key = path.mapKey?.after == i + 1 ? path.mapKey?.key : nil
            let next = i + 1 < segments.count ? segments[i + 1] : nil
            if name.hasPrefix("@") {
                throw fail("\(name) must follow a Map property, as in 'ratings.\(name)' (key path '\(text)')", path.position)
            }
            guard let property = cls.property(named: name) else {
                throw fail("'\(cls.name)' has no property '\(name)' in key path '\(text)'", path.position)
            }
            let isMap = property.property.collection == .map
            if key != nil && !isMap {
                throw fail("'\(cls.name).\(name)' is not a Map, so key path '\(text)' cannot take a key in '[ ]'", path.position)
            }
            if let next, next.hasPrefix("@"), !isMap || key != nil {
                throw fail("\(next) must follow a Map property, as in 'ratings.\(next)' ('\(cls.name).\(name)' in key path '\(text)' "
                    + "is \(isMap ? "one value of a Map" : "not a Map"))", path.position)
            }
            if next == QueryMapSegment.allKeys, isMap, key == nil {
                guard i + 2 == segments.count else {
                    throw fail("@allKeys ends a key path ('\(text)' continues after it)", path.position)
                }
                return ResolvedPath(hops: hops, end: .keys(ScalarColumn(keysOf: property)), endClass: cls, keyPath: path)
            }
            // `@allValues` is the Map itself (its values), as in Realm.
            let step = next == QueryMapSegment.allValues && isMap && key == nil ? 2 : 1
            let last = i + step == segments.count
            if let column = ScalarColumn(property) {
                guard last else {
                    throw fail("'\(cls.name).\(name)' is a \(property.property.type), not a link, so key path '\(text)' cannot continue",
                               path.position)
                }
                return ResolvedPath(hops: hops, end: .scalar(column), endClass: cls, keyPath: path)
            }
            let type = property.property.type
            if type == .object || type == .linkingObjects {
                guard let target = property.target else {
                    throw fail("'\(cls.name).\(name)' links to '\(property.property.objectClassName ?? "?")', which is not in this "
                        + "database's schema", path.position)
                }
                let kind: ResolvedPath.Hop.Kind
                if type == .linkingObjects {
                    guard let originName = property.property.originProperty, let origin = target.property(named: originName) else {
                        throw fail("'\(cls.name).\(name)' has no origin property in '\(target.name)'", path.position)
                    }
                    kind = .backlinks(origin: origin)
                } else {
                    switch property.property.collection {
                    case nil: kind = .link
                    case .list?: kind = .list
                    case .set?: kind = .set
                    case .map?: kind = .map
                    }
                }
                hops.append(ResolvedPath.Hop(property: property, from: cls, to: target, kind: kind, mapKey: key))
                cls = target
                if last { return ResolvedPath(hops: hops, end: .objects, endClass: cls, keyPath: path) }
                i += step
                continue
            }
            guard let column = ScalarColumn(elementsOf: property) else {
                throw fail("'\(cls.name).\(name)' cannot be used in a query", path.position)
            }
            guard last else {
                throw fail("'\(cls.name).\(name)' is a \(property.property.description) of values, so key path '\(text)' cannot continue",
                           path.position)
            }
            if let key { return ResolvedPath(hops: hops, end: .mapValue(column, key: key), endClass: cls, keyPath: path) }
            return ResolvedPath(hops: hops, end: .values(column), endClass: cls, keyPath: path)
        }
        return ResolvedPath(hops: hops, end: .objects, endClass: cls, keyPath: path)
    }

    /// A key path through to-one links only, ending on a single-value property (sort and distinct keys).
    func resolveToOne(_ path: QueryKeyPath) throws -> ResolvedPath {
        let resolved = try resolvePath(path)
        if path.collectionOperator != nil || resolved.toMany {
            throw fail("'\(path)' is a to-many key path; sorting and distinct need a property reached through to-one links only",
                       path.position)
        }
        switch resolved.end {
        case .scalar: break
        case .objects:
            throw fail("'\(path)' ends on a link; sorting and distinct need a property such as '\(path).name'", path.position)
        case .values, .mapValue, .keys:
            throw fail("'\(path)' reads a Map or collection, not a property; sorting and distinct need a property reached through "
                + "to-one links only", path.position)
        }
        return resolved
    }

    /// A comparison whose left side is a key path through relationships, a collection operator or a
    /// SUBQUERY variable (the rest of `bind` handles plain properties).
    func bindPath(_ path: QueryKeyPath, _ c: QueryComparison, op: QueryOperator, rhs: QueryExpression) throws -> BoundNode {
        let resolved = try resolvePath(path)
        if case let .keyPath(other) = rhs {
            guard path.collectionOperator == nil, other.collectionOperator == nil, c.quantifier == nil else {
                throw fail("comparing key path '\(path)' with key path '\(other)' needs a single value on each side (no quantifier "
                    + "or collection operator)", c.position)
            }
            return try bindPropertyPair(resolved, op, c.options, try resolvePath(other), c.position)
        }
        if let collectionOperator = path.collectionOperator {
            if let q = c.quantifier {
                throw fail("\(q.rawValue) cannot apply to '\(path)', which is one value per object", c.position)
            }
            return try bindCollectionOperator(collectionOperator, path, resolved, op: op, rhs: rhs, position: c.position)
        }
        if let q = c.quantifier, !resolved.toMany {
            throw fail("'\(info.name).\(path)' reaches one value per object (no List, MutableSet, Map or LinkingObjects in it); "
                + "\(q.rawValue) needs a to-many key path", c.position)
        }
        let quantifier = c.quantifier ?? .any
        let literals = try values(op, rhs, c.position)
        let leafTest: (ResolvedPath.Leaf, RowContext) -> Bool
        var endTerm: LinkedTerm.End?
        switch resolved.end {
        case .objects:
            leafTest = try objectTest(resolved, op: op, literals, c.options, c.position)
            // `owner == %@`, `%@ IN dogs`: the backlinks of those objects answer.
            let objects = literals.compactMap { if case let .object(ref) = $0 { return ref.object } else { return nil } }
            if (op == .equal || op == .in) && !objects.isEmpty && objects.count == literals.count { endTerm = .objects(objects) }
        case let .scalar(column):
            let term = try QueryBinder(info: resolved.endClass, variable: variable).makeTerm(column, op, c.options, literals, c.position)
            endTerm = .term(term)
            let test = term.test
            let brokenResult = QueryBinder.brokenMatches(resolved, op, literals)
            leafTest = { leaf, context in
                if case let .record(view, _) = leaf { return test(view, context) }
                return brokenResult
            }
        case let .values(column), let .keys(column):
            let test = try makeTerm(column, op, c.options, literals, c.position).test
            leafTest = { leaf, context in
                if case let .record(view, _) = leaf { return test(view, context) }
                return false
            }
        case let .mapValue(column, _):
            // A missing key reads as nil, as a nil link does.
            let test = try makeTerm(column, op, c.options, literals, c.position).test
            let brokenResult = QueryBinder.brokenMatches(resolved, op, literals)
            leafTest = { leaf, context in
                if case let .record(view, _) = leaf { return test(view, context) }
                return brokenResult
            }
        }
        let prefix = c.quantifier.map { $0.rawValue + " " } ?? (resolved.toMany ? "ANY " : "")
        let options = c.options
        let text = { "\(prefix)\(path) \(op.rawValue)\(options.suffix) \(QueryBinder.describe(op, literals))" }
        let test = QueryBinder.quantified(resolved, resolved.toMany ? quantifier : nil, leafTest)
        // The backlink table knows no Map keys: a path through `map['key']` is tested per candidate.
        let backlinked = resolved.hops.allSatisfy { $0.mapKey == nil }
        if let endTerm, quantifier == .any, backlinked, !resolved.hops.isEmpty, !QueryBinder.brokenMatches(resolved, op, literals) {
            return .linked(LinkedTerm(hops: resolved.hops, end: endTerm, describe: text, test: test))
        }
        return .test(text, test)
    }

    /// Whether a row whose path is cut by a nil link matches `op literals`. Through to-one links only,
    /// the value reads as nil, as in Realm: `owner.name != 'Ann'` holds for a dog without owner, as does
    /// `owner.name == nil`; orderings and string operators do not. Through a to-many path a cut leaf
    /// matches only `== nil` (and `IN` a list holding nil).
    static func brokenMatches(_ path: ResolvedPath, _ op: QueryOperator, _ literals: [QueryValue]) -> Bool {
        switch op {
        case .equal: return literals.first == .null
        case .notEqual: return !path.toMany && literals.first != .null
        case .in: return literals.contains(.null)
        default: return false
        }
    }

    /// Applies `leafTest` to the leaves of each row: one leaf for a to-one path (quantifier nil), else
    /// ANY / ALL / NONE of them (ALL of no leaves is true, ANY false, NONE true).
    static func quantified(_ path: ResolvedPath, _ quantifier: QueryQuantifier?,
                           _ leafTest: @escaping (ResolvedPath.Leaf, RowContext) -> Bool) -> RowTest {
        { view, context in
            var found = false
            switch quantifier {
            case .all?:
                var all = true
                path.forEachLeaf(view, context) { leaf, ctx in all = leafTest(leaf, ctx); return all }
                return all
            case .noneMatch?:
                path.forEachLeaf(view, context) { leaf, ctx in found = leafTest(leaf, ctx); return !found }
                return !found
            default:
                path.forEachLeaf(view, context) { leaf, ctx in found = leafTest(leaf, ctx); return !found }
                return found
            }
        }
    }

    /// The right side's values (one, or the list of `IN` and `BETWEEN`).
    func values(_ op: QueryOperator, _ rhs: QueryExpression, _ position: Int) throws -> [QueryValue] {
        switch (op, rhs) {
        case let (.in, .list(items)), let (.between, .list(items)):
            let literals = try items.map { item in
                guard case let .value(v) = item else { throw fail("\(op.rawValue) expects a list of values, found \(item)", position) }
                return v
            }
            if op == .between && literals.count != 2 { throw fail("BETWEEN expects two values, found \(literals.count)", position) }
            return literals
        case (.in, _), (.between, _):
            throw fail("\(op.rawValue) expects a list such as {1, 2} or an array argument, found \(rhs)", position)
        case let (_, .value(v)):
            return [v]
        default:
            throw fail("\(op.rawValue) expects a single value, found \(rhs)", position)
        }
    }

    static func describe(_ op: QueryOperator, _ literals: [QueryValue]) -> String {
        op == .in || op == .between ? describeList(literals) : literals.first?.description ?? "nil"
    }

    // MARK: Objects

    /// `owner == %@`, `owner != nil`, `%@ IN dogs`: identity, the same stored object (same file, class and
    /// key). An unmanaged object, or one of another file, never matches.
    private func objectTest(_ path: ResolvedPath, op: QueryOperator, _ literals: [QueryValue], _ options: QueryStringOptions,
                            _ position: Int) throws -> (ResolvedPath.Leaf, RowContext) -> Bool {
        let name = "'\(path.text)' (\(path.endClass.name) objects)"
        guard op == .equal || op == .notEqual || op == .in else {
            throw fail("\(op.rawValue) cannot compare the objects of \(name); use ==, != or IN with objects or nil", position)
        }
        if !options.isEmpty { throw fail("the options \(options.suffix) apply only to String properties; \(name) is not one", position) }
        let wanted: [Object?] = try literals.map { literal in
            switch literal {
            case .null: return nil
            case let .object(ref):
                guard ObjectIdentifier(type(of: ref.object)) == ObjectIdentifier(path.endClass.type) else {
                    throw fail("type mismatch: \(name) cannot be compared with a \(type(of: ref.object)) object", position)
                }
                return ref.object
            default:
                throw fail("type mismatch: \(name) can only be compared with \(path.endClass.name) objects or nil, not "
                    + "\(literal) (\(literal.typeName))", position)
            }
        }
        let brokenResult = QueryBinder.brokenMatches(path, op, literals)
        return { leaf, context in
            let key: Int64?
            switch leaf {
            case .broken: return brokenResult
            case .null: key = nil
            case let .object(k): key = k
            case let .record(_, k): key = k
            }
            let equal: (Object?) -> Bool = { object in
                guard let object else { return key == nil }
                guard let key, let lattice = object._lattice else { return false }
                return lattice.env === context.lattice.env && object._key == key
            }
            switch op {
            case .equal: return equal(wanted[0])
            case .notEqual: return !equal(wanted[0])
            default: return wanted.contains(where: equal)
            }
        }
    }

    // MARK: Collection operators and SUBQUERY

    private func bindCollectionOperator(_ op: QueryCollectionOperator, _ path: QueryKeyPath, _ resolved: ResolvedPath,
                                        op comparison: QueryOperator, rhs: QueryExpression, position: Int) throws -> BoundNode {
        let owner = "'\(info.name).\(path.segments.joined(separator: "."))'"
        guard resolved.toMany else {
            let what: String
            if let column = resolved.rootColumn { what = "'\(info.name).\(column.name)' is a \(column.property.property.type), not a collection" }
            else { what = "'\(path.segments.joined(separator: "."))' is one value per object" }
            throw fail("\(what); \(op.rawValue) needs a List, MutableSet, Map or LinkingObjects key path", path.position)
        }
        if case .scalar = resolved.end {
            throw fail("\(op.rawValue) applies to a collection; '\(path.segments.joined(separator: "."))' ends on a property of its "
                + "elements (write '\(path.segments.dropLast().joined(separator: ".")).\(op.rawValue).\(path.segments.last ?? "")')",
                path.position)
        }
        if case .keys = resolved.end, op != .count {
            throw fail("\(op.rawValue) needs numbers; the keys of \(owner) are Strings", path.position)
        }
        if op == .count {
            guard path.trailing.isEmpty else { throw fail("@count takes no property ('\(path)')", path.position) }
            let literals = try values(comparison, rhs, position)
            let constants = try literals.map { try convert($0, type: .int, optional: false, name: "\(path)", [], position) }
            try checkComparison(comparison, name: "\(path)", position)
            let test: RowTest = { view, context in
                var n: Int64 = 0
                resolved.forEachLeaf(view, context) { leaf, _ in
                    if case .broken = leaf { return true }
                    n += 1
                    return true
                }
                return QueryBinder.evaluate(comparison, .int(n), constants, compare: ScalarValue.compare)
            }
            return .test({ "\(path) \(comparison.rawValue) \(QueryBinder.describe(comparison, literals))" }, test)
        }
        // @min, @max, @sum, @avg of a property of the objects, or of the values themselves.
        let column: ScalarColumn
        let valuePath: ResolvedPath?
        switch resolved.end {
        case let .values(c):
            guard path.trailing.isEmpty else {
                throw fail("\(owner) holds values; \(op.rawValue) takes no property after it ('\(path)')", path.position)
            }
            column = c
            valuePath = nil
        default:
            guard !path.trailing.isEmpty else {
                throw fail("\(op.rawValue) over the objects of \(owner) needs a property, as in '\(path).age'", path.position)
            }
            let inner = try QueryBinder(info: resolved.endClass).resolveToOne(
                QueryKeyPath(variable: nil, segments: path.trailing, position: path.position))
            guard case let .scalar(c) = inner.end else { throw fail("'\(path)' needs a property", path.position) }
            column = c
            valuePath = inner
        }
        let label = "'\(path)'"
        let allowDates = op == .min || op == .max
        guard column.kind.isNumber || (allowDates && column.kind == .date) else {
            throw fail("\(op.rawValue) needs \(allowDates ? "numbers or dates" : "numbers"); \(label) is \(column.property.property.type)",
                       path.position)
        }
        let resultType: PropertyType = op == .avg && column.kind == .integer ? .double : column.property.property.type
        let literals = try values(comparison, rhs, position)
        let constants = try literals.map { try convert($0, type: resultType, optional: true, name: "\(path)", [], position) }
        try checkComparison(comparison, name: "\(path)", position)
        let target = Aggregation.Target(className: resolved.endClass.name, property: column.name, kind: column.kind,
                                        type: column.property.property.type)
        // The value of an end object, from its record. A closure: the per-row closures below capture it by
        // reference, where capturing the path would copy it (and retain everything it holds) for every object.
        let endValue: (RecordView, RowContext) -> ScalarValue
        if let valuePath, !valuePath.hops.isEmpty {
            endValue = { record, context in valuePath.value(record, context) }
        } else {
            // A property of the end objects themselves (`dogs.@avg.age`): no path to follow.
            endValue = { record, _ in ScalarValue.decode(record.payload(column.column), column) }
        }
        let endClass = resolved.endClass
        let test: RowTest = { view, context in
            var values: [ScalarValue] = []
            resolved.forEachLeaf(view, context) { leaf, ctx in
                switch leaf {
                case let .object(key):
                    let v = ctx.record(endClass, key) { endValue($0, ctx.with(key: key)) } ?? .null
                    if v != .null { values.append(v) }
                case let .record(r, _):
                    let v = ScalarValue.decode(r.payload(column.column), column)
                    if v != .null { values.append(v) }
                default: break
                }
                return true
            }
            return QueryBinder.evaluate(comparison, QueryBinder.aggregate(op, values, target), constants, compare: ScalarValue.compare)
        }
        return .test({ "\(path) \(comparison.rawValue) \(QueryBinder.describe(comparison, literals))" }, test)
    }

    /// The aggregate of non-nil values: nil for @min/@max/@avg of nothing, 0 for @sum of nothing. An
    /// integer sum that overflows Int64 is taken as a Double (a query has no way to fail per row).
    static func aggregate(_ op: QueryCollectionOperator, _ values: [ScalarValue], _ target: Aggregation.Target) -> ScalarValue {
        func total() -> ScalarValue {
            if let exact = try? Aggregation.total(values, target) { return exact }
            return .double(values.reduce(0.0) { if case let .int(i) = $1 { return $0 + Double(i) } else { return $0 } })
        }
        switch op {
        case .min, .max:
            guard var best = values.first else { return .null }
            for v in values.dropFirst() where ScalarValue.compare(v, best) * (op == .min ? -1 : 1) > 0 { best = v }
            return best
        case .sum:
            return total()
        case .avg:
            if values.isEmpty { return .null }
            switch total() {
            case let .int(i): return .double(Double(i) / Double(values.count))
            case let .double(d): return .double(d / Double(values.count))
            case let .decimal(d): return .decimal(d / Decimal(values.count))
            default: return .null
            }
        case .count:
            return .int(Int64(values.count))
        }
    }

    /// Comparison operators allowed on a number: no string operators.
    private func checkComparison(_ op: QueryOperator, name: String, _ position: Int) throws {
        if op.isStringOperator { throw fail("\(op.rawValue) needs a String; '\(name)' is a number", position) }
    }

    /// `SUBQUERY(collection, $v, predicate).@count op value`.
    func bindSubquery(collection: QueryKeyPath, variable name: String, predicate: QueryNode, op: QueryOperator,
                      rhs: QueryExpression, position: Int) throws -> BoundNode {
        let resolved = try resolvePath(collection)
        guard resolved.toMany, collection.collectionOperator == nil, case .objects = resolved.end else {
            let what: String
            if let column = resolved.rootColumn { what = "'\(info.name).\(column.name)' is a \(column.property.property.type)" }
            else { what = "'\(collection)' is not a collection of objects" }
            throw fail("\(what), not a to-many property; SUBQUERY needs a List, MutableSet or LinkingObjects key path", position)
        }
        let inner = try QueryBinder(info: resolved.endClass, variable: name).bind(predicate)
        let innerTest = inner.compile()
        let endClass = resolved.endClass
        let literals = try values(op, rhs, position)
        let constants = try literals.map { try convert($0, type: .int, optional: false, name: "SUBQUERY(\(collection)).@count", [], position) }
        try checkComparison(op, name: "SUBQUERY(...).@count", position)
        let test: RowTest = { view, context in
            var n: Int64 = 0
            resolved.forEachLeaf(view, context) { leaf, ctx in
                if case let .object(key) = leaf, ctx.record(endClass, key, { innerTest($0, ctx.with(key: key)) }) == true { n += 1 }
                return true
            }
            return QueryBinder.evaluate(op, .int(n), constants, compare: ScalarValue.compare)
        }
        return .test({ "SUBQUERY(\(collection), $\(name), \(inner.description)).@count \(op.rawValue) \(QueryBinder.describe(op, literals))" },
                     test)
    }
}
