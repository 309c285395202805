/// The 32-bit checksum that ends every value of a checksummed database (file format 2, see the *File
/// Format* article): a word-at-a-time multiply–xor hash of the key and the value before it.
///
/// Each step `h = (h ^ word) &* k` (k odd) is a bijection of the word for a fixed state and of the state
/// for a fixed word, so any change confined to one 8-byte word always changes the 64-bit state; the
/// final mix folds the high bits, which every input bit reaches, into the 32 kept. Hashing the key too
/// catches a value that damage moved under another key. About three instructions per 8 bytes.
enum Checksum {
    /// Bytes a checksum adds to a value.
    static let size = 4

    private static let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15

    /// The checksum of `value` stored under `key`.
    @inline(__always)
    static func of(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> UInt32 {
        var h = 0x243F_6A88_85A3_08D3 ^ (UInt64(truncatingIfNeeded: key.count) << 32 | UInt64(truncatingIfNeeded: value.count))
        h = mix(h, key)
        h = mix(h, value)
        h ^= h >> 32
        h &*= 0xFF51_AFD7_ED55_8CCD
        return UInt32(truncatingIfNeeded: h >> 32)
    }

    @inline(__always)
    private static func mix(_ state: UInt64, _ bytes: UnsafeRawBufferPointer) -> UInt64 {
        let n = bytes.count
        guard n > 0, let base = bytes.baseAddress else { return state }
        var h = state
        if n >= 8 {
            // Pointer steps, four words a round: no overflow checks in the loop.
            let last = base + (n - 8)
            var p = base
            while p + 24 <= last {
                h = (h ^ p.loadUnaligned(as: UInt64.self)) &* multiplier
                h = (h ^ p.loadUnaligned(fromByteOffset: 8, as: UInt64.self)) &* multiplier
                h = (h ^ p.loadUnaligned(fromByteOffset: 16, as: UInt64.self)) &* multiplier
                h = (h ^ p.loadUnaligned(fromByteOffset: 24, as: UInt64.self)) &* multiplier
                p += 32
            }
            while p <= last {
                h = (h ^ p.loadUnaligned(as: UInt64.self)) &* multiplier
                p += 8
            }
            // The last 1 to 7 bytes: the last 8 bytes loaded again, the ones already hashed shifted out.
            let rest = (base + n) - p
            if rest > 0 { h = (h ^ last.loadUnaligned(as: UInt64.self) &>> UInt64(64 - rest * 8)) &* multiplier }
        } else if n >= 4 {
            // Two overlapping 4-byte loads cover 4 to 7 bytes (the length is in the seed).
            let low = UInt64(base.loadUnaligned(fromByteOffset: 0, as: UInt32.self))
            let high = UInt64(base.loadUnaligned(fromByteOffset: n - 4, as: UInt32.self))
            h = (h ^ (low | high << 32)) &* multiplier
        } else {
            let b0 = UInt64(base.load(fromByteOffset: 0, as: UInt8.self))
            let b1 = UInt64(base.load(fromByteOffset: n / 2, as: UInt8.self))
            let b2 = UInt64(base.load(fromByteOffset: n - 1, as: UInt8.self))
            h = (h ^ (b0 | b1 << 8 | b2 << 16)) &* multiplier
        }
        return h
    }

    /// Writes `value` followed by its checksum (little-endian) to `out`, which has room for both.
    @inline(__always)
    static func seal(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, to out: UnsafeMutableRawPointer) {
        if let source = value.baseAddress, !value.isEmpty { out.copyMemory(from: source, byteCount: value.count) }
        out.storeBytes(of: of(key: key, value: value).littleEndian, toByteOffset: value.count, as: UInt32.self)
    }

    /// `value` followed by its checksum, as an array.
    static func sealed(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: value.count + size) { buffer, count in
            seal(key: key, value: value, to: UnsafeMutableRawPointer(buffer.baseAddress!))
            count = value.count + size
        }
    }

    /// The value a sealed value holds (without its checksum); nil when the checksum does not match.
    @inline(__always)
    static func open(key: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard sealed.count >= size, let base = sealed.baseAddress else { return nil }
        let value = UnsafeRawBufferPointer(start: base, count: sealed.count - size)
        let stored = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: value.count, as: UInt32.self))
        return stored == of(key: key, value: value) ? value : nil
    }
}
