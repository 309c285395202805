import Foundation

/// Aggregates over one property of a collection's objects: one engine for ``Results``
/// (fed from record payloads) and the other collections (fed from the objects).
enum Aggregation {
    /// The aggregated property, checked to suit the aggregate.
    struct Target {
        let className: String
        let property: String
        let kind: ScalarKind
        let type: PropertyType
    }

    static func target(className: String, property name: String, _ property: Property?, allowDates: Bool) throws -> Target {
        guard let property else { throw LatticeError.unknownProperty(className: className, property: name) }
        guard let kind = ScalarKind(property), kind.isNumber || (allowDates && kind == .date) else {
            throw LatticeError.wrongType(className: className, property: name, expected: allowDates ? "a number or a date" : "a number",
                                         found: property.description)
        }
        return Target(className: className, property: name, kind: kind, type: property.type)
    }

    /// NaN is skipped, as by `max` (nothing compares with it, so it is neither the smallest nor the largest).
    static func extreme<T: _Persistable>(_ values: [ScalarValue], _ t: Target, smallest: Bool, _ what: String) throws -> T? {
        guard let best = extreme(values, smallest: smallest) else { return nil }
        return try cast(best.swiftValue(t.kind), t, what)
    }

    static func extreme(_ values: [ScalarValue], smallest: Bool) -> ScalarValue? {
        var best: ScalarValue?
        for v in values {
            if case let .double(d) = v, d.isNaN { continue }
            guard let current = best else { best = v; continue }
            // Numbers and dates (one kind per property) compared directly; other values as sorting does.
            let better: Bool
            switch (v, current) {
            case let (.int(x), .int(y)): better = smallest ? x < y : x > y
            case let (.double(x), .double(y)): better = smallest ? x < y : x > y
            default: better = ScalarValue.compare(v, current) * (smallest ? -1 : 1) > 0
            }
            if better { best = v }
        }
        return best
    }

    static func sum<T: _Persistable>(_ values: [ScalarValue], _ t: Target) throws -> T {
        try cast(total(values, t).swiftValue(t.kind), t, "sum(ofProperty:)")
    }

    /// Integer properties average as Double, or, asked for as an integer type, as an integer rounded
    /// toward zero (as Realm's does); Decimal properties as Decimal.
    static func average<T: _Persistable>(_ values: [ScalarValue], _ t: Target) throws -> T? {
        if values.isEmpty { return nil }
        let mean: Any?
        switch try total(values, t) {
        case let .int(i):
            mean = isInteger(T.self) ? i / Int64(values.count) as Any : Double(i) / Double(values.count) as Any
        case let .double(d): mean = d / Double(values.count)
        case let .decimal(d): mean = d / Decimal(values.count)
        default: mean = nil
        }
        return try cast(mean, t, "average(ofProperty:)")
    }

    /// Whether `type` is an integer type or an optional one (`Int?` from a key path to an optional).
    private static func isInteger(_ type: Any.Type) -> Bool {
        func wrapped<O: _OptionalValue>(_: O.Type) -> Bool { isInteger(O._Wrapped.self) }
        if let optional = type as? any _OptionalValue.Type { return wrapped(optional) }
        return type is any BinaryInteger.Type
    }

    static func total(_ values: [ScalarValue], _ t: Target) throws -> ScalarValue {
        switch t.kind {
        case .decimal: return .decimal(values.reduce(Decimal(0)) { $0 + $1.decimalValue })
        case .float, .double: return .double(values.reduce(0.0) { if case let .double(d) = $1 { return $0 + d } else { return $0 } })
        default:
            var total: Int64 = 0
            for case let .int(i) in values {
                let (r, overflow) = total.addingReportingOverflow(i)
                if overflow { throw LatticeError.invalidQuery(message: "the sum of '\(t.className).\(t.property)' overflows Int64.") }
                total = r
            }
            return .int(total)
        }
    }

    private static func cast<T: _Persistable>(_ value: Any?, _ t: Target, _ what: String) throws -> T {
        guard let converted = T._latticeCast(value ?? (Optional<Int>.none as Any)) else {
            throw LatticeError.invalidQuery(message: "\(what) of '\(t.className).\(t.property)' (\(t.type)) "
                + "is \(value.map(safeDescription) ?? "nil"), which cannot be returned as \(T.self).")
        }
        return converted
    }

    /// The non-nil values of the target property of `objects` (managed or not).
    static func values<S: Sequence>(_ objects: S, _ t: Target) -> [ScalarValue] where S.Element: Object {
        objects.compactMap { scalar($0.value(ofProperty: t.property)) }
    }

    /// The target and the non-nil values of what `keyPath` reads in `objects` at hand (an unmanaged
    /// collection, where no schema names the property).
    static func values<S: Sequence, V: _Persistable>(_ objects: S, _ keyPath: KeyPath<S.Element, V>,
                                                     allowDates: Bool) throws -> (Target, [ScalarValue]) where S.Element: Object {
        let className = "\(S.Element.self)", property = "\(keyPath)"
        guard let kind = ScalarKind(type: V._latticeType), kind.isNumber || (allowDates && kind == .date) else {
            throw LatticeError.wrongType(className: className, property: property, expected: allowDates ? "a number or a date" : "a number",
                                         found: "\(V.self)")
        }
        let t = Target(className: className, property: property, kind: kind, type: V._latticeType)
        return (t, objects.compactMap { scalar($0[keyPath: keyPath]._latticeAnyValue) })
    }

    private static func scalar(_ value: Any?) -> ScalarValue? {
        switch value {
        case let v as Bool: return .int(v ? 1 : 0)
        case let v as Date: return .double(v.timeIntervalSinceReferenceDate)
        case let v as Decimal: return .decimal(v)
        case let v as Float: return .double(Double(v))
        case let v as Double: return .double(v)
        case let v?:
            if let i = Int64._latticeCast(v) { return .int(i) }
            // A custom type counts as its persisted value.
            return v is any _CustomPersistableBase ? scalar(persistedValue(v)) : nil
        case nil: return nil
        }
    }
}

/// `min`/`max`/`sum`/`average(ofProperty:)` over objects at hand (unmanaged collections, a map's
/// objects, managed Lists and sets), each object's property read one at a time.
enum ObjectAggregates {
    private static func target(_ type: Object.Type, _ name: String, allowDates: Bool) throws -> Aggregation.Target {
        let schema = try ModelMetadata.of(type).schema
        return try Aggregation.target(className: schema.className, property: name, schema[name], allowDates: allowDates)
    }

    static func min<S: Sequence, T: _Persistable>(_ objects: S, _ type: Object.Type, _ property: String) throws -> T? where S.Element: Object {
        let t = try target(type, property, allowDates: true)
        return try Aggregation.extreme(Aggregation.values(objects, t), t, smallest: true, "min(ofProperty:)")
    }

    static func max<S: Sequence, T: _Persistable>(_ objects: S, _ type: Object.Type, _ property: String) throws -> T? where S.Element: Object {
        let t = try target(type, property, allowDates: true)
        return try Aggregation.extreme(Aggregation.values(objects, t), t, smallest: false, "max(ofProperty:)")
    }

    static func sum<S: Sequence, T: _Persistable>(_ objects: S, _ type: Object.Type, _ property: String) throws -> T where S.Element: Object {
        let t = try target(type, property, allowDates: false)
        return try Aggregation.sum(Aggregation.values(objects, t), t)
    }

    static func average<S: Sequence, T: _Persistable>(_ objects: S, _ type: Object.Type, _ property: String) throws -> T? where S.Element: Object {
        let t = try target(type, property, allowDates: false)
        return try Aggregation.average(Aggregation.values(objects, t), t)
    }

    /// A collection operator of key-value coding over `property` (`@min`, `@max`, `@sum`, `@avg`), as
    /// Realm's `value(forKeyPath: "@max.age")`: integers as `Int`, averages of integers as `Double`; nil
    /// for `@min`, `@max` and `@avg` of no values.
    static func keyValueOperator<S: Sequence>(_ name: String, _ objects: S, _ type: Object.Type, _ property: String) throws -> Any?
    where S.Element: Object {
        let extreme = name == "@min" || name == "@max"
        guard extreme || name == "@sum" || name == "@avg" else {
            throw LatticeError.invalidQuery(message: "'\(name)' is not a collection operator of value(forKeyPath:) "
                + "(use @count, @min, @max, @sum or @avg).")
        }
        let t = try target(type, property, allowDates: extreme)
        let values = Aggregation.values(objects, t)
        if name == "@avg" {
            return t.kind == .decimal ? try Aggregation.average(values, t) as Decimal? : try Aggregation.average(values, t) as Double?
        }
        let result = name == "@sum" ? try Aggregation.total(values, t) : Aggregation.extreme(values, smallest: name == "@min")
        if case .int(let i)? = result, t.kind != .bool { return Int(i) }
        return result?.swiftValue(t.kind)
    }

    // The key-path forms over objects at hand (unmanaged collections, a map's objects), where no schema
    // names the property: the key path is read on each object.

    static func min<S: Sequence, V: _Persistable>(_ objects: S, _ keyPath: KeyPath<S.Element, V>) throws -> V? where S.Element: Object {
        let (t, values) = try Aggregation.values(objects, keyPath, allowDates: true)
        return try Aggregation.extreme(values, t, smallest: true, "min(of:)")
    }

    static func max<S: Sequence, V: _Persistable>(_ objects: S, _ keyPath: KeyPath<S.Element, V>) throws -> V? where S.Element: Object {
        let (t, values) = try Aggregation.values(objects, keyPath, allowDates: true)
        return try Aggregation.extreme(values, t, smallest: false, "max(of:)")
    }

    static func sum<S: Sequence, V: _Persistable>(_ objects: S, _ keyPath: KeyPath<S.Element, V>) throws -> V where S.Element: Object {
        let (t, values) = try Aggregation.values(objects, keyPath, allowDates: false)
        return try Aggregation.sum(values, t)
    }

    static func average<S: Sequence, V: _Persistable>(_ objects: S, _ keyPath: KeyPath<S.Element, V>) throws -> V? where S.Element: Object {
        let (t, values) = try Aggregation.values(objects, keyPath, allowDates: false)
        return try Aggregation.average(values, t)
    }
}

extension LatticeCollection where Element: Object {
    /// The smallest non-nil value of a number or Date property, or nil when there is none.
    public func min<T: _Persistable>(ofProperty property: String) throws -> T? {
        try ObjectAggregates.min(self, Element.self, property)
    }

    /// The largest non-nil value of a number or Date property, or nil when there is none.
    public func max<T: _Persistable>(ofProperty property: String) throws -> T? {
        try ObjectAggregates.max(self, Element.self, property)
    }

    /// The sum of the non-nil values of a number property (0 when there are none).
    public func sum<T: _Persistable>(ofProperty property: String) throws -> T {
        try ObjectAggregates.sum(self, Element.self, property)
    }

    /// The mean of the non-nil values of a number property, or nil when there are none: Double for
    /// integer and floating-point properties, Decimal for Decimal ones.
    public func average<T: _Persistable>(ofProperty property: String) throws -> T? {
        try ObjectAggregates.average(self, Element.self, property)
    }
}
