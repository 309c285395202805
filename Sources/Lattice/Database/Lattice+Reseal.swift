import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension Lattice {
    /// Writes the latest commit to the new file `destination`, encrypted with `key` (or plaintext when
    /// nil), entry by entry: values are re-sealed by the new file's transaction, set and map keys re-keyed,
    /// indexes rebuilt from the records (an encrypted file's hashed keys cannot be turned back into
    /// values), and the change log left out (its transaction ids belong to this file). The file is
    /// removed again when anything fails.
    func writeResealedCopy(to destination: String, encryptionKey key: Data?) throws {
        if FileManager.default.fileExists(atPath: destination) {
            throw LatticeError.storage(path: destination, code: EEXIST, message: "a file already exists there; writeCopy never overwrites one.")
        }
        let options = EnvironmentOptions(maxReaders: env.options.maxReaders, maxDatabases: env.options.maxDatabases,
                                         sealPolicy: SealedTables())
        let copy = try Environment.acquire(path: destination, options: options)
        do {
            try copy.writerLock.lock()
            defer { copy.writerLock.unlock() }
            if let key { copy.seals.enable(FileCipher(key: key, salt: FileCipher.newSalt())) } else { copy.seals.enable(true, packed: true) }
            let names = try env.tableNames().filter { $0 != FileLayout.changes }
            let specs = names.map { (name: $0, dupSort: FileLayout.isDupSort($0)) }
            let sources = try env.openTables(specs, create: false)
            let targets = try copy.openTables(specs + [(FileLayout.changes, false)], create: true)
            try env.withReadTransaction { source in
                try copy.withWriteTransaction { target in
                    for name in names {
                        guard let from = sources[name], let to = targets[name] else { continue }
                        if name.hasPrefix("i:") || name.hasPrefix("f:") { continue }  // rebuilt below
                        try copyEntries(name, from: from, source, to: to, target)
                    }
                    var format: [UInt8] = []
                    appendLE(key == nil ? FileLayout.formatVersion : FileLayout.encryptedFormat, to: &format)
                    guard let meta = targets[FileLayout.meta] else {
                        throw LatticeError.invalidFile(path: env.path, reason: "its metadata database is missing.")
                    }
                    try Lattice.putMeta(target, meta, FileLayout.formatKey, format)
                    if let cipher = copy.seals.cipher { try Lattice.putMeta(target, meta, FileLayout.keyCheckKey, try cipher.keyCheck()) }
                    for info in classesByName.values { try rebuildIndexes(info, source, target, targets, copy) }
                }
            }
        } catch {
            copy.release()
            unlink(destination)
            unlink(FileMaintenance.lockPath(destination))
            throw error
        }
        copy.release()
        unlink(FileMaintenance.lockPath(destination))  // nobody else had the new file open
        try FileMaintenance.sync(destination)
    }

    /// Copies the entries of one database; sets and maps get keys of the new file (see `KeyedEntry`).
    private func copyEntries(_ name: String, from: Table, _ source: Transaction, to: Table, _ target: Transaction) throws {
        let keyed = name.hasPrefix("s:") || name.hasPrefix("m:")
        let plainMeta = [FileLayout.formatKey, FileLayout.keyCheckKey].map { Array($0.utf8) }
        try source.withCursor(from) { cursor in
            var entry = try cursor.first()
            while let e = entry {
                if name == FileLayout.meta, plainMeta.contains(where: { $0.elementsEqual(e.key) }) {
                    // Written for the new file by the caller.
                } else if keyed {
                    guard e.key.count >= 8, let plain = KeyedEntry.plain(source, key: e.key, value: e.value) else {
                        throw LatticeError.corruptFile(path: env.path, reason: "an entry of '\(name)' does not decode.")
                    }
                    let owner = KeyCodec.int(Bytes(rebasing: e.key[0..<8]))
                    let key = KeyedEntry.key(target, to, owner: owner, plain.key)
                    let value = KeyedEntry.value(target, to, plain.key, payload: plain.payload)
                    _ = try key.withUnsafeBytes { k in try value.withUnsafeBytes { try target.put(to, k, $0) } }
                } else if FileLayout.isDupSort(name) {
                    try target.putDuplicate(to, e.key, e.value, last: true)
                } else if try !target.put(to, e.key, e.value, mode: .append) {
                    try target.put(to, e.key, e.value)
                }
                entry = try cursor.next()
            }
        }
    }

    /// Fills the new file's indexes of `info` from its records.
    private func rebuildIndexes(_ info: ClassInfo, _ source: Transaction, _ target: Transaction, _ targets: [String: Table],
                                _ copy: Environment) throws {
        var indexes: [(property: PropertyInfo, table: Table, folded: Bool)] = []
        for p in info.indexed {
            if p.indexTable != nil, let t = targets[FileLayout.index(info.name, p.name)] { indexes.append((p, t, false)) }
            if p.foldedIndexTable != nil, let t = targets[FileLayout.foldedIndex(info.name, p.name)] { indexes.append((p, t, true)) }
        }
        if indexes.isEmpty { return }
        try source.withCursor(info.objectsTable) { cursor in
            var entry = try cursor.first()
            while let e = entry {
                guard let view = RecordView(e.value) else {
                    throw LatticeError.corruptFile(path: env.path, reason: "the record under object key \(KeyCodec.int(e.key)) of '\(info.name)' does not decode.")
                }
                for index in indexes {
                    guard let payload = view.payload(index.property.column) else { continue }  // a record older than the column
                    var key = index.folded ? Lattice.plainFoldedIndexKey(index.property, payload: payload)
                        : Lattice.plainIndexKey(index.property, payload: payload)
                    if let hasher = copy.seals.hasher(index.table) { key = hasher.hash(key) }
                    try key.withUnsafeBytes { try target.putDuplicate(index.table, $0, e.key, last: false) }
                }
                entry = try cursor.next()
            }
        }
    }
}
