import Foundation
import XCTest
@testable import Lattice

/// `fileInfo()`: the format and schema versions a file stores, its sizes, and the readers of every
/// process that has it open.
final class FileInfoTests: XCTestCase {
    func testReportsVersionsSizesAndReaders() throws {
        let db = makeTempDatabase()
        let lattice = try db.open([FixtureItem.self], schemaVersion: 4)
        try lattice.write {
            for id in 0..<200 { try lattice.create(FixtureItem.self, value: ["id": id, "name": String(repeating: "x", count: 100)]) }
        }
        let info = try lattice.fileInfo()
        XCTAssertEqual(info.formatVersion, FileLayout.formatVersion)
        XCTAssertEqual(info.schemaVersion, 4)
        let onDisk = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: db.path)[.size] as? Int)
        XCTAssertEqual(info.fileSize, onDisk)
        XCTAssertGreaterThan(info.usedBytes, 200 * 100)
        XCTAssertLessThanOrEqual(info.usedBytes, info.fileSize)
        XCTAssertEqual(info.mapSize, 8 << 20)
        // One handle, one reader slot, this process.
        XCTAssertEqual(info.readerCount, 1)
        XCTAssertEqual(info.readerProcesses, [getpid()])

        // A second handle (its own slot) is counted, and a dynamic handle reads the same facts.
        let dynamic = try Lattice(configuration: .init(fileURL: db.url, dynamicSchema: true))
        let both = try dynamic.fileInfo()
        XCTAssertEqual(both.readerCount, 2)
        XCTAssertEqual(both.schemaVersion, 4)
        XCTAssertEqual(both.formatVersion, info.formatVersion)
    }
}
