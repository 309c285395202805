/// The backlink table `b:<Target>` (sorted, fixed-size duplicates). Key: `[8-byte target key][u32 BE link id]`;
/// one 12-byte value per link: `[8-byte source key][u32 BE ordinal]`, where the k links of one property of
/// one source object to the target carry ordinals 0 ..< k (an object can appear several times in a list).
///
/// So the number of links to an object through one property is LMDB's duplicate count of one key: one
/// seek, whatever the number of links. Listing them is one seek plus one step per link.
struct BacklinkTable {
    let table: Table

    /// The links of one property of one source object to the target.
    struct Entry {
        /// The link property (`FileLayout.linkID`).
        let linkID: UInt32
        let source: Int64
        let count: Int
    }

    static let keySize = 12
    static let valueSize = 12

    static func key(_ target: Int64, _ linkID: UInt32) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(keySize)
        KeyCodec.appendInt(target, to: &key)
        withUnsafeBytes(of: linkID.bigEndian) { key.append(contentsOf: $0) }
        return key
    }

    static func value(_ source: Int64, _ ordinal: UInt32) -> [UInt8] {
        var value: [UInt8] = []
        value.reserveCapacity(valueSize)
        KeyCodec.appendInt(source, to: &value)
        withUnsafeBytes(of: ordinal.bigEndian) { value.append(contentsOf: $0) }
        return value
    }

    /// (target, link id) of a key; nil when it has another size.
    static func decodeKey(_ key: Bytes) -> (target: Int64, linkID: UInt32)? {
        guard key.count == keySize else { return nil }
        return (KeyCodec.int(key), UInt32(bigEndian: key.loadUnaligned(fromByteOffset: 8, as: UInt32.self)))
    }

    /// (source, ordinal) of a value; nil when it has another size.
    static func decodeValue(_ value: Bytes) -> (source: Int64, ordinal: UInt32)? {
        guard value.count == valueSize else { return nil }
        return (KeyCodec.int(value), UInt32(bigEndian: value.loadUnaligned(fromByteOffset: 8, as: UInt32.self)))
    }

    /// The number of links to `target` through `linkID`: LMDB's duplicate count, O(log n).
    func count(_ txn: Transaction, target: Int64, linkID: UInt32) throws -> Int {
        try KeyCodec.withObjectKey(target, suffix: linkID) { k in
            try txn.withCursor(table) { cursor in
                try cursor.seek(exactly: k) == nil ? 0 : try cursor.duplicateCount()
            }
        }
    }

    /// The sources of the links through `linkID` to each of `targets` (best ascending: the cursor then
    /// seeks forward, often within the page it is on), target after target, each in source order (a
    /// source linking k times appears k times).
    func sources(_ txn: Transaction, targets: [Int64], linkID: UInt32) throws -> [Int64] {
        try txn.withCursor(table) { cursor in
            var out: [Int64] = []
            for target in targets {
                try KeyCodec.withObjectKey(target, suffix: linkID) { k in
                    var entry = try cursor.seek(exactly: k)
                    guard entry != nil else { return }
                    // A page of links at a time where the table allows (the values are packed, 12 bytes each).
                    let paged = try cursor.forEachDuplicatePage(size: BacklinkTable.valueSize) { page in
                        for offset in stride(from: 0, to: page.count, by: BacklinkTable.valueSize) {
                            out.append(KeyCodec.int(Bytes(rebasing: page[offset..<offset + 8])))
                        }
                    }
                    if paged { return }
                    while let e = entry, let value = BacklinkTable.decodeValue(e.value) {
                        out.append(value.source)
                        entry = try cursor.nextDuplicate()
                    }
                }
            }
            return out
        }
    }

    /// The first (or last) source of the links to `target` through `linkID`, with its number of links:
    /// one seek and a step per link of that source, whatever the number of links.
    func endEntry(_ txn: Transaction, target: Int64, linkID: UInt32, first: Bool) throws -> Entry? {
        try KeyCodec.withObjectKey(target, suffix: linkID) { k in
            try txn.withCursor(table) { cursor in
                guard let found = try cursor.seek(exactly: k),
                      let end = try first ? found : cursor.lastDuplicate(),
                      let source = BacklinkTable.decodeValue(end.value)?.source else { return nil }
                // The source's ordinals are consecutive duplicates.
                var count = 1
                while let e = try first ? cursor.nextDuplicate() : cursor.previousDuplicate(),
                      BacklinkTable.decodeValue(e.value)?.source == source {
                    count += 1
                }
                return Entry(linkID: linkID, source: source, count: count)
            }
        }
    }

    /// The links to `target` (only those of `linkID` when given), one entry per property and source, in
    /// (link id, source) order.
    func entries(_ txn: Transaction, target: Int64, linkID: UInt32? = nil) throws -> [Entry] {
        try KeyCodec.withObjectKey(target) { prefix in
            try txn.withCursor(table) { cursor in
                var out: [Entry] = []
                var entry = try (linkID.map { BacklinkTable.key(target, $0) } ?? Array(prefix)).withUnsafeBytes {
                    try linkID == nil ? cursor.seek(atLeast: $0) : cursor.seek(exactly: $0)
                }
                while let e = entry, e.key.starts(with: prefix), let key = BacklinkTable.decodeKey(e.key),
                      let value = BacklinkTable.decodeValue(e.value) {
                    if let linkID, key.linkID != linkID { break }
                    if let last = out.last, last.linkID == key.linkID, last.source == value.source {
                        out[out.count - 1] = Entry(linkID: key.linkID, source: value.source, count: last.count + 1)
                    } else {
                        out.append(Entry(linkID: key.linkID, source: value.source, count: 1))
                    }
                    entry = try cursor.next()
                }
                return out
            }
        }
    }

    /// Changes the number of links of `linkID` from `source` to `target` by `delta`: adds the ordinals
    /// after the last one, or removes the last ones.
    func adjust(_ txn: Transaction, linkID: UInt32, source: Int64, target: Int64, by delta: Int) throws {
        guard delta != 0 else { return }
        // Keys and values are built on the stack (`[object key][u32]`, as `key` and `value` make them).
        try KeyCodec.withObjectKey(target, suffix: linkID) { k in
            // One more link from a source with none (the common case): ordinal 0 is absent, and adding it
            // is one put, where counting first would search the duplicates once more.
            if delta == 1, try KeyCodec.withObjectKey(source, suffix: 0, { try txn.put(table, k, $0, mode: .newDuplicate) }) {
                return
            }
            // The number of links this source has now: its values are consecutive, from ordinal 0.
            let current = try KeyCodec.withObjectKey(source, suffix: 0) { first in
                try txn.withCursor(table) { cursor -> Int in
                    var n = 0
                    var entry = try cursor.seek(key: k, atLeastValue: first)
                    while let e = entry, let value = BacklinkTable.decodeValue(e.value), value.source == source {
                        n += 1
                        entry = try cursor.nextDuplicate()
                    }
                    return n
                }
            }
            let next = max(0, current + delta)
            for ordinal in next..<max(next, current) {
                _ = try KeyCodec.withObjectKey(source, suffix: UInt32(ordinal)) { try txn.delete(table, k, value: $0) }
            }
            for ordinal in current..<max(current, next) {
                try KeyCodec.withObjectKey(source, suffix: UInt32(ordinal)) { _ = try txn.put(table, k, $0) }
            }
        }
    }

    /// Removes every entry of `target`.
    func removeAll(_ txn: Transaction, target: Int64) throws {
        let keys = try KeyCodec.withObjectKey(target) { prefix in
            try txn.withCursor(table) { cursor in
                var keys: [[UInt8]] = []
                var entry = try cursor.seek(atLeast: prefix)
                while let e = entry, e.key.starts(with: prefix) {
                    keys.append(Array(e.key))
                    entry = try cursor.nextKey()
                }
                return keys
            }
        }
        for key in keys { _ = try key.withUnsafeBytes { try txn.delete(table, $0) } }
    }

    func removeAll(_ txn: Transaction) throws { try txn.drop(table) }

    /// Removes every link of the properties `linkIDs`, to any target: one step a key of the table.
    func removeAll(_ txn: Transaction, linkIDs: Set<UInt32>) throws {
        let keys = try txn.withCursor(table) { cursor in
            var keys: [[UInt8]] = []
            var entry = try cursor.first()
            while let e = entry {
                if let key = BacklinkTable.decodeKey(e.key), linkIDs.contains(key.linkID) { keys.append(Array(e.key)) }
                entry = try cursor.nextKey()
            }
            return keys
        }
        for key in keys { _ = try key.withUnsafeBytes { try txn.delete(table, $0) } }
    }
}

extension BacklinkTable {
    /// Rewrites a table of formats 1 and 2 in this layout. There a key was the target alone and each
    /// value `[u32 BE link id][8-byte source key][u32 BE count]`. Entries of another shape, or counting
    /// implausibly many links, are damage and are dropped: backlinks hold nothing the links do not
    /// (`Lattice.verify()` then reports the links they missed).
    func upgradeFromTargetKeys(_ txn: Transaction) throws {
        let old = try txn.withCursor(table) { cursor in
            var out: [(key: [UInt8], value: [UInt8])] = []
            var entry = try cursor.first()
            while let e = entry {
                out.append((Array(e.key), Array(e.value)))
                entry = try cursor.next()
            }
            return out
        }
        try txn.drop(table)
        // The old order (target, link id, source) is the new order of keys and values: every put appends.
        for entry in old where entry.key.count == 8 && entry.value.count == 16 {
            let key = entry.key + entry.value[0..<4]
            let count = entry.value.withUnsafeBytes { UInt32(bigEndian: $0.loadUnaligned(fromByteOffset: 12, as: UInt32.self)) }
            guard count <= 1 << 24 else { continue }
            let source = entry.value[4..<12]
            for ordinal in 0..<count {
                var value = Array(source)
                withUnsafeBytes(of: ordinal.bigEndian) { value.append(contentsOf: $0) }
                try key.withUnsafeBytes { k in try value.withUnsafeBytes { try txn.putDuplicate(table, k, $0, last: true) } }
            }
        }
    }
}
