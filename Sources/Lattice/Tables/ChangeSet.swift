/// What one write transaction changed, as keys only (values come from the snapshots before and after).
///
/// The write path appends one entry per change as it happens (appending keeps the cost off the hot
/// paths; consumers group and de-duplicate). Tables are named as in `FileLayout`: a class by its name,
/// a collection property by `Class.property`.
struct ChangeSet {
    enum ObjectChangeKind: UInt8 { case inserted, modified, deleted }

    /// One object inserted, modified (with the columns changed) or deleted.
    struct ObjectChange {
        let className: String
        let key: Int64
        let kind: ObjectChangeKind
        /// Bit i set: column i changed (columns from 63 on share bit 63). Zero unless modified.
        let columns: UInt64
    }

    enum CollectionOperation: Equatable {
        /// List entries inserted at these positions (after the operation).
        case insert(Range<Int>)
        /// List entries removed from these positions (before the operation).
        case remove(Range<Int>)
        /// List entry replaced in place.
        case set(Int)
        /// Every entry removed.
        case clear
        /// A set element or map key added, removed or changed (element key or UTF-8 map key).
        case key([UInt8])
    }

    /// One change to the collection property `property` ("Class.property") of the object `owner`.
    struct CollectionChange {
        let property: String
        let owner: Int64
        let operation: CollectionOperation
    }

    private(set) var objects: [ObjectChange] = []
    private(set) var collections: [CollectionChange] = []

    var isEmpty: Bool { objects.isEmpty && collections.isEmpty }

    static func columnBit(_ column: Int) -> UInt64 { 1 << UInt64(min(column, 63)) }

    mutating func record(_ className: String, key: Int64, _ kind: ObjectChangeKind, columns: UInt64 = 0) {
        objects.append(ObjectChange(className: className, key: key, kind: kind, columns: columns))
    }

    mutating func record(_ property: String, owner: Int64, _ operation: CollectionOperation) {
        collections.append(CollectionChange(property: property, owner: owner, operation: operation))
    }
}
