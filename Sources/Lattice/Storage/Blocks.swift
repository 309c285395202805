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
        var n = 1
        for byte in deltas where byte < 0x80 { n += 1 }
        return n
    }

    /// Every key in order, into `keys` (emptied first); false when the block is damaged (its deltas do not
    /// lead from its first key to its last).
    func keys(into keys: inout [UInt64]) -> Bool {
        keys.removeAll(keepingCapacity: true)
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
    /// The block as it is to be stored (empty: no key left).
    case edited([UInt8])
    /// The key is not in the block (a removal) or is already (an insertion).
    case unchanged
    /// The block does not decode.
    case damaged
}

extension BlockView {
    /// The block without `key`: one scan of the deltas up to it, and the bytes spliced.
    func removing(_ key: UInt64) -> BlockEdit {
        guard key >= first, key <= last else { return .unchanged }
        if bytes.count == 8 { return key == first ? .edited([]) : .unchanged }
        let region = deltas
        guard let found = locate(key, in: region) else { return .damaged }
        guard found.key == key else { return .unchanged }
        if found.index == 0 {
            // The first key goes: the next one (its delta the first) becomes first.
            var at = 0
            guard let delta = RunView.varint(region, &at) else { return .damaged }
            return .edited(BlockView.block(first: first &+ delta, last: last, deltaBytes: region.count) {
                $0.append(contentsOf: UnsafeRawBufferPointer(rebasing: region[at...]))
            })
        }
        var at = found.end
        var next: UInt64?
        if at < region.count {
            guard let delta = RunView.varint(region, &at) else { return .damaged }
            next = delta
        }
        // A key inside: its delta and the next one's become one. The last key: the one before it is last.
        return .edited(BlockView.block(first: first, last: next == nil ? found.previous : last, deltaBytes: region.count) {
            $0.append(contentsOf: UnsafeRawBufferPointer(rebasing: region[..<found.start]))
            if let next {
                Varint.append(found.delta &+ next, to: &$0)
                $0.append(contentsOf: UnsafeRawBufferPointer(rebasing: region[at...]))
            }
        })
    }

    /// The block with `key` filed in it: one scan of the deltas up to its place, and the bytes spliced.
    func inserting(_ key: UInt64) -> BlockEdit {
        let region = deltas
        let size = region.count + 20
        if key < first {
            return .edited(BlockView.block(first: key, last: last, deltaBytes: size) {
                Varint.append(first &- key, to: &$0)
                $0.append(contentsOf: region)
            })
        }
        if key > last {
            return .edited(BlockView.block(first: first, last: key, deltaBytes: size) {
                $0.append(contentsOf: region)
                Varint.append(key &- last, to: &$0)
            })
        }
        guard let found = locate(key, in: region) else { return .damaged }
        if found.key == key { return .unchanged }
        // Between the key before (`previous`) and the one found: its delta split in two.
        return .edited(BlockView.block(first: first, last: last, deltaBytes: size) {
            $0.append(contentsOf: UnsafeRawBufferPointer(rebasing: region[..<found.start]))
            Varint.append(key &- found.previous, to: &$0)
            Varint.append(found.key &- key, to: &$0)
            $0.append(contentsOf: UnsafeRawBufferPointer(rebasing: region[found.end...]))
        })
    }

    /// The first key at least `key` (`first` <= `key` <= `last`): its position, value, the key before it,
    /// and where its delta lies in `region`; nil when the deltas are damaged.
    private func locate(_ key: UInt64, in region: UnsafeRawBufferPointer) -> (index: Int, key: UInt64, previous: UInt64, delta: UInt64, start: Int, end: Int)? {
        if key <= first { return (0, first, first, 0, 0, 0) }
        guard let base = region.baseAddress else { return nil }
        var at = 0
        var current = first
        var index = 0
        let count = region.count
        while at < count {
            // Keys an object or so apart: one byte each, checked below only when the sum passes `key`.
            let byte = base.load(fromByteOffset: at, as: UInt8.self)
            if byte != 0, byte < 0x80, current &+ UInt64(byte) < key {
                current &+= UInt64(byte)
                at &+= 1
                index &+= 1
                continue
            }
            let start = at
            guard let delta = RunView.varint(region, &at) else { return nil }
            let (sum, overflow) = current.addingReportingOverflow(delta)
            guard delta > 0, !overflow else { return nil }
            index += 1
            if sum >= key { return (index, sum, current, delta, start, at) }
            current = sum
        }
        return nil  // `key` <= `last`, so a key at least it exists: the deltas are damaged
    }

    /// A block as stored, its deltas written by `deltas` (at most `deltaBytes` of them, for the capacity):
    /// one key alone when no delta is written.
    private static func block(first: UInt64, last: UInt64, deltaBytes: Int, _ deltas: (inout [UInt8]) -> Void) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(16 + deltaBytes)
        withUnsafeBytes(of: first.bigEndian) { out.append(contentsOf: $0) }
        deltas(&out)
        guard out.count > 8 else { return out }
        withUnsafeBytes(of: last.bigEndian) { out.append(contentsOf: $0) }
        return out
    }
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
