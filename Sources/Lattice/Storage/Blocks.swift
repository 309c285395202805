/// Blocks: how a packed index (file format 6) stores the object keys filed under one index key.
///
/// An index files each object under the key of its value. LMDB's sorted duplicates of 8 bytes cost, with
/// the pages of their sub-databases, about twice their size. A packed index keeps the duplicates of a key
/// (sorted, unique 8-byte keys read as big-endian numbers) in *blocks*, each one LMDB duplicate of the
/// index key:
///
/// ```
/// one key     [8-byte key]
/// more        [8-byte first key][varint deltas, one per key after the first (each at least 1)][8-byte last key]
/// ```
///
/// Blocks sort (LMDB compares duplicates with `memcmp`) by their first key, so a key's blocks list its
/// objects in order. A block holds up to `Blocks.budget` bytes; keys an object apart take one byte each.
/// Whether an index is packed is LMDB's own flag for the table: one created with fixed-size duplicates
/// (`MDB_DUPFIXED`, every file before format 6, and an upgraded one) keeps one 8-byte duplicate per object.
enum Blocks {
    /// Largest block (LMDB keeps sorted duplicates up to 511 bytes): about 200 keys an object or so
    /// apart, so that filing or removing one inside a block reads and writes little.
    static let budget = 160

    /// A block of one key.
    static func single(_ key: UInt64) -> [UInt8] {
        withUnsafeBytes(of: key.bigEndian) { Array($0) }
    }
}

/// A block read where it is. Every offset is checked against its size: damage gives nil.
struct BlockView {
    let bytes: UnsafeRawBufferPointer
    let first: UInt64
    let last: UInt64

    init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count == 8 || bytes.count >= 17 else { return nil }
        self.bytes = bytes
        first = Runs.number(bytes)
        last = bytes.count == 8 ? first : Runs.number(UnsafeRawBufferPointer(rebasing: bytes[(bytes.count - 8)...]))
        guard last >= first else { return nil }
    }

    /// The deltas, as stored.
    var deltas: UnsafeRawBufferPointer {
        bytes.count == 8 ? UnsafeRawBufferPointer(start: bytes.baseAddress, count: 0) : UnsafeRawBufferPointer(rebasing: bytes[8..<(bytes.count - 8)])
    }

    /// Number of keys (the deltas' bytes that end a varint, plus one).
    var count: Int {
        let region = deltas
        guard let base = region.baseAddress else { return 1 }
        var n = 1
        var at = 0
        while at + 8 <= region.count {
            // Eight bytes at once: those with the high bit clear.
            let word = base.loadUnaligned(fromByteOffset: at, as: UInt64.self)
            n += 8 - (word & 0x8080_8080_8080_8080).nonzeroBitCount
            at += 8
        }
        while at < region.count {
            if base.load(fromByteOffset: at, as: UInt8.self) < 0x80 { n += 1 }
            at += 1
        }
        return n
    }

    /// Every key in order, into `keys` (emptied first); false when the block is damaged (its deltas do not
    /// lead from its first key to its last).
    func keys(into keys: inout [UInt64]) -> Bool {
        keys.removeAll(keepingCapacity: true)
        keys.reserveCapacity(count)
        keys.append(first)
        let region = deltas
        var at = 0
        var current = first
        while at < region.count {
            guard let delta = RunView.varint(region, &at), delta > 0 else { return false }
            let (sum, overflow) = current.addingReportingOverflow(delta)
            guard !overflow else { return false }
            current = sum
            keys.append(current)
        }
        return current == last
    }
}

/// What an edit of a block found.
enum BlockEdit {
    /// The block as it is to be stored (empty: no key left) was written to the edit's output.
    case edited
    /// The key is not in the block (a removal) or is already (an insertion).
    case unchanged
    /// The block does not decode.
    case damaged
}

extension BlockView {
    /// The block without `key`, into `out` (replaced; it must not hold this view's bytes): one scan of
    /// the deltas up to it, and the bytes spliced.
    func removing(_ key: UInt64, into out: inout [UInt8]) -> BlockEdit {
        guard key >= first, key <= last else { return .unchanged }
        if bytes.count == 8 {
            guard key == first else { return .unchanged }
            out.removeAll(keepingCapacity: true)
            return .edited
        }
        let region = deltas
        guard let found = locate(key, in: region) else { return .damaged }
        guard found.key == key else { return .unchanged }
        if found.isFirst {
            // The first key goes: the next one (its delta the first) becomes first.
            var at = 0
            guard let delta = RunView.varint(region, &at) else { return .damaged }
            BlockView.block(first: first &+ delta, last: last, head: region.bytes(from: at), into: &out)
            return .edited
        }
        var at = found.end
        if at < region.count {
            // A key inside: its delta and the next one's become one.
            guard let next = RunView.varint(region, &at) else { return .damaged }
            BlockView.block(first: first, last: last, head: region.bytes(upTo: found.start), found.delta &+ next,
                            tail: region.bytes(from: at), into: &out)
        } else {
            // The last key: the one before it is last.
            BlockView.block(first: first, last: found.previous, head: region.bytes(upTo: found.start), into: &out)
        }
        return .edited
    }

    /// The block with `key` filed in it, into `out` (replaced; it must not hold this view's bytes): one
    /// scan of the deltas up to its place, and the bytes spliced.
    func inserting(_ key: UInt64, into out: inout [UInt8]) -> BlockEdit {
        let region = deltas
        if key < first {
            BlockView.block(first: key, last: last, head: .empty, first &- key, tail: region, into: &out)
            return .edited
        }
        if key > last {
            BlockView.block(first: first, last: key, head: region, key &- last, into: &out)
            return .edited
        }
        guard let found = locate(key, in: region) else { return .damaged }
        if found.key == key { return .unchanged }
        // Between the key before (`previous`) and the one found: its delta split in two.
        BlockView.block(first: first, last: last, head: region.bytes(upTo: found.start), key &- found.previous, found.key &- key,
                        tail: region.bytes(from: found.end), into: &out)
        return .edited
    }

    /// The first key at least `key` (`first` <= `key` <= `last`): whether it is the first key, its value,
    /// the key before it, and where its delta lies in `region`; nil when the deltas are damaged.
    private func locate(_ key: UInt64, in region: UnsafeRawBufferPointer) -> (isFirst: Bool, key: UInt64, previous: UInt64, delta: UInt64, start: Int, end: Int)? {
        if key <= first { return (true, first, first, 0, 0, 0) }
        guard let base = region.baseAddress else { return nil }
        // From the nearer end: a key in the upper half of the block's range is found from its last key.
        if key - first > last - key { return locateFromLast(key, in: region) }
        var at = 0
        var current = first
        let count = region.count
        while at < count {
            // Deltas of one and two bytes (keys less than 16,384 apart) are read here; longer ones below.
            let byte = UInt64(base.load(fromByteOffset: at, as: UInt8.self))
            var delta = byte
            var end = at &+ 1
            if byte >= 0x80 {
                let second = end < count ? UInt64(base.load(fromByteOffset: end, as: UInt8.self)) : 0x80
                if second < 0x80 {
                    delta = (byte & 0x7F) | second << 7
                    end &+= 1
                } else {
                    end = at
                    guard let long = RunView.varint(region, &end) else { return nil }
                    delta = long
                }
            }
            let (sum, overflow) = current.addingReportingOverflow(delta)
            guard delta > 0, !overflow else { return nil }
            if sum >= key { return (false, sum, current, delta, at, end) }
            current = sum
            at = end
        }
        return nil  // `key` <= `last`, so a key at least it exists: the deltas are damaged
    }

    /// `locate` (for `first` < `key` <= `last`) reading the deltas backwards from the last key: a varint
    /// ends with the byte whose high bit is clear, so the one before a delta's first byte ends the delta
    /// before.
    private func locateFromLast(_ key: UInt64, in region: UnsafeRawBufferPointer) -> (isFirst: Bool, key: UInt64, previous: UInt64, delta: UInt64, start: Int, end: Int)? {
        guard let base = region.baseAddress else { return nil }
        func byte(_ i: Int) -> UInt8 { base.load(fromByteOffset: i, as: UInt8.self) }
        var end = region.count
        var current = last
        while end > 0 {
            let terminal = UInt64(byte(end - 1))
            guard terminal < 0x80 else { return nil }  // the deltas end inside a varint
            var start = end - 1
            var delta = terminal
            if start > 0, byte(start - 1) >= 0x80 {
                // A delta of two bytes (keys less than 16,384 apart) read here; longer ones below.
                start -= 1
                delta = terminal << 7 | UInt64(byte(start) & 0x7F)
                if start > 0, byte(start - 1) >= 0x80 {
                    while start > 0, byte(start - 1) >= 0x80, end - start < 10 { start -= 1 }
                    guard start == 0 || byte(start - 1) < 0x80 else { return nil }  // longer than 64 bits
                    delta = 0
                    for i in stride(from: end - 1, through: start, by: -1) { delta = delta << 7 | UInt64(byte(i) & 0x7F) }
                }
            }
            guard delta > 0, delta <= current - first else { return nil }
            let previous = current - delta
            if previous < key { return (false, current, previous, delta, start, end) }
            current = previous
            end = start
        }
        return nil  // `first` < `key`: the deltas were expected to reach below it
    }

    /// A block as stored, into `out` (replaced, its storage kept): `first`, the deltas `head`, `a`, `b`
    /// (varints, when given) and `tail`, then `last`; one key alone when there are no deltas.
    private static func block(first: UInt64, last: UInt64, head: UnsafeRawBufferPointer, _ a: UInt64? = nil, _ b: UInt64? = nil,
                              tail: UnsafeRawBufferPointer = .empty, into out: inout [UInt8]) {
        let deltaBytes = head.count + (a.map(Runs.varintSize) ?? 0) + (b.map(Runs.varintSize) ?? 0) + tail.count
        Runs.resize(&out, to: deltaBytes == 0 ? 8 : 16 + deltaBytes)
        out.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            base.storeBytes(of: first.bigEndian, as: UInt64.self)
            var at = 8
            if let source = head.baseAddress { (base + at).copyMemory(from: source, byteCount: head.count) }
            at += head.count
            if let a { Varint.store(a, at: base, &at) }
            if let b { Varint.store(b, at: base, &at) }
            if let source = tail.baseAddress { (base + at).copyMemory(from: source, byteCount: tail.count) }
            at += tail.count
            if deltaBytes > 0 { base.storeBytes(of: last.bigEndian, toByteOffset: at, as: UInt64.self) }
        }
    }
}

fileprivate extension UnsafeRawBufferPointer {
    /// No bytes.
    static var empty: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: nil, count: 0) }

    /// The bytes from `start` on, as a buffer of their own.
    func bytes(from start: Int) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: self[start...]) }

    /// The bytes before `end`, as a buffer of their own.
    func bytes(upTo end: Int) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: self[..<end]) }
}

/// Builds a block from keys in increasing order.
struct BlockWriter {
    private(set) var bytes: [UInt8] = []
    private(set) var first: UInt64 = 0
    private(set) var last: UInt64 = 0
    private(set) var count = 0
    /// Bytes of the deltas.
    private var deltas: [UInt8] = []

    init() {}

    /// A writer holding the keys of `view`, ready to take keys above its last.
    init(_ view: BlockView) {
        first = view.first
        last = view.last
        count = view.count
        deltas = Array(view.deltas)
    }

    /// The block's size with `key` appended.
    func size(adding key: UInt64) -> Int {
        count == 0 ? 8 : 16 + deltas.count + Runs.varintSize(key &- last)
    }

    /// The block's size.
    var size: Int { count <= 1 ? 8 : 16 + deltas.count }

    mutating func append(_ key: UInt64) {
        if count == 0 {
            first = key
        } else {
            Varint.append(key &- last, to: &deltas)
        }
        last = key
        count += 1
    }

    /// The block as stored.
    func encoded() -> [UInt8] {
        var out = Blocks.single(first)
        guard count > 1 else { return out }
        out.append(contentsOf: deltas)
        withUnsafeBytes(of: last.bigEndian) { out.append(contentsOf: $0) }
        return out
    }

    /// `keys` (increasing) as blocks of at most `Blocks.budget` bytes.
    static func blocks(_ keys: some Sequence<UInt64>) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var writer = BlockWriter()
        for key in keys {
            if writer.count > 0 && writer.size(adding: key) > Blocks.budget {
                out.append(writer.encoded())
                writer = BlockWriter()
            }
            writer.append(key)
        }
        if writer.count > 0 { out.append(writer.encoded()) }
        return out
    }
}
