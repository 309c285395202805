/// Reading the backlink table (see `BacklinkTable`); the write path keeps it in step with links.
extension Lattice {
    /// Every backlink entry of `target` (only those of `property` when given): (link id, source key,
    /// number of links).
    func backlinks(of info: ClassInfo, key target: Int64, through property: PropertyInfo? = nil) throws -> [(id: UInt32, source: Int64, count: Int)] {
        guard let table = info.backlinkTable else { return [] }
        return try BacklinkTable(table: table).entries(readTransaction(), target: target, linkID: property?.linkID).map {
            try checkBacklink(info, key: target, id: $0.linkID, source: $0.source, count: $0.count)
            return ($0.linkID, $0.source, $0.count)
        }
    }

    /// The first (or last) object linking to `target` through `property`, checked as `backlinks` checks
    /// each: one seek, whatever the number of links.
    func backlinkEnd(of info: ClassInfo, key target: Int64, through property: PropertyInfo, first: Bool) throws -> Int64? {
        guard let table = info.backlinkTable,
              let entry = try BacklinkTable(table: table).endEntry(readTransaction(), target: target, linkID: property.linkID, first: first)
        else { return nil }
        try checkBacklink(info, key: target, id: entry.linkID, source: entry.source, count: entry.count)
        return entry.source
    }

    /// The number of links to `target` through `property`: one seek, whatever the number of links.
    func backlinkCount(of info: ClassInfo, key target: Int64, through property: PropertyInfo) throws -> Int {
        guard let table = info.backlinkTable else { return 0 }
        return try BacklinkTable(table: table).count(readTransaction(), target: target, linkID: property.linkID)
    }
}
