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

// MARK: Lists and sets (min and max of non-optional values are Swift's own)

extension LatticeCollection where Element: AdditiveArithmetic {
    /// The sum of the values (0 when empty).
    public func sum() -> Element { reduce(.zero, +) }
}

extension LatticeCollection where Element: BinaryInteger {
    /// The mean of the values, or nil when empty.
    public func average() -> Double? { ValueAggregates.mean(self) }
}

extension LatticeCollection where Element: BinaryFloatingPoint {
    /// The mean of the values, or nil when empty.
    public func average() -> Double? { ValueAggregates.mean(self) }
}

extension LatticeCollection where Element == Decimal {
    /// The mean of the values, or nil when empty.
    public func average() -> Decimal? { ValueAggregates.mean(self) }
}

extension LatticeCollection where Element: _OptionalValue {
    /// The non-nil values.
    var nonNilValues: [Element._Wrapped] { compactMap(\._wrappedValue) }
}

extension LatticeCollection where Element: _OptionalValue, Element._Wrapped: Comparable {
    /// The smallest non-nil value, or nil when there is none.
    public func min() -> Element._Wrapped? { nonNilValues.min() }
    /// The largest non-nil value, or nil when there is none.
    public func max() -> Element._Wrapped? { nonNilValues.max() }
}

extension LatticeCollection where Element: _OptionalValue, Element._Wrapped: AdditiveArithmetic {
    /// The sum of the non-nil values (0 when there are none).
    public func sum() -> Element._Wrapped { nonNilValues.reduce(.zero, +) }
}

extension LatticeCollection where Element: _OptionalValue, Element._Wrapped: BinaryInteger {
    /// The mean of the non-nil values, or nil when there are none.
    public func average() -> Double? { ValueAggregates.mean(nonNilValues) }
}

extension LatticeCollection where Element: _OptionalValue, Element._Wrapped: BinaryFloatingPoint {
    /// The mean of the non-nil values, or nil when there are none.
    public func average() -> Double? { ValueAggregates.mean(nonNilValues) }
}

extension LatticeCollection where Element: _OptionalValue, Element._Wrapped == Decimal {
    /// The mean of the non-nil values, or nil when there are none.
    public func average() -> Decimal? { ValueAggregates.mean(nonNilValues) }
}

// MARK: Maps (their values)

extension Map where Value: Comparable {
    /// The smallest value, or nil when the map is empty.
    public func min() -> Value? { values.min() }
    /// The largest value, or nil when the map is empty.
    public func max() -> Value? { values.max() }
}

extension Map where Value: AdditiveArithmetic {
    /// The sum of the values (0 when empty).
    public func sum() -> Value { values.reduce(.zero, +) }
}

extension Map where Value: BinaryInteger {
    /// The mean of the values, or nil when empty.
    public func average() -> Double? { ValueAggregates.mean(values) }
}

extension Map where Value: BinaryFloatingPoint {
    /// The mean of the values, or nil when empty.
    public func average() -> Double? { ValueAggregates.mean(values) }
}

extension Map where Value == Decimal {
    /// The mean of the values, or nil when empty.
    public func average() -> Decimal? { ValueAggregates.mean(values) }
}

extension Map where Value: _OptionalValue {
    /// The non-nil values.
    var nonNilValues: [Value._Wrapped] { values.compactMap(\._wrappedValue) }
}

extension Map where Value: _OptionalValue, Value._Wrapped: Comparable {
    /// The smallest non-nil value, or nil when there is none.
    public func min() -> Value._Wrapped? { nonNilValues.min() }
    /// The largest non-nil value, or nil when there is none.
    public func max() -> Value._Wrapped? { nonNilValues.max() }
}

extension Map where Value: _OptionalValue, Value._Wrapped: AdditiveArithmetic {
    /// The sum of the non-nil values (0 when there are none).
    public func sum() -> Value._Wrapped { nonNilValues.reduce(.zero, +) }
}

extension Map where Value: _OptionalValue, Value._Wrapped: BinaryInteger {
    /// The mean of the non-nil values, or nil when there are none.
    public func average() -> Double? { ValueAggregates.mean(nonNilValues) }
}

extension Map where Value: _OptionalValue, Value._Wrapped: BinaryFloatingPoint {
    /// The mean of the non-nil values, or nil when there are none.
    public func average() -> Double? { ValueAggregates.mean(nonNilValues) }
}

extension Map where Value: _OptionalValue, Value._Wrapped == Decimal {
    /// The mean of the non-nil values, or nil when there are none.
    public func average() -> Decimal? { ValueAggregates.mean(nonNilValues) }
}
