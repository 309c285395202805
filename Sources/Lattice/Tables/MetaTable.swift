/// `meta`: the file's metadata under string keys (`format`, `schemaVersion`, `schema`, `seq:<Class>`).
struct MetaTable {
    let table: Table

    func value(_ txn: Transaction, _ key: String) throws -> [UInt8]? {
        try Array(key.utf8).withUnsafeBytes { k in try txn.get(table, k) { $0.map { Array($0) } } }
    }

    func set(_ txn: Transaction, _ key: String, _ value: [UInt8]) throws {
        try Array(key.utf8).withUnsafeBytes { k in _ = try value.withUnsafeBytes { v in try txn.put(table, k, v) } }
    }

    func count(_ txn: Transaction) throws -> Int { try txn.count(table) }
}
