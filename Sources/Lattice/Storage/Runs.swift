/// Runs: how a packed table (file format 6) stores its entries, several to an LMDB value.
///
/// One LMDB entry per record costs LMDB 18 bytes (node header, 8-byte key, slot) beside the record, a
/// quarter of a typical record. A packed table stores, under the 8-byte key of its first entry, a *run*
/// of entries with increasing 8-byte keys, back to back:
///
/// ```
/// entry   [varint key delta][varint value length][value][checksum, 4 bytes]
/// ```
///
/// The first entry's delta is 0 (its key is the run's LMDB key); every other entry's key is the one
/// before it plus its delta (at least 1), keys read as big-endian unsigned numbers (their `memcmp`
/// order). The checksum is `Checksum.of(key, value)`, as for a value stored alone, so reading one entry
/// verifies that entry only, and damage to one entry leaves its neighbours readable. A run grows up to
/// `budget` bytes, so that two runs fill an LMDB page; a value too large for that is a run of its own.
///
/// The table's number of entries is kept under the one-byte key `00`, which sorts before every 8-byte
/// key: `Transaction.count` stays O(1).
enum Runs {
    /// The key of the entry-count entry of a packed table.
    static let countKey: [UInt8] = [0]

    /// The largest run LMDB keeps in its leaf page beside another one: LMDB moves a value to overflow
    /// pages when its node (8-byte header, key, value) exceeds half the page less the header and a
    /// 2-byte slot, rounded down to even; two such nodes then fill the page.
    static func budget(pageSize: Int) -> Int { (((pageSize - 16) / 2) & ~1) - 2 - 8 - 8 }

    /// An 8-byte key as a number (big-endian: `memcmp` order is numeric order).
    @inline(__always)
    static func number(_ key: UnsafeRawBufferPointer) -> UInt64 {
        UInt64(bigEndian: key.loadUnaligned(as: UInt64.self))
    }

    /// Runs `body` with the 8-byte key of a number, on the stack.
    @inline(__always)
    static func withKey<R>(_ number: UInt64, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        var bigEndian = number.bigEndian
        return try withUnsafeBytes(of: &bigEndian, body)
    }

    /// Bytes an entry of `count` value bytes with key delta `delta` takes.
    @inline(__always)
    static func entrySize(delta: UInt64, count: Int) -> Int {
        varintSize(delta) + varintSize(UInt64(count)) + count + Checksum.size
    }

    @inline(__always)
    static func varintSize(_ value: UInt64) -> Int {
        value < 0x80 ? 1 : (64 - value.leadingZeroBitCount + 6) / 7
    }
}

/// One entry of a run: its key and where its parts lie in the run.
struct RunEntry {
    var key: UInt64
    /// Offset of the entry (its delta) in the run.
    var start: Int
    /// Offset of its value.
    var value: Int
    /// Offset just past its checksum.
    var end: Int

    /// Offset of its value length (just past its key delta).
    @inline(__always)
    func afterDelta(in run: UnsafeRawBufferPointer) -> Int {
        var at = start
        while at < value, run[at] >= 0x80 { at += 1 }
        return at + 1
    }

    /// The value and its checksum, as `Checksum.open` takes them.
    @inline(__always)
    func sealed(in run: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: run[value..<end])
    }
}

/// Reads a run's entries in order. Every length is checked against the run's size: a damaged run ends
/// the scan with `malformed` set, never a read past its end.
struct RunScanner {
    let run: UnsafeRawBufferPointer
    private(set) var offset = 0
    private(set) var key: UInt64
    private(set) var malformed = false
    /// Entries read so far.
    private(set) var count = 0
    /// After `seek`: the key of the entry before the one found (nil: none).
    private(set) var previousKey: UInt64?
    /// The key of the last entry read (nil: none yet).
    var lastKey: UInt64? { count > 0 ? key : nil }
    private var first = true

    /// A scan of `run`, stored under the key `key`.
    init(_ run: UnsafeRawBufferPointer, key: UInt64) {
        self.run = run
        self.key = key
    }

    /// The first entry whose key is at least `wanted` (nil: none, or damage: see `malformed`), the scan
    /// left just past it and `previousKey` set to the key before it (nil: it is the first). A tight loop
    /// over the usual entries (one-byte delta and length, after a first entry of delta 0), the general
    /// scan from the first other one.
    @inline(__always)
    mutating func seek(_ wanted: UInt64) -> RunEntry? {
        if let base = run.baseAddress, offset == 0, run.count >= 2, base.load(as: UInt8.self) == 0 {
            let end = base + run.count
            var p = base
            var current = key
            var delta: UInt8 = 0  // the first entry's
            while true {
                let length = p.load(fromByteOffset: 1, as: UInt8.self)
                let next = p + (2 &+ Int(length & 0x7F) &+ Checksum.size)
                let sum = current &+ UInt64(delta)
                if (delta | length) >= 0x80 || next > end || sum < current { break }
                if sum >= wanted {
                    previousKey = p == base ? nil : current
                    let at = p - base
                    (offset, key, first) = (next - base, sum, false)
                    count += 1
                    return RunEntry(key: sum, start: at, value: at &+ 2, end: next - base)
                }
                current = sum
                p = next
                count += 1
                if end - p < 2 { break }
                delta = p.load(as: UInt8.self)
                if delta == 0 { break }
            }
            // The general scan from the entry the loop stopped at.
            (offset, key, first) = (p - base, current, p == base)
        }
        previousKey = first ? nil : key
        while let e = next() {
            if e.key >= wanted { return e }
            previousKey = e.key
        }
        return nil
    }

    /// The next entry, or nil at the end (or at damage: see `malformed`).
    @inline(__always)
    mutating func next() -> RunEntry? {
        guard offset < run.count, !malformed, let base = run.baseAddress else { return nil }
        // Most entries: a delta and a length of one byte each.
        if offset + 2 <= run.count {
            let delta = base.load(fromByteOffset: offset, as: UInt8.self)
            let count = Int(base.load(fromByteOffset: offset + 1, as: UInt8.self))
            if delta | UInt8(truncatingIfNeeded: count) < 0x80, first ? delta == 0 : delta > 0, run.count - offset - 2 >= count + Checksum.size {
                let start = offset
                key &+= UInt64(delta)  // below 128: no overflow past keys that fit the run's own
                if key < UInt64(delta) { return fail() }
                first = false
                offset += 2 + count + Checksum.size
                self.count += 1
                return RunEntry(key: key, start: start, value: start + 2, end: offset)
            }
        }
        return slowNext()
    }

    /// `next` for entries with longer varints (or damage).
    private mutating func slowNext() -> RunEntry? {
        let start = offset
        guard let delta = varint(), let count = varint() else { return fail() }
        if first {
            guard delta == 0 else { return fail() }
            first = false
        } else {
            let (sum, overflow) = key.addingReportingOverflow(delta)
            guard delta > 0, !overflow else { return fail() }
            key = sum
        }
        guard count <= UInt64(run.count - offset), run.count - offset - Int(count) >= Checksum.size else { return fail() }
        let value = offset
        offset += Int(count) + Checksum.size
        self.count += 1
        return RunEntry(key: key, start: start, value: value, end: offset)
    }

    private mutating func fail() -> RunEntry? {
        malformed = true
        return nil
    }

    /// An unsigned LEB128 varint; nil when it runs past the end or past 64 bits.
    @inline(__always)
    private mutating func varint() -> UInt64? {
        guard let base = run.baseAddress else { return nil }
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while offset < run.count, shift < 64 {
            let byte = base.load(fromByteOffset: offset, as: UInt8.self)
            offset += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
        return nil
    }
}

/// Builds runs: entries appended in increasing key order, each sealed with its checksum (new values)
/// or copied with the checksum it has (entries of another run).
struct RunWriter {
    private(set) var bytes: [UInt8] = []
    private(set) var firstKey: UInt64 = 0
    private(set) var lastKey: UInt64 = 0
    private(set) var count = 0

    init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    /// Starts again, keeping the buffer.
    mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        count = 0
    }

    /// The size the run would have with one more entry of `valueCount` bytes under `key`.
    func size(adding key: UInt64, valueCount: Int) -> Int {
        bytes.count + Runs.entrySize(delta: count == 0 ? 0 : key &- lastKey, count: valueCount)
    }

    /// Appends a new entry: `value` under `key` (above every key so far), sealed here.
    mutating func append(key: UInt64, value: UnsafeRawBufferPointer) {
        header(key, count: value.count)
        let at = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: value.count + Checksum.size))
        Runs.withKey(key) { k in
            bytes.withUnsafeMutableBytes { out in
                Checksum.seal(key: k, value: value, to: out.baseAddress! + at)
            }
        }
    }

    /// Appends a whole run as it is stored (to an empty writer): `count` entries from `firstKey` to `lastKey`.
    mutating func append(run: UnsafeRawBufferPointer, firstKey: UInt64, lastKey: UInt64, count: Int) {
        bytes.append(contentsOf: run)
        self.firstKey = firstKey
        self.lastKey = lastKey
        self.count = count
    }

    /// Appends an entry of another run as it is stored: its value and checksum are copied unchanged.
    mutating func append(_ entry: RunEntry, of run: UnsafeRawBufferPointer) {
        let sealed = entry.sealed(in: run)
        header(entry.key, count: sealed.count - Checksum.size)
        bytes.append(contentsOf: sealed)
    }

    private mutating func header(_ key: UInt64, count valueCount: Int) {
        let delta = self.count == 0 ? 0 : key &- lastKey
        if self.count == 0 { firstKey = key }
        appendVarint(delta)
        appendVarint(UInt64(valueCount))
        lastKey = key
        self.count += 1
    }

    private mutating func appendVarint(_ value: UInt64) {
        Varint.append(value, to: &bytes)
    }
}

/// Edits of a run as bytes: entries before and after the one edited are copied as they are, and only
/// the key delta of the entry after it is written anew. O(run size) in copies, with no per-entry work.
enum RunEdit {
    /// `run` with `value` put under `key` into `out`: replacing entry `at` when `replacing`, otherwise
    /// inserted before entry `at` (nil: after the last entry). `previous` is the key of the entry
    /// before the place (nil: none, the new entry comes first).
    static func put(_ run: UnsafeRawBufferPointer, key: UInt64, value: UnsafeRawBufferPointer, at e: RunEntry?,
                    previous: UInt64?, replacing: Bool, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        out.append(contentsOf: UnsafeRawBufferPointer(rebasing: run[0..<(e?.start ?? run.count)]))
        Varint.append(previous.map { key &- $0 } ?? 0, to: &out)
        Varint.append(UInt64(value.count), to: &out)
        let at = out.count
        out.append(contentsOf: repeatElement(0, count: value.count + Checksum.size))
        Runs.withKey(key) { k in out.withUnsafeMutableBytes { Checksum.seal(key: k, value: value, to: $0.baseAddress! + at) } }
        guard let e else { return }
        if replacing {
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: run[e.end...]))
        } else {
            Varint.append(e.key &- key, to: &out)
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: run[e.afterDelta(in: run)...]))
        }
    }

    /// `run` without entry `e` into `out`; `previous` is the key of the entry before it (nil: it is the
    /// first), `next` the entry after it.
    static func remove(_ run: UnsafeRawBufferPointer, _ e: RunEntry, previous: UInt64?, next: RunEntry?, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        out.append(contentsOf: UnsafeRawBufferPointer(rebasing: run[0..<e.start]))
        guard let next else { return }
        Varint.append(previous.map { next.key &- $0 } ?? 0, to: &out)
        out.append(contentsOf: UnsafeRawBufferPointer(rebasing: run[next.afterDelta(in: run)...]))
    }
}
