import CLMDB
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Checks of a data file that LMDB does not make, and the messages of failed opens.
///
/// LMDB maps the file and trusts it: a file shorter than its last page (copied or written out only in
/// part) makes the first touch of a missing page stop the process with SIGBUS. Before LMDB opens a
/// file (and again when another process has grown it), its two meta pages are read with `pread` and
/// the file must hold every page up to the last one the newer meta page names.
enum FileCheck {
    // LMDB 0.9's meta page (lmdb.h/mdb.c, 64-bit): a 16-byte page header (flags at byte 10) followed by
    // MDB_meta: magic (u32) at 16, data version (u32) at 20, the page size in the free database's
    // `md_pad` (u32) at 40, the last page number at 136 and the transaction id at 144.
    private static let metaFlag: UInt16 = 0x08
    private static let magic: UInt32 = 0xBEEF_C0DE
    private static let dataVersion: UInt32 = 1
    private static let metaBytes = 152

    private struct Meta {
        let pageSize: Int
        let lastPage: Int
        let txnID: UInt64
    }

    /// Before LMDB opens `path`: refuses a directory, an empty file opened read-only (nothing to read and
    /// no right to create), a file that is not an LMDB data file, and a truncated one. A missing or
    /// unreadable file is left to LMDB, whose error `openFailure` explains.
    static func checkBeforeOpen(path: String, readOnly: Bool) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return }
        if info.st_mode & S_IFMT == S_IFDIR {
            throw LatticeError.invalidFile(path: path, reason: "it is a directory; give the path of a database file.")
        }
        if info.st_size == 0 {
            guard readOnly else { return }  // a read-write open makes a new database in it
            throw LatticeError.invalidFile(path: path, reason: "the file is empty: it holds no database, and a read-only "
                + "handle cannot create one (open it read-write once, or check the path).")
        }
        try checkSize(fd: fd, path: path)
    }

    /// Throws `invalidFile` when the file at `fd` is not an LMDB data file or is shorter than its last
    /// page; `corruptFile` when its two meta pages contradict each other.
    static func checkSize(fd: Int32, path: String) throws {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return }
        let size = Int(info.st_size)
        let notDatabase = LatticeError.invalidFile(path: path, reason: "it is not a Lattice database (it has no LMDB header).")
        guard let first = try readMeta(fd: fd, at: 0, size: size, path: path) else { throw notDatabase }
        guard let second = try readMeta(fd: fd, at: first.pageSize, size: size, path: path) else {
            throw LatticeError.corruptFile(path: path, reason: "its second meta page is damaged.")
        }
        // LMDB writes the meta page of transaction t into page t % 2: the pages hold consecutive ids of
        // those parities (both 0 in a file no transaction has committed to yet).
        let ids = (first.txnID, second.txnID)
        guard ids == (0, 0) || (ids.0 % 2 == 0 && ids.1 % 2 == 1 && max(ids.0, ids.1) - min(ids.0, ids.1) == 1),
              second.pageSize == first.pageSize else {
            throw LatticeError.corruptFile(path: path, reason: "its two meta pages disagree (transactions \(ids.0) and \(ids.1)).")
        }
        let newer = first.txnID >= second.txnID ? first : second
        let expected = (newer.lastPage + 1) * newer.pageSize
        if size < expected {
            throw LatticeError.invalidFile(path: path, reason: "the file is truncated: it is \(size) bytes long, but its "
                + "last page ends at byte \(expected). Restore it from a backup.")
        }
    }

    /// The meta page at `offset`; nil when it is not one. Throws when the file ends inside it.
    private static func readMeta(fd: Int32, at offset: Int, size: Int, path: String) throws -> Meta? {
        var page = [UInt8](repeating: 0, count: metaBytes)
        let read = page.withUnsafeMutableBytes { pread(fd, $0.baseAddress, metaBytes, off_t(offset)) }
        guard read >= 24 || offset > 0 else { return nil }
        let header = page.withUnsafeBytes { bytes in
            (flags: loadLE(UnsafeRawBufferPointer(rebasing: bytes[10..<12]), as: UInt16.self),
             magic: loadLE(UnsafeRawBufferPointer(rebasing: bytes[16..<20]), as: UInt32.self),
             version: loadLE(UnsafeRawBufferPointer(rebasing: bytes[20..<24]), as: UInt32.self))
        }
        if read < metaBytes {
            // The first page's header is readable: an LMDB file cut short inside its meta pages.
            guard offset == 0 ? header.magic == magic : true else { return nil }
            throw LatticeError.invalidFile(path: path, reason: "the file is truncated: it is \(size) bytes long, "
                + "shorter than its two meta pages.")
        }
        guard header.flags & metaFlag != 0, header.magic == magic, header.version == dataVersion else { return nil }
        return page.withUnsafeBytes { bytes -> Meta? in
            let pageSize = Int(loadLE(UnsafeRawBufferPointer(rebasing: bytes[40..<44]), as: UInt32.self))
            let lastPage = loadLE(UnsafeRawBufferPointer(rebasing: bytes[136..<144]), as: UInt64.self)
            guard pageSize >= 512, pageSize <= 65536, pageSize & (pageSize - 1) == 0, lastPage >= 1, lastPage < UInt64(Int.max) / 65536 else {
                return nil
            }
            return Meta(pageSize: pageSize, lastPage: Int(lastPage),
                        txnID: loadLE(UnsafeRawBufferPointer(rebasing: bytes[144..<152]), as: UInt64.self))
        }
    }

    /// The file format version stored under `meta`/`format` (`key`), read before `Seals` knows the
    /// format (unless another handle of the process opened the file already); turns sealing on or off.
    static func storedFormat(_ value: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer, _ env: Environment) throws -> UInt32 {
        let damaged = LatticeError.corruptFile(path: env.path, reason: "its format version ('meta'/'format') is damaged.")
        if env.seals.isEnabled {
            guard value.count == 4 else { throw damaged }  // verified by the transaction already
            return loadLE(value, as: UInt32.self)
        }
        switch value.count {
        case 4:
            let format = loadLE(value, as: UInt32.self)
            guard format != 2 else { throw damaged }  // format 2 always seals it
            env.seals.enable(false)
            return format
        case 4 + Checksum.size:
            guard let opened = Checksum.open(key: key, sealed: value) else { throw damaged }
            let format = loadLE(opened, as: UInt32.self)
            env.seals.enable(format >= 2)
            return format
        default:
            throw damaged
        }
    }

    // MARK: Failed opens

    /// Whether a file (or anything else) exists at `path`.
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// Removes the lock file a failed open created, unless some process has it open: every LMDB process
    /// holds a shared `fcntl` lock on its first byte while it uses the environment.
    static func removeStrayLock(_ lockPath: String) {
        let fd = open(lockPath, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }  // also releases the probe lock below
        var probe = flock()
        probe.l_type = Int16(F_WRLCK)
        probe.l_whence = Int16(SEEK_SET)
        probe.l_start = 0
        probe.l_len = 1
        if fcntl(fd, F_SETLK, &probe) == 0 { unlink(lockPath) }
    }

    /// The error of a failed `mdb_env_open`, saying what happened and what to do.
    static func openFailure(_ rc: Int32, path: String, readOnly: Bool) -> LatticeError {
        switch rc {
        case MDB_INVALID, MDB_VERSION_MISMATCH:
            return .invalidFile(path: path, reason: "it is not a Lattice database (LMDB does not recognize it).")
        case ENOENT where readOnly:
            return .fileNotFound(path: path)
        case EACCES, EPERM, EROFS:
            return .permissionDenied(path: path, operation: readOnly ? "open for reading" : "open for reading and writing")
        case EISDIR:
            return .invalidFile(path: path, reason: "it is a directory; give the path of a database file.")
        default:
            return .storage(path: path, code: rc, message: Environment.message(rc))
        }
    }

    /// A clearer message than `strerror`'s for errors whose usual cause it does not say; nil otherwise.
    static func explanation(_ rc: Int32) -> String? {
        switch rc {
        case EIO:
            // LMDB reports a short write (no room left) as EIO.
            return "a write to the file failed (input/output error): the disk may be full, or failing. "
                + "Nothing of the failed transaction was committed; free some space and try again."
        case ENOSPC, EDQUOT:
            return "the disk is full (or the user's quota is used up). Nothing of the failed transaction was committed; "
                + "free some space and try again."
        case EFBIG:
            return "the file has reached the largest size this process may write (RLIMIT_FSIZE or the file system's limit)."
        case MDB_CORRUPTED, MDB_PAGE_NOTFOUND:
            return "the file is damaged (LMDB found a page it cannot use). Run `lattice check` on the file to list "
                + "the damage, and restore it from a backup."
        default:
            return nil
        }
    }
}

/// LMDB trusts the sizes in its pages: a damaged one makes it return a value that runs past its page,
/// or past the end of the file (a read there stops the process with SIGBUS). Every value a read
/// transaction returns is checked against its page first: a value inside a leaf page must end within it;
/// a value on overflow pages (it starts right after their 16-byte header) within the pages that header
/// counts.
enum ValueBounds {
    private static let pageHeader = 16

    /// The environment's page size.
    static func pageSize(_ env: Environment) -> Int {
        var stat = MDB_stat()
        mdb_env_stat(env.handle, &stat)
        return Int(stat.ms_psize)
    }

    /// Throws `corruptFile` when a key or value (read by a read transaction: `pageSize` > 0) leaves its
    /// page(s). Keys are never on overflow pages.
    @inline(__always)
    static func check(key: MDB_val, value: MDB_val, pageSize: Int, _ env: Environment) throws {
        guard pageSize > 0 else { return }
        let mask = pageSize - 1
        if Int(bitPattern: key.mv_data) & mask + key.mv_size > pageSize { throw damage(key, "key", env) }
        if Int(bitPattern: value.mv_data) & mask + value.mv_size > pageSize, !inOverflowPages(value, pageSize) {
            throw damage(value, "value", env)
        }
    }

    /// Throws `corruptFile` when `value` (read by a read transaction: `pageSize` > 0) leaves its page(s).
    @inline(__always)
    static func check(_ value: MDB_val, pageSize: Int, _ env: Environment) throws {
        guard pageSize > 0 else { return }
        if Int(bitPattern: value.mv_data) & (pageSize - 1) + value.mv_size > pageSize, !inOverflowPages(value, pageSize) {
            throw damage(value, "value", env)
        }
    }

    /// Whether a value longer than the rest of its page lies on overflow pages: it then starts right
    /// after their header, which counts them.
    @inline(never)
    private static func inOverflowPages(_ value: MDB_val, _ pageSize: Int) -> Bool {
        guard let data = value.mv_data, Int(bitPattern: data) & (pageSize - 1) == pageHeader else { return false }
        let pages = Int((data - pageHeader).loadUnaligned(fromByteOffset: 12, as: UInt32.self))
        return value.mv_size <= pages * pageSize - pageHeader
    }

    @inline(never)
    private static func damage(_ item: MDB_val, _ what: String, _ env: Environment) -> LatticeError {
        .corruptFile(path: env.path, reason: "a \(what) of \(item.mv_size) bytes runs past its page (a damaged page); it was not read.")
    }
}

/// Which databases of an environment hold checksummed values (see `Checksum`), for `Transaction`
/// to seal every value it writes there and verify every value it reads.
///
/// In a file of format 2 every value of `meta`, `o:`, `l:`, `s:` and `m:` databases ends with its
/// checksum; a file of format 1 has none, and none are written to it (older Lattice versions still
/// read it). Index (`i:`, `f:`) and backlink (`b:`) entries carry no checksum: they are derived from
/// the records, and `Lattice.verify()` checks them against the records.
final class Seals: Sendable {
    private struct State {
        /// By database handle: whether its values are sealed. Empty for a file of format 1.
        var sealed: [Bool] = []
        var names: [MDB_dbi: String] = [:]
        var enabled = false

        mutating func mark(_ dbi: MDB_dbi, _ on: Bool) {
            let i = Int(dbi)
            if sealed.count <= i { sealed.append(contentsOf: repeatElement(false, count: i + 1 - sealed.count)) }
            sealed[i] = on
        }
    }
    private let state = Mutex(State())

    /// Whether `name` is a database whose values a file of format 2 seals.
    static func seals(_ name: String) -> Bool {
        name == FileLayout.meta || name.hasPrefix("o:") || name.hasPrefix("l:") || name.hasPrefix("s:") || name.hasPrefix("m:")
    }

    /// Turns sealing on (format 2) or off (format 1) for the whole file.
    func enable(_ on: Bool) {
        state.withLock { state in
            state.enabled = on
            state.sealed = []
            if on { for (dbi, name) in state.names { state.mark(dbi, Seals.seals(name)) } }
        }
    }

    /// Records the handles of opened databases.
    func register(_ dbis: [String: MDB_dbi]) {
        state.withLock { state in
            for (name, dbi) in dbis {
                state.names[dbi] = name
                if state.enabled { state.mark(dbi, Seals.seals(name)) }
            }
        }
    }

    /// Whether the file seals its values (format 2).
    var isEnabled: Bool { state.withLock { $0.enabled } }

    /// Which handles are sealed now (a transaction takes it when it begins).
    var current: [Bool] { state.withLock { $0.sealed } }

    /// The name of an opened database.
    func name(of dbi: MDB_dbi) -> String { state.withLock { $0.names[dbi] } ?? "database \(dbi)" }

    /// The error for a value that fails its checksum.
    func damage(_ dbi: MDB_dbi, key: UnsafeRawBufferPointer, path: String) -> LatticeError {
        let name = name(of: dbi)
        return .corruptFile(path: path, reason: "the value under \(Seals.describe(key: key, in: name)) in '\(name)' fails its checksum.")
    }

    /// A key as the message of a damaged value names it.
    static func describe(key: UnsafeRawBufferPointer, in name: String) -> String {
        if name.hasPrefix("o:") && key.count == 8 { return "object key \(KeyCodec.int(key))" }
        if name.hasPrefix("l:") && key.count == 12 {
            let chunk = UInt32(bigEndian: key.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
            return chunk == 0 ? "the list directory of object key \(KeyCodec.int(key))"
                : "list chunk \(chunk) of object key \(KeyCodec.int(key))"
        }
        if (name.hasPrefix("s:") || name.hasPrefix("m:")) && key.count >= 8 {
            return "an entry of object key \(KeyCodec.int(UnsafeRawBufferPointer(rebasing: key[0..<8])))"
        }
        if name == FileLayout.meta { return "'\(String(decoding: key, as: UTF8.self))'" }
        return "key " + key.prefix(16).map { String(format: "%02x", $0) }.joined()
    }
}
