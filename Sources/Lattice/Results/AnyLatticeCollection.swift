import Foundation

/// Any collection of objects behind one type (Realm's `AnyRealmCollection`): ``Results``, or a ``List``,
/// ``MutableSet`` or ``LinkingObjects`` of objects, for code that takes any of them.
///
/// ```swift
/// func titles(_ books: AnyLatticeCollection<Book>) -> [String] { books.map(\.title) }
/// titles(AnyLatticeCollection(shelf.books))
/// titles(AnyLatticeCollection(try lattice.objects(Book.self).filter("pages > 100")))
/// ```
/// It reads, queries (`filter`, `where`, `sorted`, `distinct`, the aggregates), observes and freezes as
/// the collection it wraps does; a query of an unmanaged List or MutableSet throws, as it would there.
public struct AnyLatticeCollection<Element: Object>: RandomAccessCollection, _ObjectCollection, ThreadConfined {
    private enum Base {
        case results(Results<Element>)
        case list(List<Element>)
        case set(MutableSet<Element>)
        case linking(LinkingObjects<Element>)
    }

    private let base: Base

    /// Wraps results.
    public init(_ results: Results<Element>) { base = .results(results) }
    /// Wraps a List of objects.
    public init(_ list: List<Element>) { base = .list(list) }
    /// Wraps a MutableSet of objects.
    public init(_ set: MutableSet<Element>) { base = .set(set) }
    /// Wraps the objects linking to an object.
    public init(_ linking: LinkingObjects<Element>) { base = .linking(linking) }

    /// The wrapped collection.
    private var collection: any LatticeCollection {
        switch base {
        case let .results(c): return c
        case let .list(c): return c
        case let .set(c): return c
        case let .linking(c): return c
        }
    }

    /// The first position: 0.
    public var startIndex: Int { 0 }
    /// One past the last position: the number of objects.
    public var endIndex: Int { count }

    /// The number of objects.
    public var count: Int { collection.count }

    /// The object at `position`; out of range stops with a message, as the wrapped collection's does.
    public subscript(position: Int) -> Element {
        switch base {
        case let .results(c): return c[position]
        case let .list(c): return c[position]
        case let .set(c): return c[position]
        case let .linking(c): return c[position]
        }
    }

    /// The wrapped collection's description.
    public var description: String { collection.description }

    /// The objects as ``Results`` (nil for an unmanaged List or MutableSet).
    public var _objectResults: Results<Element>? {
        switch base {
        case let .results(c): return c
        case let .list(c): return c._objectResults
        case let .set(c): return c._objectResults
        case let .linking(c): return c._objectResults
        }
    }

    /// The handle the objects are read through; nil for an unmanaged List or MutableSet.
    public var lattice: Lattice? { _latticeHandle }

    /// Whether the collection can no longer be read (its owner, or its handle, is gone).
    public var isInvalidated: Bool {
        switch base {
        case let .results(c): return c.isInvalidated
        case let .list(c): return c.isInvalidated
        case let .set(c): return c.isInvalidated
        case let .linking(c): return c.isInvalidated
        }
    }

    /// The position of `object`, or nil when it is not in the collection.
    public func index(of object: Element) -> Int? {
        switch base {
        case let .results(c): return c.index(of: object)
        case let .list(c): return c.index(of: object)
        case let .set(c): return c.firstIndex(of: object)
        case let .linking(c): return c.index(of: object)
        }
    }

    /// Observes the collection as the wrapped one is observed (see ``Results/observe(keyPaths:_:)``); the
    /// collection handed to `block` is wrapped too.
    public func observe(keyPaths: [String]? = nil,
                        _ block: @escaping (LatticeCollectionChange<AnyLatticeCollection<Element>>) -> Void) -> NotificationToken {
        func wrapped<C>(_ wrap: @escaping (C) -> AnyLatticeCollection) -> (LatticeCollectionChange<C>) -> Void {
            { change in
                switch change {
                case let .initial(c): block(.initial(wrap(c)))
                case let .update(c, d, i, m): block(.update(wrap(c), deletions: d, insertions: i, modifications: m))
                case let .error(error): block(.error(error))
                }
            }
        }
        switch base {
        case let .results(c): return c.observe(keyPaths: keyPaths, wrapped(AnyLatticeCollection.init))
        case let .list(c): return c.observe(keyPaths: keyPaths, wrapped(AnyLatticeCollection.init))
        case let .set(c): return c.observe(keyPaths: keyPaths, wrapped(AnyLatticeCollection.init))
        case let .linking(c): return c.observe(keyPaths: keyPaths, wrapped(AnyLatticeCollection.init))
        }
    }

    // MARK: Freezing

    /// Whether the collection belongs to a frozen handle.
    public var isFrozen: Bool {
        switch base {
        case let .results(c): return c.isFrozen
        case let .list(c): return c.isFrozen
        case let .set(c): return c.isFrozen
        case let .linking(c): return c.isFrozen
        }
    }

    /// The handle the collection is read through.
    public var _latticeHandle: Lattice? {
        switch base {
        case let .results(c): return c._latticeHandle
        case let .list(c): return c._latticeHandle
        case let .set(c): return c._latticeHandle
        case let .linking(c): return c._latticeHandle
        }
    }

    /// The collection as a frozen snapshot (see ``Results/freeze()``).
    public func freeze() -> AnyLatticeCollection {
        switch base {
        case let .results(c): return AnyLatticeCollection(c.freeze())
        case let .list(c): return AnyLatticeCollection(c.freeze())
        case let .set(c): return AnyLatticeCollection(c.freeze())
        case let .linking(c): return AnyLatticeCollection(c.freeze())
        }
    }

    /// The live counterpart of a frozen collection (see ``Results/thaw()``).
    public func thaw() -> AnyLatticeCollection? {
        switch base {
        case let .results(c): return c.thaw().map(AnyLatticeCollection.init)
        case let .list(c): return c.thaw().map(AnyLatticeCollection.init)
        case let .set(c): return c.thaw().map(AnyLatticeCollection.init)
        case let .linking(c): return c.thaw().map(AnyLatticeCollection.init)
        }
    }

    /// The collection read through `lattice`.
    public func _latticeRebound(in lattice: Lattice) -> AnyLatticeCollection? {
        switch base {
        case let .results(c): return c._latticeRebound(in: lattice).map(AnyLatticeCollection.init)
        case let .list(c): return c._latticeRebound(in: lattice).map(AnyLatticeCollection.init)
        case let .set(c): return c._latticeRebound(in: lattice).map(AnyLatticeCollection.init)
        case let .linking(c): return c._latticeRebound(in: lattice).map(AnyLatticeCollection.init)
        }
    }
}
