import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The values an encrypted file's tables sealed or opened lately, kept decrypted so that reading one
/// again skips the cipher: one per file, shared by its tables and by every thread (the value-level
/// counterpart of the decrypted page caches of page-encrypting databases).
///
/// Opening is a pure function of the table's key, the entry's key and the stored bytes, so a cached
/// result is returned only when all three are exactly those it was computed from: the table (each
/// `TableCipher` has its own `tag`), the entry key and every stored byte (nonce, ciphertext and tag) are
/// compared. A changed byte on disk therefore misses and is authenticated again; what is returned is
/// always what the cipher returns for those bytes.
///
/// Entries are found by their entry key, in sets of `ways` slots (one cache line) that also hold a hash
/// of each entry's stored value (its random nonce), so that only a likely match is read; a full set
/// gives up one of its entries for a new one. The entries together hold at most `budget` bytes (32 MiB
/// by default); values over `largestValue` bytes are not kept (the cipher's fixed cost per call is what
/// this saves, and it matters for small values).
final class OpenedValues: @unchecked Sendable {
    // @unchecked Sendable is safe: `slots` is only read or written while holding the lock of the slot's
    // set's stripe (`withSet`), entries are owned by their slot (freed only after leaving it, under
    // that lock), and `bytes` is atomic.

    /// Bytes all entries of a file may hold together, by default.
    static let defaultBudget = 32 << 20
    /// Bytes of the largest stored value kept.
    static let largestValue = 2048

    private static let setCount = 1 << 16
    private static let ways = 4
    private static let stripeCount = 64

    /// A slot: the hash of its entry's stored value and table (0 when empty), and the entry.
    private struct Slot {
        var hash: UInt64
        var entry: UnsafeMutableRawPointer?
    }

    /// Layout of an entry's header (24 bytes); the entry key, the stored value and the plain value follow
    /// it. Sizes fit 32 bits: keys are LMDB keys and stored values at most `largestValue` bytes.
    private struct Header {
        var tag: UInt64
        var size: UInt32
        var keyCount: UInt32
        var storedCount: UInt32
        var plainCount: UInt32
    }

    private let slots: UnsafeMutablePointer<Slot>
    private let locks: UnsafeMutablePointer<pthread_mutex_t>
    private let bytes = Atomic<Int>(0)
    private let budget: Int

    private static let slotBytes = setCount * ways * MemoryLayout<Slot>.stride

    /// Nil when the slots' memory cannot be had (nothing is kept then).
    init?(budget: Int = OpenedValues.defaultBudget) {
        // Anonymous pages: page-aligned (a set is one cache line), zeroed, and not charged until a set is used.
        let memory = mmap(nil, Self.slotBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let memory, memory != MAP_FAILED else { return nil }
        slots = memory.bindMemory(to: Slot.self, capacity: Self.setCount * Self.ways)
        self.budget = budget
        locks = .allocate(capacity: Self.stripeCount)
        for i in 0..<Self.stripeCount { pthread_mutex_init(locks + i, nil) }
    }

    deinit {
        for i in 0..<(Self.setCount * Self.ways) { free(slots[i].entry) }
        munmap(slots, Self.slotBytes)
        for i in 0..<Self.stripeCount { pthread_mutex_destroy(locks + i) }
        locks.deallocate()
    }

    /// The hash of stored value `stored` of table `tag` (its first bytes are its random nonce); never 0.
    @inline(__always)
    private static func hash(_ tag: UInt64, _ stored: UnsafeRawBufferPointer) -> UInt64 {
        var h = tag &* 0xD6E8_FEB8_6659_FD93
        if stored.count >= 8, let base = stored.baseAddress { h ^= base.loadUnaligned(as: UInt64.self) }
        h = (h ^ (h >> 32)) &* 0x9E37_79B9_7F4A_7C15
        return h | 1
    }

    /// The set of entry key `key` of table `tag`. Consecutive keys (object keys are big-endian sequence
    /// numbers) go to consecutive sets, so a walk in key order reads the slots in order too.
    @inline(__always)
    private static func set(_ tag: UInt64, _ key: UnsafeRawBufferPointer) -> Int {
        var n = tag &* 0xD6E8_FEB8_6659_FD93
        if let base = key.baseAddress {
            if key.count >= 8 {
                n &+= UInt64(bigEndian: base.loadUnaligned(fromByteOffset: key.count - 8, as: UInt64.self))
                if key.count > 8 { n &+= (base.loadUnaligned(as: UInt64.self) &* 0x9E37_79B9_7F4A_7C15) >> 20 }
            } else {
                for i in 0..<key.count { n &+= UInt64(base.load(fromByteOffset: i, as: UInt8.self)) << (8 * UInt64(key.count - 1 - i)) }
            }
        }
        // Folding the high bits in keeps consecutive small keys consecutive and spreads keys that differ
        // only in their high bytes.
        n &+= (n >> 16) &+ (n >> 32) &+ (n >> 48)
        return Int(truncatingIfNeeded: n) & (setCount - 1)
    }

    /// Runs `body` with the first slot of set `set`, holding the set's lock.
    @inline(__always)
    private func withSet<R>(_ set: Int, _ body: (UnsafeMutablePointer<Slot>) -> R) -> R {
        let lock = locks + (set & (Self.stripeCount - 1))
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return body(slots + set * Self.ways)
    }

    /// The entry of `set` for exactly `stored` under `key` of table `tag`, or nil.
    @inline(__always)
    private static func find(_ set: UnsafeMutablePointer<Slot>, _ hash: UInt64, _ tag: UInt64, _ key: UnsafeRawBufferPointer,
                             _ stored: UnsafeRawBufferPointer) -> UnsafeMutableRawPointer? {
        for way in 0..<ways where set[way].hash == hash {
            guard let entry = set[way].entry else { continue }
            let header = entry.load(as: Header.self)
            guard header.tag == tag, Int(header.keyCount) == key.count, Int(header.storedCount) == stored.count else { continue }
            let keyStart = entry + MemoryLayout<Header>.stride
            if equal(keyStart, key) && equal(keyStart + key.count, stored) { return entry }
        }
        return nil
    }

    /// Copies the plain value of `stored` under entry key `key` of table `tag` to `plain` (room for
    /// `plainCount` bytes) and returns true when it is kept; false otherwise.
    func copy(_ tag: UInt64, key: UnsafeRawBufferPointer, stored: UnsafeRawBufferPointer,
              to plain: UnsafeMutableRawPointer, plainCount: Int) -> Bool {
        guard stored.count <= Self.largestValue else { return false }
        let hash = Self.hash(tag, stored)
        return withSet(Self.set(tag, key)) { set in
            guard let entry = Self.find(set, hash, tag, key, stored) else { return false }
            let header = entry.load(as: Header.self)
            guard Int(header.plainCount) == plainCount else { return false }
            if plainCount > 0 {
                plain.copyMemory(from: entry + MemoryLayout<Header>.stride + key.count + stored.count, byteCount: plainCount)
            }
            return true
        }
    }

    /// Whether `stored` under `key` of table `tag` is kept (so it authenticated when it was kept).
    func contains(_ tag: UInt64, key: UnsafeRawBufferPointer, stored: UnsafeRawBufferPointer) -> Bool {
        guard stored.count <= Self.largestValue else { return false }
        let hash = Self.hash(tag, stored)
        return withSet(Self.set(tag, key)) { Self.find($0, hash, tag, key, stored) != nil }
    }

    /// Keeps `plain` as the value `stored` under `key` of table `tag` opens to (the caller sealed or
    /// opened it with the table's cipher). Does nothing when it would pass the budget.
    func keep(_ tag: UInt64, key: UnsafeRawBufferPointer, stored: UnsafeRawBufferPointer, plain: UnsafeRawBufferPointer) {
        guard stored.count <= Self.largestValue, key.count <= Self.largestValue, plain.count <= stored.count else { return }
        let size = MemoryLayout<Header>.stride + key.count + stored.count + plain.count
        guard let entry = malloc(size) else { return }
        entry.storeBytes(of: Header(tag: tag, size: UInt32(size), keyCount: UInt32(key.count), storedCount: UInt32(stored.count),
                                    plainCount: UInt32(plain.count)),
                         as: Header.self)
        let keyStart = entry + MemoryLayout<Header>.stride
        Self.put(key, at: keyStart)
        Self.put(stored, at: keyStart + key.count)
        Self.put(plain, at: keyStart + key.count + stored.count)
        let hash = Self.hash(tag, stored)
        let unused: UnsafeMutableRawPointer? = withSet(Self.set(tag, key)) { set in
            if Self.find(set, hash, tag, key, stored) != nil { return entry }
            // An empty slot, else the one the hash picks (entries of one set are equally old to us).
            let way = (0..<Self.ways).first { set[$0].entry == nil } ?? Int(truncatingIfNeeded: hash >> 20) & (Self.ways - 1)
            let old = set[way].entry
            let freed = old.map { Int($0.load(as: Header.self).size) } ?? 0
            // The budget is checked and charged in one step so that stripes racing to fill it cannot pass it.
            let charged = bytes.wrappingAdd(size - freed, ordering: .relaxed).newValue
            guard charged <= budget || size <= freed else {
                bytes.wrappingSubtract(size - freed, ordering: .relaxed)
                return entry
            }
            set[way] = Slot(hash: hash, entry: entry)
            return old
        }
        free(unused)
    }

    /// Bytes the entries hold now (header, entry key, stored and plain value each).
    var keptBytes: Int { bytes.load(ordering: .relaxed) }

    @inline(__always)
    private static func put(_ bytes: UnsafeRawBufferPointer, at target: UnsafeMutableRawPointer) {
        if let base = bytes.baseAddress, bytes.count > 0 { target.copyMemory(from: base, byteCount: bytes.count) }
    }

    @inline(__always)
    private static func equal(_ kept: UnsafeRawPointer, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return true }
        return memcmp(kept, base, bytes.count) == 0
    }
}
