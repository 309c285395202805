import Foundation
import Synchronization

/// A handle on a Lattice database: a file (or an in-memory store) holding objects of model classes.
///
/// ```swift
/// let lattice = try Lattice(configuration: .init(fileURL: URL(fileURLWithPath: "dogs.lattice"),
///                                                objectTypes: [Dog.self]))
/// try lattice.write { try lattice.add(Dog()) }
/// print(lattice.objects(Dog.self).count)
/// ```
///
/// A handle reads one consistent snapshot of the database until ``refresh()``, its own write, or
/// ``invalidate()``. It is not `Sendable`: use it (and its objects and results) in one isolation domain
/// and open another handle elsewhere; handles on one file share one environment in the process.
/// See the *Concurrency* article.
public final class Lattice {
    /// The configuration this handle was opened with.
    public let configuration: Configuration
    /// The schema stored in the file (classes sorted by name, properties in storage order).
    public let schema: Schema
    /// When true (the default), the handle moves to the latest commit whenever it starts a write and,
    /// once notifications exist, when they are delivered; it never changes snapshot in the middle of
    /// synchronous code. With false, only ``refresh()`` and writes move it.
    public var autorefresh = true

    let env: Environment
    let classesByType: [ObjectIdentifier: ClassInfo]
    /// The class looked up last: loops over one class skip hashing.
    private var lastClassInfo: ClassInfo?
    let classesByName: [String: ClassInfo]
    /// The dynamic classes of a handle opened with model classes (built on first use of the dynamic API).
    let dynamicClasses: DynamicClasses
    let metaTable: Table
    /// Whether the file is encrypted: index, set and map keys are then keyed hashes (`keyHasher`).
    let isEncrypted: Bool
    /// The read snapshot's transaction; nil after this handle let go of one shared with frozen handles
    /// (the next read takes a new one).
    private var reader: Transaction?
    private var snapshotOpen = false
    /// See `readUntilSnapshotEnds(_:)`.
    private var snapshotReaders: [WeakSnapshotReader] = []
    /// For a frozen handle: the lock of its shared snapshot, held by every read (see `SharedSnapshots`).
    let frozenLock: RecursiveLock?
    /// The frozen handle made last from this one, reused while it is alive and at the same version.
    weak var frozenTwin: Lattice?
    /// The actor a handle opened with `init(configuration:actor:)` is confined to.
    weak var confinedActor: (any Actor)?
    /// The open write transaction, if any. Without runtime exclusivity checks (several on every write
    /// of an object): a `WriteContext` is a class, so every access is a whole load or store of the reference.
    @exclusivity(unchecked) var writer: WriteContext?
    /// Changes whenever what this handle sees may have changed; objects re-read their record then.
    /// Read by every property read (inlined into client models). Exclusivity checks are off: the handle
    /// is used from one isolation domain at a time, and every access is a whole load or store (or the
    /// increment in `didChange`), never held across a call.
    @usableFromInline @exclusivity(unchecked) private(set) var generation: UInt64 = 1
    /// Changes when this handle adds or deletes an object, changes a link or a collection, and when it
    /// moves to a commit it did not make (`moveView`): the keys of a List or LinkingObjects stay valid
    /// while it does not, so a loop setting a property of each element, or committing each change,
    /// does not read them again on every step. Unchecked like `generation`.
    @exclusivity(unchecked) private(set) var structure: UInt64 = 1
    /// Changes on every write of a record, and with every `didChange`: a collection change during which it
    /// stayed the same wrote no record, so the collection's owner keeps the record it read (see
    /// `ManagedCollection.mutate`).
    @exclusivity(unchecked) private(set) var recordWrites: UInt64 = 0
    /// Changes when the handle moves to a commit it did not make (`moveView`) or makes a change the
    /// write path does not account for (`didChange`): with `classWrites`, what the objects of one
    /// class matching a query on their own values depend on.
    @exclusivity(unchecked) private var view: UInt64 = 1
    /// The commit `view` stands for: the one the handle read or wrote last, everything since then known
    /// through `classWrites` and `structure` (0: none). A snapshot or write that starts on it adds
    /// nothing unknown, so the handle's own commits keep caches of the classes they did not touch.
    @exclusivity(unchecked) var viewCommit = 0
    /// Per class: objects added or deleted, and writes to each column of existing ones (by
    /// `ChangeSet.columnBit`).
    @exclusivity(unchecked) private var classWrites: [ObjectIdentifier: ClassWrites] = [:]

    struct ClassWrites {
        var membership: UInt64 = 0
        var columns = [UInt64](repeating: 0, count: 64)
    }
    /// Changes on `invalidate()`: objects attached before are invalid. Unchecked like `generation`.
    /// Always changes together with `generation`, so an object whose cached record is of the current
    /// generation is of the current epoch too (reads check the generation only).
    @usableFromInline @exclusivity(unchecked) private(set) var epoch: UInt64 = 1
    /// The record buffer `add` reuses for objects encoded without nested adds (see `addObject`). Without
    /// runtime exclusivity checks: only `addObject` touches it, swapping it with a local array.
    @exclusivity(unchecked) var recordScratch: [UInt8] = []
    /// The buffer a property setter encodes its value into (see `Object._write`), swapped out while in
    /// use like `recordScratch`: a setter run inside another's write finds it empty and uses its own.
    @exclusivity(unchecked) var payloadScratch: [UInt8] = []
    /// The List directory decoded or written last (see `listDirectory(_:owner:)`).
    var listDirectoryCache: ListDirectoryCache?
    /// The MutableSet or Map counted or read last (see `keyedEntries(_:owner:)`).
    var keyedEntriesCache: KeyedEntriesCache?
    /// The chunk reader of the List of values bound last, by table and owner (see `List.init(managed:)`).
    var lastListValueReads: (table: Table, owner: Int64, reads: ListValueReads)?
    /// Set on a migration's handles: errors of property access by name (which cannot throw) fail the
    /// migration instead of stopping the program.
    var recordsAccessErrors = false
    /// Notification state (`HandleObservation`), created with the handle's first observer.
    var observationState: AnyObject?
    /// The property names of Swift key paths that type-safe queries, key-path sorts and aggregates named
    /// on this handle (see `KeyPathResolver.remembered`). Kept by live handles only: a frozen handle is
    /// read from any thread.
    var keyPathNames: [AnyKeyPath: String] = [:]
    /// Commits made through this handle, and the change sets of the last few (see `ownChanges(after:)`).
    var ownCommitCount: UInt64 = 0
    var ownCommits: [(number: UInt64, changes: ChangeSet)] = []

    /// Opens ``Configuration/defaultConfiguration``.
    public convenience init() throws {
        try self.init(configuration: .defaultConfiguration)
    }

    /// Opens (creating when missing, unless read-only) the database `configuration` describes.
    ///
    /// Throws ``LatticeError/schemaMismatch(path:differences:)`` when the file's schema differs at the
    /// same schema version, ``LatticeError/invalidFile(path:reason:)`` for a file that is not a Lattice
    /// database, ``LatticeError/fileNotFound(path:)`` for a missing file opened read-only, and
    /// ``LatticeError/unsupported(feature:)`` for options not implemented yet.
    public init(configuration: Configuration) throws {
        try configuration.checkSupported()
        let path = try Lattice.storagePath(configuration)
        try Lattice.checkKey(configuration.encryptionKey, path: path)
        // The file is open in this process with these classes and unchanged since: take what that open built.
        if let (opened, env, reader) = try OpenedClasses.reuse(configuration, path: path) {
            self.env = env
            self.configuration = configuration
            schema = opened.schema
            classesByType = opened.classesByType
            classesByName = opened.classesByName
            dynamicClasses = opened.dynamicClasses
            metaTable = opened.metaTable
            isEncrypted = env.seals.cipher != nil
            self.reader = reader
            frozenLock = nil
            return
        }
        // Dynamic classes come from the schema stored in the file, or from a custom schema.
        let custom = configuration.customSchema
        let dynamic = configuration.dynamicSchema || custom != nil
        let readsStoredSchema = dynamic && custom == nil
        var metadata = try custom.map { $0.objectSchemas.map(DynamicObject.metadata(for:)) }
            ?? (dynamic ? [] : Lattice.models(configuration.objectTypes ?? ModelMetadata.derivedTypes))
        var declared = custom ?? Schema(metadata.map(\.schema))
        try declared.validateRelationships()
        if (configuration.readOnly || readsStoredSchema) && !FileManager.default.fileExists(atPath: path) {
            throw LatticeError.fileNotFound(path: path)
        }
        let options = EnvironmentOptions(
            readOnly: configuration.readOnly,
            temporary: configuration.inMemoryIdentifier != nil,
            initialMapSize: max(configuration.initialMapSize, 64 << 10),
            maxReaders: configuration.maxReaders,
            // The first handle of the process fixes the limit: leave room for handles with more classes (and
            // for a migration's tables). A dynamic handle does not know its classes before opening.
            maxDatabases: UInt32(max(FileLayout.databases(for: declared).count * 4, dynamic ? 1024 : 128)),
            residentScanBytes: configuration.residentScanBytes,
            growthWaitSeconds: configuration.growthWaitSeconds,
            sealPolicy: SealedTables())
        if let decide = configuration.shouldCompactOnLaunch, !configuration.readOnly, configuration.inMemoryIdentifier == nil {
            try Lattice.compactOnLaunch(path: path, decide)
        }
        let env = try Environment.acquire(path: path, options: options)
        var configuration = configuration
        do {
            if readsStoredSchema {
                // The stored schema is the declared one, at the stored version: nothing to migrate.
                guard let file = try Lattice.readMetadata(env, key: configuration.encryptionKey) else {
                    throw LatticeError.invalidFile(path: path, reason: "it holds no Lattice metadata (a dynamic handle opens existing files only).")
                }
                declared = file.schema
                configuration.schemaVersion = file.version
                configuration.migrationBlock = nil
                metadata = declared.objectSchemas.map(DynamicObject.metadata(for:))
            }
            let databases = FileLayout.databases(for: declared)
            let (stored, tables) = try Lattice.prepare(env, declared: declared, databases: databases, configuration: configuration)
            var byType: [ObjectIdentifier: ClassInfo] = [:]
            var byName: [String: ClassInfo] = [:]
            for model in metadata {
                let order = stored[model.schema.className]?.allProperties.map(\.name) ?? model.schema.allProperties.map(\.name)
                let info = ClassInfo(metadata: model, storedOrder: order, tables: tables)
                if !dynamic { byType[ObjectIdentifier(model.type)] = info }
                byName[info.name] = info
            }
            ClassInfo.link(byName)
            guard let meta = tables[FileLayout.meta] else {
                throw LatticeError.invalidFile(path: path, reason: "its metadata database is missing.")
            }
            self.env = env
            self.configuration = configuration
            self.schema = stored
            self.classesByType = byType
            self.classesByName = byName
            self.dynamicClasses = DynamicClasses(models: dynamic ? [:] : byName, tables: tables)
            self.metaTable = meta
            self.isEncrypted = env.seals.cipher != nil
            // The reader slot is taken now: a full reader table fails the open, never a later read.
            let reader = try Transaction(readOn: env)
            self.reader = reader
            self.frozenLock = nil
            OpenedClasses.remember(self, configuration: configuration, path: path, reader: reader)
        } catch {
            env.release()
            throw error
        }
    }

    /// A handle sharing `other`'s classes (which never change once linked). With `snapshot` (a shared
    /// transaction, see `SharedSnapshots`) it is frozen on it; without, it is live and takes its own
    /// reader slot.
    init(sharing other: Lattice, snapshot: Transaction?) throws {
        env = try Environment.acquire(path: other.env.path, options: other.env.options)
        configuration = other.configuration
        schema = other.schema
        classesByType = other.classesByType
        classesByName = other.classesByName
        dynamicClasses = other.dynamicClasses
        metaTable = other.metaTable
        isEncrypted = other.isEncrypted
        do {
            reader = try snapshot ?? Transaction(readOn: env)
        } catch {
            env.release()
            throw error
        }
        snapshotOpen = snapshot != nil
        frozenLock = snapshot?.sharedLock
        if snapshot != nil { autorefresh = false }
    }

    /// A handle with the classes `classes` on an environment this process has open (a migration's
    /// handles on the old and new schemas). It shares the environment and takes a reader slot like any handle.
    init(env: Environment, configuration: Configuration, schema: Schema, classes: [ClassInfo], metaTable: Table) throws {
        let env = try Environment.acquire(path: env.path, options: env.options)
        do {
            self.reader = try Transaction(readOn: env)
        } catch {
            env.release()
            throw error
        }
        self.env = env
        self.configuration = configuration
        self.schema = schema
        self.classesByType = [:]
        self.classesByName = Dictionary(uniqueKeysWithValues: classes.map { ($0.name, $0) })
        self.dynamicClasses = DynamicClasses(models: [:], tables: [:])
        self.metaTable = metaTable
        self.isEncrypted = env.seals.cipher != nil
        self.frozenLock = nil
    }

    deinit {
        if let writer = writer?.txn {
            // See `abortWrite()`: another thread's write transaction cannot be ended safely from here.
            guard writer.isOwnedByCurrentThread else {
                fatalError("A write transaction on '\(env.path)' was left open when its handle was released on another thread; "
                    + "end a write transaction on the thread that began it.")
            }
            writer.abort()
            env.writerLock.unlock()
        }
        self.writer = nil
        // A shared snapshot ends with its last user (the transaction's deinit), never here.
        if reader?.sharedLock == nil { reader?.abort() }
        reader = nil
        env.release()
    }

    /// Derives the schema of `types` now (it is otherwise derived on first use). Types whose schema has
    /// been derived form the default ``Configuration/objectTypes``.
    public static func register(_ types: Object.Type...) throws {
        for type in types { _ = try ModelMetadata.of(type) }
    }

    private static func models(_ types: [Object.Type]) throws -> [ModelMetadata] {
        var seen = Set<ObjectIdentifier>()
        var names: [String: Object.Type] = [:]
        var out: [ModelMetadata] = []
        for type in types where seen.insert(ObjectIdentifier(type)).inserted {
            let model = try ModelMetadata.of(type)
            if let other = names[model.schema.className] {
                throw LatticeError.invalidSchema(className: model.schema.className,
                                                 reason: "two model types share the name (\(other) and \(type)).")
            }
            names[model.schema.className] = type
            out.append(model)
        }
        if out.isEmpty {
            throw LatticeError.unsupported(feature: "Opening a database with no object types (set Configuration.objectTypes)")
        }
        return out
    }

    // MARK: Files

    /// The absolute path LMDB opens for `configuration`.
    static func storagePath(_ configuration: Configuration) throws -> String {
        if let id = configuration.inMemoryIdentifier {
            let hash = KeyCodec.fnv1a64(id.utf8)
            let dir = FileManager.default.isWritableFile(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
            return (dir as NSString).appendingPathComponent("lattice-mem-\(getpid())-\(String(hash, radix: 16))")
        }
        guard let url = configuration.fileURL else {
            throw LatticeError.unsupported(feature: "A configuration with neither fileURL nor inMemoryIdentifier")
        }
        // Every symbolic link is resolved (of the file when it exists, else of its directory): LMDB must not
        // open one file twice in a process, so two spellings of a path must reach the same environment.
        let standard = url.standardizedFileURL
        if let real = realPath(standard.path) { return real }
        let dir = standard.deletingLastPathComponent().path
        return ((realPath(dir) ?? dir) as NSString).appendingPathComponent(standard.lastPathComponent)
    }

    /// The canonical absolute path of an existing file or directory, or nil.
    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Deletes the data file of `configuration` and every file beside it (the lock file, the notification
    /// pipe, a leftover of an interrupted compaction). Returns whether a data file existed.
    /// Throws while any handle of this process, or any other process, has the file open.
    @discardableResult
    public static func deleteFiles(for configuration: Configuration) throws -> Bool {
        let path = try storagePath(configuration)
        guard let existed = try FileMaintenance.deleteFiles(path: path) else {
            throw LatticeError.storage(path: path, code: EBUSY, message: "another process has the file open; close it there first.")
        }
        return existed
    }

    // MARK: Opening

    /// Checks (or creates) the file's metadata and opens every table of the schema. Returns the schema in
    /// storage order and the tables.
    ///
    /// The writer lock is taken only when something must be written (a new file, a new schema version,
    /// a missing table, `deleteIfMigrationNeeded`): opening a file whose schema is stored never waits for
    /// another thread's or process's write.
    private static func prepare(_ env: Environment, declared: Schema, databases: [(name: String, dupSort: Bool)],
                                configuration: Configuration) throws -> (Schema, [String: Table]) {
        let path = env.path
        let writable = !env.options.readOnly
        for locked in [false, true] {
            if locked {
                // LMDB would wait forever for this thread's own write transaction.
                if env.isWriteTransactionOpen && env.writerLock.isHeldByCurrentThread {
                    throw LatticeError.alreadyInWriteTransaction
                }
                try env.writerLock.lock()
            }
            defer { if locked { env.writerLock.unlock() } }

            var stored = try readMetadata(env, key: configuration.encryptionKey)
            if let file = stored, FileLayout.upgrade(of: file.format) != nil {
                // An older format is upgraded before anything else (a migration included) reads the file.
                if !writable {
                    throw LatticeError.readOnly(path: path, operation: "upgrading it from file format \(file.format) "
                        + "(open it read-write once with this version)")
                }
                guard locked else { continue }
                stored?.format = try FormatUpgrade.run(env, from: file.format)
            }
            var mustWrite = stored == nil
            if let file = stored {
                let differences = file.schema.differences(to: declared)
                if configuration.deleteIfMigrationNeeded && (!differences.isEmpty || file.version != configuration.schemaVersion) {
                    // As Realm: another schema or another version (higher or lower) means deleting, never migrating.
                    // Other handles of this process would keep reading the dropped tables: only delete when alone.
                    if env.handleCount > 1 { throw LatticeError.storage(path: path, code: EBUSY, message: Lattice.openInThisProcess) }
                    if locked {
                        try Lattice.refuseWhileOtherProcessesHaveItOpen(env)
                        try env.deleteAllTables()
                        stored = nil
                    }
                    mustWrite = true  // created afresh below
                } else if file.version > configuration.schemaVersion {
                    throw LatticeError.schemaVersionTooOld(path: path, fileVersion: file.version, configuredVersion: configuration.schemaVersion)
                } else if !differences.isEmpty && file.version == configuration.schemaVersion {
                    throw LatticeError.schemaMismatch(path: path, differences: differences)
                } else if file.version < configuration.schemaVersion && (!differences.isEmpty || configuration.migrationBlock != nil) {
                    if !writable { throw LatticeError.readOnly(path: path, operation: "migrating from schema version \(file.version)") }
                    if locked {
                        // Under the writer lock, with the metadata read again: one process migrates, once.
                        let all = databases + FileLayout.databases(for: file.schema)
                        let tables = try env.openTables(all, create: true)
                        let migrator = try SchemaMigrator(env: env, stored: file.schema, declared: declared, tables: tables,
                                                          configuration: configuration)
                        let schema = try migrator.run(oldVersion: file.version)
                        return (schema, try env.openTables(databases, create: false))
                    }
                    continue
                }
                if file.version != configuration.schemaVersion { mustWrite = true }
            } else if !writable {
                throw LatticeError.invalidFile(path: path, reason: "it holds no Lattice metadata.")
            }
            if !mustWrite {
                let tables = try env.openTables(databases, create: false)
                if let missing = databases.first(where: { tables[$0.name] == nil && !(!writable && $0.name == FileLayout.changes) }) {
                    if !writable { throw LatticeError.invalidFile(path: path, reason: "database '\(missing.name)' is missing.") }
                    mustWrite = true
                } else if let schema = stored?.schema {
                    return (schema, tables)
                }
            }
            guard locked else { continue }

            // A new file is written in the current format: sealed, or encrypted with a fresh salt.
            if stored == nil {
                if let key = configuration.encryptionKey {
                    env.seals.enable(FileCipher(key: key, salt: FileCipher.newSalt()))
                } else {
                    env.seals.enable(true, packed: true)
                }
            }
            let tables = try env.openTables(databases, create: true)
            guard let meta = tables[FileLayout.meta] else {
                throw LatticeError.invalidFile(path: path, reason: "its metadata database is missing.")
            }
            let schema = stored?.schema ?? declared
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]  // the same schema always stores the same bytes
            let json = try encoder.encode(schema)
            try env.withWriteTransaction { txn in
                var format: [UInt8] = []
                // A file keeps its format.
                appendLE(stored?.format ?? (env.seals.cipher == nil ? FileLayout.formatVersion : FileLayout.encryptedFormat), to: &format)
                var version: [UInt8] = []
                appendLE(configuration.schemaVersion, to: &version)
                try putMeta(txn, meta, "format", format)
                if stored == nil, let cipher = env.seals.cipher { try putMeta(txn, meta, FileLayout.keyCheckKey, try cipher.keyCheck()) }
                try putMeta(txn, meta, "schemaVersion", version)
                try putMeta(txn, meta, "schema", Array(json))
            }
            return (schema, tables)
        }
        throw LatticeError.invalidFile(path: path, reason: "its metadata could not be prepared.")
    }

    struct StoredMetadata {
        var format: UInt32
        var version: UInt64
        var schema: Schema
    }

    /// Stored schemas already decoded, by their JSON: opening another handle on a file (Realm code opens
    /// one in every function) decodes its schema once, not each time.
    private static let decodedSchemas = Mutex<[[UInt8]: Schema]>([:])

    /// The schema the metadata's JSON `json` holds (decoded once per process).
    static func decodeStoredSchema(_ json: [UInt8], path: String) throws -> Schema {
        if let known = decodedSchemas.withLock({ $0[json] }) { return known }
        let schema: Schema
        do {
            schema = try JSONDecoder().decode(Schema.self, from: Data(json))
        } catch {
            throw LatticeError.invalidFile(path: path, reason: "its stored schema cannot be read (\(error)).")
        }
        decodedSchemas.withLock { cache in
            if cache.count >= 16 { cache.removeAll() }  // a few files' schemas, not every version ever seen
            cache[json] = schema
        }
        return schema
    }

    /// The file's metadata; nil for a new, empty file. An encrypted file needs `key`, which turns its
    /// encryption on (see `FileCheck.unlock`); a plaintext file refuses one.
    static func readMetadata(_ env: Environment, key: Data?) throws -> StoredMetadata? {
        let names = try env.tableNames()
        guard names.contains(FileLayout.meta) else {
            if names.isEmpty { return nil }
            throw LatticeError.invalidFile(path: env.path, reason: "it is an LMDB file without Lattice metadata.")
        }
        guard let meta = try env.openTables([(FileLayout.meta, false)], create: false)[FileLayout.meta] else { return nil }
        // The format says whether values carry checksums, so its own value tells: 4 bytes in formats 1
        // and 3, 8 (sealed) in 2 and 4. Read before anything else: a newer format may store it differently.
        let format = try env.withReadTransaction { txn -> UInt32?? in
            // The tables are created (and committed) just before the metadata: an empty metadata table is a
            // file another thread or process is creating, or whose creator died before finishing.
            if try txn.count(meta) == 0 { return .none }
            let format = try Array(FileLayout.formatKey.utf8).withUnsafeBytes { k in
                try txn.get(meta, k) { try $0.map {
                    try FileCheck.storedFormat($0, key: k, sealed: FileLayout.isSealed, packed: FileLayout.isPacked,
                                               encrypted: FileLayout.encryptedFormat, env)
                } }
            }
            if format == FileLayout.encryptedFormat {
                guard let key else { throw LatticeError.encryptionKeyRequired(path: env.path) }
                try Array(FileLayout.keyCheckKey.utf8).withUnsafeBytes { k in
                    try txn.get(meta, k) { value in
                        guard let value else {
                            throw LatticeError.corruptFile(path: env.path, reason: "it is encrypted but its key check ('\(FileLayout.keyCheckKey)') is missing.")
                        }
                        try FileCheck.unlock(keyCheck: value, entryKey: k, key: key, env)
                    }
                }
            } else if format != nil, key != nil {
                throw LatticeError.notEncrypted(path: env.path)
            }
            return format
        }
        guard let format else { return nil }
        if let format, format > FileLayout.newestFormat {
            throw LatticeError.incompatibleFormatVersion(path: env.path, found: format, supported: FileLayout.newestFormat)
        }
        return try env.withReadTransaction { txn in
            func value(_ key: String) throws -> [UInt8]? {
                try Array(key.utf8).withUnsafeBytes { k in try txn.get(meta, k) { $0.map { Array($0) } } }
            }
            guard let format, let version = try value("schemaVersion"), let json = try value("schema") else {
                throw LatticeError.invalidFile(path: env.path, reason: "its metadata is incomplete.")
            }
            return StoredMetadata(format: format, version: version.withUnsafeBytes { loadLE($0, as: UInt64.self) },
                                  schema: try decodeStoredSchema(json, path: env.path))
        }
    }

    static func putMeta(_ txn: Transaction, _ meta: Table, _ key: String, _ value: [UInt8]) throws {
        try MetaTable(table: meta).set(txn, key, value)
    }

    /// Throws unless `key` is nil or 64 bytes long.
    static func checkKey(_ key: Data?, path: String) throws {
        if let key, key.count != FileCipher.keySize { throw LatticeError.invalidEncryptionKey(path: path, length: key.count) }
    }

    // MARK: Snapshot

    /// The transaction reads go through: the write transaction, or the snapshot (opened lazily).
    func readTransaction() throws -> Transaction {
        if let writer { return writer.txn }
        if snapshotOpen, let reader { return reader }
        let txn = try reader ?? Transaction(readOn: env)
        try txn.renew()
        do {
            try checkSchemaVersion(txn)
        } catch {
            txn.reset()
            throw error
        }
        reader = txn
        snapshotOpen = true
        moveView(to: txn.id)
        return txn
    }

    /// Runs `body` holding a frozen handle's lock (directly for a live handle): state that reads cache
    /// in objects shared between threads (results' keys) is then changed by one thread at a time.
    @inline(__always)
    func synchronized<R>(_ body: () throws -> R) rethrows -> R {
        guard let frozenLock else { return try body() }
        return try frozenLock.withLock(body)
    }

    /// Throws ``LatticeError/schemaChanged(path:fileVersion:handleVersion:)`` when the snapshot `txn` sees
    /// another schema version than this handle opened (another handle migrated the file): this handle's
    /// column positions would misread it. One lookup in the small metadata table.
    func checkSchemaVersion(_ txn: Transaction) throws {
        let version = try Lattice.schemaVersionKey.withUnsafeBytes { key in
            try txn.get(metaTable, key) { $0.map { loadLE($0, as: UInt64.self) } }
        }
        if let version, version != configuration.schemaVersion {
            throw LatticeError.schemaChanged(path: env.path, fileVersion: version, handleVersion: configuration.schemaVersion)
        }
    }

    private static let schemaVersionKey = Array("schemaVersion".utf8)

    /// Why `deleteIfMigrationNeeded` refuses while another handle of this process has the file open.
    private static let openInThisProcess = "deleteIfMigrationNeeded cannot delete the file while another handle of this process has it open "
        + "(its schema or schema version differs from the configuration's); close every handle on the file first."

    /// Throws while another process has the file open (it holds a slot in LMDB's reader table: every
    /// handle keeps one from its opening until it closes). Slots of dead processes are freed first.
    static func refuseWhileOtherProcessesHaveItOpen(_ env: Environment) throws {
        _ = try env.clearStaleReaders()
        let me = getpid()
        if let other = try env.readerSlots().first(where: { $0.pid != me }) {
            throw LatticeError.storage(path: env.path, code: EBUSY, message:
                "deleteIfMigrationNeeded cannot delete the file while another process (pid \(other.pid)) has it open.")
        }
    }

    /// Runs a read for a non-throwing API; a storage failure there stops with a message.
    func reading<R>(_ what: @autoclosure () -> String, _ body: (Transaction) throws -> R) -> R {
        do {
            return try synchronized { try body(readTransaction()) }
        } catch {
            fatalError(Lattice.stopMessage("reading \(what())", path: env.path, error))
        }
    }

    /// Marks everything read so far as possibly stale.
    func didChange() {
        didEndSnapshot()
        structure &+= 1
        view &+= 1
        viewCommit = 0
    }

    /// After the end of a snapshot or a write transaction: records read may be stale (a lent one may be
    /// gone); what the next one sees beyond that is told by `moveView(to:)` when it starts.
    func didEndSnapshot() {
        generation &+= 1
        recordWrites &+= 1
    }

    /// A snapshot or write transaction starts on commit `id`: on another commit than the handle knows,
    /// the keys of collections and of objects selected by their values may have changed.
    func moveView(to id: Int) {
        guard id != viewCommit else { return }
        structure &+= 1
        view &+= 1
        viewCommit = id
    }

    /// After a change of list, set, map or backlink entries: records and collections' keys may be stale.
    func didChangeCollections() {
        generation &+= 1
        structure &+= 1
    }

    /// After a record write of class `info`: records may be stale; so may the keys of collections when an
    /// object was added or deleted or a link changed, and the objects of `info` selected by their values
    /// when one was added or deleted or one of `columns` (a `ChangeSet.columnBit` mask) was written.
    func didWriteRecord(of info: ClassInfo, addedOrDeleted: Bool, linksChanged: Bool, columns: UInt64) {
        generation &+= 1
        recordWrites &+= 1
        if addedOrDeleted || linksChanged { structure &+= 1 }
        guard addedOrDeleted || columns != 0 else { return }
        let id = info.writesID ?? ObjectIdentifier(info)
        if addedOrDeleted {
            classWrites[id, default: ClassWrites()].membership &+= 1
            return
        }
        var mask = columns
        while mask != 0 {
            classWrites[id, default: ClassWrites()].columns[mask.trailingZeroBitCount] &+= 1
            mask &= mask - 1
        }
    }

    /// Changes whenever the objects of class `info` that a query on `columns` (a `ChangeSet.columnBit`
    /// mask; 0: all objects of the class) selects, or their order, may have: a cache of their keys is
    /// valid while it does not.
    func selectionVersion(of info: ClassInfo, columns: UInt64) -> (view: UInt64, membership: UInt64, columns: UInt64) {
        guard let writes = classWrites[info.writesID ?? ObjectIdentifier(info)] else { return (view, 0, 0) }
        var sum: UInt64 = 0
        var mask = columns
        while mask != 0 {
            sum &+= writes.columns[mask.trailingZeroBitCount]
            mask &= mask - 1
        }
        return (view, writes.membership, sum)
    }

    /// Whether records read through `txn` may be kept where the map has them instead of copied: in a
    /// read snapshot of a live handle on a plaintext file. Such a record stays valid while the snapshot
    /// is open, and objects use it only while the handle's generation is the one they read it at: every
    /// end of the snapshot (`releaseSnapshot`) starts a new generation. A write transaction's values
    /// move with its later updates, decrypted values live in scratch memory, and a frozen handle caches
    /// copies (see `Object.attach`).
    @inline(__always)
    func lendsRecords(_ txn: Transaction) -> Bool { !txn.isWrite && !isEncrypted && frozenLock == nil }

    /// Ends the read snapshot (keeping its transaction for reuse); the next read starts on the latest
    /// commit. Starts a new generation: records lent by the snapshot (see `lendsRecords`) are not read again.
    func releaseSnapshot() {
        guard frozenLock == nil else { return }
        if snapshotOpen {
            // Readers that take the snapshot's data lazily finish reading it first.
            if !snapshotReaders.isEmpty {
                let readers = snapshotReaders
                snapshotReaders = []
                for reader in readers { reader.value?.snapshotWillEnd() }
            }
            // A snapshot shared with frozen handles stays theirs: let go of it instead of ending it.
            if reader?.sharedLock != nil { reader = nil } else { reader?.reset() }
            didEndSnapshot()
        }
        snapshotOpen = false
    }

    /// Calls `reader.snapshotWillEnd()` before the handle's current read snapshot ends, unless `reader` is
    /// gone by then. Only for a live handle (a frozen one's snapshot never ends).
    func readUntilSnapshotEnds(_ reader: SnapshotReader) {
        snapshotReaders.removeAll { $0.value == nil }
        snapshotReaders.append(WeakSnapshotReader(value: reader))
    }

    /// Moves the handle to the latest commit and delivers the notifications of its observers that are
    /// due (see the *Notifications* article). Returns whether it saw anything new.
    /// Inside a write transaction the handle already sees the latest state, and this does nothing.
    @discardableResult
    public func refresh() -> Bool {
        if writer != nil || frozenLock != nil { return false }
        // Nothing committed since the snapshot began: it stays open, and what was read from it current
        // (unless the map waits to grow: that needs every snapshot of the process closed).
        if snapshotOpen, let reader, reader.id == env.lastTransactionID, !env.gate.resizeWaiting {
            deliverNotifications()
            return false
        }
        // Ending an open snapshot starts a new generation; with none open, nothing was read since the last one.
        releaseSnapshot()
        do {
            _ = try synchronized { try readTransaction() }
        } catch {
            // Another handle migrated the file: this one cannot read it with its columns. Its observers end
            // with the error; a write throws it, a read stops with it. Any other storage error stops here,
            // as every read that cannot throw does.
            guard case .schemaChanged? = error as? LatticeError else {
                fatalError(Lattice.stopMessage("reading the latest snapshot", path: env.path, error))
            }
            (observationState as? HandleObservation)?.fail(error)
            return false
        }
        deliverNotifications()
        return true
    }

    /// Releases the snapshot so its pages can be reused (the next read starts a new one). Objects read
    /// before become invalid; results stay usable and re-read. Cancels a write transaction in progress.
    public func invalidate() {
        if frozenLock != nil { return }  // a frozen handle's snapshot lasts as long as the handle
        if writer != nil { cancelWrite() }
        releaseSnapshot()
        epoch &+= 1
        didChange()
    }

    // MARK: Reading objects

    func classInfo(_ type: Object.Type) -> ClassInfo? {
        if let last = lastClassInfo, last.type == type { return last }
        let info = classesByType[ObjectIdentifier(type)]
        if info != nil, frozenLock == nil { lastClassInfo = info }
        return info
    }

    func requireClass(_ type: Object.Type) throws -> ClassInfo {
        guard let info = classInfo(type) else { throw LatticeError.classNotInSchema(className: "\(type)") }
        return info
    }

    /// A copy of the record stored under `key`, or nil.
    func fetchRecord(_ info: ClassInfo, key: Int64) throws -> RecordBuffer? {
        try fetchStorage(info, key: key, in: readTransaction()).map { RecordBuffer(storage: $0, slice: RecordSlice($0.bytes)) }
    }

    /// The record stored under `key` as `txn` sees it, copied into a storage of its own, or nil.
    private func fetchStorage(_ info: ClassInfo, key: Int64, in txn: Transaction) throws -> RecordStorage? {
        try KeyCodec.withObjectKey(key) { k in try txn.get(info.objectsTable, k) { $0.map(RecordStorage.copy) } }
    }

    /// A managed instance (of class `type`, by default `info.type`) of the object stored under `key`, or
    /// nil: its record is read in place (see `lendsRecords`) or copied once, straight into the storage the
    /// object keeps. The object is made outside the lookup's closure (inside it, what the closure
    /// captures is retained and released around every call).
    func fetchObject(_ info: ClassInfo, key: Int64, type: Object.Type? = nil) throws -> Object? {
        let txn = try readTransaction()
        let storage: RecordStorage?
        let bytes: UnsafeRawBufferPointer
        if lendsRecords(txn) {
            // The bytes stay valid after `get` returns (see `lendsRecords`).
            guard let lent = try KeyCodec.withObjectKey(key, { k in try txn.get(info.objectsTable, k) { $0 } }) else { return nil }
            (storage, bytes) = (nil, lent)
        } else {
            guard let copy = try fetchStorage(info, key: key, in: txn) else { return nil }
            (storage, bytes) = (copy, copy.bytes)
        }
        let object = info.instance(type ?? info.type)
        object.attach(to: self, info: info, key: key, storage: storage, slice: RecordSlice(bytes))
        return object
    }

    /// A managed instance of class `type` of the stored object `key` whose record `txn` returned as `bytes`:
    /// the object reads the record where it is when `txn` lends it, from a copy otherwise.
    func materialize(_ type: Object.Type, _ info: ClassInfo, key: Int64, bytes: UnsafeRawBufferPointer, in txn: Transaction) -> Object {
        let object = info.instance(type)
        let kept = keptRecord(bytes, in: txn)
        object.attach(to: self, info: info, key: key, storage: kept.storage, slice: kept.slice)
        return object
    }

    /// How an object keeps a record `txn` returned as `bytes`: where it is when `txn` lends it (see
    /// `lendsRecords`) and no copy is asked for, otherwise a copy in a storage of its own.
    func keptRecord(_ bytes: UnsafeRawBufferPointer, in txn: Transaction, copied: Bool = false) -> (storage: RecordStorage?, slice: RecordSlice) {
        if !copied && lendsRecords(txn) { return (nil, RecordSlice(bytes)) }
        let storage = RecordStorage.copy(bytes)
        return (storage, RecordSlice(storage.bytes))
    }

    /// A managed instance of class `type` of the stored object `key`, for non-generic callers.
    func materialize(_ type: Object.Type, _ info: ClassInfo, key: Int64, record: RecordBuffer?) -> Object {
        let object = info.instance(type)
        object.attach(to: self, info: info, key: key, record: record)
        return object
    }

    /// A managed instance of the stored object `key`.
    func materialize<T: Object>(_ type: T.Type, _ info: ClassInfo, key: Int64, record: RecordBuffer?) -> T {
        let object = unsafeDowncast(info.instance(T.self), to: T.self)  // `T.self.init()` is a T
        object.attach(to: self, info: info, key: key, record: record)
        return object
    }

    /// A managed instance of class `type` of the stored object `key`, its record read now (one lookup;
    /// none found: the instance reads as deleted).
    func materializeReading(_ type: Object.Type, _ info: ClassInfo, key: Int64) -> Object {
        reading("a '\(info.name)' object") { _ in try fetchObject(info, key: key, type: type) } ?? materialize(type, info, key: key, record: nil)
    }

    /// The first (or last) object of the class `info`, an instance of `type`, or nil when it has none:
    /// one read of the table's end. Not generic, so that `Results.first`, which runs unspecialized, does
    /// not look up the metadata of `Element?` on every call.
    func classEnd(_ type: Object.Type, _ info: ClassInfo, first: Bool) -> Object? {
        reading("the objects of '\(info.name)'") { txn in
            if txn.lendsEnds(info.objectsTable) {
                guard let end = try txn.lentEnd(info.objectsTable, last: !first) else { return nil }
                return materialize(type, info, key: Runs.withKey(end.number, KeyCodec.int), bytes: end.value, in: txn)
            }
            return try txn.withEnd(info.objectsTable, last: !first) { entry in
                entry.map { materialize(type, info, key: KeyCodec.int($0.key), bytes: $0.value, in: txn) }
            }
        }
    }

    /// A managed instance (of class `info.type`) of the stored object `key`, for non-generic callers.
    func materialize(_ info: ClassInfo, key: Int64, record: RecordBuffer?) -> Object {
        materialize(info.type, info, key: key, record: record)
    }

    /// The object of class `type` whose primary key is `key`, or nil when there is none (or the class
    /// has no primary key, is not in the schema, or `key` is not of the primary key's type).
    public func object<T: Object, Key>(ofType type: T.Type, forPrimaryKey key: Key) -> T? {
        guard let info = classInfo(type), let pk = info.primaryKey else { return nil }
        // The lookup returns `Object?` (an instance of `info.type`, which is `T`): this function runs
        // unspecialized, where passing `T?` through the generic `reading` would look its metadata up each call.
        let found: Object?
        if info.keyedByPrimaryKey, let objectKey = Lattice.integerKey(key) {
            // An integer key of a class keyed by its primary key is the object key: one lookup, no `Any` casts.
            found = reading("'\(info.name)' with primary key \(key)") { _ in try fetchObject(info, key: objectKey) }
        } else {
            guard let payload = Lattice.payload(of: key, as: pk.valueType) else { return nil }
            found = reading("'\(info.name)' with primary key \(key)") { _ -> Object? in
                if info.keyedByPrimaryKey {
                    guard let found = try findObject(info, primaryKeyPayload: payload) else { return nil }
                    return materialize(info, key: found.key, record: found.record)
                }
                // The object reads its record where it is (no copy, unlike `findObject`).
                return try indexedObject(pk, payload: payload) { candidate in
                    guard let object = try fetchObject(info, key: candidate), let stored = object._slice?.payload(pk.column),
                          payload.withUnsafeBytes({ $0.sameBytes(as: stored) }) else { return nil }
                    return object
                }
            }
        }
        guard let found else { return nil }
        return unsafeDowncast(found, to: T.self)
    }

    /// The payload of primary key `key` for a property of type `V`: encoded directly when `Key` is `V`
    /// (no cast through `Any`, which costs more than the encoding in unspecialized code), converted
    /// otherwise (`Int` for an `Int64` key, a `String` for a `UUID`...); nil when `key` does not convert.
    static func payload<Key, V: _Persistable>(of key: Key, as _: V.Type) -> [UInt8]? {
        var payload: [UInt8] = []
        if Key.self == V.self {
            withUnsafeBytes(of: key) { $0.load(as: V.self) }._latticeEncode(into: &payload)
            return payload
        }
        return V.encodeAny(key as Any, into: &payload) ? payload : nil
    }

    /// `key` as an Int64 when it is a standard signed integer; checks the type, not the value (cheap in
    /// unspecialized generic code, unlike a cast through `Any`). A value out of the primary key type's
    /// range finds nothing either way: no stored object has such a key.
    @inline(__always)
    static func integerKey<K>(_ key: K) -> Int64? {
        if K.self == Int64.self { return withUnsafeBytes(of: key) { $0.load(as: Int64.self) } }
        if K.self == Int.self { return Int64(withUnsafeBytes(of: key) { $0.load(as: Int.self) }) }
        if K.self == Int32.self { return Int64(withUnsafeBytes(of: key) { $0.load(as: Int32.self) }) }
        return nil
    }

    /// Finds an object by the encoded payload of its primary key.
    func findObject(_ info: ClassInfo, primaryKeyPayload payload: [UInt8]) throws -> (key: Int64, record: RecordBuffer)? {
        guard let pk = info.primaryKey else { return nil }
        if info.keyedByPrimaryKey {
            let key = payload.withUnsafeBytes { Int64._latticeDecode($0) }
            return try fetchRecord(info, key: key).map { (key, $0) }
        }
        return try indexedObject(pk, payload: payload) { candidate in
            guard let record = try fetchRecord(info, key: candidate) else { return nil }
            let holds = record.withBytes { bytes in
                payload.withUnsafeBytes { RecordView(bytes)?.payload(pk.column)?.sameBytes(as: $0) ?? false }
            }
            return holds ? (candidate, record) : nil
        }
    }

    /// What `read` gives for the object filed under the index key of primary-key payload `payload` (nil
    /// from `read`: that candidate holds another value). The first object filed there, found with one
    /// lookup, is the one, unless values that share a truncated or hashed index key are filed there too:
    /// then the others are tried. Inlined, so that each caller's `R` is specialized.
    @inline(__always)
    private func indexedObject<R>(_ pk: PropertyInfo, payload: [UInt8], _ read: (Int64) throws -> R?) throws -> R? {
        guard let table = pk.indexTable else { return nil }
        let txn = try readTransaction()
        let first = try payload.withUnsafeBytes { p in
            try withIndexKey(pk, payload: p) { k in try txn.withFirstDuplicate(table, k) { $0.map(KeyCodec.int) } }
        }
        guard let first else { return nil }
        if let found = try read(first) { return found }
        for key in try indexLookup(pk, payload: payload) where key != first {
            if let found = try read(key) { return found }
        }
        return nil
    }

    /// Object keys under the index key of `payload` (candidates when the key was truncated).
    func indexLookup(_ property: PropertyInfo, payload: [UInt8]) throws -> [Int64] {
        guard let dbi = property.indexTable else { return [] }
        let key = payload.withUnsafeBytes { indexKey(property, payload: $0) }
        let txn = try readTransaction()
        return try key.withUnsafeBytes { k in
            try txn.withCursor(dbi) { cursor in
                var keys: [Int64] = []
                var entry = try cursor.seek(exactly: k)
                while let e = entry {
                    keys.append(KeyCodec.int(e.value))
                    entry = try cursor.nextDuplicate()
                }
                return keys
            }
        }
    }

    /// Runs `body` with the index key of a property payload (`indexKey(_:payload:)`). An integer's key is
    /// the 8-byte form object keys have (`_PersistableInteger._latticeKey`), built on the stack.
    @inline(__always)
    func withIndexKey<R>(_ property: PropertyInfo, payload: UnsafeRawBufferPointer,
                         _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        if !isEncrypted, let value = property.kind.integer(fromPayload: payload) { return try KeyCodec.withObjectKey(value, body) }
        return try indexKey(property, payload: payload).withUnsafeBytes(body)
    }

    /// The index key of a property payload, truncated to fit LMDB's key limit; in an encrypted file, its
    /// keyed hash.
    func indexKey(_ property: PropertyInfo, payload: UnsafeRawBufferPointer) -> [UInt8] {
        hashed(Lattice.plainIndexKey(property, payload: payload), in: property.indexTable)
    }

    /// The order-preserving index key of a property payload, truncated to fit LMDB's key limit.
    static func plainIndexKey(_ property: PropertyInfo, payload: UnsafeRawBufferPointer) -> [UInt8] {
        var key: [UInt8] = []
        if !property.kind.key(fromPayload: payload, into: &key) { property.valueType.key(fromPayload: payload, into: &key) }
        if key.isEmpty { key.append(0) }
        if key.count > FileLayout.maxIndexKey { key.removeLast(key.count - FileLayout.maxIndexKey) }
        return key
    }

    /// In an encrypted file, the keyed hash `table` stores for the plain key `key`; `key` otherwise.
    @inline(__always)
    func hashed(_ key: [UInt8], in table: Table?) -> [UInt8] {
        guard isEncrypted, let table, let hasher = env.seals.hasher(table) else { return key }
        return hasher.hash(key)
    }

    /// True when no class of the schema has an object.
    public var isEmpty: Bool {
        reading("object counts") { txn in try classesByName.values.allSatisfy { try txn.count($0.objectsTable) == 0 } }
    }
}

/// Something that reads a handle's read snapshot lazily (a loop over results sorted by an indexed
/// property takes their keys a batch at a time) and so has to finish reading before the snapshot ends.
protocol SnapshotReader: AnyObject {
    /// Called while the snapshot is still open, before it ends (a write begins, `refresh()`, `invalidate()`).
    func snapshotWillEnd()
}

struct WeakSnapshotReader {
    weak var value: SnapshotReader?
}
