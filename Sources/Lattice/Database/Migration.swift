/// Called with the migration and the file's old schema version (see ``Lattice/Configuration/migrationBlock``).
public typealias MigrationBlock = @Sendable (Migration, UInt64) throws -> Void

/// The context of a schema migration: the schema stored in the file and the one being opened.
public final class Migration {
    /// The schema stored in the file before the migration.
    public let oldSchema: Schema
    /// The schema the file is migrated to.
    public let newSchema: Schema

    init(oldSchema: Schema, newSchema: Schema) {
        self.oldSchema = oldSchema
        self.newSchema = newSchema
    }
}
