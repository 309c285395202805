import Foundation
import Synchronization


extension Lattice {
    /// Everything needed to open a database.
    ///
    /// Combinations of options that cannot work (neither `fileURL` nor `inMemoryIdentifier`, a read-only
    /// in-memory store, `readOnly` with `deleteIfMigrationNeeded`) make opening throw
    /// ``LatticeError/unsupported(feature:)`` naming them.
    public struct Configuration: Sendable, CustomStringConvertible {
        /// The database file. Setting it clears ``inMemoryIdentifier``.
        public var fileURL: URL? {
            didSet { if fileURL != nil { inMemoryIdentifier = nil } }
        }
        /// Names an in-memory store shared by every handle of this process with the same identifier;
        /// its data disappears when the last handle closes. Setting it clears ``fileURL``.
        public var inMemoryIdentifier: String? {
            didSet { if inMemoryIdentifier != nil { fileURL = nil } }
        }
        /// Open an existing file for reading only: every write throws (a property setter stops).
        public var readOnly: Bool
        /// The schema version of ``objectTypes``; the file stores the version it was written with.
        public var schemaVersion: UInt64
        /// Runs once when the file's schema version is lower than ``schemaVersion``, inside the write
        /// transaction that migrates the file (see the *Migrations* article).
        public var migrationBlock: MigrationBlock?
        /// Delete and recreate the file when a migration would be needed, instead of migrating or throwing:
        /// when its stored schema differs from the configuration's, or its stored schema version differs
        /// from ``schemaVersion`` (higher or lower), as in Realm. The ``migrationBlock`` is never called.
        ///
        /// The file is deleted only when nothing else has it open: while another handle of this process, or
        /// another process (it holds a slot in the file's reader table), has it open, opening throws
        /// ``LatticeError/storage(path:code:message:)`` with `EBUSY` and changes nothing. Cannot be combined
        /// with ``readOnly``: opening throws ``LatticeError/unsupported(feature:)``.
        public var deleteIfMigrationNeeded: Bool
        /// The model classes stored in the file. `nil` means every class whose schema has been
        /// derived in this process (see ``Lattice/register(_:)``). Ignored with ``dynamicSchema``.
        public var objectTypes: [Object.Type]?
        /// Open an existing file with the schema stored in it and no model classes: its objects are
        /// ``DynamicObject``s (``Lattice/dynamicObjects(_:)``, ``Lattice/dynamicCreate(_:value:update:)``).
        /// ``objectTypes``, ``schemaVersion`` and ``migrationBlock`` are ignored; a missing file throws
        /// ``LatticeError/fileNotFound(path:)``.
        public var dynamicSchema: Bool
        /// Open (creating when missing) a file with exactly this schema and no model classes: its objects are
        /// ``DynamicObject``s, as with ``dynamicSchema``, but a new file is created with these classes and an
        /// existing one must store the same schema at ``schemaVersion`` (or migrate to it from a lower
        /// version). For tools that copy or rebuild a file from a schema they read elsewhere (a schema file,
        /// an export). Wins over ``objectTypes`` and ``dynamicSchema``.
        public var customSchema: Schema?
        /// Decides whether to compact the file when it is opened: called with the file's size and the bytes
        /// its data uses, on the first open of the file in this process, and only when no other process has
        /// it open. Returning true rewrites the file without its free pages (a compacted copy renamed over
        /// it, so a crash leaves the old or the new file, never a broken one).
        public var shouldCompactOnLaunch: (@Sendable (Int, Int) -> Bool)?
        /// The most versions of the file that may be alive at once. Every open read snapshot (of a handle,
        /// of frozen objects, of another process) keeps the pages of its version and of every later one from
        /// being reused; a write that would leave more than this many versions alive (those from the
        /// oldest open snapshot's to the latest, plus the one it creates) throws
        /// ``LatticeError/tooManyActiveVersions(path:pinned:limit:)``. `nil`: no limit.
        public var maximumNumberOfActiveVersions: UInt?
        /// The 64-byte key the file is encrypted with; `nil` for a plaintext file.
        ///
        /// A new file opened with a key is created encrypted: every record, collection entry, change-log
        /// entry and the stored schema are sealed with AES-256-GCM (keys derived from this one), and the
        /// keys of indexes, sets and maps are keyed hashes (see the *Encryption* article for the design and
        /// what still leaks). Opening an encrypted file needs its key:
        /// ``LatticeError/encryptionKeyRequired(path:)`` without one, ``LatticeError/wrongEncryptionKey(path:)``
        /// with another. A key for a plaintext file throws ``LatticeError/notEncrypted(path:)``, and a key
        /// that is not 64 bytes long ``LatticeError/invalidEncryptionKey(path:length:)``. Files are encrypted,
        /// re-keyed or decrypted by copy: ``Lattice/writeCopy(toFile:encryptionKey:)``.
        ///
        /// Lattice keeps the key in memory while the file is open; where it comes from (the keychain, a
        /// secret service) is the app's business.
        public var encryptionKey: Data?
        /// The memory map's starting size in bytes (default 64 GiB). The map is address space, not disk:
        /// the file grows only with the data. Lattice grows the map before a write transaction while the
        /// data fills more than half of it, and whenever a write needs more. Growing waits until no read
        /// snapshot of this process is open (LMDB forbids re-sizing under a reader), up to 10 seconds,
        /// and otherwise fails the write with a clear error: keep the default unless the address space is
        /// scarce.
        public var initialMapSize: Int
        /// The most concurrent read snapshots across all processes (LMDB reader slots; each open handle
        /// holds one from its opening until it is closed). Fixed by the first process to open the file.
        public var maxReaders: UInt32
        /// Bytes a long read walks before the file pages it walked leave the process's resident set
        /// (internal: tests lower it).
        var residentScanBytes = 16 << 20
        /// How long growing the map waits for this process's read snapshots (internal: tests lower it).
        var growthWaitSeconds = 10

        /// Creates a configuration. `inMemoryIdentifier`, when given, wins over `fileURL`.
        public init(
            fileURL: URL? = URL(fileURLWithPath: "default.lattice"),
            inMemoryIdentifier: String? = nil,
            readOnly: Bool = false,
            schemaVersion: UInt64 = 0,
            migrationBlock: MigrationBlock? = nil,
            deleteIfMigrationNeeded: Bool = false,
            shouldCompactOnLaunch: (@Sendable (Int, Int) -> Bool)? = nil,
            maximumNumberOfActiveVersions: UInt? = nil,
            objectTypes: [Object.Type]? = nil,
            encryptionKey: Data? = nil,
            initialMapSize: Int = 64 << 30,
            maxReaders: UInt32 = 1022,
            dynamicSchema: Bool = false,
            customSchema: Schema? = nil
        ) {
            self.fileURL = inMemoryIdentifier == nil ? fileURL : nil
            self.inMemoryIdentifier = inMemoryIdentifier
            self.readOnly = readOnly
            self.schemaVersion = schemaVersion
            self.migrationBlock = migrationBlock
            self.deleteIfMigrationNeeded = deleteIfMigrationNeeded
            self.shouldCompactOnLaunch = shouldCompactOnLaunch
            self.maximumNumberOfActiveVersions = maximumNumberOfActiveVersions
            self.objectTypes = objectTypes
            self.encryptionKey = encryptionKey
            self.initialMapSize = initialMapSize
            self.maxReaders = maxReaders
            self.dynamicSchema = dynamicSchema
            self.customSchema = customSchema
        }

        private static let defaultStorage = Mutex(Configuration())

        /// The configuration `Lattice()` opens: `default.lattice` in the current directory unless changed.
        public static var defaultConfiguration: Configuration {
            get { defaultStorage.withLock { $0 } }
            set { defaultStorage.withLock { $0 = newValue } }
        }

        /// Every field, readably.
        public var description: String {
            let types = objectTypes.map { "[" + $0.map { "\($0)" }.joined(separator: ", ") + "]" } ?? "all registered"
            return "Lattice.Configuration { "
                + (inMemoryIdentifier.map { "inMemoryIdentifier = \($0)" } ?? "fileURL = \(fileURL?.path ?? "nil")")
                + "; readOnly = \(readOnly); schemaVersion = \(schemaVersion)"
                + "; migrationBlock = \(migrationBlock == nil ? "nil" : "set")"
                + "; deleteIfMigrationNeeded = \(deleteIfMigrationNeeded)"
                + "; objectTypes = \(types)"
                + "; shouldCompactOnLaunch = \(shouldCompactOnLaunch == nil ? "nil" : "set")"
                + "; maximumNumberOfActiveVersions = \(maximumNumberOfActiveVersions.map(String.init) ?? "nil")"
                + "; encryptionKey = \(encryptionKey == nil ? "nil" : "set")"
                + "; initialMapSize = \(initialMapSize); maxReaders = \(maxReaders)" + dynamicDescription
        }

        /// `dynamicSchema` when set (kept apart: one long expression type-checks slowly).
        private var dynamicDescription: String {
            (dynamicSchema ? "; dynamicSchema = true" : "") + (customSchema == nil ? " }" : "; customSchema = set }")
        }

        /// Throws for combinations of options that cannot work.
        func checkSupported() throws {
            if fileURL == nil && inMemoryIdentifier == nil {
                throw LatticeError.unsupported(feature: "A configuration with neither fileURL nor inMemoryIdentifier")
            }
            if readOnly && inMemoryIdentifier != nil {
                throw LatticeError.unsupported(feature: "A read-only in-memory store")
            }
            if readOnly && deleteIfMigrationNeeded {
                throw LatticeError.unsupported(feature: "Configuration.deleteIfMigrationNeeded together with readOnly "
                    + "(a read-only handle cannot delete the file)")
            }
        }
    }
}
