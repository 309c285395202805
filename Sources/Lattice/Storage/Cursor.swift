import CLMDB

/// A cursor over one table, valid inside `Transaction.withCursor`. Keys and values it returns are
/// lent by the map: valid until the cursor moves on or its snapshot ends.
struct Cursor {
    let handle: OpaquePointer?
    let env: Environment
    let residentPages: ResidentPages?

    typealias Entry = (key: Bytes, value: Bytes)

    @inline(__always)
    private mutating func move(_ op: MDB_cursor_op, key: Bytes? = nil) throws -> Entry? {
        var k = key.map(mdbVal) ?? MDB_val()
        var v = MDB_val()
        let rc = mdb_cursor_get(handle, &k, &v, op)
        if rc == MDB_NOTFOUND { return nil }
        try env.check(rc)
        residentPages?.note(k, v)
        return (bytes(k), bytes(v))
    }

    /// The first entry of the table.
    mutating func first() throws -> Entry? { try move(MDB_FIRST) }
    /// The last entry of the table.
    mutating func last() throws -> Entry? { try move(MDB_LAST) }
    /// The next entry (the next duplicate first, in sorted-duplicates tables).
    @inline(__always)
    mutating func next() throws -> Entry? { try move(MDB_NEXT) }
    /// The entry before the current one.
    mutating func previous() throws -> Entry? { try move(MDB_PREV) }
    /// The entry at the cursor.
    mutating func current() throws -> Entry? { try move(MDB_GET_CURRENT) }
    /// The next duplicate of the current key, or nil after its last.
    mutating func nextDuplicate() throws -> Entry? { try move(MDB_NEXT_DUP) }
    /// The first entry of the next key (skipping the current key's other duplicates).
    mutating func nextKey() throws -> Entry? { try move(MDB_NEXT_NODUP) }
    /// The first entry whose key is `key`, or nil.
    mutating func seek(exactly key: Bytes) throws -> Entry? { try move(MDB_SET_KEY, key: key) }
    /// The first entry whose key is at least `key`, or nil.
    mutating func seek(atLeast key: Bytes) throws -> Entry? { try move(MDB_SET_RANGE, key: key) }

    /// In a sorted-duplicates table: the first duplicate of `key` that is at least `value`, or nil.
    mutating func seek(key: Bytes, atLeastValue value: Bytes) throws -> Entry? {
        var k = mdbVal(key)
        var v = mdbVal(value)
        let rc = mdb_cursor_get(handle, &k, &v, MDB_GET_BOTH_RANGE)
        if rc == MDB_NOTFOUND { return nil }
        try env.check(rc)
        residentPages?.note(k, v)
        return (bytes(k), bytes(v))
    }

    /// Number of duplicates at the current key.
    func duplicateCount() throws -> Int {
        var n: Int = 0
        try env.check(mdb_cursor_count(handle, &n))
        return n
    }
}
