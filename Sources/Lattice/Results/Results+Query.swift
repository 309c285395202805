extension Results {
    /// The objects of these results that also match `predicate`.
    ///
    /// ```swift
    /// let puppies = try lattice.objects(Dog.self).filter("age < %d AND name BEGINSWITH[c] %@", 2, "r")
    /// ```
    /// Chained filters combine into one predicate and one plan. A malformed predicate, an unknown
    /// property or a type mismatch throws ``LatticeError/invalidQuery(message:)`` naming the column,
    /// class and property. See the *Query Language* article for the grammar.
    public func filter(_ predicate: String, _ arguments: Any...) throws -> Results<Element> {
        try filter(predicate, argumentArray: arguments)
    }

    /// ``filter(_:_:)`` with the arguments in an array (for predicates built at run time).
    public func filter(_ predicate: String, argumentArray arguments: [Any]) throws -> Results<Element> {
        try filtered(QueryParser.parse(predicate, arguments))
    }

    /// The objects that also match a type-safe predicate; it means exactly what the
    /// equivalent string predicate means.
    ///
    /// ```swift
    /// let puppies = lattice.objects(Dog.self).where { $0.age < 2 && $0.name.starts(with: "R") }
    /// ```
    /// A key path that is not a `@Persisted` property, or `!`, `&&` and `||` nested more than 200 levels
    /// deep, is a programming error and stops with a message.
    public func `where`(_ predicate: (QueryObject<Element>) -> QueryPredicate) -> Results<Element> {
        guard let info else { return self }
        let node = predicate(QueryObject(resolver: KeyPathResolver(lattice: lattice, info: info))).node
        // Binding and evaluating recurse over the tree: keep it as shallow as a parsed predicate.
        precondition(node.depth <= QueryParser.maxDepth,
                     "where { } built a predicate for '\(info.name)' nested \(node.depth) levels deep (at most \(QueryParser.maxDepth)).")
        do {
            return try filtered(node)
        } catch {
            preconditionFailure("where { } built an invalid query for '\(info.name)': \(error)")
        }
    }

    func filtered(_ node: QueryNode) throws -> Results<Element> {
        guard let info else { return self }
        // `TRUEPREDICATE` keeps every object: the results stay what they were (a whole class keeps its O(1) count).
        if case .constant(true) = node { return self }
        var q = query
        let combined = q.node.map { $0.and(node) } ?? node
        q.bound = try QueryBinder(info: info).bind(combined)
        q.node = combined
        return Results(lattice: lattice, info: info, query: q, source: source)
    }

    /// These results sorted by one property. Throws for an unknown property.
    public func sorted(byKeyPath keyPath: String, ascending: Bool = true) throws -> Results<Element> {
        try sorted(by: [SortDescriptor(keyPath: keyPath, ascending: ascending)])
    }

    /// These results sorted by several properties: later descriptors break ties of earlier ones, and a
    /// later `sorted` call takes precedence over an earlier one (which then breaks its ties). Stable.
    public func sorted<S: Sequence>(by descriptors: S) throws -> Results<Element> where S.Element == SortDescriptor {
        guard let info else { return self }
        let binder = QueryBinder(info: info)
        let keys = try descriptors.map { (path: try binder.resolveToOne(QueryParser.keyPath(from: $0.keyPath)), ascending: $0.ascending) }
        if keys.isEmpty { return self }
        var q = query
        q.ops.append(.sort(keys))
        return Results(lattice: lattice, info: info, query: q, source: source)
    }

    /// The first object of each distinct combination of values of `keyPaths`, in result order. An object
    /// with a nil link on the way to one of them (`"owner.name"` of a dog without owner) is left out,
    /// as Realm leaves it out.
    public func distinct<S: Sequence>(by keyPaths: S) throws -> Results<Element> where S.Element == String {
        guard let info else { return self }
        let binder = QueryBinder(info: info)
        let properties = try keyPaths.map { try binder.resolveToOne(QueryParser.keyPath(from: $0)) }
        if properties.isEmpty { return self }
        var q = query
        q.ops.append(.distinct(properties))
        return Results(lattice: lattice, info: info, query: q, source: source)
    }

    /// The plan the query runs with now, for example
    /// `Dog: index range Dog.age [20, 30) (~1000 rows) -> filter name BEGINSWITH[c] 'r'`.
    /// Estimates for the chosen index are counted from the index itself.
    public func explain() -> String {
        guard let info else { return "\(Element.self): not in this database's schema (always empty)" }
        return lattice.reading("the plan of a query on '\(info.name)'") { txn in
            var text = "\(info.name): "
            if case let .collection(_, path) = source {
                text += "\(path.hops.first?.from.name ?? "?").\(path.text) of one object (~\(try source.keys(lattice, txn)?.count ?? 0) rows)"
                if let bound = query.bound { text += " -> filter \(bound.description)" }
            } else if query.bound == nil, query.ops.count == 1, case let .sort(keys) = query.ops[0], keys.count == 1,
               let column = keys[0].path.rootColumn,
               info.keyedByPrimaryKey && column.property === info.primaryKey || (column.property.indexTable != nil && !txn.isEncrypted) {
                let kind = column.property === info.primaryKey && info.keyedByPrimaryKey ? "primary key" : "index"
                return text + "walk \(kind) \(info.name).\(column.name) \(keys[0].ascending ? "ascending" : "descending") "
                    + "(~\(try txn.count(info.objectsTable)) rows)"
            } else {
                let planner = QueryPlanner(info: info, txn: txn, lattice: lattice, countAlways: true)
                text += try planner.plan(query.bound).description
                let fallbacks = planner.hashedIndexFallbacks(query.bound)
                if !fallbacks.isEmpty { text += QueryPlanner.hashedIndexNote(fallbacks) }
            }
            for step in query.ops {
                switch step {
                case let .sort(keys):
                    text += " -> sort " + keys.map { "\($0.path.text) \($0.ascending ? "ASC" : "DESC")" }.joined(separator: ", ")
                    let hashed = keys.compactMap { key -> String? in
                        guard txn.isEncrypted, let column = key.path.rootColumn, column.property.indexTable != nil,
                              !(info.keyedByPrimaryKey && column.property === info.primaryKey) else { return nil }
                        return "\(info.name).\(column.name)"
                    }
                    if !hashed.isEmpty { text += QueryPlanner.hashedIndexNote(hashed) }
                case let .distinct(paths): text += " -> distinct " + paths.map(\.text).joined(separator: ", ")
                }
            }
            return text
        }
    }

    /// The position of the first object matching `predicate`, or nil.
    ///
    /// On results in object-key order (a class, filtered or not, unsorted) a predicate an index answers
    /// by its keys (`==` or `IN` on an indexed property or the primary key) finds its matches there and
    /// looks them up among the results: no record is read. Otherwise the objects are tested in order
    /// until one matches.
    public func index(matching predicate: String, _ arguments: Any...) throws -> Int? {
        guard let info else { return nil }
        let bound = try QueryBinder(info: info).bind(QueryParser.parse(predicate, arguments))
        let keys = keys()
        let txn = try lattice.readTransaction()
        let executor = QueryExecutor(info: info, txn: txn, lattice: lattice)
        if case .all = source, query.ops.isEmpty {
            let plan = try QueryPlanner(info: info, txn: txn, lattice: lattice).plan(bound)
            if case .none = plan.access { return nil }
            if plan.isExactIndexScan, case let .index(scan) = plan.access, case .keys = scan.shape {
                // The matches come in key order, as the results do: the first one among them is first.
                for key in try executor.keys(plan) {
                    if let position = keys.position(ofAscending: key) { return position }
                }
                return nil
            }
        }
        let test = bound.compile()
        for (i, key) in keys.enumerated() where try executor.matches(key, test) { return i }
        return nil
    }

    /// Sets `key` to `value` on every object of the results, inside a write transaction.
    /// Indexes stay in step. Throws for an unknown property, the primary key, or a wrong type.
    public func setValue(_ value: Any?, forKey key: String) throws {
        _ = try lattice.requireWrite("setValue(_:forKey:)")
        guard let info else { return }
        guard let p = info.property(named: key) else { throw LatticeError.unknownProperty(className: info.name, property: key) }
        if p.property.isPrimaryKey { throw LatticeError.primaryKeyChanged(className: info.name, property: key) }
        let value: Any = value ?? Optional<Int>.none as Any
        if isNilValue(value) && !p.property.isOptional { throw LatticeError.missingValue(className: info.name, property: key) }
        var payload: [UInt8] = []
        guard p.valueType.encodeAny(value, into: &payload) else {
            throw LatticeError.wrongType(className: info.name, property: key,
                                         expected: "\(p.property.type)\(p.property.isOptional ? "?" : "")", found: "\(type(of: unwrapAny(value)))")
        }
        for objectKey in keys() {
            let object = lattice.materialize(Element.self, info, key: objectKey, record: nil)
            lattice.setProperty(of: object, property: p, payload: payload)
            if let error = lattice.writer?.pendingError { throw error }
        }
    }
}
