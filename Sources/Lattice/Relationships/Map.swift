/// The key type of a ``Map``: `String` only.
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

/// A dictionary from strings to objects or values, sorted by key when managed.
///
/// Assigning nil through the subscript removes the key, as with a Swift dictionary. Deleting an object
/// that is a value leaves its key with nil (so object values are optional: `Map<String, Dog?>`).
/// Keys are 1 to 400 bytes of UTF-8.
///
/// A map is a Swift `Collection` of its entries in key order, each an ``Element`` `(key:value:)` like a
/// Swift dictionary's (Realm iterates `SingleMapEntry` values, a struct it needs for Objective-C; a tuple
/// serves the same code: `for (key, value) in map`, `entry.key`). Positions are `Int`s in key order; they
/// change with every insert or removal, so a map has no positional replace (`replaceSubrange`).
public final class Map<Key: _MapKey, Value: _Persistable>: RandomAccessCollection, LatticeCollection {
    /// An entry: a key and its value.
    public typealias Element = (key: Key, value: Value)

    private var storage: [Key: Value] = [:] {
        didSet { sorted = nil }
    }
    /// The unmanaged entries in key order, sorted once per change.
    private var sorted: [Element]?
    /// The stored map this map reads and writes, when it was made for a managed object.
    private let binding: ManagedCollection?
    /// The stored map of the object this unmanaged map was added with (see `_latticeDidAdd`): a
    /// reference taken before `add` writes through, as in Realm. Set once; a single load per access, so
    /// runtime exclusivity checks are off.
    @exclusivity(unchecked) private var promoted: ManagedCollection?
    /// The stored map, or nil while unmanaged.
    var managed: ManagedCollection? { binding ?? promoted }

    /// An empty, unmanaged map.
    public init() { binding = nil }

    init(managed: ManagedCollection) { binding = managed }

    private func store(_ lattice: Lattice, _ owner: Int64) -> MapStore {
        MapStore(lattice: lattice, property: managed!.property, owner: owner)
    }

    /// The unmanaged entries in key order.
    private var sortedStorage: [Element] {
        if let sorted { return sorted }
        let entries = storage.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value) }
        sorted = entries
        return entries
    }

    /// Whether the map belongs to a managed object.
    public var isManaged: Bool { managed != nil }

    /// The handle managing the map's owner, or nil while unmanaged (Realm's `realm`: named after the handle
    /// type, as ``Object/lattice`` is).
    public var lattice: Lattice? { managed?.owner._lattice }

    /// True once the owner has been deleted or its handle invalidated; always false while unmanaged.
    public var isInvalidated: Bool { managed?.owner.isInvalidated ?? false }

    /// The number of entries.
    public var count: Int {
        guard let managed else { return storage.count }
        return managed.read { try store($0, $1).count() }
    }

    /// 0.
    public var startIndex: Int { 0 }
    /// ``count``.
    public var endIndex: Int { count }
    /// `i + 1`.
    public func index(after i: Int) -> Int { i + 1 }
    /// `i - 1`.
    public func index(before i: Int) -> Int { i - 1 }

    /// The entry at `position` in key order; out of range stops with a message.
    public subscript(position: Int) -> Element {
        guard let managed else { return sortedStorage[position] }
        return managed.read { lattice, owner in
            let entries = try store(lattice, owner).entries()
            precondition(position >= 0 && position < entries.count,
                         "Index \(position) is out of range for Map '\(managed.name)' of \(entries.count) entries.")
            let entry = entries[position]
            return Map.element(entry, managed)
        }
    }

    /// Whether the map is empty.
    public var isEmpty: Bool {
        guard let managed else { return storage.isEmpty }
        return managed.read { try store($0, $1).isEmpty() }
    }

    /// The value for `key` (nil when absent); assigning nil removes the key. Setting needs a write
    /// transaction when managed.
    public subscript(key: Key) -> Value? {
        get {
            guard let managed else { return storage[key] }
            return managed.read { lattice, owner in
                try store(lattice, owner).payload(for: key._mapKeyString).map { $0.withUnsafeBytes { managed.element($0, Value.self) } }
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

    /// Sets the value for `key` and returns the value it replaces (nil when the key was absent), as a Swift
    /// dictionary's `updateValue` does (Realm's returns nothing; the result is discardable).
    @discardableResult
    public func updateValue(_ value: Value, forKey key: Key) -> Value? {
        let old = self[key]
        self[key] = value
        return old
    }

    /// Removes the entry for `key` and returns its value (nil when absent).
    @discardableResult
    public func removeValue(forKey key: Key) -> Value? {
        let old = self[key]
        if old != nil { self[key] = nil }
        return old
    }

    /// Removes the entry at `position` and returns it (an object value is not deleted).
    @discardableResult
    public func remove(at position: Int) -> Element {
        let entry = self[position]
        self[entry.key] = nil
        return entry
    }

    /// Sets the entries of `other` (another Map, a dictionary, any sequence of key-value pairs); for a key
    /// already present, stores `combine(current, new)`.
    public func merge<S: Sequence>(_ other: S, uniquingKeysWith combine: (Value, Value) throws -> Value) rethrows
    where S.Element == (key: Key, value: Value) {
        for (key, value) in Array(other) { self[key] = try self[key].map { try combine($0, value) } ?? value }
    }

    /// The entries as key-value pairs, in key order (Realm's name: a Map already is that sequence).
    public func asKeyValueSequence() -> [Element] { Array(self) }

    /// Removes every entry.
    public func removeAll() {
        guard let managed else { storage.removeAll(); return }
        managed.mutate { try store($0, $1).removeAll() }
    }

    /// The keys, sorted.
    public var keys: [Key] { Array(self).map(\.key) }

    /// The values, in key order.
    public var values: [Value] { Array(self).map(\.value) }

    /// A stored entry as an ``Element``.
    private static func element(_ entry: (key: [UInt8], value: [UInt8]), _ managed: ManagedCollection) -> Element {
        (key: Key(_mapKeyString: String(decoding: entry.key, as: UTF8.self)),
         value: entry.value.withUnsafeBytes { managed.element($0, Value.self) })
    }

    /// The entries, sorted by key.
    public func makeIterator() -> IndexingIterator<[Element]> {
        guard let managed else { return sortedStorage.makeIterator() }
        return managed.read { lattice, owner in
            try store(lattice, owner).entries().map { Map.element($0, managed) }
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
    /// Stores this map's entries as the new owner's map.
    /// An unmanaged map then becomes that stored map, so that a reference to it taken before `add`
    /// writes through, as in Realm; a map already bound elsewhere gives its stored entries.
    public func _latticeDidAdd(_ owner: Object, column: Int, replacing: Bool) throws {
        let managed = ManagedCollection(owner: owner, property: owner._info!.columns[column])
        let store = MapStore(lattice: managed.lattice, property: managed.property, owner: owner._key)
        let source: [Element] = self.managed == nil ? storage.map { ($0.key, $0.value) } : Array(self)
        let entries = try source.map { ($0.key._mapKeyString, try managed.encode($0.value)) }
        var unchanged = false
        if replacing && managed.updatesOnlyChanges {
            let stored = try MapTable(table: managed.property.collectionTable!, owner: owner._key).entries(managed.lattice.readTransaction())
            unchanged = stored.count == entries.count
                && Dictionary(uniqueKeysWithValues: stored.map { ($0.key, $0.payload) }) == Dictionary(uniqueKeysWithValues: entries)
        }
        if !unchanged {
            if replacing { try store.removeAll() }
            for (key, payload) in entries { try store.set(key, payload: payload) }
        }
        if self.managed == nil {
            promoted = managed
            storage = [:]
        }
    }
}
