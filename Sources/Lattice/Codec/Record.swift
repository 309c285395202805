/// The binary record of one object (see the *File Format* article).
///
/// ```
/// header   u8      high nibble: record format (1); low nibble: bits 0-1 offset width code
///                  (0: 1 byte, 1: 2, 2: 4), bit 2 set when a stamp follows
/// stamp    varint  (optional) creation stamp: tells a re-created object from a deleted one with the same key
/// count    varint  number of property payloads n
/// ends     n × width little-endian end offsets of each payload, relative to the payload area
/// payloads the property values in schema order, each in its type's encoding
/// ```
/// Reading property i costs two offset loads; no other property is decoded.
enum Record {
    static let format: UInt8 = 1

    static let stampFlag: UInt8 = 0b100

    /// Assembles a record from concatenated payloads and their end offsets; `stamp` 0 means none.
    static func assemble(payloads: [UInt8], ends: [Int], stamp: UInt64 = 0, into out: inout [UInt8]) {
        let total = payloads.count
        let width = total <= 0xFF ? 1 : total <= 0xFFFF ? 2 : 4
        let code: UInt8 = width == 1 ? 0 : width == 2 ? 1 : 2
        out.removeAll(keepingCapacity: true)
        out.reserveCapacity(12 + ends.count * width + total)
        out.append(format << 4 | code | (stamp == 0 ? 0 : stampFlag))
        if stamp != 0 { Varint.append(stamp, to: &out) }
        Varint.append(UInt64(ends.count), to: &out)
        for end in ends {
            var e = UInt32(end)
            for _ in 0..<width {
                out.append(UInt8(truncatingIfNeeded: e))
                e >>= 8
            }
        }
        out.append(contentsOf: payloads)
    }
}

extension Record {
    /// Builds a record of `count` payloads that `payload(&out, i)` appends in column order, in one buffer:
    /// payloads go after room for a header with 1-byte offsets, each filled in as its payload ends;
    /// records whose payloads exceed 255 bytes are re-assembled with wider offsets. `stamp` 0 means none.
    static func build(count: Int, stamp: UInt64 = 0, capacity: Int = 128,
                      _ payload: (inout [UInt8], Int) throws -> Void) rethrows -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(24 + count + capacity)
        try build(into: &out, count: count, stamp: stamp, payload)
        return out
    }

    /// `build(count:stamp:capacity:_:)` into `out`, which is emptied first (its capacity is kept, so a
    /// buffer reused across records allocates nothing).
    static func build(into out: inout [UInt8], count: Int, stamp: UInt64 = 0,
                      _ payload: (inout [UInt8], Int) throws -> Void) rethrows {
        out.removeAll(keepingCapacity: true)
        out.append(format << 4 | (stamp == 0 ? 0 : stampFlag))
        if stamp != 0 { Varint.append(stamp, to: &out) }
        Varint.append(UInt64(count), to: &out)
        let table = out.count
        out.append(contentsOf: repeatElement(0, count: count))
        let header = out.count
        var wide: [Int]?   // every end offset, once one exceeds a byte
        for i in 0..<count {
            try payload(&out, i)
            let end = out.count - header
            if wide == nil && end <= 0xFF {
                out[table + i] = UInt8(truncatingIfNeeded: end)
            } else {
                if wide == nil { wide = (0..<i).map { Int(out[table + $0]) } }
                wide!.append(end)
            }
        }
        guard let wide else { return }
        assemble(payloads: Array(out[header...]), ends: wide, stamp: stamp, into: &out)
    }
}

/// Where a record's payloads are: its header parsed once, usable with any copy of the same bytes.
@usableFromInline
struct RecordLayout: Sendable {
    // Compact (24 bytes): objects keep one per cached record, beside a pointer to the bytes.
    /// The creation stamp, 0 when the record has none.
    let stamp: UInt64
    @usableFromInline let payloadCount: Int32
    /// The record's byte count.
    @usableFromInline let size: Int32
    @usableFromInline let payloadStart: Int32
    @usableFromInline let table: UInt8
    @usableFromInline let width: UInt8

    /// The number of payloads.
    @inlinable var count: Int { Int(payloadCount) }

    /// No payloads: every property reads as its default.
    static let unreadable = RecordLayout(stamp: 0, payloadCount: 0, size: 0, payloadStart: 0, table: 0, width: 1)

    private init(stamp: UInt64, payloadCount: Int32, size: Int32, payloadStart: Int32, table: UInt8, width: UInt8) {
        self.stamp = stamp
        self.payloadCount = payloadCount
        self.size = size
        self.payloadStart = payloadStart
        self.table = table
        self.width = width
    }

    /// Parses the header; nil when the bytes are not a record this version can read.
    @inline(__always)
    init?(_ bytes: UnsafeRawBufferPointer) {
        guard let header = bytes.first, header >> 4 == Record.format, bytes.count <= Int32.max else { return nil }
        let code = Int(header & 0b11)
        guard code <= 2, header & 0b1000 == 0 else { return nil }
        var at = 1
        stamp = header & Record.stampFlag != 0 ? Varint.read(bytes, &at) : 0
        let n = Int(truncatingIfNeeded: Varint.read(bytes, &at))
        let width = 1 << code
        // A header is at most 1 + 10 + 10 bytes, so `table` fits a byte.
        guard n >= 0, n <= (bytes.count - at) >> code, at <= Int(UInt8.max) else { return nil }
        self.payloadCount = Int32(n)
        self.size = Int32(bytes.count)
        self.width = UInt8(width)
        self.table = UInt8(at)
        self.payloadStart = Int32(at + n * width)
    }

    @inlinable
    func end(_ i: Int, in base: UnsafeRawPointer) -> Int {
        let p = Int(table) + i * Int(width)
        switch width {
        case 1: return Int(base.load(fromByteOffset: p, as: UInt8.self))
        case 2: return Int(base.loadUnaligned(fromByteOffset: p, as: UInt16.self).littleEndian)
        default: return Int(base.loadUnaligned(fromByteOffset: p, as: UInt32.self).littleEndian)
        }
    }

    /// The payload of property `i` in the record at `base` (the bytes this layout was parsed from, or a
    /// copy); nil when the record predates that property.
    @inlinable
    func payload(_ i: Int, at base: UnsafeRawPointer) -> UnsafeRawBufferPointer? {
        guard i < count else { return nil }
        let start = i == 0 ? 0 : end(i - 1, in: base)
        let stop = end(i, in: base)
        let first = Int(payloadStart) + start
        guard start <= stop, Int(payloadStart) + stop <= Int(size) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: base + first, count: stop - start)
    }

    /// The payload of property `i` in `bytes`; nil when the record predates that property.
    @inline(__always)
    func payload(_ i: Int, in bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard let base = bytes.baseAddress else { return nil }
        return payload(i, at: base)
    }
}

/// A parsed view of a record's header: locates payloads without copying.
struct RecordView {
    let bytes: UnsafeRawBufferPointer
    let layout: RecordLayout
    /// The number of payloads.
    var count: Int { layout.count }
    /// The creation stamp, 0 when the record has none.
    var stamp: UInt64 { layout.stamp }

    /// Parses the header; nil when the bytes are not a record this version can read.
    @inline(__always)
    init?(_ bytes: UnsafeRawBufferPointer) {
        guard let layout = RecordLayout(bytes) else { return nil }
        self.bytes = bytes
        self.layout = layout
    }

    /// The payload of property `i`; nil when the record predates that property.
    @inline(__always)
    func payload(_ i: Int) -> UnsafeRawBufferPointer? { layout.payload(i, in: bytes) }

    /// Copies every payload (for re-encoding after one property changed).
    func payloads() -> (bytes: [UInt8], ends: [Int]) {
        var ends: [Int] = []
        ends.reserveCapacity(count)
        // Well-formed offsets (ascending, inside the record): the payloads are one run of bytes.
        if let base = bytes.baseAddress {
            var last = 0
            for i in 0..<count {
                let end = layout.end(i, in: base)
                if end < last { break }
                last = end
                ends.append(end)
            }
            if ends.count == count, Int(layout.payloadStart) + last <= Int(layout.size) {
                return (Array(UnsafeRawBufferPointer(start: base + Int(layout.payloadStart), count: last)), ends)
            }
            ends.removeAll(keepingCapacity: true)
        }
        var out: [UInt8] = []
        for i in 0..<count {
            if let p = payload(i) { out.append(contentsOf: p) }
            ends.append(out.count)
        }
        return (out, ends)
    }
}

/// Whether two payloads (nil: absent) hold the same bytes.
@inline(__always)
func samePayload(_ a: UnsafeRawBufferPointer?, _ b: UnsafeRawBufferPointer?) -> Bool {
    guard let a, let b else { return a == nil && b == nil }
    return a.count == b.count && a.elementsEqual(b)
}

/// Order-preserving binary keys: `memcmp` order equals value order.
enum KeyCodec {
    /// 8-byte big-endian with the sign bit flipped.
    @inline(__always)
    static func appendInt(_ v: Int64, to out: inout [UInt8]) {
        let u = UInt64(bitPattern: v) ^ (1 << 63)
        withUnsafeBytes(of: u.bigEndian) { out.append(contentsOf: $0) }
    }

    @inline(__always)
    static func int(_ bytes: UnsafeRawBufferPointer) -> Int64 {
        guard bytes.count >= 8 else { return 0 }
        return int(number: UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self)))
    }

    /// An object key from its 8-byte key read as a big-endian number.
    static func int(number: UInt64) -> Int64 { Int64(bitPattern: number ^ (1 << 63)) }

    /// Doubles ordered numerically (negatives before positives, -0.0 equal to 0.0).
    static func appendDouble(_ d: Double, to out: inout [UInt8]) {
        let bits = (d == 0 ? 0.0 : d).bitPattern
        let u = bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
        withUnsafeBytes(of: u.bigEndian) { out.append(contentsOf: $0) }
    }

    /// Object keys: the 8-byte form of an Int64, on the stack.
    @inline(__always)
    static func withObjectKey<R>(_ key: Int64, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let u = (UInt64(bitPattern: key) ^ (1 << 63)).bigEndian
        return try withUnsafeBytes(of: u, body)
    }

    /// Passes the 12-byte key `[object key][u32 big-endian suffix]` (a List chunk, a backlink), built on
    /// the stack, to `body`.
    @inline(__always)
    static func withObjectKey<R>(_ key: Int64, suffix: UInt32, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeTemporaryAllocation(byteCount: 12, alignment: 8) { buffer in
            buffer.storeBytes(of: (UInt64(bitPattern: key) ^ (1 << 63)).bigEndian, toByteOffset: 0, as: UInt64.self)
            buffer.storeBytes(of: suffix.bigEndian, toByteOffset: 8, as: UInt32.self)
            return try body(UnsafeRawBufferPointer(buffer))
        }
    }

    /// 64-bit FNV-1a of `bytes`: shortens long set keys and names in-memory stores.
    static func fnv1a64<S: Sequence>(_ bytes: S) -> UInt64 where S.Element == UInt8 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }

    /// 32-bit FNV-1a: the id of a link property (`Class.property`) in backlink entries.
    static func fnv1a32(_ text: String) -> UInt32 {
        var hash: UInt32 = 0x811c_9dc5
        for byte in text.utf8 { hash = (hash ^ UInt32(byte)) &* 0x0100_0193 }
        return hash
    }
}

extension Record {
    /// Appends `payloads` as more payloads of the record `view` (one without a stamp), into `out`: its
    /// offsets and payloads are copied as they are, not decoded. False, with `out` unspecified, when the
    /// payloads would exceed `maxPayloadBytes` or need wider offsets (the caller then re-assembles).
    static func appending(_ payloads: [[UInt8]], to view: RecordView, maxPayloadBytes: Int, into out: inout [UInt8]) -> Bool {
        let layout = view.layout
        guard layout.stamp == 0, let base = view.bytes.baseAddress else { return false }
        let n = layout.count
        let width = Int(layout.width)
        let total = n == 0 ? 0 : layout.end(n - 1, in: base)
        // Well formed: the payloads end where the record does.
        guard Int(layout.payloadStart) + total == Int(layout.size) else { return false }
        let grown = payloads.reduce(total) { $0 + $1.count }
        guard grown <= maxPayloadBytes, grown <= (width == 1 ? 0xFF : width == 2 ? 0xFFFF : Int(UInt32.max)) else { return false }
        out.removeAll(keepingCapacity: true)
        out.reserveCapacity(12 + (n + payloads.count) * width + grown)
        out.append(base.load(as: UInt8.self))  // the header: format and offset width
        Varint.append(UInt64(n + payloads.count), to: &out)
        out.append(contentsOf: UnsafeRawBufferPointer(start: base + Int(layout.table), count: n * width))
        var end = total
        for payload in payloads {
            end += payload.count
            var e = UInt32(end)
            for _ in 0..<width {
                out.append(UInt8(truncatingIfNeeded: e))
                e >>= 8
            }
        }
        out.append(contentsOf: UnsafeRawBufferPointer(start: base + Int(layout.payloadStart), count: total))
        for payload in payloads { out.append(contentsOf: payload) }
        return true
    }
}
