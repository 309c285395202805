extension Lattice {
    /// Logs the write transaction's changes when some process observes the file; returns the FIFO's
    /// write end to wake the observers with once the transaction has committed (nil: nobody observes,
    /// nothing was logged). Without observers this costs one failed `open` per FIFO path.
    func logChanges(_ write: WriteContext) throws -> Int32? {
        guard !write.changes.isEmpty, let fd = ChangeSignal.openIfListening(path: env.path) else { return nil }
        do {
            if let table = try changeLogTable() {
                try ChangeLog(table: table).append(write.txn, id: Int64(write.txn.id), write.changes)
            }
        } catch {
            ChangeSignal.discard(fd)
            throw error
        }
        return fd
    }

    /// The change log table; nil in a file written before it existed and opened read-only.
    func changeLogTable() throws -> Table? {
        try env.openTables([(FileLayout.changes, false)], create: false)[FileLayout.changes]
    }
}
