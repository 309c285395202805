import ArgumentParser
import Foundation
import Lattice

/// `lattice query`: the objects of a class that match a predicate, sorted and limited, as a table or JSON.
struct QueryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "List the objects of a class that match a predicate.",
        discussion: """
            PREDICATE is Lattice's predicate language (the Query Language article), for example \
            "author.isVIP == true AND date > $0". Each --arg is the next argument, $0 first; it takes the type \
            of the property it is compared with: true or false, numbers, ISO 8601 dates (2024-01-31 or \
            2024-01-31T12:00:00Z), UUIDs, ObjectIds, or text. --json prints an array of objects with the values \
            `lattice export` writes; the table shows each property, collections by their size.
            """
    )

    @OptionGroup var file: FileArgument

    @Argument(help: "The class whose objects to list.")
    var className: String

    @Argument(help: "The predicate; every object when left out.")
    var predicate: String?

    @Option(name: .customLong("arg"), help: ArgumentHelp("The value of the next $N argument of the predicate ($0 first).", valueName: "value"))
    var arguments: [String] = []

    @Option(name: .customLong("sort"), parsing: .unconditionalSingleValue,
            help: ArgumentHelp("Sort by this key path; a leading '-' sorts descending. Repeat for ties.", valueName: "[-]keyPath"))
    var sortKeys: [String] = []

    @Option(help: ArgumentHelp("Print at most this many objects.", valueName: "n"))
    var limit: Int?

    @Flag(help: "Print JSON instead of a table.")
    var json = false

    func validate() throws {
        if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more.") }
        if sortKeys.contains(where: { $0.isEmpty || $0 == "-" }) { throw ValidationError("--sort needs a key path.") }
    }

    func run() throws {
        try reportingFailures {
            let lattice = try file.open()
            let cls = try lattice.requireClass(className)
            let results = try filtered(lattice.dynamicObjects(className), predicate, arguments)
                .sorted(by: sortKeys.map { key in
                    key.hasPrefix("-") ? SortDescriptor(keyPath: String(key.dropFirst()), ascending: false) : SortDescriptor(keyPath: key)
                })
            let out = BufferedWriter()
            let encoder = ValueEncoder()
            let total = results.count
            let shown = min(total, limit ?? total)
            if json {
                out.write("[")
                var index = 0
                for object in results {
                    guard index < shown else { break }
                    out.write(index == 0 ? "\n" : ",\n")
                    out.write(encoder.object(object))
                    index += 1
                }
                out.write(shown == 0 ? "]\n" : "\n]\n")
                return
            }
            let columns = cls.properties
            var table = TextTable(columns.map(\.name))
            var index = 0
            for object in results {
                guard index < shown else { break }
                table.add(columns.map { cell(object[$0.name], $0, encoder) })
                index += 1
            }
            out.write(table.render())
            out.write(shown == total ? "\(total) object\(total == 1 ? "" : "s")\n" : "\(shown) of \(total) objects\n")
        }
    }

    /// A table cell: a value as JSON (strings without quotes), a collection by its size, cut at 40 characters.
    private func cell(_ raw: Any?, _ p: Property, _ encoder: ValueEncoder) -> String {
        guard let value = flatten(raw) else { return "nil" }
        var text = ""
        switch p.collection {
        case .list?, .set?: text = "[\(elements(value).count) items]"
        case .map?: text = "{\(elements(value).count) entries}"
        case nil:
            if let string = value as? String {
                text = string
            } else {
                encoder.single(value, p, into: &text)
                if text.hasPrefix("\""), text.hasSuffix("\""), text.count >= 2 { text = String(text.dropFirst().dropLast()) }
            }
        }
        text = text.replacingOccurrences(of: "\n", with: " ")
        return text.count > 40 ? String(text.prefix(39)) + "…" : text
    }
}

/// `results` filtered by `predicate` (unchanged without one), each argument typed by its property.
func filtered(_ results: Results<DynamicObject>, _ predicate: String?, _ arguments: [String]) throws -> Results<DynamicObject> {
    guard let predicate else {
        if !arguments.isEmpty { throw CommandFailure.usage("--arg was given without a predicate.") }
        return results
    }
    return try results.filter(predicate, argumentArray: arguments.map(QueryTextArgument.init))
}
