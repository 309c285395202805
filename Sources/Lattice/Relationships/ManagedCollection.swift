/// What a managed collection (List, MutableSet, Map, LinkingObjects) is bound to: a property of a
/// managed object. Keeps the owner (and so the handle) alive, like a property would.
struct ManagedCollection {
    let owner: Object
    let property: PropertyInfo

    var lattice: Lattice { owner._lattice! }
    var info: ClassInfo { owner._info! }
    var name: String { "\(info.name).\(property.name)" }

    /// The owner's key; stops with a message if the owner was deleted (collection accessors cannot throw).
    var ownerKey: Int64 {
        owner.requireCurrentRecord(lattice)
        return owner._key
    }

    /// Whether the write adds its owner with `update: .modified`, where a collection equal to the stored
    /// one is no change: it is not written again, nor reported to observers. Not for embedded objects
    /// (see ``updatesEmbeddedInPlace``).
    var updatesOnlyChanges: Bool {
        lattice.writer?.addPolicy == .modified && property.target?.schema.isEmbedded != true
    }

    /// Whether the write adds its owner with `update: .modified` and this is a List of embedded objects,
    /// whose stored elements are then updated in place (`Lattice.updateEmbeddedList`).
    var updatesEmbeddedInPlace: Bool {
        lattice.writer?.addPolicy == .modified && property.target?.schema.isEmbedded == true
    }

    /// Runs a read for a non-throwing accessor.
    func read<R>(_ body: (Lattice, Int64) throws -> R) -> R {
        let key = ownerKey
        return lattice.reading("'\(name)'") { _ in try body(lattice, key) }
    }

    /// Runs a mutation: outside a write transaction it stops with a message; inside, a failure fails the
    /// transaction at commit (collection mutators cannot throw).
    ///
    /// A change that wrote no record (it added, deleted or unlinked no object: values, or objects already
    /// stored, entered or left the collection) leaves the owner's cached record current: a collection's
    /// entries are stored apart from its owner's record (the column's payload is empty), so the next
    /// change need not fetch the record again to check that the owner exists.
    func mutate(_ body: (Lattice, Int64) throws -> Void) {
        lattice.requireWriteForSetter(info, property)
        let key = ownerKey
        let before = (generation: lattice.generation, recordWrites: lattice.recordWrites)
        lattice.recordingFailure { try body(lattice, key) }
        if lattice.recordWrites == before.recordWrites { owner.keepRecord(currentAt: before.generation, lattice) }
    }

    /// The payload of an element, adding an unmanaged object element first.
    func encode<E: _Persistable>(_ element: E) throws -> [UInt8] {
        var payload: [UInt8] = []
        try element._latticeEncode(into: &payload, adding: lattice)
        try lattice.checkSize(info, property, size: payload.count)
        return payload
    }
}

extension Lattice {
    /// The elements of a value given for a List or MutableSet: an array, or a List, MutableSet, Results or
    /// LinkingObjects (read now: a snapshot); nil or `NSNull` stands for none, as in Realm.
    static func elements(of value: Any) -> [Any]? {
        if let array = value as? [Any] { return array }
        if isNilValue(value) { return [] }
        if value is any AnyMap { return nil }
        return (value as? any LatticeCollection)?.anyElements
    }

    /// The entries of a value given for a Map: a `[String: Any]` dictionary or a Map (read now); nil or
    /// `NSNull` stands for none.
    static func entries(of value: Any) -> [String: Any]? {
        if let dictionary = value as? [String: Any] { return dictionary }
        if isNilValue(value) { return [:] }
        return (value as? any AnyMap)?.anyEntries
    }
}

/// Collections of Lattice: ``Results``, ``List``, ``MutableSet`` and ``LinkingObjects``. Aggregates and
/// other shared behaviour are defined once on this protocol.
public protocol LatticeCollection: Sequence, CustomStringConvertible {
    /// The number of elements.
    var count: Int { get }
}

extension LatticeCollection {
    /// The elements, type-erased (for descriptions).
    var anyElements: [Any] { map { $0 } }
    /// For example `List<Dog>`.
    var typeName: String { "\(type(of: self))" }
}

/// What ``List``, ``MutableSet`` and ``Map`` share as property values: no record payload (their elements
/// live in their own database), the element's type and optionality in the schema.
public protocol _PersistableCollection: _Persistable, AnyObject {
    /// The element (for a Map, the value) type.
    associatedtype _StoredElement: _Persistable
    /// An empty, unmanaged collection.
    init()
}

extension _PersistableCollection {
    /// The element type's.
    public static var _latticeType: PropertyType { _StoredElement._latticeType }
    /// Whether elements may be nil.
    public static var _latticeIsOptional: Bool { _StoredElement._latticeIsOptional }
    /// The element class, for collections of objects.
    public static var _latticeObjectType: Object.Type? { _StoredElement._latticeObjectType }
    /// An empty unmanaged collection.
    public static var _latticeDefault: Self { Self() }
    /// Collections have no record payload.
    public static func _latticeDecode(_ payload: UnsafeRawBufferPointer) -> Self { Self() }
    /// No record payload.
    public func _latticeEncode(into out: inout [UInt8]) {}
    /// Not indexable.
    public func _latticeKey(into out: inout [UInt8]) {}
    /// The collection itself.
    public var _latticeAnyValue: Any? { self }
}
