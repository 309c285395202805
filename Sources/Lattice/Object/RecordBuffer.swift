/// A copy of one object's record, owned by the object that cached it.
///
/// Records are copied out of the memory map so that no pointer into it outlives an LMDB call
/// (the map may be re-mapped when it grows); one allocation holds header and bytes.
final class RecordBuffer: ManagedBuffer<Int, UInt8> {
    static func make(_ bytes: UnsafeRawBufferPointer) -> RecordBuffer {
        let buffer = unsafeDowncast(RecordBuffer.create(minimumCapacity: bytes.count) { _ in bytes.count }, to: RecordBuffer.self)
        buffer.withUnsafeMutablePointerToElements { $0.update(from: bytes.bindMemory(to: UInt8.self).baseAddress!, count: bytes.count) }
        return buffer
    }

    static func make(_ bytes: [UInt8]) -> RecordBuffer {
        bytes.withUnsafeBytes { make($0) }
    }

    @inline(__always)
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeMutablePointers { count, elements in
            try body(UnsafeRawBufferPointer(start: elements, count: count.pointee))
        }
    }

    /// The record's creation stamp (0: none).
    var stamp: UInt64 { withBytes { RecordView($0)?.stamp ?? 0 } }
}
