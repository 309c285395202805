import Foundation
import Lattice
import ToolsTestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `watch` in a child process sees the commits of this process as they happen, and SIGINT ends it
/// with exit status 0.
final class WatchTests: CLITestCase {
    func testWatchPrintsInsertionsModificationsAndDeletionsOfAnotherProcess() throws {
        try makePeople(count: 5)
        let watcher = try Watcher(Paths.lattice(), ["watch", url("people.lattice").path, "CLIPerson", "isVIP == $0", "--arg", "true", "--json"])
        defer { watcher.stop() }
        let initial = try watcher.line()
        let start = try XCTUnwrap(try json(initial) as? [String: Any])
        XCTAssertEqual(start["change"] as? String, "initial")
        XCTAssertEqual(start["class"] as? String, "CLIPerson")
        XCTAssertEqual(start["count"] as? Int, 2)

        let lattice = try open("people.lattice")
        try lattice.write { try lattice.create(CLIPerson.self, value: ["id": 100, "name": "new VIP", "isVIP": true]) }
        try assertChange(watcher, "insert", id: 100, name: "new VIP")
        try lattice.write { lattice.object(ofType: CLIPerson.self, forPrimaryKey: 3)?.name = "renamed" }
        try assertChange(watcher, "modify", id: 3, name: "renamed")
        try lattice.write { try lattice.create(CLIPerson.self, value: ["id": 101, "name": "not a VIP"]) }  // outside the predicate
        try lattice.write { try lattice.delete(try XCTUnwrap(lattice.object(ofType: CLIPerson.self, forPrimaryKey: 0))) }
        try assertChange(watcher, "delete", id: 0, name: "person 0")

        XCTAssertEqual(watcher.interrupt(), 0)
        // The person outside the predicate was never printed. (Person 3, a VIP whose friend 4 lost its
        // friend 0, may follow as modified: a change of an object reached through a List counts.)
        XCTAssertFalse(watcher.remainingOutput().contains("not a VIP"))
    }

    func testWatchPrintsLinesForPeople() throws {
        try makePeople(count: 2)
        let watcher = try Watcher(Paths.lattice(), ["watch", url("people.lattice").path, "CLIPerson"])
        defer { watcher.stop() }
        XCTAssertEqual(try watcher.line(), "initial: 2 objects")
        let lattice = try open("people.lattice")
        try lattice.write { try lattice.create(CLIPerson.self, value: ["id": 7, "name": "Zed"]) }
        let line = try watcher.line()
        XCTAssertTrue(line.hasPrefix("insert: {\"id\":7,\"name\":\"Zed\","), line)
        XCTAssertEqual(watcher.interrupt(), 0)
    }

    /// The next change line that is not a modification of another object: a write also modifies every
    /// observed object that reaches the changed one through links (up to four hops), which watch prints too.
    private func assertChange(_ watcher: Watcher, _ kind: String, id: Int, name: String, line: UInt = #line) throws {
        var change = try XCTUnwrap(try json(try watcher.line()) as? [String: Any], line: line)
        while change["change"] as? String == "modify", (change["object"] as? [String: Any])?["id"] as? Int != id {
            change = try XCTUnwrap(try json(try watcher.line()) as? [String: Any], line: line)
        }
        XCTAssertEqual(change["change"] as? String, kind, line: line)
        XCTAssertEqual(change["class"] as? String, "CLIPerson", line: line)
        let object = try XCTUnwrap(change["object"] as? [String: Any], line: line)
        XCTAssertEqual(object["id"] as? Int, id, line: line)
        XCTAssertEqual(object["name"] as? String, name, line: line)
    }
}

/// A `lattice watch` child whose standard output is read line by line.
private final class Watcher {
    private let process = Process()
    private let output = Pipe()
    private var buffer: [UInt8] = []

    init(_ executable: URL, _ arguments: [String]) throws {
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try process.run()
    }

    /// The next line of output. Waits for it; a watcher that printed nothing for a minute (or exited)
    /// fails the test instead of hanging it.
    func line() throws -> String {
        let fd = output.fileHandleForReading.fileDescriptor
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 60_000) > 0 else { throw CocoaError(.fileReadUnknown, userInfo: [NSDebugDescriptionErrorKey: "watch printed nothing"]) }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = read(fd, &chunk, chunk.count)
            guard n > 0 else { throw CocoaError(.fileReadUnknown, userInfo: [NSDebugDescriptionErrorKey: "watch ended"]) }
            buffer += chunk[..<n]
        }
    }

    /// Sends SIGINT and returns the exit status.
    func interrupt() -> Int32 {
        kill(process.processIdentifier, SIGINT)
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// What the process printed and was not read yet (after it ended).
    func remainingOutput() -> String {
        let rest = output.fileHandleForReading.readDataToEndOfFile()
        return String(decoding: buffer + Array(rest), as: UTF8.self)
    }

    /// Ends the process if it still runs.
    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }
}
