import CLMDB

/// Keys of collection databases start with the owner's 8-byte object key, so one object's elements
/// are one contiguous key range.
extension Lattice {
    func ownerPrefix(_ owner: Int64) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(16)
        KeyCodec.appendInt(owner, to: &key)
        return key
    }

    /// Copies of the entries under `owner` in `dbi`: (key after the owner prefix, value).
    func ownedEntries(_ dbi: MDB_dbi, owner: Int64) throws -> [(key: [UInt8], value: [UInt8])] {
        let prefix = ownerPrefix(owner)
        let txn = try readTransaction()
        return try prefix.withUnsafeBytes { p in
            try txn.withCursor(dbi) { cursor in
                var out: [([UInt8], [UInt8])] = []
                var entry = try cursor.move(MDB_SET_RANGE, key: p)
                while let e = entry, e.key.count >= 8, e.key.prefix(8).elementsEqual(prefix) {
                    out.append((Array(e.key.dropFirst(8)), Array(e.value)))
                    entry = try cursor.move(MDB_NEXT)
                }
                return out
            }
        }
    }

    /// The object key a link payload names, or nil for an empty (nil) payload.
    func linkedKey(_ payload: UnsafeRawBufferPointer) -> Int64? {
        payload.isEmpty ? nil : Int64._latticeDecode(payload)
    }

    /// Keeps backlinks in step with element payloads entering or leaving a collection of objects;
    /// embedded elements that leave are deleted.
    func elementsChanged(_ property: PropertyInfo, owner: Int64, added: [[UInt8]], removed: [[UInt8]]) throws {
        guard property.linksObjects, let target = property.target else { return }
        for payload in removed {
            guard let key = payload.withUnsafeBytes(linkedKey) else { continue }
            try removeBacklink(property, source: owner, target: key)
            if target.schema.isEmbedded, let record = try fetchRecord(target, key: key) {
                try deleteObject(target, key: key, old: record)
            }
        }
        for payload in added {
            guard let key = payload.withUnsafeBytes(linkedKey) else { continue }
            try addBacklink(property, source: owner, target: key)
        }
    }
}

/// The elements of one ``List`` property of one object, stored in chunks.
///
/// Keys in `l:<Class>.<prop>` are `[8-byte owner key][u32 big-endian chunk id]`. Chunk 0 is the
/// directory: `[varint next id][varint n]` then n × `[varint chunk id][varint count]`, in list order.
/// Every other chunk holds up to 256 element payloads (and at most 64 KiB unless it holds one) in the
/// record layout. Reading entry i reads the directory and one chunk and decodes one payload;
/// appending, inserting, replacing or removing one entry rewrites one chunk and the directory:
/// O(n/256 + 256) work, never the whole list. The handle keeps the directory it decoded or wrote
/// last until its view changes, and an append that fits the last chunk copies that chunk's bytes
/// as they are: a loop reading one entry at a time does one get per step, and one appending does the
/// two puts and re-encodes the directory (O(n/256)).
struct ListStore {
    let lattice: Lattice
    let property: PropertyInfo
    let owner: Int64

    static let chunkCapacity = 256
    static let chunkBytes = 64 << 10

    struct Directory {
        var nextID: UInt32 = 1
        var chunks: [(id: UInt32, count: Int)] = []
        var total: Int { chunks.reduce(0) { $0 + $1.count } }
    }

    private var dbi: MDB_dbi { property.collectionDBI! }

    private func key(_ chunk: UInt32) -> [UInt8] {
        var key = lattice.ownerPrefix(owner)
        withUnsafeBytes(of: chunk.bigEndian) { key.append(contentsOf: $0) }
        return key
    }

    /// A directory as one handle saw it: valid while the handle's generation is unchanged.
    struct CachedDirectory {
        let dbi: MDB_dbi
        let owner: Int64
        let generation: UInt64
        let directory: Directory
    }

    /// The directory, decoded once per change of the handle's view: a loop reading or appending entries
    /// does not decode it (O(n/256)) on every step.
    func directory() throws -> Directory {
        if let cached = lattice.listDirectory, cached.generation == lattice.generation, cached.dbi == dbi, cached.owner == owner {
            return cached.directory
        }
        let txn = try lattice.readTransaction()
        let directory = try key(0).withUnsafeBytes { k in
            try txn.get(dbi, k) { bytes -> Directory in
                var directory = Directory()
                guard let bytes else { return directory }
                var at = 0
                directory.nextID = UInt32(truncatingIfNeeded: Varint.read(bytes, &at))
                let n = Int(truncatingIfNeeded: Varint.read(bytes, &at))
                for _ in 0..<max(0, min(n, bytes.count)) {
                    let id = UInt32(truncatingIfNeeded: Varint.read(bytes, &at))
                    directory.chunks.append((id, Int(truncatingIfNeeded: Varint.read(bytes, &at))))
                }
                return directory
            }
        }
        lattice.listDirectory = CachedDirectory(dbi: dbi, owner: owner, generation: lattice.generation, directory: directory)
        return directory
    }

    func count() throws -> Int { try directory().total }

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
    func withPayload<R>(at index: Int, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        let directory = try directory()
        guard index >= 0, index < directory.total else { return nil }
        let (chunk, offset) = locate(index, in: directory)
        let txn = try lattice.readTransaction()
        let entry = directory.chunks[chunk]
        return try key(entry.id).withUnsafeBytes { k in
            try txn.get(dbi, k) { bytes in
                guard let view = bytes.flatMap(RecordView.init), view.count == entry.count, let payload = view.payload(offset) else {
                    throw damagedChunk(entry.id, found: bytes)
                }
                return try body(payload)
            }
        }
    }

    /// The payloads of the chunk a directory entry names (which must hold `count` of them).
    private func chunk(_ entry: (id: UInt32, count: Int)) throws -> [[UInt8]] {
        let txn = try lattice.readTransaction()
        return try key(entry.id).withUnsafeBytes { k in
            try txn.get(dbi, k) { bytes in
                guard let view = bytes.flatMap(RecordView.init), view.count == entry.count else { throw damagedChunk(entry.id, found: bytes) }
                return (0..<view.count).map { Array(view.payload($0) ?? UnsafeRawBufferPointer(start: nil, count: 0)) }
            }
        }
    }

    /// A chunk the directory names that is missing or disagrees with it: the file is damaged (a list
    /// read never comes back shorter than it is).
    private func damagedChunk(_ id: UInt32, found bytes: UnsafeRawBufferPointer?) -> LatticeError {
        .corruptFile(path: lattice.env.path, reason: "list chunk \(id) of object key \(owner) in '\(lattice.env.seals.name(of: dbi))' is "
            + (bytes == nil ? "missing." : "not what its directory says."))
    }

    /// Every payload, in order.
    func allPayloads() throws -> [[UInt8]] {
        try directory().chunks.flatMap { try chunk($0) }
    }

    // MARK: Writes

    private func writeChunk(_ id: UInt32, _ payloads: ArraySlice<[UInt8]>) throws {
        var bytes: [UInt8] = []
        var ends: [Int] = []
        ListStore.append(payloads, to: &bytes, ends: &ends)
        try writeChunk(id, bytes: bytes, ends: ends)
    }

    /// Writes a chunk whose payloads are `bytes`, entry i ending at `ends[i]`.
    private func writeChunk(_ id: UInt32, bytes: [UInt8], ends: [Int]) throws {
        var record: [UInt8] = []
        Record.assemble(payloads: bytes, ends: ends, into: &record)
        _ = try key(id).withUnsafeBytes { k in try record.withUnsafeBytes { try lattice.writer!.put(dbi, k, $0) } }
    }

    private static func append(_ payloads: some Sequence<[UInt8]>, to bytes: inout [UInt8], ends: inout [Int]) {
        for payload in payloads {
            bytes.append(contentsOf: payload)
            ends.append(bytes.count)
        }
    }

    private func deleteChunk(_ id: UInt32) throws {
        _ = try key(id).withUnsafeBytes { try lattice.writer!.delete(dbi, $0) }
    }

    private func writeDirectory(_ directory: Directory) throws {
        if directory.chunks.isEmpty {
            try deleteChunk(0)
        } else {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(10 + directory.chunks.count * 4)
            Varint.append(UInt64(directory.nextID), to: &bytes)
            Varint.append(UInt64(directory.chunks.count), to: &bytes)
            for chunk in directory.chunks {
                Varint.append(UInt64(chunk.id), to: &bytes)
                Varint.append(UInt64(chunk.count), to: &bytes)
            }
            _ = try key(0).withUnsafeBytes { k in try bytes.withUnsafeBytes { try lattice.writer!.put(dbi, k, $0) } }
        }
        lattice.didChange()
        lattice.listDirectory = CachedDirectory(dbi: dbi, owner: owner, generation: lattice.generation, directory: directory)
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
    func insert(_ payloads: [[UInt8]], at index: Int) throws {
        guard !payloads.isEmpty else { return }
        var directory = try directory()
        var position: Int
        var existing: [[UInt8]]
        let (chunk, offset) = locate(index, in: directory)
        if index == directory.total, !directory.chunks.isEmpty, try extendLastChunk(&directory, with: payloads) {
            try writeDirectory(directory)
            try lattice.elementsChanged(property, owner: owner, added: payloads, removed: [])
            return
        }
        if directory.chunks.isEmpty || (offset == directory.chunks[chunk].count && offset >= ListStore.chunkCapacity) {
            // Appending past a full (or missing) last chunk starts a new one instead of rewriting it.
            directory.chunks.append((directory.nextID, 0))
            directory.nextID += 1
            position = directory.chunks.count - 1
            existing = payloads
        } else {
            position = chunk
            existing = try self.chunk(directory.chunks[chunk])
            existing.insert(contentsOf: payloads, at: offset)
        }
        var entries: [(id: UInt32, count: Int)] = []
        for (i, piece) in ListStore.pieces(existing).enumerated() {
            let id: UInt32
            if i == 0 {
                id = directory.chunks[position].id
            } else {
                id = directory.nextID
                directory.nextID += 1
            }
            try writeChunk(id, piece)
            entries.append((id, piece.count))
        }
        directory.chunks.replaceSubrange(position...position, with: entries)
        try writeDirectory(directory)
        try lattice.elementsChanged(property, owner: owner, added: payloads, removed: [])
    }

    /// Appends `payloads` to the last chunk when they fit in it, copying its bytes as they are instead of
    /// splitting it into one array per entry (appending one entry at a time stays cheap); false, with
    /// nothing written, when they do not fit.
    private func extendLastChunk(_ directory: inout Directory, with payloads: [[UInt8]]) throws -> Bool {
        let last = directory.chunks.count - 1
        guard directory.chunks[last].count + payloads.count <= ListStore.chunkCapacity else { return false }
        let txn = try lattice.readTransaction()
        guard var (bytes, ends) = try key(directory.chunks[last].id).withUnsafeBytes({ k in
            try txn.get(dbi, k) { $0.flatMap(RecordView.init)?.payloads() }
        }), ends.count == directory.chunks[last].count else { return false }
        ListStore.append(payloads, to: &bytes, ends: &ends)
        guard bytes.count <= ListStore.chunkBytes else { return false }
        try writeChunk(directory.chunks[last].id, bytes: bytes, ends: ends)
        directory.chunks[last].count = ends.count
        return true
    }

    /// Removes the entries in `range` and returns their payloads.
    @discardableResult
    func remove(_ range: Range<Int>, updatingLinks: Bool = true) throws -> [[UInt8]] {
        guard !range.isEmpty else { return [] }
        var directory = try directory()
        var removed: [[UInt8]] = []
        var (position, offset) = locate(range.lowerBound, in: directory)
        var remaining = range.count
        while remaining > 0 && position < directory.chunks.count {
            var payloads = try chunk(directory.chunks[position])
            let n = min(remaining, payloads.count - offset)
            removed.append(contentsOf: payloads[offset..<offset + n])
            payloads.removeSubrange(offset..<offset + n)
            remaining -= n
            if payloads.isEmpty {
                try deleteChunk(directory.chunks[position].id)
                directory.chunks.remove(at: position)
            } else {
                try writeChunk(directory.chunks[position].id, payloads[...])
                directory.chunks[position].count = payloads.count
                position += 1
            }
            offset = 0
        }
        try writeDirectory(directory)
        if updatingLinks { try lattice.elementsChanged(property, owner: owner, added: [], removed: removed) }
        return removed
    }

    /// Replaces entry `index`.
    func replace(at index: Int, with payload: [UInt8]) throws {
        let directory = try directory()
        let (position, offset) = locate(index, in: directory)
        var payloads = try chunk(directory.chunks[position])
        let old = payloads[offset]
        payloads[offset] = payload
        try writeChunk(directory.chunks[position].id, payloads[...])
        lattice.didChange()
        try lattice.elementsChanged(property, owner: owner, added: [payload], removed: [old])
    }

    /// Removes every entry.
    func removeAll() throws {
        let count = try count()
        try remove(0..<count)
    }

    /// Removes every entry linking to `target` (which is being deleted: its backlinks go wholesale).
    func removeAll(linkingTo target: Int64) throws {
        var needle: [UInt8] = []
        Varint.append(Varint.zigzag(target), to: &needle)
        var index = 0
        for payload in try allPayloads() {
            if payload == needle {
                try remove(index..<index + 1, updatingLinks: false)
            } else {
                index += 1
            }
        }
    }
}

/// The elements of one ``MutableSet`` property of one object: keys `[owner][element key]`, values the
/// element payloads (`s:<Class>.<prop>`). Insert, remove and contains are one B-tree operation.
struct SetStore {
    let lattice: Lattice
    let property: PropertyInfo
    let owner: Int64

    private var dbi: MDB_dbi { property.collectionDBI! }

    private func key(_ element: [UInt8]) -> [UInt8] { lattice.ownerPrefix(owner) + element }

    func contains(elementKey: [UInt8]) throws -> Bool {
        let txn = try lattice.readTransaction()
        return try key(elementKey).withUnsafeBytes { k in try txn.get(dbi, k) { $0 != nil } }
    }

    /// Adds an element; false when an equal one is already there.
    @discardableResult
    func insert(elementKey: [UInt8], payload: [UInt8]) throws -> Bool {
        let inserted = try key(elementKey).withUnsafeBytes { k in
            try payload.withUnsafeBytes { try lattice.writer!.put(dbi, k, $0, flags: UInt32(MDB_NOOVERWRITE)) }
        }
        if inserted {
            lattice.didChange()
            try lattice.elementsChanged(property, owner: owner, added: [payload], removed: [])
        }
        return inserted
    }

    /// Removes an element; false when absent.
    @discardableResult
    func remove(elementKey: [UInt8], updatingLinks: Bool = true) throws -> Bool {
        let txn = try lattice.readTransaction()
        let k = key(elementKey)
        guard let payload = try k.withUnsafeBytes({ k in try txn.get(dbi, k) { $0.map(Array.init) } }) else { return false }
        _ = try k.withUnsafeBytes { try lattice.writer!.delete(dbi, $0) }
        lattice.didChange()
        if updatingLinks { try lattice.elementsChanged(property, owner: owner, added: [], removed: [payload]) }
        return true
    }

    /// Every element payload, in element-key order.
    func allPayloads() throws -> [[UInt8]] {
        try lattice.ownedEntries(dbi, owner: owner).map(\.value)
    }

    func count() throws -> Int { try lattice.ownedEntries(dbi, owner: owner).count }

    func removeAll() throws {
        for entry in try lattice.ownedEntries(dbi, owner: owner) { try remove(elementKey: entry.key) }
    }

    /// Removes the element linking to `target` (which is being deleted).
    func removeLink(to target: Int64) throws {
        var elementKey: [UInt8] = []
        KeyCodec.appendInt(target, to: &elementKey)
        try remove(elementKey: elementKey, updatingLinks: false)
    }
}

/// The entries of one ``Map`` property of one object: keys `[owner][UTF-8 map key]`, values the
/// payloads (`m:<Class>.<prop>`). Lookup, insert and removal are one B-tree operation.
struct MapStore {
    let lattice: Lattice
    let property: PropertyInfo
    let owner: Int64

    /// Map keys must leave room for the owner prefix within LMDB's key limit.
    static let maxKeyBytes = 400

    private var dbi: MDB_dbi { property.collectionDBI! }

    private func key(_ mapKey: String) -> [UInt8] { lattice.ownerPrefix(owner) + Array(mapKey.utf8) }

    func payload(for mapKey: String) throws -> [UInt8]? {
        let txn = try lattice.readTransaction()
        return try key(mapKey).withUnsafeBytes { k in try txn.get(dbi, k) { $0.map(Array.init) } }
    }

    /// Sets (payload non-nil) or removes (nil) an entry.
    func set(_ mapKey: String, payload: [UInt8]?, updatingLinks: Bool = true) throws {
        if mapKey.utf8.count > MapStore.maxKeyBytes || mapKey.isEmpty {
            throw LatticeError.wrongType(className: property.target?.name ?? "Map", property: property.name,
                                         expected: "a map key of 1 to \(MapStore.maxKeyBytes) bytes",
                                         found: "a key of \(mapKey.utf8.count) bytes")
        }
        let old = try self.payload(for: mapKey)
        let k = key(mapKey)
        if let payload {
            _ = try k.withUnsafeBytes { k in try payload.withUnsafeBytes { try lattice.writer!.put(dbi, k, $0) } }
        } else if old != nil {
            _ = try k.withUnsafeBytes { try lattice.writer!.delete(dbi, $0) }
        }
        lattice.didChange()
        if updatingLinks {
            try lattice.elementsChanged(property, owner: owner, added: payload.map { [$0] } ?? [], removed: old.map { [$0] } ?? [])
        }
    }

    /// Every entry in key order.
    func entries() throws -> [(key: String, payload: [UInt8])] {
        try lattice.ownedEntries(dbi, owner: owner).map { (String(decoding: $0.key, as: UTF8.self), $0.value) }
    }

    func removeAll() throws {
        for entry in try entries() { try set(entry.key, payload: nil) }
    }

    /// Sets to nil every value linking to `target` (which is being deleted).
    func clearLinks(to target: Int64) throws {
        for entry in try entries() where entry.payload.withUnsafeBytes(lattice.linkedKey) == target {
            try set(entry.key, payload: [], updatingLinks: false)
        }
    }
}
