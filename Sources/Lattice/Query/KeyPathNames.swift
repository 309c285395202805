/// Names of the persisted properties that Swift key paths read, for the key-path forms of `sorted`,
/// `distinct`, the aggregates and `observe(keyPaths:)`.
extension KeyPathResolver {
    /// The resolver of `Root` in `lattice`, or a typed error when the class is not in its schema.
    static func of(_ lattice: Lattice) throws -> KeyPathResolver {
        guard let info = lattice.classInfo(Root.self) else { throw LatticeError.classNotInSchema(className: "\(Root.self)") }
        return KeyPathResolver(lattice: lattice, info: info)
    }

    /// The property a key path of any value type reads: a List, MutableSet, Map or LinkingObjects
    /// (which know their property), a to-one link, or a single value. Throws for a key path that reads
    /// no persisted property of `Root` itself (a computed property, or a path through a link).
    func name(ofAny keyPath: PartialKeyPath<Root>) throws -> String {
        try remembered(keyPath) {
            if let name = collectionName(reading: { $0[keyPath: keyPath] }) { return name }
            if let valueType = type(of: keyPath).valueType as? any _Persistable.Type,
               let name = scalarName(valueType, keyPath) {
                return name
            }
            // Only a key path to a link is read with links set: one going on into the linked object would
            // read a stored object that may not exist.
            if type(of: keyPath).valueType is any OptionalObject.Type,
               let name = linkName(among: info.columns.filter(\.isLink), isSet: { ($0[keyPath: keyPath] as? Object) != nil }) {
                return name
            }
            if let name = linkedName(keyPath) { return name }
            throw LatticeError.invalidQuery(message: "The key path \(keyPath) does not read a @Persisted property of '\(info.name)' "
                + "or of an object its to-one links reach (a path through a collection needs the string form).")
        }
    }

    /// The name (`"owner.name"`) of a key path through up to three to-one links (`\.owner?.name`), to a
    /// single value, found by reading it on unmanaged probes, which touch no stored object: each link on
    /// the way set to a new object of its class, and one property at the end set to a value other than
    /// its default.
    private func linkedName(_ keyPath: PartialKeyPath<Root>) -> String? {
        var chains: [[PropertyInfo]] = info.columns.filter(\.isLink).map { [$0] }
        for _ in 0..<3 where !chains.isEmpty {
            for chain in chains {
                guard let end = chain.last?.target else { continue }
                for p in end.columns where !p.isLink && p.property.collection == nil && ScalarKind(p) != nil {
                    if reads(keyPath, through: chain, p) { return (chain + [p]).map(\.name).joined(separator: ".") }
                }
            }
            chains = chains.flatMap { chain in (chain.last?.target?.columns.filter(\.isLink) ?? []).map { chain + [$0] } }
        }
        return nil
    }

    /// Whether `keyPath` reads property `p` of the object the links `chain` reach: set to a value other
    /// than what the probe holds there (the class's declared default), the key path reads that value.
    private func reads(_ keyPath: PartialKeyPath<Root>, through chain: [PropertyInfo], _ p: PropertyInfo) -> Bool {
        func read(_ value: Any?) -> [UInt8]? {
            let root = Root()
            var holder: Object = root
            for link in chain {
                guard let next = link.target?.type.init() else { return nil }
                guard (try? holder.setValue(next, forProperty: link.name)) != nil else { return nil }
                holder = next
            }
            if let value { guard (try? holder.setValue(value, forProperty: p.name)) != nil else { return nil } }
            var out: [UInt8] = []
            return p.valueType.encodeAny(root[keyPath: keyPath], into: &out) ? out : nil
        }
        let unmarked = read(nil)
        for marked in Self.markValues(p.valueType) {
            var expected: [UInt8] = []
            guard p.valueType.encodeAny(marked, into: &expected), expected != unmarked else { continue }
            return read(marked) == expected
        }
        return false
    }

    /// The values of `type` that `scalarName` marks columns with, as `Any`.
    private static func markValues<V: _Persistable>(_ type: V.Type) -> [Any] {
        markPayloads(V.self).compactMap { payload in payload.withUnsafeBytes { V._latticeDecode($0) }._latticeAnyValue }
    }

    /// The single-value property a key path reads, its value type opened from `valueType`.
    private func scalarName<V: _Persistable>(_ valueType: V.Type, _ keyPath: PartialKeyPath<Root>) -> String? {
        (keyPath as? KeyPath<Root, V>).flatMap { scalarName(of: $0) }
    }

    /// The names of the properties `keyPaths` read (see ``name(ofAny:)``).
    func names(_ keyPaths: [PartialKeyPath<Root>]) throws -> [String] {
        try keyPaths.map { try name(ofAny: $0) }
    }
}

/// `T?` for a model class `T`: the value type of a key path to a to-one link.
private protocol OptionalObject {}
extension Optional: OptionalObject where Wrapped: Object {}
