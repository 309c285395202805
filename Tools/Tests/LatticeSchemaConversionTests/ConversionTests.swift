import Foundation
import Lattice
import LatticeSchemaConversion
import LatticeSchemaFile
import XCTest
@testable import GeneratedAllFeatures
@testable import GeneratedCarRepair
@testable import GeneratedExamsV0
@testable import GeneratedExamsV2
@testable import GeneratedFlashCards
@testable import GeneratedNewspaper
import GeneratedPublic
@testable import GeneratedSensors
@testable import GeneratedToDo

// AllFeatures is compiled twice (internal and public): these names mean the internal one.
private typealias Everything = GeneratedAllFeatures.Everything
private typealias Owner = GeneratedAllFeatures.Owner
private typealias Pet = GeneratedAllFeatures.Pet
private typealias Address = GeneratedAllFeatures.Address

/// The classes generated from each schema of `Schemas/` (compiled from the golden files) open real
/// database files, the database stores exactly the schema the schema file converts to, and a stored
/// schema exports back to the schema file.
final class ConversionTests: XCTestCase {
    static let schemasDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Schemas")

    /// Every schema file and the classes generated from it.
    let models: [(file: String, types: [Object.Type])] = [
        ("AllFeatures", GeneratedAllFeatures.AllFeaturesSchema.objectTypes),
        ("CarRepair", CarRepairSchema.objectTypes),
        ("ExamsV0", ExamsV0Schema.objectTypes),
        ("ExamsV2", ExamsV2Schema.objectTypes),
        ("FlashCards", FlashCardsSchema.objectTypes),
        ("Newspaper", NewspaperSchema.objectTypes),
        ("Sensors", SensorsSchema.objectTypes),
        ("ToDo", ToDoSchema.objectTypes),
    ]

    var urls: [URL] = []

    override func tearDown() {
        for url in urls {
            try? FileManager.default.removeItem(at: url)
            try? FileManager.default.removeItem(atPath: url.path + "-lock")
        }
    }

    /// A new database file path, removed at tear-down.
    func temporaryDatabase() -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("codegen-\(UUID().uuidString).lattice")
        urls.append(url)
        return url
    }

    func schemaFile(_ name: String) throws -> SchemaFile {
        try SchemaFile.validate([SchemaFile.read(contentsOf: Self.schemasDirectory.appendingPathComponent("\(name).lattice.json").path)])[0]
    }

    func testEveryGeneratedModelStoresTheSchemaOfItsFileAndExportsBackToIt() throws {
        XCTAssertEqual(models.count, 8, "one entry per schema of Schemas/")
        for (name, types) in models {
            let file = try schemaFile(name)
            let configuration = Lattice.Configuration(fileURL: temporaryDatabase(), schemaVersion: file.schemaVersion ?? 0, objectTypes: types)
            let stored = try Lattice(configuration: configuration).schema
            XCTAssertEqual(stored, SchemaFile.latticeSchema(of: [file]), name)

            // A stored schema, exported with the schema file as annotations, is the schema file again,
            // less the former names (a rename the database has already gone through).
            var expected = file
            for c in expected.classes.indices {
                expected.classes[c].originalName = nil
                for p in expected.classes[c].properties.indices { expected.classes[c].properties[p].originalName = nil }
            }
            let exported = SchemaFile(exporting: stored, fileName: file.fileName, schemaVersion: file.schemaVersion, annotations: file)
            XCTAssertEqual(exported, expected, name)

            // The JSON a database stores is itself a schema file, which exports to the same as the Schema.
            let storedJSON = try JSONEncoder().encode(stored)
            let read = try SchemaFile.validate([SchemaFile.read(Array(storedJSON), fileName: name)])
            XCTAssertEqual(read, [SchemaFile(exporting: stored, fileName: name)], name)
            XCTAssertEqual(SchemaFile.latticeSchema(of: read), stored, name)
        }
    }

    func testExportWithoutAnnotationsKeepsOnlyWhatTheDatabaseStores() throws {
        let url = temporaryDatabase()
        let stored = try Lattice(configuration: .init(fileURL: url, objectTypes: NewspaperSchema.objectTypes)).schema
        let exported = SchemaFile(exporting: stored, fileName: "Newspaper.lattice.json")
        XCTAssertEqual(exported.jsonText(), """
            {
              "objectSchemas": [
                {
                  "className": "Article",
                  "properties": [
                    { "name": "id", "type": "string", "isPrimaryKey": true },
                    { "name": "title", "type": "string", "isOptional": true },
                    { "name": "author", "type": "object", "objectClassName": "Person", "isOptional": true },
                    { "name": "people", "type": "object", "collection": "list", "objectClassName": "Person" },
                    { "name": "date", "type": "date" }
                  ]
                },
                {
                  "className": "Person",
                  "properties": [
                    { "name": "key", "type": "string", "isPrimaryKey": true },
                    { "name": "firstName", "type": "string" },
                    { "name": "lastName", "type": "string", "isOptional": true },
                    { "name": "born", "type": "date" },
                    { "name": "deceased", "type": "date", "isOptional": true },
                    { "name": "photo", "type": "data", "isOptional": true },
                    { "name": "isVIP", "type": "bool", "isIndexed": true },
                    { "name": "allowsPublication", "type": "bool", "isOptional": true },
                    { "name": "id", "type": "int" },
                    { "name": "hairCount", "type": "int64" },
                    { "name": "height", "type": "float" },
                    { "name": "weight", "type": "double" },
                    { "name": "department", "type": "string" },
                    { "name": "articles", "type": "linkingObjects", "objectClassName": "Article", "originProperty": "author" }
                  ]
                }
              ]
            }

            """)
        // Generated again, the enum property is a plain String.
        let source = SwiftGenerator().source(for: try SchemaFile.validate([exported]))
        XCTAssertTrue(source.contains("    @Persisted var department: String\n"))
        XCTAssertTrue(source.contains("    @Persisted(originProperty: \"author\") var articles: LinkingObjects<Article>\n"))
    }

    func testGeneratedClassesKeepTheirInitialValuesAndPersistEveryShape() throws {
        let url = temporaryDatabase()
        let configuration = Lattice.Configuration(fileURL: url, schemaVersion: 3, objectTypes: GeneratedAllFeatures.AllFeaturesSchema.objectTypes)
        do {
            let lattice = try Lattice(configuration: configuration)
            let everything = Everything()
            // Initial values from `default` and `defaultExpression`.
            XCTAssertEqual(everything.bool, true)
            XCTAssertEqual(everything.int, -42)
            XCTAssertEqual(everything.int64, Int64.min)
            XCTAssertEqual(everything.double, 0.0025)
            XCTAssertEqual(everything.string, "a \"quoted\" \\ line\nand a second one")
            XCTAssertEqual(everything.data, Data([1, 2]))
            XCTAssertEqual(everything.date, Date(timeIntervalSince1970: 1_700_000_000))
            XCTAssertEqual(everything.decimal, 100)
            XCTAssertEqual(everything.color, .green)
            XCTAssertEqual(everything.level, .low, "no default: the first case")
            XCTAssertEqual(everything.optInt, 7)
            XCTAssertNil(everything.optString)
            XCTAssertNotNil(everything.optUUID)
            XCTAssertEqual(everything.optColor, .blue)
            everything.id = 1
            everything.level = .high

            let rex = Pet()
            rex.name = "Rex"
            let owner = Owner()
            owner.name = "Ann"
            owner.best = rex
            owner.pets.append(rex)
            owner.friends.insert(rex)
            owner.petsByName["rex"] = rex
            owner.petsByName["none"] = .some(nil)
            let address = Address()
            address.city = "Oslo"
            owner.address = address
            owner.nicknames.append("A")
            owner.luckyNumbers.append(contentsOf: [7, nil])
            owner.tags.insert("vip")
            owner.scores["math"] = 9.5
            owner.colors.append(contentsOf: [.red, .blue])
            owner.levels.insert(.mid)
            owner.visits["first"] = .some(nil)
            try lattice.write {
                try lattice.add(everything)
                try lattice.add(owner)
            }
        }

        let lattice = try Lattice(configuration: configuration)
        let everything = try XCTUnwrap(lattice.object(ofType: Everything.self, forPrimaryKey: 1))
        XCTAssertEqual(everything.level, .high)
        XCTAssertEqual(everything.color, .green)
        XCTAssertEqual(everything.string, "a \"quoted\" \\ line\nand a second one")
        let owner = try XCTUnwrap(lattice.object(ofType: Owner.self, forPrimaryKey: "Ann"))
        let rex = try XCTUnwrap(owner.best)
        XCTAssertEqual(rex.name, "Rex")
        XCTAssertEqual(rex.owners.map(\.name), ["Ann"])
        XCTAssertEqual(rex.fans.map(\.name), ["Ann"])
        XCTAssertEqual(owner.pets.map(\.name), ["Rex"])
        XCTAssertEqual(owner.friends.count, 1)
        XCTAssertEqual(owner.petsByName["rex"]??.name, "Rex")
        XCTAssertEqual(owner.address?.city, "Oslo")
        XCTAssertEqual(Array(owner.luckyNumbers), [7, nil])
        XCTAssertTrue(owner.tags.contains("vip"))
        XCTAssertEqual(owner.scores["math"], 9.5)
        XCTAssertEqual(Array(owner.colors), [.red, .blue])
        XCTAssertTrue(owner.levels.contains(.mid))
    }

    func testPublicGeneratedClassesAreUsableFromAnotherModule() throws {
        // GeneratedPublic is imported without @testable: only its public declarations are visible.
        let everything = GeneratedPublic.Everything()
        XCTAssertEqual(everything.int, -42)
        XCTAssertEqual(GeneratedPublic.AllFeaturesSchema.schemaVersion, 3)
        let url = temporaryDatabase()
        let lattice = try Lattice(configuration: .init(fileURL: url, schemaVersion: GeneratedPublic.AllFeaturesSchema.schemaVersion,
                                                       objectTypes: GeneratedPublic.AllFeaturesSchema.objectTypes))
        XCTAssertEqual(lattice.schema, SchemaFile.latticeSchema(of: [try schemaFile("AllFeatures")]))
    }
}
