/// Upgrades a file of an older format (`FileLayout.formatVersion`) on a read-write open: every backlink
/// table is re-keyed by target and link property, and the new format stored, in one write transaction
/// taken under the writer lock. A crash leaves the file as it was; processes opening it together upgrade
/// it once (the second finds the new format). Records, lists, sets and maps keep their bytes.
enum FormatUpgrade {
    /// Upgrades the file from `format` to `FileLayout.upgrade(of: format)`; returns the new format.
    static func run(_ env: Environment, from format: UInt32) throws -> UInt32 {
        guard let upgraded = FileLayout.upgrade(of: format) else { return format }
        // Every backlink table in the file, also of classes the schema no longer declares.
        let names = try env.tableNames().filter { $0.hasPrefix(FileLayout.backlinks("")) }
        let tables = try env.openTables(names.map { ($0, true) } + [(FileLayout.meta, false)], create: false)
        guard let meta = tables[FileLayout.meta] else {
            throw LatticeError.invalidFile(path: env.path, reason: "its metadata database is missing.")
        }
        try env.withWriteTransaction { txn in
            for name in names.sorted() {
                if let table = tables[name] { try BacklinkTable(table: table).upgradeFromTargetKeys(txn) }
            }
            var stored: [UInt8] = []
            appendLE(upgraded, to: &stored)
            try Lattice.putMeta(txn, meta, FileLayout.formatKey, stored)
        }
        return upgraded
    }
}
