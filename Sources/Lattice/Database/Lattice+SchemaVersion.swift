import Foundation

// Realm's file-level migration entry points: the stored schema version of a file, and a migration run
// without keeping a handle.

extension Lattice {
    /// The schema version stored in the Lattice file at `fileURL` (Realm's
    /// `schemaVersionAtURL(_:encryptionKey:)`), read from its metadata without opening it for use: no
    /// schema is compared, nothing is migrated, upgraded or written.
    ///
    /// Throws ``LatticeError/fileNotFound(path:)`` when there is no file,
    /// ``LatticeError/invalidFile(path:reason:)`` for anything that is not a Lattice database (an empty
    /// file, another kind of file, a device), the errors of a wrong ``Configuration/encryptionKey``
    /// (``LatticeError/encryptionKeyRequired(path:)``, ``LatticeError/wrongEncryptionKey(path:)``,
    /// ``LatticeError/notEncrypted(path:)``, ``LatticeError/invalidEncryptionKey(path:length:)``), and
    /// ``LatticeError/incompatibleFormatVersion(path:found:supported:)`` for a file of a newer format.
    public static func schemaVersion(at fileURL: URL, encryptionKey: Data? = nil) throws -> UInt64 {
        let path = try storagePath(Configuration(fileURL: fileURL))
        try checkKey(encryptionKey, path: path)
        guard FileManager.default.fileExists(atPath: path) else { throw LatticeError.fileNotFound(path: path) }
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        guard attributes?[.type] as? FileAttributeType == .typeRegular else {
            throw LatticeError.invalidFile(path: path, reason: "it is not a regular file.")
        }
        // LMDB would initialize an empty file opened read-write: it holds no database anyway.
        guard (attributes?[.size] as? Int ?? 0) > 0 else { throw LatticeError.invalidFile(path: path, reason: "it is empty.") }
        // Read-write when this user may write the file: a read-only environment, which handles opened
        // meanwhile in this process would share, would refuse their read-write opens. Nothing is written.
        // Read-only when this process has the file open read-only (that environment is shared).
        let readOnly = access(path, W_OK) != 0 || Environment.isOpenReadOnly(path: path)
        let options = EnvironmentOptions(readOnly: readOnly, maxDatabases: 1024, sealPolicy: SealedTables())
        let env = try Environment.acquire(path: path, options: options)
        defer { env.release() }
        guard let file = try readMetadata(env, key: encryptionKey) else {
            throw LatticeError.invalidFile(path: path, reason: "it holds no Lattice metadata.")
        }
        return file.version
    }

    /// Runs the migration of the file `configuration` describes, if it needs one, and closes the file
    /// again (Realm's `performMigration(for:)`): opens it as ``init(configuration:)`` does (creating a
    /// missing file; migrating it, with the ``Configuration/migrationBlock``, when its schema version is
    /// lower; deleting it instead with ``Configuration/deleteIfMigrationNeeded``) without keeping the
    /// handle. Opening the file migrates it anyway: call this to choose when the migration runs. Throws
    /// what ``init(configuration:)`` throws; the file is unchanged then.
    public static func performMigration(for configuration: Configuration = .defaultConfiguration) throws {
        _ = try Lattice(configuration: configuration)
    }
}
