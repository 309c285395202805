// Realm's names for reaching an object's properties by name, and for its identity and class.

extension Object {
    /// The class name the schema uses (Realm's `className()`).
    public static func className() -> String { "\(self)" }

    /// The name of the primary key property, or nil when the class has none (Realm's `primaryKey()`;
    /// declared with `@Persisted(primaryKey: true)`, not by overriding this).
    public static func primaryKey() -> String? { sharedSchema()?.primaryKeyProperty?.name }

    /// The schema of this class as declared (Realm's `sharedSchema()`); nil when the class is not a valid
    /// model. A managed object's ``objectSchema`` is the one its file stores.
    public static func sharedSchema() -> ObjectSchema? { try? ModelMetadata.of(self).schema }

    /// Whether `object` is this object (Realm's `isSameObject(as:)`): the same instance, or two managed
    /// instances of one stored object (same file, class and object). An unmanaged object is only itself.
    public func isSameObject(as object: Object?) -> Bool {
        guard let object else { return false }
        return self == object
    }

    /// The value of the persisted property `key` (Realm's `object["name"]`), managed or not: nil for an
    /// empty optional, the linked object for a link, the collection for a List, MutableSet, Map or
    /// LinkingObjects, for an integer of any width (`Int8` ... `Int64`) an `Int`, as Realm's numbers
    /// cast to `Int` (`dog["age"] as! Int`), and for an enum its raw value. Setting it is
    /// ``setValue(_:forKey:)``, which takes any integer type whose value fits (and an enum or its raw value).
    ///
    /// A subscript cannot throw: as with Realm, a name that is no persisted property, a wrong value type
    /// or a set outside a write transaction stops the program with a message naming the class and the
    /// property. ``value(forProperty:)`` and ``setValue(_:forProperty:)`` throw those errors instead.
    public subscript(key: String) -> Any? {
        get { value(forKey: key) }
        set { setValue(newValue, forKey: key) }
    }

    /// The value of the persisted property `key` (see ``subscript(_:)``); an unknown name or a deleted
    /// object stops the program with a message (Realm raises an exception). See ``value(forProperty:)``.
    public func value(forKey key: String) -> Any? {
        do {
            return try value(forProperty: key)
        } catch {
            if recordsAccessError(error) { return nil }
            preconditionFailure("\(error)")
        }
    }

    /// The value at the end of `keyPath`, followed through to-one links (`"owner.name"`); nil where a link
    /// on the way is nil. A name that is no persisted property stops the program, as ``value(forKey:)``.
    public func value(forKeyPath keyPath: String) -> Any? {
        var value: Any? = self
        for name in keyPath.split(separator: ".", omittingEmptySubsequences: false) {
            guard let object = value as? Object else { return nil }
            value = object.value(forKey: String(name))
        }
        return value
    }

    /// In a migration block, an access error fails the migration (when the block returns) instead of
    /// stopping the program; false elsewhere.
    func recordsAccessError(_ error: Error) -> Bool {
        guard let lattice = _lattice, lattice.recordsAccessErrors else { return false }
        lattice.recordingFailure { throw error }
        return true
    }

    /// Sets the persisted property `key` (see ``subscript(_:)``), taking values as
    /// ``Lattice/create(_:value:update:)`` does: a dictionary, array or object for a link builds or links
    /// the object, an array replaces a List or MutableSet's content, a dictionary a Map's. An unknown name,
    /// a wrong type, nil for a required property, a changed primary key, or a managed object outside a
    /// write transaction stops the program with a message naming the class and the property (Realm raises
    /// an exception). A failure while writing (a value over the size limit, a duplicate primary key of a
    /// nested object) fails the write transaction at commit, as a property setter's does. See
    /// ``setValue(_:forProperty:)``.
    public func setValue(_ value: Any?, forKey key: String) {
        do {
            if let lattice = _lattice {
                try lattice.assign([key: value ?? Optional<Any>.none as Any], to: self, recordingWriteErrors: true)
            } else {
                try setValue(value, forProperty: key)
            }
        } catch {
            if recordsAccessError(error) { return }
            preconditionFailure("\(error)")
        }
    }

    /// The value of the persisted property `name` (see ``subscript(_:)``). Throws
    /// ``LatticeError/unknownProperty(className:property:)`` for a name that is no persisted property and
    /// ``LatticeError/objectInvalidated(className:)`` for a deleted object.
    public func value(forProperty name: String) throws -> Any? {
        if let info = _info {
            guard let property = info.property(named: name) else {
                throw LatticeError.unknownProperty(className: info.name, property: name)
            }
            if isInvalidated { throw LatticeError.objectInvalidated(className: info.name) }
            return value(of: property)
        }
        let schema = objectSchema
        guard schema[name] != nil else { throw LatticeError.unknownProperty(className: schema.className, property: name) }
        if isInvalidated { throw LatticeError.objectInvalidated(className: schema.className) }
        return value(ofProperty: name)
    }

    /// Sets the persisted property `name` like ``setValue(_:forKey:)``, throwing instead of stopping:
    /// ``LatticeError/unknownProperty(className:property:)``, `wrongType`, `missingValue`,
    /// `primaryKeyChanged`, `notInWriteTransaction` and, for a managed object, any error while writing.
    public func setValue(_ value: Any?, forProperty name: String) throws {
        let value = value ?? Optional<Any>.none as Any
        if let lattice = _lattice {
            try lattice.assign([name: value], to: self, recordingWriteErrors: false)
        } else {
            try Lattice.apply([name: value], to: self, className: objectSchema.className)
        }
    }
}

/// A property's value read by name: an integer of any width (`Int8` ... `Int64`) as an `Int`, as Realm's
/// numbers cast to `Int` (`dog["age"] as! Int`), an enum (optional or not) as its raw value, as Realm
/// stores it; other values as they are.
func valueByName(_ value: Any?, _ property: Property) -> Any? {
    guard property.collection == nil else { return value }
    if let value = value as? any PersistableEnum { return valueByName(value.rawValue, property) }
    guard property.type.isInteger else { return value }
    switch value {
    case let v as Int8: return Int(v)
    case let v as Int16: return Int(v)
    case let v as Int32: return Int(v)
    case let v as Int64: return Int(v)
    default: return value
    }
}

extension Object {
    /// The value of a persisted property by name (nil for an unknown name or an empty optional); an
    /// integer of any width reads as an `Int`.
    public func value(ofProperty name: String) -> Any? {
        if let info = _info {
            return info.property(named: name).flatMap { value(of: $0) }
        }
        if let dynamic = self as? DynamicObject { return dynamic.unmanagedValues[name].flatMap { isNilValue($0) ? nil : unwrapAny($0) } }
        guard let metadata = try? ModelMetadata.of(type(of: self)),
              let index = metadata.schema.allProperties.firstIndex(where: { $0.name == name }) else { return nil }
        let field = metadata.fields[index]
        return valueByName(field.accessor.value(at: UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()) + field.offset),
                           metadata.schema.allProperties[index])
    }
}
