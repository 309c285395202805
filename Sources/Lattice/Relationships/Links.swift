/// An object owned by exactly one parent object, through a to-one link or a ``List``.
///
/// It is stored with its parent's file, deleted with its parent, replaced when the parent's property is
/// assigned a new one, and never queried or added on its own. Giving it a second parent is an error.
open class EmbeddedObject: Object {}

/// Objects are persistable as link targets: `@Persisted var owner: Person?` stores the target's key.
extension Object: _PersistableBase {
    /// `.object`.
    public class var _latticeType: PropertyType { .object }
    /// A new unmanaged object (never stored: to-one links must be optional).
    public class var _latticeDefault: Self { Self() }
    /// Links are decoded through their handle (see ``_latticeElement(_:_:)``), never from bytes alone.
    public class func _latticeDecode(_ payload: UnsafeRawBufferPointer) -> Self {
        preconditionFailure("Lattice internal error: a link was decoded without its handle.")
    }
    /// The object key of a managed object; nothing for an unmanaged one.
    public func _latticeEncode(into out: inout [UInt8]) {
        if _lattice != nil { Varint.append(Varint.zigzag(_key), to: &out) }
    }
    /// The 8-byte object key.
    public func _latticeKey(into out: inout [UInt8]) { KeyCodec.appendInt(_key, to: &out) }
    /// An object of this class, or a value that builds a new unmanaged one (see ``Object/init(value:)``).
    public class func _latticeCast(_ value: Any) -> Self? {
        if let object = value as? Self { return object }
        guard Lattice.isObjectValue(value) else { return nil }
        let object = self.init()
        return (try? object.fill(from: value)) == nil ? nil : object
    }
    /// The target's key; an unmanaged target is added first (with the same update policy).
    public func _latticeEncode(into out: inout [UInt8], adding lattice: Lattice) throws {
        let key = try lattice.linkTarget(self)
        Varint.append(Varint.zigzag(key), to: &out)
    }
    /// The linked object, managed by `lattice`.
    public class func _latticeElement(_ payload: UnsafeRawBufferPointer, _ lattice: Lattice) -> Self {
        guard let object = lattice.resolveLink(Self.self, payload) else {
            preconditionFailure("Lattice internal error: a collection holds a link to a deleted '\(Self.self)'.")
        }
        return object
    }
    /// This class.
    public class var _latticeObjectType: Object.Type? { self }
    /// Follows the link.
    public class func _latticeGetOptional(_ owner: Object, column: Int) -> Self? {
        owner._lattice!.linkTarget(of: owner, column: column, as: self)
    }
    /// Points the link at `value` (adding it when unmanaged), keeping backlinks in step.
    public class func _latticeSetOptional(_ owner: Object, column: Int, _ value: Object?) {
        owner._lattice!.setLink(of: owner, column: column, to: value)
    }
}

extension Lattice {
    /// The object `owner`'s link in `column` points at, or nil. (Generic rather than in the `Self`-returning
    /// accessor: a closure there that uses `Self` crashes the 6.3 compiler's IR generation.)
    func linkTarget<T: Object>(of owner: Object, column: Int, as type: T.Type) -> T? {
        // The property's target class: a dynamic class is not found by its Swift type.
        let target = owner._info?.columns[column].target
        // The link's key from the owner's record where it is (no copy of a record the snapshot lends).
        owner.requireCurrentRecord(self)
        let key = withExtendedLifetime(owner._storage) { owner._slice?.payload(column).flatMap { $0.isEmpty ? nil : Int64._latticeDecode($0) } }
        guard let key else { return nil }
        return resolveLink(T.self, key: key, in: target)
    }

    /// While true (in the task or thread that set it), links resolve to unread objects whether or not the
    /// key exists: the type-safe query builder identifies a link property by reading it from a probe
    /// object whose links name no stored object.
    @TaskLocal static var resolvesLinksUnread = false

    /// The object a link payload names, or nil for an empty payload or a missing object. `target` is the
    /// linked class when the caller knows it (otherwise it is looked up by `type`).
    func resolveLink<T: Object>(_ type: T.Type, _ payload: UnsafeRawBufferPointer, in target: ClassInfo? = nil) -> T? {
        guard !payload.isEmpty else { return nil }
        return resolveLink(type, key: Int64._latticeDecode(payload), in: target)
    }

    /// The object a link to object key `key` names (see `resolveLink(_:_:in:)`), its record read in place
    /// where the snapshot lends it, as a lookup by primary key does.
    func resolveLink<T: Object>(_ type: T.Type, key: Int64, in target: ClassInfo? = nil) -> T? {
        guard let info = target ?? classInfo(type) else { return nil }
        if Lattice.resolvesLinksUnread { return materialize(type, info, key: key, record: nil) }
        // Deleting an object clears every link to it: a link to a missing object means a damaged file.
        let object = reading("a linked '\(info.name)'") { _ in
            guard let object = try fetchObject(info, key: key, type: type) else { throw LatticeError.danglingLink(env.path, info, key) }
            return object
        }
        // `fetchObject` made an instance of `type`.
        return unsafeDowncast(object, to: T.self)
    }

    /// The key to store for a link to `target`, adding `target` (and what it reaches) when unmanaged.
    func linkTarget(_ target: Object) throws -> Int64 {
        let info = try requireClass(of: target)
        if target._lattice != nil && info.schema.isEmbedded {
            throw LatticeError.embeddedObject(className: info.name, reason: "it already has a parent; assign a new unmanaged object instead.")
        }
        return try addObject(target, update: writer?.addPolicy ?? .error, embedded: info.schema.isEmbedded)
    }

    /// Writes a to-one link from a property setter (failures fail the transaction, as setters cannot throw).
    func setLink(of owner: Object, column: Int, to target: Object?) {
        guard let info = owner._info else { return }
        let property = info.columns[column]
        requireWriteForSetter(info, property)
        recordingFailure {
            let old = owner.liveRecord(self)
            let oldKey = old.withBytes { RecordView($0)?.payload(column).flatMap { $0.isEmpty ? nil : Int64._latticeDecode($0) } }
            if let target, target._lattice != nil, target._key == oldKey, property.target?.schema.isEmbedded == true { return }
            var payload: [UInt8] = []
            if let target { Varint.append(Varint.zigzag(try linkTarget(target)), to: &payload) }
            try updateColumn(of: owner, property, payload: payload)  // a replaced embedded object goes with its slot
        }
    }
}
