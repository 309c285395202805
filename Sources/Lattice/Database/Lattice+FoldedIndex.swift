extension Lattice {
    /// Keeps the case-folded indexes of `info` in step with a record write (`record`) or delete (nil),
    /// in the same transaction (called by `store()`).
    func maintainFoldedIndexes(_ info: ClassInfo, objectKey: UnsafeRawBufferPointer, record: [UInt8]?, old: RecordBuffer?,
                               _ txn: Transaction) throws {
        for p in info.indexed {
            guard let folded = p.foldedIndexDBI else { continue }
            let before = old?.withBytes { RecordView($0)?.payload(p.column).map(Array.init) } ?? nil
            let after = record?.withUnsafeBytes { RecordView($0)?.payload(p.column).map(Array.init) } ?? nil
            if before == after { continue }
            if let before { _ = try foldedIndexKey(p, payload: before).withUnsafeBytes { try txn.delete(folded, $0, value: objectKey) } }
            if let after { try foldedIndexKey(p, payload: after).withUnsafeBytes { _ = try txn.put(folded, $0, objectKey) } }
        }
    }

    /// The key of a String payload in the case-folded index: the folded UTF-8 bytes, with the same nil
    /// tag and truncation as ``indexKey(_:payload:)`` (so lookups verify candidates the same way).
    func foldedIndexKey(_ property: PropertyInfo, payload: [UInt8]) -> [UInt8] {
        var key: [UInt8] = []
        payload.withUnsafeBytes { bytes in
            if property.property.isOptional {
                if bytes.isEmpty { key.append(0); return }
                key.append(1)
                key += CaseFolding.foldedBytes(String(decoding: bytes.dropFirst(), as: UTF8.self))
            } else {
                key += CaseFolding.foldedBytes(String(decoding: bytes, as: UTF8.self))
            }
        }
        if key.isEmpty { key.append(0) }
        if key.count > FileLayout.maxIndexKey { key.removeLast(key.count - FileLayout.maxIndexKey) }
        return key
    }
}
