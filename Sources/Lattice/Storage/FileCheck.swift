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
    // `md_pad` (u32) at 40, the free database's root page at 80 (all ones when empty), the last page
    // number at 136 and the transaction id at 144.
    private static let metaFlag: UInt16 = 0x08
    private static let magic: UInt32 = 0xBEEF_C0DE
    private static let dataVersion: UInt32 = 1
    private static let metaBytes = 152

    private struct Meta {
        let pageSize: Int
        let lastPage: Int
        let txnID: UInt64
        /// The root page of LMDB's free list; nil when the list is empty.
        let freeRoot: Int?
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
    ///
    /// Other processes may commit while this reads (a meta page, then the other, then the size): two
    /// commits between the reads make the pages look inconsistent, and a commit that grows the file
    /// after its size was read makes it look short. So a failed reading counts only when the file (its
    /// size and both meta pages) stayed exactly the same from the end of the failed reading before to
    /// the end of this one, which it spans; otherwise it is read again a millisecond later. A file that
    /// changed across twenty readings in a row is being committed to by other processes' LMDB, which
    /// reads it: it is taken as sound. A sound file that nobody changes is read once.
    static func checkSize(fd: Int32, path: String) throws {
        var previous: [UInt8]?
        for _ in 0..<20 {
            do {
                return try checkOnce(fd: fd, path: path)
            } catch {
                let after = fingerprint(fd: fd)
                if after == previous { throw error }
                previous = after
                usleep(1_000)
            }
        }
    }

    /// The file's size and the first bytes of its two meta pages: what `checkOnce` reads.
    private static func fingerprint(fd: Int32) -> [UInt8] {
        var info = stat()
        _ = fstat(fd, &info)
        var first = [UInt8](repeating: 0, count: metaBytes)
        _ = first.withUnsafeMutableBytes { pread(fd, $0.baseAddress, metaBytes, 0) }
        let pageSize = Int(first.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: 40, as: UInt32.self)) })
        var second = [UInt8](repeating: 0, count: metaBytes)
        if pageSize >= 512 && pageSize <= 65536 {
            _ = second.withUnsafeMutableBytes { pread(fd, $0.baseAddress, metaBytes, off_t(pageSize)) }
        }
        return withUnsafeBytes(of: Int64(info.st_size), Array.init) + first + second
    }

    /// One reading of `checkSize`.
    private static func checkOnce(fd: Int32, path: String) throws {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return }
        let size = Int(info.st_size)
        let notDatabase = LatticeError.invalidFile(path: path, reason: "it has no LMDB header.")
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
        // Pages past the end that the free list holds were freed by the transaction that allocated them
        // and never written: the file is whole (see `FreePages`).
        if size < expected, !FreePages.cover(firstMissing: size / newer.pageSize, lastPage: newer.lastPage, root: newer.freeRoot,
                                             pageSize: newer.pageSize, fileSize: size, fd: fd) {
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
            (flags: UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 10, as: UInt16.self)),
             magic: UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 16, as: UInt32.self)),
             version: UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 20, as: UInt32.self)))
        }
        if read < metaBytes {
            // The first page's header is readable: an LMDB file cut short inside its meta pages.
            guard offset == 0 ? header.magic == magic : true else { return nil }
            throw LatticeError.invalidFile(path: path, reason: "the file is truncated: it is \(size) bytes long, "
                + "shorter than its two meta pages.")
        }
        guard header.flags & metaFlag != 0, header.magic == magic, header.version == dataVersion else { return nil }
        return page.withUnsafeBytes { bytes -> Meta? in
            let pageSize = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 40, as: UInt32.self)))
            let lastPage = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 136, as: UInt64.self))
            guard pageSize >= 512, pageSize <= 65536, pageSize & (pageSize - 1) == 0, lastPage >= 1, lastPage < UInt64(Int.max) / 65536 else {
                return nil
            }
            let freeRoot = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 80, as: UInt64.self))
            return Meta(pageSize: pageSize, lastPage: Int(lastPage),
                        txnID: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 144, as: UInt64.self)),
                        freeRoot: freeRoot < lastPage + 1 ? Int(freeRoot) : nil)
        }
    }

    /// The file format version stored under the format key `key` (a 4-byte little-endian number, sealed
    /// in the formats that seal values), read before `Seals` knows the format (unless another handle of
    /// the process opened the file already); turns sealing on or off. `sealed` tells the formats that seal
    /// their values (a newer, unknown format is returned for the caller to refuse). `encrypted` is the format
    /// of encrypted files: it is always checksummed, and turns nothing on (the caller checks the key and
    /// turns encryption on).
    static func storedFormat(_ value: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer, sealed: (UInt32) -> Bool,
                             packed: (UInt32) -> Bool, encrypted: UInt32, _ env: Environment) throws -> UInt32 {
        let damaged = LatticeError.corruptFile(path: env.path, reason: "its format version ('\(String(decoding: key, as: UTF8.self))') is damaged.")
        func number(_ bytes: UnsafeRawBufferPointer) -> UInt32 { UInt32(littleEndian: bytes.loadUnaligned(as: UInt32.self)) }
        // Decided by the length alone: a transaction that began after another handle of the process turned
        // sealing on has verified and stripped the value already.
        switch value.count {
        case 4:
            let format = number(value)
            if env.seals.isEnabled { return format }
            guard !sealed(format), format != encrypted else { throw damaged }  // a sealed format always seals it
            env.seals.enable(false, packed: false)
            return format
        case 4 + Checksum.size:
            guard let opened = Checksum.open(key: key, sealed: value) else { throw damaged }
            let format = number(opened)
            if format != encrypted { env.seals.enable(sealed(format), packed: packed(format)) }
            return format
        default:
            throw damaged
        }
    }

    /// Checks `key` against the key check of an encrypted file (`value`, as a transaction read it: with
    /// its checksum before encryption is on, without after) and turns encryption on when no other handle
    /// of the process has. Throws `wrongEncryptionKey` for another key.
    static func unlock(keyCheck value: UnsafeRawBufferPointer, entryKey: UnsafeRawBufferPointer, key: Data, _ env: Environment) throws {
        let damaged = LatticeError.corruptFile(path: env.path, reason: "its key check ('\(String(decoding: entryKey, as: UTF8.self))') is damaged.")
        var record = value
        if FileCipher.salt(ofKeyCheck: record) == nil {
            guard let opened = Checksum.open(key: entryKey, sealed: value) else { throw damaged }
            record = opened
        }
        guard let salt = FileCipher.salt(ofKeyCheck: record) else { throw damaged }
        let candidate = FileCipher(key: key, salt: salt)
        guard candidate.opens(keyCheck: record) else { throw LatticeError.wrongEncryptionKey(path: env.path) }
        if env.seals.cipher == nil { env.seals.enable(candidate) }
    }

    // MARK: Failed opens

    /// Whether a file (or anything else) exists at `path`.
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// Removes the lock file a failed open created, unless some process uses it: every LMDB process holds
    /// a shared `fcntl` lock on its first byte while it uses the environment, and every Lattice process a
    /// shared `flock` from before it opens the file (`FileMaintenance.enter`).
    static func removeStrayLock(_ lockPath: String) {
        let fd = open(lockPath, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }  // also releases the probe locks below
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return }
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
            return .invalidFile(path: path, reason: "LMDB does not recognize it.")
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
            return "the file is damaged (LMDB found a page it cannot use). `Lattice.verify()` lists the damage; "
                + "restore the file from a backup."
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

/// How a table is packed (file format 6): not, into runs (`Runs`), or into blocks (`Blocks`).
enum Packing: UInt8 {
    case none = 0
    case runs = 1
    case blocks = 2
}

/// What the layer above Storage says about its tables: which hold checksummed values in a sealed file,
/// and how a key is named in a message.
protocol SealPolicy: Sendable {
    /// Whether values of table `name` carry a checksum in a sealed file (are encrypted in an encrypted one).
    func seals(_ name: String) -> Bool
    /// In an encrypted file, the keys of table `name` whose values stay checksummed, not encrypted (what
    /// a reader needs before it has the key).
    func plainKeys(in name: String) -> [[UInt8]]
    /// Whether the keys of table `name` hold values (index keys, set elements, map keys), which an
    /// encrypted file stores as keyed hashes.
    func hashesKeys(_ name: String) -> Bool
    /// Whether table `name` is packed into runs (see `Runs`) in a file of a packed format.
    func packs(_ name: String) -> Bool
    /// Whether sorted-duplicates table `name` is packed into blocks (see `Blocks`) in a file of a packed
    /// format (LMDB's flags for the table say whether it is: see `Environment.openTables`).
    func packsDuplicates(_ name: String) -> Bool
    /// A key of table `name` as messages name it.
    func describe(key: UnsafeRawBufferPointer, in name: String) -> String
}

/// Which tables of an environment hold checksummed values (see `Checksum`), for `Transaction` to seal
/// every value it writes there and verify every value it reads. Every table `Environment.openTables`
/// opens is registered; the policy (`EnvironmentOptions.sealPolicy`) says which of them seal.
///
/// A sealed file (format 2) has a checksum at the end of every value of those tables; a file of format 1
/// has none, and none are written to it (older Lattice versions still read it).
final class Seals: Sendable {
    private struct State {
        /// By table id: whether its values are sealed. Empty for an unsealed file.
        var sealed: [Bool] = []
        /// By table id: how it is packed (`Packing` raw values). Empty for a file of an unpacked format.
        var packed: [UInt8] = []
        /// Ids of sorted-duplicates tables whose duplicates are not of a fixed size (LMDB's flags).
        var variableDuplicates: Set<UInt32> = []
        /// Whether the file's format packs tables.
        var packing = false
        /// By table id, in an encrypted file: the sealed tables' ciphers. Empty otherwise.
        var ciphers: [TableCipher?] = []
        /// By table id, in an encrypted file: the keyed hashes of tables whose keys hold values.
        var hashers: [UInt32: KeyHasher] = [:]
        var names: [UInt32: String] = [:]
        var enabled = false
        /// The keys of an encrypted file; nil for a plaintext one.
        var cipher: FileCipher?

        mutating func mark(_ id: UInt32, _ on: Bool) {
            let i = Int(id)
            if sealed.count <= i { sealed.append(contentsOf: repeatElement(false, count: i + 1 - sealed.count)) }
            sealed[i] = on
        }

        mutating func markPacked(_ id: UInt32, _ name: String, _ policy: (any SealPolicy)?) {
            guard packing, let policy else { return }
            let i = Int(id)
            if packed.count <= i { packed.append(contentsOf: repeatElement(0, count: i + 1 - packed.count)) }
            let kind: Packing = policy.packs(name) ? .runs
                : policy.packsDuplicates(name) && variableDuplicates.contains(id) ? .blocks : .none
            packed[i] = kind.rawValue
        }

        mutating func encrypt(_ id: UInt32, _ name: String, _ policy: (any SealPolicy)?) {
            guard let cipher, let policy else { return }
            let i = Int(id)
            if ciphers.count <= i { ciphers.append(contentsOf: repeatElement(nil, count: i + 1 - ciphers.count)) }
            ciphers[i] = policy.seals(name) ? cipher.sealing(name, plainKeys: policy.plainKeys(in: name)) : nil
            if policy.hashesKeys(name) { hashers[id] = cipher.hashing(name) }
        }
    }
    private let state = Mutex(State())
    private let policy: (any SealPolicy)?

    init(policy: (any SealPolicy)?) {
        self.policy = policy
    }

    private func seals(_ name: String) -> Bool { policy?.seals(name) ?? false }

    /// Turns sealing on (formats 2, 4 and 6) or off (formats 1 and 3) for the whole file, unencrypted,
    /// with its tables packed (format 6) or not.
    func enable(_ on: Bool, packed: Bool) {
        state.withLock { state in
            reset(&state, enabled: on, cipher: nil)
            state.packing = on && packed
            for (id, name) in state.names {
                if on { state.mark(id, seals(name)) }
                state.markPacked(id, name, policy)
            }
        }
    }

    /// Turns encryption on for the whole file: sealed tables' values are encrypted, value-holding keys
    /// hashed. The first handle of the process to open an encrypted file does this (later ones find it
    /// on and only check their key).
    func enable(_ cipher: FileCipher) {
        state.withLock { state in
            reset(&state, enabled: true, cipher: cipher)
            for (id, name) in state.names {
                state.mark(id, seals(name))
                state.encrypt(id, name, policy)
            }
        }
    }

    /// The whole file's sealing set anew: every table's mark and cipher forgotten.
    private func reset(_ state: inout State, enabled: Bool, cipher: FileCipher?) {
        state.enabled = enabled
        state.cipher = cipher
        state.sealed = []
        state.ciphers = []
        state.hashers = [:]
        state.packed = []
        state.packing = false
    }

    /// Records opened tables; `variableDuplicates`: the sorted-duplicates ones without fixed-size duplicates.
    func register(_ tables: [String: Table], variableDuplicates: Set<UInt32>) {
        state.withLock { state in
            state.variableDuplicates.formUnion(variableDuplicates)
            for (name, table) in tables {
                state.names[table.id] = name
                if state.enabled { state.mark(table.id, seals(name)) }
                state.encrypt(table.id, name, policy)
                state.markPacked(table.id, name, policy)
            }
        }
    }

    /// Whether the file seals its values (format 2, or encrypted).
    var isEnabled: Bool { state.withLock { $0.enabled } }

    /// The keys of the file when it is encrypted (and a handle has opened it with its key).
    var cipher: FileCipher? { state.withLock { $0.cipher } }

    /// Whether the file seals its values, which table ids are sealed now, their ciphers when the file is
    /// encrypted, and which are packed (a transaction takes it when it begins).
    var current: (enabled: Bool, sealed: [Bool], ciphers: [TableCipher?], packed: [UInt8]) {
        state.withLock { ($0.enabled, $0.sealed, $0.ciphers, $0.packed) }
    }

    /// Whether the file's format packs tables (see `Runs`).
    var isPacking: Bool { state.withLock { $0.packing } }

    /// Whether a sorted-duplicates table `name` created now gets duplicates of any size (a packed index).
    func createsBlocks(_ name: String) -> Bool {
        state.withLock { $0.packing } && policy?.packsDuplicates(name) == true
    }

    /// The keyed hash of `table`'s keys in an encrypted file; nil when its keys are stored as they are.
    func hasher(_ table: Table) -> KeyHasher? {
        state.withLock { $0.cipher == nil ? nil : $0.hashers[table.id] }
    }

    /// The name of an opened table.
    func name(of table: Table) -> String { state.withLock { $0.names[table.id] } ?? "table \(table.id)" }

    /// A key of `table` as messages name it.
    func describe(key: UnsafeRawBufferPointer, in table: Table) -> String {
        let name = name(of: table)
        return policy?.describe(key: key, in: name) ?? "key " + key.prefix(16).map { String(format: "%02x", $0) }.joined()
    }

    /// The error for a value that fails its checksum.
    func damage(_ table: Table, key: UnsafeRawBufferPointer, path: String) -> LatticeError {
        .corruptFile(path: path, reason: "the value under \(describe(key: key, in: table)) in '\(name(of: table))' fails its checksum.")
    }

    /// The error for an encrypted value that fails authentication.
    func forged(_ table: Table, key: UnsafeRawBufferPointer, path: String) -> LatticeError {
        .authenticationFailed(path: path, reason: "the encrypted value under \(describe(key: key, in: table)) in '\(name(of: table))' "
            + "fails authentication: it was changed, or moved from another key or table, after it was written.")
    }
}
