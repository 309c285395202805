/// Record bytes copied out of the memory map: one record, or every record of one batch read.
///
/// Records are copied so that no pointer into the map outlives an LMDB call (the map may be re-mapped
/// when it grows). A batch shares one allocation: a scan makes one allocation per batch instead of one
/// per object. Elements never move, so pointers into them stay valid while the storage lives.
final class RecordStorage: ManagedBuffer<Int, UInt8> {
    /// Room for `count` bytes.
    private static func allocate(_ count: Int) -> RecordStorage {
        unsafeDowncast(RecordStorage.create(minimumCapacity: count) { _ in count }, to: RecordStorage.self)
    }

    /// The bytes of a storage made by `copy(_:)` for one record.
    var bytes: UnsafeRawBufferPointer {
        withUnsafeMutablePointers { count, elements in UnsafeRawBufferPointer(start: elements, count: count.pointee) }
    }

    /// A copy of one record.
    static func copy(_ record: UnsafeRawBufferPointer) -> RecordStorage {
        let storage = allocate(record.count)
        if let source = record.baseAddress {
            storage.withUnsafeMutablePointerToElements { UnsafeMutableRawPointer($0).copyMemory(from: source, byteCount: record.count) }
        }
        return storage
    }

    /// Copies `records` (`total` bytes in all) back to back into one storage; `each` learns where
    /// each copy is, in order (nil for a nil record).
    static func copy(_ records: [(key: Int64, bytes: UnsafeRawBufferPointer?)], total: Int,
                     _ each: (Int64, UnsafeRawBufferPointer?) -> Void) -> RecordStorage {
        let storage = allocate(total)
        storage.withUnsafeMutablePointerToElements { elements in
            var at = UnsafeMutableRawPointer(elements)
            for (key, record) in records {
                guard let record else {
                    each(key, nil)
                    continue
                }
                if let source = record.baseAddress { at.copyMemory(from: source, byteCount: record.count) }
                each(key, UnsafeRawBufferPointer(start: at, count: record.count))
                at += record.count
            }
        }
        return storage
    }
}

/// Where one record lies in its storage, and its layout parsed once, so reading a property loads two
/// offsets without parsing the record again. Trivial: copying one costs no reference counting.
@usableFromInline
struct RecordSlice {
    @usableFromInline let base: UnsafeRawPointer
    /// The record's byte count.
    let count: Int
    @usableFromInline let layout: RecordLayout

    /// `bytes` must have an address (`RecordStorage.copy` gives one to every copy, even an empty one).
    init(_ bytes: UnsafeRawBufferPointer) {
        base = bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!  // never read: an empty record has no payloads
        count = bytes.count
        layout = RecordLayout(bytes) ?? .unreadable
    }

    /// The payload of property `i` (nil when the record predates it or cannot be read).
    @inlinable
    func payload(_ i: Int) -> UnsafeRawBufferPointer? { layout.payload(i, at: base) }
}

/// A copy of one object's record: where it is, and the storage keeping it alive.
struct RecordBuffer {
    let storage: RecordStorage
    let slice: RecordSlice

    init(storage: RecordStorage, slice: RecordSlice) {
        self.storage = storage
        self.slice = slice
    }

    /// A copy of one record in its own storage.
    static func make(_ bytes: UnsafeRawBufferPointer) -> RecordBuffer {
        let storage = RecordStorage.copy(bytes)
        return RecordBuffer(storage: storage, slice: RecordSlice(storage.bytes))
    }

    static func make(_ bytes: [UInt8]) -> RecordBuffer {
        bytes.withUnsafeBytes { make($0) }
    }

    @inline(__always)
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withExtendedLifetime(storage) { try body(UnsafeRawBufferPointer(start: slice.base, count: slice.count)) }
    }

    /// The payload of property `i` (nil when the record predates it or cannot be read), from the parsed layout.
    @inline(__always)
    func withPayload<R>(_ i: Int, _ body: (UnsafeRawBufferPointer?) throws -> R) rethrows -> R {
        try withExtendedLifetime(storage) { try body(slice.payload(i)) }
    }

    /// The record's creation stamp (0: none).
    var stamp: UInt64 { slice.layout.stamp }
}
