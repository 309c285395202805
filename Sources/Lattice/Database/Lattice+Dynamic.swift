// The dynamic object API: classes named by strings, objects read and written by property name. A dynamic
// class is a `ClassInfo` whose type is `DynamicObject`, built from the stored schema; everything else
// (records, queries, collections, the write path) is the code compiled models use. A handle opened with
// model classes has a second set of classes for the dynamic API (`DynamicClasses`): the same tables,
// read as `DynamicObject`s, whose links lead to dynamic objects too.

import Foundation

/// The dynamic classes of a handle opened with model classes: one per model class, over the same
/// tables, built on first use and shared by the handles sharing the model classes (frozen and thawed
/// ones, possibly on other threads: the build is locked).
final class DynamicClasses: @unchecked Sendable {
    // @unchecked Sendable is safe: `models` and `tables` are constants (class descriptions never change
    // once linked, and table handles are plain numbers); `built` is written once, under `lock`, and read
    // under it, and the classes it holds are linked before they are published there.
    private let models: [String: ClassInfo]
    private let tables: [String: Table]
    private let lock = NSLock()
    private var built: [String: ClassInfo]?

    init(models: [String: ClassInfo], tables: [String: Table]) {
        self.models = models
        self.tables = tables
    }

    /// The dynamic class standing for the model class `name`, or nil when there is none.
    func info(_ name: String) -> ClassInfo? {
        guard models[name] != nil else { return nil }
        return lock.withLock {
            if let built { return built[name] }
            var classes: [String: ClassInfo] = [:]
            for (name, model) in models {
                // The stored layout: the model class's columns, in storage order.
                let info = ClassInfo(metadata: DynamicObject.metadata(for: model.schema), storedOrder: model.schema.allProperties.map(\.name),
                                     tables: tables)
                info.writesID = ObjectIdentifier(model)
                classes[name] = info
            }
            ClassInfo.link(classes)
            built = classes
            return classes[name]
        }
    }
}

extension Lattice {
    /// Whether this handle was opened with ``Configuration/dynamicSchema`` (or is a migration's handle):
    /// its classes are dynamic. The dynamic API (``dynamicObjects(_:)``, ``dynamicCreate(_:value:update:)``,
    /// ``dynamicObject(ofType:forPrimaryKey:)``) works on every handle, this one or not.
    public var isDynamic: Bool { classesByName.values.contains { $0.type == DynamicObject.self } }

    /// Creates an object of the stored class `className` from a value, as ``create(_:value:update:)``
    /// does for a model class: a dictionary of property values, an array of values in storage order, or
    /// an object whose property names match. Links and collection elements may be managed objects of
    /// this file (dynamic, or of the model classes) or dictionaries that create them. Throws for an
    /// unknown class or property, a wrong value type and nil for a required property (naming the class
    /// and property), before writing.
    ///
    /// Works on every handle: on one opened with model classes, for the classes of its schema; the
    /// object is then also readable as an instance of its model class (``objects(_:)``), and the other
    /// way round.
    @discardableResult
    public func dynamicCreate(_ className: String, value: Any = [String: Any](), update: UpdatePolicy = .error) throws -> DynamicObject {
        _ = try requireWrite("dynamicCreate(_:value:)")
        let info = try dynamicClass(className)
        // `info.type` is `DynamicObject`: the builder creates or materializes instances of it only.
        return unsafeDowncast(try createObject(info, value: value, update: update), to: DynamicObject.self)
    }

    /// The object of the stored class `className` whose primary key is `key`, or nil when there is none.
    /// Throws ``LatticeError/classNotInSchema(className:)`` for an unknown class and
    /// ``LatticeError/noPrimaryKey(className:operation:)`` for a class without a primary key.
    public func dynamicObject(ofType className: String, forPrimaryKey key: Any) throws -> DynamicObject? {
        let info = try dynamicClass(className)
        guard let pk = info.primaryKey else {
            throw LatticeError.noPrimaryKey(className: className, operation: "dynamicObject(ofType:forPrimaryKey:)")
        }
        var payload: [UInt8] = []
        guard pk.valueType.encodeAny(key, into: &payload) else {
            throw LatticeError.wrongType(className: className, property: pk.name, expected: pk.property.typeName(withOptionality: true),
                                         found: "\(type(of: unwrapAny(key)))")
        }
        _ = try readTransaction()
        guard let found = try findObject(info, primaryKeyPayload: payload) else { return nil }
        return unsafeDowncast(materialize(info, key: found.key, record: found.record), to: DynamicObject.self)
    }

    /// The dynamic class named `className` (on a handle with model classes, the one standing for the
    /// model class); throws ``LatticeError/classNotInSchema(className:)`` when the schema has none.
    func dynamicClass(_ className: String) throws -> ClassInfo {
        guard let info = classInfo(named: className, dynamic: true) else {
            throw LatticeError.classNotInSchema(className: className)
        }
        return info
    }

    /// The class named `name` in this handle, as read by dynamic objects (`dynamic`) or by the class's
    /// own type (a model class on a handle with model classes).
    func classInfo(named name: String, dynamic: Bool) -> ClassInfo? {
        guard let info = classesByName[name] else { return nil }
        return dynamic && info.type != DynamicObject.self ? dynamicClasses.info(name) : info
    }

    /// The class of `object` in this handle: by its Swift type, or for a dynamic object by its class name.
    func classInfo(of object: Object) -> ClassInfo? {
        guard type(of: object) == DynamicObject.self else { return classInfo(type(of: object)) }
        let dynamic = unsafeDowncast(object, to: DynamicObject.self)
        guard let name = dynamic._info?.name ?? dynamic.unmanagedClass?.name else { return nil }
        return classInfo(named: name, dynamic: true)
    }

    /// `classInfo(of:)`, throwing ``LatticeError/classNotInSchema(className:)`` when there is none.
    func requireClass(of object: Object) throws -> ClassInfo {
        guard let info = classInfo(of: object) else { throw LatticeError.classNotInSchema(className: object.objectSchema.className) }
        return info
    }
}

extension ClassInfo {
    /// A new unmanaged instance of the class (a dynamic object knows its class from the start).
    func newInstance() -> Object {
        let object = type.init()
        (object as? DynamicObject)?.unmanagedClass = self
        return object
    }
}

extension ManagedCollection {
    /// The element stored as `payload`. An object element is found in the property's target class: for a
    /// dynamic class the element type (`DynamicObject`) does not name it.
    func element<E: _Persistable>(_ payload: UnsafeRawBufferPointer, _: E.Type) -> E {
        guard let target = property.target, target.type == DynamicObject.self, property.property.type == .object else {
            return E._latticeElement(payload, lattice)
        }
        let object = lattice.resolveLink(DynamicObject.self, payload, in: target)
        if let element = object as Any as? E { return element }
        preconditionFailure("Lattice internal error: '\(name)' holds a link to a deleted '\(target.name)'.")
    }
}
