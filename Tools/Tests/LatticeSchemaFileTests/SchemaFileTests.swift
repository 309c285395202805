import Foundation
@testable import LatticeSchemaFile
import XCTest

/// Reading, writing and generating: what each key of the format turns into.
final class SchemaFileTests: XCTestCase {
    func testEverySchemaSurvivesWritingAndReadingBack() throws {
        for url in try Repository.schemaFiles() {
            let original = try SchemaFile.read(contentsOf: url.path)
            let text = original.jsonText()
            let again = try SchemaFile.read(Array(text.utf8), fileName: url.path)
            XCTAssertEqual(again, original, url.lastPathComponent)
            XCTAssertEqual(again.jsonText(), text, "writing is deterministic")
            // Validation gives the same result from both.
            XCTAssertEqual(try SchemaFile.validate([again]), try SchemaFile.validate([original]))
        }
    }

    func testWrittenTextKeepsPropertiesOnOneLine() throws {
        let file = try schema("""
            { "enums": [{ "name": "Mood", "rawType": "int8", "cases": [{ "name": "calm", "rawValue": 0 }, { "name": "cheerful", "rawValue": 1, "doc": "Smiling." }] }],
              "objectSchemas": [{ "className": "Dog", "doc": "A dog.\\nA good one.", "properties": [
                { "name": "id", "type": "uuid", "isPrimaryKey": true, "defaultExpression": "UUID()" },
                { "name": "mood", "enum": "Mood", "default": "calm" },
                { "name": "friends", "type": "object", "objectClassName": "Dog", "collection": "set" }] }] }
            """, name: "Dogs.lattice.json")[0]
        XCTAssertEqual(file.jsonText(schemaReference: "./lattice-schema.json"), """
            {
              "$schema": "./lattice-schema.json",
              "enums": [
                {
                  "name": "Mood",
                  "rawType": "int8",
                  "cases": [
                    { "name": "calm", "rawValue": 0 },
                    { "name": "cheerful", "rawValue": 1, "doc": "Smiling." }
                  ]
                }
              ],
              "objectSchemas": [
                {
                  "className": "Dog",
                  "doc": ["A dog.", "A good one."],
                  "properties": [
                    { "name": "id", "type": "uuid", "isPrimaryKey": true, "defaultExpression": "UUID()" },
                    { "name": "mood", "enum": "Mood", "default": "calm" },
                    { "name": "friends", "type": "object", "collection": "set", "objectClassName": "Dog" }
                  ]
                }
              ]
            }

            """)
    }

    func testTheStoredSchemaOfTheFileFormatArticleIsASchemaFile() throws {
        // The `schema` value of the File Format article, as a database stores it.
        let stored = #"""
            {"objectSchemas":[{"className":"ToDoItem","properties":[
              {"name":"id","type":"string","isOptional":false,"isIndexed":true,"isPrimaryKey":true},
              {"name":"text","type":"string","isOptional":false,"isIndexed":false,"isPrimaryKey":false},
              {"name":"isCompleted","type":"bool","isOptional":false,"isIndexed":false,"isPrimaryKey":false}]}]}
            """#
        let file = try schema(stored)[0]
        XCTAssertEqual(file.classes.map(\.className), ["ToDoItem"])
        XCTAssertEqual(file.classes[0].properties.map(\.name), ["id", "text", "isCompleted"])
        XCTAssertTrue(file.classes[0].properties[0].isPrimaryKey)
    }

    func testGeneratedDeclarations() throws {
        let files = try schema("""
            {
              "schemaVersion": 4,
              "enums": [{ "name": "Size", "rawType": "int", "cases": [{ "name": "small", "rawValue": 1 }, { "name": "large", "rawValue": 9 }] }],
              "objectSchemas": [
                { "className": "Box", "doc": ["Holds things.", "", "  Indented line  "], "originalName": "Crate", "properties": [
                  { "name": "code", "type": "int32", "isPrimaryKey": true },
                  { "name": "label", "type": "string", "isIndexed": true, "default": "tab\\there \\"q\\" \\\\ é" },
                  { "name": "size", "enum": "Size", "isOptional": true, "default": "large" },
                  { "name": "opened", "type": "date", "default": -1.5 },
                  { "name": "price", "type": "decimal", "default": -3 },
                  { "name": "nothing", "type": "double", "isOptional": true, "default": null },
                  { "name": "things", "type": "object", "objectClassName": "Thing", "collection": "list", "isOptional": true },
                  { "name": "weights", "type": "float", "collection": "set" },
                  { "name": "shelves", "type": "linkingObjects", "objectClassName": "Shelf", "originProperty": "boxes" }
                ] },
                { "className": "Thing", "isEmbedded": true, "properties": [{ "name": "name", "type": "string", "originalName": "title" }] },
                { "className": "Shelf", "properties": [
                  { "name": "boxes", "type": "object", "objectClassName": "Box", "collection": "list" }] }
              ]
            }
            """, name: "dir/storage-room.lattice.json")
        XCTAssertEqual(files[0].namespaceName, "StorageRoomSchema")
        XCTAssertEqual(SwiftGenerator().source(for: files), #"""
            // Generated by lattice-codegen from storage-room.lattice.json. Do not edit: change the schema and generate again.

            import Foundation
            import Lattice

            enum Size: Int, PersistableEnum {
                case small = 1
                case large = 9
            }

            /// Holds things.
            ///
            ///   Indented line
            ///
            /// Renamed from `Crate`.
            final class Box: Object {
                @Persisted(primaryKey: true) var code: Int32
                @Persisted(indexed: true) var label: String = "tab\there \"q\" \\ é"
                @Persisted var size: Size? = .large
                @Persisted var opened: Date = Date(timeIntervalSince1970: -1.5)
                @Persisted var price: Decimal = -3
                @Persisted var nothing: Double?
                @Persisted var things: List<Thing?>
                @Persisted var weights: MutableSet<Float>
                @Persisted(originProperty: "boxes") var shelves: LinkingObjects<Shelf>

                /// Generated without an initializer or deinitializer of its own: loops may reuse instances.
                override class var reusesInstancesWhileIterating: Bool { true }
            }

            final class Thing: EmbeddedObject {
                /// Renamed from `title`.
                @Persisted var name: String

                /// Generated without an initializer or deinitializer of its own: loops may reuse instances.
                override class var reusesInstancesWhileIterating: Bool { true }
            }

            final class Shelf: Object {
                @Persisted var boxes: List<Box>

                /// Generated without an initializer or deinitializer of its own: loops may reuse instances.
                override class var reusesInstancesWhileIterating: Bool { true }
            }

            /// The classes of storage-room.lattice.json, for `Lattice.Configuration(objectTypes:)`.
            enum StorageRoomSchema {
                /// The schema version to open files with (`Lattice.Configuration(schemaVersion:)`).
                static let schemaVersion: UInt64 = 4

                /// Every class of the schema, in declaration order.
                static var objectTypes: [Object.Type] { [Box.self, Thing.self, Shelf.self] }
            }

            """#)
    }

    func testPositionsCountLinesAndUnicodeScalars() throws {
        // "é" is two bytes but one column; the unknown type is on line 3.
        let json = "{\"objectSchemas\": [{\"className\": \"Café\", \"doc\": \"é\",\n\"properties\": [\n  {\"name\": \"é\", \"type\": \"text\"}]}]}"
        XCTAssertEqual(diagnostics([("f.json", json)]), [
            "f.json:3:25: error: unknown type 'text' for property 'Café.é' (expected one of: bool, int, int8, int16, int32, int64, float, double, string, data, date, uuid, decimal, objectId, object, linkingObjects)",
        ])
    }
}
