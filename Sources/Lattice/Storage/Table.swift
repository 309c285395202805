/// A named database inside the file (an LMDB database handle). Above `Storage`, code names tables with
/// this type and never sees LMDB's own types.
struct Table: Hashable, Sendable {
    let id: UInt32
}

/// How `Transaction.put` treats an existing key.
enum PutMode: Sendable {
    /// Replace the value (sorted-duplicates tables: add a duplicate).
    case upsert
    /// Write only when the key is absent; `put` returns false otherwise.
    case insertNew
    /// The key sorts after every key in the table: no search, full pages when keys ascend. Refused
    /// (`put` returns false) when it does not sort last.
    case append
    /// The value sorts after every duplicate of its key. Refused (false) when it does not.
    case appendDuplicate
    /// Sorted-duplicates tables: adds the value unless the key already has it (`put` returns false then):
    /// one search where a lookup and then a put would take two.
    case newDuplicate
}
