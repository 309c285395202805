import ArgumentParser
import Foundation
import Lattice

/// `lattice info`: classes with their object counts, primary keys and indexes; the file's sizes, readers,
/// format and schema versions.
struct InfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Show a file's classes, object counts, indexes, sizes, readers and versions.",
        discussion: "Readers counts the read snapshots of every process with the file open, this command's included."
    )

    @OptionGroup var file: FileArgument

    @Flag(help: "Print JSON instead of a table.")
    var json = false

    func run() throws {
        try reportingFailures {
            let lattice = try file.open()
            let info = try lattice.fileInfo()
            let classes = lattice.schema.objectSchemas.map { cls in
                (cls, count: cls.isEmbedded ? nil : lattice.dynamicObjects(cls.className).count)
            }
            let out = BufferedWriter()
            if json {
                var text = "{\"path\":\(JSONText.string(file.path)),\"formatVersion\":\(info.formatVersion)"
                text += ",\"schemaVersion\":\(info.schemaVersion),\"fileSize\":\(info.fileSize),\"usedBytes\":\(info.usedBytes)"
                text += ",\"mapSize\":\(info.mapSize),\"readers\":\(info.readerCount)"
                text += ",\"readerProcesses\":[\(info.readerProcesses.map(String.init).joined(separator: ","))],\"classes\":["
                text += classes.map { cls, count in
                    "{\"name\":\(JSONText.string(cls.className)),\"embedded\":\(cls.isEmbedded),\"count\":\(count.map(String.init) ?? "null")"
                        + ",\"primaryKey\":\(cls.primaryKeyProperty.map { JSONText.string($0.name) } ?? "null")"
                        + ",\"indexes\":[\(cls.properties.filter(\.isIndexed).map { JSONText.string($0.name) }.joined(separator: ","))]}"
                }.joined(separator: ",")
                out.write(text + "]}\n")
                return
            }
            out.write("""
                File:            \(file.path)
                Format version:  \(info.formatVersion)
                Schema version:  \(info.schemaVersion)
                File size:       \(byteCount(info.fileSize))
                Used:            \(byteCount(info.usedBytes))
                Map size:        \(byteCount(info.mapSize))
                Readers:         \(info.readerCount) (processes \(info.readerProcesses.map(String.init).joined(separator: ", ")))


                """)
            var table = TextTable(["Class", "Objects", "Primary key", "Indexes"])
            for (cls, count) in classes {
                table.add([cls.className, count.map(String.init) ?? "embedded", cls.primaryKeyProperty?.name ?? "-",
                           cls.properties.filter(\.isIndexed).map(\.name).joined(separator: ", ")])
            }
            out.write(table.render())
        }
    }
}

/// `1234567` as `1.2 MiB (1234567 bytes)`.
func byteCount(_ bytes: Int) -> String {
    let units = ["KiB", "MiB", "GiB", "TiB"]
    var value = Double(bytes)
    var unit = -1
    while value >= 1024 && unit < units.count - 1 {
        value /= 1024
        unit += 1
    }
    return unit < 0 ? "\(bytes) bytes" : "\(String(format: "%.1f", value)) \(units[unit]) (\(bytes) bytes)"
}
