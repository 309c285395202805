import ArgumentParser
import Foundation
import Lattice
import LatticeSchemaFile
#if canImport(Glibc)
import Glibc
#endif

/// `lattice import`: objects in the format `lattice export` writes, added to a file in one write
/// transaction that is rejected whole at the first bad row.
struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Add objects from JSON or NDJSON (as `lattice export` writes them) to a file.",
        discussion: """
            Reads standard input (or --input). Every object is added in one write transaction: the first bad \
            row (malformed JSON, an unknown class or property, a value of the wrong type, a duplicate primary \
            key, a link to an object that is neither in the file nor in the input) rejects the whole import, \
            naming its line, and the file is left as it was. Links name objects by primary key, or by the \
            "key" their rows had in the export when their class has none. A file that does not exist is \
            created with the schema of --schema or, without it, of the export's header. NDJSON is read one \
            line at a time; a JSON document is read whole.
            """
    )

    @OptionGroup var file: FileArgument

    @Option(help: "json (one document) or ndjson (one JSON value a line).")
    var format: ExportFormat = .ndjson

    @Option(help: ArgumentHelp("Read this file instead of standard input.", valueName: "path"))
    var input: String?

    @Option(help: ArgumentHelp("The schema of a new file (ignored when the file exists).", valueName: "schema.lattice.json"))
    var schema: String?

    func run() throws {
        try reportingFailures {
            var fd = STDIN_FILENO
            if let input {
                fd = open(input, O_RDONLY | O_CLOEXEC)
                if fd < 0 { throw CommandFailure.failure("cannot open '\(input)': \(String(cString: strerror(errno))).") }
            }
            defer { if input != nil { close(fd) } }
            var rows = try Rows(LineReader(fd: fd), format: format)
            let exists = FileManager.default.fileExists(atPath: file.path)
            var newSchema: (schema: Schema, version: UInt64)?
            if !exists {
                if let schema {
                    guard let bytes = FileManager.default.contents(atPath: schema) else { throw CommandFailure.failure("cannot read '\(schema)'.") }
                    let file = try SchemaFile.readChecked(Array(bytes), name: schema)
                    newSchema = (SchemaFile.latticeSchema(of: [file]), file.schemaVersion ?? 0)
                } else {
                    newSchema = rows.header
                }
                if newSchema == nil {
                    throw CommandFailure.failure("'\(file.path)' does not exist: give its schema with --schema, or import an export "
                        + "that starts with its header.")
                }
            }
            do {
                let count = try importRows(&rows, into: newSchema)
                print("Imported \(count) object\(count == 1 ? "" : "s") into \(file.path).")
            } catch {
                // A file this import created holds nothing then: remove it (every handle is closed by now).
                if newSchema != nil { _ = try? Lattice.deleteFiles(for: .init(fileURL: file.url)) }
                throw error
            }
        }
    }

    /// Adds every row in one write transaction; returns how many objects were added.
    private func importRows(_ rows: inout Rows, into newSchema: (schema: Schema, version: UInt64)?) throws -> Int {
        let lattice = try newSchema.map { schema -> Lattice in
            var configuration = Lattice.Configuration(fileURL: file.url, schemaVersion: schema.version, customSchema: schema.schema)
            configuration.encryptionKey = try file.encryptionKey()
            return try Lattice(configuration: configuration)
        }
            ?? file.open(writable: true)
        // Classes without a primary key that links point at: their objects are found by their export key.
        let keyedTargets = Set(lattice.schema.objectSchemas.flatMap(\.properties).compactMap { p -> String? in
            guard p.type == .object, let name = p.objectClassName, let target = lattice.schema[name],
                  !target.isEmbedded, target.primaryKeyProperty == nil else { return nil }
            return name
        })
        var decoder = ValueDecoder(lattice: lattice)
        var deferred: [(object: DynamicObject, cls: ObjectSchema, property: Property, node: JSONNode, line: Int)] = []
        var progress = Progress("Imported")
        try lattice.beginWrite()
        do {
            while let (node, line) = try rows.next() {
                try at(line) {
                    guard case let .string(className)? = node["class"]?.value, let value = node["value"] else {
                        throw CommandFailure.failure("a row needs \"class\" and \"value\" members.")
                    }
                    let cls = try lattice.requireClass(className)
                    let (values, later) = try decoder.values(value, cls)
                    let object = try lattice.dynamicCreate(className, value: values)
                    if keyedTargets.contains(className), case let .number(text)? = node["key"]?.value, let key = Int64(text) {
                        decoder.createdByKey[className, default: [:]][key] = object
                    }
                    deferred += later.map { (object, cls, $0.0, $0.1, line) }
                }
                progress.step()
            }
            for link in deferred {
                try at(link.line) {
                    try link.object.setValue(decoder.value(link.node, link.property, link.cls, final: true), forProperty: link.property.name)
                }
            }
            try lattice.commitWrite()
        } catch {
            lattice.cancelWrite()
            progress.finish()
            throw error
        }
        progress.finish()
        return progress.count
    }

    /// Runs `body`, naming input line `line` in its failure.
    private func at(_ line: Int, _ body: () throws -> Void) throws {
        do {
            try body()
        } catch let failure as CommandFailure {
            throw CommandFailure(message: "line \(line): \(failure.message)", status: 1)
        } catch let error as LatticeError {
            throw CommandFailure.failure("line \(line): \(error)")
        }
    }
}

/// The rows of an import's input, after its header: NDJSON read a line at a time, or the `objects` of a
/// JSON document.
struct Rows {
    private var reader: LineReader
    private var pending: (JSONNode, Int)?
    private var documentRows: [JSONNode]?
    private var index = 0
    /// The schema of the header, when the input starts with one.
    private(set) var header: (schema: Schema, version: UInt64)?

    init(_ reader: LineReader, format: ExportFormat) throws {
        self.reader = reader
        if format == .json {
            let bytes = try self.reader.rest()
            let document: JSONNode
            do {
                document = try JSONNode.parse(bytes)
            } catch {
                throw CommandFailure.failure("line \(error.position.line): \(error.message)")
            }
            header = try ExportHeader.read(document, line: document.position.line)
            guard case let .array(items)? = document["objects"]?.value else {
                throw CommandFailure.failure("line \(document.position.line): the document needs an \"objects\" array.")
            }
            documentRows = items
        } else if let first = try nextLine() {
            header = try ExportHeader.read(first.0, line: first.1)
            if header == nil { pending = first }
        }
    }

    /// The next row and its line number, or nil at the end.
    mutating func next() throws -> (JSONNode, Int)? {
        if let documentRows {
            guard index < documentRows.count else { return nil }
            index += 1
            return (documentRows[index - 1], documentRows[index - 1].position.line)
        }
        if let row = pending {
            pending = nil
            return row
        }
        return try nextLine()
    }

    /// The next non-empty NDJSON line, parsed.
    private mutating func nextLine() throws -> (JSONNode, Int)? {
        while let bytes = try reader.next() {
            if bytes.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) { continue }
            do {
                return (try JSONNode.parse(bytes), reader.lineNumber)
            } catch {
                throw CommandFailure.failure("line \(reader.lineNumber): \(error.message) (column \(error.position.column)).")
            }
        }
        return nil
    }
}

extension SchemaFile {
    /// A schema file read and validated, or a failure listing its problems.
    static func readChecked(_ bytes: [UInt8], name: String) throws -> SchemaFile {
        do {
            let files = try SchemaFile.validate([SchemaFile.read(bytes, fileName: name)])
            if let file = files.first { return file }
        } catch {
            throw CommandFailure.failure("the schema of \(name) is not valid:\n\(error.description)")
        }
        throw CommandFailure.failure("the schema of \(name) is empty.")
    }
}
