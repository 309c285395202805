/// A collection of objects that a loop can walk from the last object to the first as fast as from the
/// first to the last: ``Results`` and ``LinkingObjects``.
public protocol _BackwardReadable: RandomAccessCollection where Index == Int, Element: Object {
    /// An iterator over the objects, from the last to the first with `reversed`.
    func _makeIterator(reversed: Bool) -> Iterator
}

extension Results: _BackwardReadable {}
extension LinkingObjects: _BackwardReadable {}

/// The objects of ``Results`` or ``LinkingObjects`` from the last to the first, as their `reversed()`
/// returns them.
///
/// ```swift
/// for message in chat.messages.sorted(byKeyPath: "date").reversed() { ... }  // newest first
/// ```
/// It is a view of the collection, like the standard library's `ReversedCollection`: it holds no objects
/// and follows the collection's changes. A `for … in` loop over it (and `map`, `first(where:)`,
/// `Array(_:)` and the other algorithms that iterate) reads the objects as a loop over the collection
/// itself does, backwards: in batches, one cursor walk each, an instance the loop did not keep handed
/// out again (see ``Object/reusesInstancesWhileIterating``), and the objects as they were when the loop
/// began. Positions count from the last object: `reversed[0]` is the collection's last object.
/// Where a `ReversedCollection` is asked for by type, Swift picks the standard library's `reversed()`.
public struct ReversedLatticeCollection<Base: _BackwardReadable>: RandomAccessCollection {
    /// The collection, in its own order.
    public let base: Base

    init(_ base: Base) { self.base = base }

    /// 0.
    public var startIndex: Int { 0 }
    /// The number of objects.
    public var endIndex: Int { base.count }
    /// `i + 1`.
    public func index(after i: Int) -> Int { i + 1 }
    /// `i - 1`.
    public func index(before i: Int) -> Int { i - 1 }

    /// The object `position` places from the collection's last.
    public subscript(position: Int) -> Base.Element { base[base.count - 1 - position] }

    /// Walks the objects from the last to the first.
    public func makeIterator() -> Base.Iterator { base._makeIterator(reversed: true) }

    /// The collection in its own order again.
    public func reversed() -> Base { base }
}
