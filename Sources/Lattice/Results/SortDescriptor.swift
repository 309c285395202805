/// A sort key for ``Results/sorted(by:)``: a property key path and a direction.
///
/// Later descriptors break ties of earlier ones; objects still equal keep their stored order, so
/// sorting is stable and deterministic. Strings sort by Unicode scalar order, nil first when ascending.
public struct SortDescriptor: Sendable, Hashable, CustomStringConvertible {
    /// The property to sort by.
    public var keyPath: String
    /// True (the default) for ascending order.
    public var ascending: Bool

    /// A descriptor sorting by `keyPath`.
    public init(keyPath: String, ascending: Bool = true) {
        self.keyPath = keyPath
        self.ascending = ascending
    }

    /// The same key path in the opposite direction.
    public func reversed() -> SortDescriptor { SortDescriptor(keyPath: keyPath, ascending: !ascending) }

    /// For example `age DESC`.
    public var description: String { "\(keyPath) \(ascending ? "ASC" : "DESC")" }
}

extension SortDescriptor: ExpressibleByStringLiteral {
    /// An ascending descriptor from its key path, as Realm allows: `sorted(by: ["owner.name", "age"])`.
    public init(stringLiteral keyPath: String) { self.init(keyPath: keyPath) }
}

/// ``SortDescriptor`` under a second name, for `Lattice.SortDescriptor` (see below).
public typealias _LatticeSortDescriptor = SortDescriptor

extension Lattice {
    /// ``SortDescriptor``, spelled `Lattice.SortDescriptor` where Foundation's `SortDescriptor` is in scope
    /// too (the class `Lattice` hides the module name, so `Lattice.` names this member).
    public typealias SortDescriptor = _LatticeSortDescriptor
}
