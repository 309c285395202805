import Foundation

extension Lattice {
    /// Opens the file at `fileURL` with the default configuration's other settings (Realm's
    /// `Realm(fileURL:)`).
    public convenience init(fileURL: URL) throws {
        var configuration = Configuration.defaultConfiguration
        configuration.fileURL = fileURL
        try self.init(configuration: configuration)
    }

    /// Whether the data file of `configuration` exists (Realm's `fileExists(for:)`); false for an
    /// in-memory configuration.
    public static func fileExists(for configuration: Configuration) -> Bool {
        guard configuration.inMemoryIdentifier == nil, let url = configuration.fileURL else { return false }
        return FileManager.default.fileExists(atPath: url.path)
    }

    /// Writes a compacted copy of the database's latest commit to a new file at `fileURL`.
    ///
    /// The copy is consistent (one commit, whole) and holds no free pages; other threads and processes
    /// keep reading and writing meanwhile. The copy is flushed to disk before this returns. A write
    /// transaction of this handle that is still open is not part of the copy. Throws when a file exists
    /// at `fileURL`.
    ///
    /// The copy is encrypted with `encryptionKey` (64 bytes), or plaintext when it is `nil`, whatever this
    /// file is: this is how a file is encrypted, re-keyed or decrypted (by copy only, so no plaintext is
    /// left in the new file's free pages; see the *Encryption* article). A copy with this file's own key
    /// (or of a plaintext file without one) copies the pages as they are; any other copy re-seals every
    /// value under the new key (or none) with a fresh salt and rebuilds the indexes, in one pass over
    /// one snapshot. A key that is not 64 bytes throws ``LatticeError/invalidEncryptionKey(path:length:)``.
    public func writeCopy(toFile fileURL: URL, encryptionKey: Data? = nil) throws {
        let destination = fileURL.standardizedFileURL.path
        try writeCopy(to: destination, encryptionKey: encryptionKey)
    }

    /// Compacts the file at `path` before its first open in this process when `decide` asks for it and no
    /// other process has the file open (see ``Configuration/shouldCompactOnLaunch``).
    static func compactOnLaunch(path: String, _ decide: @Sendable (Int, Int) -> Bool) throws {
        _ = try FileMaintenance.compact(path: path, decide: decide)
    }

    /// Throws when a write would leave more versions alive than ``Configuration/maximumNumberOfActiveVersions``
    /// allows. Called as a write begins, after this handle released its own snapshot.
    func checkActiveVersions() throws {
        guard let limit = configuration.maximumNumberOfActiveVersions else { return }
        // Slots of processes that died still name their snapshots: free them first.
        _ = try? env.clearStaleReaders()
        // Every version from the oldest snapshot still open to the latest stays alive (LMDB reuses no page
        // a later commit freed while an older snapshot may read it), as Realm counts them: a forgotten
        // snapshot ten commits old keeps ten.
        let oldest = try env.readerSlots().compactMap(\.snapshot).min()
        let pinned = oldest.map { max(1, env.lastTransactionID - $0 + 1) } ?? 0
        if pinned + 1 > limit {
            throw LatticeError.tooManyActiveVersions(path: env.path, pinned: pinned, limit: limit)
        }
    }
}

extension Lattice {
    /// `writeCopy(toFile:encryptionKey:)` to a standardized path.
    func writeCopy(to destination: String, encryptionKey: Data?) throws {
        try Lattice.checkKey(encryptionKey, path: destination)
        if encryptionKey == configuration.encryptionKey {
            try env.writeCompactCopy(to: destination)
        } else {
            try writeResealedCopy(to: destination, encryptionKey: encryptionKey)
        }
    }
}
