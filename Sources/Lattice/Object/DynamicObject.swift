import Foundation

/// An object of a class known only from the schema stored in a file: no model class is compiled in.
///
/// Dynamic objects come from the dynamic API of any handle (``Lattice/dynamicObjects(_:)``,
/// ``Lattice/dynamicCreate(_:value:update:)``, ``Lattice/dynamicObject(ofType:forPrimaryKey:)``): of a
/// handle opened with ``Lattice/Configuration/dynamicSchema``, of one opened with model classes (the same
/// stored objects as the model objects, read by name), and of the handles a migration block works with,
/// where they are called ``MigrationObject``. Read and write properties by name with the subscript every
/// ``Object`` has:
///
/// ```swift
/// let lattice = try Lattice(configuration: .init(fileURL: url, dynamicSchema: true))
/// for exam in try lattice.dynamicObjects("Exam").filter("isMultipleChoice == false") {
///     print(exam["name"] as? String ?? "")
/// }
/// try lattice.write {
///     let exam = try lattice.dynamicCreate("Exam", value: ["name": "Algebra", "date": Date()])
///     exam["subject"] = try lattice.dynamicCreate("Subject", value: ["name": "Maths", "credits": 6])
/// }
/// ```
///
/// Values are their Swift types (`String?`, `Date`, ...), as a compiled model's properties would be,
/// except that an integer of any width (`Int8` ... `Int64`) reads as an `Int`, as by name on every
/// object and as in Realm (so
/// `old["age"] as! Int` works whatever the width); setting one takes any integer type whose value fits
/// the stored width (a value that does not fit is a ``LatticeError/wrongType(className:property:expected:found:)``).
/// A link is a `DynamicObject?`; a List, MutableSet or Map is a `List<DynamicObject>`,
/// `MutableSet<Int>`, `Map<String, String?>` and so on (integer elements keep their stored width),
/// live as a compiled model's collections are (see also ``dynamicList(_:)``); linking objects are `LinkingObjects<DynamicObject>`. A link or collection
/// element may be set to a managed object of the linked class (dynamic, or of a model class of the same
/// file) or to a dictionary that creates one. Everything goes through the same
/// record codec, write path, query engine and relationship code as compiled models.
///
/// Reading or setting a name that is no property, or setting a value of the wrong type, stops with a
/// message naming the class and property (a subscript cannot throw); ``Object/value(forProperty:)`` and
/// ``Object/setValue(_:forProperty:)`` throw those ``LatticeError``s instead.
public final class DynamicObject: Object {
    /// The class of an unmanaged dynamic object (built by `dynamicCreate` or a migration's `create`
    /// before it is stored); a managed one uses its handle's class.
    var unmanagedClass: ClassInfo?
    /// The checked values of an unmanaged dynamic object (links and elements already objects), by name.
    var unmanagedValues: [String: Any] = [:]

    /// An unmanaged dynamic object of no class; use ``Lattice/dynamicCreate(_:value:update:)`` to make one
    /// of a class of a file.
    public required init() {}

    /// The key of the stored object within its class: unique among the class's objects and fixed for the
    /// object's life; nil while unmanaged. It names objects of classes without a primary key, for
    /// example in the links of `lattice export`.
    public var objectKey: Int64? { _lattice == nil ? nil : _key }

    /// The stored shape of the object's class, as the file stores it.
    override public var objectSchema: ObjectSchema {
        _info?.schema ?? unmanagedClass?.schema ?? ObjectSchema(className: "DynamicObject", properties: [])
    }

    // MARK: Collections of objects by name

    /// The List of objects `propertyName` (Realm's `dynamicList(_:)`): the same live list as
    /// `self[propertyName] as! List<DynamicObject>`.
    ///
    /// - Precondition: `propertyName` is a List of objects of the class. As this cannot throw (Realm's
    ///   signature), another name stops the program with a message naming the class and property (in a
    ///   migration block, it fails the migration and an empty list is returned);
    ///   ``Object/value(forProperty:)`` throws instead.
    public func dynamicList(_ propertyName: String) -> List<DynamicObject> {
        collection(propertyName, "a List of objects") ?? List()
    }

    /// The MutableSet of objects `propertyName` (Realm's `dynamicMutableSet(_:)`), as ``dynamicList(_:)``.
    ///
    /// - Precondition: `propertyName` is a MutableSet of objects of the class (see ``dynamicList(_:)``).
    public func dynamicMutableSet(_ propertyName: String) -> MutableSet<DynamicObject> {
        collection(propertyName, "a MutableSet of objects") ?? MutableSet()
    }

    /// The Map of objects `propertyName` (Realm's `dynamicMap(_:)`), as ``dynamicList(_:)``.
    ///
    /// - Precondition: `propertyName` is a Map of objects of the class (see ``dynamicList(_:)``).
    public func dynamicMap(_ propertyName: String) -> Map<String, DynamicObject?> {
        collection(propertyName, "a Map of objects") ?? Map()
    }

    /// The collection `name` as a `C`; a name that is no such property stops the program (see `dynamicList`).
    private func collection<C>(_ name: String, _ expected: String) -> C? {
        do {
            let value = try value(forProperty: name)
            guard let collection = value as? C else {
                let found = objectSchema[name].map { $0.typeName(withOptionality: true) } ?? "\(value.map { type(of: $0) } ?? Any?.self)"
                throw LatticeError.wrongType(className: objectSchema.className, property: name, expected: expected, found: found)
            }
            return collection
        } catch {
            if recordsAccessError(error) { return nil }
            preconditionFailure("\(error)")
        }
    }

    // MARK: Unmanaged values

    /// Checks `values` against the class and keeps them (see `Lattice.apply`).
    func assignUnmanaged(_ values: [String: Any]) throws {
        guard let info = unmanagedClass else { throw LatticeError.classNotInSchema(className: "DynamicObject") }
        for (name, value) in values {
            guard let p = info.property(named: name), p.property.type != .linkingObjects else {
                throw LatticeError.unknownProperty(className: info.name, property: name)
            }
            try DynamicObject.check(value, for: p, in: info)
        }
        unmanagedValues.merge(values) { _, new in new }
    }

    /// Throws unless `value` fits property `p` of class `info`: its Swift type, and for links and elements
    /// of collections of objects, objects of the linked class.
    static func check(_ value: Any, for p: PropertyInfo, in info: ClassInfo) throws {
        if isNilValue(value) && !p.property.isOptional && p.property.collection == nil {
            throw LatticeError.missingValue(className: info.name, property: p.name)
        }
        func wrong() -> LatticeError {
            .wrongType(className: info.name, property: p.name, expected: p.property.typeName(withOptionality: true),
                       found: "\(type(of: unwrapAny(value)))")
        }
        guard p.valueType.castAny(value) != nil else { throw wrong() }
        guard let target = p.target, p.property.type == .object else { return }
        let linked: [Any]
        switch p.property.collection {
        case nil: linked = [value]
        case .list?, .set?: linked = Lattice.elements(of: value) ?? []
        case .map?: linked = Lattice.entries(of: value).map { Array($0.values) } ?? []
        }
        for element in linked where !isNilValue(element) {
            guard let object = objectValue(unwrapAny(element)), object.objectSchema.className == target.name else { throw wrong() }
        }
    }

    /// The payload of column `p` of this unmanaged object (its value's, else the type's default); a link
    /// adds its unmanaged target first.
    func encodePayload(_ p: PropertyInfo, into out: inout [UInt8], adding lattice: Lattice) throws {
        guard p.property.collection == nil, p.property.type != .linkingObjects, let value = unmanagedValues[p.name] else {
            p.valueType._latticeDefaultEncoded(into: &out)
            return
        }
        guard let cast = p.valueType.castAny(value) else {
            throw LatticeError.wrongType(className: p.ownerName, property: p.name, expected: p.property.typeName(withOptionality: true),
                                         found: "\(type(of: unwrapAny(value)))")
        }
        try cast._latticeEncode(into: &out, adding: lattice)
    }

    /// Stores the collections of this just-added object, then drops the unmanaged values (they may
    /// reference other objects).
    func didAdd(_ info: ClassInfo, replacing: Bool) throws {
        for p in info.columns where p.property.collection != nil {
            guard let value = unmanagedValues[p.name], let collection = p.valueType.castAny(value) else { continue }
            try collection._latticeDidAdd(self, column: p.column, replacing: replacing)
        }
        unmanagedValues = [:]
        unmanagedClass = nil
    }
}

/// An object of a migration block (Realm's name): a ``DynamicObject`` of the file's old schema (read-only)
/// or of the new one.
public typealias MigrationObject = DynamicObject

extension DynamicObject {
    /// The model metadata of a stored class for a dynamic handle: every property typed by its stored type,
    /// with no field in any instance (dynamic objects keep no per-property storage).
    static func metadata(for schema: ObjectSchema) -> ModelMetadata {
        ModelMetadata(type: DynamicObject.self, schema: schema,
                      fields: schema.allProperties.map { ModelMetadata.Field(offset: 0, accessor: accessor(valueType(of: $0))) },
                      onlyPersistedState: false)
    }

    /// The Swift type a dynamic object uses for a stored property.
    static func valueType(of p: Property) -> any _Persistable.Type {
        guard let base = baseType(p.type) else { return LinkingObjects<DynamicObject>.self }
        return shaped(base, p)
    }

    private static func baseType(_ type: PropertyType) -> (any (_PersistableBase & Hashable).Type)? {
        switch type {
        case .bool: return Bool.self
        case .int: return Int.self
        case .int8: return Int8.self
        case .int16: return Int16.self
        case .int32: return Int32.self
        case .int64: return Int64.self
        case .float: return Float.self
        case .double: return Double.self
        case .string: return String.self
        case .data: return Data.self
        case .date: return Date.self
        case .uuid: return UUID.self
        case .decimal: return Decimal.self
        case .objectId: return ObjectId.self
        case .object: return DynamicObject.self
        case .linkingObjects: return nil
        }
    }

    private static func shaped<T: _PersistableBase & Hashable>(_: T.Type, _ p: Property) -> any _Persistable.Type {
        switch (p.collection, p.isOptional) {
        case (nil, false): return T.self
        case (nil, true): return T?.self
        case (.list?, false): return List<T>.self
        case (.list?, true): return List<T?>.self
        case (.set?, false): return MutableSet<T>.self
        case (.set?, true): return MutableSet<T?>.self
        case (.map?, false): return Map<String, T>.self
        case (.map?, true): return Map<String, T?>.self
        }
    }

    private static func accessor<V: _Persistable>(_: V.Type) -> any PersistedField.Type { Persisted<V>.self }
}
