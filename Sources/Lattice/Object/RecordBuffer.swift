/// A copy of one object's record, owned by the object that cached it.
///
/// Records are copied out of the memory map so that no pointer into it outlives an LMDB call
/// (the map may be re-mapped when it grows); one allocation holds header and bytes. The header keeps
/// the record's parsed layout, so reading a property loads two offsets without parsing the record again.
final class RecordBuffer: ManagedBuffer<RecordBuffer.Header, UInt8> {
    /// The byte count and the layout parsed once when the copy is made.
    struct Header {
        let count: Int
        let layout: RecordLayout
    }

    static func make(_ bytes: UnsafeRawBufferPointer) -> RecordBuffer {
        let header = Header(count: bytes.count, layout: RecordLayout(bytes) ?? .unreadable)
        let buffer = unsafeDowncast(RecordBuffer.create(minimumCapacity: bytes.count) { _ in header }, to: RecordBuffer.self)
        buffer.withUnsafeMutablePointerToElements { $0.update(from: bytes.bindMemory(to: UInt8.self).baseAddress!, count: bytes.count) }
        return buffer
    }

    static func make(_ bytes: [UInt8]) -> RecordBuffer {
        bytes.withUnsafeBytes { make($0) }
    }

    @inline(__always)
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeMutablePointers { header, elements in
            try body(UnsafeRawBufferPointer(start: elements, count: header.pointee.count))
        }
    }

    /// The payload of property `i` (nil when the record predates it or cannot be read), from the cached layout.
    @inline(__always)
    func withPayload<R>(_ i: Int, _ body: (UnsafeRawBufferPointer?) throws -> R) rethrows -> R {
        try withUnsafeMutablePointers { header, elements in
            try body(header.pointee.layout.payload(i, in: UnsafeRawBufferPointer(start: elements, count: header.pointee.count)))
        }
    }

    /// The record's creation stamp (0: none). Through the header pointer: the `header` property would
    /// take a dynamic exclusivity check on every materialized object.
    var stamp: UInt64 { withUnsafeMutablePointerToHeader { $0.pointee.layout.stamp } }
}
