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

    /// The entries of a MutableSet or Map as the handle saw them: valid while the handle's generation is
    /// unchanged, or outside a write while the handle reads commit `commit` (0: not known), which is
    /// how a count kept up to date by the handle's own write outlives its commit. `entries` is nil
    /// when only the count is known.
    struct KeyedEntriesCache {
        let table: Table
        let owner: Int64
        var generation: UInt64
        var commit: Int
        var count: Int
        var entries: [(key: [UInt8], value: [UInt8])]?

        func isCurrent(_ table: Table, _ owner: Int64, at generation: UInt64) -> Bool {
            self.generation == generation && self.table == table && self.owner == owner
        }
    }

    /// The keyed cache when it describes `table`'s entries of `owner` in the handle's current view (the
    /// snapshot is opened first, so that the commit it reads is known).
    private func currentKeyedCache(_ table: Table, _ owner: Int64) throws -> KeyedEntriesCache? {
        guard let cached = keyedEntriesCache, cached.table == table, cached.owner == owner else { return nil }
        if cached.generation == generation { return cached }
        guard writer == nil, cached.commit != 0 else { return nil }
        _ = try readTransaction()
        return cached.commit == viewCommit ? cached : nil
    }

    /// The commit the handle's view reads when it is not in a write (what a cache read now describes).
    private var readCommit: Int { writer == nil ? viewCommit : 0 }

    /// After the handle's own commit: a keyed cache kept up to date by the write describes the commit.
    func keyedCacheCommitted(_ commit: Int) {
        guard var cached = keyedEntriesCache, cached.generation == generation else { return }
        cached.commit = commit
        keyedEntriesCache = cached
    }

    /// As a write begins on commit `base`: a keyed cache of that commit is current in the write (whose
    /// changes then keep it up to date, see `keyedCountChanged`).
    func keyedCacheStartsWrite(on base: Int) {
        guard var cached = keyedEntriesCache, cached.commit != 0, cached.commit == base else { return }
        cached.generation = generation
        keyedEntriesCache = cached
    }

    /// Every (plain key, payload) of a MutableSet or Map in key order, read once per change of the
    /// handle's view: reading a set or map by position (`set[i]`, each time through a new instance of the
    /// owner's property) does not read it again on every step.
    func keyedEntries(_ property: PropertyInfo, owner: Int64) throws -> [(key: [UInt8], value: [UInt8])] {
        let table = property.collectionTable!
        return try synchronized {
            if let cached = try currentKeyedCache(table, owner), let entries = cached.entries { return entries }
            let entries = try KeyedEntry.entries(readTransaction(), table, owner: owner)
            keyedEntriesCache = KeyedEntriesCache(table: table, owner: owner, generation: generation, commit: readCommit,
                                                  count: entries.count, entries: entries)
            return entries
        }
    }

    /// The number of entries of a MutableSet or Map: cached as `keyedEntries`, kept current by the write
    /// path's inserts and removals (a loop that inserts and counts does not count again on every step),
    /// otherwise counted without copying the entries.
    func keyedCount(_ property: PropertyInfo, owner: Int64) throws -> Int {
        let table = property.collectionTable!
        return try synchronized {
            if let cached = try currentKeyedCache(table, owner) { return cached.count }
            let count = try OwnerKey.count(readTransaction(), table, owner: owner)
            keyedEntriesCache = KeyedEntriesCache(table: table, owner: owner, generation: generation, commit: readCommit,
                                                  count: count, entries: nil)
            return count
        }
    }

    /// Whether a MutableSet or Map has no entries: from the cached count when it is current, otherwise one
    /// seek (a question about one entry reads one).
    func keyedIsEmpty(_ property: PropertyInfo, owner: Int64) throws -> Bool {
        let table = property.collectionTable!
        return try synchronized {
            if let cached = try currentKeyedCache(table, owner) { return cached.count == 0 }
            return try OwnerKey.isEmpty(readTransaction(), table, owner: owner)
        }
    }

    /// After the write path changed the number of entries of a MutableSet or Map by `delta`, from the view
    /// of generation `before`: a count cached for that view is the count now.
    func keyedCountChanged(_ property: PropertyInfo, owner: Int64, by delta: Int, since before: UInt64) {
        guard var cached = keyedEntriesCache, cached.isCurrent(property.collectionTable!, owner, at: before) else { return }
        cached.count += delta
        cached.entries = nil
        cached.generation = generation
        cached.commit = 0  // the write's state, no commit's until it commits (see `keyedCacheCommitted`)
        keyedEntriesCache = cached
    }

    /// Every payload of a List, in order.
    func listPayloads(_ property: PropertyInfo, owner: Int64) throws -> [[UInt8]] {
        try ListTable(table: property.collectionTable!, owner: owner).allPayloads(readTransaction(), in: listDirectory(property, owner: owner))
    }

    /// Passes every payload of a List, in order, to `body`, nothing copied; `reserve` gets the count
    /// first. Without a directory at hand, the stored one is read in place, not decoded.
    func forEachListPayload(_ property: PropertyInfo, owner: Int64, reserve: (Int) -> Void = { _ in },
                            _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        try ListTable(table: property.collectionTable!, owner: owner)
            .forEachPayload(readTransaction(), in: listDirectoryAtHand(property, owner: owner), reserve: reserve, body)
    }

    /// The positions of a List's entries whose payload passes `test`, in order, found in place.
    func listPositions(_ property: PropertyInfo, owner: Int64, where test: (UnsafeRawBufferPointer) -> Bool) throws -> [Int] {
        var positions: [Int] = []
        var index = 0
        try forEachListPayload(property, owner: owner) { payload in
            if test(payload) { positions.append(index) }
            index += 1
        }
        return positions
    }

    /// The object key a link payload names, or nil for an empty (nil) payload.
    func linkedKey(_ payload: UnsafeRawBufferPointer) -> Int64? {
        payload.isEmpty ? nil : Int64._latticeDecode(payload)
    }
}

