extension Lattice {
    /// The key of a String payload in the case-folded index: the folded UTF-8 bytes, with the same nil
    /// tag and truncation as ``indexKey(_:payload:)`` (so lookups verify candidates the same way), hashed
    /// like it in an encrypted file.
    func foldedIndexKey(_ property: PropertyInfo, payload bytes: UnsafeRawBufferPointer) -> [UInt8] {
        hashed(Lattice.plainFoldedIndexKey(property, payload: bytes), in: property.foldedIndexTable)
    }

    /// The folded key before an encrypted file hashes it.
    static func plainFoldedIndexKey(_ property: PropertyInfo, payload bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var key: [UInt8] = []
        if property.property.isOptional {
            if bytes.isEmpty {
                key.append(0)
            } else {
                key.append(1)
                key += CaseFolding.foldedBytes(UnsafeRawBufferPointer(rebasing: bytes.dropFirst()))
            }
        } else {
            key += CaseFolding.foldedBytes(bytes)
        }
        if key.isEmpty { key.append(0) }
        if key.count > FileLayout.maxIndexKey { key.removeLast(key.count - FileLayout.maxIndexKey) }
        return key
    }
}
