import ArgumentParser
import Foundation
import LatticeSchemaFile

/// `lattice-codegen`: checks schema files and writes the Swift model classes they describe.
@main
struct LatticeCodegen: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lattice-codegen",
        abstract: "Generate Swift model classes for Lattice from schema files (*.lattice.json).",
        discussion: """
            The schema files are checked together, as one module: a class of one file may link to a class \
            or use an enum of another. Problems are printed to standard error as 'file:line:column: error: \
            message', and the exit status is then 1 with nothing written. The format of schema files is \
            described in Schemas/README.md of the Lattice repository.
            """
    )

    @Argument(help: ArgumentHelp("The schema files to read.", valueName: "schema.lattice.json"))
    var schemas: [String]

    @Option(name: [.short, .long], help: ArgumentHelp("Write the code of every schema file into this one Swift file.", valueName: "file.swift"))
    var output: String?

    @Option(name: .long, help: ArgumentHelp(
        "Write one Swift file per schema file into this directory, created when missing (X.lattice.json gives X.swift).",
        valueName: "directory"))
    var outputDir: String?

    @Option(help: ArgumentHelp("The access level of the generated declarations: internal or public.", valueName: "level"))
    var accessLevel: AccessLevelOption = .internal

    @Flag(help: "Only check the schema files; write nothing.")
    var check = false

    func validate() throws {
        if schemas.isEmpty { throw ValidationError("Name at least one schema file.") }
        if output != nil && outputDir != nil { throw ValidationError("Use either --output or --output-dir, not both.") }
    }

    func run() throws {
        var files: [SchemaFile] = []
        var diagnostics: [SchemaDiagnostic] = []
        for path in schemas {
            do {
                files.append(try SchemaFile.read(contentsOf: path))
            } catch {
                diagnostics += error.diagnostics
            }
        }
        if diagnostics.isEmpty {
            do {
                files = try SchemaFile.validate(files)
            } catch {
                diagnostics = error.diagnostics
            }
        }
        guard diagnostics.isEmpty else {
            for diagnostic in diagnostics { printError(diagnostic.description) }
            throw ExitCode.failure
        }
        if check { return }

        let generator = SwiftGenerator(accessLevel: accessLevel.level)
        if let outputDir {
            try write(directory: outputDir)
            for file in files {
                try write(generator.source(for: [file], module: files), to: outputDir + "/" + file.baseName + ".swift")
            }
        } else if let output {
            try write(generator.source(for: files), to: output)
        } else {
            print(generator.source(for: files), terminator: "")
        }
    }

    private func write(directory: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            printError("\(directory): error: cannot create the directory: \(error.localizedDescription)")
            throw ExitCode.failure
        }
    }

    private func write(_ text: String, to path: String) throws {
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            printError("\(path): error: cannot write the file: \(error.localizedDescription)")
            throw ExitCode.failure
        }
    }

    private func printError(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}

/// `--access-level`, as the argument parser reads it.
enum AccessLevelOption: String, ExpressibleByArgument, CaseIterable {
    case `internal`
    case `public`

    var level: SwiftGenerator.AccessLevel { self == .public ? .public : .internal }
}
