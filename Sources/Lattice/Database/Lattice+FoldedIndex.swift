extension Lattice {
    /// Keeps the case-folded indexes of `info` in step with a record write (`after`) or delete (nil),
    /// in the same transaction (called by `store()`; `appended`: the object key is above every stored one).
    func maintainFoldedIndexes(_ info: ClassInfo, objectKey: UnsafeRawBufferPointer, before: RecordView?, after: RecordView?,
                               appended: Bool, _ txn: Transaction) throws {
        for p in info.indexed {
            guard let folded = p.foldedIndexTable else { continue }
            let was = before?.payload(p.column), now = after?.payload(p.column)
            if samePayload(was, now) { continue }
            if let was { _ = try foldedIndexKey(p, payload: was).withUnsafeBytes { try txn.delete(folded, $0, value: objectKey) } }
            if let now { try foldedIndexKey(p, payload: now).withUnsafeBytes { try txn.putDuplicate(folded, $0, objectKey, last: appended) } }
        }
    }

    /// The key of a String payload in the case-folded index: the folded UTF-8 bytes, with the same nil
    /// tag and truncation as ``indexKey(_:payload:)`` (so lookups verify candidates the same way).
    func foldedIndexKey(_ property: PropertyInfo, payload bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var key: [UInt8] = []
        if property.property.isOptional {
            if bytes.isEmpty {
                key.append(0)
            } else {
                key.append(1)
                key += CaseFolding.foldedBytes(String(decoding: bytes.dropFirst(), as: UTF8.self))
            }
        } else {
            key += CaseFolding.foldedBytes(String(decoding: bytes, as: UTF8.self))
        }
        if key.isEmpty { key.append(0) }
        if key.count > FileLayout.maxIndexKey { key.removeLast(key.count - FileLayout.maxIndexKey) }
        return key
    }
}
