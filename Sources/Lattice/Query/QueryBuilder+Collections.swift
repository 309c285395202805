import Foundation

/// Type-safe queries on collections as Realm Swift writes them: aggregates (`$0.scores.avg > 3`,
/// `$0.dogs.age.max < 10`), ranges (`$0.scores.contains(1...5)`) and `containsAny(in:)`. Each builds
/// the syntax tree of the string predicate it names.
extension QueryCollection {
    private func aggregate<V>(_ op: QueryCollectionOperator) -> QueryProperty<V> {
        QueryProperty(path: QueryKeyPath(variable: nil, segments: segments, collectionOperator: op, position: 1))
    }

    /// Whether ANY element is one of `values` (`ANY collection IN {values}`; objects by identity).
    public func containsAny<S: Sequence>(in values: S) -> QueryPredicate where S.Element == Element {
        let items = values.map { (try? QueryParser.expression(fromArgument: $0)) ?? .value(.null) }
        return QueryPredicate(node: .comparison(QueryComparison(quantifier: .any, lhs: .keyPath(path), op: .in, options: [],
                                                                rhs: .list(items), position: 1)))
    }
}

extension QueryCollection where Element: _QueryNumeric & _Persistable {
    /// The smallest element (`collection.@min`); nil for an empty collection.
    public var min: QueryProperty<Element> { aggregate(.min) }
    /// The largest element (`collection.@max`); nil for an empty collection.
    public var max: QueryProperty<Element> { aggregate(.max) }

    /// Whether EVERY element lies in `range`, and there is one: `collection.@min >= lower AND
    /// collection.@max < upper`, as Realm's `contains(_:)` of a range means.
    public func contains(_ range: Range<Element._QueryBase>) -> QueryPredicate where Element._QueryBase: _Persistable {
        bounded(range.lowerBound, .less, range.upperBound)
    }

    /// Whether EVERY element lies in `range`, and there is one: `collection.@min >= lower AND
    /// collection.@max <= upper`.
    public func contains(_ range: ClosedRange<Element._QueryBase>) -> QueryPredicate where Element._QueryBase: _Persistable {
        bounded(range.lowerBound, .lessOrEqual, range.upperBound)
    }

    private func bounded<B: _Persistable>(_ lower: B, _ upperOp: QueryOperator, _ upper: B) -> QueryPredicate {
        let low: QueryProperty<B> = aggregate(.min), high: QueryProperty<B> = aggregate(.max)
        return low.compare(.greaterOrEqual, QueryProperty<B>.value(lower)) && high.compare(upperOp, QueryProperty<B>.value(upper))
    }
}

extension QueryCollection where Element: _QueryAddable & _Persistable {
    /// The sum of the elements (`collection.@sum`); 0 for an empty collection.
    public var sum: QueryProperty<Element> { aggregate(.sum) }
    /// The mean of the elements (`collection.@avg`); nil for an empty collection.
    public var avg: QueryProperty<Element> { aggregate(.avg) }
}

extension QueryProperty where Value: _QueryNumeric {
    /// The element property with a collection operator put after the collection (`dogs.@min.age`).
    private func aggregate(_ op: QueryCollectionOperator) -> QueryProperty {
        var p = path
        let split = collectionEnd ?? p.segments.count
        p.trailing = Array(p.segments[split...])
        p.segments = Array(p.segments[..<split])
        p.collectionOperator = op
        return QueryProperty(path: p)
    }

    /// The smallest value of this property over a collection's elements (`$0.dogs.age.min`:
    /// `dogs.@min.age`). Only for a property reached through a collection.
    public var min: QueryProperty { aggregate(.min) }
    /// The largest value over a collection's elements (`dogs.@max.age`).
    public var max: QueryProperty { aggregate(.max) }

    /// `lower <= property < upper` (`property >= lower AND property < upper`).
    public func contains(_ range: Range<Value._QueryBase>) -> QueryPredicate where Value._QueryBase: _Persistable {
        compare(.greaterOrEqual, QueryProperty<Value._QueryBase>.value(range.lowerBound))
            && compare(.less, QueryProperty<Value._QueryBase>.value(range.upperBound))
    }

    /// `lower <= property <= upper` (`property BETWEEN {lower, upper}`).
    public func contains(_ range: ClosedRange<Value._QueryBase>) -> QueryPredicate where Value._QueryBase: _Persistable {
        compare(.between, .list([QueryProperty<Value._QueryBase>.value(range.lowerBound),
                                 QueryProperty<Value._QueryBase>.value(range.upperBound)]))
    }
}

extension QueryProperty where Value: _QueryAddable {
    /// The sum of this property over a collection's elements (`$0.dogs.age.sum`: `dogs.@sum.age`).
    public var sum: QueryProperty { aggregate(.sum) }
    /// The mean of this property over a collection's elements (`dogs.@avg.age`).
    public var avg: QueryProperty { aggregate(.avg) }
}

/// Numbers and dates: the types with ranges and `@min`/`@max` in a type-safe query.
public protocol _QueryNumeric: _QueryComparable {}
/// Numbers: the types with `@sum`/`@avg` in a type-safe query.
public protocol _QueryAddable: _QueryNumeric {}
extension Int: _QueryAddable {}
extension Int8: _QueryAddable {}
extension Int16: _QueryAddable {}
extension Int32: _QueryAddable {}
extension Int64: _QueryAddable {}
extension Float: _QueryAddable {}
extension Double: _QueryAddable {}
extension Decimal: _QueryAddable {}
extension Date: _QueryNumeric {}
extension Optional: _QueryNumeric where Wrapped: _QueryNumeric {}
extension Optional: _QueryAddable where Wrapped: _QueryAddable {}

/// A collection compared with one value matches when ANY element matches (`$0.scores > 5` is
/// `ANY scores > 5`; `$0.dogs == rex` is `ANY dogs == %@`), as in Realm Swift.
extension QueryCollection where Element: _Persistable {
    fileprivate func any(_ op: QueryOperator, _ value: Element) -> QueryPredicate {
        QueryPredicate(node: .comparison(QueryComparison(quantifier: .any, lhs: .keyPath(path), op: op, options: [],
                                                         rhs: QueryProperty<Element>.value(value), position: 1)))
    }

    /// `ANY collection == value`.
    public static func == (lhs: QueryCollection, rhs: Element) -> QueryPredicate { lhs.any(.equal, rhs) }
    /// `ANY collection != value`.
    public static func != (lhs: QueryCollection, rhs: Element) -> QueryPredicate { lhs.any(.notEqual, rhs) }
}

extension QueryCollection where Element: _Persistable & _QueryComparable {
    /// `ANY collection < value`.
    public static func < (lhs: QueryCollection, rhs: Element) -> QueryPredicate { lhs.any(.less, rhs) }
    /// `ANY collection <= value`.
    public static func <= (lhs: QueryCollection, rhs: Element) -> QueryPredicate { lhs.any(.lessOrEqual, rhs) }
    /// `ANY collection > value`.
    public static func > (lhs: QueryCollection, rhs: Element) -> QueryPredicate { lhs.any(.greater, rhs) }
    /// `ANY collection >= value`.
    public static func >= (lhs: QueryCollection, rhs: Element) -> QueryPredicate { lhs.any(.greaterOrEqual, rhs) }
}
