import Foundation

// Realm's names shared by Lattice's collections (Results, List, MutableSet, Map, LinkingObjects).

extension LatticeCollection where Self: Collection, Index == Int {
    /// The elements at `indexes`, in order (Realm's `objects(at:)`); an index out of range stops with a
    /// message, as a subscript does.
    public func objects(at indexes: IndexSet) -> [Element] {
        let count = count
        if let last = indexes.last {
            precondition(last < count, "Index \(last) is out of range for a \(typeName) of \(count) elements.")
        }
        return indexes.map { self[$0] }
    }
}

extension LatticeCollection where Element: Object {
    /// The value of the property `key` of every object, in order (Realm's `value(forKey:)`); an unknown
    /// name stops with a message, as ``Object/value(forKey:)`` does.
    public func value(forKey key: String) -> [Any?] { map { $0.value(forKey: key) } }
}

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

    /// Sets `key` to `value` on every object of the collection (see ``Object/setValue(_:forProperty:)``),
    /// inside a write transaction when managed. Throws like `setValue(_:forProperty:)`, as
    /// ``Results/setValue(_:forKey:)`` does (Realm's does not throw: it raises an exception).
    public func setValue(_ value: Any?, forKey key: String) throws {
        for object in Array(self) { try object.setValue(value, forProperty: key) }
    }
}
