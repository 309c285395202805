extension Results {
    // Results read the aggregated property straight from the records, decoding nothing else; the
    // arithmetic is shared with the other collections (`Aggregation`).

    /// The smallest non-nil value of a number or Date property, or nil when there is none.
    ///
    /// ```swift
    /// let youngest: Int? = try dogs.min(ofProperty: "age")
    /// ```
    /// Throws ``LatticeError/unknownProperty(className:property:)`` for an unknown property,
    /// ``LatticeError/wrongType(className:property:expected:found:)`` for a property that is not a number
    /// or Date, and ``LatticeError/invalidQuery(message:)`` for a result type the value cannot be converted to.
    ///
    /// Over all objects of a class, an indexed property's (or an integer primary key's) smallest value
    /// is read at an end of its index, without reading every object.
    public func min<T: _Persistable>(ofProperty property: String) throws -> T? {
        let (t, values) = try aggregateValues(property, allowDates: true, extreme: .some(true))
        return try Aggregation.extreme(values, t, smallest: true, "min(ofProperty:)")
    }

    /// The largest non-nil value of a number or Date property, or nil when there is none; from an end of
    /// the index as ``min(ofProperty:)``.
    public func max<T: _Persistable>(ofProperty property: String) throws -> T? {
        let (t, values) = try aggregateValues(property, allowDates: true, extreme: .some(false))
        return try Aggregation.extreme(values, t, smallest: false, "max(ofProperty:)")
    }

    /// The sum of the non-nil values of a number property (0 when there are none).
    public func sum<T: _Persistable>(ofProperty property: String) throws -> T {
        let (t, values) = try aggregateValues(property, allowDates: false, extreme: nil)
        return try Aggregation.sum(values, t)
    }

    /// The mean of the non-nil values of a number property, or nil when there are none. Integer
    /// properties average as Double (asked for as an integer type, rounded toward zero, as Realm's);
    /// Decimal properties as Decimal.
    public func average<T: _Persistable>(ofProperty property: String) throws -> T? {
        let (t, values) = try aggregateValues(property, allowDates: false, extreme: nil)
        return try Aggregation.average(values, t)
    }

    /// The property and its non-nil values over the results. For a smallest (`extreme` true) or largest
    /// value over a whole class (sorted or not), the value of the one object at that end of the index
    /// when the index tells.
    private func aggregateValues(_ name: String, allowDates: Bool, extreme smallest: Bool?) throws -> (Aggregation.Target, [ScalarValue]) {
        guard let info else { throw LatticeError.classNotInSchema(className: "\(Element.self)") }
        let property = info.property(named: name)
        let t = try Aggregation.target(className: info.name, property: name, property?.property, allowDates: allowDates)
        guard let property, let column = ScalarColumn(property) else { return (t, []) }
        let path = ResolvedPath(hops: [], end: .scalar(column), endClass: info, text: name)
        return try lattice.synchronized {
            let txn = try lattice.readTransaction()
            var keys: [Int64]?
            if let smallest, case .all = source, query.bound == nil, !query.ops.contains(where: \.isDistinct),
               let end = try ResultsOrdering.indexEnd(info, column, low: smallest, lastOfTies: false, skippingNil: true, txn) {
                keys = end.map { [$0] } ?? []
            }
            let values = try ResultsOrdering.load(keys ?? unsortedKeys(info, txn), [path], info, lattice, txn)
            return (t, values.filter { $0 != .null })
        }
    }
}
