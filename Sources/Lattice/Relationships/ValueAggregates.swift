import Foundation

// Realm's aggregates of collections of values: `min()`, `max()`, `sum()` and `average()` on a List or
// MutableSet of numbers (or dates, for min and max), and on a Map's values. Collections of optional
// values skip nil; an empty collection (or one of nils only) has no min, max or average, and sums to 0.
// Integers and floating-point numbers average as Double, Decimals as Decimal.

/// `Optional`, for the aggregates of collections of optional values.
public protocol _OptionalValue {
    /// The wrapped type.
    associatedtype _Wrapped
    /// The value, or nil.
    var _wrappedValue: _Wrapped? { get }
}

extension Optional: _OptionalValue {
    /// `self`.
    public var _wrappedValue: Wrapped? { self }
}

/// The means, one per kind of number.
enum ValueAggregates {
    static func mean<S: Sequence>(_ values: S) -> Double? where S.Element: BinaryInteger {
        // Summed as Double: an Int64 sum could overflow.
        let (count, total) = values.reduce((0, 0.0)) { ($0.0 + 1, $0.1 + Double($1)) }
        return count == 0 ? nil : total / Double(count)
    }

    static func mean<S: Sequence>(_ values: S) -> Double? where S.Element: BinaryFloatingPoint {
        let (count, total) = values.reduce((0, 0.0)) { ($0.0 + 1, $0.1 + Double($1)) }
        return count == 0 ? nil : total / Double(count)
    }

    static func mean<S: Sequence>(_ values: S) -> Decimal? where S.Element == Decimal {
        let (count, total) = values.reduce((0, Decimal(0))) { ($0.0 + 1, $0.1 + $1) }
        return count == 0 ? nil : total / Decimal(count)
    }
}

/// The collections of values with Realm's aggregates: Lists and sets (their elements) and maps (their
/// values).
public protocol _ValueAggregating {
    /// The element (for a map, the value) type.
    associatedtype _AggregatedValue
    /// The elements (a map's values).
    var _aggregatedValues: [_AggregatedValue] { get }
}

extension List: _ValueAggregating {
    /// The elements.
    public var _aggregatedValues: [Element] { Array(self) }
}

extension MutableSet: _ValueAggregating {
    /// The elements.
    public var _aggregatedValues: [Element] { Array(self) }
}

extension Map: _ValueAggregating {
    /// The values.
    public var _aggregatedValues: [Value] { values }
}

extension _ValueAggregating where _AggregatedValue: AdditiveArithmetic {
    /// The sum of the values (0 when empty).
    public func sum() -> _AggregatedValue { _aggregatedValues.reduce(.zero, +) }
}

extension _ValueAggregating where _AggregatedValue: BinaryInteger {
    /// The mean of the values, or nil when empty.
    public func average() -> Double? { ValueAggregates.mean(_aggregatedValues) }
}

extension _ValueAggregating where _AggregatedValue: BinaryFloatingPoint {
    /// The mean of the values, or nil when empty.
    public func average() -> Double? { ValueAggregates.mean(_aggregatedValues) }
}

extension _ValueAggregating where _AggregatedValue == Decimal {
    /// The mean of the values, or nil when empty.
    public func average() -> Decimal? { ValueAggregates.mean(_aggregatedValues) }
}

extension _ValueAggregating where _AggregatedValue: _OptionalValue {
    /// The non-nil values.
    var nonNilValues: [_AggregatedValue._Wrapped] { _aggregatedValues.compactMap(\._wrappedValue) }
}

extension _ValueAggregating where _AggregatedValue: _OptionalValue, _AggregatedValue._Wrapped: Comparable {
    /// The smallest non-nil value, or nil when there is none.
    public func min() -> _AggregatedValue._Wrapped? { nonNilValues.min() }
    /// The largest non-nil value, or nil when there is none.
    public func max() -> _AggregatedValue._Wrapped? { nonNilValues.max() }
}

extension _ValueAggregating where _AggregatedValue: _OptionalValue, _AggregatedValue._Wrapped: AdditiveArithmetic {
    /// The sum of the non-nil values (0 when there are none).
    public func sum() -> _AggregatedValue._Wrapped { nonNilValues.reduce(.zero, +) }
}

extension _ValueAggregating where _AggregatedValue: _OptionalValue, _AggregatedValue._Wrapped: BinaryInteger {
    /// The mean of the non-nil values, or nil when there are none.
    public func average() -> Double? { ValueAggregates.mean(nonNilValues) }
}

extension _ValueAggregating where _AggregatedValue: _OptionalValue, _AggregatedValue._Wrapped: BinaryFloatingPoint {
    /// The mean of the non-nil values, or nil when there are none.
    public func average() -> Double? { ValueAggregates.mean(nonNilValues) }
}

extension _ValueAggregating where _AggregatedValue: _OptionalValue, _AggregatedValue._Wrapped == Decimal {
    /// The mean of the non-nil values, or nil when there are none.
    public func average() -> Decimal? { ValueAggregates.mean(nonNilValues) }
}

// Lists and sets of non-optional values have Swift's own `min()` and `max()`; a map's are its values'.
extension Map where Value: Comparable {
    /// The smallest value, or nil when the map is empty.
    public func min() -> Value? { values.min() }
    /// The largest value, or nil when the map is empty.
    public func max() -> Value? { values.max() }
}
