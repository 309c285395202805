/// Reads of collection tables in the handle's current view, shared by the collection types, the write
/// path and the query engine.
extension Lattice {
    /// A List directory as the handle saw it: valid while the handle's generation is unchanged.
    struct ListDirectoryCache {
        let table: Table
        let owner: Int64
        let generation: UInt64
        let directory: ListTable.Directory
    }

    /// A List's directory, decoded once per change of the handle's view: a loop reading or appending
    /// entries does not decode it (O(n/256)) on every step.
    func listDirectory(_ property: PropertyInfo, owner: Int64) throws -> ListTable.Directory {
        let table = property.collectionTable!
        if let directory = listDirectoryAtHand(property, owner: owner) { return directory }
        let directory = try ListTable(table: table, owner: owner).directory(readTransaction())
        cacheListDirectory(property, owner: owner, directory)
        return directory
    }

    /// The number of entries of a List: from the directory when it is at hand, otherwise counted from its
    /// stored bytes without decoding them (a count per owner in a loop over many allocates nothing).
    func listCount(_ property: PropertyInfo, owner: Int64) throws -> Int {
        let table = property.collectionTable!
        if let directory = listDirectoryAtHand(property, owner: owner) { return directory.total }
        return try ListTable(table: table, owner: owner).total(readTransaction())
    }

    /// The directory of `property`'s list of `owner` when it is known without a read: the one appends
    /// left unstored, or the cached one of the current view.
    func listDirectoryAtHand(_ property: PropertyInfo, owner: Int64) -> ListTable.Directory? {
        let table = property.collectionTable!
        if let unstored = writer?.unstoredList, unstored.table == table, unstored.owner == owner { return unstored.directory }
        if let cached = listDirectoryCache, cached.generation == generation, cached.table == table, cached.owner == owner {
            return cached.directory
        }
        return nil
    }

    /// `listDirectory`, taken out of the cache: a write changing it then changes the only copy (no copy
    /// of its arrays on the first change), and caches it again (`cacheListDirectory`).
    ///
    /// The directory appends left unstored (`WriteContext.unstoredList`) is taken too when it is this
    /// list's, with `unstored` true: the caller stores it or leaves it unstored again. Another list's is
    /// stored first, so that at most one is ever unstored.
    func takeListDirectory(_ property: PropertyInfo, owner: Int64) throws -> (directory: ListTable.Directory, unstored: Bool) {
        if let write = writer, let unstored = write.unstoredList {
            if unstored.table == property.collectionTable!, unstored.owner == owner {
                write.unstoredList = nil
                listDirectoryCache = nil
                return (unstored.directory, true)
            }
            try write.storeListDirectory()
        }
        let directory = try listDirectory(property, owner: owner)
        listDirectoryCache = nil
        return (directory, false)
    }

    func cacheListDirectory(_ property: PropertyInfo, owner: Int64, _ directory: ListTable.Directory) {
        if frozenLock != nil { return }  // a frozen handle's reads run on several threads: no shared cache
        listDirectoryCache = ListDirectoryCache(table: property.collectionTable!, owner: owner, generation: generation, directory: directory)
    }

    /// Every payload of a List, in order.
    func listPayloads(_ property: PropertyInfo, owner: Int64) throws -> [[UInt8]] {
        try ListTable(table: property.collectionTable!, owner: owner).allPayloads(readTransaction(), in: listDirectory(property, owner: owner))
    }

    /// The object key a link payload names, or nil for an empty (nil) payload.
    func linkedKey(_ payload: UnsafeRawBufferPointer) -> Int64? {
        payload.isEmpty ? nil : Int64._latticeDecode(payload)
    }
}

