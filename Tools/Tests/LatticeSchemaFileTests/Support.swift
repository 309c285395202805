import Foundation
import LatticeSchemaFile
import XCTest

/// Paths of the repository, found from this file's location.
enum Repository {
    /// `Tools/`.
    static let tools = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// The repository root.
    static let root = tools.deletingLastPathComponent()
    /// `Schemas/`.
    static let schemas = root.appendingPathComponent("Schemas")
    /// `Tools/Tests/Generated/`, the golden files.
    static let generated = tools.appendingPathComponent("Tests/Generated")

    /// The schema files of `Schemas/`, sorted by name.
    static func schemaFiles() throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: schemas, includingPropertiesForKeys: nil)
            .filter { $0.lastPathComponent.hasSuffix(".lattice.json") }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }
}

extension XCTestCase {
    /// Reads and validates `json` as one schema file named `name`.
    func schema(_ json: String, name: String = "test.lattice.json") throws -> [SchemaFile] {
        try SchemaFile.validate([SchemaFile.read(Array(json.utf8), fileName: name)])
    }

    /// The diagnostics reading and validating the files `(name, json)` together gives, as printed.
    func diagnostics(_ files: [(String, String)]) -> [String] {
        do {
            _ = try SchemaFile.validate(files.map { try SchemaFile.read(Array($0.1.utf8), fileName: $0.0) })
            return []
        } catch let error as SchemaFileError {
            return error.diagnostics.map(\.description)
        } catch {
            return ["unexpected error: \(error)"]
        }
    }

    /// Asserts that `json` (as `test.lattice.json`) is rejected with exactly `expected`, one diagnostic a line.
    func assertRejected(_ json: String, _ expected: String..., file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(diagnostics([("test.lattice.json", json)]), expected, file: file, line: line)
    }
}
