extension Lattice {
    /// Logs the write transaction's changes when some process observes the file; returns the FIFOs'
    /// write ends to wake the observers with once the transaction has committed (nil: nobody observes,
    /// nothing was logged). Without observers this costs one failed `opendir` per FIFO directory.
    func logChanges(_ write: WriteContext) throws -> [Int32]? {
        guard !write.changes.isEmpty else { return nil }
        let listeners = ChangeSignal.openListeners(path: env.path)
        guard !listeners.isEmpty else { return nil }
        do {
            if let table = try changeLogTable() {
                try ChangeLog(table: table).append(write.txn, id: Int64(write.txn.id), write.changes)
            }
        } catch {
            ChangeSignal.discard(listeners)
            throw error
        }
        return listeners
    }

    /// The change log table; nil in a file written before it existed and opened read-only.
    func changeLogTable() throws -> Table? {
        try env.openedTable(FileLayout.changes) ?? env.openTables([(FileLayout.changes, false)], create: false)[FileLayout.changes]
    }
}
