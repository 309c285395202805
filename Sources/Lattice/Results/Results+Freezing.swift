// Frozen results and results rebound to another handle (see `ThreadConfined`).

extension Results: ThreadConfined {
    /// Whether the results belong to a frozen handle.
    public var isFrozen: Bool { lattice.isFrozen }

    /// The handle the results read from.
    public var _latticeHandle: Lattice? { lattice }

    /// The results as a frozen snapshot at the handle's current version: their objects are frozen, and
    /// they never change. Filtering or sorting them gives frozen results of the same version.
    public func freeze() -> Results<Element> {
        frozenByRebinding { Results(lattice: $0, info: nil) }
    }

    /// The same query in a new live handle at the latest commit (itself when not frozen).
    public func thaw() -> Results<Element>? { thawedByRebinding() }

    /// The same query read through `lattice`; nil for a collection whose owner does not exist there.
    public func _latticeRebound(in target: Lattice) -> Results<Element>? {
        guard target.env === lattice.env else { return nil }
        guard let info else { return Results(lattice: target, info: nil) }
        // Dynamic results read the target's dynamic class (a handle with model classes has both).
        let targetInfo = target.classInfo(named: info.name, dynamic: info.type == DynamicObject.self)
        let rebound: ResultsSource
        switch source {
        case .all:
            rebound = .all
        case let .collection(owner, path):
            guard let owner = owner._latticeRebound(in: target) else { return nil }
            if targetInfo === info {
                rebound = .collection(owner: owner, path: path)
            } else {
                guard let ownerInfo = owner._info,
                      let path = try? QueryBinder(info: ownerInfo).resolvePath(QueryParser.keyPath(from: path.text)) else { return nil }
                rebound = .collection(owner: owner, path: path)
            }
        }
        // A handle sharing these classes reads the same bound query.
        if targetInfo === info {
            return Results(lattice: target, info: info, query: query, source: rebound)
        }
        guard let targetInfo else { return nil }
        // Another handle has classes of its own: bind the query again, from its text.
        var results = Results(lattice: target, info: targetInfo, source: rebound)
        do {
            if let node = query.node { results = try results.filtered(node) }
            for step in query.ops {
                switch step {
                case let .sort(keys):
                    results = try results.sorted(by: keys.map { SortDescriptor(keyPath: $0.path.text, ascending: $0.ascending) })
                case let .distinct(paths):
                    results = try results.distinct(by: paths.map(\.text))
                }
            }
        } catch {
            return nil
        }
        return results
    }
}
