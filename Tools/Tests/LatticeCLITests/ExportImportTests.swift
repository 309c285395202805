import Foundation
import Lattice
import ToolsTestSupport
import XCTest

/// `export` and `import`: round trips in both formats comparing every object, imports rejected whole
/// with the line of the bad row, new files from the export's header or a schema file.
final class ExportImportTests: CLITestCase {
    func testNDJSONRoundTripKeepsEveryObjectValueLinkAndCollection() throws {
        try makePeople()
        let export = try lattice("export", "people.lattice")
        XCTAssertEqual(export.status, 0, export.stderr)
        XCTAssertEqual(export.stderr, "")  // no progress when standard error is no terminal
        XCTAssertEqual(try lattice("dump", "people.lattice").stdout, export.stdout, "dump is export by another name")
        let lines = export.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 1 + 30 + 30)
        let header = try XCTUnwrap(try json(lines[0]) as? [String: Any])
        XCTAssertEqual(header["lattice"] as? String, "export")
        XCTAssertEqual(header["version"] as? Int, 1)
        XCTAssertNotNil(header["schema"] as? [String: Any])
        // Every line is one JSON object; people link to notes (by object key) and notes to people (by id),
        // so one of the two classes meets links to objects not yet imported.
        let rows = try lines.dropFirst().map { try XCTUnwrap(try json($0) as? [String: Any]) }
        XCTAssertEqual(Set(rows.compactMap { $0["class"] as? String }), ["CLIPerson", "CLINote"])
        XCTAssertTrue(rows.filter { $0["class"] as? String == "CLINote" }.allSatisfy { $0["key"] is Int })
        XCTAssertTrue(rows.filter { $0["class"] as? String == "CLIPerson" }.allSatisfy { $0["key"] == nil })
        let zero = try XCTUnwrap(rows.first { $0["class"] as? String == "CLIPerson" && ($0["value"] as? [String: Any])?["id"] as? Int == 0 })
        let values = try XCTUnwrap(zero["value"] as? [String: Any])
        XCTAssertEqual(values["height"] as? String, "NaN")
        XCTAssertEqual(values["ratio"] as? String, "-Infinity")
        XCTAssertEqual(values["born"] as? Double, 1.1)                  // not a whole second: seconds since 2001
        XCTAssertEqual(values["photo"] as? String, Data([0, 0, 255]).base64EncodedString())
        XCTAssertEqual(values["balance"] as? String, "0.25")
        let nicknames = try XCTUnwrap(values["nicknames"] as? [Any])
        XCTAssertEqual(nicknames.count, 2)
        XCTAssertEqual(nicknames.first as? String, "p0")
        XCTAssertTrue(nicknames.last is NSNull)

        let dumpFile = url("dump.ndjson")
        try Data(export.stdout.utf8).write(to: dumpFile)
        let imported = try lattice("import", "copy.lattice", stdin: dumpFile)
        XCTAssertEqual(imported.status, 0, imported.stderr)
        XCTAssertEqual(imported.stdout, "Imported 60 objects into copy.lattice.\n")
        XCTAssertEqual(try dump("copy.lattice"), try dump("people.lattice"))
        XCTAssertEqual(try open("copy.lattice").schema, try open("people.lattice").schema)
    }

    func testJSONRoundTripAndExportOfSomeClasses() throws {
        try makePeople(count: 5)
        let export = try lattice("export", "people.lattice", "--format", "json")
        XCTAssertEqual(export.status, 0, export.stderr)
        let document = try XCTUnwrap(try json(export.stdout) as? [String: Any])
        XCTAssertEqual((document["objects"] as? [Any])?.count, 10)
        try Data(export.stdout.utf8).write(to: url("dump.json"))
        let imported = try lattice("import", "copy.lattice", "--format", "json", "--input", url("dump.json").path)
        XCTAssertEqual(imported.status, 0, imported.stderr)
        XCTAssertEqual(try dump("copy.lattice"), try dump("people.lattice"))

        // --class: only the notes (their links to people are written, by primary key).
        let notes = try lattice("export", "people.lattice", "--class", "CLINote")
        XCTAssertEqual(notes.stdout.split(separator: "\n").count, 1 + 5)
        XCTAssertFalse(notes.stdout.contains("\"class\":\"CLIPerson\""))
        XCTAssertEqual(try lattice("export", "people.lattice", "--class", "Nope").status, 64)
    }

    func testImportIsRejectedWholeAtTheFirstBadRowNamingItsLine() throws {
        try makePeople(count: 3)
        let before = try dump("people.lattice")
        let good = #"{"class":"CLINote","key":900,"value":{"text":"new","author":1}}"#
        let cases: [(rows: [String], message: String)] = [
            ([good, good, #"{"class":"CLIPerson","value":{"id":50,"name":7}}"#], "line 3: 'CLIPerson.name' expects a string, found 7."),
            ([good, "", #"{"class":"CLINote","value":{"text":"x","at":"soon"}}"#], "line 3: 'CLINote.at' expects an ISO 8601 date"),
            ([good, #"{"class":"CLINote","value":{"text":"#], "line 2: "),
            ([#"{"class":"Ghost","value":{}}"#], "line 1: the file has no class 'Ghost'"),
            ([good, #"{"class":"CLINote","value":{"colour":"red"}}"#], "line 2: 'CLINote' has no stored property 'colour'."),
            ([#"{"class":"CLIPerson","value":{"id":2}}"#], "line 1: An object of type 'CLIPerson' with primary key 2 already exists."),
            ([good, #"{"class":"CLIPerson","value":{"id":60,"best":12345}}"#, good],
             "line 2: 'CLIPerson.best' links to the 'CLINote' object with object key 12345 in the export, which is neither in the file nor in the import."),
            ([#"{"class":"CLINote","value":{"author":99}}"#], "line 1: 'CLINote.author' links to the 'CLIPerson' object with primary key 99"),
            ([#"{"value":{}}"#], "line 1: a row needs \"class\" and \"value\" members."),
            ([#"{"class":"CLIPerson","value":{"id":70,"small":300}}"#], "line 1: 'CLIPerson.small' expects an Int8, found 300."),
        ]
        for (rows, message) in cases {
            let input = url("bad.ndjson")
            try Data((rows.joined(separator: "\n") + "\n").utf8).write(to: input)
            let result = try lattice("import", "people.lattice", stdin: input)
            XCTAssertEqual(result.status, 1, "\(rows)")
            XCTAssertTrue(result.stderr.hasPrefix("lattice: error: " + message), "\(rows): \(result.stderr)")
            XCTAssertEqual(try dump("people.lattice"), before, "\(rows)")  // nothing of the rows before it was kept
        }
        // A link to a row further down is fine: it is set once every row is in.
        let forward = url("forward.ndjson")
        try Data("""
            {"class":"CLIPerson","value":{"id":10,"best":77,"friends":[11]}}
            {"class":"CLIPerson","value":{"id":11,"friends":[10]}}
            {"class":"CLINote","key":77,"value":{"text":"later","author":11}}

            """.utf8).write(to: forward)
        let result = try lattice("import", "people.lattice", stdin: forward)
        XCTAssertEqual(result.status, 0, result.stderr)
        let lattice = try open("people.lattice")
        let ten = try XCTUnwrap(lattice.object(ofType: CLIPerson.self, forPrimaryKey: 10))
        XCTAssertEqual(ten.best?.text, "later")
        XCTAssertEqual(ten.best?.author?.id, 11)
        XCTAssertEqual(ten.friends.map(\.id), [11])
        XCTAssertEqual(ten.friendOf.map(\.id), [11])
    }

    func testImportIntoANewFileNeedsASchemaAndLeavesNoFileWhenRejected() throws {
        try makePeople(count: 3)
        let export = try lattice("export", "people.lattice")
        // Without its header, the rows alone cannot create a file...
        let rows = url("rows.ndjson")
        try Data(export.stdout.split(separator: "\n").dropFirst().joined(separator: "\n").utf8).write(to: rows)
        let refused = try lattice("import", "new.lattice", stdin: rows)
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("give its schema with --schema"), refused.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: url("new.lattice").path))
        // ...with a schema file they can.
        let schema = url("people.lattice.json")
        XCTAssertEqual(try lattice("schema", "export", "people.lattice", "-o", schema.path).status, 0)
        let created = try lattice("import", "new.lattice", "--schema", schema.path, stdin: rows)
        XCTAssertEqual(created.status, 0, created.stderr)
        XCTAssertEqual(try dump("new.lattice"), try dump("people.lattice"))

        // A rejected import into a file it was creating leaves no file behind.
        let bad = url("bad.ndjson")
        try Data((export.stdout + #"{"class":"CLINote","value":{"text":5}}"# + "\n").utf8).write(to: bad)
        let rejected = try lattice("import", "other.lattice", stdin: bad)
        XCTAssertEqual(rejected.status, 1)
        XCTAssertTrue(rejected.stderr.contains("line 8: 'CLINote.text' expects a string, found 5."), rejected.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: url("other.lattice").path))
    }
}
