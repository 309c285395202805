import Foundation

extension Results {
    /// The smallest non-nil value of a number or Date property, or nil when there is none (FEATURES R6).
    ///
    /// ```swift
    /// let youngest: Int? = try dogs.min(ofProperty: "age")
    /// ```
    /// Throws ``LatticeError/unknownProperty(className:property:)`` for an unknown property,
    /// ``LatticeError/wrongType(className:property:expected:found:)`` for a property that is not a number
    /// or Date, and ``LatticeError/invalidQuery(message:)`` for a result type the value cannot be converted to.
    public func min<T: _Persistable>(ofProperty property: String) throws -> T? {
        try extreme(property, "min(ofProperty:)") { $0 < 0 }
    }

    /// The largest non-nil value of a number or Date property, or nil when there is none.
    public func max<T: _Persistable>(ofProperty property: String) throws -> T? {
        try extreme(property, "max(ofProperty:)") { $0 > 0 }
    }

    /// The sum of the non-nil values of a number property (0 when there are none).
    public func sum<T: _Persistable>(ofProperty property: String) throws -> T {
        let (p, values) = try aggregateValues(property, allowDates: false)
        return try cast(sum(values, p).swiftValue(p.kind), p, "sum(ofProperty:)")
    }

    /// The mean of the non-nil values of a number property, or nil when there are none. Integer
    /// properties average as Double; Decimal properties as Decimal.
    public func average<T: _Persistable>(ofProperty property: String) throws -> T? {
        let (p, values) = try aggregateValues(property, allowDates: false)
        if values.isEmpty { return nil }
        let total = try sum(values, p)
        let mean: ScalarValue
        switch total {
        case let .int(i): mean = .double(Double(i) / Double(values.count))
        case let .double(d): mean = .double(d / Double(values.count))
        case let .decimal(d): mean = .decimal(d / Decimal(values.count))
        default: mean = .null
        }
        let value: Any? = if case let .decimal(d) = mean { d } else if case let .double(d) = mean { d } else { nil }
        return try cast(value, p, "average(ofProperty:)")
    }

    private func extreme<T: _Persistable>(_ property: String, _ what: String, _ better: (Int) -> Bool) throws -> T? {
        let (p, values) = try aggregateValues(property, allowDates: true)
        guard var best = values.first else { return nil }
        for v in values.dropFirst() where better(ScalarValue.compare(v, best)) { best = v }
        return try cast(best.swiftValue(p.kind), p, what)
    }

    private func sum(_ values: [ScalarValue], _ p: ScalarColumn) throws -> ScalarValue {
        switch p.kind {
        case .decimal: return .decimal(values.reduce(Decimal(0)) { $0 + $1.decimalValue })
        case .float, .double: return .double(values.reduce(0.0) { if case let .double(d) = $1 { return $0 + d } else { return $0 } })
        default:
            var total: Int64 = 0
            for case let .int(i) in values {
                let (r, overflow) = total.addingReportingOverflow(i)
                if overflow { throw LatticeError.invalidQuery(message: "the sum of '\(p.name)' overflows Int64.") }
                total = r
            }
            return .int(total)
        }
    }

    private func cast<T: _Persistable>(_ value: Any?, _ p: ScalarColumn, _ what: String) throws -> T {
        let converted: T?
        if let value {
            converted = T._latticeCast(value)
        } else {
            converted = T._latticeCast(Optional<Int>.none as Any)
        }
        guard let converted else {
            throw LatticeError.invalidQuery(message: "\(what) of '\(info?.name ?? "").\(p.name)' (\(p.property.property.type)) "
                + "is \(value.map { "\($0)" } ?? "nil"), which cannot be returned as \(T.self).")
        }
        return converted
    }

    /// The property and its non-nil values over the results.
    private func aggregateValues(_ name: String, allowDates: Bool) throws -> (ScalarColumn, [ScalarValue]) {
        guard let info else { throw LatticeError.classNotInSchema(className: "\(Element.self)") }
        guard let property = info.property(named: name) else { throw LatticeError.unknownProperty(className: info.name, property: name) }
        guard let p = ScalarColumn(property), p.kind.isNumber || (allowDates && p.kind == .date) else {
            throw LatticeError.wrongType(className: info.name, property: name, expected: allowDates ? "a number or a date" : "a number",
                                         found: property.property.description)
        }
        let keys = keys()
        let txn = try lattice.readTransaction()
        var values: [ScalarValue] = []
        values.reserveCapacity(keys.count)
        for key in keys {
            let v = try KeyCodec.withObjectKey(key) { k in
                try txn.get(info.objectsDBI, k) { ScalarValue.decode($0.flatMap(RecordView.init)?.payload(p.column), p) }
            }
            if v != .null { values.append(v) }
        }
        return (p, values)
    }
}
