/// The storage of collection properties as the public collection types see it: reads go through the
/// tables (`ListTable`, `SetTable`, `MapTable`) in the handle's current view, changes through the
/// handle's write path, which keeps backlinks and the change record in step.

/// The elements of one ``List`` property of one object (see `ListTable` for the layout and costs).
struct ListStore {
    let lattice: Lattice
    let property: PropertyInfo
    let owner: Int64

    private var table: ListTable { ListTable(table: property.collectionTable!, owner: owner) }

    func directory() throws -> ListTable.Directory { try lattice.listDirectory(property, owner: owner) }

    func count() throws -> Int { try lattice.listCount(property, owner: owner) }

    /// Passes the payload of entry `index` to `body`; nil when out of range.
    func withPayload<R>(at index: Int, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        try table.withPayload(lattice.readTransaction(), at: index, in: directory(), body)
    }

    /// The chunk holding entry `index` and the position of its first entry (see `ListTable.chunk`); nil
    /// when out of range.
    func chunk(holding index: Int) throws -> (start: Int, view: RecordView)? {
        try table.chunk(lattice.readTransaction(), holding: index, in: directory())
    }

    /// Passes the payload of the first (or last) entry to `body`; nil when the list is empty. Without a
    /// directory at hand, the stored one is read in place, not decoded.
    func withEndPayload<R>(first: Bool, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        if let directory = lattice.listDirectoryAtHand(property, owner: owner) {
            return try table.withPayload(lattice.readTransaction(), at: first ? 0 : directory.total - 1, in: directory, body)
        }
        return try table.withEndPayload(lattice.readTransaction(), first: first, body)
    }

    /// Passes every payload, in order, to `body`, nothing copied; `reserve` gets the count first. Without
    /// a directory at hand, the stored one is read in place, not decoded.
    func forEachPayload(reserve: (Int) -> Void, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        try lattice.forEachListPayload(property, owner: owner, reserve: reserve, body)
    }

    /// The object key of every entry of a List of objects, in order; nil when some entry holds none.
    func objectKeys() throws -> [Int64]? {
        var keys: [Int64] = []
        var complete = true
        try forEachPayload(reserve: { keys.reserveCapacity($0) }) { payload in
            if let key = lattice.linkedKey(payload) { keys.append(key) } else { complete = false }
        }
        return complete ? keys : nil
    }

    /// Inserts payloads before entry `index` (`index == count` appends).
    func insert(_ payloads: [[UInt8]], at index: Int) throws {
        try lattice.listInsert(property, owner: owner, payloads, at: index)
    }

    /// Removes the entries in `range` and returns their payloads.
    @discardableResult
    func remove(_ range: Range<Int>) throws -> [[UInt8]] {
        try lattice.listRemove(property, owner: owner, range)
    }

    /// Moves entry `from` to position `to`, its payload unchanged.
    func move(from: Int, to: Int) throws {
        try lattice.listMove(property, owner: owner, from: from, to: to)
    }

    /// Replaces entry `index`.
    func replace(at index: Int, with payload: [UInt8]) throws {
        try lattice.listReplace(property, owner: owner, at: index, with: payload)
    }

    /// Removes every entry.
    func removeAll() throws { try lattice.clearCollection(property, owner: owner) }
}

/// The elements of one ``MutableSet`` property of one object (see `SetTable`).
struct SetStore {
    let lattice: Lattice
    let property: PropertyInfo
    let owner: Int64

    private var table: SetTable { SetTable(table: property.collectionTable!, owner: owner) }

    func contains(elementKey: [UInt8]) throws -> Bool {
        try table.payload(lattice.readTransaction(), elementKey: elementKey) != nil
    }

    /// Adds an element; false when an equal one is already there.
    @discardableResult
    func insert(elementKey: [UInt8], payload: [UInt8]) throws -> Bool {
        try lattice.setInsert(property, owner: owner, elementKey: elementKey, payload: payload)
    }

    /// Removes an element; false when absent.
    @discardableResult
    func remove(elementKey: [UInt8]) throws -> Bool {
        try lattice.setRemove(property, owner: owner, elementKey: elementKey)
    }

    /// Every (element key, payload), in element-key order; read once per change of the handle's view.
    func entries() throws -> [(key: [UInt8], value: [UInt8])] { try lattice.keyedEntries(property, owner: owner) }

    func count() throws -> Int { try lattice.keyedCount(property, owner: owner) }

    func isEmpty() throws -> Bool { try lattice.keyedIsEmpty(property, owner: owner) }

    func removeAll() throws { try lattice.clearCollection(property, owner: owner) }
}

/// The entries of one ``Map`` property of one object (see `MapTable`).
struct MapStore {
    let lattice: Lattice
    let property: PropertyInfo
    let owner: Int64

    /// Map keys must leave room for the owner prefix within LMDB's key limit.
    static var maxKeyBytes: Int { MapTable.maxKeyBytes }

    private var table: MapTable { MapTable(table: property.collectionTable!, owner: owner) }

    func payload(for mapKey: String) throws -> [UInt8]? {
        try table.payload(lattice.readTransaction(), for: mapKey)
    }

    /// Sets (payload non-nil) or removes (nil) an entry.
    func set(_ mapKey: String, payload: [UInt8]?) throws {
        try lattice.mapSet(property, owner: owner, mapKey, payload: payload)
    }

    /// Every (UTF-8 map key, payload) in key order; read once per change of the handle's view.
    func entries() throws -> [(key: [UInt8], value: [UInt8])] { try lattice.keyedEntries(property, owner: owner) }

    func count() throws -> Int { try lattice.keyedCount(property, owner: owner) }

    func isEmpty() throws -> Bool { try lattice.keyedIsEmpty(property, owner: owner) }

    func removeAll() throws { try lattice.clearCollection(property, owner: owner) }
}
