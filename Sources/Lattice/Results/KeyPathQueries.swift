/// The key-path forms of sorting, `distinct` and the aggregates: the same operations as the string
/// forms, with the property named by a Swift key path (`\.age`) that the compiler checks.
///
/// ```swift
/// let byAge = try dogs.sorted(by: \.age, ascending: false)
/// let oldest = try dogs.max(of: \.age)
/// ```
/// A key path names one `@Persisted` property of the element class, or, through up to three to-one
/// links, of an object they reach (`\.owner?.name` names `"owner.name"`, for sorting and `distinct`);
/// one that reads none (a computed property, or a path through a collection) throws
/// ``LatticeError/invalidQuery(message:)``.
extension Results {
    /// The name of the property `keyPath` reads.
    private func name(_ keyPath: PartialKeyPath<Element>) throws -> String {
        guard let info else { throw LatticeError.classNotInSchema(className: "\(Element.self)") }
        return try KeyPathResolver(lattice: lattice, info: info).name(ofAny: keyPath)
    }

    /// These results sorted by one property (see ``sorted(byKeyPath:ascending:)``).
    public func sorted<V: _Persistable>(by keyPath: KeyPath<Element, V>, ascending: Bool = true) throws -> Results<Element> {
        guard info != nil else { return self }
        return try sorted(byKeyPath: name(keyPath), ascending: ascending)
    }

    /// The first object of each distinct combination of values of the properties `keyPaths` read.
    public func distinct<S: Sequence>(by keyPaths: S) throws -> Results<Element> where S.Element == PartialKeyPath<Element> {
        guard info != nil else { return self }
        return try distinct(by: keyPaths.map { try name($0) })
    }

    /// The smallest non-nil value of a number or Date property (see ``min(ofProperty:)``).
    public func min<V: _Persistable>(of keyPath: KeyPath<Element, V>) throws -> V? { try min(ofProperty: name(keyPath)) }

    /// The largest non-nil value of a number or Date property (see ``max(ofProperty:)``).
    public func max<V: _Persistable>(of keyPath: KeyPath<Element, V>) throws -> V? { try max(ofProperty: name(keyPath)) }

    /// The sum of the non-nil values of a number property (see ``sum(ofProperty:)``).
    public func sum<V: _Persistable>(of keyPath: KeyPath<Element, V>) throws -> V { try sum(ofProperty: name(keyPath)) }

    /// The mean of the non-nil values of a number property, as the property's type: an integer
    /// property's mean rounded toward zero, as Realm's key-path form does (`average(ofProperty:)` as
    /// `Double?` gives it exactly).
    public func average<V: _Persistable>(of keyPath: KeyPath<Element, V>) throws -> V? {
        try average(ofProperty: name(keyPath))
    }
}

/// The key-path forms for a List, MutableSet or LinkingObjects of objects (see the ones of ``Results``).
/// Sorting and `distinct` of an unmanaged collection throw
/// ``LatticeError/objectNotManaged(className:operation:)``; the aggregates read its objects, as Realm's do.
extension _ObjectCollection {
    /// The objects of the collection sorted by one property.
    public func sorted<V: _Persistable>(by keyPath: KeyPath<Element, V>, ascending: Bool = true) throws -> Results<Element> {
        try results("sorted(by:ascending:)").sorted(by: keyPath, ascending: ascending)
    }

    /// The first object of each distinct combination of values of the properties `keyPaths` read, in
    /// collection order.
    public func distinct<S: Sequence>(by keyPaths: S) throws -> Results<Element> where S.Element == PartialKeyPath<Element> {
        try results("distinct(by:)").distinct(by: keyPaths)
    }

    /// The smallest non-nil value of a number or Date property.
    public func min<V: _Persistable>(of keyPath: KeyPath<Element, V>) throws -> V? {
        if let results = _objectResults { return try results.min(of: keyPath) }
        return try ObjectAggregates.min(self, keyPath)
    }

    /// The largest non-nil value of a number or Date property.
    public func max<V: _Persistable>(of keyPath: KeyPath<Element, V>) throws -> V? {
        if let results = _objectResults { return try results.max(of: keyPath) }
        return try ObjectAggregates.max(self, keyPath)
    }

    /// The sum of the non-nil values of a number property.
    public func sum<V: _Persistable>(of keyPath: KeyPath<Element, V>) throws -> V {
        if let results = _objectResults { return try results.sum(of: keyPath) }
        return try ObjectAggregates.sum(self, keyPath)
    }

    /// The mean of the non-nil values of a number property, as the property's type (integers rounded
    /// toward zero).
    public func average<V: _Persistable>(of keyPath: KeyPath<Element, V>) throws -> V? {
        if let results = _objectResults { return try results.average(of: keyPath) }
        return try ObjectAggregates.average(self, keyPath)
    }
}
