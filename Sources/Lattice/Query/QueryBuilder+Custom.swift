import Foundation

/// Custom types (see ``CustomPersistable``) compare by their persisted values in a type-safe query:
/// `$0.site == url` is `site == %@` with `url.persistableValue`, and a custom type whose persisted
/// type orders orders as it does (`$0.price > Money(amount: 5)` compares the stored Decimals).
extension QueryProperty where Value: _CustomPersistableBase, Value.PersistedType: _QueryComparable {
    /// `property < value` (persisted values).
    public static func < (lhs: QueryProperty, rhs: Value) -> QueryPredicate { lhs.compare(.less, value(rhs)) }
    /// `property <= value` (persisted values).
    public static func <= (lhs: QueryProperty, rhs: Value) -> QueryPredicate { lhs.compare(.lessOrEqual, value(rhs)) }
    /// `property > value` (persisted values).
    public static func > (lhs: QueryProperty, rhs: Value) -> QueryPredicate { lhs.compare(.greater, value(rhs)) }
    /// `property >= value` (persisted values).
    public static func >= (lhs: QueryProperty, rhs: Value) -> QueryPredicate { lhs.compare(.greaterOrEqual, value(rhs)) }
    /// `property BETWEEN {low, high}` (persisted values, inclusive).
    public func between(_ low: Value, _ high: Value) -> QueryPredicate {
        compare(.between, .list([QueryProperty.value(low), QueryProperty.value(high)]))
    }
}

/// Optional custom types order by their persisted values; nil never orders.
extension QueryProperty {
    /// `property < value` (persisted values).
    public static func < <C: _CustomPersistableBase>(lhs: QueryProperty, rhs: C?) -> QueryPredicate
    where Value == C?, C.PersistedType: _QueryComparable {
        lhs.compare(.less, value(rhs))
    }
    /// `property <= value` (persisted values).
    public static func <= <C: _CustomPersistableBase>(lhs: QueryProperty, rhs: C?) -> QueryPredicate
    where Value == C?, C.PersistedType: _QueryComparable {
        lhs.compare(.lessOrEqual, value(rhs))
    }
    /// `property > value` (persisted values).
    public static func > <C: _CustomPersistableBase>(lhs: QueryProperty, rhs: C?) -> QueryPredicate
    where Value == C?, C.PersistedType: _QueryComparable {
        lhs.compare(.greater, value(rhs))
    }
    /// `property >= value` (persisted values).
    public static func >= <C: _CustomPersistableBase>(lhs: QueryProperty, rhs: C?) -> QueryPredicate
    where Value == C?, C.PersistedType: _QueryComparable {
        lhs.compare(.greaterOrEqual, value(rhs))
    }
}

extension QueryProperty where Value: _CustomPersistableBase {
    /// The persisted value, for the comparisons of its type (`$0.site.persistableValue.starts(with: "https:")`).
    public var persistableValue: QueryProperty<Value.PersistedType> {
        QueryProperty<Value.PersistedType>(path: path, collectionEnd: collectionEnd)
    }
}

/// Optionals of custom types, for their type-safe query members.
public protocol _OptionalCustomPersistable {
    /// The wrapped custom type.
    associatedtype _CustomWrapped: _CustomPersistableBase
}

extension Optional: _OptionalCustomPersistable where Wrapped: _CustomPersistableBase {
    /// The wrapped type.
    public typealias _CustomWrapped = Wrapped
}

extension QueryProperty where Value: _OptionalCustomPersistable {
    /// The persisted value (nil where the property is), for the comparisons of its type
    /// (`$0.site.persistableValue.starts(with: "https:")`).
    public var persistableValue: QueryProperty<Value._CustomWrapped.PersistedType?> {
        QueryProperty<Value._CustomWrapped.PersistedType?>(path: path, collectionEnd: collectionEnd)
    }
}
