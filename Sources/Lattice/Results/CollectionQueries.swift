/// A managed ``List``, ``MutableSet`` or ``LinkingObjects`` of objects, queried like ``Results``
/// : `filter`, `where`, `sorted` and
/// `distinct` return live ``Results`` over the collection's objects. Unsorted results keep the
/// collection's order (List order, duplicates included).
///
/// ```swift
/// let puppies = try person.dogs.filter("age < 2")
/// let walkersByName = try dog.walkers.sorted(byKeyPath: "name")
/// ```
public protocol _ObjectCollection: LatticeCollection where Element: Object {
    /// The collection's objects as ``Results`` (nil while the collection is unmanaged).
    var _objectResults: Results<Element>? { get }
}

extension _ObjectCollection {
    /// The collection's objects as ``Results``; throws for an unmanaged collection.
    func results(_ operation: String) throws -> Results<Element> {
        guard let results = _objectResults else {
            throw LatticeError.objectNotManaged(className: "\(Element.self)", operation: "\(operation) on an unmanaged \(typeName)")
        }
        return results
    }

    /// The objects of the collection matching `predicate` (see ``Results/filter(_:_:)``).
    public func filter(_ predicate: String, _ arguments: Any...) throws -> Results<Element> {
        try results("filter").filter(predicate, argumentArray: arguments)
    }

    /// ``filter(_:_:)`` with the arguments in an array.
    public func filter(_ predicate: String, argumentArray arguments: [Any]) throws -> Results<Element> {
        try results("filter").filter(predicate, argumentArray: arguments)
    }

    /// The objects of the collection matching a type-safe predicate (see ``Results/where(_:)``); the
    /// collection must be managed (a programming error otherwise).
    public func `where`(_ predicate: (QueryObject<Element>) -> QueryPredicate) -> Results<Element> {
        guard let results = _objectResults else {
            preconditionFailure("where { } needs a managed \(typeName): add its owner to a Lattice first.")
        }
        return results.where(predicate)
    }

    /// The objects of the collection sorted by a key path (through to-one links too).
    public func sorted(byKeyPath keyPath: String, ascending: Bool = true) throws -> Results<Element> {
        try results("sorted").sorted(byKeyPath: keyPath, ascending: ascending)
    }

    /// The objects of the collection sorted by several key paths (later ones break ties).
    public func sorted<S: Sequence>(by descriptors: S) throws -> Results<Element> where S.Element == SortDescriptor {
        try results("sorted").sorted(by: descriptors)
    }

    /// The first object of each distinct combination of values of `keyPaths`, in collection order.
    public func distinct<S: Sequence>(by keyPaths: S) throws -> Results<Element> where S.Element == String {
        try results("distinct").distinct(by: keyPaths)
    }
}

extension Results {
    /// The objects of a managed collection property, as unfiltered results in its order.
    static func collection(_ managed: ManagedCollection?) -> Results? {
        guard let managed, let lattice = managed.owner._lattice,
              let path = try? QueryBinder(info: managed.info).resolvePath(
                QueryKeyPath(variable: nil, segments: [managed.property.name], position: 1)),
              case .objects = path.end else { return nil }
        return Results(lattice: lattice, info: path.endClass, source: .collection(owner: managed.owner, path: path))
    }
}

extension List: _ObjectCollection where Element: Object {
    /// The list's objects as ``Results``, in list order.
    public var _objectResults: Results<Element>? { Results.collection(managed) }
}

extension MutableSet: _ObjectCollection where Element: Object {
    /// The set's objects as ``Results``.
    public var _objectResults: Results<Element>? { Results.collection(managed) }
}

extension LinkingObjects: _ObjectCollection {
    /// The linking objects as ``Results``.
    public var _objectResults: Results<Element>? { Results.collection(managed) }
}

// Realm's names for object collections that need a query.
extension _ObjectCollection {
    /// The position of the first object matching `predicate` (see ``Results/filter(_:_:)``), or nil.
    /// Throws for an unmanaged collection, as `filter` does, and for a predicate that does not parse
    /// (Realm's takes an `NSPredicate`; Lattice's predicates are strings with arguments).
    public func index(matching predicate: String, _ arguments: Any...) throws -> Int? {
        guard let results = _objectResults else {
            throw LatticeError.objectNotManaged(className: "\(Element.self)", operation: "index(matching:) on an unmanaged \(typeName)")
        }
        // Filtered results keep the collection's order: the first match's first position is the answer.
        return try results.filter(predicate, argumentArray: arguments).first.flatMap { results.index(of: $0) }
    }

    // The aggregates of a managed collection read the property straight from its objects' records, as
    // those of ``Results`` do (an entry listed twice counts twice); an unmanaged one's objects are at hand.

    /// The smallest non-nil value of a number or Date property, or nil when there is none.
    public func min<T: _Persistable>(ofProperty property: String) throws -> T? {
        if let results = _objectResults { return try results.min(ofProperty: property) }
        return try ObjectAggregates.min(self, Element.self, property)
    }

    /// The largest non-nil value of a number or Date property, or nil when there is none.
    public func max<T: _Persistable>(ofProperty property: String) throws -> T? {
        if let results = _objectResults { return try results.max(ofProperty: property) }
        return try ObjectAggregates.max(self, Element.self, property)
    }

    /// The sum of the non-nil values of a number property (0 when there are none).
    public func sum<T: _Persistable>(ofProperty property: String) throws -> T {
        if let results = _objectResults { return try results.sum(ofProperty: property) }
        return try ObjectAggregates.sum(self, Element.self, property)
    }

    /// The mean of the non-nil values of a number property, or nil when there are none: Double for
    /// integer and floating-point properties, Decimal for Decimal ones.
    public func average<T: _Persistable>(ofProperty property: String) throws -> T? {
        if let results = _objectResults { return try results.average(ofProperty: property) }
        return try ObjectAggregates.average(self, Element.self, property)
    }

    /// Sets `key` to `value` on every object of the collection (see ``Object/setValue(_:forProperty:)``),
    /// inside a write transaction when managed. Throws like `setValue(_:forProperty:)`, as
    /// ``Results/setValue(_:forKey:)`` does (Realm's does not throw: it raises an exception).
    public func setValue(_ value: Any?, forKey key: String) throws {
        for object in Array(self) { try object.setValue(value, forProperty: key) }
    }
}
