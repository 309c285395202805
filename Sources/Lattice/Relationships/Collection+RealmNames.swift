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
    /// Realm's `value(forKey:)`: an array (`[Any?]`) of the property `key` of every object, in order;
    /// `"self"` gives the objects themselves, and a collection operator works as in
    /// ``value(forKeyPath:)``. An unknown name stops with a message, as ``Object/value(forKey:)`` does.
    public func value(forKey key: String) -> Any? {
        if key == "self" || key.hasPrefix("@") { return value(forKeyPath: key) }
        return map { $0.value(forKey: key) }
    }

    /// Realm's `value(forKeyPath:)`: an array (`[Any?]`) of the value at the end of `keyPath` for every
    /// object, in order (see ``Object/value(forKeyPath:)``), or, for a collection operator, one value:
    /// `"@count"`, and `"@min.age"`, `"@max.age"`, `"@sum.age"`, `"@avg.age"` over a number (or, for
    /// `@min` and `@max`, date) property. A wrong name stops with a message (Realm raises an exception).
    public func value(forKeyPath keyPath: String) -> Any? {
        if keyPath == "self" { return map { $0 } }
        guard keyPath.hasPrefix("@") else { return map { $0.value(forKeyPath: keyPath) } }
        let parts = keyPath.split(separator: ".", maxSplits: 1).map(String.init)
        if parts == ["@count"] { return count }
        do {
            guard parts.count == 2 else {
                throw LatticeError.invalidQuery(message: "'\(keyPath)' needs a property after its collection operator (for example '@max.age').")
            }
            return try ObjectAggregates.keyValueOperator(parts[0], self, Element.self, parts[1])
        } catch {
            preconditionFailure("\(error)")
        }
    }
}


extension LatticeCollection where Element: Comparable {
    /// The values in ascending or descending order (Realm's `sorted(ascending:)` of a collection of
    /// values), as an array: Lattice's ``Results`` hold objects only.
    public func sorted(ascending: Bool) -> [Element] { ascending ? sorted() : sorted(by: >) }
}

extension LatticeCollection where Element: _OptionalValue, Element._Wrapped: Comparable {
    /// The values of a collection of optional values in ascending or descending order, as an array; nil
    /// sorts first ascending (last descending), as in Realm.
    public func sorted(ascending: Bool = true) -> [Element] {
        sorted { a, b in
            switch (a._wrappedValue, b._wrappedValue) {
            case let (x?, y?): return ascending ? x < y : x > y
            case (nil, _?): return ascending
            case (_?, nil): return !ascending
            case (nil, nil): return false
            }
        }
    }
}
