import Foundation
import GRDB

/// The headline GRDB record: synthesized Codable, dates as seconds since 1970.
struct CodablePerson: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "person"
    var id: Int64
    var name: String
    var email: String
    var age: Int
    var score: Double
    var created: Date

    static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { .timeIntervalSince1970 }
    static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { .timeIntervalSince1970 }

    init(_ p: Person) {
        id = p.id; name = p.name; email = p.email; age = p.age; score = p.score; created = p.created
    }
}

/// GRDB's fastest record: hand-written row decoding (by column index) and encoding.
struct ManualPerson: FetchableRecord, PersistableRecord {
    static let databaseTableName = "person"
    var id: Int64
    var name: String
    var email: String
    var age: Int
    var score: Double
    var created: Date

    init(_ p: Person) {
        id = p.id; name = p.name; email = p.email; age = p.age; score = p.score; created = p.created
    }

    init(row: Row) throws {
        id = row[0]
        name = row[1]
        email = row[2]
        age = row[3]
        score = row[4]
        created = Date(timeIntervalSince1970: row[5])
    }

    func encode(to container: inout PersistenceContainer) throws {
        container["id"] = id
        container["name"] = name
        container["email"] = email
        container["age"] = age
        container["score"] = score
        container["created"] = created.timeIntervalSince1970
    }
}

/// What the workload needs of a GRDB record type.
protocol BenchRecord: FetchableRecord, PersistableRecord {
    init(_ p: Person)
    var name: String { get }
    var age: Int { get }
    var score: Double { get set }
}
extension CodablePerson: BenchRecord {}
extension ManualPerson: BenchRecord {}

/// GRDB's `DatabasePool` (WAL; GRDB sets synchronous=NORMAL) with the workload's pragmas.
final class GRDBEngine<Record: BenchRecord> {
    let path: String
    let pool: DatabasePool

    static var configuration: Configuration {
        var config = Configuration()
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA cache_size = -2000")
            try db.execute(sql: "PRAGMA mmap_size = 0")
        }
        return config
    }

    /// Opens an existing database (cold start).
    init(openingExisting path: String) throws {
        self.path = path
        pool = try DatabasePool(path: path, configuration: Self.configuration)
    }

    /// Creates the table and index in a new database.
    init(path: String) throws {
        self.path = path
        pool = try DatabasePool(path: path, configuration: Self.configuration)
        try pool.write { db in
            try db.execute(sql: """
                CREATE TABLE person(id INTEGER PRIMARY KEY, name TEXT, email TEXT, age INTEGER, score REAL, created REAL);
                CREATE INDEX person_age ON person(age);
                """)
        }
    }

    func settings() throws -> String {
        try pool.write { db in
            let page = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 0
            let cache = try Int.fetchOne(db, sql: "PRAGMA cache_size") ?? 0
            let mmap = try Int.fetchOne(db, sql: "PRAGMA mmap_size") ?? 0
            let sync = try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? 0
            let journal = try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? ""
            let version = try String.fetchOne(db, sql: "SELECT sqlite_version()") ?? ""
            return "sqlite \(version), journal_mode=\(journal), synchronous=\(sync), page_size=\(page), cache_size=\(cache), mmap_size=\(mmap)"
        }
    }

    func insert(_ people: ArraySlice<Person>) throws {
        try pool.write { db in for p in people { try Record(p).insert(db) } }
    }

    func checkpoint() throws {
        try pool.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
    }

    /// Step 2 with `synchronous` set to `mode` for the duration.
    func insertSmall(_ people: ArraySlice<Person>, synchronous mode: String) throws {
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = \(mode)") }
        for p in people { try pool.write { db in try Record(p).insert(db) } }
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
    }

    func getByID(_ ids: [Int64]) throws -> Int {
        try pool.read { db in
            var sum = 0
            for id in ids {
                let p = try Record.fetchOne(db, key: id)!
                sum += p.age + Int(p.name.utf8.first!)
            }
            return sum
        }
    }

    /// 3b: an explicitly cached `SELECT * FROM person WHERE id = ?`.
    func getByIDCached(_ ids: [Int64]) throws -> Int {
        try pool.read { db in
            var sum = 0
            let statement = try db.cachedStatement(sql: "SELECT * FROM person WHERE id = ?")
            for id in ids {
                let p = try Record.fetchOne(statement, arguments: [id])!
                sum += p.age + Int(p.name.utf8.first!)
            }
            return sum
        }
    }

    func scanAll() throws -> (Int, Double) {
        try pool.read { db in
            let all = try Record.fetchAll(db)
            return (all.count, all.reduce(0) { $0 + $1.score })
        }
    }

    func queryIndexed() throws -> (Int, Double) {
        try pool.read { db in
            let found = try Record.filter(Column("age") == 42).fetchAll(db)
            return (found.count, found.reduce(0) { $0 + $1.score })
        }
    }

    func queryRange() throws -> (Int, Int, Double) {
        try pool.read { db in
            let request = Record.filter(Column("age") >= 20 && Column("age") < 30)
            let count = try request.fetchCount(db)
            let found = try request.fetchAll(db)
            return (count, found.count, found.reduce(0) { $0 + $1.score })
        }
    }

    /// 7: object API (fetch, modify, update).
    func update(_ ids: [Int64]) throws {
        try pool.write { db in
            for id in ids {
                var p = try Record.fetchOne(db, key: id)!
                p.score += 1.0
                try p.update(db)
            }
        }
    }

    /// 7b: a cached UPDATE statement, no record round-trip.
    func updateCached(_ ids: [Int64]) throws {
        try pool.write { db in
            let statement = try db.cachedStatement(sql: "UPDATE person SET score = score + 1.0 WHERE id = ?")
            for id in ids { try statement.execute(arguments: [id]) }
        }
    }

    func delete(_ ids: [Int64]) throws {
        try pool.write { db in for id in ids { _ = try Record.deleteOne(db, key: id) } }
    }

    func count() throws -> Int {
        try pool.read { db in try Record.fetchCount(db) }
    }
}
