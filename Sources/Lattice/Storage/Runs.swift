/// Runs: how a packed table (file format 6) stores its entries, several to an LMDB value.
///
/// One LMDB entry per record costs LMDB 18 bytes (node header, 8-byte key, slot) beside the record, a
/// quarter of a typical record. A packed table stores, under the 8-byte key of its first entry, a *run*
/// of entries with increasing 8-byte keys (read as big-endian numbers: their `memcmp` order):
///
/// ```
/// flags     1 byte    bit 0: dense (the keys are the run's key, + 1, + 2, ...: none stored);
///                     bit 1: wide (4-byte ends instead of 2)
/// count     varint    n, at least 1
/// deltas    unless dense: varint byte size of the deltas, then n varint key deltas (the first 0, every
///           other at least 1: its key minus the one before)
/// ends      n × 2 (or 4) bytes, little-endian: where each entry ends in the entry area
/// entries   each entry's value followed by its 4-byte checksum, back to back
/// ```
///
/// The checksum is `Checksum.of(key, value)`, as for a value stored alone, so reading one entry verifies
/// that entry only, and damage to one entry leaves its neighbours readable. The ends give any entry in
/// O(1); a dense run (keys added in order, the usual case) finds a key in O(1) too, another scans its
/// deltas (a byte each, usually). A run grows up to `budget` bytes, so that two runs fill an LMDB page; a
/// value too large for that is a run of its own.
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

    /// Makes `out` `count` bytes long, keeping its storage; the bytes are then all written by the caller
    /// (a run written after another of about the same size moves no more than a few bytes here).
    @inline(__always)
    static func resize(_ out: inout [UInt8], to count: Int) {
        if out.count > count { out.removeLast(out.count - count) } else { out.appendZeros(count - out.count) }
    }

    @inline(__always)
    static func varintSize(_ value: UInt64) -> Int {
        value < 0x80 ? 1 : (64 - value.leadingZeroBitCount + 6) / 7
    }

    /// The bytes of a run of `count` entries whose entry area is `area` bytes (its ends wide past 64 KiB)
    /// and whose key deltas, unless `dense`, take `deltaBytes`.
    static func size(count: Int, dense: Bool, deltaBytes: Int, area: Int) -> Int {
        let deltas = dense ? 0 : varintSize(UInt64(deltaBytes)) + deltaBytes
        return 1 + varintSize(UInt64(count)) + deltas + count * (area > 0xFFFF ? 4 : 2) + area
    }

    /// Writes a run's header up to its key deltas (flags, entry count and, unless `dense`, the deltas'
    /// size) at `base`, leaving `at` just after it.
    @inline(__always)
    static func storeHeader(dense: Bool, wide: Bool, count: Int, deltaBytes: Int, at base: UnsafeMutableRawPointer, _ at: inout Int) {
        base.storeBytes(of: (dense ? denseFlag : 0) | (wide ? wideFlag : 0), as: UInt8.self)
        at = 1
        Varint.store(UInt64(count), at: base, &at)
        if !dense { Varint.store(UInt64(deltaBytes), at: base, &at) }
    }

    /// Writes one entry end of a run's end table at `base + at`, advancing `at`.
    @inline(__always)
    static func storeEnd(_ end: Int, wide: Bool, at base: UnsafeMutableRawPointer, _ at: inout Int) {
        if wide {
            base.storeBytes(of: UInt32(truncatingIfNeeded: end).littleEndian, toByteOffset: at, as: UInt32.self)
            at += 4
        } else {
            base.storeBytes(of: UInt16(truncatingIfNeeded: end).littleEndian, toByteOffset: at, as: UInt16.self)
            at += 2
        }
    }

    static let denseFlag: UInt8 = 1
    static let wideFlag: UInt8 = 2
}

/// Where a key is or would go in a run (`RunView.place(of:)`).
struct RunPlace {
    var index: Int
    var key: UInt64
    var previous: UInt64?
    var deltaAt: Int
}

/// A run read where it is: its header parsed (O(1)), entries found by position. Every offset is checked
/// against the run's size before it is used: damage gives nil, never a read past the run.
struct RunView {
    let bytes: UnsafeRawBufferPointer
    /// The run's key: its first entry's.
    let key: UInt64
    /// Number of entries.
    let count: Int
    let isDense: Bool
    private let wide: Bool
    /// Offsets of the key deltas (not dense), of the ends and of the entry area.
    private let deltas: Int
    private let deltaBytes: Int
    private let ends: Int
    private let entries: Int

    /// The run `bytes` stored under `key`; nil when its header is damaged.
    init?(_ bytes: UnsafeRawBufferPointer, key: UInt64) {
        guard let base = bytes.baseAddress, bytes.count >= 2 else { return nil }
        let flags = base.load(as: UInt8.self)
        var at = 1
        guard flags & ~(Runs.denseFlag | Runs.wideFlag) == 0, let n = RunView.varint(bytes, &at), n >= 1, n <= UInt64(bytes.count) else {
            return nil
        }
        self.bytes = bytes
        self.key = key
        count = Int(n)
        isDense = flags & Runs.denseFlag != 0
        wide = flags & Runs.wideFlag != 0
        if isDense {
            guard key <= UInt64.max - UInt64(count - 1) else { return nil }
            deltaBytes = 0
        } else {
            guard let size = RunView.varint(bytes, &at), size <= UInt64(bytes.count - at) else { return nil }
            deltaBytes = Int(size)
        }
        deltas = at
        ends = at + deltaBytes
        let width = wide ? 4 : 2
        guard count * width <= bytes.count - ends else { return nil }  // count <= bytes.count: no overflow
        entries = ends + count * width
        // The last end closes the entry area exactly; the others are checked as entries are read.
        guard end(count - 1) == bytes.count - entries else { return nil }
    }

    @inline(__always)
    private func end(_ i: Int) -> Int {
        guard let base = bytes.baseAddress else { return 0 }
        return wide ? Int(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: ends + 4 * i, as: UInt32.self)))
            : Int(UInt16(littleEndian: base.loadUnaligned(fromByteOffset: ends + 2 * i, as: UInt16.self)))
    }

    /// Entry `i`'s value and checksum (`Checksum.open` takes them); nil when its ends are damaged.
    @inline(__always)
    func entry(_ i: Int) -> UnsafeRawBufferPointer? {
        let start = i == 0 ? 0 : end(i - 1)
        let stop = end(i)
        guard start <= stop - Checksum.size, stop <= bytes.count - entries else { return nil }
        return UnsafeRawBufferPointer(rebasing: bytes[(entries + start)..<(entries + stop)])
    }

    /// Bytes of the entry area from entry `from` up to entry `to` (exclusive), with their offsets.
    func area(_ range: Range<Int>) -> (start: Int, bytes: UnsafeRawBufferPointer)? {
        let start = range.lowerBound == 0 ? 0 : end(range.lowerBound - 1)
        let stop = range.isEmpty ? start : end(range.upperBound - 1)
        guard start <= stop, stop <= bytes.count - entries else { return nil }
        return (start, UnsafeRawBufferPointer(rebasing: bytes[(entries + start)..<(entries + stop)]))
    }

    /// The end of entry `i` in the entry area.
    func entryEnd(_ i: Int) -> Int { end(i) }

    /// The first entry whose key is at least `wanted`: its position (`count` when every key is below)
    /// and key; nil when the key deltas are damaged.
    @inline(__always)
    func find(_ wanted: UInt64) -> (index: Int, key: UInt64)? {
        place(of: wanted).map { ($0.index, $0.key) }
    }

    /// Where `wanted` is or would go: the first entry whose key is at least `wanted` (`index` == `count`
    /// when every key is below), its key (the last key when none), the key before it, and (not dense)
    /// where its delta starts in the deltas. Nil when the deltas are damaged.
    @inline(__always)
    func place(of wanted: UInt64) -> RunPlace? {
        if isDense {
            if wanted <= key { return RunPlace(index: 0, key: key, previous: nil, deltaAt: 0) }
            let i = wanted - key
            if i < UInt64(count) { return RunPlace(index: Int(i), key: wanted, previous: wanted - 1, deltaAt: 0) }
            let last = key &+ UInt64(count - 1)
            return RunPlace(index: count, key: last, previous: last, deltaAt: 0)
        }
        guard let base = bytes.baseAddress else { return nil }
        var at = deltas
        let stop = deltas + deltaBytes
        var current = key
        var previous: UInt64?
        for i in 0..<count {
            let start = at
            var delta: UInt64
            guard at < stop else { return nil }
            let byte = base.load(fromByteOffset: at, as: UInt8.self)
            if byte < 0x80 {
                delta = UInt64(byte)
                at += 1
            } else {
                guard let long = RunView.varint(UnsafeRawBufferPointer(rebasing: bytes[..<stop]), &at) else { return nil }
                delta = long
            }
            guard i == 0 ? delta == 0 : delta > 0 else { return nil }
            let (sum, overflow) = current.addingReportingOverflow(delta)
            guard !overflow else { return nil }
            if sum >= wanted { return RunPlace(index: i, key: sum, previous: i == 0 ? nil : current, deltaAt: start - deltas) }
            current = sum
            previous = sum
        }
        return RunPlace(index: count, key: current, previous: previous, deltaAt: deltaBytes)
    }

    /// The key deltas as stored (not dense).
    var deltaRegion: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[deltas..<(deltas + deltaBytes)]) }

    /// The position of the first entry whose key is at least `wanted`, given the run's `keys` when it is
    /// not dense (`keys(into:)`); nil when the deltas are damaged.
    func position(of wanted: UInt64, keys: [UInt64]) -> Int? {
        if isDense { return find(wanted)?.index }
        var low = 0
        var high = keys.count
        while low < high {
            let middle = (low + high) / 2
            if keys[middle] < wanted { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Every key in order, into `keys` (emptied first); false when the deltas are damaged.
    func keys(into keys: inout [UInt64]) -> Bool {
        keys.removeAll(keepingCapacity: true)
        keys.reserveCapacity(count)
        if isDense {
            for i in 0..<count { keys.append(key &+ UInt64(i)) }
            return true
        }
        var at = deltas
        let region = UnsafeRawBufferPointer(rebasing: bytes[..<(deltas + deltaBytes)])
        var current = key
        for i in 0..<count {
            guard let delta = RunView.varint(region, &at), i == 0 ? delta == 0 : delta > 0 else { return false }
            let (sum, overflow) = current.addingReportingOverflow(delta)
            guard !overflow else { return false }
            current = sum
            keys.append(current)
        }
        return true
    }

    /// The last entry's key; nil when the deltas are damaged.
    var lastKey: UInt64? {
        if isDense { return key &+ UInt64(count - 1) }
        return find(.max).map { $0.index == count ? $0.key : .max }
    }

    /// An unsigned LEB128 varint at `at` (advanced); nil when it runs past the end or past 64 bits.
    @inline(__always)
    static func varint(_ bytes: UnsafeRawBufferPointer, _ at: inout Int) -> UInt64? {
        guard let base = bytes.baseAddress else { return nil }
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while at < bytes.count, shift < 64 {
            let byte = base.load(fromByteOffset: at, as: UInt8.self)
            at += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
        return nil
    }
}

/// Builds runs: entries appended in increasing key order, each a new value (sealed here) or one of
/// another run as it is stored (value and checksum copied).
struct RunWriter {
    private(set) var keys: [UInt64] = []
    /// The entry area: values and checksums, back to back.
    private var area: [UInt8] = []
    private var ends: [Int] = []
    /// Bytes of the key deltas when written (the first one's 0 included).
    private var deltaBytes = 0
    private var dense = true

    init(capacity: Int = 0) {
        area.reserveCapacity(capacity)
        keys.reserveCapacity(capacity / 32)
        ends.reserveCapacity(capacity / 32)
    }

    var count: Int { keys.count }
    var firstKey: UInt64 { keys.first ?? 0 }
    var lastKey: UInt64 { keys.last ?? 0 }

    /// Starts again, keeping the buffers.
    mutating func reset() {
        keys.removeAll(keepingCapacity: true)
        area.removeAll(keepingCapacity: true)
        ends.removeAll(keepingCapacity: true)
        deltaBytes = 0
        dense = true
    }

    /// The encoded size of the run.
    var size: Int { Runs.size(count: count, dense: dense, deltaBytes: deltaBytes, area: area.count) }

    /// The encoded size with one more entry of `valueCount` bytes under `key`.
    func size(adding key: UInt64, valueCount: Int) -> Int {
        let delta = count == 0 ? 0 : key &- lastKey
        return Runs.size(count: count + 1, dense: dense && (count == 0 || delta == 1),
                              deltaBytes: deltaBytes + Runs.varintSize(delta), area: area.count + valueCount + Checksum.size)
    }

    private mutating func note(_ key: UInt64) {
        let delta = count == 0 ? 0 : key &- lastKey
        if count > 0 && delta != 1 { dense = false }
        deltaBytes += Runs.varintSize(delta)
        keys.append(key)
    }

    /// Appends a new entry: `value` under `key` (above every key so far), sealed here.
    mutating func append(key: UInt64, value: UnsafeRawBufferPointer) {
        note(key)
        let at = area.count
        area.appendZeros(value.count + Checksum.size)
        Runs.withKey(key) { k in area.withUnsafeMutableBytes { Checksum.seal(key: k, value: value, to: $0.baseAddress! + at) } }
        ends.append(area.count)
    }

    /// Appends an entry as another run stores it: `sealed` is its value and checksum.
    mutating func append(key: UInt64, sealed: UnsafeRawBufferPointer) {
        note(key)
        area.append(contentsOf: sealed)
        ends.append(area.count)
    }

    /// The run split into runs of at most `budget` bytes each (a larger entry alone), of about equal size
    /// so that the next inserts do not split them again, passed to `body` in order.
    func split(budget: Int, _ body: (RunWriter) throws -> Void) rethrows {
        let total = size
        let share = total / ((total + budget - 1) / budget)
        try area.withUnsafeBytes { all in
            var start = 0
            while start < count {
                var piece = RunWriter(capacity: budget)
                var end = start
                while end < count {
                    let sealed = UnsafeRawBufferPointer(rebasing: all[(end == 0 ? 0 : ends[end - 1])..<ends[end]])
                    if piece.count > 0 && (piece.size(adding: keys[end], valueCount: sealed.count - Checksum.size) > budget || piece.size >= share) {
                        break
                    }
                    piece.append(key: keys[end], sealed: sealed)
                    end += 1
                }
                try body(piece)
                start = end
            }
        }
    }

    /// Appends entries `range` of `view` as they are stored; `keys` holds the view's keys when it is not
    /// dense (a dense view's are computed). False, appending nothing, when their ends are damaged.
    mutating func append(_ range: Range<Int>, of view: RunView, keys viewKeys: [UInt64]) -> Bool {
        guard !range.isEmpty else { return true }
        guard let (start, bytes) = view.area(range) else { return false }
        var previous = start
        let offset = area.count - start
        let firstEnd = ends.count
        for i in range {
            let end = view.entryEnd(i)
            guard end >= previous + Checksum.size, end <= start + bytes.count else {
                ends.removeSubrange(firstEnd...)
                return false
            }
            ends.append(end + offset)
            previous = end
        }
        area.append(contentsOf: bytes)
        if view.isDense {
            for i in range { note(view.key &+ UInt64(i)) }
        } else {
            for i in range { note(viewKeys[i]) }
        }
        return true
    }

    /// The run, encoded.
    func encoded() -> [UInt8] {
        var out: [UInt8] = []
        encode(into: &out)
        return out
    }

    /// The run, encoded into `out` (replaced).
    func encode(into out: inout [UInt8]) {
        let total = size
        let wide = area.count > 0xFFFF
        // Written in place in the buffer `out` already has (cheaper than an allocation).
        Runs.resize(&out, to: total)
        out.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            var at = 0
            Runs.storeHeader(dense: dense, wide: wide, count: count, deltaBytes: deltaBytes, at: base, &at)
            if !dense {
                var previous = firstKey
                for key in keys {
                    Varint.store(key &- previous, at: base, &at)
                    previous = key
                }
            }
            for end in ends { Runs.storeEnd(end, wide: wide, at: base, &at) }
            precondition(at + area.count == total, "a run's header came out of another size than computed")
            area.withUnsafeBytes { if let source = $0.baseAddress { (base + at).copyMemory(from: source, byteCount: $0.count) } }
        }
    }
}

/// Edits of a stored run as bytes: one entry removed, replaced or inserted, every other entry's value and
/// checksum copied as they are, the ends shifted and the deltas spliced. O(entries) in simple loops and
/// copies, where rebuilding the run entry by entry costs several times more.
enum RunSplice {
    /// `view` with the entry at `place` removed (`removing`) and/or `value` inserted there under `key`,
    /// written to `out`; returns the new run's first key and entry count (0: nothing left). `deltas` is
    /// scratch space for the new key deltas (kept by the caller, so that an edit allocates nothing).
    static func splice(_ view: RunView, at place: RunPlace, removing: Bool, inserting key: UInt64?, value: UnsafeRawBufferPointer,
                       into out: inout [UInt8], deltas: inout [UInt8]) -> (firstKey: UInt64, count: Int)? {
        let i = place.index
        let n = view.count
        let removed = removing ? 1 : 0
        let added = key == nil ? 0 : 1
        let count = n - removed + added
        guard count > 0 else {
            out.removeAll(keepingCapacity: true)
            return (0, 0)
        }
        // The entry area: the entries before `i`, the new one, the entries after the one removed.
        guard let before = view.area(0..<i), let after = view.area((i + removed)..<n) else { return nil }
        let newEntry = key == nil ? 0 : value.count + Checksum.size
        let area = before.bytes.count + newEntry + after.bytes.count
        let wide = area > 0xFFFF
        // Keys: whether they stay consecutive (a dense view), the deltas otherwise, and the first key.
        var dense = false
        deltas.removeAll(keepingCapacity: true)
        var first = view.key
        if view.isDense {
            let last = view.key &+ UInt64(n - 1)
            switch (removing, key) {
            case (true, nil): dense = i == 0 || i == n - 1
            case (true, _?): dense = true  // replaced under the same key
            case (false, let key?): dense = (i == n && key == last &+ 1) || (i == 0 && key &+ 1 == view.key)
            case (false, nil): dense = true
            }
            if dense {
                first = i == 0 ? key ?? view.key &+ 1 : view.key
            } else {
                first = denseDeltas(view, i, removing: removing, inserting: key, into: &deltas)
            }
        } else {
            guard let spliced = spliceDeltas(view, place, removing: removing, inserting: key, into: &deltas) else { return nil }
            first = spliced
        }
        Runs.resize(&out, to: Runs.size(count: count, dense: dense, deltaBytes: deltas.count, area: area))
        out.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            var at = 0
            Runs.storeHeader(dense: dense, wide: wide, count: count, deltaBytes: deltas.count, at: base, &at)
            if !dense {
                deltas.withUnsafeBytes { if let d = $0.baseAddress { (base + at).copyMemory(from: d, byteCount: $0.count) } }
                at += deltas.count
            }
            func putEnd(_ end: Int) { Runs.storeEnd(end, wide: wide, at: base, &at) }
            for j in 0..<i { putEnd(view.entryEnd(j)) }
            if key != nil { putEnd(before.bytes.count + newEntry) }
            let shift = before.bytes.count + newEntry - after.start
            for j in (i + removed)..<n { putEnd(view.entryEnd(j) + shift) }
            if let source = before.bytes.baseAddress { (base + at).copyMemory(from: source, byteCount: before.bytes.count) }
            at += before.bytes.count
            if let key {
                Runs.withKey(key) { Checksum.seal(key: $0, value: value, to: base + at) }
                at += newEntry
            }
            if let source = after.bytes.baseAddress { (base + at).copyMemory(from: source, byteCount: after.bytes.count) }
        }
        return (first, count)
    }

    /// The deltas of a dense run's keys with the entry at `i` removed and/or `key` inserted there, appended
    /// to `out` one key at a time (no array of keys); returns the new first key.
    private static func denseDeltas(_ view: RunView, _ i: Int, removing: Bool, inserting key: UInt64?, into out: inout [UInt8]) -> UInt64 {
        var previous: UInt64?
        var first = view.key
        func emit(_ k: UInt64) {
            if let previous { Varint.append(k &- previous, to: &out) } else { out.append(0); first = k }
            previous = k
        }
        for j in 0...view.count {
            if j == i, let key { emit(key) }
            if j == view.count || (removing && j == i) { continue }
            emit(view.key &+ UInt64(j))
        }
        return first
    }

    /// The deltas of a run that is not dense, with the entry at `place` removed and/or `key` inserted
    /// there; returns the new first key (nil: the deltas are damaged).
    private static func spliceDeltas(_ view: RunView, _ place: RunPlace, removing: Bool, inserting key: UInt64?,
                                     into out: inout [UInt8]) -> UInt64? {
        let region = view.deltaRegion
        let i = place.index
        out.append(contentsOf: UnsafeRawBufferPointer(rebasing: region[..<place.deltaAt]))
        var at = place.deltaAt
        // The key after the place: the entry at `i` (kept) or the one after it (when `i` is removed).
        var nextKey: UInt64?
        if i < view.count {
            guard let delta = RunView.varint(region, &at) else { return nil }
            let atKey = (place.previous ?? view.key) &+ delta
            if removing {
                if i + 1 < view.count {
                    guard let next = RunView.varint(region, &at) else { return nil }
                    nextKey = atKey &+ next
                }
            } else {
                nextKey = atKey
            }
        }
        let previous = place.previous
        var first = view.key
        if let key {
            Varint.append(previous.map { key &- $0 } ?? 0, to: &out)
            if previous == nil { first = key }
            if let nextKey { Varint.append(nextKey &- key, to: &out) }
        } else if let nextKey {
            Varint.append(previous.map { nextKey &- $0 } ?? 0, to: &out)
            if previous == nil { first = nextKey }
        }
        out.append(contentsOf: UnsafeRawBufferPointer(rebasing: region[at...]))
        return first
    }
}
