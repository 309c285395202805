import Foundation
import ToolsTestSupport
import XCTest

/// `Examples/CodegenSample`, a package of its own whose model classes the build-tool plugin generates
/// from a schema file, builds and runs against a real database file.
final class CodegenSampleTests: XCTestCase {
    func testSampleBuildsWithThePluginAndRoundTripsADatabase() throws {
        let swift = try XCTUnwrap(findSwift(), "the swift driver is not on PATH")
        let package = Paths.root.appendingPathComponent("Examples/CodegenSample")
        // Its own build directory inside the Tools package's, so the two builds never share a lock.
        let scratch = Paths.tools.appendingPathComponent(".build/codegen-sample")
        let build = try runProcess(swift, ["build", "--package-path", package.path, "--scratch-path", scratch.path])
        XCTAssertEqual(build.status, 0, build.stdout + build.stderr)
        XCTAssertFalse((build.stdout + build.stderr).contains("warning:"), build.stdout + build.stderr)

        // With nothing changed, the plugin's command does not run: its inputs and outputs are declared.
        // (SwiftPM links the plugin's tool once more on the second build of a new build directory, and a
        // new tool runs the command again; the third build shows the steady state.)
        for _ in 0..<2 {
            let again = try runProcess(swift, ["build", "--package-path", package.path, "--scratch-path", scratch.path])
            XCTAssertEqual(again.status, 0, again.stdout + again.stderr)
        }
        let unchanged = try runProcess(swift, ["build", "--package-path", package.path, "--scratch-path", scratch.path])
        XCTAssertEqual(unchanged.status, 0, unchanged.stdout + unchanged.stderr)
        XCTAssertFalse(unchanged.stdout.contains("Generating Lattice models"), unchanged.stdout)

        let binPath = try runProcess(swift, ["build", "--package-path", package.path, "--scratch-path", scratch.path, "--show-bin-path"])
        let executable = URL(fileURLWithPath: binPath.stdout.trimmingCharacters(in: .whitespacesAndNewlines)).appendingPathComponent("CodegenSample")
        let database = FileManager.default.temporaryDirectory.appendingPathComponent("codegen-sample-\(UUID().uuidString).lattice")
        defer {
            try? FileManager.default.removeItem(at: database)
            try? FileManager.default.removeItem(atPath: database.path + "-lock")
        }
        let result = try runProcess(executable, [database.path])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, """
            Wrote 3 books by 2 authors
            Dune by Frank Herbert [sf], 1 copy, tags: classic desert
            Dune Messiah by Frank Herbert [sf], 1 copy
            Poems by Emily Dickinson [poetry], 1 copy, tags: classic
            Emily Dickinson: 1 book(s)
            Frank Herbert (born 1920): 2 book(s)

            """)
        XCTAssertTrue(FileManager.default.fileExists(atPath: database.path), "the database file stays on disk")
    }

    /// The `swift` driver: the first on `PATH`.
    func findSwift() -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for directory in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent("swift")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }
}
