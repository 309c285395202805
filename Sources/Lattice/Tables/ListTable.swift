/// The elements of one `List` property of one object, stored in chunks.
///
/// Keys in `l:<Class>.<prop>` are `[8-byte owner key][u32 big-endian chunk id]`. Chunk 0 is the
/// directory: `[varint next id][varint n]` then n × `[varint chunk id][varint count]`, in list order.
/// Every other chunk holds up to 256 element payloads (and at most 64 KiB unless it holds one) in the
/// record layout. Reading entry i reads one chunk and decodes one payload (the directory is decoded once
/// per view and locates a chunk by binary search); inserting, replacing or removing one entry rewrites
/// one chunk and the directory, working on the chunk's bytes (never one array per entry). An append
/// that fits the last chunk copies its bytes and offsets as they are and patches the directory's last
/// entry, leaving the directory for the caller to store (once per write transaction): O(256) work,
/// whatever the length of the list.
///
/// Operations take the directory the caller decoded (callers cache it per view of the file) and update
/// it in place when they change it.
struct ListTable {
    let table: Table
    let owner: Int64

    static let chunkCapacity = 256
    static let chunkBytes = 64 << 10

    /// A decoded directory: the chunks in list order, where each begins, and its encoding.
    struct Directory {
        private(set) var nextID: UInt32 = 1
        private(set) var chunks: [(id: UInt32, count: Int)] = []
        /// `starts[i]`: the list position of chunk i's first entry.
        private var starts: [Int] = []
        /// The number of entries.
        private(set) var total = 0
        /// The directory's bytes as stored, when known, and where the last chunk's entry begins in them.
        private var encoded: [UInt8]?
        private var lastEntry = 0

        init() {}

        /// A directory read from storage; `encoded` its bytes, the last chunk's entry starting at `lastEntry`.
        init(nextID: UInt32, chunks: [(id: UInt32, count: Int)], encoded: [UInt8]?, lastEntry: Int) {
            self.nextID = nextID
            self.chunks = chunks
            reindex(from: 0)
            if !chunks.isEmpty, let encoded {
                self.encoded = encoded
                self.lastEntry = lastEntry
            }
        }

        /// (chunk position, offset in chunk) of entry `index`, by binary search; `index == total` is just
        /// past the last entry.
        func locate(_ index: Int) -> (chunk: Int, offset: Int) {
            guard !chunks.isEmpty else { return (-1, 0) }
            if index >= total { return (chunks.count - 1, chunks[chunks.count - 1].count) }
            var low = 0
            var high = chunks.count - 1
            while low < high {
                let mid = (low + high + 1) / 2
                if starts[mid] <= index { low = mid } else { high = mid - 1 }
            }
            return (low, index - starts[low])
        }

        /// A fresh chunk id.
        mutating func newID() -> UInt32 {
            defer { nextID += 1 }
            encoded = nil
            return nextID
        }

        /// Sets the number of entries of chunk `i`.
        mutating func setCount(_ count: Int, ofChunk i: Int) {
            let delta = count - chunks[i].count
            chunks[i].count = count
            total += delta
            for j in (i + 1)..<chunks.count { starts[j] += delta }
            guard i == chunks.count - 1, var bytes = encoded else { return encoded = nil }
            // Only the last entry changed: patch it in the stored bytes instead of encoding them all.
            encoded = nil
            bytes.removeSubrange(lastEntry...)
            Varint.append(UInt64(chunks[i].id), to: &bytes)
            Varint.append(UInt64(count), to: &bytes)
            encoded = bytes
        }

        /// Replaces the chunks at `range` with `entries`.
        mutating func replaceChunks(_ range: Range<Int>, with entries: [(id: UInt32, count: Int)]) {
            chunks.replaceSubrange(range, with: entries)
            encoded = nil
            reindex(from: range.lowerBound)
        }

        private mutating func reindex(from i: Int) {
            starts.removeSubrange(min(i, starts.count)...)
            var at = i == 0 ? 0 : starts[i - 1] + chunks[i - 1].count
            for chunk in chunks[i...] {
                starts.append(at)
                at += chunk.count
            }
            total = at
        }

        /// The bytes to store (empty: the list is empty and the directory is deleted).
        mutating func encode() -> [UInt8] {
            if chunks.isEmpty { return [] }
            if let encoded { return encoded }
            var bytes: [UInt8] = []
            bytes.reserveCapacity(10 + chunks.count * 4)
            Varint.append(UInt64(nextID), to: &bytes)
            Varint.append(UInt64(chunks.count), to: &bytes)
            for chunk in chunks.dropLast() {
                Varint.append(UInt64(chunk.id), to: &bytes)
                Varint.append(UInt64(chunk.count), to: &bytes)
            }
            lastEntry = bytes.count
            Varint.append(UInt64(chunks[chunks.count - 1].id), to: &bytes)
            Varint.append(UInt64(chunks[chunks.count - 1].count), to: &bytes)
            encoded = bytes
            return bytes
        }
    }

    /// Passes the key of chunk `chunk` of this list (built on the stack) to `body`.
    private func withKey<R>(_ chunk: UInt32, _ body: (Bytes) throws -> R) rethrows -> R {
        try KeyCodec.withObjectKey(owner, suffix: chunk, body)
    }

    /// Decodes the directory (empty when the list has no entry); throws `corruptFile` when it does not decode.
    func directory(_ txn: Transaction) throws -> Directory {
        try withDirectoryBytes(txn) { bytes in
            guard let bytes else { return Directory() }
            return try ListTable.decodeDirectory(bytes, keepingBytes: true) ?? { throw undecodableDirectory(txn) }()
        }
    }

    /// The number of entries, read without decoding the directory into arrays.
    func total(_ txn: Transaction) throws -> Int {
        try withDirectoryBytes(txn) { bytes in
            guard let bytes else { return 0 }
            return try ListTable.directoryTotal(bytes) ?? { throw undecodableDirectory(txn) }()
        }
    }

    /// Passes the stored directory's bytes (nil: none, the list is empty) to `body`.
    private func withDirectoryBytes<R>(_ txn: Transaction, _ body: (Bytes?) throws -> R) throws -> R {
        try withKey(0) { k in try txn.get(table, k, body) }   // chunk 0 is the directory
    }

    private func undecodableDirectory(_ txn: Transaction) -> LatticeError {
        .corruptFile(path: txn.env.path, reason: "the list directory of object key \(owner) in '\(txn.env.seals.name(of: table))' does not decode.")
    }

    /// A directory's bytes decoded strictly: nil unless every chunk id is below the next id and every
    /// count within a chunk's capacity, with no byte left over.
    static func decodeDirectory(_ bytes: Bytes, keepingBytes: Bool = false) -> Directory? {
        var chunks: [(id: UInt32, count: Int)] = []
        var lastEntry = 0
        guard let nextID = walkDirectory(bytes, reserve: { chunks.reserveCapacity($0) }, { id, count, at in
            chunks.append((id, count))
            lastEntry = at
        }) else { return nil }
        return Directory(nextID: nextID, chunks: chunks, encoded: keepingBytes ? Array(bytes) : nil, lastEntry: lastEntry)
    }

    /// The number of entries a directory's bytes count, checked as strictly as `decodeDirectory` (nil when
    /// they do not decode) but decoded into nothing: `List.count` of a list whose directory is not cached.
    static func directoryTotal(_ bytes: Bytes) -> Int? {
        var total = 0
        return walkDirectory(bytes, reserve: { _ in }, { _, count, _ in total += count }) == nil ? nil : total
    }

    /// Passes every payload, in order, to `body` as `forEachPayload(_:in:_:)` does, with `directory` when
    /// the caller has it, otherwise reading the stored one where it is instead of decoding it (nothing
    /// allocated for a list read once, as in a loop over the lists of many owners); `reserve` first
    /// receives the number of entries.
    func forEachPayload(_ txn: Transaction, in directory: Directory?, reserve: (Int) -> Void,
                        _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        if let directory {
            reserve(directory.total)
            return try forEachPayload(txn, in: directory, body)
        }
        try withDirectoryBytes(txn) { bytes in
            guard let bytes else { return }
            guard let total = ListTable.directoryTotal(bytes) else { throw undecodableDirectory(txn) }
            reserve(total)
            _ = try ListTable.walkDirectory(bytes, reserve: { _ in }) { id, count, _ in try forEachPayload(txn, ofChunk: (id, count), body) }
        }
    }

    /// Checks a directory's bytes, passing each chunk entry (id, count, where the entry begins) to `chunk`
    /// in order after `reserve(n)`; returns the next chunk id, or nil when the bytes do not decode.
    @inline(__always)
    private static func walkDirectory(_ bytes: Bytes, reserve: (Int) -> Void,
                                      _ chunk: (_ id: UInt32, _ count: Int, _ at: Int) throws -> Void) rethrows -> UInt32? {
        var at = 0
        func next() -> UInt64? {
            guard at < bytes.count else { return nil }
            let value = Varint.read(bytes, &at)
            return at <= bytes.count ? value : nil
        }
        guard let nextID = next(), nextID <= UInt64(UInt32.max), let n = next(), n <= UInt64(bytes.count) else { return nil }
        reserve(Int(n))
        for _ in 0..<n {
            let entry = at
            guard let id = next(), let count = next(), id > 0, id < nextID, count > 0, count <= UInt64(chunkCapacity) else { return nil }
            try chunk(UInt32(id), Int(count), entry)
        }
        return at == bytes.count ? UInt32(nextID) : nil
    }

    /// Passes the payload of entry `index` to `body`; nil when out of range.
    func withPayload<R>(_ txn: Transaction, at index: Int, in directory: Directory,
                        _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        guard index >= 0, index < directory.total else { return nil }
        let (chunk, offset) = directory.locate(index)
        return try withPayload(txn, ofChunk: directory.chunks[chunk], at: offset, body)
    }

    /// The chunk holding entry `index`, as `txn` returns it (where the map has it when `txn` lends records:
    /// valid while its snapshot is open), and the position of its first entry; nil when out of range.
    func chunk(_ txn: Transaction, holding index: Int, in directory: Directory) throws -> (start: Int, view: RecordView)? {
        guard index >= 0, index < directory.total else { return nil }
        let (chunk, offset) = directory.locate(index)
        return (index - offset, try withChunk(txn, directory.chunks[chunk]) { $0 })
    }

    /// Passes the payload of the first (or last) entry to `body`, reading the stored directory where it
    /// is (`first`/`last` of a list read once); nil when the list is empty.
    func withEndPayload<R>(_ txn: Transaction, first: Bool, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        try withDirectoryBytes(txn) { bytes in
            guard let bytes else { return nil }
            var end: (id: UInt32, count: Int)?
            guard ListTable.walkDirectory(bytes, reserve: { _ in }, { id, count, _ in
                if !first || end == nil { end = (id, count) }
            }) != nil else { throw undecodableDirectory(txn) }
            guard let end else { return nil }
            return try withPayload(txn, ofChunk: end, at: first ? 0 : end.count - 1, body)
        }
    }

    /// Passes payload `offset` of the chunk a directory entry names (which must hold `count` of them) to `body`.
    private func withPayload<R>(_ txn: Transaction, ofChunk entry: (id: UInt32, count: Int), at offset: Int,
                                _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try withChunk(txn, entry) { view in
            guard let payload = view.payload(offset) else { throw damagedChunk(txn, entry.id, found: view.bytes) }
            return try body(payload)
        }
    }

    /// Passes the chunk a directory entry names to `body`, where the snapshot has it; throws `corruptFile`
    /// unless it holds the `count` payloads the directory says.
    private func withChunk<R>(_ txn: Transaction, _ entry: (id: UInt32, count: Int), _ body: (RecordView) throws -> R) throws -> R {
        try withKey(entry.id) { k in try txn.get(table, k) { try body(checkedChunk(txn, entry, bytes: $0)) } }
    }

    /// The chunk a directory entry names, read from `bytes`; throws `corruptFile` when they are missing
    /// or do not hold the `count` payloads the directory says.
    private func checkedChunk(_ txn: Transaction, _ entry: (id: UInt32, count: Int), bytes: UnsafeRawBufferPointer?) throws -> RecordView {
        guard let view = bytes.flatMap(RecordView.init), view.count == entry.count else {
            throw damagedChunk(txn, entry.id, found: bytes)
        }
        return view
    }

    /// The payloads of the chunk a directory entry names (which must hold `count` of them): their bytes
    /// back to back and where each ends.
    private func chunk(_ txn: Transaction, _ entry: (id: UInt32, count: Int)) throws -> Chunk {
        try withChunk(txn, entry) { view in
            let (payloads, ends) = view.payloads()
            return Chunk(bytes: payloads, ends: ends)
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
        var out: [[UInt8]] = []
        out.reserveCapacity(directory.total)
        try forEachPayload(txn, in: directory) { out.append(Array($0)) }
        return out
    }

    /// Passes every payload, in order, to `body`: one lookup per chunk, nothing copied.
    func forEachPayload(_ txn: Transaction, in directory: Directory, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        for entry in directory.chunks { try forEachPayload(txn, ofChunk: entry, body) }
    }

    /// Passes every payload of the chunk a directory entry names (which must hold `count` of them) to `body`.
    private func forEachPayload(_ txn: Transaction, ofChunk entry: (id: UInt32, count: Int),
                                _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        try withChunk(txn, entry) { view in
            for i in 0..<view.count { try body(view.payload(i) ?? UnsafeRawBufferPointer(start: nil, count: 0)) }
        }
    }

    // MARK: Writes

    /// Writes a chunk.
    private func writeChunk(_ txn: Transaction, _ id: UInt32, _ chunk: Chunk) throws {
        var record: [UInt8] = []
        Record.assemble(payloads: chunk.bytes, ends: chunk.ends, into: &record)
        try writeChunk(txn, id, record: record)
    }

    private func writeChunk(_ txn: Transaction, _ id: UInt32, record: [UInt8]) throws {
        _ = try withKey(id) { k in try record.withUnsafeBytes { try txn.put(table, k, $0) } }
    }

    private func deleteChunk(_ txn: Transaction, _ id: UInt32) throws {
        _ = try withKey(id) { try txn.delete(table, $0) }
    }

    private func writeDirectory(_ txn: Transaction, _ directory: inout Directory) throws {
        let bytes = directory.encode()
        if bytes.isEmpty { return try deleteChunk(txn, 0) }
        _ = try withKey(0) { k in try bytes.withUnsafeBytes { try txn.put(table, k, $0) } }
    }

    /// Writes `chunk` as the chunks replacing directory position `position` (none when it is empty; more
    /// than one when it outgrew a chunk), the first keeping `id`.
    private func store(_ txn: Transaction, _ chunk: Chunk, at position: Int, id: UInt32, in directory: inout Directory) throws {
        var entries: [(id: UInt32, count: Int)] = []
        for (i, piece) in chunk.pieces().enumerated() {
            let pieceID = i == 0 ? id : directory.newID()
            try writeChunk(txn, pieceID, piece)
            entries.append((pieceID, piece.count))
        }
        if entries.isEmpty { try deleteChunk(txn, id) }
        directory.replaceChunks(position..<position + 1, with: entries)
    }

    /// Stores `directory` (deletes it when the list is empty).
    func store(_ txn: Transaction, _ directory: inout Directory) throws { try writeDirectory(txn, &directory) }

    /// Inserts payloads before entry `index` (`index == count` appends). Returns whether the directory
    /// was stored: an append to the last chunk leaves it to the caller unless `storingDirectory`.
    @discardableResult
    func insert(_ txn: Transaction, _ payloads: [[UInt8]], at index: Int, directory: inout Directory,
                storingDirectory: Bool = true) throws -> Bool {
        guard !payloads.isEmpty else { return true }
        if index == directory.total, !directory.chunks.isEmpty, try appendToLastChunk(txn, &directory, payloads) {
            if storingDirectory { try writeDirectory(txn, &directory) }
            return storingDirectory
        }
        let (position, offset) = directory.locate(index)
        if position < 0 || (offset == directory.chunks[position].count && offset >= ListTable.chunkCapacity) {
            // Appending past a full (or missing) last chunk starts a new one instead of rewriting it.
            let id = directory.newID()
            directory.replaceChunks(directory.chunks.count..<directory.chunks.count, with: [(id, 0)])
            var chunk = Chunk()
            chunk.insert(payloads, at: 0)
            try store(txn, chunk, at: directory.chunks.count - 1, id: id, in: &directory)
        } else {
            var chunk = try self.chunk(txn, directory.chunks[position])
            chunk.insert(payloads, at: offset)
            try store(txn, chunk, at: position, id: directory.chunks[position].id, in: &directory)
        }
        try writeDirectory(txn, &directory)
        return true
    }

    /// Appends `payloads` to the last chunk when they fit in it, copying its offsets and payloads as they
    /// are; false, with nothing written, when they do not fit.
    private func appendToLastChunk(_ txn: Transaction, _ directory: inout Directory, _ payloads: [[UInt8]]) throws -> Bool {
        let last = directory.chunks.count - 1
        let entry = directory.chunks[last]
        guard entry.count + payloads.count <= ListTable.chunkCapacity else { return false }
        // Read and written back in one search of the table.
        var fits = false
        try withKey(entry.id) { k in
            try txn.replace(table, k) { bytes in
                var record: [UInt8] = []
                fits = Record.appending(payloads, to: try checkedChunk(txn, entry, bytes: bytes),
                                        maxPayloadBytes: ListTable.chunkBytes, into: &record)
                return fits ? record : nil
            }
        }
        guard fits else { return false }
        directory.setCount(entry.count + payloads.count, ofChunk: last)
        return true
    }

    /// Removes the entries in `range` and returns their payloads.
    func remove(_ txn: Transaction, _ range: Range<Int>, directory: inout Directory) throws -> [[UInt8]] {
        guard !range.isEmpty else { return [] }
        var removed: [[UInt8]] = []
        var (position, offset) = directory.locate(range.lowerBound)
        var remaining = range.count
        while remaining > 0 && position >= 0 && position < directory.chunks.count {
            let entry = directory.chunks[position]
            var chunk = try self.chunk(txn, entry)
            let n = min(remaining, chunk.count - offset)
            for i in offset..<offset + n { removed.append(Array(chunk.payload(i))) }
            chunk.remove(offset..<offset + n)
            remaining -= n
            if chunk.count == 0 {
                try deleteChunk(txn, entry.id)
                directory.replaceChunks(position..<position + 1, with: [])
            } else {
                try writeChunk(txn, entry.id, chunk)
                directory.setCount(chunk.count, ofChunk: position)
                position += 1
            }
            offset = 0
        }
        try writeDirectory(txn, &directory)
        return removed
    }

    /// Replaces entry `index`; returns the payload it held.
    func replace(_ txn: Transaction, at index: Int, with payload: [UInt8], in directory: inout Directory) throws -> [UInt8] {
        let (position, offset) = directory.locate(index)
        let entry = directory.chunks[position]
        var chunk = try self.chunk(txn, entry)
        let old = Array(chunk.payload(offset))
        chunk.remove(offset..<offset + 1)
        chunk.insert([payload], at: offset)
        if chunk.bytes.count <= ListTable.chunkBytes || chunk.count == 1 {
            try writeChunk(txn, entry.id, chunk)  // the directory is unchanged
        } else {
            try store(txn, chunk, at: position, id: entry.id, in: &directory)
            try writeDirectory(txn, &directory)
        }
        return old
    }
}

/// The payloads of one chunk, back to back, and where each ends: edited as bytes, never one array per entry.
private struct Chunk {
    var bytes: [UInt8] = []
    var ends: [Int] = []

    var count: Int { ends.count }

    func start(_ i: Int) -> Int { i == 0 ? 0 : ends[i - 1] }

    func payload(_ i: Int) -> ArraySlice<UInt8> { bytes[start(i)..<ends[i]] }

    /// Inserts payloads before entry `offset`.
    mutating func insert(_ payloads: [[UInt8]], at offset: Int) {
        let at = start(offset)
        var added: [UInt8] = []
        var newEnds: [Int] = []
        for payload in payloads {
            added.append(contentsOf: payload)
            newEnds.append(at + added.count)
        }
        bytes.insert(contentsOf: added, at: at)
        for i in offset..<ends.count { ends[i] += added.count }
        ends.insert(contentsOf: newEnds, at: offset)
    }

    /// Removes the entries in `range`.
    mutating func remove(_ range: Range<Int>) {
        guard !range.isEmpty else { return }
        let from = start(range.lowerBound)
        let to = ends[range.upperBound - 1]
        bytes.removeSubrange(from..<to)
        ends.removeSubrange(range)
        for i in range.lowerBound..<ends.count { ends[i] -= to - from }
    }

    /// Cut into chunk-sized runs (at most `chunkCapacity` entries and `chunkBytes` bytes, unless one entry
    /// is larger); none when empty. The runs are as even as the limits allow: a full chunk that gains one
    /// entry becomes two half-full ones, not a full one and one of a single entry, so that repeated inserts
    /// at the same place (the front of a list, say) fill chunks instead of adding one per insert.
    func pieces() -> [Chunk] {
        if count <= ListTable.chunkCapacity && bytes.count <= ListTable.chunkBytes { return count == 0 ? [] : [self] }
        let runs = Swift.max((count + ListTable.chunkCapacity - 1) / ListTable.chunkCapacity,
                             (bytes.count + ListTable.chunkBytes - 1) / ListTable.chunkBytes)
        let perRun = (count + runs - 1) / runs
        var out: [Chunk] = []
        var first = 0
        for i in 0..<count {
            let size = ends[i] - start(first)
            if i > first && (i - first == perRun || size > ListTable.chunkBytes) {
                out.append(slice(first..<i))
                first = i
            }
        }
        out.append(slice(first..<count))
        return out
    }

    private func slice(_ range: Range<Int>) -> Chunk {
        let base = start(range.lowerBound)
        return Chunk(bytes: Array(bytes[base..<ends[range.upperBound - 1]]), ends: ends[range].map { $0 - base })
    }
}
