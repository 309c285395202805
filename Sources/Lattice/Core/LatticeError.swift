/// Every error Lattice throws.
///
/// Each case carries enough context (file, class, property, value) to produce a message
/// that tells the user what went wrong without reading the source. `description` renders it.
public enum LatticeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A read-only open of a file that does not exist.
    case fileNotFound(path: String)
    /// The file exists but is not a Lattice database (or is damaged beyond opening).
    case invalidFile(path: String, reason: String)
    /// The file is a Lattice database, but part of it is damaged: a value fails its checksum, or the file
    /// is shorter than its own last page. `reason` names the database and key, or the sizes. Nothing
    /// damaged is returned as data; ``Lattice/verify()`` lists every damaged place.
    case corruptFile(path: String, reason: String)
    /// The operating system refused access to the file or its directory (for example a read-write open
    /// of a file this user may only read). `operation` says what was attempted.
    case permissionDenied(path: String, operation: String)
    /// The file was written by a newer (or unknown) Lattice file format.
    case incompatibleFormatVersion(path: String, found: UInt32, supported: UInt32)
    /// The file's stored schema differs from the configuration's at the same schema version.
    /// `differences` lists each one, for example `Property 'ToDoItem.priority' has been added.`
    case schemaMismatch(path: String, differences: [String])
    /// The file's schema version is newer than the configuration's.
    case schemaVersionTooOld(path: String, fileVersion: UInt64, configuredVersion: UInt64)
    /// A model class cannot be stored as declared (bad primary key type, name too long, ...).
    case invalidSchema(className: String, reason: String)
    /// A configuration option or feature that this version does not implement yet.
    case unsupported(feature: String)
    /// An object with this primary key value already exists.
    case duplicatePrimaryKey(className: String, value: String)
    /// The primary key of a managed object was changed.
    case primaryKeyChanged(className: String, property: String)
    /// `add(_:update:)`/`create` with `.modified` or `.all` on a type without a primary key.
    case noPrimaryKey(className: String, operation: String)
    /// A value of the wrong type was given for a property.
    case wrongType(className: String, property: String, expected: String, found: String)
    /// A required property was not given a value.
    case missingValue(className: String, property: String)
    /// A key in a dictionary or array that names no property.
    case unknownProperty(className: String, property: String)
    /// A String or Data value is larger than the 16 MiB limit.
    case valueTooLarge(className: String, property: String, size: Int, limit: Int)
    /// The object is managed by a different file (or in-memory store) than the handle.
    case objectFromAnotherLattice(className: String)
    /// The object has been deleted, or its handle was invalidated.
    case objectInvalidated(className: String)
    /// An operation that needs a managed object was given an unmanaged one.
    case objectNotManaged(className: String, operation: String)
    /// The class is not part of this handle's schema.
    case classNotInSchema(className: String)
    /// A write operation was attempted outside a write transaction.
    case notInWriteTransaction(operation: String)
    /// `beginWrite()` while this handle, or another handle of the same file on this thread, is in a write
    /// transaction (a thread can hold one write transaction per file).
    case alreadyInWriteTransaction
    /// A write transaction was used from a thread other than the one that began it (for example
    /// `beginWrite()` in a synchronous actor method and `commitWrite()` after an `await`). LMDB ties a write
    /// transaction to its thread: end it where it began, or use `write { }` / `asyncWrite { }`.
    case wrongThread(operation: String)
    /// A write was attempted through a read-only handle.
    case readOnly(path: String, operation: String)
    /// The memory map could not grow any further.
    case mapFull(path: String, mapSize: Int)
    /// An error from the storage engine or the operating system.
    case storage(path: String, code: Int32, message: String)
    /// A predicate or sort key could not be parsed or does not fit the schema.
    case invalidQuery(message: String)
    /// An embedded object was used outside its single parent (added alone, or given a second parent).
    case embeddedObject(className: String, reason: String)
    /// A write would leave more versions of the file alive than
    /// ``Lattice/Configuration/maximumNumberOfActiveVersions`` allows: `pinned` versions, from the oldest
    /// one an open snapshot reads (handles, frozen objects, other processes) to the latest, are alive
    /// besides the one the write creates.
    case tooManyActiveVersions(path: String, pinned: Int, limit: UInt)
    /// A write through a frozen handle, object or collection (frozen data never changes: `thaw()` it).
    case frozen(operation: String)
    /// A schema migration cannot be done as asked (the file is left as it was).
    case migrationFailed(className: String, reason: String)
    /// ``Lattice/Configuration/encryptionKey`` (or the key given to `writeCopy`) is not 64 bytes long.
    case invalidEncryptionKey(path: String, length: Int)
    /// The file is encrypted and the configuration gives no ``Lattice/Configuration/encryptionKey``.
    case encryptionKeyRequired(path: String)
    /// The configured key is not the one the file was encrypted with (its key check does not open).
    case wrongEncryptionKey(path: String)
    /// The configuration gives an encryption key, but the file is not encrypted. Files are encrypted (or
    /// decrypted) by copy only: `writeCopy(toFile:encryptionKey:)`.
    case notEncrypted(path: String)
    /// An encrypted value fails authentication: its bytes were changed, or it was moved from another key
    /// or table, after it was written. `reason` names the database and key. Nothing is decrypted from it.
    case authenticationFailed(path: String, reason: String)
    /// Another handle (of this or another process) migrated the file to another schema version after this
    /// handle opened it: this handle's classes no longer describe the file. Open a new handle.
    case schemaChanged(path: String, fileVersion: UInt64, handleVersion: UInt64)

    public var description: String {
        switch self {
        case let .fileNotFound(path):
            return "No database file at '\(path)' (a read-only handle never creates one)."
        case let .invalidFile(path, reason):
            return "'\(path)' is not a Lattice database: \(reason)"
        case let .corruptFile(path, reason):
            return "'\(path)' is damaged: \(reason) Nothing damaged was returned. Run `Lattice.verify()` on the file to list "
                + "every damaged place, and restore it from a backup."
        case let .permissionDenied(path, operation):
            return "Permission denied: cannot \(operation) '\(path)'. Check the permissions of the file and its directory "
                + "(and its '-lock' file), or open it read-only (Configuration.readOnly)."
        case let .incompatibleFormatVersion(path, found, supported):
            return "'\(path)' has file format version \(found); this Lattice reads up to version \(supported)."
        case let .schemaMismatch(path, differences):
            return "The schema of '\(path)' differs from the configured schema at the same schema version; "
                + "raise schemaVersion to migrate:\n- " + differences.joined(separator: "\n- ")
        case let .schemaVersionTooOld(path, fileVersion, configuredVersion):
            return "'\(path)' has schema version \(fileVersion), newer than the configured \(configuredVersion)."
        case let .invalidSchema(className, reason):
            return "Invalid model class '\(className)': \(reason)"
        case let .unsupported(feature):
            return "\(feature) is not supported yet."
        case let .duplicatePrimaryKey(className, value):
            return "An object of type '\(className)' with primary key \(value) already exists."
        case let .primaryKeyChanged(className, property):
            return "The primary key '\(className).\(property)' of a managed object cannot be changed."
        case let .noPrimaryKey(className, operation):
            return "'\(className)' has no primary key, so \(operation) is not possible."
        case let .wrongType(className, property, expected, found):
            return "Property '\(className).\(property)' expects a value of type \(expected), not \(found)."
        case let .missingValue(className, property):
            return "Property '\(className).\(property)' is required and was given no value."
        case let .unknownProperty(className, property):
            return "'\(className)' has no persisted property named '\(property)'."
        case let .valueTooLarge(className, property, size, limit):
            return "The value of '\(className).\(property)' is \(size) bytes; the limit is \(limit) bytes."
        case let .objectFromAnotherLattice(className):
            return "This '\(className)' object is managed by a different database."
        case let .objectInvalidated(className):
            return "The '\(className)' object has been deleted or invalidated."
        case let .objectNotManaged(className, operation):
            return "\(operation) needs a managed object, but this '\(className)' object was never added."
        case let .classNotInSchema(className):
            return "'\(className)' is not in this database's schema (add it to Configuration.objectTypes)."
        case let .notInWriteTransaction(operation):
            return "\(operation) must be called inside a write transaction."
        case .alreadyInWriteTransaction:
            return "A write transaction on this file is already open on this thread (through this handle or another one)."
        case let .wrongThread(operation):
            return "\(operation) was called on a thread other than the one that began the write transaction; "
                + "a write transaction must begin and end on one thread (use write { } or asyncWrite { })."
        case let .readOnly(path, operation):
            return "'\(path)' was opened read-only; \(operation) is not allowed."
        case let .mapFull(path, mapSize):
            return "'\(path)' cannot grow its memory map beyond \(mapSize) bytes."
        case let .storage(path, code, message):
            return "Storage error \(code) on '\(path)': \(message)"
        case let .invalidQuery(message):
            return "Invalid query: \(message)"
        case let .embeddedObject(className, reason):
            return "Embedded object '\(className)': \(reason)"
        case let .tooManyActiveVersions(path, pinned, limit):
            return "A write to '\(path)' would leave \(pinned + 1) versions alive, more than maximumNumberOfActiveVersions "
                + "(\(limit)): \(pinned) are kept by the oldest open snapshot. Release frozen objects, refresh() or invalidate() "
                + "idle handles, or end long reads in other processes."
        case let .frozen(operation):
            return "\(operation) is not allowed on frozen data: a frozen handle, object or collection never changes; "
                + "thaw() it (or resolve a ThreadSafeReference) to get a live one and write through that."
        case let .migrationFailed(className, reason):
            return "Cannot migrate class '\(className)': \(reason)"
        case let .invalidEncryptionKey(path, length):
            return "The encryption key for '\(path)' is \(length) bytes long; it must be exactly 64 bytes."
        case let .encryptionKeyRequired(path):
            return "'\(path)' is encrypted: open it with its 64-byte Configuration.encryptionKey."
        case let .wrongEncryptionKey(path):
            return "The encryption key does not open '\(path)': the file was encrypted with another key."
        case let .notEncrypted(path):
            return "'\(path)' is not encrypted, but the configuration gives an encryptionKey. Open it without a key; to encrypt it, "
                + "write an encrypted copy with writeCopy(toFile:encryptionKey:) and use the copy."
        case let .authenticationFailed(path, reason):
            return "'\(path)' failed authentication: \(reason) Nothing was decrypted from it. Run `Lattice.verify()` to list every "
                + "damaged place, and restore the file from a backup."
        case let .schemaChanged(path, fileVersion, handleVersion):
            return "'\(path)' was migrated to schema version \(fileVersion) after this handle opened it at version \(handleVersion); "
                + "open a new handle with the new schema."
        }
    }
}
