/// LEB128 variable-length integers with zigzag encoding for signed values: small magnitudes,
/// positive or negative, take one byte; `Int64.min`/`max` take ten.
@usableFromInline
enum Varint {
    @inline(__always)
    static func zigzag(_ v: Int64) -> UInt64 { UInt64(bitPattern: (v << 1) ^ (v >> 63)) }

    @inlinable
    static func unzigzag(_ u: UInt64) -> Int64 { Int64(bitPattern: u >> 1) ^ -Int64(bitPattern: u & 1) }

    @inline(__always)
    static func append(_ value: UInt64, to out: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    /// Writes `value` at `base + at`, advancing `at`; the caller made room (at most 10 bytes).
    @inline(__always)
    static func store(_ value: UInt64, at base: UnsafeMutableRawPointer, _ at: inout Int) {
        var v = value
        while v >= 0x80 {
            base.storeBytes(of: UInt8(truncatingIfNeeded: v) | 0x80, toByteOffset: at, as: UInt8.self)
            at += 1
            v >>= 7
        }
        base.storeBytes(of: UInt8(v), toByteOffset: at, as: UInt8.self)
        at += 1
    }

    /// Reads a varint at `offset`, advancing it. Malformed input yields 0 and stops at the end.
    @inlinable
    static func read(_ bytes: UnsafeRawBufferPointer, _ offset: inout Int) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count {
            let byte = bytes[offset]
            offset += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 || shift >= 63 { return result }
            shift += 7
        }
        return result
    }
}
