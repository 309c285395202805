/// Queries over the objects of a managed `Map<String, T?>`, as Realm's map has them: `filter`, `where`,
/// `sorted` and the aggregates read the map's objects (its non-nil values, in key order) as live
/// ``Results`` of `T`. Realm returns `Results<T?>`; Lattice's results hold objects, so the element
/// type is `T` and nil values are left out (they match no predicate either way).
///
/// ```swift
/// let heavy = try person.dogsByName.filter("weight > 20")
/// let oldest: Int? = try person.dogsByName.max(ofProperty: "age")
/// ```
extension Map {
    /// The map's objects as ``Results``; throws for an unmanaged map.
    private func objectResults<T: Object>(_ operation: String) throws -> Results<T> where Value == T? {
        guard let results: Results<T> = Results.collection(managed) else {
            throw LatticeError.objectNotManaged(className: "\(T.self)", operation: "\(operation) on an unmanaged \(typeName)")
        }
        return results
    }

    /// The map's objects matching `predicate` (see ``Results/filter(_:_:)``).
    public func filter<T: Object>(_ predicate: String, _ arguments: Any...) throws -> Results<T> where Value == T? {
        try objectResults("filter").filter(predicate, argumentArray: arguments)
    }

    /// ``filter(_:_:)`` with the arguments in an array.
    public func filter<T: Object>(_ predicate: String, argumentArray arguments: [Any]) throws -> Results<T> where Value == T? {
        try objectResults("filter").filter(predicate, argumentArray: arguments)
    }

    /// The map's objects matching a type-safe predicate (see ``Results/where(_:)``).
    public func `where`<T: Object>(_ predicate: (QueryObject<T>) -> QueryPredicate) -> Results<T> where Value == T? {
        guard let results: Results<T> = Results.collection(managed) else {
            preconditionFailure("where { } needs a managed \(typeName): add its owner to a Lattice first.")
        }
        return results.where(predicate)
    }

    /// The map's objects sorted by a key path (through to-one links too).
    public func sorted<T: Object>(byKeyPath keyPath: String, ascending: Bool = true) throws -> Results<T> where Value == T? {
        try objectResults("sorted").sorted(byKeyPath: keyPath, ascending: ascending)
    }

    /// The map's objects sorted by several key paths (later ones break ties).
    public func sorted<T: Object, S: Sequence>(by descriptors: S) throws -> Results<T>
    where Value == T?, S.Element == SortDescriptor {
        try objectResults("sorted").sorted(by: descriptors)
    }

    /// The smallest non-nil value of a number or Date property of the map's objects, or nil when there is
    /// none (see ``Results/min(ofProperty:)``). Unmanaged maps too.
    public func min<T: Object, V: _Persistable>(ofProperty property: String) throws -> V? where Value == T? {
        try ObjectAggregates.min(values.compactMap { $0 }, T.self, property)
    }

    /// The largest non-nil value of a number or Date property of the map's objects, or nil when there is none.
    public func max<T: Object, V: _Persistable>(ofProperty property: String) throws -> V? where Value == T? {
        try ObjectAggregates.max(values.compactMap { $0 }, T.self, property)
    }

    /// The sum of the non-nil values of a number property of the map's objects (0 when there are none).
    public func sum<T: Object, V: _Persistable>(ofProperty property: String) throws -> V where Value == T? {
        try ObjectAggregates.sum(values.compactMap { $0 }, T.self, property)
    }

    /// The mean of the non-nil values of a number property of the map's objects, or nil when there are none.
    public func average<T: Object, V: _Persistable>(ofProperty property: String) throws -> V? where Value == T? {
        try ObjectAggregates.average(values.compactMap { $0 }, T.self, property)
    }

    /// The map's objects sorted by the property a key path reads (see ``Results/sorted(by:ascending:)``).
    public func sorted<T: Object, V: _Persistable>(by keyPath: KeyPath<T, V>, ascending: Bool = true) throws -> Results<T>
    where Value == T? {
        try objectResults("sorted").sorted(by: keyPath, ascending: ascending)
    }

    /// The smallest non-nil value of the number or Date property a key path reads (unmanaged maps too).
    public func min<T: Object, V: _Persistable>(of keyPath: KeyPath<T, V>) throws -> V? where Value == T? {
        try ObjectAggregates.min(values.compactMap { $0 }, keyPath)
    }

    /// The largest non-nil value of the number or Date property a key path reads (unmanaged maps too).
    public func max<T: Object, V: _Persistable>(of keyPath: KeyPath<T, V>) throws -> V? where Value == T? {
        try ObjectAggregates.max(values.compactMap { $0 }, keyPath)
    }

    /// The sum of the non-nil values of the number property a key path reads (unmanaged maps too).
    public func sum<T: Object, V: _Persistable>(of keyPath: KeyPath<T, V>) throws -> V where Value == T? {
        try ObjectAggregates.sum(values.compactMap { $0 }, keyPath)
    }

    /// The mean of the non-nil values of the number property a key path reads, as its type (integers
    /// rounded toward zero); unmanaged maps too.
    public func average<T: Object, V: _Persistable>(of keyPath: KeyPath<T, V>) throws -> V? where Value == T? {
        try ObjectAggregates.average(values.compactMap { $0 }, keyPath)
    }
}

extension Map where Value: Comparable {
    /// The values in ascending or descending order, as an array (Realm's `sorted(ascending:)` of a map
    /// of values).
    public func sorted(ascending: Bool = true) -> [Value] { ascending ? values.sorted() : values.sorted(by: >) }
}
