import Foundation

/// What a finished program left: its exit status and outputs.
public struct ProcessResult {
    /// The exit status (or the signal's number, when a signal ended it).
    public let status: Int32
    public let stdout: String
    public let stderr: String
}

/// Runs a program to completion and returns its exit status, standard output and standard error.
/// The outputs go to temporary files, so a large output never blocks the program on a full pipe.
/// `stdin`, when given, is a file the program reads as its standard input.
public func runProcess(_ executable: URL, _ arguments: [String], in directory: URL? = nil, stdin: URL? = nil) throws -> ProcessResult {
    let base = FileManager.default.temporaryDirectory.appendingPathComponent("tools-run-\(UUID().uuidString)")
    let outURL = base.appendingPathExtension("out")
    let errURL = base.appendingPathExtension("err")
    _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
    defer {
        try? FileManager.default.removeItem(at: outURL)
        try? FileManager.default.removeItem(at: errURL)
    }
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = directory }
    let out = try FileHandle(forWritingTo: outURL)
    let err = try FileHandle(forWritingTo: errURL)
    process.standardOutput = out
    process.standardError = err
    let input = try stdin.map { try FileHandle(forReadingFrom: $0) }
    if let input { process.standardInput = input }
    try process.run()
    process.waitUntilExit()
    try out.close()
    try err.close()
    try input?.close()
    return ProcessResult(status: process.terminationStatus, stdout: try String(contentsOf: outURL, encoding: .utf8),
                         stderr: try String(contentsOf: errURL, encoding: .utf8))
}

/// Paths of the repository and of the tools built with the tests.
public enum Paths {
    /// `Tools/`.
    public static let tools = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// The repository root.
    public static let root = tools.deletingLastPathComponent()
    /// `Schemas/`.
    public static let schemas = root.appendingPathComponent("Schemas")

    /// An executable product of this package, built with the tests: in the build directory, where the
    /// test bundle is on Linux (beside it on macOS).
    public static func executable(_ name: String) throws -> URL {
        let bundle = Bundle(for: Marker.self).bundleURL
        for directory in [bundle, bundle.deletingLastPathComponent()] {
            let url = directory.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: bundle.appendingPathComponent(name).path])
    }

    /// The `lattice-codegen` executable.
    public static func codegen() throws -> URL { try executable("lattice-codegen") }

    /// The `lattice` executable.
    public static func lattice() throws -> URL { try executable("lattice") }

    /// The golden file of `name`.
    public static func golden(_ name: String) throws -> String {
        try String(contentsOf: tools.appendingPathComponent("Tests/Generated/\(name)/\(name).swift"), encoding: .utf8)
    }

    /// A class of this module, to find the bundle it is linked into.
    private final class Marker {}
}
