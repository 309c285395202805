extension Lattice {
    /// Creates (or with `update`, updates) an object from a dictionary of property values or an array
    /// of values in declaration order, and returns it managed.
    ///
    /// Missing dictionary keys take the property's initial value for a new object and leave an existing
    /// one unchanged (a partial update); nil clears an optional. A wrong type, nil for a required
    /// property, an unknown key or a short array throws.
    @discardableResult
    public func create<T: Object>(_ type: T.Type, value: Any = [String: Any](), update: UpdatePolicy = .error) throws -> T {
        let txn = try requireWrite("create(_:value:)")
        let info = try requireClass(type)
        if update != .error && info.primaryKey == nil {
            throw LatticeError.noPrimaryKey(className: info.name, operation: "create(_:value:update: .\(update))")
        }
        let values = try Lattice.namedValues(value, info.declared.map(\.property), className: info.name)
        if update != .error, let pk = info.primaryKey, let pkValue = values[pk.name] {
            var pkPayload: [UInt8] = []
            guard pk.valueType.encodeAny(pkValue, into: &pkPayload) else {
                throw Lattice.wrongType(info.name, pk.property, pk.valueType, pkValue)
            }
            if let found = try findObject(info, primaryKeyPayload: pkPayload) {
                var payloads: [Int: [UInt8]] = [:]
                for (name, v) in values {
                    guard let p = info.property(named: name) else { throw LatticeError.unknownProperty(className: info.name, property: name) }
                    var payload: [UInt8] = []
                    if isNilValue(v) && !p.property.isOptional { throw LatticeError.missingValue(className: info.name, property: name) }
                    guard p.valueType.encodeAny(v, into: &payload) else { throw Lattice.wrongType(info.name, p.property, p.valueType, v) }
                    try checkSize(info, p, size: payload.count)
                    payloads[p.column] = payload
                }
                let record = found.record.withBytes { replacing(RecordView($0), in: info, with: payloads) }
                try store(info, key: found.key, record: record, old: found.record, txn)
                return materialize(type, info, key: found.key, record: nil)
            }
        }
        let object = T()
        try Lattice.apply(values, to: object, className: info.name)
        try add(object)
        return object
    }

    // MARK: Dynamic values

    /// Property values keyed by name, from a dictionary or an array in declaration order.
    static func namedValues(_ value: Any, _ properties: [Property], className: String) throws -> [String: Any] {
        if let dictionary = value as? [String: Any] { return dictionary }
        if let array = value as? [Any] {
            if array.count < properties.count {
                throw LatticeError.missingValue(className: className, property: properties[array.count].name)
            }
            if array.count > properties.count {
                throw LatticeError.unknownProperty(className: className, property: "#\(properties.count) (the array has \(array.count) values)")
            }
            return Dictionary(uniqueKeysWithValues: zip(properties.map(\.name), array))
        }
        throw LatticeError.wrongType(className: className, property: "(value)", expected: "[String: Any] or [Any]",
                                     found: "\(type(of: value))")
    }

    /// Sets the values of an unmanaged object, checking every name and type first.
    static func apply(_ values: [String: Any], to object: Object, className: String) throws {
        let metadata = try ModelMetadata.of(type(of: object))
        let base = UnsafeMutableRawPointer(Unmanaged.passUnretained(object).toOpaque())
        let fields = Dictionary(uniqueKeysWithValues: zip(metadata.schema.properties.map(\.name), zip(metadata.schema.properties, metadata.fields)))
        for (name, value) in values {
            guard let (property, field) = fields[name] else { throw LatticeError.unknownProperty(className: className, property: name) }
            if isNilValue(value) && !property.isOptional { throw LatticeError.missingValue(className: className, property: name) }
            guard field.accessor.set(at: base + field.offset, value) else {
                throw wrongType(className, property, field.accessor.valueType, value)
            }
        }
    }

    /// The error for `value` given to property `p` of Swift type `valueType`. The expected type is the Swift
    /// one (`Color?` for an optional enum, not its raw value's `String?`), so the message says what was wrong.
    private static func wrongType(_ className: String, _ p: Property, _ valueType: any _Persistable.Type,
                                  _ value: Any) -> LatticeError {
        var expected = "\(valueType)"
        if expected.hasPrefix("Optional<") && expected.hasSuffix(">") { expected = expected.dropFirst(9).dropLast() + "?" }
        return .wrongType(className: className, property: p.name, expected: expected, found: "\(type(of: unwrapAny(value)))")
    }
}

extension Object {
    /// Creates an unmanaged object from a dictionary of property values or an array of values in
    /// declaration order (FEATURES M6). Throws on unknown names, wrong types and nil for required values.
    public convenience init(value: Any) throws {
        self.init()
        try fill(from: value)
    }

    /// Sets this unmanaged object's properties from a dictionary or a declaration-order array.
    final func fill(from value: Any) throws {
        let metadata = try ModelMetadata.of(type(of: self))
        let values = try Lattice.namedValues(value, metadata.schema.properties, className: metadata.schema.className)
        try Lattice.apply(values, to: self, className: metadata.schema.className)
    }
}
