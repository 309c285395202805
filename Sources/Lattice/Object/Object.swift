import CLatticeSupport

/// The base class of model classes.
///
/// ```swift
/// final class Dog: Object {
///     @Persisted(primaryKey: true) var id = UUID()
///     @Persisted var name = ""
///     var scratch = 0   // not @Persisted: not stored
/// }
/// ```
/// An object is *unmanaged* until it is added to a ``Lattice``: a plain object, free to change and pass
/// around. A *managed* object reads and writes through to its database; changing it requires a write
/// transaction, and it belongs to the handle's isolation domain (it is not `Sendable`).
open class Object: CustomStringConvertible, Hashable {
    // The managed state below is set in `attach` and when the record is (re)cached, and read by property
    // accessors; each access is a single load or store of the whole field, never held across a call, so
    // no two accesses can overlap and runtime exclusivity checks (a measurable share of a property read)
    // are off.
    /// The managing handle; nil while unmanaged.
    @exclusivity(unchecked) final var _lattice: Lattice?
    /// `_lattice` again, for the property accessors and `_read`, which load it on every access: not
    /// reference counted, not even while a read uses it (`_lattice`, set with it and never cleared, keeps
    /// the handle alive as long as this object). Non-nil exactly when `_lattice` is.
    @usableFromInline @exclusivity(unchecked) final var _handle: Unmanaged<Lattice>?
    /// The class as the handle stores it; unowned: the handle (kept alive by `_lattice`) owns it.
    @exclusivity(unchecked) final unowned(unsafe) var _info: ClassInfo?
    @exclusivity(unchecked) final var _key: Int64 = 0
    /// The cached record (see `_record`), valid while `_generation` equals the handle's: the storage
    /// owning its copy, and where it is. Kept apart so that a property read loads the slice without
    /// retaining the storage. A slice without storage is lent by the handle's read snapshot (see
    /// `Lattice.lendsRecords`): property reads use it in its generation; anything else reads a copy.
    @exclusivity(unchecked) final var _storage: RecordStorage?
    @usableFromInline @exclusivity(unchecked) final var _slice: RecordSlice?
    @usableFromInline @exclusivity(unchecked) final var _generation: UInt64 = 0
    /// The handle's invalidation epoch when this object was attached.
    @usableFromInline @exclusivity(unchecked) final var _epoch: UInt64 = 0
    /// The creation stamp of the stored object this instance stands for (0: not known yet or none):
    /// a record with another stamp under the same key is a different, re-created object.
    @exclusivity(unchecked) final var _stamp: UInt64 = 0

    /// The cached record copy; nil when none is cached (or the cached one is lent, not copied).
    final var _record: RecordBuffer? {
        get {
            guard let storage = _storage, let slice = _slice else { return nil }
            return RecordBuffer(storage: storage, slice: slice)
        }
        set {
            _storage = newValue?.storage
            _slice = newValue?.slice
        }
    }

    /// Creates an unmanaged object with every property at its initial value.
    public required init() {
        // The model's own properties are set by now: any placeholding asked for them ends here, before
        // the rest of the model's initializer (which may make other objects) runs.
        lattice_set_placeholding(0)
        // Properties decoded by a synthesized `init(from:)` take their declarations' flags (see `Codable.swift`).
        if lattice_decoded_pending() != 0 { restoreDecodedDeclarations() }
    }

    /// Whether a `for … in` loop over results of this class (or a List or LinkingObjects of it) may reuse
    /// one instance for several objects.
    ///
    /// Off by default: every object a loop hands out is a new instance, so the class's `init()` and
    /// `deinit` run once per object. Override it to return `true` when neither has side effects a program
    /// could notice; then, when the loop body kept no reference to the previous step's object (no
    /// variable, collection, weak or unowned reference holds it), the iterator points that instance at
    /// the next object instead of allocating one, so a loop that keeps nothing costs no allocation per
    /// object. An object the loop keeps stays the object it was. Classes with stored properties besides
    /// `@Persisted` ones always get new instances. Lattice cannot check this promise (an initializer's
    /// or deinitializer's side effects are invisible to it), which is why it is opt-in; the
    /// `lattice-codegen` tool turns it on for the classes it generates, whose bodies it writes whole.
    /// `ObjectIdentifier`s of objects from different steps of such a loop may be equal: compare objects
    /// with `==`.
    open class var reusesInstancesWhileIterating: Bool { false }

    /// The name this class was stored under before it was renamed, or nil (the default). Override it
    /// after renaming a model class: the next migration (at a higher schema version) moves the objects
    /// stored under the old name to this class, with their links, collections and indexes, and no
    /// migration block is needed. Links and `LinkingObjects` of other classes follow.
    ///
    /// ```swift
    /// final class Exam: Object {            // was `final class Test: Object`
    ///     override class var originalName: String? { "Test" }
    ///     @Persisted var name = ""
    /// }
    /// ```
    open class var originalName: String? { nil }

    /// The handle managing this object, or nil while unmanaged.
    public var lattice: Lattice? { _lattice }

    /// True once the object has been deleted, or its handle invalidated. Always false while unmanaged.
    public var isInvalidated: Bool {
        guard let lattice = _lattice else { return false }
        if _generation == lattice.generation, _slice != nil { return false }
        return (try? refreshRecord(lattice, copied: false)) != true
    }

    /// The stored shape of this object's class.
    public var objectSchema: ObjectSchema {
        _info?.schema ?? (try? ModelMetadata.of(type(of: self)).schema) ?? ObjectSchema(className: "\(type(of: self))", properties: [])
    }

    // MARK: Record access

    /// The current record, fetched again when the handle's view changed; nil when deleted or invalidated.
    final func currentRecord(_ lattice: Lattice) throws -> RecordBuffer? {
        try refreshRecord(lattice, copied: true) ? _record : nil
    }

    /// Makes the cached record current, reading it again when the handle's view changed: in place when
    /// the snapshot lends it (see `Lattice.lendsRecords`) unless `copied`. False when the object was
    /// deleted (or re-created) or the handle invalidated.
    private final func refreshRecord(_ lattice: Lattice, copied: Bool) throws -> Bool {
        if _epoch != lattice.epoch { return false }
        if _generation == lattice.generation, _slice != nil, !copied || _storage != nil { return true }
        guard let info = _info else { return false }
        let txn = try lattice.readTransaction()
        return try KeyCodec.withObjectKey(_key) { k in
            try txn.get(info.objectsTable, k) { bytes in
                guard let bytes else { return false }
                let (storage, slice) = lattice.keptRecord(bytes, in: txn, copied: copied)
                let stamp = slice.layout.stamp
                if _stamp == 0 {
                    _stamp = stamp
                } else if stamp != _stamp {
                    return false
                }
                _storage = storage
                _slice = slice
                _generation = lattice.generation
                return true
            }
        }
    }

    /// The record of a managed object; stops with a clear message if the object is gone
    /// (a property getter cannot throw). The cached record's check is inlined into every read.
    @inline(__always)
    final func liveRecord(_ lattice: Lattice) -> RecordBuffer {
        // A current generation implies the current epoch (see `Lattice.epoch`).
        if _generation == lattice.generation, let record = _record { return record }
        requireRecord(lattice, copied: true)
        guard let record = _record else { preconditionFailure("requireRecord(copied: true) leaves a copied record cached") }
        return record
    }

    /// Stops with a clear message if the object is gone (accessors cannot throw); otherwise its cached
    /// record is current afterwards, lent by the snapshot or copied (`_slice`, with `_storage` kept alive
    /// by the caller while it reads the slice).
    @inline(__always)
    final func requireCurrentRecord(_ lattice: Lattice) {
        if _generation == lattice.generation, _slice != nil { return }
        requireRecord(lattice, copied: false)
    }

    /// After a change of the handle that rewrote no record of this object: its cached record, current at
    /// generation `before`, is current now.
    final func keepRecord(currentAt before: UInt64, _ lattice: Lattice) {
        if _generation == before, _slice != nil, _epoch == lattice.epoch { _generation = lattice.generation }
    }

    /// `refreshRecord`, stopping when the object is gone (property accessors cannot throw).
    @inline(never)
    private final func requireRecord(_ lattice: Lattice, copied: Bool) {
        do {
            if try refreshRecord(lattice, copied: copied) { return }
        } catch {
            fatalError(Lattice.stopMessage("reading a '\(_info?.name ?? "\(type(of: self))")' object (object key \(_key))",
                                           path: lattice.env.path, error))
        }
        // Objects reached through a link or backlink that names a missing object land here too.
        fatalError("\(LatticeError.objectInvalidated(className: _info?.name ?? "\(type(of: self))")) (object key \(_key) in "
            + "'\(lattice.env.path)'; if nothing deleted it, the file may be damaged: run `Lattice.verify()` on it)")
    }

    /// A property's value from the cached record. Inlined into the accessors of client models: a read
    /// is then a compare, two offset loads and the decode.
    @inlinable
    final func _read<V: _Persistable>(column: Int) -> V {
        _handle!._withUnsafeGuaranteedRef { lattice in
            // The cached record, as in `liveRecord`, without copying (and retaining) a `RecordBuffer`.
            if _generation == lattice.generation, let slice = _slice {
                guard let payload = slice.payload(column) else { return V._latticeDefault }
                return V._latticeDecode(payload)
            }
            return _readFetching(lattice, column: column)
        }
    }

    /// `_read` once the cached record is stale or missing.
    @usableFromInline
    final func _readFetching<V: _Persistable>(_ lattice: Lattice, column: Int) -> V {
        requireRecord(lattice, copied: false)
        return withExtendedLifetime(_storage) {
            guard let payload = _slice?.payload(column) else { return V._latticeDefault }
            return V._latticeDecode(payload)
        }
    }

    final func _write<V: _Persistable>(column: Int, _ value: V) {
        let lattice = _lattice!
        let info = _info!
        let property = info.columns[column]
        lattice.requireWriteForSetter(info, property)
        // Encoded into the handle's reused buffer: a setter allocates no array for its value.
        var payload: [UInt8] = []
        swap(&payload, &lattice.payloadScratch)
        payload.removeAll(keepingCapacity: true)
        value._latticeEncode(into: &payload)
        lattice.setProperty(of: self, property: property, payload: payload)
        swap(&payload, &lattice.payloadScratch)
    }

    /// Binds this (new or just-added) instance to a stored object.
    final func attach(to lattice: Lattice, info: ClassInfo, key: Int64, record: RecordBuffer?, stamp: UInt64 = 0) {
        attach(to: lattice, info: info, key: key, storage: record?.storage, slice: record?.slice, stamp: stamp)
    }

    /// Binds this instance to a stored object whose record copy (if any) is `slice` in `storage`.
    final func attach(to lattice: Lattice, info: ClassInfo, key: Int64, storage: RecordStorage?, slice: RecordSlice?,
                      stamp: UInt64 = 0) {
        var storage = storage
        var slice = slice
        // A frozen object may be read from several threads at once: its record is cached now, never on
        // a later read (a missing record stays missing: the object reads as invalidated, changing nothing).
        if slice == nil, lattice.frozenLock != nil, let record = try? lattice.fetchRecord(info, key: key) {
            storage = record.storage
            slice = record.slice
        }
        _lattice = lattice
        _handle = Unmanaged.passUnretained(lattice)
        _info = info
        bind(lattice, key: key, storage: storage.map(Unmanaged.passUnretained), slice: slice, stamp: stamp)
        // Each property's `Persisted.column` (see `ClassInfo.columnSlots`).
        let base = Unmanaged.passUnretained(self).toOpaque()
        info.columnSlots.withUnsafeBufferPointer { slots in
            for slot in slots { (base + slot.offset).storeBytes(of: slot.column, as: Int32.self) }
        }
    }

    /// Points this attached instance at the stored object `key` of its class: everything `attach` sets
    /// that differs from one object to another. `storage` (kept alive by the caller) is retained only
    /// when it is not the one this instance already holds (objects of one batch share a storage).
    private final func bind(_ lattice: Lattice, key: Int64, storage: Unmanaged<RecordStorage>?, slice: RecordSlice?,
                            stamp: UInt64 = 0) {
        _key = key
        _stamp = slice?.layout.stamp ?? stamp
        _epoch = lattice.epoch
        if _storage.map(Unmanaged.passUnretained)?.toOpaque() != storage?.toOpaque() { _storage = storage?.takeUnretainedValue() }
        _slice = slice
        _generation = slice == nil ? 0 : lattice.generation
    }

    /// `spare` (an attached instance) rebound to the stored object `key` of the same class, when no one
    /// can tell: `spare` is the only reference to it (no other strong, weak or unowned one, so nobody
    /// holds the object it stood for). Nil otherwise. Only for classes that opted in and keep no state
    /// besides `@Persisted` properties (`ClassInfo.recyclable`): spares an iterator the allocation, set-up
    /// and release of an object on every step of a loop that keeps none.
    static func recycled(_ spare: inout Object?, _ lattice: Lattice, key: Int64, storage: Unmanaged<RecordStorage>?,
                         slice: RecordSlice) -> Object? {
        guard isKnownUniquelyReferenced(&spare), let address = unsafeBitCast(spare, to: UnsafeRawPointer?.self) else { return nil }
        // Unmanaged: no retain and release around each check of this hot path (`spare` keeps it alive).
        let unobserved = Unmanaged<Object>.fromOpaque(address)._withUnsafeGuaranteedRef { object in
            guard _getWeakRetainCount(object) == 1, _getUnownedRetainCount(object) == 1 else { return false }
            object.bind(lattice, key: key, storage: storage, slice: slice)
            return true
        }
        return unobserved ? spare : nil
    }

    /// The value of a declared property, managed or not (nil for an empty optional). Links give the
    /// linked object, collections the collection.
    final func value(of property: PropertyInfo) -> Any? {
        let value = _lattice != nil ? property.valueType.getAny(self, column: property.column)
            : property.accessor.value(at: UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()) + property.offset)
        return valueByName(value, property.property)
    }

    // MARK: Description, equality

    /// For example `Dog { name = Rex; age = 1; owner = Person {...}; walkers = LinkingObjects<Person> [Person {...}] }`:
    /// linked objects are shown one level deep.
    open var description: String { describe(depth: 0) }

    final func describe(depth: Int) -> String {
        // A dynamic object's class is the stored one, not its Swift type.
        let dynamic = type(of: self) == DynamicObject.self
        let name = dynamic ? objectSchema.className : "\(type(of: self))"
        if let lattice = _lattice, (try? currentRecord(lattice)) == nil { return "\(name) { invalidated }" }
        let names = dynamic ? objectSchema.allProperties.map(\.name) : (try? ModelMetadata.of(type(of: self)))?.schema.allProperties.map(\.name)
        guard depth == 0, let names else { return "\(name) {...}" }
        let parts = names.map { "\($0) = \(Object.render(value(ofProperty: $0), depth: depth + 1))" }
        return "\(name) { " + parts.joined(separator: "; ") + " }"
    }

    private static func render(_ value: Any?, depth: Int) -> String {
        guard let value else { return "nil" }
        if let object = objectValue(value) { return object.describe(depth: depth) }
        if let collection = value as? any LatticeCollection {
            let elements = Array(collection.anyElements.prefix(10)).map { render($0, depth: depth) }
            let more = collection.count > 10 ? ", ... \(collection.count - 10) more" : ""
            return "\(collection.typeName) [" + elements.joined(separator: ", ") + more + "]"
        }
        return safeDescription(value)
    }

    /// Managed objects are equal when they are the same stored object (same file, class and key; an
    /// object deleted and another created under its primary key are not the same); unmanaged objects
    /// only to themselves.
    public static func == (lhs: Object, rhs: Object) -> Bool {
        if lhs === rhs { return true }
        guard let a = lhs._lattice, let b = rhs._lattice else { return false }
        // Creation stamps, where both are known, tell a deleted object from a new one given its key.
        return a.env === b.env && lhs._info?.name == rhs._info?.name && lhs._key == rhs._key
            && (lhs._stamp == 0 || rhs._stamp == 0 || lhs._stamp == rhs._stamp)
    }

    /// Consistent with ``==(_:_:)``.
    public func hash(into hasher: inout Hasher) {
        if let info = _info {
            hasher.combine(info.name)
            hasher.combine(_key)
        } else {
            hasher.combine(ObjectIdentifier(self))
        }
    }
}
