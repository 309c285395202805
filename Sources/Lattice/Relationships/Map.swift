/// The key type of a ``Map``: `String` only (FEATURES R3).
public protocol _MapKey: Hashable, Comparable, Sendable {
    /// The key as stored.
    var _mapKeyString: String { get }
    /// The key from its stored form.
    init(_mapKeyString: String)
}

extension String: _MapKey {
    /// Itself.
    public var _mapKeyString: String { self }
    /// Itself.
    public init(_mapKeyString: String) { self = _mapKeyString }
}

/// A dictionary from strings to objects or values (FEATURES R3), sorted by key when managed.
///
/// Assigning nil through the subscript removes the key, as with a Swift dictionary. Deleting an object
/// that is a value leaves its key with nil (so object values are optional: `Map<String, Dog?>`).
/// Keys are 1 to 400 bytes of UTF-8.
public final class Map<Key: _MapKey, Value: _Persistable>: LatticeCollection {
    private var storage: [Key: Value] = [:]
    let managed: ManagedCollection?

    /// An empty, unmanaged map.
    public init() { managed = nil }

    init(managed: ManagedCollection) { self.managed = managed }

    private func store(_ lattice: Lattice, _ owner: Int64) -> MapStore {
        MapStore(lattice: lattice, property: managed!.property, owner: owner)
    }

    /// Whether the map belongs to a managed object.
    public var isManaged: Bool { managed != nil }

    /// The number of entries.
    public var count: Int {
        guard let managed else { return storage.count }
        return managed.read { try store($0, $1).entries().count }
    }

    /// Whether the map is empty.
    public var isEmpty: Bool { count == 0 }

    /// The value for `key` (nil when absent); assigning nil removes the key. Setting needs a write
    /// transaction when managed.
    public subscript(key: Key) -> Value? {
        get {
            guard let managed else { return storage[key] }
            return managed.read { lattice, owner in
                try store(lattice, owner).payload(for: key._mapKeyString).map { $0.withUnsafeBytes { Value._latticeElement($0, lattice) } }
            }
        }
        set {
            guard let managed else { storage[key] = newValue; return }
            managed.mutate { lattice, owner in
                try store(lattice, owner).set(key._mapKeyString, payload: try newValue.map(managed.encode))
            }
        }
    }

    /// Removes the entry for `key`.
    public func removeObject(for key: Key) { self[key] = nil }

    /// Removes every entry.
    public func removeAll() {
        guard let managed else { storage.removeAll(); return }
        managed.mutate { try store($0, $1).removeAll() }
    }

    /// The keys, sorted.
    public var keys: [Key] { map(\.key) }

    /// The values, in key order.
    public var values: [Value] { map(\.value) }

    /// The entries, sorted by key.
    public func makeIterator() -> IndexingIterator<[(key: Key, value: Value)]> {
        guard let managed else { return storage.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value) }.makeIterator() }
        return managed.read { lattice, owner in
            try store(lattice, owner).entries().map { entry in
                (key: Key(_mapKeyString: entry.key), value: entry.payload.withUnsafeBytes { Value._latticeElement($0, lattice) })
            }
        }.makeIterator()
    }

    /// For example `Map<String, Double> [ [0] (key: "a", value: 1.0) ]`.
    public var description: String { describeCollection("Map<\(Key.self), \(Value.self)>", Array(self)) }
}

/// A Map whatever its types: its entries by key string, as `Any` (nil values as `Optional<Any>.none`).
protocol AnyMap {
    var anyEntries: [String: Any] { get }
}

extension Map: AnyMap {
    var anyEntries: [String: Any] {
        Dictionary(map { ($0.key._mapKeyString, $0.value as Any) }, uniquingKeysWith: { first, _ in first })
    }
}

extension Map: _PersistableCollection {
    /// The element type.
    public typealias _StoredElement = Value

    /// A new unmanaged map of the entries of a `[String: Any]` dictionary or a Map, when they all convert
    /// (a copy: the map given is not shared).
    public static func _latticeCast(_ value: Any) -> Map? {
        guard let entries = Lattice.entries(of: value) else { return nil }
        let map = Map()
        for (key, item) in entries {
            guard let element = Value._latticeCast(item) else { return nil }
            map.storage[Key(_mapKeyString: key)] = element
        }
        return map
    }
    /// `.map`.
    public static var _latticeCollection: CollectionKind? { .map }
    /// The managed map of the property.
    public static func _latticeGet(_ owner: Object, column: Int) -> Map {
        Map(managed: ManagedCollection(owner: owner, property: owner._info!.columns[column]))
    }
    /// Replaces the managed map's contents with `value`'s.
    public static func _latticeSet(_ owner: Object, column: Int, _ value: Map) {
        let entries = Array(value)
        let target = _latticeGet(owner, column: column)
        target.removeAll()
        for entry in entries { target[entry.key] = entry.value }
    }
    /// Stores this unmanaged map's entries as the new owner's map.
    public func _latticeDidAdd(_ owner: Object, column: Int) throws {
        let managed = ManagedCollection(owner: owner, property: owner._info!.columns[column])
        let store = MapStore(lattice: managed.lattice, property: managed.property, owner: owner._key)
        try store.removeAll()
        for (key, value) in storage { try store.set(key._mapKeyString, payload: try managed.encode(value)) }
    }
}
