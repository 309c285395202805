extension Lattice {
    /// Creates (or with `update`, updates) an object from a value and returns it managed.
    ///
    /// The value is a dictionary of property values, an array of values in declaration order (the
    /// properties after the last value given keep their defaults, as in Realm), an
    /// ``Object`` (of this class or of another one with the same property names: Realm's copy idiom,
    /// `create(Dog.self, value: otherDog)`), or a plain Swift struct or class whose stored properties
    /// are named like the class's properties. The value itself is never changed or managed.
    ///
    /// Nested values are stored too. A link, or an element of a List, MutableSet or Map of objects, may be
    /// given as a dictionary, array or object: it is created with the same `update` policy (an object of
    /// this file, not embedded, is linked as it is). With `update`, an object whose primary key exists is
    /// updated, at the top level or nested; a to-one embedded object that exists is updated in place; a
    /// given List, MutableSet or Map replaces the collection's content. Objects managed by another file are
    /// copied into this one (a graph with cycles is copied once).
    ///
    /// Missing dictionary keys take the property's initial value for a new object and leave an existing
    /// one unchanged (a partial update); nil clears an optional. A wrong type, nil for a required
    /// property, an unknown key, a short array or a deleted object as the value throws before anything is
    /// written.
    @discardableResult
    public func create<T: Object>(_ type: T.Type, value: Any = [String: Any](), update: UpdatePolicy = .error) throws -> T {
        _ = try requireWrite("create(_:value:)")
        // `info.type` is `T`: the builder creates or materializes instances of `info.type` only.
        return unsafeDowncast(try createObject(try requireClass(type), value: value, update: update), to: T.self)
    }

    /// `create` for a class of this handle (compiled or dynamic): an instance of `info.type`.
    func createObject(_ info: ClassInfo, value: Any, update: UpdatePolicy) throws -> Object {
        if update != .error && info.primaryKey == nil {
            throw LatticeError.noPrimaryKey(className: info.name, operation: "create(_:value:update: .\(update))")
        }
        let builder = ObjectBuilder(lattice: self, update: update)
        let object = try builder.object(info, from: value, asLink: false)
        try builder.write(object)
        return object
    }

    /// Checks `values` (links and elements already objects) for an update of a stored object of `info`:
    /// names, nil for required properties, types and sizes, all before anything is written. Scalar values
    /// come back encoded; links and collections are resolved when the update is written.
    fileprivate func checkedUpdate(_ info: ClassInfo, _ values: [String: Any]) throws -> CheckedUpdate {
        var checked = CheckedUpdate()
        checked.payloads.reserveCapacity(values.count)
        let dynamic = info.type is DynamicObject.Type
        for (name, value) in values {
            guard let p = info.property(named: name) else { throw LatticeError.unknownProperty(className: info.name, property: name) }
            // A dynamic class's values are checked as its unmanaged objects check them (schema type names).
            if dynamic { try DynamicObject.check(value, for: p, in: info) }
            if p.property.collection != nil {
                guard let collection = p.valueType.castAny(value) else { throw Lattice.wrongType(info.name, p.property, p.valueType, value) }
                checked.collections.append((p, collection))
                continue
            }
            let isNil = isNilValue(value)
            if isNil && !p.property.isOptional { throw LatticeError.missingValue(className: info.name, property: name) }
            if p.isLink {
                let target = isNil ? nil : objectValue(unwrapAny(value))
                if !isNil && target == nil { throw Lattice.wrongType(info.name, p.property, p.valueType, value) }
                checked.links.append((p, target))
                continue
            }
            var payload: [UInt8] = []
            guard p.valueType.encodeAny(value, into: &payload) else { throw Lattice.wrongType(info.name, p.property, p.valueType, value) }
            try checkSize(info, p, size: payload.count)
            checked.payloads[p.column] = payload
        }
        return checked
    }

    /// Writes a checked update into the existing object `object`. With `countingEqual`, every property
    /// given counts as changed for observers even where its value is the stored one (a property set,
    /// `update: .all`, as in Realm); otherwise only the values that differ (`update: .modified`).
    fileprivate func update(_ object: Object, _ info: ClassInfo, with checked: CheckedUpdate, countingEqual: Bool) throws {
        let txn = try requireWrite("create(_:value:update:)")
        guard let old = try fetchRecord(info, key: object._key) else { throw LatticeError.objectInvalidated(className: info.name) }
        var payloads = checked.payloads
        for (p, target) in checked.links {
            var payload: [UInt8] = []
            if let target {
                let oldKey = old.withBytes { RecordView($0)?.payload(p.column).flatMap(linkedKey) }
                // An embedded object updated in place stays in its slot; anything else is linked (added when new).
                let embedded = p.target?.schema.isEmbedded == true
                let newKey = embedded && target._lattice != nil && target._key == oldKey ? oldKey : try linkTarget(target)
                if let newKey { Varint.append(Varint.zigzag(newKey), to: &payload) }
            }
            payloads[p.column] = payload
        }
        let record = old.withBytes { replacing(RecordView($0), in: info, with: payloads) }
        let given = countingEqual
            ? payloads.keys.reduce(UInt64(0)) { $1 == info.primaryKey?.column ? $0 : $0 | ChangeSet.columnBit($1) } : nil
        // Replaced embedded objects go with their slots.
        try store(info, key: object._key, record: record, old: old, txn, changed: given)
        for (p, collection) in checked.collections { try collection._latticeDidAdd(object, column: p.column, replacing: true) }
    }

    /// Sets properties of the managed object `object` from values as `create` takes them (nested values
    /// build new objects). Errors in the values are thrown before anything is written; with
    /// `recordingWriteErrors`, errors while writing fail the write transaction at commit instead, as a
    /// property setter's do.
    func assign(_ values: [String: Any], to object: Object, recordingWriteErrors: Bool) throws {
        let className = object.objectSchema.className
        guard let info = object._info else { throw LatticeError.objectNotManaged(className: className, operation: "setValue(_:forKey:)") }
        for name in values.keys where info.property(named: name) == nil {
            throw LatticeError.unknownProperty(className: className, property: name)
        }
        _ = try requireWrite("setValue(_:forKey:) of " + values.keys.sorted().map { "'\(className).\($0)'" }.joined(separator: ", "))
        guard let record = try object.currentRecord(self) else { throw LatticeError.objectInvalidated(className: className) }
        var values = values
        if let pk = info.primaryKey, let value = values[pk.name] {
            var payload: [UInt8] = []
            guard pk.valueType.encodeAny(value, into: &payload) else { throw Lattice.wrongType(info.name, pk.property, pk.valueType, value) }
            let current = record.withBytes { RecordView($0)?.payload(pk.column).map(Array.init) }
            if current != payload { throw LatticeError.primaryKeyChanged(className: info.name, property: pk.name) }
            values[pk.name] = nil
        }
        let builder = ObjectBuilder(lattice: self, update: .error)
        do {
            try builder.enqueueUpdate(object, info, values, record: record)
        } catch {
            // A value over the size limit is a failure of the write, as a property setter's is.
            guard recordingWriteErrors, case LatticeError.valueTooLarge = error else { throw error }
            recordingFailure { throw error }
            return
        }
        if recordingWriteErrors {
            recordingFailure { try builder.write(object) }
        } else {
            try builder.write(object)
        }
    }

    // MARK: Dynamic values

    /// Property values keyed by name, from a dictionary, an array in declaration order, an object (its
    /// properties that `properties` names too) or a struct or class value (its stored properties).
    static func namedValues(_ value: Any, _ properties: [Property], className: String) throws -> [String: Any] {
        if let dictionary = value as? [String: Any] { return dictionary }
        if let array = value as? [Any] {
            // Values of the stored properties in declaration order (linking objects are computed, never
            // given); as in Realm, properties after the last value given keep their defaults.
            let names = properties.filter { $0.type != .linkingObjects }.map(\.name)
            guard array.count <= names.count else {
                throw LatticeError.wrongType(className: className, property: "(value)",
                                             expected: "an array of at most \(names.count) values, in declaration order (\(names.joined(separator: ", ")))",
                                             found: "an array of \(array.count)")
            }
            return Dictionary(uniqueKeysWithValues: zip(names, array))
        }
        if let object = objectValue(value) { return try values(of: object, for: properties) }
        if let fields = fields(of: value) { return fields }
        throw LatticeError.wrongType(className: className, property: "(value)", expected: "[String: Any], [Any] or an object",
                                     found: "\(type(of: value))")
    }

    /// The values of `object`'s persisted properties that `properties` names too (not linking objects), as
    /// values for another object: see ``detached(_:)``.
    private static func values(of object: Object, for properties: [Property]) throws -> [String: Any] {
        if object.isInvalidated { throw LatticeError.objectInvalidated(className: object.objectSchema.className) }
        let schema = object.objectSchema
        var values: [String: Any] = [:]
        for p in properties where p.type != .linkingObjects {
            guard let source = schema[p.name], source.type != .linkingObjects else { continue }
            values[p.name] = try detached(object.value(ofProperty: p.name))
        }
        return values
    }

    /// A property value read from an object, made fit to be another object's value: a List or MutableSet
    /// becomes an array and a Map a dictionary of their elements (a snapshot, so the copy's collections
    /// are its own), and a managed embedded object an unmanaged copy (an embedded object has one parent).
    /// Other objects stay references.
    private static func detached(_ value: Any?) throws -> Any {
        guard let value else { return Optional<Any>.none as Any }
        if let embedded = value as? EmbeddedObject, embedded._lattice != nil {
            let copy = type(of: embedded).init()
            try copy.fill(from: embedded)
            return copy
        }
        if let map = value as? any AnyMap { return try map.anyEntries.mapValues(detached) }
        if value is any LatticeCollection, let elements = elements(of: value) { return try elements.map(detached) }
        return value
    }

    /// The stored properties of a struct or class value that is not a model object or a persistable value,
    /// by name; nil for anything else.
    static func fields(of value: Any) -> [String: Any]? {
        if objectValue(value) != nil || value is any _Persistable { return nil }
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .struct || mirror.displayStyle == .class else { return nil }
        var fields: [String: Any] = [:]
        for child in mirror.children {
            guard let label = child.label else { return nil }
            fields[label] = child.value
        }
        return fields.isEmpty ? nil : fields
    }

    /// Whether `value` can stand for an object: an object, a dictionary, an array, or a struct or class value.
    static func isObjectValue(_ value: Any) -> Bool {
        value is [String: Any] || objectValue(value) != nil || value is [Any] || fields(of: value) != nil
    }

    /// Sets the values of an unmanaged object, checking every name and type first.
    static func apply(_ values: [String: Any], to object: Object, className: String) throws {
        if let dynamic = object as? DynamicObject { return try dynamic.assignUnmanaged(values) }
        let metadata = try ModelMetadata.of(type(of: object))
        let base = UnsafeMutableRawPointer(Unmanaged.passUnretained(object).toOpaque())
        for (name, value) in values {
            guard let position = metadata.positions[name] else { throw LatticeError.unknownProperty(className: className, property: name) }
            let property = metadata.schema.allProperties[position]
            let field = metadata.fields[position]
            // nil for a collection empties it (`elements(of:)`).
            if isNilValue(value) && !property.isOptional && property.collection == nil {
                throw LatticeError.missingValue(className: className, property: name)
            }
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

/// One `create`: turns a value into objects of one file. Nothing is written until every value has been
/// checked: new objects are built unmanaged (and added at the end with what they reach, so cycles link
/// as with `add`); existing objects, found by primary key when updating, are updated after that.
private final class ObjectBuilder {
    /// Identifies a source object: an unmanaged instance, or a stored object of some file.
    enum Source: Hashable {
        case instance(ObjectIdentifier)
        case stored(file: ObjectIdentifier, className: String, key: Int64)

        init(_ object: Object) {
            if let lattice = object._lattice {
                self = .stored(file: ObjectIdentifier(lattice.env), className: object.objectSchema.className, key: object._key)
            } else {
                self = .instance(ObjectIdentifier(object))
            }
        }
    }

    let lattice: Lattice
    let update: Lattice.UpdatePolicy
    /// The object each source object became (a graph with cycles is copied once), with the source: kept
    /// alive so that no other instance takes its identity meanwhile.
    private var built: [Source: (source: Object, object: Object)] = [:]
    /// Existing objects to update, with their checked values (a struct: an array of tuples is destroyed
    /// through the runtime's generic tuple code, element by element).
    private struct PendingUpdate {
        let object: Object
        let info: ClassInfo
        let values: CheckedUpdate
    }
    private var updates: [PendingUpdate] = []

    init(lattice: Lattice, update: Lattice.UpdatePolicy) {
        self.lattice = lattice
        self.update = update
    }

    /// The object of class `info` that `value` stands for. A link (`asLink`) to an object of this file,
    /// not embedded, is that object; anything else gives an existing object to update (found by primary
    /// key, or the embedded object now at `current`, when updating) or a new unmanaged one.
    func object(_ info: ClassInfo, from value: Any, asLink: Bool, current: Int64? = nil) throws -> Object {
        let source = objectValue(value)
        if let source {
            if source.isInvalidated { throw LatticeError.objectInvalidated(className: source.objectSchema.className) }
            if asLink, let owner = source._lattice, owner.env === lattice.env, !info.schema.isEmbedded, let own = lattice.classInfo(of: source) {
                if own === info { return source }
                // An object of the same stored class read as the other kind (a model object given to a
                // dynamic object's link, or the reverse): the same object, as `info` reads it.
                if own.name == info.name {
                    // Creation stamps, where known, tell the object from a re-created one under its key.
                    guard let object = try lattice.fetchObject(info, key: source._key),
                          source._stamp == 0 || object._stamp == 0 || source._stamp == object._stamp else {
                        throw LatticeError.objectInvalidated(className: info.name)
                    }
                    return object
                }
            }
            if let done = built[Source(source)] { return done.object }
        }
        let values = try Lattice.namedValues(value, info.declared.map(\.property), className: info.name)
        if let existing = try existingObject(info, values, current: current) {
            if let source { built[Source(source)] = (source, existing.object) }
            try enqueueUpdate(existing.object, info, values, record: existing.record)
            return existing.object
        }
        let object = info.newInstance()
        if let source { built[Source(source)] = (source, object) }
        try Lattice.apply(try resolve(values, info, record: nil), to: object, className: info.name)
        return object
    }

    /// Checks `values` for the stored object `object` (whose record is `record`) and keeps them, links and
    /// elements turned into objects, for ``write(_:)``.
    func enqueueUpdate(_ object: Object, _ info: ClassInfo, _ values: [String: Any], record: RecordBuffer) throws {
        updates.append(PendingUpdate(object: object, info: info, values: try lattice.checkedUpdate(info, resolve(values, info, record: record))))
    }

    /// The stored object that `values` update, if any (only when updating).
    private func existingObject(_ info: ClassInfo, _ values: [String: Any], current: Int64?) throws -> (object: Object, record: RecordBuffer)? {
        guard update != .error else { return nil }
        var found: (key: Int64, record: RecordBuffer)?
        if info.schema.isEmbedded {
            if let current { found = try lattice.fetchRecord(info, key: current).map { (current, $0) } }
        } else if let pk = info.primaryKey, let pkValue = values[pk.name] {
            var payload: [UInt8] = []
            // A wrong type is left to `apply`, which names it.
            if pk.valueType.encodeAny(pkValue, into: &payload) { found = try lattice.findObject(info, primaryKeyPayload: payload) }
        }
        guard let found else { return nil }
        return (lattice.materialize(info, key: found.key, record: found.record), found.record)
    }

    /// `values` with every link and object element turned into an object (values of another type are
    /// left for `apply` to report). `record` is the stored record of the object being updated.
    private func resolve(_ values: [String: Any], _ info: ClassInfo, record: RecordBuffer?) throws -> [String: Any] {
        var resolved = values
        for (name, value) in values {
            guard let p = info.property(named: name), let target = p.target, !isNilValue(value) else { continue }
            let element = { (value: Any) throws -> Any in
                isNilValue(value) || !Lattice.isObjectValue(unwrapAny(value)) ? value : try self.object(target, from: unwrapAny(value), asLink: true)
            }
            switch p.property.collection {
            case .list?, .set?:
                if let elements = Lattice.elements(of: value) { resolved[name] = try elements.map(element) }
            case .map?:
                if let entries = Lattice.entries(of: value) { resolved[name] = try entries.mapValues(element) }
            case nil where p.isLink && Lattice.isObjectValue(unwrapAny(value)):
                let current = target.schema.isEmbedded ? record?.withBytes { RecordView($0)?.payload(p.column).flatMap(lattice.linkedKey) } : nil
                resolved[name] = try object(target, from: unwrapAny(value), asLink: true, current: current ?? nil)
            case nil:
                break
            }
        }
        return resolved
    }

    /// Adds `root` when it is new, then updates the existing objects, nested objects following `update`.
    func write(_ root: Object) throws {
        guard let context = lattice.writer else { throw LatticeError.notInWriteTransaction(operation: "create(_:value:)") }
        let outer = context.addPolicy
        context.addPolicy = update
        defer { context.addPolicy = outer }
        if root._lattice == nil { _ = try lattice.addObject(root, update: update, embedded: false) }
        for u in updates { try lattice.update(u.object, u.info, with: u.values, countingEqual: update != .modified) }
    }
}

/// The values of an update of one stored object, checked before anything is written: scalar payloads
/// by column, and the links and collections to write (see `Lattice.checkedUpdate`).
private struct CheckedUpdate {
    var payloads: [Int: [UInt8]] = [:]
    /// Each link property with its object (nil: cleared).
    var links: [(PropertyInfo, Object?)] = []
    var collections: [(PropertyInfo, any _Persistable)] = []
}

extension _Persistable {
    /// `_latticeCast` for a type known only at run time.
    static func castAny(_ value: Any) -> (any _Persistable)? { _latticeCast(value) }
}

extension Object {
    /// Creates an unmanaged object from a value: a dictionary of property values, an array of values in
    /// declaration order, another object (Realm's `Dog(value: otherDog)`: of this class or of another
    /// with the same property names), or a struct or class value whose stored properties are named like
    /// the class's properties. Nested dictionaries and arrays build linked objects and collection elements.
    ///
    /// Copying an object copies every property: Lists, MutableSets and Maps element by element (the copy's
    /// collections are its own, unmanaged), embedded objects as unmanaged copies; other linked objects stay
    /// references to the same objects. A managed object's copy is detached from its file: changing it
    /// needs no write transaction and changes nothing stored. Throws on unknown names, wrong types, nil for
    /// required values and a deleted object. An array may stop early: the properties after its last value
    /// keep their defaults. nil (or `NSNull`) for a List, MutableSet or Map leaves it empty, as in Realm.
    public convenience init(value: Any) throws {
        self.init()
        try fill(from: value)
    }

    /// Sets this unmanaged object's properties from a value (see ``init(value:)``).
    final func fill(from value: Any) throws {
        let metadata = try ModelMetadata.of(type(of: self))
        let values = try Lattice.namedValues(value, metadata.schema.allProperties, className: metadata.schema.className)
        try Lattice.apply(values, to: self, className: metadata.schema.className)
    }
}
