import CLMDB
#if canImport(Glibc)
import Glibc
#endif

/// Keeps long scans from growing the process's resident memory with the file's pages.
///
/// Every page a read walks stays mapped into the process (counted in its RSS) until the kernel needs
/// the memory back, so iterating a large file would make the process look as large as the file. A read
/// transaction notes the map addresses its cursors return; past a threshold (16 MiB by default) it tells the kernel
/// the pages it walked are not needed (`MADV_DONTNEED`). For a shared, read-only file mapping that only
/// unmaps them from this process: they stay in the page cache, and the next access maps the same bytes
/// again (a read snapshot's pages are never rewritten while it is open). Only read transactions take
/// part: a write transaction's dirty pages are heap memory, not the map.
final class ResidentPages {
    /// Bytes walked between releases.
    private let threshold: Int
    // No runtime exclusivity checks (a note comes with every entry a cursor returns): one read
    // transaction owns this object, and its cursors are used by one thread at a time.
    @exclusivity(unchecked) private var low = UInt.max
    @exclusivity(unchecked) private var high: UInt = 0
    @exclusivity(unchecked) private var walked = 0

    init(env: Environment) {
        threshold = env.options.residentScanBytes
    }

    /// Forgets the noted range (a new snapshot begins; the map may have moved while none was open).
    func restart() {
        low = .max
        high = 0
        walked = 0
    }

    /// Notes an entry a cursor returned, inside an open snapshot.
    @inline(__always)
    func note(_ key: MDB_val, _ value: MDB_val) {
        note(value.mv_data, value.mv_size &+ key.mv_size)
    }

    /// Notes `size` bytes at `data` a cursor read, inside an open snapshot.
    @inline(__always)
    func note(_ data: UnsafeRawPointer?, _ size: Int) {
        guard let data else { return }
        let start = UInt(bitPattern: data)
        low = Swift.min(low, start)
        high = Swift.max(high, start &+ UInt(size))
        walked &+= size &+ 16
        if walked >= threshold { release() }
    }

    /// Drops the noted pages from the resident set. The snapshot is open, so the map cannot move.
    private func release() {
        if low < high {
            let page = UInt(sysconf(Int32(_SC_PAGESIZE)))
            let start = low & ~(page - 1)
            // Failure only means the pages stay resident.
            _ = madvise(UnsafeMutableRawPointer(bitPattern: start), Int(high - start), MADV_DONTNEED)
        }
        restart()
    }
}
