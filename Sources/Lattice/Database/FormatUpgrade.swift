/// Upgrades a file of an older format (`FileLayout.formatVersion`) on a read-write open, every step in
/// one write transaction taken under the writer lock: format 1 to 3 and 2 to 4 re-key every backlink
/// table by target and link property, format 4 to 6 packs every object table into runs (`Runs`). A crash
/// leaves the file as it was; processes opening it together upgrade it once (the second finds the new
/// format). Lists, sets, maps and indexes keep their bytes.
enum FormatUpgrade {
    /// Upgrades the file from `format` as far as `FileLayout.upgrade(of:)` goes; returns the new format.
    static func run(_ env: Environment, from format: UInt32) throws -> UInt32 {
        guard FileLayout.upgrade(of: format) != nil else { return format }
        // Every table to rewrite, also of classes the schema no longer declares.
        let names = try env.tableNames()
        let backlinks = names.filter { $0.hasPrefix(FileLayout.backlinks("")) }
        let objects = names.filter { $0.hasPrefix(FileLayout.objects("")) }
        let tables = try env.openTables(backlinks.map { ($0, true) } + objects.map { ($0, false) } + [(FileLayout.meta, false)],
                                        create: false)
        guard let meta = tables[FileLayout.meta] else {
            throw LatticeError.invalidFile(path: env.path, reason: "its metadata database is missing.")
        }
        var upgraded = format
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
                }
                upgraded = next
            }
            var stored: [UInt8] = []
            appendLE(upgraded, to: &stored)
            try Lattice.putMeta(txn, meta, FileLayout.formatKey, stored)
        }
        env.seals.enable(FileLayout.isSealed(upgraded), packed: FileLayout.isPacked(upgraded))
        return upgraded
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
