import ArgumentParser
import Foundation
import Lattice
import LatticeSchemaConversion
import LatticeSchemaFile

/// `lattice schema`: the schema a file stores, as a schema file.
struct SchemaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Work with the schema a file stores.",
        subcommands: [SchemaExportCommand.self]
    )
}

/// `lattice schema export`: writes the stored schema as a schema file (`*.lattice.json`), which
/// `lattice-codegen` turns into model classes that open the file unchanged.
struct SchemaExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write the schema a file stores as a schema file (*.lattice.json).",
        discussion: """
            A file stores no doc comments, initial values or enums; --annotations names a schema file of the \
            same model whose doc comments, initial values and enums are carried over where a property's \
            stored shape matches.
            """
    )

    @OptionGroup var file: FileArgument

    @Option(name: [.short, .long], help: ArgumentHelp("Write to this file instead of standard output.", valueName: "schema.lattice.json"))
    var output: String?

    @Option(help: ArgumentHelp("A schema file to take doc comments, initial values and enums from.", valueName: "schema.lattice.json"))
    var annotations: String?

    func run() throws {
        try reportingFailures {
            let lattice = try file.open()
            var notes: SchemaFile?
            if let annotations {
                guard let bytes = FileManager.default.contents(atPath: annotations) else {
                    throw CommandFailure.failure("cannot read '\(annotations)'.")
                }
                notes = try SchemaFile.readChecked(Array(bytes), name: annotations)
            }
            let name = output.map { ($0 as NSString).lastPathComponent }
                ?? ((file.path as NSString).lastPathComponent as NSString).deletingPathExtension + ".lattice.json"
            let version = lattice.configuration.schemaVersion
            let exported = SchemaFile(exporting: lattice.schema, fileName: name, schemaVersion: version == 0 ? nil : version,
                                      annotations: notes)
            let text = exported.jsonText()
            if let output {
                do {
                    try text.write(toFile: output, atomically: true, encoding: .utf8)
                } catch {
                    throw CommandFailure.failure("cannot write '\(output)': \(error.localizedDescription)")
                }
            } else {
                BufferedWriter().write(text)
            }
        }
    }
}
