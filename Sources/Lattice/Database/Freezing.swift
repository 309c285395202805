import Foundation

/// Values read through a handle and confined to its isolation domain: objects, ``Results``, ``List``,
/// ``MutableSet``, ``Map`` and ``LinkingObjects``. They can be frozen (an immutable snapshot readable
/// from any thread), thawed (a live counterpart in a live handle) and handed to another handle with a
/// ``ThreadSafeReference``.
public protocol ThreadConfined: SendableMetatype {
    /// Whether the value belongs to a frozen handle: it never changes and may be read from any thread.
    var isFrozen: Bool { get }
    /// The value as a frozen snapshot at its handle's current version (itself when already frozen; an
    /// unmanaged object or collection is returned as is, unfrozen). See the *Concurrency* article.
    func freeze() -> Self
    /// A live counterpart of a frozen value in a new live handle at the latest commit, or nil when it no
    /// longer exists there; a value that is not frozen is returned as is.
    func thaw() -> Self?
    /// The same value read through `lattice` at its current version; nil when it does not exist there
    /// or belongs to another file. (Implementation detail of freezing and references.)
    func _latticeRebound(in lattice: Lattice) -> Self?
    /// The handle the value is read through, nil while unmanaged. (Implementation detail.)
    var _latticeHandle: Lattice? { get }
}

extension ThreadConfined {
    /// `freeze()` by rebinding to the handle's frozen twin.
    func frozenByRebinding(_ gone: (Lattice) -> Self) -> Self {
        guard let lattice = _latticeHandle, !lattice.isFrozen else { return self }
        let frozen = lattice.freeze()
        return _latticeRebound(in: frozen) ?? gone(frozen)
    }

    /// `thaw()` by rebinding to a new live handle sharing the frozen handle's classes.
    func thawedByRebinding() -> Self? {
        guard let lattice = _latticeHandle, lattice.isFrozen else { return self }
        guard let live = try? lattice.thaw() else { return nil }
        return _latticeRebound(in: live)
    }
}

/// A frozen value that may cross isolation domains: `Sendable`, readable from any number of threads
/// at once. Members of the value read directly through it (`frozen.count`, `frozen.first?.name`).
///
/// ```swift
/// let adults = Frozen(lattice.objects(Dog.self).filter("age >= 2"))!
/// await withTaskGroup(of: Int.self) { group in
///     for _ in 0..<8 { group.addTask { adults.count } }
/// }
/// ```
@dynamicMemberLookup
public struct Frozen<Value: ThreadConfined>: @unchecked Sendable {
    // @unchecked Sendable is safe: `value` is frozen (checked in init). A frozen handle never writes
    // and never changes snapshot; every read through it (and through its objects and collections) holds
    // the lock of its shared snapshot (`Lattice.reading`, `Lattice.synchronized`, `Transaction`), so the
    // LMDB transaction and the read caches are used by one thread at a time; frozen objects cache their
    // record when created and never change it afterwards (`Object.attach`).

    /// The frozen value.
    public let value: Value

    /// Freezes `value`; nil when it cannot be frozen (an unmanaged object or collection).
    public init?(_ value: Value) {
        let frozen = value.freeze()
        guard frozen.isFrozen else { return nil }
        self.value = frozen
    }

    /// A member of the frozen value.
    public subscript<T>(dynamicMember keyPath: KeyPath<Value, T>) -> T { value[keyPath: keyPath] }
}

// MARK: - Handles

extension Lattice {
    /// Whether this is a frozen handle: pinned to one version, read-only, readable from any thread.
    public var isFrozen: Bool { frozenLock != nil }

    /// A frozen handle on this handle's current snapshot: it never changes, reads from any thread at
    /// once, and throws ``LatticeError/frozen(operation:)`` on writes. Everything frozen at one version in
    /// the process shares one read snapshot (one reader slot) until the last of it is released; until
    /// then the version's pages are pinned (see *Versions and file growth* in the *Concurrency* article).
    /// Inside a write transaction, the frozen handle reads the last commit (the write's own changes are
    /// not part of it). Returns itself when already frozen.
    public func freeze() -> Lattice {
        if isFrozen { return self }
        do {
            let snapshot: Transaction
            if writer != nil {
                snapshot = try Transaction(readOn: env)
                try snapshot.renew()
            } else {
                snapshot = try readTransaction()
            }
            if let twin = frozenTwin, (try? twin.readTransaction())?.id == snapshot.id { return twin }
            let frozen = try Lattice(sharing: self, snapshot: SharedSnapshots.share(snapshot))
            frozenTwin = frozen
            return frozen
        } catch {
            fatalError("Lattice could not freeze a snapshot of '\(env.path)': \(error)")
        }
    }

    /// A live handle on the same file at the latest commit (itself when not frozen).
    public func thaw() throws -> Lattice {
        isFrozen ? try Lattice(sharing: self, snapshot: nil) : self
    }

    /// The instance of this handle standing for the stored object `object` stands for (same file, class,
    /// key and creation stamp); nil when it does not exist in this handle's view.
    func counterpart<T: Object>(of object: T) -> T? {
        guard let source = object._lattice, source.env === env, let name = object._info?.name,
              let info = classInfo(named: name, dynamic: type(of: object) == DynamicObject.self),
              let record = try? fetchRecord(info, key: object._key) else { return nil }
        if object._stamp != 0, record.stamp != object._stamp { return nil }
        let instance = unsafeDowncast(info.instance(type(of: object)), to: T.self)  // an instance of T's subtype
        instance.attach(to: self, info: info, key: object._key, record: record)
        return instance
    }
}

// MARK: - Objects

extension Object: ThreadConfined {
    /// Whether the object belongs to a frozen handle (see ``freeze()``).
    public var isFrozen: Bool { _lattice?.isFrozen ?? false }

    /// The handle the object is read through.
    public var _latticeHandle: Lattice? { _lattice }

    /// The object as a frozen snapshot at its handle's current version: immutable, readable from any
    /// thread (wrap it in ``Frozen`` to pass it across isolation domains). Setting a property of it stops
    /// with ``LatticeError/frozen(operation:)``. An object deleted at that version gives a frozen
    /// instance that reads as invalidated; an unmanaged object is returned as is.
    public func freeze() -> Self {
        frozenByRebinding { frozen in
            // Gone at that version: an instance whose stamp matches no record reads as invalidated.
            let gone = type(of: self).init()
            if let info = _info { gone.attach(to: frozen, info: info, key: _key, record: nil) }
            gone._record = nil
            gone._generation = 0
            gone._stamp = .max
            return gone
        }
    }

    /// A live instance of this frozen object in a new live handle at the latest commit; nil when it was
    /// deleted since. Returns the object itself when it is not frozen.
    public func thaw() -> Self? { thawedByRebinding() }

    /// This object read through `lattice`.
    public func _latticeRebound(in lattice: Lattice) -> Self? { lattice.counterpart(of: self) }
}

// MARK: - Collections

/// The collection of the same property of `managed`'s owner read through `lattice`.
private func reboundCollection(_ managed: ManagedCollection?, in lattice: Lattice) -> ManagedCollection? {
    guard let managed, let owner = managed.owner._latticeRebound(in: lattice),
          let property = owner._info?.property(named: managed.property.name) else { return nil }
    return ManagedCollection(owner: owner, property: property)
}

/// The collection of a frozen owner that no longer exists: it reads as invalidated.
private func goneCollection(_ managed: ManagedCollection?) -> ManagedCollection? {
    guard let managed else { return nil }
    return ManagedCollection(owner: managed.owner.freeze(), property: managed.property)
}

extension List: ThreadConfined {
    /// Whether the list belongs to a frozen object.
    public var isFrozen: Bool { managed?.owner.isFrozen ?? false }
    /// The handle the list is read through.
    public var _latticeHandle: Lattice? { lattice }
    /// The list as a frozen snapshot (see ``Object/freeze()``); an unmanaged list is returned as is.
    public func freeze() -> List<Element> {
        frozenByRebinding { _ in goneCollection(managed).map { List(managed: $0) } ?? self }
    }
    /// The live list of the thawed owner (see ``Object/thaw()``).
    public func thaw() -> List<Element>? { thawedByRebinding() }
    /// This list read through `lattice`.
    public func _latticeRebound(in lattice: Lattice) -> List<Element>? {
        reboundCollection(managed, in: lattice).map { List(managed: $0) }
    }
}

extension MutableSet: ThreadConfined {
    /// Whether the set belongs to a frozen object.
    public var isFrozen: Bool { managed?.owner.isFrozen ?? false }
    /// The handle the set is read through.
    public var _latticeHandle: Lattice? { lattice }
    /// The set as a frozen snapshot (see ``Object/freeze()``); an unmanaged set is returned as is.
    public func freeze() -> MutableSet<Element> {
        frozenByRebinding { _ in goneCollection(managed).map { MutableSet(managed: $0) } ?? self }
    }
    /// The live set of the thawed owner (see ``Object/thaw()``).
    public func thaw() -> MutableSet<Element>? { thawedByRebinding() }
    /// This set read through `lattice`.
    public func _latticeRebound(in lattice: Lattice) -> MutableSet<Element>? {
        reboundCollection(managed, in: lattice).map { MutableSet(managed: $0) }
    }
}

extension Map: ThreadConfined {
    /// Whether the map belongs to a frozen object.
    public var isFrozen: Bool { managed?.owner.isFrozen ?? false }
    /// The handle the map is read through.
    public var _latticeHandle: Lattice? { lattice }
    /// The map as a frozen snapshot (see ``Object/freeze()``); an unmanaged map is returned as is.
    public func freeze() -> Map<Key, Value> {
        frozenByRebinding { _ in goneCollection(managed).map { Map(managed: $0) } ?? self }
    }
    /// The live map of the thawed owner (see ``Object/thaw()``).
    public func thaw() -> Map<Key, Value>? { thawedByRebinding() }
    /// This map read through `lattice`.
    public func _latticeRebound(in lattice: Lattice) -> Map<Key, Value>? {
        reboundCollection(managed, in: lattice).map { Map(managed: $0) }
    }
}

extension LinkingObjects: ThreadConfined {
    /// Whether the linking objects belong to a frozen object.
    public var isFrozen: Bool { managed?.owner.isFrozen ?? false }
    /// The handle the linking objects are read through.
    public var _latticeHandle: Lattice? { lattice }
    /// The linking objects as a frozen snapshot (see ``Object/freeze()``).
    public func freeze() -> LinkingObjects<Element> {
        frozenByRebinding { _ in goneCollection(managed).map { LinkingObjects(managed: $0) } ?? self }
    }
    /// The live linking objects of the thawed owner (see ``Object/thaw()``).
    public func thaw() -> LinkingObjects<Element>? { thawedByRebinding() }
    /// These linking objects read through `lattice`.
    public func _latticeRebound(in lattice: Lattice) -> LinkingObjects<Element>? {
        reboundCollection(managed, in: lattice).map { LinkingObjects(managed: $0) }
    }
}

// MARK: - Actors

extension Lattice {
    /// Opens a handle confined to `actor`: use it (and everything read through it) only there, with
    /// ``asyncWrite(isolation:_:)`` for writes. The Swift 6 compiler keeps the handle, which is not
    /// `Sendable`, from leaving the actor's isolation. Notifications of observers registered through it
    /// are delivered on the actor, and with ``autorefresh`` on (the default) each commit of another
    /// handle or process moves it to the latest commit there, as Realm's actor-confined handles do.
    ///
    /// ```swift
    /// actor Store {
    ///     var lattice: Lattice!
    ///     init(configuration: Lattice.Configuration) async throws {
    ///         lattice = try await Lattice(configuration: configuration, actor: self)
    ///     }
    /// }
    /// ```
    public convenience init(configuration: Configuration, actor: isolated any Actor) async throws {
        try self.init(configuration: configuration)
        confinedActor = actor
        try observation.followCommits()
    }

    /// The actor the handle was opened for with ``init(configuration:actor:)``, if any.
    public var actor: (any Actor)? { confinedActor }
}
