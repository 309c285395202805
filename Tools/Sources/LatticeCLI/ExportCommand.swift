import ArgumentParser
import Foundation
import Lattice

/// `lattice export`: every object of a file (or of some classes) as JSON or NDJSON, written as it is read.
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write a file's objects as JSON or NDJSON to standard output.",
        discussion: """
            The output starts with a header holding the file's schema, so that `lattice import` can create a \
            new file from it; then one object a line: {"class":"Dog","key":12,"value":{...}}. "key" (the object \
            key) is written for classes without a primary key: links to their objects use it. Classes are \
            written so that linked classes come before the classes linking to them where the links allow. \
            Objects are read and written one at a time, so a file of any size exports in little memory. \
            The file format is described in Tools/README.md of the Lattice repository. `lattice dump` is             the same command.
            """,
        aliases: ["dump"]
    )

    @OptionGroup var file: FileArgument

    @Option(help: "json (one document) or ndjson (one JSON value a line).")
    var format: ExportFormat = .ndjson

    @Option(name: .customLong("class"), help: ArgumentHelp("Export only this class; repeat for more.", valueName: "class"))
    var classes: [String] = []

    func run() throws {
        try reportingFailures {
            let lattice = try file.open()
            for name in classes { _ = try lattice.requireClass(name) }
            let order = ExportCommand.order(lattice.schema).filter { classes.isEmpty || classes.contains($0.className) }
            let out = BufferedWriter()
            let encoder = ValueEncoder()
            let header = try ExportHeader.members(lattice)
            out.write(format == .json ? "{\(header),\"objects\":[" : "{\(header)}\n")
            var progress = Progress("Exported", total: order.reduce(0) { $0 + lattice.dynamicObjects($1.className).count })
            var line = ""
            for cls in order {
                let name = JSONText.string(cls.className)
                let keyed = cls.primaryKeyProperty == nil
                for object in lattice.dynamicObjects(cls.className) {
                    line.removeAll(keepingCapacity: true)
                    if format == .json { line.append(progress.count == 0 ? "\n" : ",\n") }
                    line.append("{\"class\":\(name)")
                    if keyed, let key = object.objectKey { line.append(",\"key\":\(key)") }
                    line.append(",\"value\":")
                    encoder.object(object, into: &line)
                    line.append(format == .json ? "}" : "}\n")
                    out.write(line)
                    progress.step()
                }
            }
            if format == .json { out.write(progress.count == 0 ? "]}\n" : "\n]}\n") }
            out.flush()
            progress.finish()
        }
    }

    /// The top-level classes, linked classes before those linking to them (by name where links form a
    /// cycle), so that an import finds most link targets already created.
    static func order(_ schema: Schema) -> [ObjectSchema] {
        let classes = schema.objectSchemas.filter { !$0.isEmbedded }.sorted { $0.className < $1.className }
        var done = Set<String>()
        var visiting = Set<String>()
        var ordered: [ObjectSchema] = []
        func visit(_ cls: ObjectSchema) {
            guard !done.contains(cls.className), visiting.insert(cls.className).inserted else { return }
            for target in linkTargets(cls, schema) { visit(target) }
            visiting.remove(cls.className)
            done.insert(cls.className)
            ordered.append(cls)
        }
        classes.forEach(visit)
        return ordered
    }

    /// The top-level classes `cls` links to, directly or through its embedded objects.
    private static func linkTargets(_ cls: ObjectSchema, _ schema: Schema, seen: Set<String> = []) -> [ObjectSchema] {
        cls.properties.filter { $0.type == .object }.compactMap { $0.objectClassName.flatMap { schema[$0] } }.flatMap { target in
            guard target.isEmbedded else { return [target] }
            guard !seen.contains(target.className) else { return [] }
            return linkTargets(target, schema, seen: seen.union([target.className]))
        }
    }
}
