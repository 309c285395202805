/// The state of one write transaction of a handle.
///
/// Runtime exclusivity checks are off for its fields (they cost a runtime call on every recorded
/// change): the context belongs to one handle, used from one isolation domain at a time, and every
/// access is a short mutation that calls out to no code that could touch the same field.
final class WriteContext {
    let txn: Transaction
    /// Next object keys of classes without an integer primary key, stored at commit.
    @exclusivity(unchecked) var sequences: [String: Int64] = [:]
    /// Objects being added (by identity) and their keys, so cycles of new objects link correctly.
    @exclusivity(unchecked) var adding: [ObjectIdentifier: Int64] = [:]
    /// The update policy of the `add` in progress, applied to the objects it reaches.
    @exclusivity(unchecked) var addPolicy: Lattice.UpdatePolicy = .error
    /// Unmanaged embedded objects (by identity) that an update with `.modified` writes into the stored
    /// embedded object with the given key, in the slot they take (see `claimEmbeddedSlots`).
    @exclusivity(unchecked) var embeddedSlots: [ObjectIdentifier: Int64] = [:]
    /// An error raised where Swift cannot throw (a property setter); the transaction fails with it.
    @exclusivity(unchecked) var pendingError: LatticeError?
    /// What the transaction changed so far.
    @exclusivity(unchecked) var changes = ChangeSet()
    /// The directory of the List appended to last, when appends have not stored it yet: a loop of appends
    /// writes it once (`storeListDirectory()`), not once per append. Reads of that list find it here.
    @exclusivity(unchecked) var unstoredList: (table: Table, owner: Int64, directory: ListTable.Directory)?
    /// Where a deleted object was last taken out of a List: a loop deleting a list's members in its order
    /// (or backwards) finds the next one there (or just before) instead of walking the list.
    @exclusivity(unchecked) var listRemovalHint: (table: Table, owner: Int64, position: Int)?

    /// While a migration block runs: the objects it creates and deletes (see `MigrationJournal`).
    @exclusivity(unchecked) var migrationJournal: MigrationJournal?

    init(txn: Transaction) { self.txn = txn }

    /// Stores the directory appends left unstored. Runs before the commit and before anything reads a
    /// List table other than through `Lattice.listDirectory` (`verify()`, migrations, dropping tables).
    func storeListDirectory() throws {
        guard let list = unstoredList else { return }
        unstoredList = nil
        var directory = list.directory
        try ListTable(table: list.table, owner: list.owner).store(txn, &directory)
    }
}

/// What a migration block created and deleted, so that `Migration.enumerateObjects` visits exactly the
/// objects the file held before the block and still holds.
final class MigrationJournal {
    /// Keys of objects the block created, by class.
    private(set) var created: [String: Set<Int64>] = [:]
    /// Keys of objects that existed before the block and were deleted in it, by class.
    private(set) var deleted: [String: Set<Int64>] = [:]

    func noteCreated(_ className: String, key: Int64) { created[className, default: []].insert(key) }

    /// Notes a deleted object; one the block created is not kept.
    func noteDeleted(_ className: String, key: Int64) {
        if created[className]?.contains(key) != true { deleted[className, default: []].insert(key) }
    }
}

// MARK: - The write path

/// The write path: the only code that changes the file's tables. Records, indexes, case-folded
/// indexes, backlinks and collections change here, each mutation together with everything that mirrors
/// it, recorded in the transaction's `ChangeSet`, and moving the handle's generation once.
extension Lattice {
    /// The open write transaction's state (callers have checked there is one).
    private var write: WriteContext {
        guard let writer else { preconditionFailure("the write path runs inside a write transaction") }
        return writer
    }

    // MARK: Records

    /// Writes (record non-nil) or deletes (nil) an object's record and keeps its indexes and the
    /// backlinks of its to-one links in step with it. With `newKey`, writes only if no object has `key`
    /// (returns false otherwise, having changed nothing); keys above every stored key are appended (no
    /// search, full pages when keys ascend). `changed` names the changed columns when the caller knows
    /// them (otherwise they are found by comparing the records). An embedded object whose to-one slot
    /// now holds another object (or nil) is deleted with everything it owns, unless `keepingEmbedded`
    /// (the slot is cleared because that object is being deleted already).
    @discardableResult
    func store(_ info: ClassInfo, key: Int64, record: [UInt8]?, old: RecordBuffer?, _ txn: Transaction,
               newKey: Bool = false, changed: UInt64? = nil, keepingEmbedded: Bool = false) throws -> Bool {
        guard let record else { return try store(info, key: key, bytes: nil, old: old, txn, keepingEmbedded: keepingEmbedded) }
        return try record.withUnsafeBytes {
            try store(info, key: key, bytes: $0, old: old, txn, newKey: newKey, changed: changed, keepingEmbedded: keepingEmbedded)
        }
    }

    /// `store` of a record's bytes (nil: a delete), which must not move or change until it returns.
    @discardableResult
    func store(_ info: ClassInfo, key: Int64, bytes record: UnsafeRawBufferPointer?, old: RecordBuffer?, _ txn: Transaction,
               newKey: Bool = false, changed: UInt64? = nil, keepingEmbedded: Bool = false) throws -> Bool {
        var replacedEmbedded: [(ClassInfo, Int64)] = []
        var linksChanged = false
        var columns: UInt64 = 0
        let objects = ObjectTable(table: info.objectsTable)
        let stored = try KeyCodec.withObjectKey(key) { objectKey -> Bool in
            // An appended key is above every stored key, so above every object key in the index
            // duplicates too: index entries can be appended as well.
            var appended = false
            if let record, newKey {
                // Appending refuses any key not above the last one; then a normal insert decides.
                appended = try objects.put(txn, key: objectKey, record: record, mode: .append)
                if try !appended && !objects.put(txn, key: objectKey, record: record, mode: .insertNew) { return false }
            } else if let record {
                _ = try objects.put(txn, key: objectKey, record: record)
            } else {
                try objects.delete(txn, key: objectKey)
            }
            // A new object of a class keyed by its sequence has a key above every key ever stored: its
            // index entries go last under their index keys too (a new key with no search for its place,
            // an old one at the end of its last block). Only a hint: a key that is not last is placed.
            let filedLast = appended || (old == nil && !info.keyedByPrimaryKey)
            // Payloads are compared and keyed in place: `old` is a copy and `record` the caller's bytes,
            // so the writes below cannot move them.
            try withRecordView(old) { before in
                try withRecordView(record) { after in
                    for p in info.maintained {
                        let was = before?.payload(p.column), now = after?.payload(p.column)
                        if samePayload(was, now) { continue }
                        if let table = p.indexTable {
                            let index = IndexTable(table: table)
                            if let was { try withIndexKey(p, payload: was) { try index.remove(txn, indexKey: $0, objectKey: objectKey) } }
                            if let now { try withIndexKey(p, payload: now) { try index.add(txn, indexKey: $0, objectKey: objectKey, last: filedLast) } }
                        } else {
                            linksChanged = true
                            if let was, let target = linkedKey(was) {
                                try adjustBacklink(p, source: key, target: target, by: -1)
                                if after != nil, !keepingEmbedded, let child = p.target, child.schema.isEmbedded {
                                    replacedEmbedded.append((child, target))
                                }
                            }
                            if let now, let target = linkedKey(now) { try adjustBacklink(p, source: key, target: target, by: 1) }
                        }
                    }
                    try maintainFoldedIndexes(info, objectKey: objectKey, before: before, after: after, appended: filedLast, txn)
                    if old == nil {
                        write.changes.record(info.name, key: key, .inserted)
                        write.migrationJournal?.noteCreated(info.name, key: key)
                    } else if old != nil, after == nil {
                        write.changes.record(info.name, key: key, .deleted)
                        write.migrationJournal?.noteDeleted(info.name, key: key)
                    } else {
                        columns = changed ?? changedColumns(info, before, after)
                        write.changes.record(info.name, key: key, .modified, columns: columns)
                    }
                }
            }
            return true
        }
        if stored { didWriteRecord(of: info, addedOrDeleted: old == nil || record == nil, linksChanged: linksChanged, columns: columns) }
        for (child, childKey) in replacedEmbedded {
            if let record = try fetchRecord(child, key: childKey) { try deleteObject(child, key: childKey, old: record) }
        }
        return stored
    }

    /// The columns whose payloads differ between two records of a class.
    private func changedColumns(_ info: ClassInfo, _ before: RecordView?, _ after: RecordView?) -> UInt64 {
        var mask: UInt64 = 0
        for p in info.columns where !samePayload(before?.payload(p.column), after?.payload(p.column)) {
            mask |= ChangeSet.columnBit(p.column)
        }
        return mask
    }

    /// Keeps the case-folded indexes of `info` in step with a record write (`after`) or delete (nil).
    private func maintainFoldedIndexes(_ info: ClassInfo, objectKey: UnsafeRawBufferPointer, before: RecordView?, after: RecordView?,
                                       appended: Bool, _ txn: Transaction) throws {
        for p in info.indexed {
            guard let table = p.foldedIndexTable else { continue }
            let folded = IndexTable(table: table)
            let was = before?.payload(p.column), now = after?.payload(p.column)
            if samePayload(was, now) { continue }
            if let was { try foldedIndexKey(p, payload: was).withUnsafeBytes { try folded.remove(txn, indexKey: $0, objectKey: objectKey) } }
            if let now { try foldedIndexKey(p, payload: now).withUnsafeBytes { try folded.add(txn, indexKey: $0, objectKey: objectKey, last: appended) } }
        }
    }

    /// Runs `body` with a view of a record copy (nil when there is none or it cannot be read).
    @inline(__always)
    private func withRecordView<R>(_ record: RecordBuffer?, _ body: (RecordView?) throws -> R) rethrows -> R {
        guard let record else { return try body(nil) }
        return try record.withBytes { try body(RecordView($0)) }
    }

    /// Runs `body` with a view of encoded record bytes (nil when there are none).
    @inline(__always)
    private func withRecordView<R>(_ record: UnsafeRawBufferPointer?, _ body: (RecordView?) throws -> R) rethrows -> R {
        try body(record.flatMap(RecordView.init))
    }

    /// The next key of a class without an integer primary key (never reused, so stale objects never
    /// see a newer object). Stored at commit by `storeSequences()`.
    func nextKey(_ info: ClassInfo, _ txn: Transaction) throws -> Int64 {
        if let next = write.sequences[info.name] {
            write.sequences[info.name] = next + 1
            return next
        }
        let stored = try MetaTable(table: metaTable).value(txn, "seq:" + info.name).map { $0.withUnsafeBytes { loadLE($0, as: Int64.self) } }
        let next = stored ?? 1
        write.sequences[info.name] = next + 1
        return next
    }

    /// Stores the key sequences used by the transaction (just before it commits).
    func storeSequences() throws {
        let meta = MetaTable(table: metaTable)
        for (name, next) in write.sequences {
            var value: [UInt8] = []
            appendLE(next, to: &value)
            try meta.set(write.txn, "seq:" + name, value)
        }
    }

    // MARK: Deleting

    /// Deletes one stored object with everything it owns, unlinking it everywhere.
    func deleteObject(_ info: ClassInfo, key: Int64, old: RecordBuffer) throws {
        let txn = write.txn
        try unlinkIncoming(info, key: key)
        for p in info.columns where p.property.collection != nil {
            try clearCollection(p, owner: key)
        }
        let children: [(ClassInfo, Int64)] = info.columns.compactMap { p in
            guard p.isLink, let child = p.target, child.schema.isEmbedded else { return nil }
            return old.withBytes { RecordView($0)?.payload(p.column).flatMap { $0.isEmpty ? nil : (child, Int64._latticeDecode($0)) } }
        }
        try store(info, key: key, record: nil, old: old, txn)
        for (child, childKey) in children {
            if let record = try fetchRecord(child, key: childKey) { try deleteObject(child, key: childKey, old: record) }
        }
    }

    /// Before deleting `objects` together (`delete(_:)` of a sequence): takes them out of every List that
    /// holds two or more of them, and sets to nil the Map values naming them, one walk of the list or map
    /// for all of them, where deleting them one by one walks it once per object (its members deleted
    /// together: O(n²)). That is what each delete would do (entry gone or nil, backlink adjusted, the
    /// change recorded), so the deletes then find those collections done. Skipped unless every object is
    /// one `delete(_:)` accepts, once: a delete that throws must leave the collections as the loop would.
    func removeFromCollections(_ objects: [Object]) throws {
        // Nothing to do (and nothing checked twice) unless some List or Map can hold objects of these classes.
        guard objects.contains(where: { $0._info?.incoming.contains { [.list, .map].contains($0.property.collection) } == true }) else {
            return
        }
        var seen: Set<StoredObject> = []
        for object in objects {
            guard object._lattice === self, let info = object._info, !info.schema.isEmbedded, (try? existingKey(of: object)) != nil,
                  seen.insert(StoredObject(object, info)).inserted else { return }
        }
        // For each list or map (property, owner): the property and the keys of the objects it holds.
        var collections: [CollectionOwner: (property: PropertyInfo, members: Set<Int64>)] = [:]
        for object in objects {
            guard let info = object._info, let table = info.backlinkTable else { continue }
            for entry in try BacklinkTable(table: table).entries(write.txn, target: object._key) {
                guard let property = info.incoming.first(where: { $0.linkID == entry.linkID }),
                      [.list, .map].contains(property.property.collection) else { continue }
                collections[CollectionOwner(linkID: entry.linkID, owner: entry.source), default: (property, [])].members.insert(object._key)
            }
        }
        for (collection, entry) in collections where entry.members.count > 1 {
            if entry.property.property.collection == .map {
                let table = MapTable(table: entry.property.collectionTable!, owner: collection.owner)
                for mapKey in try table.keys(write.txn, where: { linkedKey($0).map(entry.members.contains) ?? false }) {
                    try mapSet(entry.property, owner: collection.owner, mapKey, payload: [])
                }
                continue
            }
            let positions = try listPositions(entry.property, owner: collection.owner) { linkedKey($0).map(entry.members.contains) ?? false }
            // Runs of neighbouring positions, removed from the last so that the earlier ones still hold.
            var end = positions.count
            while end > 0 {
                var start = end - 1
                while start > 0, positions[start - 1] == positions[start] - 1 { start -= 1 }
                try listRemove(entry.property, owner: collection.owner, positions[start]..<positions[end - 1] + 1)
                end = start
            }
        }
    }

    private struct CollectionOwner: Hashable {
        let linkID: UInt32
        let owner: Int64
    }

    /// A stored object of this file: its class and key.
    /// A stored object, the same for every handle on the file: its class's table and its key.
    struct StoredObject: Hashable {
        let table: Table
        let key: Int64

        init(_ object: Object, _ info: ClassInfo) {
            table = info.objectsTable
            key = object._key
        }
    }

    /// Empties every table of every class.
    func removeAllObjects() throws {
        try removeAllObjects(of: Array(classesByName.values))
    }

    /// Deletes every object of `classes` by emptying their tables, one step a table where deleting them
    /// one by one edits every table once an object. Only correct for classes that nothing outside them
    /// links to, and whose links to other classes lead to no embedded object (see `isClearable`); those
    /// links' backlinks are removed from their targets' tables.
    private func removeAllObjects(of classes: [ClassInfo]) throws {
        let txn = write.txn
        try write.storeListDirectory()
        let cleared = Set(classes.map(ObjectIdentifier.init))
        for info in classes {
            var outgoing: [ObjectIdentifier: (table: Table, linkIDs: Set<UInt32>)] = [:]
            for p in info.columns where p.linksObjects {
                guard let target = p.target, !cleared.contains(ObjectIdentifier(target)), let table = target.backlinkTable else { continue }
                outgoing[ObjectIdentifier(target), default: (table, [])].linkIDs.insert(p.linkID)
            }
            for (table, linkIDs) in outgoing.values { try BacklinkTable(table: table).removeAll(txn, linkIDs: linkIDs) }
            var key: Int64?
            try txn.withCursor(info.objectsTable) { cursor in
                var entry = try cursor.first()
                while let e = entry {
                    key = KeyCodec.int(e.key)
                    if let key { write.changes.record(info.name, key: key, .deleted) }
                    entry = try cursor.next()
                }
            }
            try ObjectTable(table: info.objectsTable).removeAll(txn)
            if let backlinks = info.backlinkTable { try BacklinkTable(table: backlinks).removeAll(txn) }
            for p in info.columns {
                if let index = p.indexTable { try IndexTable(table: index).removeAll(txn) }
                if let folded = p.foldedIndexTable { try IndexTable(table: folded).removeAll(txn) }
                if let elements = p.collectionTable { try txn.drop(elements) }
            }
        }
        didChange()
    }

    /// Deletes every object of class `info` at once when that is what deleting them one by one would do
    /// (`removeAllObjects(of:)`); returns false, having done nothing, otherwise.
    func removeAllObjectsIfClearable(_ info: ClassInfo) throws -> Bool {
        guard try isClearable(info) else { return false }
        try removeAllObjects(of: [info])
        return true
    }

    /// Whether emptying the tables of class `info` deletes its objects completely: no object links to one
    /// of them now (its backlink table is empty), and none of its links can lead to an embedded object
    /// (which its parent's deletion deletes, one by one).
    private func isClearable(_ info: ClassInfo) throws -> Bool {
        guard !info.schema.isEmbedded,
              !info.columns.contains(where: { $0.linksObjects && $0.target?.schema.isEmbedded != false }) else { return false }
        guard let backlinks = info.backlinkTable else { return true }
        return try write.txn.count(backlinks) == 0
    }

    // MARK: Backlinks

    /// Changes the number of links of `property` from `source` to `target` by `delta`.
    func adjustBacklink(_ property: PropertyInfo, source: Int64, target: Int64, by delta: Int) throws {
        guard let table = property.target?.backlinkTable else { return }
        try BacklinkTable(table: table).adjust(write.txn, linkID: property.linkID, source: source, target: target, by: delta)
    }

    /// Removes every link to an object being deleted: to-one links become nil, list and set entries go,
    /// map values become nil. Costs O(k log n) for k incoming links, plus the length of lists holding it.
    private func unlinkIncoming(_ info: ClassInfo, key: Int64) throws {
        guard let table = info.backlinkTable else { return }
        let txn = write.txn
        let backlinks = BacklinkTable(table: table)
        for entry in try backlinks.entries(txn, target: key) {
            guard let owner = info.incomingOwners[entry.linkID],
                  let property = info.incoming.first(where: { $0.linkID == entry.linkID }) else { continue }
            switch property.property.collection {
            case nil:
                guard let record = try fetchRecord(owner, key: entry.source) else { continue }
                let updated = record.withBytes { replacing(RecordView($0), in: owner, with: [property.column: []]) }
                try store(owner, key: entry.source, record: updated, old: record, txn, changed: ChangeSet.columnBit(property.column),
                          keepingEmbedded: true)
            case .list?:
                // Where the list holds the object, found by comparing payloads in place (nothing copied:
                // deleting many members of one long list walks it once per member), then removed from
                // the last so that the earlier positions still hold.
                let list = ListTable(table: property.collectionTable!, owner: entry.source)
                let holdsKey = { (payload: UnsafeRawBufferPointer) in self.linkedKey(payload) == key }
                var positions: [Int] = []
                // Held once (one link from this owner): where the last removal from this list happened,
                // or just before it, is checked first.
                if entry.count == 1, let hint = write.listRemovalHint, hint.table == list.table, hint.owner == entry.source {
                    let directory = try listDirectory(property, owner: entry.source)
                    for candidate in [hint.position, hint.position - 1] where positions.isEmpty {
                        if try list.withPayload(txn, at: candidate, in: directory, holdsKey) == true { positions = [candidate] }
                    }
                }
                if positions.isEmpty { positions = try listPositions(property, owner: entry.source, where: holdsKey) }
                for position in positions.reversed() {
                    try listRemove(property, owner: entry.source, position..<position + 1, updatingLinks: false)
                }
                if let lowest = positions.first { write.listRemovalHint = (list.table, entry.source, lowest) }
            case .set?:
                var elementKey: [UInt8] = []
                KeyCodec.appendInt(key, to: &elementKey)
                try setRemove(property, owner: entry.source, elementKey: elementKey, updatingLinks: false)
            case .map?:
                let table = MapTable(table: property.collectionTable!, owner: entry.source)
                for mapKey in try table.keys(txn, where: { linkedKey($0) == key }) {
                    try mapSet(property, owner: entry.source, mapKey, payload: [], updatingLinks: false)
                }
            }
        }
        try backlinks.removeAll(txn, target: key)
        didChangeCollections()
    }

    /// Keeps backlinks in step with element payloads entering or leaving a collection of objects;
    /// embedded elements that leave are deleted.
    private func elementsChanged(_ property: PropertyInfo, owner: Int64, added: [[UInt8]], removed: [[UInt8]]) throws {
        guard property.linksObjects, let target = property.target else { return }
        for payload in removed {
            guard let key = payload.withUnsafeBytes(linkedKey) else { continue }
            try adjustBacklink(property, source: owner, target: key, by: -1)
            if target.schema.isEmbedded, let record = try fetchRecord(target, key: key) {
                try deleteObject(target, key: key, old: record)
            }
        }
        for payload in added {
            guard let key = payload.withUnsafeBytes(linkedKey) else { continue }
            try adjustBacklink(property, source: owner, target: key, by: 1)
        }
    }

    // MARK: Collections

    private func collectionName(_ property: PropertyInfo) -> String { property.qualifiedName }

    /// Removes every element of a collection property of `owner`.
    func clearCollection(_ property: PropertyInfo, owner: Int64) throws {
        switch property.property.collection {
        case .list?:
            let count = try listDirectory(property, owner: owner).total
            try listRemove(property, owner: owner, 0..<count)
        case .set?:
            let table = SetTable(table: property.collectionTable!, owner: owner)
            for entry in try table.entries(write.txn) { try setRemove(property, owner: owner, elementKey: entry.key) }
        case .map?:
            let table = MapTable(table: property.collectionTable!, owner: owner)
            for entry in try table.entries(write.txn) { try mapSet(property, owner: owner, entry.key, payload: nil) }
        case nil:
            break
        }
    }

    /// Inserts payloads into a List before entry `index` (`index == count` appends).
    func listInsert(_ property: PropertyInfo, owner: Int64, _ payloads: [[UInt8]], at index: Int) throws {
        guard !payloads.isEmpty else { return }
        let table = ListTable(table: property.collectionTable!, owner: owner)
        var directory = try takeListDirectory(property, owner: owner).directory
        // An append to the last chunk leaves the directory unstored (stored before the commit); any other
        // insert stores it.
        if try !table.insert(write.txn, payloads, at: index, directory: &directory, storingDirectory: false) {
            write.unstoredList = (property.collectionTable!, owner, directory)
        }
        listChanged(property, owner: owner, directory, .insert(index..<index + payloads.count))
        try elementsChanged(property, owner: owner, added: payloads, removed: [])
    }

    /// Removes the entries of a List in `range` and returns their payloads.
    @discardableResult
    func listRemove(_ property: PropertyInfo, owner: Int64, _ range: Range<Int>, updatingLinks: Bool = true) throws -> [[UInt8]] {
        guard !range.isEmpty else { return [] }
        let table = ListTable(table: property.collectionTable!, owner: owner)
        var directory = try takeListDirectory(property, owner: owner).directory
        let removed = try table.remove(write.txn, range, directory: &directory)  // stores the directory
        listChanged(property, owner: owner, directory, directory.chunks.isEmpty ? .clear : .remove(range))
        if updatingLinks { try elementsChanged(property, owner: owner, added: [], removed: removed) }
        return removed
    }

    /// Moves entry `from` of a List to position `to`: the entries and what they link to stay (no
    /// backlink changes, an embedded object is not deleted); observers see a deletion and an insertion.
    func listMove(_ property: PropertyInfo, owner: Int64, from: Int, to: Int) throws {
        let table = ListTable(table: property.collectionTable!, owner: owner)
        var directory = try takeListDirectory(property, owner: owner).directory
        let moved = try table.remove(write.txn, from..<from + 1, directory: &directory)  // stores the directory
        write.changes.record(collectionName(property), owner: owner, .remove(from..<from + 1))
        _ = try table.insert(write.txn, moved, at: to, directory: &directory, storingDirectory: true)
        listChanged(property, owner: owner, directory, .insert(to..<to + 1))
    }

    /// Replaces entry `index` of a List.
    func listReplace(_ property: PropertyInfo, owner: Int64, at index: Int, with payload: [UInt8]) throws {
        let table = ListTable(table: property.collectionTable!, owner: owner)
        let taken = try takeListDirectory(property, owner: owner)
        var directory = taken.directory
        let old = try table.replace(write.txn, at: index, with: payload, in: &directory)
        // A replacement stores the directory only when the chunk splits.
        if taken.unstored { write.unstoredList = (property.collectionTable!, owner, directory) }
        listChanged(property, owner: owner, directory, .set(index))
        try elementsChanged(property, owner: owner, added: [payload], removed: [old])
    }

    /// Notes a List change: the handle's view moved, its cached directory is `directory`.
    private func listChanged(_ property: PropertyInfo, owner: Int64, _ directory: ListTable.Directory, _ operation: ChangeSet.CollectionOperation) {
        write.changes.record(collectionName(property), owner: owner, operation)
        didChangeCollections()
        cacheListDirectory(property, owner: owner, directory)
    }

    /// Adds an element to a MutableSet; false when an equal one is already there.
    @discardableResult
    func setInsert(_ property: PropertyInfo, owner: Int64, elementKey: [UInt8], payload: [UInt8]) throws -> Bool {
        let table = SetTable(table: property.collectionTable!, owner: owner)
        let before = generation
        guard try table.insert(write.txn, elementKey: elementKey, payload: payload) else { return false }
        write.changes.record(collectionName(property), owner: owner, .key(elementKey))
        didChangeCollections()
        try elementsChanged(property, owner: owner, added: [payload], removed: [])
        keyedCountChanged(property, owner: owner, by: 1, since: before)
        return true
    }

    /// Removes an element from a MutableSet; false when absent.
    @discardableResult
    func setRemove(_ property: PropertyInfo, owner: Int64, elementKey: [UInt8], updatingLinks: Bool = true) throws -> Bool {
        let table = SetTable(table: property.collectionTable!, owner: owner)
        let before = generation
        guard let payload = try table.payload(write.txn, elementKey: elementKey) else { return false }
        try table.remove(write.txn, elementKey: elementKey)
        write.changes.record(collectionName(property), owner: owner, .key(elementKey))
        didChangeCollections()
        if updatingLinks { try elementsChanged(property, owner: owner, added: [], removed: [payload]) }
        keyedCountChanged(property, owner: owner, by: -1, since: before)
        return true
    }

    /// Sets (payload non-nil) or removes (nil) an entry of a Map.
    func mapSet(_ property: PropertyInfo, owner: Int64, _ mapKey: String, payload: [UInt8]?, updatingLinks: Bool = true) throws {
        if mapKey.utf8.count > MapTable.maxKeyBytes || mapKey.isEmpty {
            throw LatticeError.wrongType(className: property.target?.name ?? "Map", property: property.name,
                                         expected: "a map key of 1 to \(MapTable.maxKeyBytes) bytes",
                                         found: "a key of \(mapKey.utf8.count) bytes")
        }
        let table = MapTable(table: property.collectionTable!, owner: owner)
        let before = generation
        let old = try table.payload(write.txn, for: mapKey)
        if payload != nil || old != nil { try table.set(write.txn, mapKey, payload: payload) }
        write.changes.record(collectionName(property), owner: owner, .key(Array(mapKey.utf8)))
        didChangeCollections()
        if updatingLinks {
            try elementsChanged(property, owner: owner, added: payload.map { [$0] } ?? [], removed: old.map { [$0] } ?? [])
        }
        keyedCountChanged(property, owner: owner, by: (payload == nil ? 0 : 1) - (old == nil ? 0 : 1), since: before)
    }
}
