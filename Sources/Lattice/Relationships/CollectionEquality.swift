// Realm's equality of Lists, MutableSets and Maps: two managed collections are equal when they are the
// same stored collection (the same property of the same stored object, through any handle of the file);
// two unmanaged ones when they hold equal elements (in order for a List, as members for a set, equal
// values under equal keys for a Map). A managed and an unmanaged collection are never equal.

extension ManagedCollection {
    /// Whether `other` binds the same stored collection: live both, or frozen both at one version (a
    /// frozen collection is a snapshot, not the live one).
    func isSame(as other: ManagedCollection) -> Bool {
        guard property.name == other.property.name, owner == other.owner else { return false }
        let (frozen, otherFrozen) = (owner.isFrozen, other.owner.isFrozen)
        return frozen == otherFrozen && (!frozen || owner._lattice === other.owner._lattice)
    }
}

/// Equality of bindings first: nil when both collections are unmanaged (their elements decide).
private func sameBinding(_ a: ManagedCollection?, _ b: ManagedCollection?) -> Bool? {
    switch (a, b) {
    case let (a?, b?): return a.isSame(as: b)
    case (nil, nil): return nil
    default: return false
    }
}

extension List: Equatable where Element: Equatable {
    /// The same stored list, or unmanaged lists of equal elements in the same order.
    public static func == (lhs: List, rhs: List) -> Bool {
        if lhs === rhs { return true }
        return sameBinding(lhs.managed, rhs.managed) ?? lhs.elementsEqual(rhs)
    }
}

extension MutableSet: Equatable {
    /// The same stored set, or unmanaged sets of the same members.
    public static func == (lhs: MutableSet, rhs: MutableSet) -> Bool {
        if lhs === rhs { return true }
        return sameBinding(lhs.managed, rhs.managed) ?? (lhs.count == rhs.count && lhs.allSatisfy(rhs.contains))
    }
}

extension Map: Equatable where Value: Equatable {
    /// The same stored map, or unmanaged maps with equal values under the same keys.
    public static func == (lhs: Map, rhs: Map) -> Bool {
        if lhs === rhs { return true }
        return sameBinding(lhs.managed, rhs.managed) ?? (lhs.count == rhs.count && lhs.allSatisfy { rhs[$0.key] == $0.value })
    }
}
