import Foundation
import Synchronization

/// What opening a file with a set of model classes builds (the classes bound to the file's tables, its
/// stored schema), kept while the file stays open in the process, so that opening it again with the same
/// configuration skips the work.
///
/// Realm code opens a handle wherever it needs one (`try Lattice()` in every function). Without this,
/// each open derives the table names, reads and compares the stored schema and binds every class
/// again: about 580,000 instructions (over 40 µs) for eight classes. With it, an open takes a reader
/// slot, reads three metadata values and compares their bytes with the ones the classes were built for.
///
/// The classes are reused only while the environment they were built on is the one open (table handles
/// belong to it) and only while the file's format, schema version and stored schema are byte for byte
/// the ones they were built for: another process's migration, or a handle that added classes to the
/// file, changes them, and the next open then takes the full path.
final class OpenedClasses: @unchecked Sendable {
    // @unchecked Sendable is safe: every field is a constant but `env`, a weak reference (whose loads the
    // Swift runtime makes atomic) written once here. The classes are linked before they are published
    // (under `registry`'s lock) and never change afterwards; frozen handles on other threads share them
    // the same way (`Lattice.init(sharing:snapshot:)`).

    /// What decides the open's outcome besides the file: the same key on the same file content builds
    /// the same classes. The migration block and `deleteIfMigrationNeeded` are left out: with the file's
    /// schema and version those of the configuration, neither does anything.
    struct Key: Equatable {
        var path: String
        var types: [ObjectIdentifier]
        var schemaVersion: UInt64
        var readOnly: Bool
        var encryptionKey: Data?

        /// Nil for configurations whose classes come from the file or a custom schema (never reused).
        init?(_ configuration: Lattice.Configuration, path: String) {
            guard !configuration.dynamicSchema, configuration.customSchema == nil else { return nil }
            self.path = path
            types = Set((configuration.objectTypes ?? ModelMetadata.derivedTypes).map(ObjectIdentifier.init)).sorted()
            schemaVersion = configuration.schemaVersion
            readOnly = configuration.readOnly
            encryptionKey = configuration.encryptionKey
        }
    }

    let key: Key
    private(set) weak var env: Environment?
    /// The metadata values the classes were built for, by key (see `checkedKeys`).
    private let metadata: [[UInt8]]
    let schema: Schema
    let classesByType: [ObjectIdentifier: ClassInfo]
    let classesByName: [String: ClassInfo]
    let dynamicClasses: DynamicClasses
    let metaTable: Table

    /// The metadata that, unchanged, means unchanged classes.
    private static let checkedKeys = [FileLayout.formatKey, "schemaVersion", "schema"].map { Array($0.utf8) }
    /// The classes of the files open now (a few: entries of closed files are dropped as others are added).
    private static let registry = Mutex<[OpenedClasses]>([])

    private init(key: Key, env: Environment, metadata: [[UInt8]], handle: Lattice) {
        self.key = key
        self.env = env
        self.metadata = metadata
        schema = handle.schema
        classesByType = handle.classesByType
        classesByName = handle.classesByName
        dynamicClasses = handle.dynamicClasses
        metaTable = handle.metaTable
    }

    /// The classes built for `configuration` by an earlier open, with the environment acquired and a
    /// reader taken on it, when the file still holds the metadata they were built for; nil otherwise
    /// (then nothing is held).
    static func reuse(_ configuration: Lattice.Configuration, path: String) throws -> (OpenedClasses, Environment, Transaction)? {
        guard let key = Key(configuration, path: path),
              let opened = registry.withLock({ $0.first { $0.key == key } }),
              let open = opened.env else { return nil }
        // Only the environment open now, never a new one (the file may have been closed and deleted since).
        guard let env = try Environment.acquireOpen(path: path, readOnly: configuration.readOnly) else { return nil }
        // Closed (and opened again) since: the table handles were the old environment's.
        guard env === open else {
            env.release()
            return nil
        }
        let reader: Transaction
        do {
            reader = try Transaction(readOn: env)
        } catch {
            env.release()
            throw error
        }
        if (try? snapshot(reader, { try opened.matches(reader) })) == true { return (opened, env, reader) }
        reader.abort()
        env.release()
        return nil
    }

    /// Keeps the classes `handle` (just opened with `configuration` by the full path) built, for the next
    /// open of the same configuration; only when its reader sees the stored schema the handle was built with.
    static func remember(_ handle: Lattice, configuration: Lattice.Configuration, path: String, reader: Transaction) {
        guard let key = Key(configuration, path: path),
              let values = try? snapshot(reader, {
                  try checkedKeys.map { key in
                      try key.withUnsafeBytes { k in try reader.get(handle.metaTable, k) { $0.map { Array($0) } } }
                  }
              })
        else { return }
        let metadata = values.compactMap { $0 }
        guard metadata.count == checkedKeys.count, metadata[1].count == 8,
              metadata[1].withUnsafeBytes({ loadLE($0, as: UInt64.self) }) == configuration.schemaVersion,
              (try? Lattice.decodeStoredSchema(metadata[2], path: path)) == handle.schema
        else { return }
        let opened = OpenedClasses(key: key, env: handle.env, metadata: metadata, handle: handle)
        registry.withLock { registry in
            registry.removeAll { $0.env == nil || $0.key == key }
            if registry.count >= 16 { registry.removeFirst() }
            registry.append(opened)
        }
    }

    /// `body` run on a snapshot `reader` (a handle's reader, idle until its first read) takes and lets go of.
    private static func snapshot<R>(_ reader: Transaction, _ body: () throws -> R) throws -> R {
        try reader.renew()
        defer { reader.reset() }
        return try body()
    }

    /// Whether `reader` sees the metadata these classes were built for.
    private func matches(_ reader: Transaction) throws -> Bool {
        for (key, expected) in zip(Self.checkedKeys, metadata) {
            let same = try key.withUnsafeBytes { k in
                try reader.get(metaTable, k) { value in
                    guard let value else { return false }
                    return expected.withUnsafeBytes { $0.sameBytes(as: value) }
                }
            }
            if !same { return false }
        }
        return true
    }
}
