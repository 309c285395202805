/// The elements of one `List` property of one object, stored in chunks.
///
/// Keys in `l:<Class>.<prop>` are `[8-byte owner key][u32 big-endian chunk id]`. Chunk 0 is the
/// directory: `[varint next id][varint n]` then n × `[varint chunk id][varint count]`, in list order.
/// Every other chunk holds up to 256 element payloads (and at most 64 KiB unless it holds one) in the
/// record layout. Reading entry i reads the directory and one chunk and decodes one payload;
/// appending, inserting, replacing or removing one entry rewrites one chunk and the directory:
/// O(n/256 + 256) work, never the whole list. An append that fits the last chunk copies that chunk's
/// bytes as they are.
///
/// Operations take the directory the caller decoded (callers cache it per view of the file) and update
/// it in place when they change it.
struct ListTable {
    let table: Table
    let owner: Int64

    static let chunkCapacity = 256
    static let chunkBytes = 64 << 10

    struct Directory {
        var nextID: UInt32 = 1
        var chunks: [(id: UInt32, count: Int)] = []
        var total: Int { chunks.reduce(0) { $0 + $1.count } }
    }

    private func key(_ chunk: UInt32) -> [UInt8] {
        var key = OwnerKey.prefix(owner)
        withUnsafeBytes(of: chunk.bigEndian) { key.append(contentsOf: $0) }
        return key
    }

    /// Decodes the directory (empty when the list has no entry); throws `corruptFile` when it does not decode.
    func directory(_ txn: Transaction) throws -> Directory {
        try key(0).withUnsafeBytes { k in
            try txn.get(table, k) { bytes -> Directory in
                guard let bytes else { return Directory() }
                guard let directory = ListTable.decodeDirectory(bytes) else {
                    throw LatticeError.corruptFile(path: txn.env.path, reason: "the list directory of object key \(owner) in "
                        + "'\(txn.env.seals.name(of: table))' does not decode.")
                }
                return directory
            }
        }
    }

    /// A directory's bytes decoded strictly: nil unless every chunk id is below the next id and every
    /// count within a chunk's capacity, with no byte left over.
    static func decodeDirectory(_ bytes: Bytes) -> Directory? {
        var at = 0
        func next() -> UInt64? {
            guard at < bytes.count else { return nil }
            let value = Varint.read(bytes, &at)
            return at <= bytes.count ? value : nil
        }
        guard let nextID = next(), nextID <= UInt64(UInt32.max), let n = next(), n <= UInt64(bytes.count) else { return nil }
        var directory = Directory(nextID: UInt32(nextID))
        directory.chunks.reserveCapacity(Int(n))
        for _ in 0..<n {
            guard let id = next(), let count = next(), id > 0, id < nextID, count > 0, count <= UInt64(chunkCapacity) else { return nil }
            directory.chunks.append((UInt32(id), Int(count)))
        }
        return at == bytes.count ? directory : nil
    }

    /// (chunk position, offset in chunk) of entry `index`; `index == total` is just past the last entry.
    private func locate(_ index: Int, in directory: Directory) -> (chunk: Int, offset: Int) {
        var remaining = index
        for (i, chunk) in directory.chunks.enumerated() {
            if remaining < chunk.count { return (i, remaining) }
            remaining -= chunk.count
        }
        return (directory.chunks.count - 1, directory.chunks.last?.count ?? 0)
    }

    /// Passes the payload of entry `index` to `body`; nil when out of range.
    func withPayload<R>(_ txn: Transaction, at index: Int, in directory: Directory,
                        _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        guard index >= 0, index < directory.total else { return nil }
        let (chunk, offset) = locate(index, in: directory)
        let entry = directory.chunks[chunk]
        return try key(entry.id).withUnsafeBytes { k in
            try txn.get(table, k) { bytes in
                guard let view = bytes.flatMap(RecordView.init), view.count == entry.count, let payload = view.payload(offset) else {
                    throw damagedChunk(txn, entry.id, found: bytes)
                }
                return try body(payload)
            }
        }
    }

    /// The payloads of the chunk a directory entry names (which must hold `count` of them).
    private func chunk(_ txn: Transaction, _ entry: (id: UInt32, count: Int)) throws -> [[UInt8]] {
        try key(entry.id).withUnsafeBytes { k in
            try txn.get(table, k) { bytes in
                guard let view = bytes.flatMap(RecordView.init), view.count == entry.count else {
                    throw damagedChunk(txn, entry.id, found: bytes)
                }
                return (0..<view.count).map { Array(view.payload($0) ?? UnsafeRawBufferPointer(start: nil, count: 0)) }
            }
        }
    }

    /// A chunk the directory names that is missing or disagrees with it: the file is damaged (a list
    /// read never comes back shorter than it is).
    private func damagedChunk(_ txn: Transaction, _ id: UInt32, found bytes: UnsafeRawBufferPointer?) -> LatticeError {
        .corruptFile(path: txn.env.path, reason: "list chunk \(id) of object key \(owner) in '\(txn.env.seals.name(of: table))' is "
            + (bytes == nil ? "missing." : "not what its directory says."))
    }

    /// Every payload, in order.
    func allPayloads(_ txn: Transaction, in directory: Directory) throws -> [[UInt8]] {
        try directory.chunks.flatMap { try chunk(txn, $0) }
    }

    // MARK: Writes

    private func writeChunk(_ txn: Transaction, _ id: UInt32, _ payloads: ArraySlice<[UInt8]>) throws {
        var bytes: [UInt8] = []
        var ends: [Int] = []
        ListTable.append(payloads, to: &bytes, ends: &ends)
        try writeChunk(txn, id, bytes: bytes, ends: ends)
    }

    /// Writes a chunk whose payloads are `bytes`, entry i ending at `ends[i]`.
    private func writeChunk(_ txn: Transaction, _ id: UInt32, bytes: [UInt8], ends: [Int]) throws {
        var record: [UInt8] = []
        Record.assemble(payloads: bytes, ends: ends, into: &record)
        _ = try key(id).withUnsafeBytes { k in try record.withUnsafeBytes { try txn.put(table, k, $0) } }
    }

    private static func append(_ payloads: some Sequence<[UInt8]>, to bytes: inout [UInt8], ends: inout [Int]) {
        for payload in payloads {
            bytes.append(contentsOf: payload)
            ends.append(bytes.count)
        }
    }

    private func deleteChunk(_ txn: Transaction, _ id: UInt32) throws {
        _ = try key(id).withUnsafeBytes { try txn.delete(table, $0) }
    }

    private func writeDirectory(_ txn: Transaction, _ directory: Directory) throws {
        if directory.chunks.isEmpty { return try deleteChunk(txn, 0) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(10 + directory.chunks.count * 4)
        Varint.append(UInt64(directory.nextID), to: &bytes)
        Varint.append(UInt64(directory.chunks.count), to: &bytes)
        for chunk in directory.chunks {
            Varint.append(UInt64(chunk.id), to: &bytes)
            Varint.append(UInt64(chunk.count), to: &bytes)
        }
        _ = try key(0).withUnsafeBytes { k in try bytes.withUnsafeBytes { try txn.put(table, k, $0) } }
    }

    /// Cuts payloads into chunk-sized runs.
    private static func pieces(_ payloads: [[UInt8]]) -> [ArraySlice<[UInt8]>] {
        var out: [ArraySlice<[UInt8]>] = []
        var start = 0
        var bytes = 0
        for (i, payload) in payloads.enumerated() {
            if i > start && (i - start == chunkCapacity || bytes + payload.count > chunkBytes) {
                out.append(payloads[start..<i])
                start = i
                bytes = 0
            }
            bytes += payload.count
        }
        if start < payloads.count { out.append(payloads[start...]) }
        return out
    }

    /// Inserts payloads before entry `index` (`index == count` appends).
    func insert(_ txn: Transaction, _ payloads: [[UInt8]], at index: Int, directory: inout Directory) throws {
        guard !payloads.isEmpty else { return }
        if index == directory.total, !directory.chunks.isEmpty, try extendLastChunk(txn, &directory, with: payloads) {
            return try writeDirectory(txn, directory)
        }
        let (chunk, offset) = locate(index, in: directory)
        let position: Int
        var existing: [[UInt8]]
        if directory.chunks.isEmpty || (offset == directory.chunks[chunk].count && offset >= ListTable.chunkCapacity) {
            // Appending past a full (or missing) last chunk starts a new one instead of rewriting it.
            directory.chunks.append((directory.nextID, 0))
            directory.nextID += 1
            position = directory.chunks.count - 1
            existing = payloads
        } else {
            position = chunk
            existing = try self.chunk(txn, directory.chunks[chunk])
            existing.insert(contentsOf: payloads, at: offset)
        }
        var entries: [(id: UInt32, count: Int)] = []
        for (i, piece) in ListTable.pieces(existing).enumerated() {
            let id: UInt32
            if i == 0 {
                id = directory.chunks[position].id
            } else {
                id = directory.nextID
                directory.nextID += 1
            }
            try writeChunk(txn, id, piece)
            entries.append((id, piece.count))
        }
        directory.chunks.replaceSubrange(position...position, with: entries)
        try writeDirectory(txn, directory)
    }

    /// Appends `payloads` to the last chunk when they fit in it, copying its bytes as they are instead of
    /// splitting it into one array per entry; false, with nothing written, when they do not fit.
    private func extendLastChunk(_ txn: Transaction, _ directory: inout Directory, with payloads: [[UInt8]]) throws -> Bool {
        let last = directory.chunks.count - 1
        guard directory.chunks[last].count + payloads.count <= ListTable.chunkCapacity else { return false }
        guard var (bytes, ends) = try key(directory.chunks[last].id).withUnsafeBytes({ k in
            try txn.get(table, k) { $0.flatMap(RecordView.init)?.payloads() }
        }), ends.count == directory.chunks[last].count else { return false }
        ListTable.append(payloads, to: &bytes, ends: &ends)
        guard bytes.count <= ListTable.chunkBytes else { return false }
        try writeChunk(txn, directory.chunks[last].id, bytes: bytes, ends: ends)
        directory.chunks[last].count = ends.count
        return true
    }

    /// Removes the entries in `range` and returns their payloads.
    func remove(_ txn: Transaction, _ range: Range<Int>, directory: inout Directory) throws -> [[UInt8]] {
        guard !range.isEmpty else { return [] }
        var removed: [[UInt8]] = []
        var (position, offset) = locate(range.lowerBound, in: directory)
        var remaining = range.count
        while remaining > 0 && position < directory.chunks.count {
            var payloads = try chunk(txn, directory.chunks[position])
            let n = min(remaining, payloads.count - offset)
            removed.append(contentsOf: payloads[offset..<offset + n])
            payloads.removeSubrange(offset..<offset + n)
            remaining -= n
            if payloads.isEmpty {
                try deleteChunk(txn, directory.chunks[position].id)
                directory.chunks.remove(at: position)
            } else {
                try writeChunk(txn, directory.chunks[position].id, payloads[...])
                directory.chunks[position].count = payloads.count
                position += 1
            }
            offset = 0
        }
        try writeDirectory(txn, directory)
        return removed
    }

    /// Replaces entry `index`; returns the payload it held.
    func replace(_ txn: Transaction, at index: Int, with payload: [UInt8], in directory: Directory) throws -> [UInt8] {
        let (position, offset) = locate(index, in: directory)
        var payloads = try chunk(txn, directory.chunks[position])
        let old = payloads[offset]
        payloads[offset] = payload
        try writeChunk(txn, directory.chunks[position].id, payloads[...])
        return old
    }
}
