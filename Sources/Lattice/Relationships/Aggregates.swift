import Foundation

/// A numeric or date property value, read for an aggregate.
private enum AggregateValue {
    case integer(Int64)
    case floating(Double)
    case decimal(Decimal)
    case date(Date)

    init?(_ value: Any) {
        switch value {
        case let v as Int: self = .integer(Int64(v))
        case let v as Int8: self = .integer(Int64(v))
        case let v as Int16: self = .integer(Int64(v))
        case let v as Int32: self = .integer(Int64(v))
        case let v as Int64: self = .integer(v)
        case let v as Float: self = .floating(Double(v))
        case let v as Double: self = .floating(v)
        case let v as Decimal: self = .decimal(v)
        case let v as Date: self = .date(v)
        default: return nil
        }
    }

    var asAny: Any {
        switch self {
        case let .integer(v): return v
        case let .floating(v): return v
        case let .decimal(v): return v
        case let .date(v): return v
        }
    }

    var asDouble: Double {
        switch self {
        case let .integer(v): return Double(v)
        case let .floating(v): return v
        case let .decimal(v): return NSDecimalNumber(decimal: v).doubleValue
        case let .date(v): return v.timeIntervalSinceReferenceDate
        }
    }

    static func < (a: AggregateValue, b: AggregateValue) -> Bool {
        switch (a, b) {
        case let (.integer(x), .integer(y)): return x < y
        case let (.decimal(x), .decimal(y)): return x < y
        case let (.date(x), .date(y)): return x < y
        default: return a.asDouble < b.asDouble
        }
    }

    static func + (a: AggregateValue, b: AggregateValue) -> AggregateValue {
        switch (a, b) {
        case let (.integer(x), .integer(y)): return .integer(x &+ y)
        case let (.decimal(x), .decimal(y)): return .decimal(x + y)
        default: return .floating(a.asDouble + b.asDouble)
        }
    }
}

/// Aggregates over a property of the objects of a collection (FEATURES R6).
enum Aggregates {
    enum Kind { case min, max, sum, average }

    /// The non-nil values of `property`, after checking that it suits `kind`.
    private static func values<S: Sequence>(_ objects: S, _ property: String, _ kind: Kind) throws -> [AggregateValue] where S.Element: Object {
        let metadata = try ModelMetadata.of(S.Element.self)
        let className = metadata.schema.className
        guard let p = metadata.schema[property] else { throw LatticeError.unknownProperty(className: className, property: property) }
        let numeric: Set<PropertyType> = [.int, .int8, .int16, .int32, .int64, .float, .double, .decimal]
        let allowed = (kind == .min || kind == .max) ? numeric.union([.date]) : numeric
        guard p.collection == nil, allowed.contains(p.type) else {
            throw LatticeError.wrongType(className: className, property: property,
                                         expected: kind == .min || kind == .max ? "a number or a date" : "a number",
                                         found: p.description)
        }
        return objects.compactMap { $0.value(ofProperty: property).flatMap(AggregateValue.init) }
    }

    static func extreme<S: Sequence, T: _Persistable>(_ objects: S, _ property: String, _ kind: Kind) throws -> T? where S.Element: Object {
        let all = try values(objects, property, kind)
        let best = kind == .min ? all.min(by: <) : all.max(by: <)
        return best.flatMap { T._latticeCast($0.asAny) }
    }

    static func sum<S: Sequence, T: _Persistable>(_ objects: S, _ property: String) throws -> T where S.Element: Object {
        let total = try values(objects, property, .sum).reduce(AggregateValue.integer(0), +)
        guard let result = T._latticeCast(total.asAny) else {
            throw LatticeError.wrongType(className: "\(S.Element.self)", property: property, expected: "\(type(of: total.asAny))", found: "\(T.self)")
        }
        return result
    }

    static func average<S: Sequence>(_ objects: S, _ property: String) throws -> Double? where S.Element: Object {
        let all = try values(objects, property, .average)
        return all.isEmpty ? nil : all.reduce(0) { $0 + $1.asDouble } / Double(all.count)
    }
}

extension LatticeCollection where Element: Object {
    /// The smallest value of a numeric or date property (nil values skipped; nil when empty).
    public func min<T: _Persistable>(ofProperty property: String) throws -> T? { try Aggregates.extreme(self, property, .min) }
    /// The largest value of a numeric or date property (nil values skipped; nil when empty).
    public func max<T: _Persistable>(ofProperty property: String) throws -> T? { try Aggregates.extreme(self, property, .max) }
    /// The sum of a numeric property (0 when empty).
    public func sum<T: _Persistable>(ofProperty property: String) throws -> T { try Aggregates.sum(self, property) }
    /// The mean of a numeric property (nil when empty).
    public func average(ofProperty property: String) throws -> Double? { try Aggregates.average(self, property) }
}

extension LatticeCollection where Element: AdditiveArithmetic {
    /// The sum of the values.
    public func sum() -> Element { reduce(.zero, +) }
}

extension LatticeCollection where Element: BinaryInteger {
    /// The mean of the values (nil when empty).
    public func average() -> Double? {
        let all = Array(self)
        return all.isEmpty ? nil : Double(all.reduce(0) { $0 + Int64($1) }) / Double(all.count)
    }
}

extension LatticeCollection where Element: BinaryFloatingPoint {
    /// The mean of the values (nil when empty).
    public func average() -> Double? {
        let all = Array(self)
        return all.isEmpty ? nil : all.reduce(0.0) { $0 + Double($1) } / Double(all.count)
    }
}

extension Object {
    /// The value of a persisted property by name (nil for an unknown name or an empty optional).
    public func value(ofProperty name: String) -> Any? {
        if let info = _info {
            return info.property(named: name).flatMap { value(of: $0) }
        }
        guard let metadata = try? ModelMetadata.of(type(of: self)),
              let index = metadata.schema.properties.firstIndex(where: { $0.name == name }) else { return nil }
        let field = metadata.fields[index]
        return field.accessor.value(at: UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()) + field.offset)
    }
}
