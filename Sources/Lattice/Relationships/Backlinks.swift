import CLMDB

/// The backlink table `b:<Target>` (MDB_DUPSORT|MDB_DUPFIXED): key = target object key; each value
/// `[u32 link id][8-byte source key][u32 count]` says that `count` links of that property of that
/// source object point at the target. Listing or counting the sources through one property is one
/// seek plus one step per entry, whatever the size of the file.
extension Lattice {
    private static let entrySize = 16

    private func backlinkEntry(_ property: PropertyInfo, source: Int64, count: UInt32) -> [UInt8] {
        var entry: [UInt8] = []
        entry.reserveCapacity(Lattice.entrySize)
        withUnsafeBytes(of: property.linkID.bigEndian) { entry.append(contentsOf: $0) }
        KeyCodec.appendInt(source, to: &entry)
        withUnsafeBytes(of: count.bigEndian) { entry.append(contentsOf: $0) }
        return entry
    }

    /// The current entry of (property, source) at `target`, if any.
    private func findBacklink(_ property: PropertyInfo, source: Int64, target: Int64, _ txn: Transaction) throws -> [UInt8]? {
        guard let dbi = property.target?.backlinkDBI else { return nil }
        let probe = backlinkEntry(property, source: source, count: 0)
        var key: [UInt8] = []
        KeyCodec.appendInt(target, to: &key)
        return try key.withUnsafeBytes { k in
            try probe.withUnsafeBytes { v in
                try txn.withCursor(dbi) { cursor in
                    guard let found = try cursor.seek(key: k, value: v, op: MDB_GET_BOTH_RANGE),
                          found.value.prefix(12).elementsEqual(probe.prefix(12)) else { return nil }
                    return Array(found.value)
                }
            }
        }
    }

    /// Records one more link of `property` from `source` to `target`.
    func addBacklink(_ property: PropertyInfo, source: Int64, target: Int64) throws {
        try adjustBacklink(property, source: source, target: target, by: 1)
    }

    /// Records one link fewer.
    func removeBacklink(_ property: PropertyInfo, source: Int64, target: Int64) throws {
        try adjustBacklink(property, source: source, target: target, by: -1)
    }

    private func adjustBacklink(_ property: PropertyInfo, source: Int64, target: Int64, by delta: Int) throws {
        guard let txn = writer, let dbi = property.target?.backlinkDBI else { return }
        let existing = try findBacklink(property, source: source, target: target, txn)
        let count = existing.map { Int(UInt32(bigEndian: $0.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 12, as: UInt32.self) })) } ?? 0
        var key: [UInt8] = []
        KeyCodec.appendInt(target, to: &key)
        try key.withUnsafeBytes { k in
            if let existing { _ = try existing.withUnsafeBytes { try txn.delete(dbi, k, value: $0) } }
            let next = count + delta
            if next > 0 {
                _ = try backlinkEntry(property, source: source, count: UInt32(next)).withUnsafeBytes { try txn.put(dbi, k, $0) }
            }
        }
    }

    /// Every backlink entry of `target`: (link id, source key, number of links).
    func backlinks(of info: ClassInfo, key target: Int64, through property: PropertyInfo? = nil) throws -> [(id: UInt32, source: Int64, count: Int)] {
        guard let dbi = info.backlinkDBI else { return [] }
        let txn = try readTransaction()
        var key: [UInt8] = []
        KeyCodec.appendInt(target, to: &key)
        let probe = property.map { backlinkEntry($0, source: Int64.min, count: 0) }
        return try key.withUnsafeBytes { k in
            try txn.withCursor(dbi) { cursor in
                var out: [(UInt32, Int64, Int)] = []
                var entry: (key: Bytes, value: Bytes)?
                if let probe {
                    entry = try probe.withUnsafeBytes { try cursor.seek(key: k, value: $0, op: MDB_GET_BOTH_RANGE) }
                } else {
                    entry = try cursor.move(MDB_SET_KEY, key: k)
                }
                while let e = entry, e.value.count == Lattice.entrySize {
                    let id = UInt32(bigEndian: e.value.loadUnaligned(as: UInt32.self))
                    if let property, id != property.linkID { break }
                    let source = KeyCodec.int(UnsafeRawBufferPointer(rebasing: e.value[4..<12]))
                    let count = Int(UInt32(bigEndian: e.value.loadUnaligned(fromByteOffset: 12, as: UInt32.self)))
                    try checkBacklink(info, key: target, id: id, source: source, count: count)
                    out.append((id, source, count))
                    entry = try cursor.move(MDB_NEXT_DUP)
                }
                return out
            }
        }
    }

    /// Removes every link to an object being deleted: to-one links become nil, list and set entries go,
    /// map values become nil. Costs O(k log n) for k incoming links, plus the length of lists holding it.
    func unlinkIncoming(_ info: ClassInfo, key: Int64) throws {
        guard let dbi = info.backlinkDBI, let txn = writer else { return }
        for entry in try backlinks(of: info, key: key) {
            guard let owner = info.incomingOwners[entry.id],
                  let property = info.incoming.first(where: { $0.linkID == entry.id }) else { continue }
            switch property.property.collection {
            case nil:
                guard let record = try fetchRecord(owner, key: entry.source) else { continue }
                let updated = record.withBytes { replacing(RecordView($0), in: owner, with: [property.column: []]) }
                try store(owner, key: entry.source, record: updated, old: record, txn)
            case .list?:
                try ListStore(lattice: self, property: property, owner: entry.source).removeAll(linkingTo: key)
            case .set?:
                try SetStore(lattice: self, property: property, owner: entry.source).removeLink(to: key)
            case .map?:
                try MapStore(lattice: self, property: property, owner: entry.source).clearLinks(to: key)
            }
        }
        var k: [UInt8] = []
        KeyCodec.appendInt(key, to: &k)
        _ = try k.withUnsafeBytes { try txn.delete(dbi, $0) }
        didChange()
    }
}
