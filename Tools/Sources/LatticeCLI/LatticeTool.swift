import ArgumentParser
import Foundation
import Lattice

/// `lattice`: looks inside, queries, exports, imports, checks, compacts and watches Lattice database files,
/// through the schema each file stores (no model classes needed).
@main
struct LatticeTool: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lattice",
        abstract: "Inspect and maintain Lattice database files.",
        discussion: """
            Works on any Lattice file through the schema it stores. Every command opens the file read-only \
            except import and compact, and never waits for another process's write. Errors go to standard \
            error. Exit status: 0 success, 1 failure (or problems found by check), 64 a mistake in the command \
            line (unknown option, class or property, a bad predicate or argument).
            """,
        subcommands: [InfoCommand.self, SchemaCommand.self, QueryCommand.self, ExportCommand.self, ImportCommand.self,
                      CheckCommand.self, CompactCommand.self, WatchCommand.self]
    )
}

/// A failure a command reports on standard error before exiting with `status`.
struct CommandFailure: Error {
    /// The message, without the `lattice: error:` prefix.
    let message: String
    /// 1 for a failure, 64 for a command-line mistake.
    let status: Int32

    static func failure(_ message: String) -> CommandFailure { CommandFailure(message: message, status: 1) }
    static func usage(_ message: String) -> CommandFailure { CommandFailure(message: message, status: 64) }
}

/// Runs a command's work: a `CommandFailure` or other error is printed on standard error as
/// `lattice: error: ...` and the process exits with its status (1 for library errors, 64 for a query
/// the file cannot answer: an unknown class or property, a bad predicate).
func reportingFailures(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let failure as CommandFailure {
        Output.error("lattice: error: \(failure.message)")
        throw ExitCode(failure.status)
    } catch let error as LatticeError {
        Output.error("lattice: error: \(error)")
        switch error {
        case .invalidQuery, .classNotInSchema, .unknownProperty: throw ExitCode(64)
        default: throw ExitCode.failure
        }
    } catch let exit as ExitCode {
        throw exit
    } catch {
        Output.error("lattice: error: \(error.localizedDescription)")
        throw ExitCode.failure
    }
}

/// The database file argument and how commands open it.
struct FileArgument: ParsableArguments {
    @Argument(help: ArgumentHelp("The Lattice database file.", valueName: "file"))
    var path: String

    @Option(name: .customLong("key-file"),
            help: ArgumentHelp("The encryption key of an encrypted file: a file holding its 64 bytes, raw or as 128 hex digits.",
                               valueName: "path"))
    var keyFile: String?

    var url: URL { URL(fileURLWithPath: path) }

    /// The key `--key-file` names, or nil without the option.
    func encryptionKey() throws -> Data? {
        guard let keyFile else { return nil }
        guard let contents = FileManager.default.contents(atPath: keyFile) else {
            throw CommandFailure.failure("'\(keyFile)': cannot read the key file.")
        }
        let text = String(decoding: contents, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.count == 128, text.allSatisfy(\.isHexDigit) {
            var key = Data()
            var digits = text.makeIterator()
            while let high = digits.next(), let low = digits.next() { key.append(UInt8(String([high, low]), radix: 16) ?? 0) }
            return key
        }
        guard contents.count == 64 else {
            throw CommandFailure.usage("'\(keyFile)' holds \(contents.count) bytes; an encryption key is 64 bytes (or 128 hex digits).")
        }
        return contents
    }

    /// The configuration that opens the file with the schema it stores (and the key, when given).
    func configuration(readOnly: Bool) throws -> Lattice.Configuration {
        var configuration = Lattice.Configuration(fileURL: url, readOnly: readOnly, dynamicSchema: true)
        configuration.encryptionKey = try encryptionKey()
        return configuration
    }

    /// Opens the file with the schema it stores: read-only unless `writable`. A missing file, or one that
    /// is no Lattice database, fails with a message naming it.
    func open(writable: Bool = false) throws -> Lattice {
        guard FileManager.default.fileExists(atPath: path) else { throw CommandFailure.failure("'\(path)': no such file.") }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw CommandFailure.failure("'\(path)' is a directory, not a Lattice database file.")
        }
        return try Lattice(configuration: configuration(readOnly: !writable))
    }
}

extension Lattice {
    /// The stored class `name`, or a usage failure listing the classes. Embedded classes are refused
    /// unless `allowEmbedded`: their objects are only reachable through their parents.
    func requireClass(_ name: String, allowEmbedded: Bool = false) throws -> ObjectSchema {
        guard let cls = schema[name] else {
            let names = schema.objectSchemas.filter { !$0.isEmbedded }.map(\.className).joined(separator: ", ")
            throw CommandFailure.usage("the file has no class '\(name)' (its classes: \(names.isEmpty ? "none" : names)).")
        }
        if cls.isEmbedded && !allowEmbedded {
            throw CommandFailure.usage("'\(name)' is an embedded class: its objects are only reachable through their parents.")
        }
        return cls
    }
}
