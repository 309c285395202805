import Foundation

/// Realm Swift's spellings of string, Data and enum comparisons in a type-safe query, each the
/// syntax tree of the string predicate it names.
extension QueryProperty where Value: _QueryString {
    /// `property !=[options] text`.
    public func notEquals(_ text: String, options: QueryStringComparison = []) -> QueryPredicate {
        compare(.notEqual, .value(.string(text)), options.query)
    }

    /// `property LIKE pattern`, or `LIKE[c]` when `caseInsensitive` (`?` one character, `*` any run).
    public func like(_ pattern: String, caseInsensitive: Bool) -> QueryPredicate {
        compare(.like, .value(.string(pattern)), caseInsensitive ? .caseInsensitive : [])
    }
}

extension QueryProperty where Value: _QueryBinary {
    /// `property BEGINSWITH data` (bytewise).
    public func starts(with prefix: Data) -> QueryPredicate { compare(.beginsWith, .value(.data(prefix))) }
    /// `property ENDSWITH data`.
    public func ends(with suffix: Data) -> QueryPredicate { compare(.endsWith, .value(.data(suffix))) }
    /// `property CONTAINS data`.
    public func contains(_ bytes: Data) -> QueryPredicate { compare(.contains, .value(.data(bytes))) }
    /// `property == data`.
    public func equals(_ bytes: Data) -> QueryPredicate { compare(.equal, .value(.data(bytes))) }
    /// `property != data`.
    public func notEquals(_ bytes: Data) -> QueryPredicate { compare(.notEqual, .value(.data(bytes))) }
}

/// Data types, for the Data methods of a type-safe query.
public protocol _QueryBinary {}
extension Data: _QueryBinary {}
extension Optional: _QueryBinary where Wrapped == Data {}

/// Enums order by their raw values (`$0.priority > .low` is `priority > 1` for raw value 1).
extension QueryProperty where Value: PersistableEnum, Value.RawValue: _QueryComparable {
    /// `property < value` (raw values).
    public static func < (lhs: QueryProperty, rhs: Value) -> QueryPredicate { lhs.compare(.less, value(rhs)) }
    /// `property <= value` (raw values).
    public static func <= (lhs: QueryProperty, rhs: Value) -> QueryPredicate { lhs.compare(.lessOrEqual, value(rhs)) }
    /// `property > value` (raw values).
    public static func > (lhs: QueryProperty, rhs: Value) -> QueryPredicate { lhs.compare(.greater, value(rhs)) }
    /// `property >= value` (raw values).
    public static func >= (lhs: QueryProperty, rhs: Value) -> QueryPredicate { lhs.compare(.greaterOrEqual, value(rhs)) }
}

/// Optional enums order by their raw values; nil never orders.
extension QueryProperty {
    /// `property < value` (raw values).
    public static func < <E: PersistableEnum>(lhs: QueryProperty, rhs: E?) -> QueryPredicate where Value == E?, E.RawValue: _QueryComparable {
        lhs.compare(.less, value(rhs))
    }
    /// `property <= value` (raw values).
    public static func <= <E: PersistableEnum>(lhs: QueryProperty, rhs: E?) -> QueryPredicate where Value == E?, E.RawValue: _QueryComparable {
        lhs.compare(.lessOrEqual, value(rhs))
    }
    /// `property > value` (raw values).
    public static func > <E: PersistableEnum>(lhs: QueryProperty, rhs: E?) -> QueryPredicate where Value == E?, E.RawValue: _QueryComparable {
        lhs.compare(.greater, value(rhs))
    }
    /// `property >= value` (raw values).
    public static func >= <E: PersistableEnum>(lhs: QueryProperty, rhs: E?) -> QueryPredicate where Value == E?, E.RawValue: _QueryComparable {
        lhs.compare(.greaterOrEqual, value(rhs))
    }
}

extension QueryProperty where Value: PersistableEnum {
    /// The enum's raw value, for comparisons the enum itself does not offer
    /// (`$0.kind.rawValue.starts(with: "be")`).
    public var rawValue: QueryProperty<Value.RawValue> { QueryProperty<Value.RawValue>(path: path, collectionEnd: collectionEnd) }
}
