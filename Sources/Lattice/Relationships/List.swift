import Foundation

/// An ordered collection of objects or values, duplicates allowed.
///
/// ```swift
/// final class Person: Object {
///     @Persisted var dogs: List<Dog>
///     @Persisted var nicknames: List<String>
/// }
/// ```
/// Unmanaged, a list is a plain in-memory array. Managed (a property of a managed object), it reads and
/// writes through to the database: mutations need a write transaction, and one entry is read or
/// changed without reading the whole list (see the *File Format* article). Removing an object from a
/// list does not delete it; deleting an object removes it from every list.
public final class List<Element: _Persistable>: RandomAccessCollection, MutableCollection, RangeReplaceableCollection, LatticeCollection {
    private var values: [Element] = []
    /// The stored list this list reads and writes, when it was made for a managed object.
    private let binding: ManagedCollection?
    /// The stored list of the object this unmanaged list was added with (see `_latticeDidAdd`): a
    /// reference taken before `add` writes through, as in Realm. Set once; a single load per access, so
    /// runtime exclusivity checks are off. Such a list reads through the plain paths (no read state).
    @exclusivity(unchecked) private var promoted: ManagedCollection?
    /// The stored list, or nil while unmanaged.
    var managed: ManagedCollection? { binding ?? promoted }
    /// A managed List of objects reads its entries' objects in batches: their keys, decoded once per change
    /// of the handle's view, and the positional reader over them. Nil otherwise (every new instance of a
    /// model makes an unmanaged list for each List property: it allocates nothing more).
    private let objectReads: ListObjectReads?
    /// A managed List of values reads entries by position from the chunk it read last; nil otherwise.
    private let valueReads: ListValueReads?

    /// An empty, unmanaged list.
    public init() {
        binding = nil
        objectTarget = nil
        objectReads = nil
        valueReads = nil
    }

    init(managed: ManagedCollection) {
        binding = managed
        let target = managed.property.target
        let objectTarget = target.map { ObjectIdentifier($0.type) == ObjectIdentifier(Element.self) } == true ? target : nil
        self.objectTarget = objectTarget
        objectReads = objectTarget == nil ? nil : ListObjectReads(managed.lattice)
        valueReads = objectTarget == nil ? List.sharedValueReads(managed) : nil
    }

    /// The chunk reader of a List of values: `owner.numbers[i]` in a loop binds a new List each step, so
    /// the lists of one stored list on a live handle share it (it checks the handle's view itself, and
    /// holds no reference back to the handle). A frozen handle, read on several threads, shares none.
    private static func sharedValueReads(_ managed: ManagedCollection) -> ListValueReads {
        let lattice = managed.lattice
        guard !lattice.isFrozen else { return ListValueReads() }
        let table = managed.property.collectionTable!, owner = managed.owner._key
        if let last = lattice.lastListValueReads, last.table == table, last.owner == owner { return last.reads }
        let reads = ListValueReads()
        lattice.lastListValueReads = (table, owner, reads)
        return reads
    }

    /// The stored class of the elements when they are objects of exactly that class (not dynamic
    /// objects); nil otherwise. Found once: every read of an element checks it.
    private let objectTarget: ClassInfo?

    private func store(_ lattice: Lattice, _ owner: Int64) -> ListStore {
        ListStore(lattice: lattice, property: managed!.property, owner: owner)
    }

    /// Whether the list belongs to a managed object.
    public var isManaged: Bool { managed != nil }

    /// The handle managing the list's owner, or nil while unmanaged (Realm's `realm`: named after the handle
    /// type, as ``Object/lattice`` is).
    public var lattice: Lattice? { managed?.owner._lattice }

    /// True once the owner has been deleted or its handle invalidated; always false while unmanaged.
    public var isInvalidated: Bool { managed?.owner.isInvalidated ?? false }

    /// 0.
    public var startIndex: Int { 0 }
    /// ``count``.
    public var endIndex: Int { count }
    /// `i + 1`.
    public func index(after i: Int) -> Int { i + 1 }
    /// `i - 1`.
    public func index(before i: Int) -> Int { i - 1 }

    /// The number of elements (read from the list's directory, no element decoded).
    public var count: Int {
        guard let managed else { return values.count }
        return managed.read { try store($0, $1).count() }
    }

    /// The element at `position` of a managed list of values. Out of line: the `Element?` it handles
    /// needs a stack slot sized at run time, which the subscript would otherwise make for objects too.
    @inline(never)
    private func value(at position: Int, _ managed: ManagedCollection) -> Element {
        let read = { (payload: UnsafeRawBufferPointer) in managed.element(payload, Element.self) }
        let element = if let valueReads {
            valueReads.withPayload(at: position, managed, read)
        } else {
            managed.read { lattice, owner in try store(lattice, owner).withPayload(at: position, read) }
        }
        guard let element else { preconditionFailure("Index \(position) is out of range for List '\(managed.name)' of \(count) elements.") }
        return element
    }

    /// The element at `position`; out of range stops with a message. Setting needs a write transaction.
    public subscript(position: Int) -> Element {
        get {
            if let object = objectReads?.batched(at: position) { return unsafeBitCast(object, to: Element.self) }
            guard let managed else { return values[position] }
            if let target = objectTarget, let object = objectReads?.object(at: position, managed, target) {
                // `objectTarget` made sure the instances are of class `Element`.
                return unsafeBitCast(object, to: Element.self)
            }
            return value(at: position, managed)
        }
        set {
            guard let managed else { values[position] = newValue; return }
            checkIndex(position, count)
            managed.mutate { lattice, owner in try store(lattice, owner).replace(at: position, with: managed.encode(newValue)) }
        }
    }

    /// The elements in `bounds`. Setting replaces them with any number of elements, as for an `Array`
    /// (`list[1..<4] = other[0..<2]` leaves the list one shorter); a managed list needs a write transaction.
    public subscript(bounds: Range<Int>) -> Slice<List> {
        get { Slice(base: self, bounds: bounds) }
        set { replaceSubrange(bounds, with: Array(newValue)) }
    }

    private func checkIndex(_ index: Int, _ limit: Int) {
        precondition(index >= 0 && index < limit, "Index \(index) is out of range for a List of \(limit) elements.")
    }

    /// Replaces the elements in `subrange` with `newElements` (the primitive every mutation uses).
    public func replaceSubrange<C: Collection>(_ subrange: Range<Int>, with newElements: C) where C.Element == Element {
        guard let managed else { values.replaceSubrange(subrange, with: newElements); return }
        let elements = Array(newElements)  // a snapshot: newElements may be this very list
        precondition(subrange.lowerBound >= 0 && subrange.upperBound <= count,
                     "Range \(subrange) is out of bounds for List '\(managed.name)' of \(count) elements.")
        managed.mutate { lattice, owner in
            let store = store(lattice, owner)
            try store.remove(subrange)
            try store.insert(elements.map(managed.encode), at: subrange.lowerBound)
        }
    }

    // Non-mutating forms of the collection mutators, so they work on a `let` list (it is a class).

    /// Appends an element (an unmanaged object is added to the database).
    public func append(_ element: Element) {
        guard let managed else { return values.append(element) }
        // Directly, not through `replaceSubrange`: appending one entry at a time is the common loop.
        managed.mutate { lattice, owner in
            let store = store(lattice, owner)
            try store.insert([managed.encode(element)], at: store.count())
        }
    }
    /// Appends elements.
    public func append<S: Sequence>(contentsOf elements: S) where S.Element == Element {
        replaceSubrange(endIndex..<endIndex, with: Array(elements))
    }
    /// Appends elements (Realm's name for ``append(contentsOf:)``).
    public func append<S: Sequence>(objectsIn elements: S) where S.Element == Element { append(contentsOf: elements) }
    /// Inserts an element before `index`.
    public func insert(_ element: Element, at index: Int) { replaceSubrange(index..<index, with: CollectionOfOne(element)) }
    /// Inserts elements before `index`.
    public func insert<C: Collection>(contentsOf elements: C, at index: Int) where C.Element == Element {
        replaceSubrange(index..<index, with: elements)
    }
    /// Removes the element at `index` and returns it (an object is not deleted).
    @discardableResult
    public func remove(at index: Int) -> Element {
        let element = self[index]
        replaceSubrange(index..<index + 1, with: EmptyCollection())
        return element
    }
    /// Removes the first `k` elements.
    public func removeFirst(_ k: Int = 1) { replaceSubrange(0..<k, with: EmptyCollection()) }
    /// Removes the last `k` elements.
    public func removeLast(_ k: Int = 1) { replaceSubrange(count - k..<count, with: EmptyCollection()) }
    /// Removes every element.
    public func removeAll() { replaceSubrange(0..<count, with: EmptyCollection()) }
    /// Removes the elements in `bounds`.
    public func removeSubrange(_ bounds: Range<Int>) { replaceSubrange(bounds, with: EmptyCollection()) }
    /// Removes the elements in `bounds`: `1...2`, `2...`, `...1`, `..<2` (any range of positions).
    public func removeSubrange<R: RangeExpression>(_ bounds: R) where R.Bound == Int {
        replaceSubrange(bounds.relative(to: self), with: EmptyCollection())
    }
    /// Removes every element (`list.removeSubrange(...)`).
    public func removeSubrange(_ bounds: UnboundedRange) { removeAll() }
    /// Replaces the elements in `bounds` (any range of positions) with `newElements`.
    public func replaceSubrange<R: RangeExpression, C: Collection>(_ bounds: R, with newElements: C)
    where R.Bound == Int, C.Element == Element {
        replaceSubrange(bounds.relative(to: self), with: newElements)
    }
    /// Replaces every element with `newElements` (`list.replaceSubrange(..., with: ...)`).
    public func replaceSubrange<C: Collection>(_ bounds: UnboundedRange, with newElements: C) where C.Element == Element {
        replaceSubrange(0..<count, with: newElements)
    }
    /// Removes the elements at `offsets` (SwiftUI's `onDelete`).
    public func remove(atOffsets offsets: IndexSet) {
        for range in offsets.rangeView.reversed() { removeSubrange(range) }
    }
    /// Moves the elements at `offsets` to `destination`, for SwiftUI's `onMove`, exactly as Realm's List
    /// does: each offset, in ascending order, is moved with ``move(from:to:)`` to `destination` (to the
    /// last position when `destination == count`). For one offset this is what an `Array` does; for
    /// several, Realm's order (`[1, 2, 3]` moving offsets 0 and 2 to 1 gives `[2, 3, 1]`) is kept, so
    /// code written for Realm sees the same list.
    public func move(fromOffsets offsets: IndexSet, toOffset destination: Int) {
        for offset in offsets {
            move(from: offset, to: destination >= count ? destination - 1 : destination)
        }
    }
    /// Replaces the element at `index`.
    public func replace(index: Int, object: Element) { self[index] = object }

    /// Exchanges the elements at `i` and `j`.
    public func swapAt(_ i: Int, _ j: Int) {
        guard i != j else { return }
        if let managed, managed.property.target?.schema.isEmbedded == true {
            // Embedded objects move within their list (setting one into another entry would re-parent it).
            let (low, high) = (Swift.min(i, j), Swift.max(i, j))
            move(from: high, to: low)
            move(from: low + 1, to: high)
            return
        }
        let first = self[i]
        self[i] = self[j]
        self[j] = first
    }

    /// Moves the element at `from` so that it ends up at `to`. The entry moves as it is: an object is
    /// neither unlinked nor deleted on the way (an embedded object stays the one it was).
    public func move(from: Int, to: Int) {
        guard let managed else {
            values.insert(values.remove(at: from), at: to)
            return
        }
        let count = self.count
        checkIndex(from, count)
        checkIndex(to, count)
        guard from != to else { return }
        managed.mutate { lattice, owner in try store(lattice, owner).move(from: from, to: to) }
    }

    /// The first position of `element`: the same stored object for objects, an equal value for values.
    public func index(of element: Element) -> Int? {
        var needle: [UInt8] = []
        if let object = objectValue(element) {
            guard object._lattice != nil || managed == nil else { return nil }
            // The same stored object, or the same instance for unmanaged ones (`==`), as `contains` finds.
            if managed == nil { return values.firstIndex { objectValue($0).map { $0 == object } ?? false } }
        }
        element._latticeEncode(into: &needle)
        if let managed {
            return managed.read { lattice, owner in
                var position = 0
                var found: Int?
                try store(lattice, owner).forEachPayload(reserve: { _ in }) { payload in
                    if found == nil, payload.count == needle.count, payload.elementsEqual(needle) { found = position }
                    position += 1
                }
                return found
            }
        }
        return values.firstIndex { var p: [UInt8] = []; $0._latticeEncode(into: &p); return p == needle }
    }

    /// For a List of objects, `contains(_:)` finds an object by its key (as ``index(of:)`` does) instead of
    /// reading every element; values are compared one by one with `==`.
    public func _customContainsEquatableElement(_ element: Element) -> Bool? {
        guard managed != nil, Element._latticeObjectType != nil else { return nil }
        return index(of: element) != nil
    }

    /// For a List of objects, `firstIndex(of:)` is ``index(of:)``.
    public func _customIndexOfEquatableElement(_ element: Element) -> Int?? {
        guard managed != nil, Element._latticeObjectType != nil else { return nil }
        return .some(index(of: element))
    }

    /// Elements in order, as they were when the loop began: values decoded in one pass over the list's
    /// chunks; objects read in batches, as a loop over ``Results`` reads them (an instance the loop did not
    /// keep may be handed out again).
    public func makeIterator() -> Iterator {
        guard let managed else { return Iterator(values: values.makeIterator()) }
        if let target = objectTarget, let keys = objectReads?.keys(managed) {
            return Iterator(reader: KeyedObjects(lattice: managed.lattice, info: target, type: target.type, keys: keys))
        }
        return Iterator(values: managed.read { lattice, owner in
            var values: [Element] = []
            try store(lattice, owner).forEachPayload(reserve: { values.reserveCapacity($0) }) {
                values.append(managed.element($0, Element.self))
            }
            return values
        }.makeIterator())
    }

    /// The iterator of ``List``.
    public struct Iterator: IteratorProtocol {
        private var values: IndexingIterator<[Element]>
        private var reader: KeyedObjects?

        init(values: IndexingIterator<[Element]>) {
            self.values = values
        }

        init(reader: KeyedObjects) {
            values = [].makeIterator()
            self.reader = reader
        }

        /// The next element, or nil at the end.
        public mutating func next() -> Element? {
            // The reader creates instances of class `Element` only (see `objectTarget`).
            // Not `Optional.map`: generic over `Element`, it would look metadata up on every step.
            if reader != nil {
                guard let object = reader?.next() else { return nil }
                return unsafeBitCast(object, to: Element.self)
            }
            return values.next()
        }
    }

    /// The first element, or nil: one element read.
    public var first: Element? { end(first: true) }

    /// The last element, or nil: one element read.
    public var last: Element? { end(first: false) }

    private func end(first: Bool) -> Element? {
        guard let managed else { return first ? values.first : values.last }
        if let target = objectTarget, let key = objectReads?.endKey(managed, first: first) {
            // `objectTarget` made sure the instances are of class `Element`.
            return unsafeBitCast(managed.lattice.materializeReading(target.type, target, key: key), to: Element.self)
        }
        let n = count
        return n == 0 ? nil : self[first ? 0 : n - 1]
    }

    /// The elements transformed in order, read as a `for … in` loop reads them.
    public func map<T>(_ transform: (Element) throws -> T) rethrows -> [T] {
        var out: [T] = []
        out.reserveCapacity(count)
        for element in self { out.append(try transform(element)) }
        return out
    }


    /// For example `List<Dog> [ [0] Dog { name = Rex } ]`.
    public var description: String { describeCollection("List<\(Element.self)>", Array(self)) }
}

extension List: _PersistableCollection {
    /// The element type.
    public typealias _StoredElement = Element

    /// A new unmanaged list of the elements of an array, List, MutableSet, Results or LinkingObjects, when
    /// they all convert (a copy: the list given is not shared).
    public static func _latticeCast(_ value: Any) -> List? {
        guard let elements = Lattice.elements(of: value) else { return nil }
        let list = List()
        for item in elements {
            guard let element = Element._latticeCast(item) else { return nil }
            list.values.append(element)
        }
        return list
    }
    /// `.list`.
    public static var _latticeCollection: CollectionKind? { .list }
    /// The managed list of the property.
    public static func _latticeGet(_ owner: Object, column: Int) -> List {
        List(managed: ManagedCollection(owner: owner, property: owner._info!.columns[column]))
    }
    /// Replaces the managed list's contents with `value`'s.
    public static func _latticeSet(_ owner: Object, column: Int, _ value: List) {
        let target = _latticeGet(owner, column: column)
        target.replaceSubrange(0..<target.count, with: Array(value))
    }
    /// Stores this list's elements as the new owner's list; an unmanaged list then becomes that stored
    /// list, so that a reference to it taken before `add` writes through, as in Realm.
    public func _latticeDidAdd(_ owner: Object, column: Int, replacing: Bool) throws {
        let managed = ManagedCollection(owner: owner, property: owner._info!.columns[column])
        let store = ListStore(lattice: managed.lattice, property: managed.property, owner: owner._key)
        // A list already bound elsewhere (given to two objects) gives its stored elements.
        let elements = self.managed == nil ? values : Array(self)
        if replacing && managed.updatesEmbeddedInPlace {
            try managed.lattice.updateEmbeddedList(elements, managed)
        } else {
            let payloads = try elements.map(managed.encode)
            let unchanged = try replacing && managed.updatesOnlyChanges
                && managed.lattice.listPayloads(managed.property, owner: owner._key) == payloads
            if !unchanged {
                if replacing { try store.removeAll() }
                try store.insert(payloads, at: 0)
            }
        }
        if self.managed == nil {
            promoted = managed
            values = []
        }
    }
}

/// `Name [ [0] element, ... ]`, one element a line (at most 100 shown).
func describeCollection<E>(_ name: String, _ elements: [E]) -> String {
    let shown = elements.prefix(100).enumerated().map { "\t[\($0.offset)] \($0.element)" }
    let more = elements.count > 100 ? "\n\t... \(elements.count - 100) more" : ""
    return "\(name) [\n" + shown.joined(separator: ",\n") + more + "\n]"
}

/// Reads by position of a managed List of values (an index loop, `reversed()`, `last(where:)`): the chunk
/// read last, kept where the read snapshot has it, serves the positions it holds while the handle's view
/// stays the same, so such a loop looks each chunk up once instead of once per entry. Inside a write (whose
/// values move with its updates) and on encrypted or frozen handles, every read looks its chunk up.
final class ListValueReads {
    // Without runtime exclusivity checks: only `withPayload` touches it, under the handle's
    // `synchronized`, and nothing it calls comes back here.
    @exclusivity(unchecked) private var chunk: (generation: UInt64, start: Int, view: RecordView)?

    /// Passes the payload of entry `position` to `body`; nil when out of range.
    func withPayload<R>(at position: Int, _ managed: ManagedCollection, _ body: (UnsafeRawBufferPointer) -> R) -> R? {
        let lattice = managed.lattice
        return lattice.synchronized {
            if let chunk, chunk.generation == lattice.generation, position >= chunk.start, position - chunk.start < chunk.view.count,
               let payload = chunk.view.payload(position - chunk.start) {
                return body(payload)
            }
            return managed.read { lattice, owner in
                let store = ListStore(lattice: lattice, property: managed.property, owner: owner)
                // A chunk that does not hold the payload is damage: the plain read reports it.
                guard lattice.lendsRecords(try lattice.readTransaction()), let found = try store.chunk(holding: position),
                      let payload = found.view.payload(position - found.start) else {
                    return try store.withPayload(at: position, body)
                }
                chunk = (lattice.generation, found.start, found.view)
                return body(payload)
            }
        }
    }
}

/// The object reads of a List of objects: not generic, so that this work is compiled once, optimized,
/// instead of running unspecialized in every client (where each optional it handles costs a metadata
/// lookup).
final class ListObjectReads {
    // Without runtime exclusivity checks (a call on every read): only `keys(_:)` touches them, under the
    // handle's `synchronized`, and nothing it calls comes back here.
    /// The handle's `structure` the keys were read at: a loop setting a property of each element does
    /// not change it, so the keys are not read again on every step.
    @exclusivity(unchecked) private var structure: UInt64 = 0
    @exclusivity(unchecked) private var cachedKeys: [Int64]?
    @exclusivity(unchecked) private var known = false
    @exclusivity(unchecked) private var positional = PositionalReader()
    /// Reads by position made while the keys were not current, since `aloneStructure` (see `keyAlone`).
    @exclusivity(unchecked) private var aloneReads = 0
    @exclusivity(unchecked) private var aloneStructure: UInt64 = 0
    /// The handle of the list's owner (which the list keeps alive anyway).
    private let lattice: Lattice

    /// How many reads by position after a change of the list read their entry alone before the keys
    /// are decoded: enough for the reads that code changing the list makes between changes
    /// (`remove(at:)`, `swapAt`, `move(from:to:)`), few beside a loop over a list of any length.
    private static let readsAlone = 8
    /// A longer list allows one read alone per this many entries: a read alone costs about one chunk's
    /// worth of decoding, the keys all of them (the last screenful of a long chat, `suffix(30)` after each
    /// message, then reads 30 entries, not the whole list).
    private static let entriesPerReadAlone = 128

    init(_ lattice: Lattice) {
        self.lattice = lattice
    }

    /// The object at `position` when it was read ahead in this generation of the handle's view (see
    /// `ResultsReader.batched(at:)`), else nil: the step of an index loop or `reversed()` that needs
    /// neither the keys nor the owner.
    @inline(__always)
    func batched(at position: Int) -> Object? {
        lattice.synchronized { positional.batched(at: position) }
    }

    /// The object keys of the entries, decoded once per change of the handle's view; nil when some entry
    /// holds none.
    func keys(_ managed: ManagedCollection) -> [Int64]? {
        let lattice = managed.lattice
        return lattice.synchronized {
            if known && structure == lattice.structure { return cachedKeys }
            cachedKeys = managed.read { lattice, owner in
                try ListStore(lattice: lattice, property: managed.property, owner: owner).objectKeys()
            }
            structure = lattice.structure
            known = true
            return cachedKeys
        }
    }

    /// The object key of the first (or last) entry: from the keys when they are current, otherwise read
    /// alone (one chunk, not the whole list). Nil when the list is empty or the entry holds no object key.
    func endKey(_ managed: ManagedCollection, first: Bool) -> Int64? {
        let lattice = managed.lattice
        return lattice.synchronized {
            if known && structure == lattice.structure { return first ? cachedKeys?.first : cachedKeys?.last }
            return managed.read { lattice, owner in
                try ListStore(lattice: lattice, property: managed.property, owner: owner).withEndPayload(first: first) { lattice.linkedKey($0) } ?? nil
            }
        }
    }

    /// The object key of entry `position` read alone (one chunk, not the whole list), for the first few
    /// reads after the list changed; `.useKeys` once the keys are current or worth decoding. Out of
    /// range stops with a message.
    private func keyAlone(at position: Int, _ managed: ManagedCollection) -> KeyAlone {
        let lattice = managed.lattice
        return lattice.synchronized {
            if known && structure == lattice.structure { return .useKeys }
            if aloneStructure != lattice.structure {
                aloneStructure = lattice.structure
                aloneReads = 0
            }
            aloneReads += 1
            return managed.read { lattice, owner in
                let store = ListStore(lattice: lattice, property: managed.property, owner: owner)
                let count = try store.count()
                guard aloneReads <= max(Self.readsAlone, count / Self.entriesPerReadAlone) else { return .useKeys }
                precondition(position >= 0 && position < count,
                             "Index \(position) is out of range for List '\(managed.name)' of \(count) elements.")
                return try store.withPayload(at: position) { lattice.linkedKey($0) }.flatMap { $0.map(KeyAlone.key) } ?? .noKey
            }
        }
    }

    private enum KeyAlone {
        case key(Int64)
        /// The entry holds no object key.
        case noKey
        case useKeys
    }

    /// The object at `position` (an instance of `target.type`), read ahead in batches from the position
    /// asked last; nil when some entry holds no object key. Out of range stops with a message.
    func object(at position: Int, _ managed: ManagedCollection, _ target: ClassInfo) -> Object? {
        switch keyAlone(at: position, managed) {
        case .key(let key): return managed.lattice.materialize(target, key: key, record: nil)
        case .noKey: return nil
        case .useKeys: break
        }
        guard let keys = keys(managed) else { return nil }
        precondition(position >= 0 && position < keys.count,
                     "Index \(position) is out of range for List '\(managed.name)' of \(keys.count) elements.")
        let lattice = managed.lattice
        return lattice.synchronized {
            self.positional.object(at: position, of: keys, lattice: lattice, info: target, type: target.type)
        } ?? lattice.materialize(target, key: keys[position], record: nil)
    }
}
