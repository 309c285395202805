import Foundation
import XCTest
@testable import Lattice

/// Every scalar type, each in a plain and (where allowed) an indexed copy, plus optionals.
final class QItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var int = 0
    @Persisted(indexed: true) var intIdx = 0
    @Persisted var optInt: Int?
    @Persisted(indexed: true) var optIntIdx: Int?
    @Persisted var int8: Int8 = 0
    @Persisted var int16: Int16 = 0
    @Persisted var int32: Int32 = 0
    @Persisted var int64: Int64 = 0
    @Persisted var double = 0.0
    @Persisted var optDouble: Double?
    @Persisted var float: Float = 0
    @Persisted var string = ""
    @Persisted(indexed: true) var stringIdx = ""
    @Persisted var optString: String?
    @Persisted(indexed: true) var optStringIdx: String?
    @Persisted var bool = false
    @Persisted(indexed: true) var boolIdx = false
    @Persisted var optBool: Bool?
    @Persisted var date = Date(timeIntervalSinceReferenceDate: 0)
    @Persisted(indexed: true) var dateIdx = Date(timeIntervalSinceReferenceDate: 0)
    @Persisted var optDate: Date?
    @Persisted var data = Data()
    @Persisted var optData: Data?
    @Persisted var uuid = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    @Persisted(indexed: true) var uuidIdx = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    @Persisted var decimal: Decimal = 0
    @Persisted var optDecimal: Decimal?
    @Persisted var objectId = ObjectId(bytes: [UInt8](repeating: 0, count: 12))!
    @Persisted(indexed: true) var objectIdIdx = ObjectId(bytes: [UInt8](repeating: 0, count: 12))!
    @Persisted var kind = QKind.alpha
}

enum QKind: String, PersistableEnum { case alpha, beta, gamma }

/// A class keyed by a String primary key (an index, not the object key).
final class QTag: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted(indexed: true) var rank = 0
    @Persisted var note: String?
}

/// A class keyed by an optional Int primary key (an index too).
final class QOpt: Object {
    @Persisted(primaryKey: true) var code: Int?
    @Persisted var label = ""
}

/// A fresh database file of the query fixtures, deleted at tear-down.
class QueryTestCase: XCTestCase {
    var config: Lattice.Configuration!
    var lattice: Lattice!

    override func setUpWithError() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("query-\(UUID().uuidString).lattice")
        config = Lattice.Configuration(fileURL: url, objectTypes: [QItem.self, QTag.self, QOpt.self])
        lattice = try Lattice(configuration: config)
    }

    override func tearDownWithError() throws {
        lattice = nil
        try Lattice.deleteFiles(for: config)
    }

    static let strings = ["", "a", "A", "abc", "Abc", "ABC", "abd", "b", "ba", "Ärger", "ärger", "straße", "STRASSE", "résumé",
                          "resume", "Résumé", "x*y", "x?y", "xay", "σίσυφος", "ΣΊΣΥΦΟΣ", "rex", "Rover", "rover", "\u{0}z",
                          String(repeating: "p", count: 600) + "1", String(repeating: "p", count: 600) + "2",
                          String(repeating: "P", count: 600)]
    static let ints = [-1_000_000, -5, -1, 0, 1, 2, 3, 5, 7, 1_000_000]
    static let doubles = [-2.5, -0.0, 0.0, 0.5, 1.0, 2.0, 3.25, 1e10]
    static let dates = [-1000.0, 0, 1, 86_400, 1e9].map { Date(timeIntervalSinceReferenceDate: $0) }
    static let uuids = (0..<4).map { i in UUID(uuid: (UInt8(i), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, UInt8(i * 7))) }
    static let objectIds = (0..<4).map { i in ObjectId(bytes: [UInt8](repeating: UInt8(i * 3), count: 12))! }
    static let datas = [Data(), Data([1]), Data([1, 2]), Data("abc".utf8), Data("xabcx".utf8)]
    static let decimals: [Decimal] = [-1, 0, Decimal(string: "0.1")!, 2, Decimal(string: "1234.5678")!]

    /// Sets every property of `item` from a random generator.
    static func randomize(_ item: QItem, _ rng: inout some RandomNumberGenerator) {
        func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &rng)] }
        func maybe<T>(_ value: T) -> T? { Int.random(in: 0..<4, using: &rng) == 0 ? nil : value }
        let i = pick(ints)
        item.int = i
        item.intIdx = i
        let oi = maybe(pick(ints))
        item.optInt = oi
        item.optIntIdx = oi
        item.int8 = Int8(clamping: pick(ints))
        item.int16 = Int16(clamping: pick(ints))
        item.int32 = Int32(clamping: pick(ints))
        item.int64 = Int64(pick(ints))
        item.double = pick(doubles + [.nan])
        item.optDouble = maybe(pick(doubles + [.nan]))
        item.float = Float(pick(doubles + [.nan]))
        let s = pick(strings)
        item.string = s
        item.stringIdx = s
        let os = maybe(pick(strings))
        item.optString = os
        item.optStringIdx = os
        let b = Bool.random(using: &rng)
        item.bool = b
        item.boolIdx = b
        item.optBool = maybe(Bool.random(using: &rng))
        let d = pick(dates)
        item.date = d
        item.dateIdx = d
        item.optDate = maybe(pick(dates))
        item.data = pick(datas)
        item.optData = maybe(pick(datas))
        let u = pick(uuids)
        item.uuid = u
        item.uuidIdx = u
        item.decimal = pick(decimals)
        item.optDecimal = maybe(pick(decimals))
        let o = pick(objectIds)
        item.objectId = o
        item.objectIdIdx = o
        item.kind = pick(QKind.allCases)
    }
}

/// A seeded generator so failures reproduce.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
