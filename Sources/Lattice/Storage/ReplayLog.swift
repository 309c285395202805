import CLMDB
#if canImport(Glibc)
import Glibc
#endif

/// The replay log: entries `[u8 op][u32 dbi][u32 flags][u32 key count][u32 value count][key][value]`
/// (native byte order, unaligned) copied into a buffer that grows by doubling (appending to a
/// `[UInt8]` would check uniqueness and capacity per piece and zero-fill first).
final class ReplayLog {
    private var base: UnsafeMutableRawPointer?
    private var count = 0
    private var capacity = 0
    private static let headerSize = 17

    deinit { free(base) }

    /// Bytes logged so far.
    var byteCount: Int { count }

    /// Forgets every entry and frees the buffer.
    func reset() {
        free(base)
        base = nil
        count = 0
        capacity = 0
    }

    /// Makes room for one more entry; false when out of memory.
    @inline(__always)
    func reserve(keyCount: Int, valueCount: Int) -> Bool {
        let needed = count + ReplayLog.headerSize + keyCount + valueCount
        return needed <= capacity || grow(needed)
    }

    /// `realloc`: a large buffer is re-mapped by the kernel rather than copied.
    private func grow(_ needed: Int) -> Bool {
        let newCapacity = max(capacity * 2, needed, 4096)
        guard let grown = realloc(base, newCapacity) else { return false }
        base = grown
        capacity = newCapacity
        return true
    }

    /// Appends one entry, in room `reserve` made.
    @inline(__always)
    func append(_ op: UInt8, _ dbi: UInt32, _ flags: UInt32, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) {
        let size = ReplayLog.headerSize + key.count + value.count
        precondition(count + size <= capacity, "replay log entry without reserved room")
        let at = base.unsafelyUnwrapped + count
        at.storeBytes(of: op, as: UInt8.self)
        at.storeBytes(of: dbi, toByteOffset: 1, as: UInt32.self)
        at.storeBytes(of: flags, toByteOffset: 5, as: UInt32.self)
        at.storeBytes(of: UInt32(truncatingIfNeeded: key.count), toByteOffset: 9, as: UInt32.self)
        at.storeBytes(of: UInt32(truncatingIfNeeded: value.count), toByteOffset: 13, as: UInt32.self)
        if let k = key.baseAddress, !key.isEmpty { (at + ReplayLog.headerSize).copyMemory(from: k, byteCount: key.count) }
        if let v = value.baseAddress, !value.isEmpty {
            (at + ReplayLog.headerSize + key.count).copyMemory(from: v, byteCount: value.count)
        }
        count += size
    }

    /// Passes every entry in order to `body` (`op`, `dbi`, `flags`, key, value), stopping at the first
    /// non-zero result, which it returns.
    func forEach(_ body: (UInt8, MDB_dbi, UInt32, inout MDB_val, inout MDB_val) throws -> Int32) rethrows -> Int32 {
        guard let base else { return 0 }
        var at = 0
        while at < count {
            let entry = base + at
            let keyCount = Int(entry.loadUnaligned(fromByteOffset: 9, as: UInt32.self))
            let valueCount = Int(entry.loadUnaligned(fromByteOffset: 13, as: UInt32.self))
            var k = MDB_val(mv_size: keyCount, mv_data: entry + ReplayLog.headerSize)
            var v = MDB_val(mv_size: valueCount, mv_data: entry + ReplayLog.headerSize + keyCount)
            let rc = try body(entry.load(as: UInt8.self), MDB_dbi(entry.loadUnaligned(fromByteOffset: 1, as: UInt32.self)),
                          entry.loadUnaligned(fromByteOffset: 5, as: UInt32.self), &k, &v)
            if rc != 0 { return rc }
            at += ReplayLog.headerSize + keyCount + valueCount
        }
        return 0
    }
}
