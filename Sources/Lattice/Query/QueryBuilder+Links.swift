/// Type-safe queries through relationships: to-one links (`$0.owner.name == "Ann"`, `$0.owner == ann`),
/// collection counts (`$0.dogs.count > 2`), properties of collection elements (`$0.dogs.age < 2`, which
/// matches when ANY element matches) and membership (`$0.nicknames.contains("a")`).
extension QueryObject {
    /// A to-one link: the linked object, whose properties continue the key path.
    public subscript<T: Object>(dynamicMember keyPath: KeyPath<Root, T?>) -> QueryObject<T> {
        QueryObject<T>(resolver: resolver.linked(T.self), prefix: prefix + [resolver.linkName(of: keyPath)])
    }

    /// A List property.
    public subscript<E>(dynamicMember keyPath: KeyPath<Root, List<E>>) -> QueryCollection<E> { collection(keyPath) }
    /// A MutableSet property.
    public subscript<E>(dynamicMember keyPath: KeyPath<Root, MutableSet<E>>) -> QueryCollection<E> { collection(keyPath) }
    /// A Map property.
    public subscript<K, E>(dynamicMember keyPath: KeyPath<Root, Map<K, E>>) -> QueryMap<E> { QueryMap(elements: collection(keyPath)) }
    /// A LinkingObjects property.
    public subscript<E>(dynamicMember keyPath: KeyPath<Root, LinkingObjects<E>>) -> QueryCollection<E> { collection(keyPath) }

    private func collection<C, E>(_ keyPath: KeyPath<Root, C>) -> QueryCollection<E> {
        QueryCollection(segments: prefix + [resolver.collectionName(of: keyPath)], lattice: resolver.lattice)
    }

    private func compare(_ op: QueryOperator, _ object: Root?) -> QueryPredicate {
        let rhs: QueryExpression = object.map { .value(.object(.init(object: $0))) } ?? .value(.null)
        return QueryPredicate(node: .comparison(QueryComparison(quantifier: nil, lhs: .keyPath(QueryKeyPath(variable: nil, segments: prefix, position: 1)),
                                                                op: op, options: [], rhs: rhs, position: 1)))
    }

    /// `link == object` (the same stored object) or `link == nil`.
    public static func == (lhs: QueryObject, rhs: Root?) -> QueryPredicate { lhs.compare(.equal, rhs) }
    /// `link != object`.
    public static func != (lhs: QueryObject, rhs: Root?) -> QueryPredicate { lhs.compare(.notEqual, rhs) }
}

/// A List, MutableSet or LinkingObjects in a type-safe query (and a Map's values, see ``QueryMap``).
@dynamicMemberLookup
public struct QueryCollection<Element> {
    let segments: [String]
    let lattice: Lattice

    var path: QueryKeyPath { QueryKeyPath(variable: nil, segments: segments, position: 1) }

    /// The number of elements (`dogs.@count`).
    public var count: QueryProperty<Int> {
        QueryProperty(path: QueryKeyPath(variable: nil, segments: segments, collectionOperator: .count, position: 1))
    }

    /// Whether the collection holds `element` (`element IN collection`; objects by identity).
    public func contains(_ element: Element) -> QueryPredicate {
        let lhs = (try? QueryParser.expression(fromArgument: element)) ?? .value(.null)
        return QueryPredicate(node: .comparison(QueryComparison(quantifier: nil, lhs: lhs, op: .in, options: [], rhs: .keyPath(path), position: 1)))
    }
}

extension QueryCollection {
    /// A property of the elements: a comparison with it matches when ANY element matches.
    public subscript<V: _Persistable>(dynamicMember keyPath: KeyPath<Element, V>) -> QueryProperty<V> where Element: Object {
        elementProperty(keyPath)
    }

    /// A property of the (non-nil) objects of a Map of optional objects.
    public subscript<T: Object, V: _Persistable>(dynamicMember keyPath: KeyPath<T, V>) -> QueryProperty<V> where Element == T? {
        elementProperty(keyPath)
    }

    private func elementProperty<T: Object, V: _Persistable>(_ keyPath: KeyPath<T, V>) -> QueryProperty<V> {
        guard let info = lattice.classInfo(T.self) else {
            preconditionFailure("\(keyPath) in a where { } query: '\(T.self)' is not in this database's schema.")
        }
        let name = KeyPathResolver<T>(lattice: lattice, info: info).name(of: keyPath)
        return QueryProperty(path: QueryKeyPath(variable: nil, segments: segments + [name], position: 1), collectionEnd: segments.count)
    }
}

/// Collections that know the property they belong to (for naming a key path in `where { }`).
protocol ManagedCollectionValue {
    var managed: ManagedCollection? { get }
}
extension List: ManagedCollectionValue {}
extension MutableSet: ManagedCollectionValue {}
extension Map: ManagedCollectionValue {}
extension LinkingObjects: ManagedCollectionValue {}

extension KeyPathResolver {
    /// A resolver for the class a link leads to.
    func linked<T: Object>(_ type: T.Type) -> KeyPathResolver<T> {
        guard let info = lattice.classInfo(type) else {
            preconditionFailure("A where { } query on '\(self.info.name)' follows a link to '\(type)', which is not in this database's schema.")
        }
        return KeyPathResolver<T>(lattice: lattice, info: info)
    }

    /// The name of the to-one link a key path reads: the only link to `T`, or the one whose payload, set
    /// on a probe object, the key path reads (one bit of the candidate number per read).
    func linkName<T: Object>(of keyPath: KeyPath<Root, T?>) -> String {
        remembered(keyPath) {
            let candidates = info.columns.filter { $0.isLink && $0.target?.type == T.self }
            if candidates.count == 1 { return candidates[0].name }
            if let name = linkName(among: candidates, isSet: { $0[keyPath: keyPath] != nil }) { return name }
            unresolved(keyPath)
        }
    }

    /// The link among `candidates` that `isSet` finds set on probe objects, or nil when none is.
    func linkName(among candidates: [PropertyInfo], isSet: (Root) -> Bool) -> String? {
        guard !candidates.isEmpty else { return nil }
        var link: [UInt8] = []
        Varint.append(Varint.zigzag(1), to: &link)
        func read(_ chosen: (Int) -> Bool) -> Bool {
            let probe = self.probe { p in candidates.firstIndex { $0 === p }.flatMap { chosen($0) ? link : nil } }
            return Lattice.$resolvesLinksUnread.withValue(true) { isSet(probe) }
        }
        var index = 0
        var bit = 0
        while (1 << bit) < candidates.count {
            if read({ $0 & (1 << bit) != 0 }) { index |= 1 << bit }
            bit += 1
        }
        guard index < candidates.count, read({ $0 == index }) else { return nil }
        return candidates[index].name
    }

    /// The name of the collection property a key path reads (collections know their property).
    func collectionName<C>(of keyPath: KeyPath<Root, C>) -> String {
        remembered(keyPath) {
            if let name = collectionName(reading: { $0[keyPath: keyPath] }) { return name }
            unresolved(keyPath)
        }
    }

    /// The collection property whose value `read` returns from a probe object, or nil.
    func collectionName(reading read: (Root) -> Any) -> String? {
        (read(probe { _ in nil }) as? ManagedCollectionValue)?.managed?.property.name
    }

}
