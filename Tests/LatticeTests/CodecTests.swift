import Foundation
import XCTest
@testable import Lattice

enum CodecColor: String, PersistableEnum { case red, green, blue }
enum CodecLevel: Int, PersistableEnum { case low = -1, mid = 0, high = 1000 }

/// Every persistable type and its optional.
final class CodecAllTypes: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var bool = false
    @Persisted var int = 0
    @Persisted var int8: Int8 = 0
    @Persisted var int16: Int16 = 0
    @Persisted var int32: Int32 = 0
    @Persisted var int64: Int64 = 0
    @Persisted var float: Float = 0
    @Persisted var double: Double = 0
    @Persisted var string = ""
    @Persisted var data = Data()
    @Persisted var date = Date(timeIntervalSinceReferenceDate: 0)
    @Persisted var uuid = UUID()
    @Persisted var decimal = Decimal(0)
    @Persisted var objectId = ObjectId()
    @Persisted var color = CodecColor.red
    @Persisted var level = CodecLevel.mid

    @Persisted var optBool: Bool?
    @Persisted var optInt: Int?
    @Persisted var optInt8: Int8?
    @Persisted var optInt16: Int16?
    @Persisted var optInt32: Int32?
    @Persisted var optInt64: Int64?
    @Persisted var optFloat: Float?
    @Persisted var optDouble: Double?
    @Persisted var optString: String?
    @Persisted var optData: Data?
    @Persisted var optDate: Date?
    @Persisted var optUUID: UUID?
    @Persisted var optDecimal: Decimal?
    @Persisted var optObjectId: ObjectId?
    @Persisted var optColor: CodecColor?
    @Persisted var optLevel: CodecLevel?
}

/// Indexed enums, required and optional.
final class CodecIndexedEnums: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted(indexed: true) var color = CodecColor.red
    @Persisted(indexed: true) var optColor: CodecColor?
    @Persisted(indexed: true) var level = CodecLevel.mid
}

/// A large-value class (String and Data, required and optional).
final class CodecBlob: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var text = ""
    @Persisted var optText: String?
    @Persisted var bytes = Data()
}

final class CodecTests: XCTestCase {
    /// Writes `configure`d objects, closes, reopens the file and hands a fresh handle to `check`.
    private func roundTrip(_ configure: (CodecAllTypes) -> Void, check: (CodecAllTypes) throws -> Void) throws {
        let db = makeTempDatabase("codec")
        do {
            let lattice = try db.open([CodecAllTypes.self])
            try lattice.write {
                let object = CodecAllTypes()
                object.id = 1
                configure(object)
                try lattice.add(object)
            }
        }
        let reopened = try db.open([CodecAllTypes.self])
        XCTAssertEqual(reopened.objects(CodecAllTypes.self).count, 1)
        let object = try XCTUnwrap(reopened.object(ofType: CodecAllTypes.self, forPrimaryKey: 1))
        try check(object)
    }

    // MARK: Integers

    func testIntegerExtremesRoundTrip() throws {
        for useMax in [false, true] {
            try roundTrip({ o in
                o.int = useMax ? Int.max : Int.min
                o.int8 = useMax ? Int8.max : Int8.min
                o.int16 = useMax ? Int16.max : Int16.min
                o.int32 = useMax ? Int32.max : Int32.min
                o.int64 = useMax ? Int64.max : Int64.min
                o.optInt = useMax ? Int.max : Int.min
                o.optInt8 = useMax ? Int8.max : Int8.min
                o.optInt16 = useMax ? Int16.max : Int16.min
                o.optInt32 = useMax ? Int32.max : Int32.min
                o.optInt64 = useMax ? Int64.max : Int64.min
            }, check: { o in
                XCTAssertEqual(o.int, useMax ? Int.max : Int.min)
                XCTAssertEqual(o.int8, useMax ? Int8.max : Int8.min)
                XCTAssertEqual(o.int16, useMax ? Int16.max : Int16.min)
                XCTAssertEqual(o.int32, useMax ? Int32.max : Int32.min)
                XCTAssertEqual(o.int64, useMax ? Int64.max : Int64.min)
                XCTAssertEqual(o.optInt, useMax ? Int.max : Int.min)
                XCTAssertEqual(o.optInt8, useMax ? Int8.max : Int8.min)
                XCTAssertEqual(o.optInt16, useMax ? Int16.max : Int16.min)
                XCTAssertEqual(o.optInt32, useMax ? Int32.max : Int32.min)
                XCTAssertEqual(o.optInt64, useMax ? Int64.max : Int64.min)
            })
        }
    }

    func testIntegerPrimaryKeyExtremes() throws {
        let db = makeTempDatabase("codec")
        let keys = [Int.min, -1, 0, 1, Int.max]
        do {
            let lattice = try db.open([FixtureItem.self])
            try lattice.write {
                for key in keys {
                    let item = FixtureItem()
                    item.id = key
                    item.name = "k\(key)"
                    try lattice.add(item)
                }
            }
        }
        let lattice = try db.open([FixtureItem.self])
        XCTAssertEqual(lattice.objects(FixtureItem.self).count, keys.count)
        for key in keys {
            XCTAssertEqual(lattice.object(ofType: FixtureItem.self, forPrimaryKey: key)?.name, "k\(key)")
        }
        // Object keys sort like the integers they encode.
        XCTAssertEqual(lattice.objects(FixtureItem.self).map(\.id), keys)
    }

    // MARK: Floating point

    func testNegativeZeroKeepsItsSign() throws {
        try roundTrip({ o in
            o.double = -0.0
            o.float = -0.0
            o.optDouble = -0.0
            o.optFloat = -0.0
        }, check: { o in
            XCTAssertEqual(o.double, 0)
            XCTAssertEqual(o.double.sign, .minus)
            XCTAssertEqual(o.float.sign, .minus)
            XCTAssertEqual(o.optDouble?.sign, .minus)
            XCTAssertEqual(o.optFloat?.sign, .minus)
            XCTAssertEqual(o.double.bitPattern, (-0.0 as Double).bitPattern)
            XCTAssertEqual(o.float.bitPattern, (-0.0 as Float).bitPattern)
        })
    }

    func testNaNRoundTrips() throws {
        try roundTrip({ o in
            o.double = .nan
            o.float = .nan
            o.optDouble = .nan
            o.optFloat = .nan
        }, check: { o in
            XCTAssertTrue(o.double.isNaN)
            XCTAssertTrue(o.float.isNaN)
            XCTAssertEqual(o.optDouble?.isNaN, true)
            XCTAssertEqual(o.optFloat?.isNaN, true)
            XCTAssertEqual(o.double.bitPattern, Double.nan.bitPattern)
            XCTAssertEqual(o.float.bitPattern, Float.nan.bitPattern)
        })
    }

    func testInfinitiesAndExtremesRoundTrip() throws {
        for positive in [true, false] {
            try roundTrip({ o in
                o.double = positive ? .infinity : -.infinity
                o.float = positive ? .infinity : -.infinity
                o.optDouble = positive ? .greatestFiniteMagnitude : -.leastNonzeroMagnitude
                o.optFloat = positive ? .greatestFiniteMagnitude : -.leastNonzeroMagnitude
            }, check: { o in
                XCTAssertEqual(o.double, positive ? .infinity : -.infinity)
                XCTAssertEqual(o.float, positive ? .infinity : -.infinity)
                XCTAssertEqual(o.optDouble, positive ? .greatestFiniteMagnitude : -.leastNonzeroMagnitude)
                XCTAssertEqual(o.optFloat, positive ? .greatestFiniteMagnitude : -.leastNonzeroMagnitude)
            })
        }
    }

    // MARK: Text and bytes

    func testEmptyStringAndDataRoundTrip() throws {
        try roundTrip({ o in
            o.string = ""
            o.data = Data()
            o.optString = ""   // an empty value, not nil
            o.optData = Data()
        }, check: { o in
            XCTAssertEqual(o.string, "")
            XCTAssertEqual(o.data, Data())
            XCTAssertEqual(o.optString, "")
            XCTAssertNotNil(o.optString)
            XCTAssertEqual(o.optData, Data())
            XCTAssertNotNil(o.optData)
        })
    }

    func testNonASCIITextRoundTrips() throws {
        let samples = [
            "🐶🏳️‍🌈👨‍👩‍👧‍👦",                 // emoji with ZWJ sequences and a flag
            "e\u{301}a\u{308}\u{323}",              // combining marks (not precomposed)
            "漢字かなカナ한국어",                     // CJK
            "עברית العربية",                          // right-to-left scripts
            "nul\u{0}inside",                         // an embedded NUL
        ]
        for text in samples {
            try roundTrip({ o in
                o.string = text
                o.optString = text
            }, check: { o in
                XCTAssertEqual(Array(o.string.unicodeScalars), Array(text.unicodeScalars))
                XCTAssertEqual(Array(o.string.utf8), Array(text.utf8))
                XCTAssertEqual(o.optString.map { Array($0.utf8) }, Array(text.utf8))
            })
        }
    }

    func testBinaryDataRoundTrips() throws {
        let bytes = Data((0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try roundTrip({ o in
            o.data = bytes
            o.optData = Data([0])
        }, check: { o in
            XCTAssertEqual(o.data, bytes)
            XCTAssertEqual(o.optData, Data([0]))
        })
    }

    // MARK: Other types

    func testDatesRoundTrip() throws {
        let precise = Date(timeIntervalSinceReferenceDate: 123_456_789.123_456_789)
        try roundTrip({ o in
            o.date = .distantPast
            o.optDate = .distantFuture
        }, check: { o in
            XCTAssertEqual(o.date, .distantPast)
            XCTAssertEqual(o.optDate, .distantFuture)
        })
        try roundTrip({ o in
            o.date = precise
            o.optDate = Date(timeIntervalSince1970: -1)
        }, check: { o in
            XCTAssertEqual(o.date.timeIntervalSinceReferenceDate.bitPattern, precise.timeIntervalSinceReferenceDate.bitPattern)
            XCTAssertEqual(o.optDate, Date(timeIntervalSince1970: -1))
        })
    }

    func testUUIDDecimalObjectIdBoolRoundTrip() throws {
        let uuid = UUID()
        let objectId = ObjectId()
        let decimals: [Decimal] = [
            Decimal(string: "3.1415926535897932384626433832795028841")!,
            Decimal(string: "-0.000000000000000000000000000001")!,
            Decimal(string: "12345678901234567890123456789012345678")!,
            0,
        ]
        for decimal in decimals {
            try roundTrip({ o in
                o.bool = true
                o.uuid = uuid
                o.objectId = objectId
                o.decimal = decimal
                o.optDecimal = -decimal
                o.optUUID = uuid
                o.optObjectId = objectId
                o.optBool = false
            }, check: { o in
                XCTAssertEqual(o.bool, true)
                XCTAssertEqual(o.uuid, uuid)
                XCTAssertEqual(o.objectId, objectId)
                XCTAssertEqual(o.decimal, decimal)
                XCTAssertEqual(o.optDecimal, -decimal)
                XCTAssertEqual(o.optUUID, uuid)
                XCTAssertEqual(o.optObjectId, objectId)
                XCTAssertEqual(o.optBool, false)
            })
        }
    }

    func testDecimalNaNRoundTrips() throws {
        try roundTrip({ o in o.decimal = .nan }, check: { o in XCTAssertTrue(o.decimal.isNaN) })
    }

    func testPersistableEnumsRoundTrip() throws {
        try roundTrip({ o in
            o.color = .blue
            o.level = .low
            o.optColor = .green
            o.optLevel = .high
        }, check: { o in
            XCTAssertEqual(o.color, .blue)
            XCTAssertEqual(o.level, .low)
            XCTAssertEqual(o.optColor, .green)
            XCTAssertEqual(o.optLevel, .high)
        })
        // Stored as their raw values.
        let schema = try ModelMetadata.of(CodecAllTypes.self).schema
        XCTAssertEqual(schema["color"]?.type, .string)
        XCTAssertEqual(schema["level"]?.type, .int)
        XCTAssertEqual(schema["optLevel"]?.isOptional, true)
    }

    func testPersistableEnumFromRawValueInCreate() throws {
        let db = makeTempDatabase("codec")
        let lattice = try db.open([CodecAllTypes.self])
        try lattice.write {
            try lattice.create(CodecAllTypes.self, value: ["id": 5, "color": "green", "level": 1000, "optColor": "blue"])
        }
        let o = try XCTUnwrap(lattice.object(ofType: CodecAllTypes.self, forPrimaryKey: 5))
        XCTAssertEqual(o.color, .green)
        XCTAssertEqual(o.level, .high)
        XCTAssertEqual(o.optColor, .blue)
        XCTAssertNil(o.optLevel)
    }

    /// A raw value naming no case is bad input: the error names the property and says what was expected,
    /// which must differ from what was found (not "expects String, not String").
    func testAnUnknownEnumRawValueIsRejectedWithAClearMessage() throws {
        let db = makeTempDatabase("codec")
        let lattice = try db.open([CodecAllTypes.self])
        let cases: [(String, Any, String, String)] = [
            ("color", "purple", "CodecColor", "String"),
            ("level", 7, "CodecLevel", "Int"),
            ("optColor", "purple", "CodecColor?", "String"),
        ]
        for (property, value, expectedType, foundType) in cases {
            let error = latticeError(try lattice.write { try lattice.create(CodecAllTypes.self, value: ["id": 6, property: value]) })
            guard case let .wrongType(className, errorProperty, expected, found)? = error else {
                XCTFail("expected wrongType for \(property), got \(String(describing: error))")
                continue
            }
            XCTAssertEqual(className, "CodecAllTypes")
            XCTAssertEqual(errorProperty, property)
            XCTAssertNotEqual(expected.trimmingCharacters(in: ["?"]), found, "unclear message: \(error!)")
            XCTAssertEqual(expected, expectedType)
            XCTAssertEqual(found, foundType)
        }
        assertLatticeError(try CodecAllTypes(value: ["optLevel": "high"]),
                           .wrongType(className: "CodecAllTypes", property: "optLevel", expected: "CodecLevel?", found: "String"))
        XCTAssertEqual(lattice.objects(CodecAllTypes.self).count, 0)
    }

    func testNilForEveryOptionalType() throws {
        try roundTrip({ o in
            // Set values first, then clear them, so nil is really written rather than left at the initial value.
            o.optBool = true; o.optInt = 1; o.optInt8 = 1; o.optInt16 = 1; o.optInt32 = 1; o.optInt64 = 1
            o.optFloat = 1; o.optDouble = 1; o.optString = "x"; o.optData = Data([1]); o.optDate = Date()
            o.optUUID = UUID(); o.optDecimal = 1; o.optObjectId = ObjectId(); o.optColor = .red; o.optLevel = .mid
            o.optBool = nil; o.optInt = nil; o.optInt8 = nil; o.optInt16 = nil; o.optInt32 = nil; o.optInt64 = nil
            o.optFloat = nil; o.optDouble = nil; o.optString = nil; o.optData = nil; o.optDate = nil
            o.optUUID = nil; o.optDecimal = nil; o.optObjectId = nil; o.optColor = nil; o.optLevel = nil
        }, check: { o in
            XCTAssertNil(o.optBool); XCTAssertNil(o.optInt); XCTAssertNil(o.optInt8); XCTAssertNil(o.optInt16)
            XCTAssertNil(o.optInt32); XCTAssertNil(o.optInt64); XCTAssertNil(o.optFloat); XCTAssertNil(o.optDouble)
            XCTAssertNil(o.optString); XCTAssertNil(o.optData); XCTAssertNil(o.optDate); XCTAssertNil(o.optUUID)
            XCTAssertNil(o.optDecimal); XCTAssertNil(o.optObjectId); XCTAssertNil(o.optColor); XCTAssertNil(o.optLevel)
        })
    }

    func testManagedOptionalsSetAndClearedPersist() throws {
        let db = makeTempDatabase("codec")
        let date = Date(timeIntervalSince1970: 1_000_000)
        do {
            let lattice = try db.open([CodecAllTypes.self])
            try lattice.write {
                let o = CodecAllTypes()
                o.id = 1
                try lattice.add(o)
                // Managed setters write through.
                o.optString = ""
                o.optData = Data([9, 9])
                o.optDate = date
                o.optInt8 = Int8.min
                o.int32 = Int32.max
                o.string = "managed"
            }
            try lattice.write {
                let o = try XCTUnwrap(lattice.object(ofType: CodecAllTypes.self, forPrimaryKey: 1))
                o.optData = nil
            }
        }
        let o = try XCTUnwrap(try db.open([CodecAllTypes.self]).object(ofType: CodecAllTypes.self, forPrimaryKey: 1))
        XCTAssertEqual(o.optString, "")
        XCTAssertNil(o.optData)
        XCTAssertEqual(o.optDate, date)
        XCTAssertEqual(o.optInt8, Int8.min)
        XCTAssertEqual(o.int32, Int32.max)
        XCTAssertEqual(o.string, "managed")
    }

    // MARK: Dynamic values

    func testCreateConvertsValuesOnlyWhenExact() throws {
        let db = makeTempDatabase("codec")
        let lattice = try db.open([CodecAllTypes.self])
        let objectId = ObjectId()
        try lattice.write {
            let o = try lattice.create(CodecAllTypes.self, value: [
                "id": 1, "int8": 127, "int16": Int64(-32768), "int32": 3.0, "int64": UInt8(7), "float": 2,
                "double": Float(0.5), "data": [UInt8]([1, 2]), "objectId": objectId.stringValue,
                "decimal": "1.25", "optDecimal": 2, "string": Substring("sub"),
            ])
            XCTAssertEqual(o.int8, 127)
            XCTAssertEqual(o.int16, -32768)
            XCTAssertEqual(o.int32, 3)
            XCTAssertEqual(o.int64, 7)
            XCTAssertEqual(o.float, 2)
            XCTAssertEqual(o.double, 0.5)
            XCTAssertEqual(o.data, Data([1, 2]))
            XCTAssertEqual(o.objectId, objectId)
            XCTAssertEqual(o.decimal, Decimal(string: "1.25"))
            XCTAssertEqual(o.optDecimal, 2)
            XCTAssertEqual(o.string, "sub")
        }
        let bad: [(String, Any, String, String)] = [
            ("int8", 128, "Int8", "Int"),
            ("int8", -129, "Int8", "Int"),
            ("int32", Int64(Int32.max) + 1, "Int32", "Int64"),
            ("int", 1.5, "Int", "Double"),
            ("int", UInt64.max, "Int", "UInt64"),
            ("bool", 1, "Bool", "Int"),
            ("date", "2020-01-01", "Date", "String"),
            ("uuid", "nope", "UUID", "String"),
            ("objectId", "0123", "ObjectId", "String"),
            ("string", 5, "String", "Int"),
            ("optInt", "5", "Int?", "String"),
            ("data", "bytes", "Data", "String"),
        ]
        for (property, value, expected, found) in bad {
            assertLatticeError(try lattice.write { try lattice.create(CodecAllTypes.self, value: ["id": 2, property: value]) },
                               .wrongType(className: "CodecAllTypes", property: property, expected: expected, found: found))
        }
        XCTAssertEqual(lattice.objects(CodecAllTypes.self).count, 1)
    }

    // MARK: Size limit

    func testSixteenMiBStringAndDataSucceed() throws {
        let db = makeTempDatabase("codec")
        let limit = 16 * 1024 * 1024
        let text = String(repeating: "a", count: limit - 4) + "😀"  // exactly 16 MiB of UTF-8
        XCTAssertEqual(text.utf8.count, limit)
        do {
            let lattice = try db.open([CodecBlob.self])
            try lattice.write {
                let blob = CodecBlob()
                blob.id = 1
                blob.text = text
                blob.optText = text
                blob.bytes = Data(repeating: 0xAB, count: limit)
                try lattice.add(blob)
            }
        }
        let blob = try XCTUnwrap(try db.open([CodecBlob.self]).object(ofType: CodecBlob.self, forPrimaryKey: 1))
        XCTAssertEqual(blob.text.utf8.count, limit)
        XCTAssertTrue(blob.text.hasSuffix("a😀"))
        XCTAssertEqual(blob.text, text)
        XCTAssertEqual(blob.optText?.utf8.count, limit)
        XCTAssertEqual(blob.bytes.count, limit)
        XCTAssertTrue(blob.bytes.allSatisfy { $0 == 0xAB })
    }

    func testOverSixteenMiBThrowsAndKeepsCommittedData() throws {
        let db = makeTempDatabase("codec")
        let limit = 16 * 1024 * 1024
        let tooLong = String(repeating: "b", count: limit + 1)
        do {
            let lattice = try db.open([CodecBlob.self])
            try lattice.write {
                let blob = CodecBlob()
                blob.id = 1
                blob.text = "committed"
                try lattice.add(blob)
            }
            // add(): required String.
            assertLatticeError(try lattice.write {
                let blob = CodecBlob()
                blob.id = 2
                blob.text = tooLong
                try lattice.add(blob)
            }, .valueTooLarge(className: "CodecBlob", property: "text", size: limit + 1, limit: limit))
            // add(): optional String (the size is the value's, without the optional's marker byte).
            assertLatticeError(try lattice.write {
                let blob = CodecBlob()
                blob.id = 3
                blob.optText = tooLong
                try lattice.add(blob)
            }, .valueTooLarge(className: "CodecBlob", property: "optText", size: limit + 1, limit: limit))
            // add(): Data.
            assertLatticeError(try lattice.write {
                let blob = CodecBlob()
                blob.id = 4
                blob.bytes = Data(count: limit + 1)
                try lattice.add(blob)
            }, .valueTooLarge(className: "CodecBlob", property: "bytes", size: limit + 1, limit: limit))
            // A managed setter: the commit fails with the error and rolls back.
            assertLatticeError(try lattice.write {
                let blob = try XCTUnwrap(lattice.object(ofType: CodecBlob.self, forPrimaryKey: 1))
                blob.text = "changed first"
                blob.optText = tooLong
            }, .valueTooLarge(className: "CodecBlob", property: "optText", size: limit + 1, limit: limit))
            // setValue(_:forKey:) and the subscript of a managed object: the same.
            assertLatticeError(try lattice.write {
                let blob = try XCTUnwrap(lattice.object(ofType: CodecBlob.self, forPrimaryKey: 1))
                blob.setValue(tooLong, forKey: "text")
            }, .valueTooLarge(className: "CodecBlob", property: "text", size: limit + 1, limit: limit))
            assertLatticeError(try lattice.write {
                let blob = try XCTUnwrap(lattice.object(ofType: CodecBlob.self, forPrimaryKey: 1))
                blob["optText"] = tooLong
            }, .valueTooLarge(className: "CodecBlob", property: "optText", size: limit + 1, limit: limit))
            // create(value:) (new object and update).
            assertLatticeError(try lattice.write {
                try lattice.create(CodecBlob.self, value: ["id": 5, "text": tooLong])
            }, .valueTooLarge(className: "CodecBlob", property: "text", size: limit + 1, limit: limit))
            assertLatticeError(try lattice.write {
                try lattice.create(CodecBlob.self, value: ["id": 1, "text": tooLong], update: .modified)
            }, .valueTooLarge(className: "CodecBlob", property: "text", size: limit + 1, limit: limit))
            XCTAssertFalse(lattice.isInWriteTransaction)
            XCTAssertEqual(lattice.objects(CodecBlob.self).count, 1)
        }
        let lattice = try db.open([CodecBlob.self])
        XCTAssertEqual(lattice.objects(CodecBlob.self).count, 1)
        let blob = try XCTUnwrap(lattice.object(ofType: CodecBlob.self, forPrimaryKey: 1))
        XCTAssertEqual(blob.text, "committed")
        XCTAssertNil(blob.optText)
    }

    // MARK: Varint

    func testVarintZigzagRoundTripsAndSizes() {
        let values: [Int64] = [0, 1, -1, 63, -64, 64, -65, 127, 128, 8191, -8192, 8192,
                               Int64(Int32.max), Int64(Int32.min), Int64.max, Int64.min, Int64.max - 1, Int64.min + 1]
        for v in values {
            var out: [UInt8] = []
            Varint.append(Varint.zigzag(v), to: &out)
            var at = 0
            let decoded = out.withUnsafeBytes { Varint.read($0, &at) }
            XCTAssertEqual(Varint.unzigzag(decoded), v, "value \(v)")
            XCTAssertEqual(at, out.count, "value \(v) consumed every byte")
        }
        func size(_ v: Int64) -> Int {
            var out: [UInt8] = []
            Varint.append(Varint.zigzag(v), to: &out)
            return out.count
        }
        XCTAssertEqual(size(0), 1)
        XCTAssertEqual(size(63), 1)
        XCTAssertEqual(size(-64), 1)
        XCTAssertEqual(size(64), 2)
        XCTAssertEqual(size(-65), 2)
        XCTAssertEqual(size(Int64.max), 10)
        XCTAssertEqual(size(Int64.min), 10)
        XCTAssertEqual(Varint.zigzag(-1), 1)
        XCTAssertEqual(Varint.zigzag(1), 2)
    }

    func testVarintUnsignedAndConsecutiveReads() {
        var out: [UInt8] = []
        let values: [UInt64] = [0, 127, 128, 300, UInt64.max, 1 << 35]
        for v in values { Varint.append(v, to: &out) }
        XCTAssertEqual(Array(out.prefix(5)), [0x00, 0x7F, 0x80, 0x01, 0xAC])
        var at = 0
        let decoded = out.withUnsafeBytes { bytes in values.map { _ in Varint.read(bytes, &at) } }
        XCTAssertEqual(decoded, values)
        XCTAssertEqual(at, out.count)
    }

    func testVarintMalformedInputStopsAtEnd() {
        let truncated: [UInt8] = [0x80, 0x80]  // continuation bits with no final byte
        var at = 0
        _ = truncated.withUnsafeBytes { Varint.read($0, &at) }
        XCTAssertEqual(at, truncated.count)
        let endless = [UInt8](repeating: 0xFF, count: 20)
        at = 0
        _ = endless.withUnsafeBytes { Varint.read($0, &at) }
        XCTAssertLessThanOrEqual(at, 10, "a varint never reads more than 10 bytes")
        at = 0
        XCTAssertEqual([UInt8]().withUnsafeBytes { Varint.read($0, &at) }, 0)
        XCTAssertEqual(at, 0)
    }

    // MARK: Record

    private func record(_ payloads: [[UInt8]]) -> [UInt8] {
        var bytes: [UInt8] = []
        var ends: [Int] = []
        for p in payloads {
            bytes.append(contentsOf: p)
            ends.append(bytes.count)
        }
        var out: [UInt8] = []
        Record.assemble(payloads: bytes, ends: ends, into: &out)
        return out
    }

    private func payloads(of record: [UInt8]) -> [[UInt8]?] {
        record.withUnsafeBytes { bytes in
            guard let view = RecordView(bytes) else { return [] }
            return (0..<(view.count + 1)).map { view.payload($0).map(Array.init) }
        }
    }

    func testRecordLayoutOneByteOffsets() {
        let r = record([[1, 2, 3], [], [4]])
        // header (format 1, width code 0), count 3, ends 3 3 4, payloads.
        XCTAssertEqual(r, [0x10, 3, 3, 3, 4, 1, 2, 3, 4])
        XCTAssertEqual(payloads(of: r), [[1, 2, 3], [], [4], nil])
    }

    func testRecordOffsetWidthsGrowWithSize() {
        for (size, code) in [(255, 0), (256, 1), (65535, 1), (65536, 2), (70000, 2)] {
            let big = [UInt8](repeating: 7, count: size - 1)
            let r = record([[9], big, []])
            XCTAssertEqual(r[0], 0x10 | UInt8(code), "payload area of \(size) bytes")
            let read = payloads(of: r)
            XCTAssertEqual(read.count, 4)
            XCTAssertEqual(read[0], [9])
            XCTAssertEqual(read[1], big)
            XCTAssertEqual(read[2], [])
            XCTAssertNil(read[3] ?? nil)
        }
    }

    func testRecordViewRejectsForeignBytes() {
        func view(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBytes { RecordView($0) != nil } }
        XCTAssertFalse(view([]))
        XCTAssertFalse(view([0x20, 0]))           // format 2 is unknown
        XCTAssertFalse(view([0x13, 0]))           // width code 3 is unknown
        XCTAssertFalse(view([0x10, 5, 1, 2]))     // 5 offsets announced, 2 bytes present
        XCTAssertTrue(view([0x10, 0]))            // no properties
    }

    func testRecordViewPayloadsCopyAllAndTolerateBadOffsets() {
        let r = record([[1], [2, 3], []])
        r.withUnsafeBytes { bytes in
            let view = RecordView(bytes)!
            let all = view.payloads()
            XCTAssertEqual(all.bytes, [1, 2, 3])
            XCTAssertEqual(all.ends, [1, 3, 3])
        }
        // An end offset pointing past the record yields an empty payload rather than a crash.
        let corrupt: [UInt8] = [0x10, 2, 1, 200, 5]
        corrupt.withUnsafeBytes { bytes in
            let view = RecordView(bytes)!
            XCTAssertEqual(view.payload(0).map(Array.init), [5])
            XCTAssertEqual(view.payload(1)?.count, 0)
        }
    }

    func testTypeCodecsDirectly() {
        func encoded<T: _Persistable>(_ v: T) -> [UInt8] {
            var out: [UInt8] = []
            v._latticeEncode(into: &out)
            return out
        }
        func decoded<T: _Persistable>(_ bytes: [UInt8], as: T.Type) -> T { bytes.withUnsafeBytes { T._latticeDecode($0) } }
        XCTAssertEqual(encoded(0), [0])
        XCTAssertEqual(encoded(-1), [1])
        XCTAssertEqual(encoded(Int8.min).count, 2)
        XCTAssertEqual(encoded(true), [1])
        XCTAssertEqual(encoded(1.5 as Double).count, 8)
        XCTAssertEqual(encoded(1.5 as Float).count, 4)
        XCTAssertEqual(encoded(UUID()).count, 16)
        XCTAssertEqual(encoded(ObjectId()).count, 12)
        XCTAssertEqual(encoded(Optional<Int>.none), [])
        XCTAssertEqual(encoded(Optional<String>.some("")), [1])  // marker distinguishes "" from nil
        XCTAssertEqual(encoded(Optional<String>.some("a")), [1, 0x61])
        XCTAssertNil(decoded([], as: String?.self))
        XCTAssertEqual(decoded([1], as: String?.self), "")
        XCTAssertEqual(decoded([1, 0xFF], as: String?.self), "\u{FFFD}", "invalid UTF-8 is repaired, not trapped on")
        XCTAssertEqual(decoded(encoded(Int64.min), as: Int64.self), Int64.min)
        XCTAssertEqual(decoded(encoded(CodecLevel.high), as: CodecLevel.self), .high)
        XCTAssertEqual(decoded(encoded("nope"), as: CodecColor.self), .red, "an unknown raw value reads as the first case")
    }

    /// Writes `values` into object 1 of `className` through a dynamic handle (as a newer program would).
    private func writeDynamically(_ db: TempDatabase, _ className: String, _ values: [String: Any]) throws {
        let dynamic = try Lattice(configuration: .init(fileURL: db.url, dynamicSchema: true))
        try dynamic.write {
            let object = try XCTUnwrap(try dynamic.dynamicObject(ofType: className, forPrimaryKey: 1))
            for (name, value) in values { object[name] = value }
        }
    }

    /// A raw value that no case has, stored by a dynamic handle (as a newer program would): an optional
    /// enum reads it as nil, a non-optional one as its first case.
    func testUnknownRawValuesOfEnums() throws {
        let db = makeTempDatabase("codec-enum")
        do {
            let typed = try db.open([CodecAllTypes.self])
            try typed.write { _ = try typed.create(CodecAllTypes.self, value: ["id": 1, "color": CodecColor.blue, "optColor": CodecColor.green]) }
        }
        try writeDynamically(db, "CodecAllTypes", ["color": "purple", "optColor": "purple", "optLevel": 7])
        let lattice = try db.open([CodecAllTypes.self])
        let object = try XCTUnwrap(lattice.object(ofType: CodecAllTypes.self, forPrimaryKey: 1))
        XCTAssertNil(object.optColor, "an optional enum reads a raw value of no case as nil")
        XCTAssertNil(object.optLevel)
        XCTAssertEqual(object.color, .red, "a non-optional enum reads it as its first case")
        XCTAssertNil(decoded([14], as: CodecLevel?.self), "7 (zigzag 14) is no case")
        XCTAssertEqual(decoded([0], as: CodecLevel?.self), .mid)
    }

    /// The index keys of enums are their stored raw values, whether or not a case has them: a raw value of
    /// no case written by a dynamic handle is found, checked and removed under that value.
    func testIndexesOfEnumsKeepUnknownRawValues() throws {
        let db = makeTempDatabase("codec-enum-index")
        do {
            let typed = try db.open([CodecIndexedEnums.self])
            try typed.write { for id in 1...2 { _ = try typed.create(CodecIndexedEnums.self, value: ["id": id]) } }
        }
        try writeDynamically(db, "CodecIndexedEnums", ["color": "purple", "optColor": "purple", "level": 7])
        let lattice = try db.open([CodecIndexedEnums.self])
        XCTAssertEqual(lattice.verify(), [], "the entries under the raw values are the ones expected")
        let all = lattice.objects(CodecIndexedEnums.self)
        XCTAssertEqual(try all.filter("color == 'purple' AND optColor == 'purple' AND level == 7").count, 1)
        try lattice.write { try lattice.delete(try XCTUnwrap(lattice.object(ofType: CodecIndexedEnums.self, forPrimaryKey: 1))) }
        XCTAssertEqual(lattice.verify(), [], "the deleted object's entries went with it")
        XCTAssertEqual(try all.filter("color == 'purple' OR optColor == 'purple' OR level == 7").count, 0)
        XCTAssertEqual(try all.filter("color == 'red'").count, 1)
    }

    private func decoded<T: _Persistable>(_ bytes: [UInt8], as: T.Type) -> T { bytes.withUnsafeBytes { T._latticeDecode($0) } }

    func testObjectIdFromATimestampMachineAndProcess() {
        let moment = Date(timeIntervalSince1970: 1_700_000_000.75)
        let id = ObjectId(timestamp: moment, machineId: 0x0A0B0C, processId: 0x0D0E)
        XCTAssertEqual(id.timestamp, Date(timeIntervalSince1970: 1_700_000_000), "whole seconds are kept")
        XCTAssertEqual(Array(id.byteArray[4..<9]), [0x0A, 0x0B, 0x0C, 0x0D, 0x0E], "three bytes of the machine, two of the process")
        let next = ObjectId(timestamp: moment, machineId: 0x0A0B0C, processId: 0x0D0E)
        XCTAssertNotEqual(id, next, "the counter tells ids of one moment apart")
        XCTAssertEqual(ObjectId(timestamp: .distantPast, machineId: 1, processId: 1).timestamp, Date(timeIntervalSince1970: 0),
                       "a moment before 1970 is held to the first one four bytes hold")
        XCTAssertEqual(ObjectId(timestamp: Date(timeIntervalSince1970: .infinity), machineId: 1, processId: 1).timestamp,
                       Date(timeIntervalSince1970: TimeInterval(UInt32.max)))
    }

    func testObjectIdForms() {
        let id = ObjectId()
        XCTAssertEqual(id.stringValue.count, 24)
        XCTAssertEqual(ObjectId(string: id.stringValue), id)
        XCTAssertEqual(ObjectId(string: id.stringValue.uppercased()), id)
        XCTAssertEqual(ObjectId(bytes: id.byteArray), id)
        XCTAssertNil(ObjectId(string: "0123"))
        XCTAssertNil(ObjectId(string: String(repeating: "g", count: 24)))
        XCTAssertNil(ObjectId(bytes: [UInt8](repeating: 0, count: 11)))
        XCTAssertEqual(ObjectId(string: "000000000000000000000001")?.byteArray, [UInt8](repeating: 0, count: 11) + [1])
        let later = ObjectId()
        XCTAssertNotEqual(id, later)
        XCTAssertLessThan(id, later, "ids of one process sort in creation order")
        XCTAssertLessThan(abs(id.timestamp.timeIntervalSinceNow), 3600)
        XCTAssertEqual(id.description, id.stringValue)
    }

    // MARK: Keys

    func testKeyCodecOrdersIntegersAndDoubles() {
        func intKey(_ v: Int64) -> [UInt8] { var o: [UInt8] = []; KeyCodec.appendInt(v, to: &o); return o }
        func doubleKey(_ v: Double) -> [UInt8] { var o: [UInt8] = []; KeyCodec.appendDouble(v, to: &o); return o }
        let ints: [Int64] = [Int64.min, -1000, -1, 0, 1, 255, 256, Int64.max]
        for (a, b) in zip(ints, ints.dropFirst()) {
            XCTAssertTrue(intKey(a).lexicographicallyPrecedes(intKey(b)), "\(a) < \(b)")
        }
        for v in ints { XCTAssertEqual(intKey(v).withUnsafeBytes { KeyCodec.int($0) }, v) }
        KeyCodec.withObjectKey(-5) { XCTAssertEqual(Array($0), intKey(-5)) }
        let doubles: [Double] = [-.infinity, -1e300, -1, -.leastNonzeroMagnitude, 0, .leastNonzeroMagnitude, 1, 1e300, .infinity]
        for (a, b) in zip(doubles, doubles.dropFirst()) {
            XCTAssertTrue(doubleKey(a).lexicographicallyPrecedes(doubleKey(b)), "\(a) < \(b)")
        }
        XCTAssertEqual(doubleKey(-0.0), doubleKey(0.0))
    }

    /// The specialized paths of built-in types (`ValueKind`) produce exactly the bytes of the
    /// type-erased codec: payloads from a field, and integer index keys built on the stack.
    func testValueKindsMatchTheTypeErasedCodec() throws {
        func check<T: _Persistable & Equatable>(_ values: [T], file: StaticString = #filePath, line: UInt = #line) {
            let kind = ValueKind(T.self)
            XCTAssertNotEqual("\(kind)", "other", "\(T.self)", file: file, line: line)
            for value in values {
                var field = Persisted(wrappedValue: value)
                var specialized: [UInt8] = []
                XCTAssertTrue(withUnsafePointer(to: &field) { kind.encode(at: UnsafeRawPointer($0), into: &specialized) })
                var erased: [UInt8] = []
                value._latticeEncode(into: &erased)
                XCTAssertEqual(specialized, erased, "\(T.self) \(value)", file: file, line: line)
                var key: [UInt8] = []
                value._latticeKey(into: &key)
                var keyed: [UInt8] = []
                XCTAssertTrue(erased.withUnsafeBytes { kind.key(fromPayload: $0, into: &keyed) })
                XCTAssertEqual(keyed, key, "\(T.self) \(value)", file: file, line: line)
                if let integer = erased.withUnsafeBytes({ kind.integer(fromPayload: $0) }) {
                    XCTAssertEqual(KeyCodec.withObjectKey(integer) { Array($0) }, key, "\(T.self) \(value)", file: file, line: line)
                }
            }
        }
        check([Int.min, -1, 0, 1, 300, Int.max])
        check([Int64.min, -1, 0, Int64.max])
        check([Int32.min, -1, 0, Int32.max])
        check([Int16.min, -1, 0, Int16.max])
        check([Int8.min, -1, 0, Int8.max])
        check([false, true])
        check([-1.5, -0.0, 0.0, Double.greatestFiniteMagnitude])
        check([Float(-1.5), 0, Float.greatestFiniteMagnitude])
        check(["", "a", "Zürich"])
        check([Date(timeIntervalSinceReferenceDate: -1e9), Date(timeIntervalSince1970: 1.6e9)])
        check([Data(), Data([0, 255, 7])])
        check([UUID()])
        check([ObjectId()])
        check([nil, Int.min, 0] as [Int?])
        check([nil, Int64.max] as [Int64?])
        check([nil, Int32.min] as [Int32?])
        check([nil, true] as [Bool?])
        check([nil, -0.0, 2.5] as [Double?])
        check([nil, "", "x"] as [String?])
        check([nil, Date(timeIntervalSinceReferenceDate: 5)] as [Date?])
        check([nil, Data(), Data([1])] as [Data?])
        check([nil, UUID()] as [UUID?])
        XCTAssertEqual("\(ValueKind(CodecColor.self))", "other", "enums take the type-erased path")
        XCTAssertNil(ValueKind(Int?.self).integer(fromPayload: UnsafeRawBufferPointer(start: nil, count: 0)), "optionals keep tagged keys")
    }
}
