extension Lattice {
    /// What `add(_:update:)` and `create(_:value:update:)` do when an object with the same primary key exists.
    public enum UpdatePolicy: Sendable {
        /// Throw ``LatticeError/duplicatePrimaryKey(className:value:)`` (the default).
        case error
        /// Update the existing object; only values that differ count as changes.
        case modified
        /// Update the existing object, every property counting as changed.
        case all
    }

    // MARK: Transactions

    /// Whether this handle is inside a write transaction.
    public var isInWriteTransaction: Bool { writer != nil }

    /// Runs `block` in a write transaction and commits it, returning the block's value.
    ///
    /// If the block throws, everything it did is rolled back and the error rethrown. Writers queue
    /// across threads and processes; readers never wait. Unavailable from async code (an LMDB write
    /// transaction must begin and end on one thread): use ``asyncWrite(isolation:_:)`` there.
    @available(*, noasync, message: "A write transaction must begin and end on one thread: use asyncWrite in async code.")
    @discardableResult
    public func write<Result>(_ block: () throws -> Result) throws -> Result {
        try performWrite(block)
    }

    /// `write(_:)` for async code: runs `block` in a write transaction on the caller's isolation, with no
    /// suspension between begin and commit (so on one thread). Waiting for another writer blocks the thread.
    @discardableResult
    public func asyncWrite<Result>(isolation: isolated (any Actor)? = #isolation, _ block: () throws -> Result) async throws -> Result {
        try performWrite(block)
    }

    private func performWrite<Result>(_ block: () throws -> Result) throws -> Result {
        try startWrite()
        do {
            let result = try block()
            if writer != nil { try finishWrite() }
            return result
        } catch {
            if writer != nil { abortWrite() }
            throw error
        }
    }

    /// Begins a write transaction: waits for other writers, then moves to the latest commit.
    @available(*, noasync, message: "A write transaction must begin and end on one thread: use asyncWrite in async code.")
    public func beginWrite() throws { try startWrite() }

    /// Commits the write transaction. If a property setter inside it failed (for example a value over
    /// the size limit or a changed primary key), rolls back instead and throws that error.
    @available(*, noasync, message: "A write transaction must begin and end on one thread: use asyncWrite in async code.")
    public func commitWrite() throws { try finishWrite() }

    /// Rolls back the write transaction.
    @available(*, noasync, message: "A write transaction must begin and end on one thread: use asyncWrite in async code.")
    public func cancelWrite() { abortWrite() }

    /// Begins the write transaction. Observers of this handle first hear of other handles' commits it
    /// has not seen (as in Realm); with `deliveringPending`, of its own undelivered commits too (see
    /// `write(withoutNotifying:)`).
    func startWrite(deliveringPending: Bool = false) throws {
        if frozenLock != nil { throw LatticeError.frozen(operation: "beginWrite()") }
        if configuration.readOnly { throw LatticeError.readOnly(path: env.path, operation: "beginWrite()") }
        if writer != nil { throw LatticeError.alreadyInWriteTransaction }
        // The write sees the latest commit; reads after it must too. The old snapshot must not pin pages
        // (or keep the map from growing) while this waits for other writers.
        releaseSnapshot()
        env.clearStaleReadersIfDue()
        try checkActiveVersions()
        try env.writerLock.lock()
        do {
            // Under the writer lock no commit can come between this delivery and the write: a write whose
            // tokens skip notification then skips its own changes only.
            let latest = env.lastTransactionID
            if let observation = observationState as? HandleObservation, deliveringPending || viewCommit != latest,
               observation.isBehind(latest) {
                refresh()
                releaseSnapshot()
                // A callback may have begun a write of its own and left it open.
                if writer != nil { throw LatticeError.alreadyInWriteTransaction }
            }
            let txn = try Transaction(writeOn: env)
            do {
                try checkSchemaVersion(txn)
            } catch {
                txn.abort()
                throw error
            }
            writer = WriteContext(txn: txn)
            moveView(to: txn.id - 1)  // a write's id is the one it will commit as
        } catch {
            env.writerLock.unlock()
            throw error
        }
        didEndSnapshot()
        keyedCacheStartsWrite(on: viewCommit)
    }

    /// Commits the write; then the handle's `observe(_:)` blocks, but those of `skipped`, hear of it.
    func finishWrite(skipping skipped: [ObserverFlag] = []) throws {
        guard let write = writer else { throw LatticeError.notInWriteTransaction(operation: "commitWrite()") }
        // From another thread nothing may be touched: the transaction stays open for its own thread.
        try write.txn.checkThread("commitWrite()")
        if let error = write.pendingError {
            abortWrite()
            throw error
        }
        do {
            try write.storeListDirectory()
            try storeSequences()
            let wakeUp = try logChanges(write)
            do {
                try write.txn.commit()
            } catch {
                wakeUp.map(ChangeSignal.discard)
                throw error
            }
            wakeUp.map(ChangeSignal.send)
        } catch {
            abortWrite()
            throw error
        }
        // The view is this commit now, read while no other writer can commit (LMDB commits no
        // transaction that changed nothing, and the next one then gets the same id).
        viewCommit = env.lastTransactionID
        writer = nil
        keepOwnCommit(write.changes)
        keyedCacheCommitted(viewCommit)
        env.writerLock.unlock()
        didEndSnapshot()
        (observationState as? HandleObservation)?.didCommit(skipping: skipped)
    }

    /// Keeps the change set of a commit just made through this handle: the last `keptOwnCommits`, each
    /// of at most `maxOwnCommitChanges` changes (a larger one leaves a gap `ownChanges` reports).
    private func keepOwnCommit(_ changes: ChangeSet) {
        ownCommitCount &+= 1
        guard changes.objects.count + changes.collections.count <= Lattice.maxOwnCommitChanges else {
            ownCommits.removeAll()
            return
        }
        if ownCommits.count == Lattice.keptOwnCommits { ownCommits.removeFirst() }
        ownCommits.append((ownCommitCount, changes))
    }

    static let keptOwnCommits = 8
    static let maxOwnCommitChanges = 256

    /// The change sets of the commits made through this handle after its `number`-th, oldest first; nil
    /// when one of them is no longer kept.
    func ownChanges(after number: UInt64) -> [ChangeSet]? {
        if number == ownCommitCount { return [] }
        guard let first = ownCommits.first, first.number <= number &+ 1 else { return nil }
        return ownCommits.filter { $0.number > number }.map(\.changes)
    }

    private func abortWrite() {
        guard let txn = writer?.txn else { return }
        // A non-throwing API: ending another thread's LMDB write transaction would leave LMDB's writer
        // mutex locked by that thread, hanging every writer of the file, so this stops instead.
        guard txn.isOwnedByCurrentThread else {
            fatalError(LatticeError.wrongThread(operation: "cancelWrite()").description)
        }
        txn.abort()
        writer = nil
        env.writerLock.unlock()
        didChange()
        (observationState as? HandleObservation)?.writeEnded()
    }

    func requireWrite(_ operation: @autoclosure () -> String) throws -> Transaction {
        // The message is built only for an error: callers compose it from names on every write.
        if frozenLock != nil { throw LatticeError.frozen(operation: operation()) }
        if configuration.readOnly { throw LatticeError.readOnly(path: env.path, operation: operation()) }
        guard let writer else { throw LatticeError.notInWriteTransaction(operation: operation()) }
        try writer.txn.checkThread(operation())
        return writer.txn
    }

    // MARK: Adding

    /// Adds an unmanaged object: afterwards it is managed and reads and writes through to the database.
    ///
    /// Every unmanaged object it reaches through links, lists, sets and maps is added too (cycles
    /// included), with the same update policy. Adding an object this handle already manages does
    /// nothing. With `update` other than `.error`, an existing object with the same primary key is
    /// updated instead of throwing. With `.modified`, its embedded objects are updated in place (a to-one
    /// embedded object, and a List's elements position by position, surplus ones deleted); `.all`
    /// replaces them with new ones.
    public func add(_ object: Object, update: UpdatePolicy = .error) throws {
        _ = try requireWrite("add(_:)")
        if update != .error, object._lattice == nil, let info = classInfo(of: object), info.primaryKey == nil {
            throw LatticeError.noPrimaryKey(className: info.name, operation: "add(_:update: .\(update))")
        }
        _ = try addObject(object, update: update, embedded: false)
    }

    /// The key of a managed object of this file, checked to exist in this handle's view. An object of
    /// another handle on the same file is fine: only its key is used, never its cached state.
    func existingKey(of object: Object) throws -> Int64 {
        let info = try checkedOwner(of: object)
        // This handle's own instance holding its record read in this generation: that is the stored
        // record (any write since would have started another generation), no lookup needed.
        if object._lattice === self && object._generation == generation && object._slice != nil { return object._key }
        // The stored record's creation stamp, read where it is: a link needs the key, not a copy.
        guard let stamp = try storedStamp(info, key: object._key, in: readTransaction()),
              object._stamp == 0 || stamp == object._stamp else {
            throw LatticeError.objectInvalidated(className: info.name)
        }
        return object._key
    }

    /// The creation stamp of the record stored under `key` (0: none), read where it is; nil without a record.
    // The lookup's closure returns a plain Int64 (-1: no record), not `UInt64?`: with the optional, the
    // Swift 6.3.1 release build left garbage in the error register after a lookup that first wrote the
    // write's pending tail run, and the caller crashed on it (debug builds were fine). Out of line too,
    // as `fetchStorage` is.
    @inline(never)
    private func storedStamp(_ info: ClassInfo, key: Int64, in txn: Transaction) throws -> UInt64? {
        let stamp = try KeyCodec.withObjectKey(key) { k in
            try txn.get(info.objectsTable, k) { bytes -> Int64 in
                guard let bytes else { return -1 }
                return Int64(bitPattern: RecordLayout(bytes)?.stamp ?? 0)
            }
        }
        return stamp == -1 ? nil : UInt64(bitPattern: stamp)
    }

    /// `existingKey(of:)` with the record it read.
    private func existingRecord(of object: Object) throws -> (key: Int64, record: RecordBuffer) {
        let info = try checkedOwner(of: object)
        // This handle's own instance holding a copy of its record read in this generation: that is the
        // stored record (any write since would have started another generation), no lookup needed.
        let cached = object._lattice === self && object._generation == generation ? object._record : nil
        guard let record = try cached ?? fetchRecord(info, key: object._key),
              object._stamp == 0 || record.stamp == object._stamp else {
            throw LatticeError.objectInvalidated(className: info.name)
        }
        return (object._key, record)
    }

    /// The class of managed `object` when a handle on this file manages it and has not been invalidated since.
    private func checkedOwner(of object: Object) throws -> ClassInfo {
        let name = object._info?.name ?? "\(type(of: object))"
        guard let owner = object._lattice, owner.env === env, let info = object._info else {
            throw LatticeError.objectFromAnotherLattice(className: name)
        }
        guard object._epoch == owner.epoch else { throw LatticeError.objectInvalidated(className: name) }
        return info
    }

    /// Adds `object` and what it reaches; returns its key.
    func addObject(_ object: Object, update: UpdatePolicy, embedded: Bool) throws -> Int64 {
        let txn = try requireWrite("add(_:)")
        if object._lattice != nil { return try existingKey(of: object) }
        let info = try requireClass(of: object)
        // An object whose class has no links is never reached again while it is being added.
        let onePut = info.addsWithOnePut && update == .error
        let write = writer!  // `requireWrite` checked
        if !onePut, let key = write.adding[ObjectIdentifier(object)] { return key }
        if info.schema.isEmbedded && !embedded {
            throw LatticeError.embeddedObject(className: info.name, reason: "it can only be added through a parent's property.")
        }
        let base = UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque())
        let key: Int64
        var old: RecordBuffer?
        if let pk = info.primaryKey {
            if onePut {
                // The primary key is the object key, read back from the record: one encoding, one put.
                // Nothing encoded here adds another object, so the record goes into the reused buffer.
                let stamp = UInt64(txn.id)
                var record: [UInt8] = []
                swap(&record, &recordScratch)
                defer { swap(&record, &recordScratch) }
                try encode(object, info, stamp: stamp, into: &record)
                let key = record.withUnsafeBytes { RecordView($0)?.payload(pk.column).map(Int64._latticeDecode) } ?? 0
                guard try store(info, key: key, record: record, old: nil, txn, newKey: true) else {
                    let pkPayload = record.withUnsafeBytes { RecordView($0)?.payload(pk.column).map(Array.init) } ?? []
                    throw LatticeError.duplicatePrimaryKey(className: info.name, value: describe(pk, pkPayload))
                }
                object.attach(to: self, info: info, key: key, record: nil, stamp: stamp)
                return key
            }
            var pkPayload: [UInt8] = []
            if info.type == DynamicObject.self {
                try unsafeDowncast(object, to: DynamicObject.self).encodePayload(pk, into: &pkPayload, adding: self)
            } else {
                try pk.accessor.encode(at: base + pk.offset, into: &pkPayload, adding: self)
            }
            if let found = try findObject(info, primaryKeyPayload: pkPayload) {
                if update == .error {
                    throw LatticeError.duplicatePrimaryKey(className: info.name, value: describe(pk, pkPayload))
                }
                key = found.key
                old = found.record
            } else if info.keyedByPrimaryKey {
                key = pkPayload.withUnsafeBytes { Int64._latticeDecode($0) }
            } else {
                key = try nextKey(info, txn)
            }
        } else if info.schema.isEmbedded, let slot = try takeEmbeddedSlot(of: object, info) {
            key = slot.key
            old = slot.record
        } else {
            key = try nextKey(info, txn)
        }
        // With `.modified`, the embedded objects this one links to go into the stored ones.
        let claimed = update == .modified ? old.map { claimEmbeddedSlots(of: object, info, old: $0) } ?? [] : []
        defer { releaseEmbeddedSlots(claimed) }
        let outerPolicy = write.addPolicy
        write.addPolicy = update
        write.adding[ObjectIdentifier(object)] = key
        defer {
            write.adding[ObjectIdentifier(object)] = nil
            write.addPolicy = outerPolicy
        }
        // Integer primary keys are reused as object keys, so a new object is stamped with the id of the
        // transaction creating it (unique per commit, increasing across processes); an updated one keeps
        // its stamp.
        let stamp = info.keyedByPrimaryKey ? old.map { $0.stamp } ?? UInt64(txn.id) : 0
        var record: [UInt8] = []
        record.reserveCapacity(160)
        try encode(object, info, stamp: stamp, into: &record)
        // A new key (from the sequence, or an integer primary key no object has) is put as new: one
        // above every stored key is appended, and its index entries go last.
        // `.all` counts every property but the primary key as changed, equal or not, as Realm reports it.
        let everyColumn = update == .all && old != nil
            ? info.columns.reduce(UInt64(0)) { $1.property.isPrimaryKey ? $0 : $0 | ChangeSet.columnBit($1.column) } : nil
        guard try store(info, key: key, record: record, old: old, txn, newKey: old == nil, changed: everyColumn) else {
            throw LatticeError.corruptFile(path: env.path, reason: "object key \(key) of '\(info.name)' is stored although no object has it.")
        }
        object.attach(to: self, info: info, key: key, record: nil, stamp: stamp)
        // A new object has no stored collection entries (deleting an object deletes its entries), so
        // its collections only insert; an updated one replaces its entries.
        let replacing = old != nil
        if info.type == DynamicObject.self {
            try unsafeDowncast(object, to: DynamicObject.self).didAdd(info, replacing: replacing)
            return key
        }
        for p in info.columns where p.property.collection != nil {
            try p.accessor.didAdd(at: base + p.offset, owner: object, column: p.column, replacing: replacing)
        }
        for p in info.columns where p.holdsReferences {
            p.accessor.releaseUnmanagedValue(at: UnsafeMutableRawPointer(mutating: base) + p.offset)
        }
        return key
    }

    /// Adds every object of `objects` (see ``add(_:update:)``).
    public func add<S: Sequence>(contentsOf objects: S, update: UpdatePolicy = .error) throws where S.Element: Object {
        for object in objects { try add(object, update: update) }
    }

    /// Adds every object of `objects`, as Realm's `add(_:update:)` of a sequence does: the same as
    /// ``add(contentsOf:update:)``.
    ///
    /// ```swift
    /// try lattice.write { try lattice.add([rex, fido]) }
    /// ```
    public func add<S: Sequence>(_ objects: S, update: UpdatePolicy = .error) throws where S.Element: Object {
        try add(contentsOf: objects, update: update)
    }

    // MARK: Deleting

    /// Deletes a managed object. Links to it become nil, it leaves every list and set holding it, map
    /// values naming it become nil, and its embedded objects are deleted with it. Other instances of it
    /// become invalidated.
    public func delete(_ object: Object) throws {
        _ = try requireWrite("delete(_:)")
        let name = object._info?.name ?? "\(type(of: object))"
        guard object._lattice != nil, let info = object._info else {
            throw LatticeError.objectNotManaged(className: name, operation: "delete(_:)")
        }
        let old = try existingRecord(of: object).record
        if info.schema.isEmbedded {
            throw LatticeError.embeddedObject(className: name, reason: "it is deleted by clearing its parent's property or deleting the parent.")
        }
        try deleteObject(info, key: object._key, old: old)
    }

    /// Deletes every object of `objects` (a ``Results`` is walked as it was when the call began). An
    /// object that appears more than once (a List may hold it twice) is deleted once.
    ///
    /// `delete(objects(T.self))` (sorted or not, of this handle) of a class that no object links to at
    /// the moment, and whose links lead to no embedded object, empties the class's tables in one step
    /// each, as ``deleteAll()`` does (its links' backlinks go in one pass over their targets'): 40,000
    /// objects in about 1 ms instead of 40. Observers hear of every deletion all the same.
    public func delete<S: Sequence>(_ objects: S) throws where S.Element: Object {
        // Every object of a class nothing links to (`lattice.delete(lattice.objects(T.self))`): its tables
        // are emptied, as `deleteAll()` does.
        if let info = (objects as? CheckedObjects)?.everyObject(on: self) {
            _ = try requireWrite("delete(_:)")
            if try removeAllObjectsIfClearable(info) { return }
        }
        var seen: Set<StoredObject> = []
        // Results are read through a throwing path: a damaged record throws here instead of stopping.
        let all: [Object] = try (objects as? CheckedObjects)?.checkedObjects() ?? objects.map { $0 }
        let objects = all.filter { object in
            // Objects of any handle on this file count; others go to delete(_:), which says why not.
            guard object._lattice?.env === env, let info = object._info else { return true }
            return seen.insert(StoredObject(object, info)).inserted
        }
        if objects.count > 1 {
            _ = try requireWrite("delete(_:)")
            try removeFromCollections(objects)
        }
        for object in objects { try delete(object) }
    }

    /// Deletes every object of every class in the schema.
    public func deleteAll() throws {
        _ = try requireWrite("deleteAll()")
        try removeAllObjects()
    }

    // MARK: Managed property writes

    /// Stops a property setter used outside a write transaction (a setter cannot throw).
    func requireWriteForSetter(_ info: ClassInfo, _ property: PropertyInfo) {
        if frozenLock != nil { fatalError("\(LatticeError.frozen(operation: "setting '\(info.name).\(property.name)'"))") }
        if configuration.readOnly {
            fatalError("\(LatticeError.readOnly(path: env.path, operation: "setting '\(info.name).\(property.name)'"))")
        }
        if writer == nil {
            fatalError("Cannot set '\(info.name).\(property.name)' outside a write transaction: "
                + "wrap the change in lattice.write { } (or beginWrite()/commitWrite()).")
        }
    }

    /// Runs a change made where Swift cannot throw (setters, collection mutations): a failure is kept
    /// in `pendingError` and fails the write transaction at commit, rolling everything back.
    func recordingFailure(_ body: () throws -> Void) {
        do {
            try body()
        } catch let error as LatticeError {
            if writer?.pendingError == nil { writer?.pendingError = error }
        } catch {
            if writer?.pendingError == nil { writer?.pendingError = .storage(path: env.path, code: -1, message: "\(error)") }
        }
    }

    /// Writes one property of a managed object from its setter.
    func setProperty(of object: Object, property: PropertyInfo, payload: [UInt8]) {
        recordingFailure { try updateColumn(of: object, property, payload: payload) }
    }

    /// Replaces one column's payload of a managed object, keeping indexes and backlinks in step.
    func updateColumn(of object: Object, _ property: PropertyInfo, payload: [UInt8]) throws {
        guard let txn = writer?.txn, let info = object._info else { return }
        try checkSize(info, property, size: payload.count)
        let old = object.liveRecord(self)
        if property.property.isPrimaryKey {
            let current = old.withBytes { RecordView($0)?.payload(property.column).map(Array.init) }
            if current != payload { throw LatticeError.primaryKeyChanged(className: info.name, property: property.name) }
            return
        }
        let changed = ChangeSet.columnBit(property.column)
        // Writing the stored value again writes nothing, but observers hear of it, as in Realm: setting a
        // property to the value it has counts as a change.
        let current = old.slice.payload(property.column)
        if let current, payload.withUnsafeBytes({ current.sameBytes(as: $0) }) {
            writer?.changes.record(info.name, key: object._key, .modified, columns: changed)
            return
        }
        if let current, current.count == payload.count, let at = current.baseAddress {
            // A payload of the same size (numbers, dates, ...) is patched into a copy of the record, which
            // the object then keeps: one copy, no array.
            let storage = old.withBytes { bytes in RecordStorage.copy(bytes) }
            let offset = at - old.slice.base
            storage.withUnsafeMutablePointerToElements { elements in
                payload.withUnsafeBytes { UnsafeMutableRawBufferPointer(start: elements + offset, count: $0.count).copyMemory(from: $0) }
            }
            try store(info, key: object._key, bytes: storage.bytes, old: old, txn, changed: changed)
            object._record = RecordBuffer(storage: storage, slice: RecordSlice(storage.bytes))
        } else {
            let record = old.withBytes { replacing(RecordView($0), in: info, with: [property.column: payload]) }
            try store(info, key: object._key, record: record, old: old, txn, changed: changed)
            object._record = RecordBuffer.make(record)
        }
        object._generation = generation
    }

    /// Encodes the record of an unmanaged object into `out`.
    private func encode(_ object: Object, _ info: ClassInfo, stamp: UInt64, into out: inout [UInt8]) throws {
        let base = UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque())
        let encoders = info.encoders
        // A dynamic object's values are in a dictionary, not in fields (its class is dynamic only then).
        let dynamic = info.type == DynamicObject.self ? unsafeDowncast(object, to: DynamicObject.self) : nil
        try Record.build(into: &out, count: encoders.count, stamp: stamp) { out, i in
            let column = encoders[i]
            let start = out.count
            if let dynamic {
                try dynamic.encodePayload(info.columns[i], into: &out, adding: self)
            } else if !column.kind.encode(at: base + column.offset, into: &out) {
                try column.accessor.encode(at: base + column.offset, into: &out, adding: self)
            }
            let size = out.count - start
            if size > PropertyInfo.maxValueBytes { try checkSize(info, info.columns[i], size: size) }
        }
    }

    /// Throws `valueTooLarge` for a String or Data payload over 16 MiB (plus an optional's marker byte).
    @inline(__always)
    func checkSize(_ info: ClassInfo, _ p: PropertyInfo, size: Int) throws {
        // Only String/Data payloads can pass the limit: compare sizes before looking at the type.
        if size > PropertyInfo.maxValueBytes && size > ClassInfo.maxPayloadBytes(p) {
            throw LatticeError.valueTooLarge(className: info.name, property: p.name,
                                             size: size - (p.property.isOptional ? 1 : 0), limit: PropertyInfo.maxValueBytes)
        }
    }

    /// A record equal to `view` with the payloads of some columns replaced. Columns the stored record
    /// lacks (written before they existed) get their type's default.
    func replacing(_ view: RecordView?, in info: ClassInfo, with replacements: [Int: [UInt8]]) -> [UInt8] {
        let columns = info.columns
        return Record.build(count: columns.count, stamp: view?.stamp ?? 0, capacity: view?.bytes.count ?? 128) { out, i in
            let p = columns[i]
            if let replacement = replacements[p.column] {
                out.append(contentsOf: replacement)
            } else if let existing = view?.payload(p.column) {
                out.append(contentsOf: existing)
            } else {
                p.valueType._latticeDefaultEncoded(into: &out)
            }
        }
    }

    private func describe(_ p: PropertyInfo, _ payload: [UInt8]) -> String {
        let value = payload.withUnsafeBytes { p.valueType.decodeAny($0) }
        if let string = value as? String { return "'\(string)'" }
        return value.map { "\($0)" } ?? "nil"
    }
}

extension ClassInfo {
    /// The largest payload allowed for a property (16 MiB of String/Data, plus an optional's marker byte).
    static func maxPayloadBytes(_ p: PropertyInfo) -> Int {
        switch p.property.type {
        case .string, .data: return PropertyInfo.maxValueBytes + (p.property.isOptional ? 1 : 0)
        default: return Int.max
        }
    }
}

extension _Persistable {
    static func _latticeDefaultEncoded(into out: inout [UInt8]) { _latticeDefault._latticeEncode(into: &out) }
}
