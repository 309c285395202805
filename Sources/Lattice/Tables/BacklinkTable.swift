/// The backlink table `b:<Target>` (sorted, fixed-size duplicates): key = target object key; each value
/// `[u32 link id][8-byte source key][u32 count]` says that `count` links of that property of that source
/// object point at the target. Listing or counting the sources through one property is one seek plus one
/// step per entry, whatever the size of the file.
struct BacklinkTable {
    let table: Table

    /// One backlink entry.
    struct Entry {
        /// The link property (`FileLayout.linkID`).
        let linkID: UInt32
        let source: Int64
        let count: Int
    }

    static let entrySize = 16

    private static func encode(_ linkID: UInt32, source: Int64, count: UInt32) -> [UInt8] {
        var entry: [UInt8] = []
        entry.reserveCapacity(entrySize)
        withUnsafeBytes(of: linkID.bigEndian) { entry.append(contentsOf: $0) }
        KeyCodec.appendInt(source, to: &entry)
        withUnsafeBytes(of: count.bigEndian) { entry.append(contentsOf: $0) }
        return entry
    }

    private static func decode(_ value: Bytes) -> Entry? {
        guard value.count == entrySize else { return nil }
        return Entry(linkID: UInt32(bigEndian: value.loadUnaligned(as: UInt32.self)),
                     source: KeyCodec.int(Bytes(rebasing: value[4..<12])),
                     count: Int(UInt32(bigEndian: value.loadUnaligned(fromByteOffset: 12, as: UInt32.self))))
    }

    /// The entries of `target` (only those of `linkID` when given), in (link id, source) order.
    func entries(_ txn: Transaction, target: Int64, linkID: UInt32? = nil) throws -> [Entry] {
        try KeyCodec.withObjectKey(target) { k in
            try txn.withCursor(table) { cursor in
                var out: [Entry] = []
                var entry: Cursor.Entry?
                if let linkID {
                    entry = try BacklinkTable.encode(linkID, source: Int64.min, count: 0).withUnsafeBytes {
                        try cursor.seek(key: k, atLeastValue: $0)
                    }
                } else {
                    entry = try cursor.seek(exactly: k)
                }
                while let e = entry, let decoded = BacklinkTable.decode(e.value) {
                    if let linkID, decoded.linkID != linkID { break }
                    out.append(decoded)
                    entry = try cursor.nextDuplicate()
                }
                return out
            }
        }
    }

    /// Changes the number of links of `linkID` from `source` to `target` by `delta`.
    func adjust(_ txn: Transaction, linkID: UInt32, source: Int64, target: Int64, by delta: Int) throws {
        let probe = BacklinkTable.encode(linkID, source: source, count: 0)
        try KeyCodec.withObjectKey(target) { k in
            let existing = try probe.withUnsafeBytes { v in
                try txn.withCursor(table) { cursor -> [UInt8]? in
                    guard let found = try cursor.seek(key: k, atLeastValue: v),
                          found.value.prefix(12).elementsEqual(probe.prefix(12)) else { return nil }
                    return Array(found.value)
                }
            }
            let count = existing.flatMap { $0.withUnsafeBytes(BacklinkTable.decode)?.count } ?? 0
            if let existing { _ = try existing.withUnsafeBytes { try txn.delete(table, k, value: $0) } }
            let next = count + delta
            if next > 0 {
                _ = try BacklinkTable.encode(linkID, source: source, count: UInt32(next)).withUnsafeBytes { try txn.put(table, k, $0) }
            }
        }
    }

    /// Removes every entry of `target`.
    func removeAll(_ txn: Transaction, target: Int64) throws {
        _ = try KeyCodec.withObjectKey(target) { try txn.delete(table, $0) }
    }

    func removeAll(_ txn: Transaction) throws { try txn.drop(table) }
}
