/// Upgrades a file of an older format (`FileLayout.formatVersion`) on a read-write open, every step in
/// one write transaction taken under the writer lock: format 1 to 3 and 2 to 4 re-key every backlink
/// table by target and link property, format 4 to 6 packs every object table into runs (`Runs`) and
/// every index into blocks (`Blocks`). A crash leaves the file as it was; processes opening it together
/// upgrade it once (the second finds the new format). Lists, sets and maps keep their bytes.
enum FormatUpgrade {
    /// Upgrades the file from `format` as far as `FileLayout.upgrade(of:)` goes; returns the new format.
    static func run(_ env: Environment, from format: UInt32) throws -> UInt32 {
        guard FileLayout.upgrade(of: format) != nil else { return format }
        // Every table to rewrite, also of classes the schema no longer declares.
        let names = try env.tableNames()
        let backlinks = names.filter { $0.hasPrefix(FileLayout.backlinks("")) }
        let objects = names.filter { $0.hasPrefix(FileLayout.objects("")) }
        let indexes = names.filter { SealedTables().packsDuplicates($0) }
        let tables = try env.openTables(backlinks.map { ($0, true) } + indexes.map { ($0, true) } + objects.map { ($0, false) }
                                        + [(FileLayout.meta, false)], create: false)
        guard let meta = tables[FileLayout.meta] else {
            throw LatticeError.invalidFile(path: env.path, reason: "its metadata database is missing.")
        }
        // Room for the rewritten tables beside the old ones (a rebuilt index cannot be replayed after a
        // growth of the map, see `Transaction.recreateAsBlocks`).
        try env.growMap(minimum: 4 * env.usedBytes)
        var upgraded = format
        var recreated: [String: Table?] = [:]
        do {
            try env.withWriteTransaction { txn in
                while let next = FileLayout.upgrade(of: upgraded) {
                    switch next {
                    case 3, 4:
                        for name in backlinks.sorted() {
                            if let table = tables[name] { try BacklinkTable(table: table).upgradeFromTargetKeys(txn) }
                        }
                    default:
                        for name in objects.sorted() {
                            if let table = tables[name] { try pack(table, name, txn, env) }
                        }
                        for name in indexes.sorted() {
                            guard let table = tables[name] else { continue }
                            recreated[name] = .some(nil)  // its handle is gone from here on
                            recreated[name] = try packIndex(table, name, txn)
                        }
                    }
                    upgraded = next
                }
                var stored: [UInt8] = []
                appendLE(upgraded, to: &stored)
                try Lattice.putMeta(txn, meta, FileLayout.formatKey, stored)
            }
        } catch {
            env.adoptTables(recreated.mapValues { _ in nil })
            throw error
        }
        env.adoptTables(recreated)
        env.seals.enable(FileLayout.isSealed(upgraded), packed: FileLayout.isPacked(upgraded))
        return upgraded
    }

    /// An index of one 8-byte duplicate per object, created again with duplicates of any size and its
    /// object keys filed in blocks (see `Blocks`). Its entries are read into memory first.
    private static func packIndex(_ table: Table, _ name: String, _ txn: Transaction) throws -> Table {
        let entries = try txn.withCursor(table) { cursor in
            var out: [(key: [UInt8], objects: [UInt64])] = []
            var entry = try cursor.first()
            while let e = entry {
                if out.last?.key.elementsEqual(e.key) != true { out.append((Array(e.key), [])) }
                if e.value.count == 8 { out[out.count - 1].objects.append(Runs.number(e.value)) }
                entry = try cursor.next()
            }
            return out
        }
        let packed = try txn.recreateAsBlocks(table, name: name)
        for (key, objects) in entries {
            for block in BlockWriter.blocks(objects) {
                try key.withUnsafeBytes { k in try block.withUnsafeBytes { try txn.putStored(packed, k, $0) } }
            }
        }
        return packed
    }

    /// Packs an object table of one record per entry into runs, in key order, a run at a time: the
    /// records of the next run are read (verified by their checksums), the entries after the first
    /// deleted, and the run stored under the first one's key. Memory holds one run, whatever the table's size.
    private static func pack(_ table: Table, _ name: String, _ txn: Transaction, _ env: Environment) throws {
        var count = 0
        var next: [UInt8]? = []  // where the next run starts: empty for the first entry, nil when done
        while let start = next {
            var run = RunWriter(capacity: txn.budget)
            var keys: [[UInt8]] = []
            next = try txn.withCursor(table) { cursor -> [UInt8]? in
                // The next run's first key was seen: an exact seek finds it (a range seek would verify the
                // entry before it, a run now).
                var entry = try start.isEmpty ? cursor.first() : start.withUnsafeBytes { try cursor.seek(exactly: $0) }
                while let e = entry {
                    guard e.key.count == 8 else {
                        throw LatticeError.corruptFile(path: env.path, reason: "'\(name)' holds a key of \(e.key.count) bytes.")
                    }
                    let number = Runs.number(e.key)
                    if run.count > 0 && run.size(adding: number, valueCount: e.value.count) > txn.budget { return Array(e.key) }
                    run.append(key: number, value: e.value)
                    keys.append(Array(e.key))
                    entry = try cursor.next()
                }
                return nil
            }
            guard let first = keys.first else { break }
            for key in keys.dropFirst() { _ = try key.withUnsafeBytes { try txn.delete(table, $0) } }
            try first.withUnsafeBytes { k in try run.encoded().withUnsafeBytes { try txn.putStored(table, k, $0) } }
            count += run.count
        }
        if count > 0 {
            var value: [UInt8] = []
            appendLE(Int64(count), to: &value)
            try Runs.countKey.withUnsafeBytes { k in
                try value.withUnsafeBytes { try Checksum.sealed(key: k, value: $0).withUnsafeBytes { try txn.putStored(table, k, $0) } }
            }
        }
    }
}
