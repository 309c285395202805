// Realm's names for what the schema types hold under other names.

extension Property {
    /// Whether the property is a ``List`` (Realm's `isArray`).
    public var isArray: Bool { collection == .list }
    /// Whether the property is a ``MutableSet``.
    public var isSet: Bool { collection == .set }
    /// Whether the property is a ``Map``.
    public var isMap: Bool { collection == .map }
    /// ``isPrimaryKey`` (Realm's `isPrimary`).
    public var isPrimary: Bool { isPrimaryKey }
}

extension PropertyType {
    /// ``uuid`` (Realm's spelling).
    public static var UUID: PropertyType { .uuid }
    /// ``decimal``: Lattice stores Foundation's `Decimal` where Realm has its `Decimal128`.
    public static var decimal128: PropertyType { .decimal }
}

extension Schema {
    /// ``objectSchemas`` (Realm's name).
    public var objectSchema: [ObjectSchema] { objectSchemas }
}
