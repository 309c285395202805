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
        throw LatticeError.invalidQuery(message: "The key path \(keyPath) does not read a @Persisted property of '\(info.name)' "
            + "(a path through a link or a collection needs the string form, for example \"owner.name\").")
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
