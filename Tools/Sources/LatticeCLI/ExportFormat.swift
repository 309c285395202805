import ArgumentParser
import Foundation
import Lattice
import LatticeSchemaConversion
import LatticeSchemaFile

/// The formats of `lattice export` and `lattice import`.
enum ExportFormat: String, ExpressibleByArgument, CaseIterable {
    /// One JSON document: the header's members, then `"objects": [...]` with one object a line.
    case json
    /// One JSON value a line: the header, then one object a line.
    case ndjson
}

/// The header an export starts with, which lets `lattice import` create a new file:
/// `{"lattice":"export","version":1,"schemaVersion":N,"schema":{...}}`, where `schema` is the schema
/// file `lattice schema export` writes.
enum ExportHeader {
    /// The value of the `lattice` member that marks a header.
    static let marker = "export"
    /// The version of the export format.
    static let version = 1

    /// The header's members (without braces) for `lattice`'s schema.
    static func members(_ lattice: Lattice) throws -> String {
        let version = lattice.configuration.schemaVersion
        let file = SchemaFile(exporting: lattice.schema, fileName: "export.lattice.json", schemaVersion: version == 0 ? nil : version)
        let schema: JSONNode
        do {
            schema = try JSONNode.parse(Array(file.jsonText().utf8))
        } catch {
            throw CommandFailure.failure("the stored schema cannot be written as a schema file: \(error.message)")
        }
        var out = "\"lattice\":\"\(marker)\",\"version\":\(ExportHeader.version),\"schemaVersion\":\(version),\"schema\":"
        JSONText.node(schema, into: &out)
        return out
    }

    /// The schema and schema version of a header node; nil when `node` is no header.
    static func read(_ node: JSONNode, line: Int) throws -> (schema: Schema, version: UInt64)? {
        guard case .string(marker)? = node["lattice"]?.value else { return nil }
        guard case .number(let v)? = node["version"]?.value, Int(v) == ExportHeader.version else {
            throw CommandFailure.failure("line \(line): this export's format version is not \(ExportHeader.version).")
        }
        guard let schemaNode = node["schema"] else { throw CommandFailure.failure("line \(line): the export header has no schema.") }
        var text = ""
        JSONText.node(schemaNode, into: &text)
        let version: UInt64
        if case .number(let n)? = node["schemaVersion"]?.value, let parsed = UInt64(n) { version = parsed } else { version = 0 }
        let file = try SchemaFile.readChecked(Array(text.utf8), name: "the export header (line \(line))")
        return (SchemaFile.latticeSchema(of: [file]), version)
    }
}
