// Realm's names for what the schema types hold under other names.

extension Property {
    /// Whether the property is a ``List`` (Realm's `isArray`).
    public var isArray: Bool { collection == .list }
    /// Whether the property is a ``MutableSet``.
    public var isSet: Bool { collection == .set }
    /// Whether the property is a ``Map``.
    public var isMap: Bool { collection == .map }
}

extension Schema {
    /// ``objectSchemas`` (Realm's name).
    public var objectSchema: [ObjectSchema] { objectSchemas }
}
