import Foundation

/// Facts about a database file that tools show (`lattice info`): its format, sizes and readers.
public struct LatticeFileInfo: Sendable, Equatable {
    /// The file format version the file is written in (see the *File Format* article).
    public let formatVersion: UInt32
    /// The schema version the file stores.
    public let schemaVersion: UInt64
    /// The size of the data file on disk, in bytes.
    public let fileSize: Int
    /// Bytes of the file up to its last page in use; free pages inside it are counted.
    public let usedBytes: Int
    /// The size of this process's memory map of the file, in bytes: address space, not disk.
    public let mapSize: Int
    /// Read snapshots in use across every process (LMDB reader slots): each open handle holds one,
    /// this handle's included.
    public let readerCount: Int
    /// The processes holding those slots, each once, sorted.
    public let readerProcesses: [Int32]
}

extension Lattice {
    /// The file's format and schema versions, its sizes and its readers, read now (the format from this
    /// handle's snapshot). Throws only when the storage fails.
    public func fileInfo() throws -> LatticeFileInfo {
        let txn = try readTransaction()
        // Read through the handle's transaction, which has verified and stripped a sealed value already.
        let format = try Array(FileLayout.formatKey.utf8).withUnsafeBytes { key in
            try txn.get(metaTable, key) { value in value.map { $0.count >= 4 ? loadLE($0, as: UInt32.self) : 0 } ?? 0 }
        }
        let slots = try env.readerSlots()
        let attributes = try? FileManager.default.attributesOfItem(atPath: env.path)
        return LatticeFileInfo(formatVersion: format, schemaVersion: configuration.schemaVersion,
                               fileSize: (attributes?[.size] as? Int) ?? 0, usedBytes: env.usedBytes, mapSize: env.mapSize,
                               readerCount: slots.count, readerProcesses: Array(Set(slots.map(\.pid))).sorted())
    }
}
