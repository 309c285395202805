import LatticeSchemaFile
import XCTest

/// Every problem a schema file can have is reported as `file:line:column: error: message`, at the value
/// concerned. Positions count lines and columns from 1.
final class DiagnosticTests: XCTestCase {
    // MARK: Malformed JSON

    func testMalformedJSON() {
        assertRejected("{\n  \"objectSchemas\": [\n    {\"className\": \"A\" \"properties\": []}\n  ]\n}",
                       "test.lattice.json:3:23: error: malformed JSON: expected ',' or '}' in object, found '\"'")
        assertRejected("{\"objectSchemas\": [}", "test.lattice.json:1:20: error: malformed JSON: expected a JSON value, found '}'")
        assertRejected("{\"objectSchemas\": [\n", "test.lattice.json:2:1: error: malformed JSON: expected a JSON value, found end of file")
        assertRejected("{\"objectSchemas\": \"abc", "test.lattice.json:1:19: error: malformed JSON: unterminated string")
        assertRejected("{\"objectSchemas\": [tru]}", "test.lattice.json:1:20: error: malformed JSON: invalid literal; expected 'true'")
        assertRejected("{\"objectSchemas\": []} x", "test.lattice.json:1:23: error: malformed JSON: unexpected 'x' after the JSON value")
        assertRejected("{\"objectSchemas\": [], \"objectSchemas\": []}", "test.lattice.json:1:23: error: malformed JSON: duplicate key 'objectSchemas'")
        assertRejected("{\"objectSchemas\": [01]}", "test.lattice.json:1:20: error: malformed JSON: invalid number: leading zeros are not allowed")
        assertRejected("{\"a\\q\": 1}", "test.lattice.json:1:4: error: malformed JSON: invalid escape sequence in string")
        assertRejected("", "test.lattice.json:1:1: error: malformed JSON: expected a JSON value, found end of file")
    }

    // MARK: Shape

    func testWrongKindsAndMissingOrUnknownKeys() {
        assertRejected("[]", "test.lattice.json:1:1: error: the schema file must be an object, not an array")
        assertRejected("{}", "test.lattice.json:1:1: error: the schema file has no 'objectSchemas' (the array of classes)")
        assertRejected("{\"objectSchemas\": [{\"className\": \"A\"}]}", "test.lattice.json:1:20: error: class 'A' has no 'properties'")
        assertRejected("{\"objectSchemas\": [{\"properties\": []}]}", "test.lattice.json:1:20: error: a class has no 'className'")
        assertRejected("""
            {"objectSchemas": [{"className": "A", "properties": [
              {"name": "x", "type": "int", "isOptinal": true}]}]}
            """,
            "test.lattice.json:2:32: error: unknown key 'isOptinal' in property 'A.x' (expected one of: name, type, enum, collection, objectClassName, originProperty, isOptional, isIndexed, isPrimaryKey, default, defaultExpression, doc, originalName)")
        assertRejected("""
            {"objectSchemas": [{"className": "A", "properties": [
              {"name": "x", "type": "int", "isIndexed": "yes"}]}]}
            """, "test.lattice.json:2:45: error: 'isIndexed' of property 'A.x' must be true or false, not a string")
        assertRejected("""
            {"objectSchemas": [{"className": "A", "properties": [{"name": "x"}]}]}
            """, "test.lattice.json:1:54: error: property 'A.x' has no 'type'")
        assertRejected("""
            {"objectSchemas": [{"className": "A", "properties": [{"name": "x", "type": "int", "collection": "array"}]}]}
            """, "test.lattice.json:1:97: error: unknown collection 'array' for property 'A.x' (expected list, set or map)")
        assertRejected("{\"schemaVersion\": -1, \"objectSchemas\": []}",
                       "test.lattice.json:1:19: error: 'schemaVersion' must be an integer from 0 to 18446744073709551615")
        assertRejected("{\"objectSchemas\": [], \"$comment\": \"keys starting with $ are free\", \"$schema\": \"x\"}")
    }

    func testUnknownType() {
        assertRejected("""
            {
              "objectSchemas": [
                {
                  "className": "Person",
                  "properties": [
                    { "name": "age", "type": "integer" }
                  ]
                }
              ]
            }
            """, "test.lattice.json:6:34: error: unknown type 'integer' for property 'Person.age' (expected one of: bool, int, int8, int16, int32, int64, float, double, string, data, date, uuid, decimal, objectId, object, linkingObjects)")
    }

    // MARK: Names

    func testDuplicateClassNames() {
        assertRejected("""
            {"objectSchemas": [
              {"className": "A", "properties": []},
              {"className": "A", "properties": []}]}
            """, "test.lattice.json:3:17: error: duplicate type name 'A': already declared as a class in test.lattice.json")
        // Across the files of one module, and between an enum and a class.
        XCTAssertEqual(diagnostics([
            ("one.lattice.json", "{\"objectSchemas\": [{\"className\": \"A\", \"properties\": []}]}"),
            ("two.lattice.json", "{\"enums\": [{\"name\": \"A\", \"rawType\": \"string\", \"cases\": [\"x\"]}],\n\"objectSchemas\": []}"),
        ]), ["two.lattice.json:1:21: error: duplicate type name 'A': already declared as a class in one.lattice.json"])
        // Two files whose generated namespace enums would clash.
        XCTAssertEqual(diagnostics([
            ("a/Zoo.lattice.json", "{\"objectSchemas\": []}"),
            ("b/Zoo.lattice.json", "{\"objectSchemas\": []}"),
        ]), ["b/Zoo.lattice.json: error: the generated enum 'ZooSchema' listing this file's classes clashes with the enum generated for a/Zoo.lattice.json; rename the file"])
    }

    func testDuplicatePropertyNames() {
        assertRejected("""
            {"objectSchemas": [{"className": "A", "properties": [
              {"name": "x", "type": "int"},
              {"name": "x", "type": "string"}]}]}
            """, "test.lattice.json:3:12: error: duplicate property 'x' in class 'A'")
    }

    func testInvalidIdentifiers() {
        assertRejected("""
            {"enums": [{"name": "Mood", "rawType": "string", "cases": ["happy", "so-so"]}],
             "objectSchemas": [
              {"className": "2Fast", "properties": [
                {"name": "my name", "type": "int"},
                {"name": "class", "type": "int"},
                {"name": "description", "type": "string"}]},
              {"className": "List", "originalName": "Old List", "properties": []}]}
            """,
            "test.lattice.json:1:69: error: invalid case name 'so-so' in enum 'Mood': expected a Swift identifier",
            "test.lattice.json:3:17: error: invalid class name '2Fast': expected a Swift identifier (a letter or '_', then letters, digits or '_'; not a keyword)",
            "test.lattice.json:4:14: error: invalid property name 'my name' in class '2Fast': expected a Swift identifier (a letter or '_', then letters, digits or '_'; not a keyword)",
            "test.lattice.json:5:14: error: invalid property name 'class' in class '2Fast': expected a Swift identifier (a letter or '_', then letters, digits or '_'; not a keyword)",
            "test.lattice.json:6:14: error: property '2Fast.description' clashes with the member 'description' of Object; rename it",
            "test.lattice.json:7:17: error: class name 'List' is reserved: the generated code uses the type of that name",
            "test.lattice.json:7:41: error: invalid original name 'Old List' of class 'List': expected a Swift identifier")
    }

    func testNameLengths() {
        let longClass = String(repeating: "C", count: 58)
        let longProperty = String(repeating: "p", count: 64)
        assertRejected("{\"objectSchemas\": [{\"className\": \"\(longClass)\", \"properties\": [{\"name\": \"\(longProperty)\", \"type\": \"int\"}]}]}",
                       "test.lattice.json:1:34: error: class name '\(longClass)' is longer than 57 bytes",
                       "test.lattice.json:1:120: error: property '\(longClass).\(longProperty)' has a name longer than 63 bytes")
    }

    // MARK: Links and backlinks

    func testLinkToMissingClass() {
        assertRejected("""
            {"objectSchemas": [{"className": "Car", "properties": [
              {"name": "owner", "type": "object", "objectClassName": "Persn", "isOptional": true}]}]}
            """, "test.lattice.json:2:58: error: property 'Car.owner' links to class 'Persn', which is not declared")
    }

    func testLinkShapes() {
        assertRejected("""
            {"objectSchemas": [
              {"className": "A", "isEmbedded": true, "properties": []},
              {"className": "B", "properties": [
                {"name": "a", "type": "object", "objectClassName": "A"},
                {"name": "b", "type": "object"},
                {"name": "set", "type": "object", "objectClassName": "B", "collection": "set", "isOptional": true},
                {"name": "embeddedMap", "type": "object", "objectClassName": "A", "collection": "map"},
                {"name": "n", "type": "int", "objectClassName": "A", "originProperty": "x"}]}]}
            """,
            "test.lattice.json:4:27: error: property 'B.a' is a to-one link and must be optional (add \"isOptional\": true)",
            "test.lattice.json:5:27: error: property 'B.b' is a link (type object) but has no 'objectClassName'",
            "test.lattice.json:6:98: error: property 'B.set' is a set of objects and cannot hold nil (remove \"isOptional\")",
            "test.lattice.json:7:85: error: property 'B.embeddedMap' holds embedded objects of 'A' in a map; embedded objects live in to-one links and lists only",
            "test.lattice.json:8:53: error: property 'B.n' has 'objectClassName' but type 'int'; only object and linkingObjects properties link to a class",
            "test.lattice.json:8:76: error: property 'B.n' has 'originProperty' but is not of type linkingObjects")
    }

    func testBacklinkOrigins() {
        assertRejected("""
            {"objectSchemas": [
              {"className": "Shop", "properties": [
                {"name": "a", "type": "linkingObjects", "objectClassName": "Garage", "originProperty": "shop"},
                {"name": "b", "type": "linkingObjects", "objectClassName": "Car", "originProperty": "garage"},
                {"name": "c", "type": "linkingObjects", "objectClassName": "Car", "originProperty": "owner"},
                {"name": "d", "type": "linkingObjects", "objectClassName": "Car", "originProperty": "shops"},
                {"name": "e", "type": "linkingObjects", "objectClassName": "Car", "originProperty": "brand"},
                {"name": "f", "type": "linkingObjects", "objectClassName": "Car"},
                {"name": "g", "type": "linkingObjects", "objectClassName": "Car", "originProperty": "shop", "isOptional": true}]},
              {"className": "Person", "properties": []},
              {"className": "Car", "properties": [
                {"name": "brand", "type": "string"},
                {"name": "shop", "type": "object", "objectClassName": "Shop", "isOptional": true},
                {"name": "owner", "type": "object", "objectClassName": "Person", "isOptional": true},
                {"name": "shops", "type": "object", "objectClassName": "Shop", "collection": "set"}]}]}
            """,
            "test.lattice.json:3:64: error: property 'Shop.a' follows links of class 'Garage', which is not declared",
            "test.lattice.json:4:89: error: property 'Shop.b' follows 'Car.garage', which is not a property of 'Car'",
            "test.lattice.json:5:89: error: property 'Shop.c' follows 'Car.owner', which is not a link or list of 'Shop'",
            "test.lattice.json:6:89: error: property 'Shop.d' follows 'Car.shops', which is not a link or list of 'Shop'",
            "test.lattice.json:7:89: error: property 'Shop.e' follows 'Car.brand', which is not a link or list of 'Shop'",
            "test.lattice.json:8:27: error: property 'Shop.f' is linkingObjects but has no 'originProperty' (the property of 'Car' that links here)",
            "test.lattice.json:9:111: error: property 'Shop.g' is linkingObjects and cannot be optional")
    }

    // MARK: Keys and indexes

    func testTwoPrimaryKeys() {
        assertRejected("""
            {"objectSchemas": [{"className": "A", "properties": [
              {"name": "x", "type": "int", "isPrimaryKey": true},
              {"name": "y", "type": "string", "isPrimaryKey": true}]}]}
            """, "test.lattice.json:3:51: error: class 'A' has two primary keys, 'x' and 'y'")
    }

    func testPrimaryKeyOfNonKeyType() {
        assertRejected("""
            {"objectSchemas": [
              {"className": "A", "properties": [{"name": "x", "type": "double", "isPrimaryKey": true}]},
              {"className": "B", "properties": [{"name": "x", "type": "int", "collection": "list", "isPrimaryKey": true}]},
              {"className": "C", "isEmbedded": true, "properties": [{"name": "x", "type": "int", "isPrimaryKey": true}]}]}
            """,
            "test.lattice.json:2:85: error: property 'A.x' of type double cannot be a primary key (allowed: the integer types, string, uuid, objectId and their optionals)",
            "test.lattice.json:3:104: error: property 'B.x' cannot be a primary key: it is a collection",
            "test.lattice.json:4:102: error: property 'C.x' cannot be a primary key: embedded objects have none")
    }

    func testIndexOfNonIndexableType() {
        assertRejected("""
            {"objectSchemas": [{"className": "A", "properties": [
              {"name": "x", "type": "double", "isIndexed": true},
              {"name": "y", "type": "string", "collection": "list", "isIndexed": true}]}]}
            """,
            "test.lattice.json:2:48: error: property 'A.x' of type double cannot be indexed (allowed: bool, the integer types, string, date, uuid, objectId and their optionals)",
            "test.lattice.json:3:70: error: property 'A.y' cannot be indexed: it is a collection")
    }

    // MARK: Enums and defaults

    func testEnums() {
        assertRejected("""
            {"enums": [
              {"name": "E", "rawType": "int", "cases": ["a", {"name": "b", "rawValue": 300}, {"name": "c", "rawValue": 300}]},
              {"name": "F", "rawType": "int8", "cases": [{"name": "a", "rawValue": 300}, {"name": "a", "rawValue": 1}]},
              {"name": "G", "rawType": "double", "cases": ["x"]},
              {"name": "H", "rawType": "string", "cases": []}],
             "objectSchemas": [{"className": "A", "properties": [
              {"name": "x", "enum": "Missing"},
              {"name": "y", "type": "int", "enum": "H"}]}]}
            """,
            "test.lattice.json:2:45: error: case 'E.a' needs an integer 'rawValue' (an integer enum's raw values are stored, so they are never implied)",
            "test.lattice.json:2:108: error: duplicate raw value '300' in enum 'E' (case 'c')",
            "test.lattice.json:3:72: error: the raw value 300 of case 'F.a' is out of range for int8",
            "test.lattice.json:3:87: error: duplicate case 'a' in enum 'F'",
            "test.lattice.json:4:28: error: enum 'G' has raw type 'double'; expected string or an integer type",
            "test.lattice.json:5:47: error: enum 'H' has no cases",
            "test.lattice.json:7:25: error: property 'A.x' uses enum 'Missing', which is not declared (add it to 'enums')",
            "test.lattice.json:8:25: error: property 'A.y' has type 'int' but enum 'H' has raw type 'string'")
    }

    func testDefaults() {
        assertRejected("""
            {"enums": [{"name": "E", "rawType": "string", "cases": ["a", "b"]}],
             "objectSchemas": [{"className": "A", "properties": [
              {"name": "a", "type": "int", "default": "1"},
              {"name": "b", "type": "int8", "default": 128},
              {"name": "c", "type": "int", "default": 1.5},
              {"name": "d", "type": "string", "default": null},
              {"name": "e", "enum": "E", "default": "c"},
              {"name": "f", "type": "uuid", "default": "00000000-0000-0000-0000-000000000000"},
              {"name": "g", "type": "string", "collection": "list", "default": "x"},
              {"name": "h", "type": "string", "default": "x", "defaultExpression": "\\"x\\""},
              {"name": "i", "type": "string", "defaultExpression": " "},
              {"name": "j", "type": "decimal", "default": 0.1},
              {"name": "k", "type": "bool", "default": {"value": true}}]}]}
            """,
            "test.lattice.json:10:72: error: property 'A.h' has both 'default' and 'defaultExpression'; keep one")
        assertRejected("""
            {"enums": [{"name": "E", "rawType": "string", "cases": ["a", "b"]}],
             "objectSchemas": [{"className": "A", "properties": [
              {"name": "a", "type": "int", "default": "1"},
              {"name": "b", "type": "int8", "default": 128},
              {"name": "c", "type": "int", "default": 1.5},
              {"name": "d", "type": "string", "default": null},
              {"name": "e", "enum": "E", "default": "c"},
              {"name": "f", "type": "uuid", "default": "00000000-0000-0000-0000-000000000000"},
              {"name": "g", "type": "string", "collection": "list", "default": "x"},
              {"name": "i", "type": "string", "defaultExpression": " "},
              {"name": "j", "type": "decimal", "default": 0.1}]}]}
            """,
            "test.lattice.json:3:43: error: the default of property 'A.a' must be a number for type int",
            "test.lattice.json:4:44: error: the default of property 'A.b' 128 is out of range for int8",
            "test.lattice.json:5:43: error: the default of property 'A.c' must be an integer, not 1.5",
            "test.lattice.json:6:46: error: the default of property 'A.d' cannot be null: the property is not optional",
            "test.lattice.json:7:41: error: the default of property 'A.e' must name a case of enum 'E' (\"a\", \"b\")",
            "test.lattice.json:8:44: error: the default of property 'A.f' cannot be a JSON literal for type uuid; use 'defaultExpression' (for example UUID(), ObjectId(), Data())",
            "test.lattice.json:9:68: error: property 'A.g' cannot have a default: collections and links start empty",
            "test.lattice.json:10:56: error: the 'defaultExpression' of property 'A.i' must be one non-empty line of Swift",
            "test.lattice.json:11:47: error: the default of property 'A.j' must be an integer (use 'defaultExpression' for a fraction, for example Decimal(string: \"1.5\") ?? 0)")
        assertRejected("""
            {"objectSchemas": [{"className": "A", "properties": [{"name": "k", "type": "bool", "default": {"value": true}}]}]}
            """, "test.lattice.json:1:95: error: 'default' of property 'A.k' must be a string, number, boolean or null, not an object")
    }
}
