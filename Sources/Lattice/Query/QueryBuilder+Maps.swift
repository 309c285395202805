import Foundation

/// A Map in a type-safe query: what a ``QueryCollection`` offers (its values are the elements), and
/// the value at a key (`$0.ratings["a"] > 2`), its keys (`$0.ratings.keys == "a"`) and its values
/// (`$0.ratings.values > 2`), as Realm Swift has them. A type of its own, so that only a Map takes keys.
@dynamicMemberLookup
public struct QueryMap<Element> {
    /// The Map as a collection of its values.
    let elements: QueryCollection<Element>

    private var segments: [String] { elements.segments }

    /// The number of entries (`map.@count`).
    public var count: QueryProperty<Int> { elements.count }

    /// Whether some value is `element` (`element IN map`; objects by identity).
    public func contains(_ element: Element) -> QueryPredicate { elements.contains(element) }

    /// Whether ANY value is one of `values` (`ANY map IN {values}`).
    public func containsAny<S: Sequence>(in values: S) -> QueryPredicate where S.Element == Element { elements.containsAny(in: values) }

    /// The keys (`map.@allKeys`): a comparison matches when ANY key matches
    /// (`$0.ratings.keys.starts(with: "a")`; `keys.contains("a")` is the String operator CONTAINS).
    public var keys: QueryProperty<String> {
        QueryProperty(path: QueryKeyPath(variable: nil, segments: segments + [QueryMapSegment.allKeys], position: 1))
    }

    /// A property of the (non-nil) objects of a Map of objects: a comparison matches when ANY matches.
    public subscript<T: Object, V: _Persistable>(dynamicMember keyPath: KeyPath<T, V>) -> QueryProperty<V> where Element == T? {
        elements[dynamicMember: keyPath]
    }
}

extension QueryMap where Element: _Persistable {
    /// The value at `key` (`map['key']`). A missing key reads as nil, as in Realm: `!=` and `== nil`
    /// match it, orderings and string operators do not.
    public subscript(key: String) -> QueryProperty<Element> {
        QueryProperty(path: QueryKeyPath(variable: nil, segments: segments, mapKey: QueryMapKey(after: segments.count, key: key), position: 1))
    }

    /// The values (`map.@allValues`): a comparison matches when ANY value matches, as with the Map itself.
    public var values: QueryProperty<Element> {
        QueryProperty(path: QueryKeyPath(variable: nil, segments: segments + [QueryMapSegment.allValues], position: 1))
    }

    /// `ANY map == value`.
    public static func == (lhs: QueryMap, rhs: Element) -> QueryPredicate { lhs.elements == rhs }
    /// `ANY map != value`.
    public static func != (lhs: QueryMap, rhs: Element) -> QueryPredicate { lhs.elements != rhs }
}

extension QueryMap where Element: _Persistable & _QueryComparable {
    /// `ANY map < value`.
    public static func < (lhs: QueryMap, rhs: Element) -> QueryPredicate { lhs.elements < rhs }
    /// `ANY map <= value`.
    public static func <= (lhs: QueryMap, rhs: Element) -> QueryPredicate { lhs.elements <= rhs }
    /// `ANY map > value`.
    public static func > (lhs: QueryMap, rhs: Element) -> QueryPredicate { lhs.elements > rhs }
    /// `ANY map >= value`.
    public static func >= (lhs: QueryMap, rhs: Element) -> QueryPredicate { lhs.elements >= rhs }
}

extension QueryMap where Element: _QueryNumeric & _Persistable {
    /// The smallest value (`map.@min`); nil for an empty Map.
    public var min: QueryProperty<Element> { elements.min }
    /// The largest value (`map.@max`); nil for an empty Map.
    public var max: QueryProperty<Element> { elements.max }
    /// Whether EVERY value lies in `range`, and there is one (`map.@min >= lower AND map.@max < upper`).
    public func contains(_ range: Range<Element._QueryBase>) -> QueryPredicate where Element._QueryBase: _Persistable {
        elements.contains(range)
    }
    /// Whether EVERY value lies in `range`, and there is one (`map.@min >= lower AND map.@max <= upper`).
    public func contains(_ range: ClosedRange<Element._QueryBase>) -> QueryPredicate where Element._QueryBase: _Persistable {
        elements.contains(range)
    }
}

extension QueryMap where Element: _QueryAddable & _Persistable {
    /// The sum of the values (`map.@sum`); 0 for an empty Map.
    public var sum: QueryProperty<Element> { elements.sum }
    /// The mean of the values (`map.@avg`); nil for an empty Map.
    public var avg: QueryProperty<Element> { elements.avg }
}
