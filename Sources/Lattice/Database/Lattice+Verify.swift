/// One problem ``Lattice/verify()`` found in a database file.
public struct IntegrityProblem: Sendable, Equatable, CustomStringConvertible {
    /// What kind of problem it is.
    public enum Kind: String, Sendable {
        /// A value fails its checksum (or, in an encrypted file, authentication): it was damaged, or moved, after it was written.
        case damagedValue
        /// A record passes its checksum (or has none) but is not a record of its class.
        case undecodableRecord
        /// An index entry names an object whose record holds another value (or no object).
        case staleIndexEntry
        /// A record's indexed value has no index entry: queries through the index miss the object.
        case missingIndexEntry
        /// A backlink entry counts links that the source object does not hold.
        case staleBacklink
        /// A link has no (or a smaller) backlink entry: `LinkingObjects` miss the source.
        case missingBacklink
        /// A List's directory and its chunks disagree, or the list's owner is gone.
        case listMismatch
        /// LMDB could not walk a database (its page structure is damaged); the rest of it was not checked.
        case unreadableDatabase
    }

    /// What kind of problem it is.
    public let kind: Kind
    /// The LMDB database it was found in, for example `o:Person` or `i:Person.name`.
    public let database: String
    /// Where exactly, and what was found.
    public let detail: String

    /// For example `damagedValue in o:Person: the value under object key 12 ... fails its checksum.`
    public var description: String { "\(kind.rawValue) in \(database): \(detail)" }
}

extension Lattice {
    /// Reads every database of the file in this handle's snapshot and lists every problem found, instead
    /// of stopping at the first: values that fail their checksum or records that do not decode, index
    /// entries that disagree with the records, backlink entries that disagree with the links, and List
    /// directories that disagree with their chunks. An empty list means no problem was found.
    ///
    /// Only classes in this handle's schema are checked. LMDB's own page structure is trusted: damage
    /// there can end the walk of a database (reported as ``IntegrityProblem/Kind/unreadableDatabase``)
    /// or, on damaged branch pages, crash inside LMDB.
    public func verify() -> [IntegrityProblem] {
        var check = IntegrityCheck()
        do {
            try writer?.storeListDirectory()  // inside a write: walk the List tables as they are
            let txn = try readTransaction()
            let classes = classesByName.values.sorted { $0.name < $1.name }
            for info in classes { check.records(info, txn, self) }
            for info in classes { check.collections(info, txn) }
            for info in classes { check.indexes(info, txn, self) }
            for info in classes { check.backlinks(info, txn) }
        } catch {
            check.problems.append(IntegrityProblem(kind: .unreadableDatabase, database: FileLayout.meta, detail: "\(error)"))
        }
        return check.problems
    }

    /// The message a non-throwing read stops the process with when the storage fails (the error says
    /// what happened and, for a damaged file, what to do).
    static func stopMessage(_ what: String, path: String, _ error: Error) -> String {
        "Lattice stopped while \(what) from '\(path)': \(error)"
    }
}

extension Lattice {
    /// Throws `corruptFile` for a backlink entry whose count cannot be: a to-one link or a set element
    /// counts once; a list or map of the source holds at most its size (read only for counts above 1),
    /// so a damaged count never makes `LinkingObjects` list a source billions of times.
    func checkBacklink(_ target: ClassInfo, key: Int64, id: UInt32, source: Int64, count: Int) throws {
        if count == 1 { return }
        var limit = 0
        if let property = target.incoming.first(where: { $0.linkID == id }) {
            switch property.property.collection {
            case .list?: limit = try ListStore(lattice: self, property: property, owner: source).count()
            case .map?: limit = try MapStore(lattice: self, property: property, owner: source).count()
            default: break
            }
        }
        if count < 1 || count > limit {
            throw LatticeError.corruptFile(path: env.path, reason: "the backlink entry of '\(target.name)' object key \(key) from "
                + "object key \(source) counts \(count) links, which its source cannot hold.")
        }
    }
}

extension LatticeError {
    /// A link (or list, set or map entry) naming an object that does not exist: deleting an object clears
    /// every link to it, so only damage leaves one.
    static func danglingLink(_ path: String, _ target: ClassInfo, _ key: Int64) -> LatticeError {
        .corruptFile(path: path, reason: "a link names '\(target.name)' object key \(key), which does not exist.")
    }
}

/// The state of one `verify()` run.
private struct IntegrityCheck {
    var problems: [IntegrityProblem] = []
    /// Index keys every readable record implies, by index database: (index key, object key).
    private var expectedIndex: [Table: Set<[UInt8]>] = [:]
    /// Backlink counts the links imply: `[target key][link id][source key]` by target class.
    private var expectedBacklinks: [String: [[UInt8]: Int]] = [:]
    /// Object keys (8-byte form) of each class whose record or collections are damaged: what they
    /// imply is unknown, so entries naming them are not reported again.
    private var damaged: [String: Set<[UInt8]>] = [:]
    /// Object keys of each class's readable records.
    private var present: [String: Set<[UInt8]>] = [:]

    private mutating func report(_ kind: IntegrityProblem.Kind, _ database: String, _ detail: String) {
        problems.append(IntegrityProblem(kind: kind, database: database, detail: detail))
    }

    /// Walks every entry of `table` in order. A value that fails its checksum is reported (its key marked
    /// damaged for `owner`) and passed over; any other error ends the walk.
    private mutating func walk(_ txn: Transaction, _ table: Table, _ name: String, owner: String?,
                               _ body: (inout IntegrityCheck, Bytes, Bytes) -> Void) {
        do {
            let expected = try txn.count(table)
            var walked = 0
            defer {
                // LMDB counts the entries of each table: fewer walked means entries were lost.
                if walked != expected { report(.unreadableDatabase, name, "\(walked) entries were walked; LMDB counts \(expected).") }
            }
            try txn.withCursor(table) { cursor in
                var first = true
                while true {
                    do {
                        let step = first ? try cursor.first() : try cursor.next()
                        first = false
                        guard let entry = step else { break }
                        walked += 1
                        body(&self, entry.key, entry.value)
                    } catch let LatticeError.corruptFile(_, reason), let LatticeError.authenticationFailed(_, reason) {
                        first = false
                        walked += 1
                        report(.damagedValue, name, reason)
                        if let owner, let key = cursor.currentKey(), key.count >= 8 {
                            damaged[owner, default: []].insert(Array(key.prefix(8)))
                        }
                    }
                }
            }
        } catch {
            report(.unreadableDatabase, name, "\(error)")
        }
    }

    private static func objectKey(_ key: Int64) -> [UInt8] {
        var out: [UInt8] = []
        KeyCodec.appendInt(key, to: &out)
        return out
    }

    /// The object records of a class: each must decode; notes the index entries and backlinks it implies.
    mutating func records(_ info: ClassInfo, _ txn: Transaction, _ lattice: Lattice) {
        let name = FileLayout.objects(info.name)
        walk(txn, info.objectsTable, name, owner: info.name) { check, key, value in
            guard key.count == 8, let view = RecordView(value), view.count <= info.columns.count else {
                check.report(.undecodableRecord, name, "the record under \(SealedTables.describe(key: key, in: name)) is not a '\(info.name)' record.")
                check.damaged[info.name, default: []].insert(Array(key.prefix(8)))
                return
            }
            let objectKey = Array(key)
            check.present[info.name, default: []].insert(objectKey)
            for p in info.indexed {
                guard let payload = view.payload(p.column) else { continue }  // a record older than the column
                if let dbi = p.indexTable { check.expectedIndex[dbi, default: []].insert(lattice.indexKey(p, payload: payload) + objectKey) }
                if let dbi = p.foldedIndexTable {
                    check.expectedIndex[dbi, default: []].insert(lattice.foldedIndexKey(p, payload: payload) + objectKey)
                }
            }
            for p in info.columns where p.isLink {
                guard let payload = view.payload(p.column), !payload.isEmpty, let target = p.target else { continue }
                check.expectLink(p, target: target, to: Int64._latticeDecode(payload), from: objectKey)
            }
        }
    }

    private mutating func expectLink(_ p: PropertyInfo, target: ClassInfo, to targetKey: Int64, from source: [UInt8]) {
        var entry = IntegrityCheck.objectKey(targetKey)
        withUnsafeBytes(of: p.linkID.bigEndian) { entry.append(contentsOf: $0) }
        entry += source
        expectedBacklinks[target.name, default: [:]][entry, default: 0] += 1
    }

    /// Lists (directory against chunks), sets and maps: their owners must exist; links noted for backlinks.
    mutating func collections(_ info: ClassInfo, _ txn: Transaction) {
        for p in info.columns {
            guard let kind = p.property.collection, let dbi = p.collectionTable else { continue }
            let name = FileLayout.collection(kind, info.name, p.name)
            let present = self.present[info.name] ?? []
            var lists: [[UInt8]: (directory: [(id: UInt32, count: Int)]?, chunks: [UInt32: Int])] = [:]
            walk(txn, dbi, name, owner: info.name) { check, key, value in
                guard key.count >= 8 else { return check.report(.listMismatch, name, "a key of \(key.count) bytes has no owner.") }
                let owner = Array(key.prefix(8))
                if !present.contains(owner) && !(check.damaged[info.name]?.contains(owner) ?? false) {
                    check.report(.listMismatch, name, "\(SealedTables.describe(key: key, in: name)): the owner object does not exist.")
                }
                switch kind {
                case .list:
                    guard key.count == 12 else { return check.report(.listMismatch, name, "a list key of \(key.count) bytes.") }
                    let chunk = UInt32(bigEndian: key.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
                    if chunk == 0 {
                        guard let directory = ListTable.decodeDirectory(value)?.chunks else {
                            check.damaged[info.name, default: []].insert(owner)
                            return check.report(.listMismatch, name, "\(SealedTables.describe(key: key, in: name)) does not decode.")
                        }
                        lists[owner, default: (nil, [:])].directory = directory
                    } else {
                        guard let view = RecordView(value) else {
                            check.damaged[info.name, default: []].insert(owner)
                            return check.report(.undecodableRecord, name, "\(SealedTables.describe(key: key, in: name)) does not decode.")
                        }
                        lists[owner, default: (nil, [:])].chunks[chunk] = view.count
                        if p.linksObjects, let target = p.target {
                            for i in 0..<view.count {
                                guard let payload = view.payload(i), !payload.isEmpty else { continue }
                                check.expectLink(p, target: target, to: Int64._latticeDecode(payload), from: owner)
                            }
                        }
                    }
                case .set, .map:
                    guard p.linksObjects, let target = p.target else { break }
                    // An encrypted file's entries start with their plain key (`KeyedEntry`).
                    guard let payload = KeyedEntry.payload(txn, value) else {
                        check.damaged[info.name, default: []].insert(owner)
                        return check.report(.undecodableRecord, name, "\(SealedTables.describe(key: key, in: name)) does not decode.")
                    }
                    if !payload.isEmpty {
                        check.expectLink(p, target: target, to: payload.withUnsafeBytes { Int64._latticeDecode($0) }, from: owner)
                    }
                }
            }
            for (owner, list) in lists where !(damaged[info.name]?.contains(owner) ?? false) {
                let ownerName = "the list of object key \(owner.withUnsafeBytes { KeyCodec.int($0) })"
                guard let directory = list.directory else {
                    report(.listMismatch, name, "\(ownerName) has chunks but no directory.")
                    continue
                }
                var listed = Set<UInt32>()
                for entry in directory {
                    listed.insert(entry.id)
                    if let count = list.chunks[entry.id] {
                        if count != entry.count {
                            report(.listMismatch, name, "\(ownerName): its directory gives chunk \(entry.id) \(entry.count) entries, the chunk holds \(count).")
                        }
                    } else {
                        report(.listMismatch, name, "\(ownerName): chunk \(entry.id) of its directory is missing.")
                    }
                }
                for id in list.chunks.keys.sorted() where !listed.contains(id) {
                    report(.listMismatch, name, "\(ownerName): chunk \(id) is not in its directory.")
                }
            }
        }
    }

    /// Every entry of the indexes of a class against the records.
    mutating func indexes(_ info: ClassInfo, _ txn: Transaction, _ lattice: Lattice) {
        for p in info.indexed {
            for (dbi, name) in [(p.indexTable, FileLayout.index(info.name, p.name)), (p.foldedIndexTable, FileLayout.foldedIndex(info.name, p.name))] {
                guard let dbi else { continue }
                var expected = expectedIndex[dbi] ?? []
                let damaged = self.damaged[info.name] ?? []
                walk(txn, dbi, name, owner: nil) { check, key, value in
                    let entry = Array(key) + Array(value)
                    if expected.remove(entry) == nil && !damaged.contains(Array(value)) {
                        check.report(.staleIndexEntry, name, "an entry names object key \(KeyCodec.int(value)), whose record "
                            + (check.present[info.name]?.contains(Array(value)) ?? false ? "holds another value." : "does not exist."))
                    }
                }
                for entry in expected.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
                    let key = entry.suffix(8).withUnsafeBytes { KeyCodec.int($0) }
                    report(.missingIndexEntry, name, "object key \(key) has no entry for its value.")
                }
            }
        }
    }

    /// Every backlink entry of a class against the links noted from records and collections.
    mutating func backlinks(_ info: ClassInfo, _ txn: Transaction) {
        guard let dbi = info.backlinkTable else { return }
        let name = FileLayout.backlinks(info.name)
        var expected = expectedBacklinks[info.name] ?? [:]
        // A source whose record or collections are damaged implies unknown links: its entries are not judged.
        func sourceDamaged(_ id: UInt32, _ source: [UInt8], _ check: IntegrityCheck) -> Bool {
            guard let owner = info.incomingOwners[id] else { return false }
            return check.damaged[owner.name]?.contains(source) ?? false
        }
        // Links found per `[target key][link id][source key]`: the key and the value's source, as noted from the links.
        var found: [[UInt8]: Int] = [:]
        walk(txn, dbi, name, owner: nil) { check, key, value in
            guard key.count == BacklinkTable.keySize, let link = BacklinkTable.decodeValue(value) else {
                return check.report(.staleBacklink, name, "an entry of \(key.count)+\(value.count) bytes.")
            }
            let entry = Array(key) + Array(value[0..<8])
            let n = found[entry, default: 0]
            // A source's values are sorted by ordinal, which runs 0, 1, 2, ...: anything else is damage.
            if link.ordinal != n {
                check.report(.staleBacklink, name, "object key \(KeyCodec.int(key)) has link number \(link.ordinal) from object key "
                             + "\(link.source) where number \(n) was expected.")
            }
            found[entry] = n + 1
        }
        for (entry, count) in found.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            let id = entry[8..<12].withUnsafeBytes { UInt32(bigEndian: $0.loadUnaligned(as: UInt32.self)) }
            let source = Array(entry[12..<20])
            let wanted = expected.removeValue(forKey: entry) ?? 0
            if wanted != count && !sourceDamaged(id, source, self) {
                report(wanted < count ? .staleBacklink : .missingBacklink, name,
                       "object key \(entry[0..<8].withUnsafeBytes { KeyCodec.int($0) }) counts \(count) links from object key "
                       + "\(source.withUnsafeBytes { KeyCodec.int($0) }), the source holds \(wanted).")
            }
        }
        for (entry, count) in expected.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            let id = entry[8..<12].withUnsafeBytes { UInt32(bigEndian: $0.loadUnaligned(as: UInt32.self)) }
            let source = Array(entry[12..<20])
            if sourceDamaged(id, source, self) { continue }
            report(.missingBacklink, name, "object key \(entry[0..<8].withUnsafeBytes { KeyCodec.int($0) }) has no entry for "
                + "\(count) link(s) from object key \(source.withUnsafeBytes { KeyCodec.int($0) }).")
        }
    }
}
