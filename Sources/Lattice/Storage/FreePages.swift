import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// LMDB's free list, read from the file with `pread` (never through the map), to tell a file that is
/// legitimately shorter than its last page from a truncated one.
///
/// A write transaction can allocate pages past the end of the file and free them again before it
/// commits (copies of pages that a later step of the same transaction merged away). LMDB records them
/// in its free list and never writes them, so the file can end before the last page its meta page
/// names. Such a file is whole: no live page lies past its end. This reads the free database's B-tree
/// (LMDB 0.9's page and node layout, 64-bit) and answers whether every page past the end is free.
enum FreePages {
    // Page header: page number (u64) at 0, flags (u16) at 10, `lower` (u16) at 12; for an overflow page
    // the page count (u32) at 12. Node: size or child page low bits (u16, u16) at 0, flags (u16) at 4,
    // key size (u16) at 6, key then data at 8.
    private static let headerSize = 16
    private static let branch: UInt16 = 0x01, leaf: UInt16 = 0x02, leaf2: UInt16 = 0x20
    private static let bigData: UInt16 = 0x01
    /// Bounds the walk of a damaged free list (cycles, absurd depths).
    private static let maxPagesRead = 1 << 20

    /// Whether every page from `firstMissing` through `lastPage` is in the free list whose root is
    /// `root` (nil: the free list is empty). False when the free list cannot be read whole from the
    /// file (it lies past the end, or is damaged): the caller then treats the file as truncated.
    static func cover(firstMissing: Int, lastPage: Int, root: Int?, pageSize: Int, fileSize: Int, fd: Int32) -> Bool {
        guard firstMissing <= lastPage else { return true }
        // A free list never holds millions of pages past the end: that file was cut short.
        guard let root, lastPage - firstMissing < 1 << 20 else { return false }
        var missing = Set(firstMissing...lastPage)
        var pending = [root]
        var pagesRead = 0
        var page = [UInt8](repeating: 0, count: pageSize)
        func load(_ number: Int, into buffer: inout [UInt8]) -> Bool {
            pagesRead += 1
            guard pagesRead <= maxPagesRead, number >= 2, (number + 1) * pageSize <= fileSize else { return false }
            return buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, pageSize, off_t(number * pageSize)) } == pageSize
        }
        while let number = pending.popLast() {
            guard load(number, into: &page) else { return false }
            let ok = page.withUnsafeBytes { bytes -> Bool in
                let flags = bytes.loadUnaligned(fromByteOffset: 10, as: UInt16.self)
                let lower = Int(bytes.loadUnaligned(fromByteOffset: 12, as: UInt16.self))
                guard flags & leaf2 == 0, lower >= headerSize, lower <= pageSize else { return false }
                for slot in 0..<(lower - headerSize) / 2 {
                    let node = Int(bytes.loadUnaligned(fromByteOffset: headerSize + 2 * slot, as: UInt16.self))
                    guard node >= lower, node + 8 <= pageSize else { return false }
                    let low = Int(bytes.loadUnaligned(fromByteOffset: node, as: UInt16.self))
                    let high = Int(bytes.loadUnaligned(fromByteOffset: node + 2, as: UInt16.self))
                    let nodeFlags = bytes.loadUnaligned(fromByteOffset: node + 4, as: UInt16.self)
                    let keySize = Int(bytes.loadUnaligned(fromByteOffset: node + 6, as: UInt16.self))
                    if flags & branch != 0 {
                        pending.append(low | high << 16 | Int(nodeFlags) << 32)
                        continue
                    }
                    guard flags & leaf != 0 else { return false }
                    let data = node + 8 + keySize
                    if nodeFlags & bigData != 0 {
                        // The page list is on overflow pages: read them whole.
                        guard data + 8 <= pageSize else { return false }
                        let first = Int(bytes.loadUnaligned(fromByteOffset: data, as: UInt64.self))
                        guard removeListed(inOverflowAt: first, from: &missing, pageSize: pageSize, load: load) else { return false }
                    } else {
                        let size = low | high << 16
                        guard data + size <= pageSize else { return false }
                        remove(UnsafeRawBufferPointer(rebasing: bytes[data..<(data + size)]), from: &missing)
                    }
                }
                return true
            }
            guard ok else { return false }
        }
        return missing.isEmpty
    }

    /// Removes the pages a free-list entry names (a count, then that many page numbers, all u64) from
    /// `missing`.
    private static func remove(_ list: UnsafeRawBufferPointer, from missing: inout Set<Int>) {
        guard list.count >= 8 else { return }
        let count = min(Int(list.loadUnaligned(as: UInt64.self)), list.count / 8 - 1)
        for i in 0..<max(count, 0) { missing.remove(Int(list.loadUnaligned(fromByteOffset: 8 * (i + 1), as: UInt64.self))) }
    }

    private static func removeListed(inOverflowAt first: Int, from missing: inout Set<Int>, pageSize: Int,
                                     load: (Int, inout [UInt8]) -> Bool) -> Bool {
        var head = [UInt8](repeating: 0, count: pageSize)
        guard load(first, &head) else { return false }
        let pages = Int(head.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 12, as: UInt32.self) })
        guard pages >= 1, pages <= maxPagesRead else { return false }
        var all = head
        var next = [UInt8](repeating: 0, count: pageSize)
        for i in 1..<max(pages, 1) {
            guard load(first + i, &next) else { return false }
            all += next
        }
        all.withUnsafeBytes { remove(UnsafeRawBufferPointer(rebasing: $0[headerSize...]), from: &missing) }
        return true
    }
}
