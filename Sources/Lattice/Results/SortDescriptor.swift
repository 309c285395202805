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
