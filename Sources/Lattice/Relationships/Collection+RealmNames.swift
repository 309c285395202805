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

    /// The value at the end of `keyPath` for every object, in order (see ``Object/value(forKeyPath:)``).
    public func value(forKeyPath keyPath: String) -> [Any?] { map { $0.value(forKeyPath: keyPath) } }
}


extension LatticeCollection where Element: Comparable {
    /// The values in ascending or descending order (Realm's `sorted(ascending:)` of a collection of
    /// values), as an array: Lattice's ``Results`` hold objects only.
    public func sorted(ascending: Bool) -> [Element] { ascending ? sorted() : sorted(by: >) }
}
