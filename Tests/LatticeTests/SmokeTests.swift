import Foundation
import XCTest
@testable import Lattice

final class SmokeTests: XCTestCase {
    final class Note: Object {
        @Persisted(primaryKey: true) var id = 0
        @Persisted var text = ""
    }

    func testAddAndReopen() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("smoke-\(UUID().uuidString).lattice")
        let config = Lattice.Configuration(fileURL: url, objectTypes: [Note.self])
        defer { _ = try? Lattice.deleteFiles(for: config) }
        do {
            let lattice = try Lattice(configuration: config)
            try lattice.write {
                let note = Note()
                note.id = 7
                note.text = "hello"
                try lattice.add(note)
            }
        }
        let reopened = try Lattice(configuration: config)
        XCTAssertEqual(reopened.objects(Note.self).count, 1)
        XCTAssertEqual(reopened.object(ofType: Note.self, forPrimaryKey: 7)?.text, "hello")
    }
}
