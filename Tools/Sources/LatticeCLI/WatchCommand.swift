import ArgumentParser
import Dispatch
import Foundation
import Lattice
#if canImport(Glibc)
import Glibc
#endif

/// `lattice watch`: prints the objects of a class (matching a predicate) that other processes insert,
/// delete and modify, until interrupted.
struct WatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print insertions, deletions and modifications as other processes commit, until interrupted.",
        discussion: """
            Prints 'initial: N objects' first, then a line per change: 'insert: {...}', 'delete: {...}' (the \
            object as it was), 'modify: {...}' (as it is now), objects as `lattice export` writes their values. \
            With --json each line is {"change":"insert","class":"Dog","object":{...}} (and \
            {"change":"initial","class":"Dog","count":N} first). Commits that arrive together are reported \
            together. Ctrl-C (SIGINT) or SIGTERM ends it with exit status 0.
            """
    )

    @OptionGroup var file: FileArgument

    @Argument(help: "The class whose objects to watch.")
    var className: String

    @Argument(help: "Watch only the objects matching this predicate.")
    var predicate: String?

    @Option(name: .customLong("arg"), help: ArgumentHelp("The value of the next $N argument of the predicate ($0 first).", valueName: "value"))
    var arguments: [String] = []

    @Flag(help: "Print one JSON object a line.")
    var json = false

    func run() throws {
        try reportingFailures {
            let lattice = try file.open()
            _ = try lattice.requireClass(className)
            let results = try filtered(lattice.dynamicObjects(className), predicate, arguments)
            // Interrupts end the process from the main queue, which the run loop below serves.
            let sources = [SIGINT, SIGTERM].map { signal in
                Glibc.signal(signal, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: signal, queue: .main)
                source.setEventHandler { Glibc.exit(0) }
                source.resume()
                return source
            }
            var printer = ChangePrinter(className: className, json: json)
            let token = results.observe { change in printer.report(change) }
            // Changes are delivered on this thread's run loop; it runs until a signal ends the process.
            withExtendedLifetime((sources, token)) {
                while true { _ = RunLoop.current.run(mode: .default, before: .distantFuture) }
            }
        }
    }
}

/// Turns collection changes into lines: it keeps the previous contents (object key and text) so that a
/// deletion prints the object as it was and a modification finds the object in the new contents.
struct ChangePrinter {
    let className: String
    let json: Bool
    private let encoder = ValueEncoder()
    private var previous: [(key: Int64?, text: String)] = []

    init(className: String, json: Bool) {
        self.className = className
        self.json = json
    }

    mutating func report(_ change: LatticeCollectionChange<Results<DynamicObject>>) {
        switch change {
        case let .initial(results):
            previous = snapshot(results)
            emit(json ? "{\"change\":\"initial\",\"class\":\(JSONText.string(className)),\"count\":\(previous.count)}"
                 : "initial: \(previous.count) object\(previous.count == 1 ? "" : "s")")
        case let .update(results, deletions, insertions, modifications):
            let current = snapshot(results)
            var lines: [String] = []
            for i in deletions where i < previous.count { lines.append(line("delete", previous[i].text)) }
            for i in insertions where i < current.count { lines.append(line("insert", current[i].text)) }
            let index = Dictionary(current.enumerated().compactMap { n, row in row.key.map { ($0, n) } }, uniquingKeysWith: { a, _ in a })
            for i in modifications where i < previous.count {
                if let key = previous[i].key, let n = index[key] { lines.append(line("modify", current[n].text)) }
            }
            previous = current
            emit(lines.joined(separator: "\n"))
        case let .error(error):
            Output.error("lattice: error: watching stopped: \(error)")
            exit(1)
        }
    }

    private func snapshot(_ results: Results<DynamicObject>) -> [(key: Int64?, text: String)] {
        results.map { ($0.objectKey, encoder.object($0)) }
    }

    private func line(_ kind: String, _ object: String) -> String {
        json ? "{\"change\":\"\(kind)\",\"class\":\(JSONText.string(className)),\"object\":\(object)}" : "\(kind): \(object)"
    }

    /// Writes the lines and flushes at once: a reader of a pipe sees each change when it happens.
    private func emit(_ text: String) {
        guard !text.isEmpty else { return }
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }
}
