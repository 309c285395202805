/// An unordered collection of unique objects or values.
///
/// Unmanaged, a plain in-memory set; managed, each insert, remove or membership test is one B-tree
/// operation on the set's elements. Objects are unique by identity of the stored object, values by
/// equality (`-0.0 == 0.0`).
///
/// A set is a Swift `Collection` whose positions are its elements' order (key order when managed): they
/// change with every insert or removal, so a set has no positional replace (`replaceSubrange`) as a
/// List has; ``remove(at:)`` removes the element at a position just read.
public final class MutableSet<Element: _Persistable & Hashable>: RandomAccessCollection, LatticeCollection {
    private var values: [Element] = []
    /// The stored set this set reads and writes, when it was made for a managed object.
    private let binding: ManagedCollection?
    /// The stored set of the object this unmanaged set was added with (see `_latticeDidAdd`): a
    /// reference taken before `add` writes through, as in Realm. Set once; a single load per access, so
    /// runtime exclusivity checks are off.
    @exclusivity(unchecked) private var promoted: ManagedCollection?
    /// The stored set, or nil while unmanaged.
    var managed: ManagedCollection? { binding ?? promoted }

    /// An empty, unmanaged set.
    public init() { binding = nil }

    init(managed: ManagedCollection) { binding = managed }

    private func store(_ lattice: Lattice, _ owner: Int64) -> SetStore {
        SetStore(lattice: lattice, property: managed!.property, owner: owner)
    }

    /// The set key of an element payload: the object key, or the value's index key (long keys are
    /// shortened with a hash so they fit LMDB's key limit).
    private static func elementKey(_ payload: [UInt8]) -> [UInt8] {
        var key: [UInt8] = []
        payload.withUnsafeBytes { bytes in
            if Element._latticeObjectType != nil {
                KeyCodec.appendInt(Int64._latticeDecode(bytes), to: &key)
            } else {
                Element.key(fromPayload: bytes, into: &key)
            }
        }
        if key.count > FileLayout.maxIndexKey - 16 {
            let hash = KeyCodec.fnv1a64(key)
            key.removeLast(key.count - (FileLayout.maxIndexKey - 24))
            withUnsafeBytes(of: hash.bigEndian) { key.append(contentsOf: $0) }
        }
        return key
    }

    /// Whether the set belongs to a managed object.
    public var isManaged: Bool { managed != nil }

    /// The handle managing the set's owner, or nil while unmanaged (Realm's `realm`: named after the handle
    /// type, as ``Object/lattice`` is).
    public var lattice: Lattice? { managed?.owner._lattice }

    /// True once the owner has been deleted or its handle invalidated; always false while unmanaged.
    public var isInvalidated: Bool { managed?.owner.isInvalidated ?? false }

    /// The number of elements.
    public var count: Int {
        guard let managed else { return values.count }
        return managed.read { try store($0, $1).count() }
    }

    /// Whether the set is empty.
    public var isEmpty: Bool {
        guard let managed else { return values.isEmpty }
        return managed.read { try store($0, $1).isEmpty() }
    }

    /// 0.
    public var startIndex: Int { 0 }
    /// ``count``.
    public var endIndex: Int { count }
    /// `i + 1`.
    public func index(after i: Int) -> Int { i + 1 }
    /// `i - 1`.
    public func index(before i: Int) -> Int { i - 1 }

    /// The element at `position` in the set's order; out of range stops with a message.
    public subscript(position: Int) -> Element {
        guard let managed else { return values[position] }
        return managed.read { lattice, owner in
            let entries = try store(lattice, owner).entries()
            precondition(position >= 0 && position < entries.count,
                         "Index \(position) is out of range for MutableSet '\(managed.name)' of \(entries.count) elements.")
            return entries[position].value.withUnsafeBytes { managed.element($0, Element.self) }
        }
    }

    /// The position of `element` in the set's order, or nil.
    public func index(of element: Element) -> Int? { firstIndex(of: element) }

    /// Whether `element` is in the set.
    public func contains(_ element: Element) -> Bool {
        guard let managed else { return values.contains(element) }
        if let object = objectValue(element), object._lattice == nil { return false }
        var payload: [UInt8] = []
        element._latticeEncode(into: &payload)
        return managed.read { try store($0, $1).contains(elementKey: MutableSet.elementKey(payload)) }
    }

    /// Adds `element` unless an equal one is there (an unmanaged object is added to the database).
    public func insert(_ element: Element) {
        guard let managed else {
            if !values.contains(element) { values.append(element) }
            return
        }
        managed.mutate { lattice, owner in
            let payload = try managed.encode(element)
            try store(lattice, owner).insert(elementKey: MutableSet.elementKey(payload), payload: payload)
        }
    }

    /// Removes `element` if present (an object is not deleted).
    public func remove(_ element: Element) {
        guard let managed else { values.removeAll { $0 == element }; return }
        if let object = objectValue(element), object._lattice == nil { return }
        managed.mutate { lattice, owner in
            var payload: [UInt8] = []
            element._latticeEncode(into: &payload)
            try store(lattice, owner).remove(elementKey: MutableSet.elementKey(payload))
        }
    }

    /// Removes the element at `position` and returns it (an object is not deleted).
    @discardableResult
    public func remove(at position: Int) -> Element {
        let element = self[position]
        remove(element)
        return element
    }

    /// Removes every element.
    public func removeAll() {
        guard let managed else { values.removeAll(); return }
        managed.mutate { try store($0, $1).removeAll() }
    }

    /// Inserts every element of `elements` (Realm's name for ``formUnion(_:)``).
    public func insert<S: Sequence>(objectsIn elements: S) where S.Element == Element { formUnion(elements) }

    /// Inserts every element of `other`.
    public func formUnion<S: Sequence>(_ other: S) where S.Element == Element {
        for element in Array(other) { insert(element) }
    }

    /// Keeps only the elements also in `other`.
    public func formIntersection<S: Sequence>(_ other: S) where S.Element == Element {
        let keep = Set(other)  // hashed: one lookup per element, not a walk of `other`
        for element in Array(self) where !keep.contains(element) { remove(element) }
    }

    /// Removes the elements of `other`.
    public func subtract<S: Sequence>(_ other: S) where S.Element == Element {
        for element in Array(other) { remove(element) }
    }

    /// Whether every element is in `other`.
    public func isSubset<S: Sequence>(of other: S) -> Bool where S.Element == Element {
        let all = Set(other)
        return allSatisfy { all.contains($0) }
    }

    /// Whether the set shares an element with `other`.
    public func intersects<S: Sequence>(_ other: S) -> Bool where S.Element == Element {
        other.contains { contains($0) }
    }

    /// The elements (in key order when managed).
    public func makeIterator() -> IndexingIterator<[Element]> {
        guard let managed else { return values.makeIterator() }
        return managed.read { lattice, owner in
            try store(lattice, owner).entries().map { $0.value.withUnsafeBytes { managed.element($0, Element.self) } }
        }.makeIterator()
    }

    /// For example `MutableSet<String> [ [0] a ]`.
    public var description: String { describeCollection("MutableSet<\(Element.self)>", Array(self)) }
}

extension MutableSet: _PersistableCollection {
    /// The element type.
    public typealias _StoredElement = Element

    /// A new unmanaged set of the elements of an array, List, MutableSet, Results or LinkingObjects, when
    /// they all convert (a copy: the set given is not shared).
    public static func _latticeCast(_ value: Any) -> MutableSet? {
        guard let elements = Lattice.elements(of: value) else { return nil }
        let set = MutableSet()
        for item in elements {
            guard let element = Element._latticeCast(item) else { return nil }
            set.insert(element)
        }
        return set
    }
    /// `.set`.
    public static var _latticeCollection: CollectionKind? { .set }
    /// The managed set of the property.
    public static func _latticeGet(_ owner: Object, column: Int) -> MutableSet {
        MutableSet(managed: ManagedCollection(owner: owner, property: owner._info!.columns[column]))
    }
    /// Replaces the managed set's contents with `value`'s.
    public static func _latticeSet(_ owner: Object, column: Int, _ value: MutableSet) {
        let elements = Array(value)
        let target = _latticeGet(owner, column: column)
        target.removeAll()
        target.formUnion(elements)
    }
    /// Stores this set's elements as the new owner's set.
    /// An unmanaged set then becomes that stored set, so that a reference to it taken before `add`
    /// writes through, as in Realm; a set already bound elsewhere gives its stored elements.
    public func _latticeDidAdd(_ owner: Object, column: Int, replacing: Bool) throws {
        let managed = ManagedCollection(owner: owner, property: owner._info!.columns[column])
        let store = SetStore(lattice: managed.lattice, property: managed.property, owner: owner._key)
        let payloads = try (self.managed == nil ? values : Array(self)).map(managed.encode)
        var unchanged = false
        if replacing && managed.updatesOnlyChanges {
            let stored = try SetTable(table: managed.property.collectionTable!, owner: owner._key).entries(managed.lattice.readTransaction())
            unchanged = Set(stored.map(\.value)) == Set(payloads)
        }
        if !unchanged {
            if replacing { try store.removeAll() }
            for payload in payloads { try store.insert(elementKey: MutableSet.elementKey(payload), payload: payload) }
        }
        if self.managed == nil {
            promoted = managed
            values = []
        }
    }
}
