import ArgumentParser
import Foundation
import Lattice

/// `lattice check`: the library's integrity check, every problem reported.
struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check a file's integrity; exit 1 when any problem is found.",
        discussion: """
            Reads every database of the file: every value passes its checksum and every record decodes, \
            every index and backlink entry matches its records, every List directory matches its chunks. \
            Each problem is printed on its own line, and the exit status is then 1; 0 means none was found.
            """
    )

    @OptionGroup var file: FileArgument

    @Flag(help: "Print JSON: {\"problems\":[{\"kind\":...,\"database\":...,\"detail\":...}]}.")
    var json = false

    func run() throws {
        var problems: [IntegrityProblem] = []
        try reportingFailures {
            let lattice = try file.open()
            problems = lattice.verify()
            let out = BufferedWriter()
            if json {
                out.write("{\"problems\":[" + problems.map {
                    "{\"kind\":\(JSONText.string($0.kind.rawValue)),\"database\":\(JSONText.string($0.database)),"
                        + "\"detail\":\(JSONText.string($0.detail))}"
                }.joined(separator: ",") + "]}\n")
            } else if problems.isEmpty {
                out.write("No problems found in \(file.path) (\(lattice.schema.objectSchemas.count) classes).\n")
            } else {
                for problem in problems { out.write("\(problem)\n") }
                out.write("\(problems.count) problem\(problems.count == 1 ? "" : "s") found in \(file.path).\n")
            }
        }
        if !problems.isEmpty { throw ExitCode.failure }
    }
}
