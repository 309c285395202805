import Foundation
import Lattice
import LatticeSchemaConversion
import LatticeSchemaFile
import ToolsTestSupport
import XCTest

/// `info`, `schema export` and `query` on files made by the tests; usage errors and files that are
/// missing or no database.
final class InspectTests: CLITestCase {
    func testInfoListsClassesCountsIndexesSizesReadersAndVersions() throws {
        try makePeople()
        let result = try lattice("info", "people.lattice", "--json")
        XCTAssertEqual(result.status, 0, result.stderr)
        let info = try XCTUnwrap(try json(result.stdout) as? [String: Any])
        XCTAssertEqual(info["formatVersion"] as? Int, 6)
        XCTAssertEqual(info["schemaVersion"] as? Int, 0)
        let size = try XCTUnwrap(info["fileSize"] as? Int)
        XCTAssertEqual(size, try FileManager.default.attributesOfItem(atPath: url("people.lattice").path)[.size] as? Int)
        XCTAssertGreaterThan(try XCTUnwrap(info["mapSize"] as? Int), 0)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(info["readers"] as? Int), 1)
        let classes = try XCTUnwrap(info["classes"] as? [[String: Any]])
        XCTAssertEqual(classes.map { $0["name"] as? String }, ["CLIAddress", "CLINote", "CLIPerson"])
        XCTAssertEqual(classes.map { $0["count"] as? Int }, [nil, 30, 30])
        XCTAssertEqual(classes.map { $0["embedded"] as? Bool }, [true, false, false])
        XCTAssertEqual(classes[2]["primaryKey"] as? String, "id")
        XCTAssertEqual(classes[2]["indexes"] as? [String], ["id", "name"])
        XCTAssertTrue(classes[1]["primaryKey"] is NSNull)

        let table = try lattice("info", "people.lattice")
        XCTAssertEqual(table.status, 0, table.stderr)
        XCTAssertTrue(table.stdout.contains("Format version:  6"), table.stdout)
        XCTAssertTrue(table.stdout.contains("Schema version:  0"), table.stdout)
        let personRow = table.stdout.split(separator: "\n").first { $0.hasPrefix("CLIPerson") }.map(String.init) ?? ""
        XCTAssertEqual(personRow.split(separator: " ", omittingEmptySubsequences: true), ["CLIPerson", "30", "id", "id,", "name"])
    }

    func testSchemaExportRoundTripsThroughCodegen() throws {
        try makePeople()
        let out = url("people.lattice.json")
        let result = try lattice("schema", "export", "people.lattice", "--output", out.path)
        XCTAssertEqual(result.status, 0, result.stderr)
        // The schema file converts back to exactly the stored schema: classes generated from it store that
        // schema, so they open the file unchanged (ConversionTests prove generated classes store it).
        let file = try SchemaFile.validate([SchemaFile.read(contentsOf: out.path)])
        let stored = try Lattice(configuration: .init(fileURL: url("people.lattice"), readOnly: true, dynamicSchema: true)).schema
        XCTAssertEqual(SchemaFile.latticeSchema(of: file), stored)
        // lattice-codegen accepts it and generates every class.
        let generated = try runProcess(Paths.codegen(), [out.path])
        XCTAssertEqual(generated.status, 0, generated.stderr)
        for declaration in ["final class CLIPerson: Object", "final class CLIAddress: EmbeddedObject", "final class CLINote: Object",
                            "@Persisted(originProperty: \"friends\") var friendOf: LinkingObjects<CLIPerson>"] {
            XCTAssertTrue(generated.stdout.contains(declaration), declaration)
        }
        // Printed to standard output by default: the same text.
        let printed = try lattice("schema", "export", "people.lattice")
        XCTAssertEqual(printed.stdout, try String(contentsOf: out, encoding: .utf8))
    }

    func testSchemaExportCarriesAnnotationsOverAndFilesMadeFromASchemaFileExportBackToIt() throws {
        // A file made from a schema file (an import of nothing creates it), exported with that schema file
        // as annotations, gives the schema file back: the same classes, properties, docs and defaults.
        let schema = Paths.schemas.appendingPathComponent("ToDo.lattice.json")
        let empty = url("empty.ndjson")
        try Data().write(to: empty)
        let created = try lattice("import", "todo.lattice", "--schema", schema.path, stdin: empty)
        XCTAssertEqual(created.status, 0, created.stderr)
        XCTAssertEqual(created.stdout, "Imported 0 objects into todo.lattice.\n")
        let exported = try lattice("schema", "export", "todo.lattice", "--annotations", schema.path)
        XCTAssertEqual(exported.status, 0, exported.stderr)
        XCTAssertTrue(exported.stdout.contains("\"doc\": \"What is to be done.\""), exported.stdout)
        let original = try SchemaFile.read(contentsOf: schema.path)
        XCTAssertEqual(try SchemaFile.read(Array(exported.stdout.utf8), fileName: "ToDo.lattice.json").jsonText(), original.jsonText())
    }

    func testQueryWithTypedArgumentsSortLimitAndJSON() throws {
        try makePeople()
        // VIPs born after January 10th: ids 12, 15, ..., 27; newest first, three of them.
        let result = try lattice("query", "people.lattice", "CLIPerson", "isVIP == $0 AND born > $1 AND address.city != $2",
                                 "--arg", "true", "--arg", "2024-01-10T00:00:00Z", "--arg", "Nowhere",
                                 "--sort", "-born", "--limit", "3", "--json")
        XCTAssertEqual(result.status, 0, result.stderr)
        let rows = try XCTUnwrap(try json(result.stdout) as? [[String: Any]])
        XCTAssertEqual(rows.map { $0["id"] as? Int }, [27, 24, 21])
        XCTAssertEqual(rows[0]["name"] as? String, "person 27")
        XCTAssertEqual(rows[0]["born"] as? String, "2024-01-28T00:00:00Z")
        XCTAssertEqual(rows[0]["best"] as? Int, try noteKey("note 27"))        // a class without primary key: its object key
        XCTAssertEqual(rows[0]["friends"] as? [Int], [26, 28])                // links by primary key
        XCTAssertEqual((rows[0]["address"] as? [String: Any])?["landlord"] as? Int, 28)
        let scores = try XCTUnwrap(rows[0]["scores"] as? [String: Any])
        XCTAssertEqual(scores["math"] as? Int, 27)
        XCTAssertTrue(scores["art"] is NSNull)
        XCTAssertNil(rows[0]["friendOf"])                                      // linking objects are computed, not listed

        // UUID, ObjectId, Decimal, Int8 and Data arguments; sorting by two keys; the full language.
        let first = try open("people.lattice").objects(CLIPerson.self).sorted(by: { $0.id < $1.id })[0]
        let typed = try lattice("query", "people.lattice", "CLIPerson",
                                "uuid == $0 OR oid == $1 OR (balance >= $2 AND small < $3 AND ANY tags == 't1' AND SUBQUERY(friends, $f, $f.id > 25).@count > 0)",
                                "--arg", first.uuid.uuidString, "--arg", first.oid.description, "--arg", "20.25", "--arg", "20",
                                "--sort", "isVIP", "--sort", "-id", "--json")
        XCTAssertEqual(typed.status, 0, typed.stderr)
        XCTAssertEqual((try json(typed.stdout) as? [[String: Any]])?.map { $0["id"] as? Int }, [28, 25, 0])

        // The table: a header, a rule, one row per object, the count.
        let table = try lattice("query", "people.lattice", "CLIPerson", "id < 2", "--sort", "id")
        XCTAssertEqual(table.status, 0, table.stderr)
        let lines = table.stdout.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines[0].hasPrefix("id  name"), lines[0])
        XCTAssertTrue(lines[2].hasPrefix("0   person 0"), lines[2])
        XCTAssertTrue(lines[3].contains("[2 items]"), lines[3])
        XCTAssertEqual(lines.last, "2 objects")
        XCTAssertEqual(try lattice("query", "people.lattice", "CLINote", "--limit", "5").stdout.split(separator: "\n").last, "5 of 30 objects")
    }

    func testEncryptedFilesNeedTheKeyFile() throws {
        let key = Data((0..<64).map { UInt8($0 * 3 % 256) })
        var configuration = Lattice.Configuration(fileURL: url("secret.lattice"), objectTypes: cliTypes)
        configuration.encryptionKey = key
        do {
            let lattice = try Lattice(configuration: configuration)
            try lattice.write { try lattice.create(CLIPerson.self, value: ["id": 7, "name": "hidden"]) }
        }
        try key.write(to: url("raw.key"))
        try Data(key.map { String(format: "%02x", $0) }.joined().utf8 + [0x0A]).write(to: url("hex.key"))
        for keyFile in ["raw.key", "hex.key"] {
            let query = try lattice("query", "secret.lattice", "CLIPerson", "name == 'hidden'", "--key-file", keyFile, "--json")
            XCTAssertEqual(query.status, 0, query.stderr)
            XCTAssertEqual((try json(query.stdout) as? [[String: Any]])?.map { $0["id"] as? Int }, [7])
        }
        let info = try lattice("info", "secret.lattice", "--key-file", "raw.key")
        XCTAssertEqual(info.status, 0, info.stderr)
        XCTAssertTrue(info.stdout.contains("CLIPerson"), info.stdout)

        // Without the key, or with a wrong or malformed one: a clear message, no output.
        let without = try lattice("info", "secret.lattice")
        XCTAssertEqual(without.status, 1)
        XCTAssertTrue(without.stderr.contains("encrypt"), without.stderr)
        try Data(repeating: 1, count: 64).write(to: url("wrong.key"))
        let wrong = try lattice("query", "secret.lattice", "CLIPerson", "--key-file", "wrong.key")
        XCTAssertEqual(wrong.status, 1)
        XCTAssertTrue(wrong.stdout.isEmpty, wrong.stdout)
        try Data(repeating: 1, count: 10).write(to: url("short.key"))
        let short = try lattice("info", "secret.lattice", "--key-file", "short.key")
        XCTAssertEqual(short.status, 64)
        XCTAssertTrue(short.stderr.contains("64 bytes"), short.stderr)

        // An import into a new encrypted file, read back with the key.
        let export = try lattice("export", "secret.lattice", "--key-file", "raw.key", "--format", "ndjson")
        XCTAssertEqual(export.status, 0, export.stderr)
        try Data(export.stdout.utf8).write(to: url("dump.ndjson"))
        let imported = try lattice("import", "copy.lattice", "--key-file", "hex.key", stdin: url("dump.ndjson"))
        XCTAssertEqual(imported.status, 0, imported.stderr)
        XCTAssertEqual(try lattice("query", "copy.lattice", "CLIPerson", "--key-file", "raw.key").stdout.split(separator: "\n").last,
                       "1 object")
        XCTAssertEqual(try lattice("info", "copy.lattice").status, 1)
    }

    func testUsageErrorsAndBadFilesExitWithClearMessages() throws {
        try makePeople()
        try Data("this is not a database".utf8).write(to: url("notes.txt"))
        let cases: [(arguments: [String], status: Int32, message: String)] = [
            (["query", "people.lattice", "CLIPerson", "name == "], 64, "column 9"),
            (["query", "people.lattice", "Nobody"], 64, "no class 'Nobody' (its classes: CLINote, CLIPerson)"),
            (["query", "people.lattice", "CLIAddress"], 64, "'CLIAddress' is an embedded class"),
            (["query", "people.lattice", "CLIPerson", "--sort", "nope"], 64, "no property 'nope'"),
            (["query", "people.lattice", "CLIPerson", "born > $0", "--arg", "yesterday"], 64, "'yesterday' is not a value"),
            (["query", "people.lattice", "CLIPerson", "id > $1", "--arg", "1"], 64, "$1"),
            (["query", "people.lattice", "CLIPerson", "--limit", "-1"], 64, "--limit"),
            (["query", "people.lattice"], 64, "Missing expected argument"),
            (["info", "people.lattice", "--bogus"], 64, "Unknown option '--bogus'"),
            (["frobnicate"], 64, "Unexpected argument 'frobnicate'"),
            (["export", "people.lattice", "--format", "xml"], 64, "--format"),
            (["info", "missing.lattice"], 1, "'missing.lattice': no such file."),
            (["query", "notes.txt", "X"], 1, "is not a Lattice database"),
            (["check", "notes.txt"], 1, "is not a Lattice database"),
            (["info", "."], 1, "is a directory"),
        ]
        for (arguments, status, message) in cases {
            let result = try runProcess(Paths.lattice(), arguments, in: directory)
            XCTAssertEqual(result.status, status, "\(arguments): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains(message), "\(arguments): \(result.stderr)")
            XCTAssertEqual(result.stdout, "", "\(arguments)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: url("missing.lattice").path))  // read-only commands create nothing
    }

    func testHelpForEveryCommand() throws {
        for command in [[], ["info"], ["schema"], ["schema", "export"], ["query"], ["export"], ["import"], ["check"], ["compact"], ["watch"]] {
            let result = try runProcess(Paths.lattice(), command + ["--help"])
            XCTAssertEqual(result.status, 0, "\(command)")
            XCTAssertTrue(result.stdout.contains("USAGE: lattice \(command.joined(separator: " "))"), "\(command): \(result.stdout)")
        }
    }

    func testReadingCommandsNeverWaitForAWriter() throws {
        try makePeople()
        // This process holds the file's write transaction (and its writer lock) while the tool reads.
        let writer = try open("people.lattice")
        try writer.beginWrite()
        try writer.create(CLINote.self, value: ["text": "uncommitted"])
        defer { writer.cancelWrite() }
        for arguments in [["info", "people.lattice"], ["query", "people.lattice", "CLINote", "text == 'uncommitted'", "--json"],
                          ["export", "people.lattice"], ["check", "people.lattice"]] {
            let result = try runProcess(Paths.lattice(), arguments, in: directory)
            XCTAssertEqual(result.status, 0, "\(arguments): \(result.stderr)")
            XCTAssertFalse(result.stdout.contains("\"uncommitted\""), "\(arguments)")
        }
    }

    /// The object key of the note with `text`.
    private func noteKey(_ text: String) throws -> Int {
        let dynamic = try Lattice(configuration: .init(fileURL: url("people.lattice"), readOnly: true, dynamicSchema: true))
        return Int(try XCTUnwrap(dynamic.dynamicObjects("CLINote").filter("text == %@", text).first?.objectKey))
    }
}
