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
/// Slots are direct-mapped by the stored value's random nonce; a new entry replaces its slot's. The
/// entries together hold at most `budget` bytes (32 MiB by default); values over `largestValue` bytes
/// are not kept (the cipher's fixed cost per call is what this saves, and it matters for small values).
final class OpenedValues: @unchecked Sendable {
    // @unchecked Sendable is safe: `slots` is only read or written while holding the lock of the slot's
    // stripe (`stripe(of:)`), entries are owned by their slot (freed only after leaving it, under that
    // lock), and `bytes` is atomic.

    /// Bytes all entries of a file may hold together, by default.
    static let defaultBudget = 32 << 20
    /// Bytes of the largest stored value kept.
    static let largestValue = 2048

    private static let slotCount = 1 << 18
    private static let stripeCount = 64

    /// Layout of an entry's header; the entry key, the stored value and the plain value follow it.
    private struct Header {
        var tag: UInt64
        var size: Int
        var keyCount: Int
        var storedCount: Int
        var plainCount: Int
    }

    private let slots: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    private let locks: UnsafeMutablePointer<pthread_mutex_t>
    private let bytes = Atomic<Int>(0)
    private let budget: Int

    init(budget: Int = OpenedValues.defaultBudget) {
        self.budget = budget
        slots = .allocate(capacity: Self.slotCount)
        slots.initialize(repeating: nil, count: Self.slotCount)
        locks = .allocate(capacity: Self.stripeCount)
        for i in 0..<Self.stripeCount { pthread_mutex_init(locks + i, nil) }
    }

    deinit {
        for i in 0..<Self.slotCount { free(slots[i]) }
        slots.deallocate()
        for i in 0..<Self.stripeCount { pthread_mutex_destroy(locks + i) }
        locks.deallocate()
    }

    /// The slot of stored value `stored` of table `tag` (its first bytes are its random nonce).
    @inline(__always)
    private static func slot(_ tag: UInt64, _ stored: UnsafeRawBufferPointer) -> Int {
        guard stored.count >= 8, let base = stored.baseAddress else { return 0 }
        let h = (base.loadUnaligned(as: UInt64.self) ^ tag) &* 0x9E37_79B9_7F4A_7C15
        return Int(truncatingIfNeeded: h >> 46) & (slotCount - 1)
    }

    @inline(__always)
    private func withStripe<R>(of slot: Int, _ body: () -> R) -> R {
        let lock = locks + (slot & (Self.stripeCount - 1))
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return body()
    }

    /// Copies the plain value of `stored` under entry key `key` of table `tag` to `plain` (room for
    /// `plainCount` bytes) and returns true when it is kept; false otherwise.
    func copy(_ tag: UInt64, key: UnsafeRawBufferPointer, stored: UnsafeRawBufferPointer,
              to plain: UnsafeMutableRawPointer, plainCount: Int) -> Bool {
        guard stored.count <= Self.largestValue else { return false }
        let slot = Self.slot(tag, stored)
        return withStripe(of: slot) {
            guard let entry = slots[slot] else { return false }
            let header = entry.load(as: Header.self)
            guard header.tag == tag, header.keyCount == key.count, header.storedCount == stored.count,
                  header.plainCount == plainCount else { return false }
            let keyStart = entry + MemoryLayout<Header>.stride
            let storedStart = keyStart + key.count
            guard Self.equal(keyStart, key), Self.equal(storedStart, stored) else { return false }
            if plainCount > 0 { plain.copyMemory(from: storedStart + stored.count, byteCount: plainCount) }
            return true
        }
    }

    /// Whether `stored` under `key` of table `tag` is kept (so it authenticated when it was kept).
    func contains(_ tag: UInt64, key: UnsafeRawBufferPointer, stored: UnsafeRawBufferPointer) -> Bool {
        guard stored.count <= Self.largestValue else { return false }
        let slot = Self.slot(tag, stored)
        return withStripe(of: slot) {
            guard let entry = slots[slot] else { return false }
            let header = entry.load(as: Header.self)
            guard header.tag == tag, header.keyCount == key.count, header.storedCount == stored.count else { return false }
            let keyStart = entry + MemoryLayout<Header>.stride
            return Self.equal(keyStart, key) && Self.equal(keyStart + key.count, stored)
        }
    }

    /// Keeps `plain` as the value `stored` under `key` of table `tag` opens to (the caller sealed or
    /// opened it with the table's cipher). Does nothing when it would pass the budget.
    func keep(_ tag: UInt64, key: UnsafeRawBufferPointer, stored: UnsafeRawBufferPointer, plain: UnsafeRawBufferPointer) {
        guard stored.count <= Self.largestValue else { return }
        let size = MemoryLayout<Header>.stride + key.count + stored.count + plain.count
        guard let entry = malloc(size) else { return }
        entry.storeBytes(of: Header(tag: tag, size: size, keyCount: key.count, storedCount: stored.count, plainCount: plain.count),
                         as: Header.self)
        let keyStart = entry + MemoryLayout<Header>.stride
        Self.put(key, at: keyStart)
        Self.put(stored, at: keyStart + key.count)
        Self.put(plain, at: keyStart + key.count + stored.count)
        let slot = Self.slot(tag, stored)
        let replaced: UnsafeMutableRawPointer? = withStripe(of: slot) {
            let old = slots[slot]
            let freed = old.map { $0.load(as: Header.self).size } ?? 0
            // The budget is checked and charged in one step so that stripes racing to fill it cannot pass it.
            let charged = bytes.wrappingAdd(size - freed, ordering: .relaxed).newValue
            guard charged <= budget || size <= freed else {
                bytes.wrappingSubtract(size - freed, ordering: .relaxed)
                return entry
            }
            slots[slot] = entry
            return old
        }
        free(replaced)
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
