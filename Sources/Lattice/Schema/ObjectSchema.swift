/// The kind of collection a property holds.
public enum CollectionKind: String, Sendable, Codable {
    /// ``List``: ordered, duplicates allowed.
    case list
    /// ``MutableSet``: unique, unordered.
    case set
    /// ``Map``: string keys.
    case map
}

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
    /// The collection the property holds (`type` is then the element type), or nil.
    public let collection: CollectionKind?
    /// The linked class, for `.object` and `.linkingObjects` properties.
    public let objectClassName: String?
    /// For `.linkingObjects`: the property of ``objectClassName`` whose links are followed back.
    public let originProperty: String?
    /// The name the property was stored under before it was renamed (`@Persisted(originalName:)`): a
    /// migration keeps its values. Declared by models only; a file never stores it.
    public private(set) var originalName: String?

    private enum CodingKeys: String, CodingKey {
        case name, type, isOptional, isIndexed, isPrimaryKey, collection, objectClassName, originProperty
    }

    /// Creates a property description.
    public init(name: String, type: PropertyType, isOptional: Bool = false, isIndexed: Bool = false, isPrimaryKey: Bool = false,
                collection: CollectionKind? = nil, objectClassName: String? = nil, originProperty: String? = nil,
                originalName: String? = nil) {
        self.originalName = originalName
        self.name = name
        self.type = type
        self.isOptional = isOptional
        self.isIndexed = isIndexed || isPrimaryKey
        self.isPrimaryKey = isPrimaryKey
        self.collection = collection
        self.objectClassName = objectClassName
        self.originProperty = originProperty
    }

    /// Whether the property stores links to objects (to-one, or a collection of objects).
    var linksObjects: Bool { type == .object }

    /// For example `age: Int (indexed)`, `dogs: List<Dog>`, `walkers: LinkingObjects<Person>.dogs`.
    public var description: String {
        var flags: [String] = []
        if isPrimaryKey { flags.append("primary key") } else if isIndexed { flags.append("indexed") }
        return "\(name): \(typeName(withOptionality: true))" + (flags.isEmpty ? "" : " (\(flags.joined(separator: ", ")))")
    }

    /// The type as Swift spells it: `Int`, `String?`, `List<Dog>`, `Map<String, Double>`.
    func typeName(withOptionality: Bool) -> String {
        let element = (objectClassName ?? "\(type)") + (withOptionality && isOptional ? "?" : "")
        switch (collection, type) {
        case (.list?, _): return "List<\(element)>"
        case (.set?, _): return "MutableSet<\(element)>"
        case (.map?, _): return "Map<String, \(element)>"
        case (nil, .linkingObjects): return "LinkingObjects<\(objectClassName ?? "?")>.\(originProperty ?? "?")"
        default: return element
        }
    }
}

/// The persisted shape of one model class.
public struct ObjectSchema: Sendable, Equatable, Codable, CustomStringConvertible {
    /// The class name (the Swift type name).
    public let className: String
    /// Every property in storage (column) order, ``LinkingObjects`` properties included.
    public let allProperties: [Property]
    /// Whether objects of this class are embedded (``EmbeddedObject``): owned by one parent, never queried alone.
    public let isEmbedded: Bool
    /// The name the class was stored under before it was renamed (``Object/originalName``): a migration
    /// keeps its objects. Declared by models only; a file never stores it.
    public private(set) var originalName: String?

    /// Creates a class description.
    public init(className: String, properties: [Property], isEmbedded: Bool = false, originalName: String? = nil) {
        self.originalName = originalName
        self.className = className
        self.allProperties = properties
        self.isEmbedded = isEmbedded
    }

    private enum CodingKeys: String, CodingKey { case className, properties, isEmbedded }

    /// Stores ``allProperties`` under the key `properties`, as every file does.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(className, forKey: .className)
        try c.encode(allProperties, forKey: .properties)
        try c.encode(isEmbedded, forKey: .isEmbedded)
    }

    /// The stored properties, in storage order: every property but the ``LinkingObjects`` ones (Realm's
    /// `properties`).
    public var properties: [Property] { allProperties.filter { $0.type != .linkingObjects } }

    /// The ``LinkingObjects`` properties, computed from other classes' links (Realm's
    /// `computedProperties`).
    public var computedProperties: [Property] { allProperties.filter { $0.type == .linkingObjects } }

    /// Decodes a stored class (files written before embedded objects existed have no `isEmbedded`).
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        className = try c.decode(String.self, forKey: .className)
        allProperties = try c.decode([Property].self, forKey: .properties)
        isEmbedded = try c.decodeIfPresent(Bool.self, forKey: .isEmbedded) ?? false
    }

    /// The primary key property, if any.
    public var primaryKeyProperty: Property? { allProperties.first { $0.isPrimaryKey } }

    /// The property named `name` (stored or computed).
    public subscript(name: String) -> Property? { allProperties.first { $0.name == name } }

    /// For example `Dog { id: UUID (primary key); name: String }`.
    public var description: String {
        "\(className) { " + allProperties.map(\.description).joined(separator: "; ") + " }"
    }

    static let maxClassNameBytes = 57
    static let maxPropertyNameBytes = 63

    /// Checks the rules for primary keys, indexes, names and sizes.
    func validate() throws {
        func fail(_ reason: String) -> LatticeError { .invalidSchema(className: className, reason: reason) }
        if className.isEmpty || className.utf8.count > ObjectSchema.maxClassNameBytes {
            throw fail("class names must be 1 to \(ObjectSchema.maxClassNameBytes) bytes long.")
        }
        if allProperties.filter(\.isPrimaryKey).count > 1 {
            throw fail("only one property can be the primary key; found "
                + allProperties.filter(\.isPrimaryKey).map { "'\($0.name)'" }.joined(separator: ", ") + ".")
        }
        var seen = Set<String>()
        for p in allProperties {
            if p.name.isEmpty || p.name.utf8.count > ObjectSchema.maxPropertyNameBytes {
                throw fail("property name '\(p.name)' must be 1 to \(ObjectSchema.maxPropertyNameBytes) bytes long.")
            }
            if !seen.insert(p.name).inserted { throw fail("property '\(p.name)' is declared twice.") }
            if p.isPrimaryKey && !p.type.canBePrimaryKey {
                throw fail("property '\(p.name)' of type \(p.type) cannot be a primary key "
                    + "(allowed: Int types, String, UUID, ObjectId and their optionals).")
            }
            if p.isPrimaryKey && isEmbedded {
                throw fail("embedded objects cannot have a primary key ('\(p.name)').")
            }
            if p.type == .object && p.collection == nil && !p.isOptional {
                throw fail("to-one link '\(p.name)' must be optional (declare it as '\(p.objectClassName ?? "Object")?').")
            }
            if p.collection == .set && p.type == .object && p.isOptional {
                throw fail("MutableSet '\(p.name)' cannot hold optional objects.")
            }
            if p.isIndexed && !p.isPrimaryKey && (p.collection != nil || !p.type.canBeIndexed) {
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

    /// Checks what spans classes: link targets exist, linking objects name a real origin property,
    /// embedded classes are only linked to (never in sets), and link ids do not collide.
    func validateRelationships() throws {
        for cls in objectSchemas {
            func fail(_ reason: String) -> LatticeError { .invalidSchema(className: cls.className, reason: reason) }
            for p in cls.allProperties {
                guard let targetName = p.objectClassName else { continue }
                guard let target = self[targetName] else {
                    throw fail("property '\(p.name)' links to '\(targetName)', which is not in the schema (add it to objectTypes).")
                }
                if p.type == .linkingObjects {
                    guard let origin = p.originProperty, let op = target[origin], op.type == .object,
                          op.objectClassName == cls.className, op.collection != .map, op.collection != .set else {
                        throw fail("linking objects '\(p.name)' need '\(targetName).\(p.originProperty ?? "")' to be a link or "
                            + "List of '\(cls.className)'.")
                    }
                } else if target.isEmbedded && (p.collection == .set || p.collection == .map) {
                    throw fail("'\(p.name)' holds embedded objects of '\(targetName)' in a \(p.collection?.rawValue ?? "collection"); "
                        + "embedded objects live in to-one links and Lists only.")
                }
            }
        }
        var ids: [UInt32: String] = [:]
        for cls in objectSchemas {
            for p in cls.allProperties where p.type == .object {
                let name = "\(cls.className).\(p.name)"
                let hash = KeyCodec.fnv1a32(name)
                if let other = ids[hash] {
                    throw LatticeError.invalidSchema(className: cls.className, reason: "link ids of '\(name)' and '\(other)' collide; rename one.")
                }
                ids[hash] = name
            }
        }
    }

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
            if old.isEmbedded != cls.isEmbedded {
                out.append("Class '\(name)' has been made \(cls.isEmbedded ? "embedded" : "top-level").")
            }
            for p in old.allProperties where cls[p.name] == nil {
                out.append("Property '\(name).\(p.name)' has been removed.")
            }
            for p in cls.allProperties {
                guard let o = old[p.name] else {
                    out.append("Property '\(name).\(p.name)' has been added.")
                    continue
                }
                if o.type != p.type || o.collection != p.collection || o.objectClassName != p.objectClassName
                    || o.originProperty != p.originProperty {
                    out.append("Property '\(name).\(p.name)' has been changed from '\(o.typeName(withOptionality: false))' to "
                        + "'\(p.typeName(withOptionality: false))'.")
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
