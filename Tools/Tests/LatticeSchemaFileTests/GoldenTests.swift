import Foundation
import LatticeSchemaFile
import XCTest

/// The generator's output for every schema of `Schemas/` equals the checked-in golden file
/// `Tools/Tests/Generated/<Name>/<Name>.swift`, byte for byte. Those files are also compiled as modules
/// of the Tools package (warnings are errors there), so a passing build plus these tests prove that the
/// generated code compiles.
///
/// After an intended change to the generator or a schema, regenerate the golden files with
/// `LATTICE_UPDATE_GOLDEN=1 swift test --filter GoldenTests` (run from `Tools/`), review the diff,
/// and commit it. A new schema needs its name added to `generatedModels` in `Tools/Package.swift`.
final class GoldenTests: XCTestCase {
    let updating = ProcessInfo.processInfo.environment["LATTICE_UPDATE_GOLDEN"] == "1"

    /// The golden file of generated module `name`.
    func goldenURL(_ name: String) -> URL {
        Repository.generated.appendingPathComponent("\(name)/\(name).swift")
    }

    func check(_ generated: String, against name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let url = goldenURL(name)
        if updating {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(generated.utf8).write(to: url)
            return
        }
        let expected = try String(contentsOf: url, encoding: .utf8)
        XCTAssertEqual(generated, expected, "\(name): the generator's output differs from \(url.path); see GoldenTests to regenerate",
                       file: file, line: line)
    }

    func testEverySchemaMatchesItsGoldenFile() throws {
        let files = try Repository.schemaFiles()
        XCTAssertEqual(files.map(\.lastPathComponent), [
            "AllFeatures.lattice.json", "CarRepair.lattice.json", "ExamsV0.lattice.json", "ExamsV2.lattice.json",
            "FlashCards.lattice.json", "Newspaper.lattice.json", "Sensors.lattice.json", "ToDo.lattice.json",
        ])
        for url in files {
            let schema = try SchemaFile.validate([SchemaFile.read(contentsOf: url.path)])
            try check(SwiftGenerator().source(for: schema), against: SchemaFile.baseName(of: url.path))
        }
    }

    func testPublicAccessLevelMatchesItsGoldenFile() throws {
        let schema = try SchemaFile.validate([SchemaFile.read(contentsOf: Repository.schemas.appendingPathComponent("AllFeatures.lattice.json").path)])
        let generated = SwiftGenerator(accessLevel: .public).source(for: schema)
        XCTAssertTrue(generated.contains("public final class Everything: Object {"))
        XCTAssertTrue(generated.contains("    @Persisted(primaryKey: true) public var id: Int\n"))
        try check(generated, against: "Public")
    }

    /// Every golden directory is a schema's (or `Public`), so none is left behind when a schema goes.
    func testNoStaleGoldenFiles() throws {
        let directories = try FileManager.default.contentsOfDirectory(atPath: Repository.generated.path).sorted()
        let expected = (try Repository.schemaFiles().map { SchemaFile.baseName(of: $0.path) } + ["Public"]).sorted()
        XCTAssertEqual(directories, expected)
    }

    func testOutputIsTheSameForTheSameContentUnderAnotherPath() throws {
        let url = Repository.schemas.appendingPathComponent("Newspaper.lattice.json")
        let text = try Array(Data(contentsOf: url))
        let a = try SchemaFile.validate([SchemaFile.read(text, fileName: url.path)])
        let b = try SchemaFile.validate([SchemaFile.read(text, fileName: "elsewhere/Newspaper.lattice.json")])
        XCTAssertEqual(SwiftGenerator().source(for: a), SwiftGenerator().source(for: b))
    }
}
