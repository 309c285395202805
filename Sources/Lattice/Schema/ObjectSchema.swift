/// A persisted property as the schema sees it.
public struct Property: Sendable, Equatable, Codable, CustomStringConvertible {
    /// The property name.
    public let name: String
    /// The storage type.
    public let type: PropertyType
    /// Whether nil is allowed.
    public let isOptional: Bool
    /// Whether a secondary index is kept (always true for the primary key).
    public let isIndexed: Bool
    /// Whether this is the class's primary key.
    public let isPrimaryKey: Bool

    /// Creates a property description.
    public init(name: String, type: PropertyType, isOptional: Bool = false, isIndexed: Bool = false, isPrimaryKey: Bool = false) {
        self.name = name
        self.type = type
        self.isOptional = isOptional
        self.isIndexed = isIndexed || isPrimaryKey
        self.isPrimaryKey = isPrimaryKey
    }

    /// For example `age: Int (indexed)`.
    public var description: String {
        var flags: [String] = []
        if isPrimaryKey { flags.append("primary key") } else if isIndexed { flags.append("indexed") }
        return "\(name): \(type)\(isOptional ? "?" : "")" + (flags.isEmpty ? "" : " (\(flags.joined(separator: ", ")))")
    }
}

/// The persisted shape of one model class.
public struct ObjectSchema: Sendable, Equatable, Codable, CustomStringConvertible {
    /// The class name (the Swift type name).
    public let className: String
    /// The persisted properties, in storage (column) order.
    public let properties: [Property]

    /// Creates a class description.
    public init(className: String, properties: [Property]) {
        self.className = className
        self.properties = properties
    }

    /// The primary key property, if any.
    public var primaryKeyProperty: Property? { properties.first { $0.isPrimaryKey } }

    /// The property named `name`.
    public subscript(name: String) -> Property? { properties.first { $0.name == name } }

    /// For example `Dog { id: UUID (primary key); name: String }`.
    public var description: String {
        "\(className) { " + properties.map(\.description).joined(separator: "; ") + " }"
    }

    static let maxClassNameBytes = 57
    static let maxPropertyNameBytes = 63

    /// Checks the limits and rules of FEATURES M3, M4 and M8.
    func validate() throws {
        func fail(_ reason: String) -> LatticeError { .invalidSchema(className: className, reason: reason) }
        if className.isEmpty || className.utf8.count > ObjectSchema.maxClassNameBytes {
            throw fail("class names must be 1 to \(ObjectSchema.maxClassNameBytes) bytes long.")
        }
        if properties.filter(\.isPrimaryKey).count > 1 {
            throw fail("only one property can be the primary key; found "
                + properties.filter(\.isPrimaryKey).map { "'\($0.name)'" }.joined(separator: ", ") + ".")
        }
        var seen = Set<String>()
        for p in properties {
            if p.name.isEmpty || p.name.utf8.count > ObjectSchema.maxPropertyNameBytes {
                throw fail("property name '\(p.name)' must be 1 to \(ObjectSchema.maxPropertyNameBytes) bytes long.")
            }
            if !seen.insert(p.name).inserted { throw fail("property '\(p.name)' is declared twice.") }
            if p.isPrimaryKey && !p.type.canBePrimaryKey {
                throw fail("property '\(p.name)' of type \(p.type) cannot be a primary key "
                    + "(allowed: Int types, String, UUID, ObjectId and their optionals).")
            }
            if p.isIndexed && !p.isPrimaryKey && !p.type.canBeIndexed {
                throw fail("property '\(p.name)' of type \(p.type) cannot be indexed "
                    + "(allowed: Bool, Int types, String, Date, UUID, ObjectId and their optionals).")
            }
        }
    }
}

/// The schema of a database: its object classes.
public struct Schema: Sendable, Equatable, Codable, CustomStringConvertible {
    /// The classes, sorted by name.
    public let objectSchemas: [ObjectSchema]

    /// Creates a schema; classes are kept sorted by name.
    public init(_ objectSchemas: [ObjectSchema]) {
        self.objectSchemas = objectSchemas.sorted { $0.className < $1.className }
    }

    /// The class named `className`.
    public subscript(className: String) -> ObjectSchema? { objectSchemas.first { $0.className == className } }

    /// One class a line.
    public var description: String { objectSchemas.map(\.description).joined(separator: "\n") }

    /// Every difference between the schema stored in a file (`self`) and `new`, as Realm words them.
    /// Property order is not a difference: columns keep their stored positions.
    func differences(to new: Schema) -> [String] {
        var out: [String] = []
        for old in objectSchemas where new[old.className] == nil {
            out.append("Class '\(old.className)' has been removed.")
        }
        for cls in new.objectSchemas {
            guard let old = self[cls.className] else {
                out.append("Class '\(cls.className)' has been added.")
                continue
            }
            let name = cls.className
            for p in old.properties where cls[p.name] == nil {
                out.append("Property '\(name).\(p.name)' has been removed.")
            }
            for p in cls.properties {
                guard let o = old[p.name] else {
                    out.append("Property '\(name).\(p.name)' has been added.")
                    continue
                }
                if o.type != p.type {
                    out.append("Property '\(name).\(p.name)' has been changed from '\(o.type)' to '\(p.type)'.")
                }
                if o.isOptional != p.isOptional {
                    out.append("Property '\(name).\(p.name)' has been made \(p.isOptional ? "optional" : "required").")
                }
                if o.isPrimaryKey != p.isPrimaryKey {
                    out.append(p.isPrimaryKey
                        ? "Property '\(name).\(p.name)' has been made a primary key."
                        : "Primary key property '\(name).\(p.name)' has been removed.")
                } else if o.isIndexed != p.isIndexed {
                    out.append(p.isIndexed
                        ? "Property '\(name).\(p.name)' has been made indexed."
                        : "Property '\(name).\(p.name)' has been made unindexed.")
                }
            }
        }
        return out
    }
}
