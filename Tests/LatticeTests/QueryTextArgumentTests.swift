import Foundation
import XCTest
@testable import Lattice

/// `QueryTextArgument`: text typed by the property it is compared with, for every property type, and
/// the errors for text that spells no value of the type.
final class QueryTextArgumentTests: XCTestCase {
    func testTextTakesThePropertysType() throws {
        let db = makeTempDatabase()
        let lattice = try db.open([CodecAllTypes.self])
        let uuid = UUID()
        let oid = ObjectId()
        let date = try XCTUnwrap(QueryTextArgument.date("2024-03-01T12:30:00Z"))
        try lattice.write {
            try lattice.create(CodecAllTypes.self, value: [
                "id": 1, "bool": true, "int": -5, "int8": Int8(8), "float": Float(1.5), "double": 2.25, "string": "42",
                "data": Data("raw".utf8), "date": date, "uuid": uuid, "decimal": Decimal(string: "12.345")!, "objectId": oid,
                "optInt": 7,
            ])
            try lattice.create(CodecAllTypes.self, value: ["id": 2, "string": "other"])
        }
        let all = lattice.objects(CodecAllTypes.self)
        func ids(_ predicate: String, _ texts: String...) throws -> [Int] {
            try all.filter(predicate, argumentArray: texts.map(QueryTextArgument.init)).map(\.id).sorted()
        }
        XCTAssertEqual(try ids("bool == $0", "true"), [1])
        XCTAssertEqual(try ids("int < $0 AND int8 == $1", "0", "8"), [1])
        XCTAssertEqual(try ids("float == $0 AND double > $1", "1.5", "2"), [1])
        XCTAssertEqual(try ids("string == $0", "42"), [1])              // a String stays text, however it looks
        XCTAssertEqual(try ids("data == $0", "raw"), [1])
        XCTAssertEqual(try ids("date == $0", "2024-03-01T12:30:00Z"), [1])
        XCTAssertEqual(try ids("date > $0", "2024-03-01"), [1])            // a date alone is midnight UTC
        XCTAssertEqual(try ids("date < $0", "2024-03-01T12:30:00.500+00:00"), [1, 2])
        XCTAssertEqual(try ids("uuid == $0", uuid.uuidString.lowercased()), [1])
        XCTAssertEqual(try ids("objectId == $0", oid.description), [1])
        XCTAssertEqual(try ids("decimal == $0", "12.345"), [1])
        XCTAssertEqual(try ids("optInt IN {$0, $1}", "7", "9"), [1])
        XCTAssertEqual(try ids("id BETWEEN {$0, $1}", "2", "3"), [2])
        XCTAssertEqual(try ids("string BEGINSWITH[c] $0", "OTH"), [2])

        // Text that spells no value of the type names the property and the text.
        for (predicate, text) in [("int == $0", "12abc"), ("bool == $0", "yes"), ("date > $0", "March"), ("uuid == $0", "x"),
                                  ("decimal == $0", "1.2.3"), ("int8 == $0", "300")] {
            XCTAssertThrowsError(try ids(predicate, text), predicate) { error in
                guard case let LatticeError.invalidQuery(message) = error else { return XCTFail("\(error)") }
                XCTAssertTrue(message.contains("'\(text)'") && message.contains("CodecAllTypes."), message)
            }
        }
    }
}
