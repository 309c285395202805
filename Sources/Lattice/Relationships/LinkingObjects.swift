/// The objects linking to an object through one property: live and read-only.
///
/// ```swift
/// final class Dog: Object {
///     @Persisted(originProperty: "dogs") var walkers: LinkingObjects<Person>
/// }
/// ```
/// Follows to-one links and lists; an object that appears twice in one list links twice. ``count`` is
/// one seek in the backlink table, listing one seek plus one step per linking object, whatever the
/// size of the database. Empty while the object is unmanaged.
public struct LinkingObjects<Element: Object>: RandomAccessCollection, LatticeCollection, OriginDeclaring {
    /// The declaration's origin property (`@Persisted(originProperty:)`), read when the model is reflected.
    let originProperty: String?
    /// Nil while unmanaged: every unmanaged object of a class with linking objects makes one, and it is empty.
    private let state: LinkingObjectsState?

    /// Empty (the value of an unmanaged object's property).
    public init() {
        originProperty = nil
        state = nil
    }

    @usableFromInline
    init(originProperty: String) {
        self.originProperty = originProperty
        state = nil
    }

    init(managed: ManagedCollection) {
        originProperty = nil
        state = LinkingObjectsState(managed: managed)
    }

    /// The property bound to, or nil while unmanaged.
    var managed: ManagedCollection? { state?.managed }
    /// The origin class and its linking property (nil while unmanaged).
    var originInfo: ClassInfo? { state?.originInfo }
    var originLink: PropertyInfo? { state?.originLink }

    private func keys() -> [Int64] { state?.keys() ?? [] }

    /// The handle managing the object linked to, or nil while unmanaged (Realm's `realm`: named after the
    /// handle type, as ``Object/lattice`` is).
    public var lattice: Lattice? { managed?.owner._lattice }

    /// True once the object linked to has been deleted or its handle invalidated; always false while unmanaged.
    public var isInvalidated: Bool { managed?.owner.isInvalidated ?? false }

    /// The first position of `object` among the linking objects, or nil.
    public func index(of object: Element) -> Int? {
        guard let managed, object._lattice?.env === managed.lattice.env, let originInfo,
              object._info?.name == originInfo.name else { return nil }
        return keys().firstIndex(of: object._key)
    }

    /// `contains(_:)`: through a to-one link, whether `element` links here (its own record read, however
    /// many objects link here); through a List, ``index(of:)`` (a search of the linking objects' keys).
    public func _customContainsEquatableElement(_ element: Element) -> Bool? {
        guard let managed else { return nil }
        if let link = originLink, link.isLink, let originInfo, element._lattice?.env === managed.lattice.env,
           element._info?.name == originInfo.name {
            if managed.owner.isInvalidated { return false }
            // The element's record as this collection's handle sees it (its own handle may see another commit).
            return managed.read { lattice, owner in
                guard let record = try lattice.fetchRecord(originInfo, key: element._key),
                      element._stamp == 0 || record.stamp == element._stamp else { return false }
                return record.withBytes { RecordView($0)?.payload(link.column).flatMap(lattice.linkedKey) } == owner
            }
        }
        return index(of: element) != nil
    }

    /// `firstIndex(of:)` is ``index(of:)``.
    public func _customIndexOfEquatableElement(_ element: Element) -> Int?? {
        managed == nil ? nil : .some(index(of: element))
    }

    /// 0.
    public var startIndex: Int { 0 }
    /// ``count``.
    public var endIndex: Int { count }
    // Not the standard library's defaults, which check `i` against `endIndex` (a `count`) on every step
    // of `reversed()`, `last(where:)` and slices; the subscript checks its position itself.
    /// `i + 1`.
    public func index(after i: Int) -> Int { i + 1 }
    /// `i - 1`.
    public func index(before i: Int) -> Int { i - 1 }

    /// The number of linking objects: one seek in the backlink table, whatever their number.
    public var count: Int { state?.count ?? 0 }

    /// The linking object at `position` (positions asked in increasing order are read in batches).
    public subscript(position: Int) -> Element {
        guard let state else { preconditionFailure("Index \(position) is out of range for 0 linking objects.") }
        // The state creates instances of `Element.self` only.
        return unsafeDowncast(state.object(at: position, type: Element.self), to: Element.self)
    }

    /// The first linking object, or nil: one object read.
    public var first: Element? { end(first: true) }

    /// The last linking object, or nil: one object read.
    public var last: Element? { end(first: false) }

    private func end(first: Bool) -> Element? {
        guard let state, let originInfo, let key = state.endKey(first: first) else { return nil }
        return unsafeDowncast(state.managed.lattice.materializeReading(Element.self, originInfo, key: key), to: Element.self)
    }

    /// Walks the linking objects as they were when the loop began, reading them in batches as a loop over
    /// ``Results`` does (an instance the loop did not keep may be handed out again).
    public func makeIterator() -> Iterator { _makeIterator(reversed: false) }

    /// The iterator, walking the linking objects from the last to the first with `reversed`.
    public func _makeIterator(reversed: Bool) -> Iterator {
        guard let managed, let originInfo else { return Iterator(reader: nil) }
        return Iterator(reader: KeyedObjects(lattice: managed.lattice, info: originInfo, type: Element.self,
                                             keys: reversed ? keys().reversed() : keys()))
    }

    /// The linking objects from the last to the first, read as a `for … in` loop reads them, backwards.
    public func reversed() -> ReversedLatticeCollection<LinkingObjects> { ReversedLatticeCollection(self) }

    /// The last linking object that satisfies `predicate`, or nil: tested from the last, read as
    /// ``reversed()`` reads them.
    public func last(where predicate: (Element) throws -> Bool) rethrows -> Element? {
        try reversed().first(where: predicate)
    }

    /// The iterator of ``LinkingObjects``.
    public struct Iterator: IteratorProtocol {
        fileprivate var reader: KeyedObjects?

        /// The next linking object still present, or nil at the end.
        public mutating func next() -> Element? {
            // The reader creates instances of `Element.self` only.
            // Not `Optional.map`: generic over `Element`, it would look metadata up on every step.
            guard let object = reader?.next() else { return nil }
            return unsafeDowncast(object, to: Element.self)
        }
    }

    /// The linking objects transformed in order, read as a `for … in` loop reads them.
    public func map<T>(_ transform: (Element) throws -> T) rethrows -> [T] {
        var out: [T] = []
        out.reserveCapacity(count)
        for object in self { out.append(try transform(object)) }
        return out
    }

    /// For example `LinkingObjects<Person> [ [0] Person { ... } ]`.
    public var description: String { describeCollection("LinkingObjects<\(Element.self)>", Array(self)) }
}

/// A value that names the origin property of a ``LinkingObjects`` declaration.
protocol OriginDeclaring {
    var originProperty: String? { get }
}

extension LinkingObjects: _Persistable {
    /// `.linkingObjects`.
    public static var _latticeType: PropertyType { .linkingObjects }
    /// Never nil.
    public static var _latticeIsOptional: Bool { false }
    /// Empty.
    public static var _latticeDefault: LinkingObjects { LinkingObjects() }
    /// No record payload: computed from the backlink table.
    public static func _latticeDecode(_ payload: UnsafeRawBufferPointer) -> LinkingObjects { LinkingObjects() }
    /// No record payload.
    public func _latticeEncode(into out: inout [UInt8]) {}
    /// Not indexable.
    public func _latticeKey(into out: inout [UInt8]) {}
    /// Never assignable.
    public static func _latticeCast(_ value: Any) -> LinkingObjects? { nil }
    /// The collection itself.
    public var _latticeAnyValue: Any? { self }
    /// The origin class.
    public static var _latticeObjectType: Object.Type? { Element.self }
    /// The live linking objects of the property.
    public static func _latticeGet(_ owner: Object, column: Int) -> LinkingObjects {
        LinkingObjects(managed: ManagedCollection(owner: owner, property: owner._info!.columns[column]))
    }
    /// Linking objects are read-only: they change when the links pointing here change.
    public static func _latticeSet(_ owner: Object, column: Int, _ value: LinkingObjects) {
        preconditionFailure("'\(owner._info?.name ?? "?").\(owner._info?.columns[column].name ?? "?")' is LinkingObjects, which is read-only: "
            + "change the links of '\(Element.self)' instead.")
    }
}

/// What a ``LinkingObjects`` is bound to, and its keys as last read: not generic, so that this work is
/// compiled once, optimized, instead of running unspecialized (reading each field of a generic struct
/// through its type's metadata) in every client.
final class LinkingObjectsState {
    let managed: ManagedCollection
    /// The origin class and its linking property, found when the collection is made (nil when the
    /// declaration names no linking property of the origin class).
    let originInfo: ClassInfo?
    let originLink: PropertyInfo?
    // Without runtime exclusivity checks (a call on every read): only `keys()` and `count` touch them,
    // under the handle's `synchronized`, and nothing they call comes back here.
    /// The handle's `structure` the keys were read at (see `ListObjectReads`).
    @exclusivity(unchecked) private var structure: UInt64 = 0
    @exclusivity(unchecked) private var cachedKeys: [Int64] = []
    @exclusivity(unchecked) private var positional = PositionalReader()

    init(managed: ManagedCollection) {
        self.managed = managed
        let origin = managed.property.target
        let link = managed.property.property.originProperty.flatMap { origin?.property(named: $0) }
        (originInfo, originLink) = link == nil ? (nil, nil) : (origin, link)
    }

    /// The keys of the linking objects, in backlink order (read again once the handle's view changed).
    func keys() -> [Int64] {
        guard let property = originLink else { return [] }
        let lattice = managed.lattice
        return lattice.synchronized {
            if structure == lattice.structure { return cachedKeys }
            cachedKeys = managed.read { lattice, owner in
                try lattice.backlinks(of: managed.info, key: owner, through: property).flatMap { Array(repeating: $0.source, count: $0.count) }
            }
            structure = lattice.structure
            return cachedKeys
        }
    }

    /// The linking object at `position`, an instance of `type` (positions asked in increasing order are
    /// read in batches). Here rather than in the generic subscript, whose fields are reached through metadata.
    func object(at position: Int, type: Object.Type) -> Object {
        let lattice = managed.lattice
        // Read ahead in this generation of the handle's view: neither the keys nor the owner needed.
        if let object = lattice.synchronized({ positional.batched(at: position) }) { return object }
        let keys = keys()
        precondition(position >= 0 && position < keys.count, "Index \(position) is out of range for \(keys.count) linking objects.")
        guard let originInfo else { preconditionFailure("a non-empty LinkingObjects has an origin class") }
        let object = lattice.synchronized {
            self.positional.object(at: position, of: keys, lattice: lattice, info: originInfo, type: type)
        }
        // Gone since the keys were taken: an instance that reads as deleted.
        return object ?? lattice.materialize(type, originInfo, key: keys[position], record: nil)
    }

    /// The key of the first (or last) linking object: from the keys when they are current, otherwise one
    /// seek in the backlink table, whatever the number of links.
    func endKey(first: Bool) -> Int64? {
        guard let property = originLink else { return nil }
        let lattice = managed.lattice
        return lattice.synchronized {
            if structure == lattice.structure { return first ? cachedKeys.first : cachedKeys.last }
            return managed.read { lattice, owner in try lattice.backlinkEnd(of: managed.info, key: owner, through: property, first: first) }
        }
    }

    /// The number of linking objects: one seek in the backlink table, whatever their number.
    var count: Int {
        guard let property = originLink else { return 0 }
        let lattice = managed.lattice
        return lattice.synchronized {
            if structure == lattice.structure { return cachedKeys.count }
            return managed.read { lattice, owner in try lattice.backlinkCount(of: managed.info, key: owner, through: property) }
        }
    }
}
