/// `changes`: the per-commit change log that notifications read, one entry per write transaction
/// committed while some process observed the file, keyed by the transaction id (8 bytes, big-endian, so
/// entries sort by commit order).
///
/// An entry is a `ChangeSet` in a compact form: the table names it mentions (varint count, then each as a
/// varint length and UTF-8), the object changes (varint count, then each: varint name index, kind byte,
/// zigzag varint key, and for a modification the varint column mask), and the collection changes (varint
/// count, then each: varint name index, zigzag varint owner, operation byte and its varints). A commit that
/// changed more than `maxEntryChanges` things is stored as the single byte `overflow`: its readers
/// re-evaluate instead. Entries older than `window` commits are trimmed by the writer (`trimBatch` at a
/// time), so the log stays under `window + trimBatch` entries of at most about `maxEntryChanges * 24` bytes
/// each.
struct ChangeLog {
    let table: Table

    /// Entries kept behind the newest one.
    static let window: Int64 = 1_000
    /// Entries that fell out of the window are trimmed this many at a time: the log's first page is then
    /// rewritten once a batch instead of at every commit, and the log holds at most `window + trimBatch`
    /// entries.
    static let trimBatch: Int64 = 32
    /// More changes than this in one commit are logged as `overflow`.
    static let maxEntryChanges = 1_024
    static let overflow: UInt8 = 0xFF

    static func key(_ id: Int64) -> [UInt8] {
        withUnsafeBytes(of: UInt64(bitPattern: id).bigEndian) { Array($0) }
    }

    /// Stores the entry of transaction `id` and, once a batch of entries has fallen out of the window,
    /// trims them.
    func append(_ txn: Transaction, id: Int64, _ changes: ChangeSet) throws {
        let value = ChangeLog.encode(changes)
        try ChangeLog.key(id).withUnsafeBytes { k in _ = try value.withUnsafeBytes { try txn.put(table, k, $0, mode: .append) } }
        guard id > ChangeLog.window + ChangeLog.trimBatch else { return }
        let cutoff = ChangeLog.key(id - ChangeLog.window)
        let batchCutoff = ChangeLog.key(id - ChangeLog.window - ChangeLog.trimBatch)
        // Collected first: no cursor of a write transaction may stay open across a delete.
        let stale = try txn.withCursor(table) { cursor -> [[UInt8]] in
            var entry = try cursor.first()
            guard let first = entry, first.key.lexicographicallyPrecedes(batchCutoff) else { return [] }
            var keys: [[UInt8]] = []
            // At most a few batches a commit (after commits nobody observed, the whole log may be stale).
            while let e = entry, keys.count < 4 * Int(ChangeLog.trimBatch), e.key.lexicographicallyPrecedes(cutoff) {
                keys.append(Array(e.key))
                entry = try cursor.next()
            }
            return keys
        }
        for key in stale { try key.withUnsafeBytes { _ = try txn.delete(table, $0) } }
    }

    /// The entries of transactions `after < id <= through`, in commit order; nil when one of them may be
    /// missing (trimmed, never logged, or an overflow entry): the reader must then re-evaluate.
    func entries(_ txn: Transaction, after: Int64, through: Int64) throws -> [ChangeSet]? {
        if through <= after { return [] }
        return try ChangeLog.key(after + 1).withUnsafeBytes { start in
            try txn.withCursor(table) { cursor -> [ChangeSet]? in
                var out: [ChangeSet] = []
                var expected = after + 1
                var entry = try cursor.seek(atLeast: start)
                while let e = entry {
                    let id = Int64(bitPattern: UInt64(bigEndian: e.key.loadUnaligned(as: UInt64.self)))
                    if id > through { break }
                    // Transactions without an entry are only those of opening (table creation, metadata);
                    // a gap is treated as unknown all the same.
                    if id != expected { return nil }
                    guard let changes = ChangeLog.decode(e.value) else { return nil }
                    out.append(changes)
                    expected += 1
                    entry = try cursor.next()
                }
                return expected == through + 1 ? out : nil
            }
        }
    }

    /// Bytes the log takes in the file (its pages).
    func byteCount(_ txn: Transaction) throws -> Int { try txn.byteCount(table) }

    // MARK: Encoding

    static func encode(_ changes: ChangeSet) -> [UInt8] {
        if changes.objects.count + changes.collections.count > maxEntryChanges { return [overflow] }
        var names: [String: Int] = [:]
        var nameList: [String] = []
        func index(_ name: String) -> UInt64 {
            if let i = names[name] { return UInt64(i) }
            names[name] = nameList.count
            nameList.append(name)
            return UInt64(nameList.count - 1)
        }
        var body: [UInt8] = []
        body.reserveCapacity(changes.objects.count * 6 + changes.collections.count * 8)
        Varint.append(UInt64(changes.objects.count), to: &body)
        for change in changes.objects {
            Varint.append(index(change.className), to: &body)
            body.append(change.kind.rawValue)
            Varint.append(Varint.zigzag(change.key), to: &body)
            if change.kind == .modified { Varint.append(change.columns, to: &body) }
        }
        Varint.append(UInt64(changes.collections.count), to: &body)
        for change in changes.collections {
            Varint.append(index(change.property), to: &body)
            Varint.append(Varint.zigzag(change.owner), to: &body)
            switch change.operation {
            case let .insert(range):
                body.append(0)
                Varint.append(UInt64(range.lowerBound), to: &body)
                Varint.append(UInt64(range.count), to: &body)
            case let .remove(range):
                body.append(1)
                Varint.append(UInt64(range.lowerBound), to: &body)
                Varint.append(UInt64(range.count), to: &body)
            case let .set(at):
                body.append(2)
                Varint.append(UInt64(at), to: &body)
            case .clear:
                body.append(3)
            case let .key(bytes):
                body.append(4)
                Varint.append(UInt64(bytes.count), to: &body)
                body.append(contentsOf: bytes)
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(body.count + nameList.count * 12 + 2)
        Varint.append(UInt64(nameList.count), to: &out)
        for name in nameList {
            Varint.append(UInt64(name.utf8.count), to: &out)
            out.append(contentsOf: name.utf8)
        }
        out.append(contentsOf: body)
        return out
    }

    /// The change set of an entry; nil for an overflow entry or bytes that do not decode.
    static func decode(_ bytes: UnsafeRawBufferPointer) -> ChangeSet? {
        if bytes.count == 1 && bytes[0] == overflow { return nil }
        var at = 0
        func varint() -> UInt64? {
            guard at < bytes.count else { return nil }
            return Varint.read(bytes, &at)
        }
        func byte() -> UInt8? {
            guard at < bytes.count else { return nil }
            defer { at += 1 }
            return bytes[at]
        }
        guard let nameCount = varint(), nameCount <= bytes.count else { return nil }
        var names: [String] = []
        for _ in 0..<nameCount {
            guard let length = varint().map(Int.init), at + length <= bytes.count else { return nil }
            names.append(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[at..<at + length]), as: UTF8.self))
            at += length
        }
        func name() -> String? { varint().flatMap { $0 < names.count ? names[Int($0)] : nil } }
        var changes = ChangeSet()
        guard let objectCount = varint() else { return nil }
        for _ in 0..<objectCount {
            guard let cls = name(), let kind = byte().flatMap(ChangeSet.ObjectChangeKind.init(rawValue:)),
                  let key = varint().map(Varint.unzigzag) else { return nil }
            var columns: UInt64 = 0
            if kind == .modified { guard let mask = varint() else { return nil }; columns = mask }
            changes.record(cls, key: key, kind, columns: columns)
        }
        guard let collectionCount = varint() else { return nil }
        for _ in 0..<collectionCount {
            guard let property = name(), let owner = varint().map(Varint.unzigzag), let tag = byte() else { return nil }
            let operation: ChangeSet.CollectionOperation
            switch tag {
            case 0, 1:
                guard let lower = varint().map(Int.init), let count = varint().map(Int.init) else { return nil }
                operation = tag == 0 ? .insert(lower..<lower + count) : .remove(lower..<lower + count)
            case 2:
                guard let index = varint().map(Int.init) else { return nil }
                operation = .set(index)
            case 3:
                operation = .clear
            case 4:
                guard let length = varint().map(Int.init), at + length <= bytes.count else { return nil }
                operation = .key(Array(UnsafeRawBufferPointer(rebasing: bytes[at..<at + length])))
                at += length
            default:
                return nil
            }
            changes.record(property, owner: owner, operation)
        }
        return changes
    }
}
