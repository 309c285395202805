import CLMDB
import Foundation

/// One slot of LMDB's reader table (shared by every process that has the file open).
struct ReaderSlot: Equatable, Sendable {
    /// The process that owns the slot.
    let pid: Int32
    /// The commit the slot's snapshot reads, or nil when the slot is kept by a reset (idle) transaction.
    let snapshot: Int?
}

extension Environment {
    /// The reader slots in use, across all processes (`mdb_reader_list`).
    func readerSlots() throws -> [ReaderSlot] {
        try Environment.readerSlots(of: handle, path: path)
    }

    /// The reader slots in use of the LMDB environment `handle` (also one opened outside the registry).
    static func readerSlots(of handle: OpaquePointer, path: String) throws -> [ReaderSlot] {
        var lines: [String] = []
        let rc = withUnsafeMutablePointer(to: &lines) { pointer in
            mdb_reader_list(handle, { message, context in
                guard let message, let context else { return 0 }
                context.assumingMemoryBound(to: [String].self).pointee.append(String(cString: message))
                return 0
            }, pointer)
        }
        try check(rc, path: path)
        // Each line is "%10d %zx %s": pid, thread, snapshot txnid or "-". The header and
        // "(no active readers)" do not start with a number and are skipped.
        return lines.joined().split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count == 3, let pid = Int32(fields[0]) else { return nil }
            return ReaderSlot(pid: pid, snapshot: Int(fields[2]))
        }
    }

    /// Frees the reader slots of processes that died without releasing them (`mdb_reader_check`);
    /// returns how many were freed. A stale slot otherwise keeps its snapshot's pages from being reused.
    func clearStaleReaders() throws -> Int {
        var dead: Int32 = 0
        try check(mdb_reader_check(handle, &dead))
        return Int(dead)
    }

    /// `clearStaleReaders()` at most every 100 ms, for writes: a long-running process would otherwise
    /// keep the slots of processes killed while it runs (their snapshots keep every later version's pages
    /// from being reused, so the file grows with each commit) until some process opened the file anew.
    func clearStaleReadersIfDue() {
        let now = DispatchTime.now().uptimeNanoseconds
        let due = readerCheck.withLock { last -> Bool in
            guard last == 0 || now &- last >= 100_000_000 else { return false }
            last = now
            return true
        }
        if due { _ = try? clearStaleReaders() }
    }
}
