import Foundation
import Synchronization
import XCTest
@testable import Lattice

// Shared helpers of the foundation tests: temporary files that delete themselves and typed error checks.

/// A database path under the temporary directory with a UUID in its name; the data and lock files
/// are deleted when the test ends (every handle must be closed by then).
struct TempDatabase {
    let url: URL

    var path: String { url.path }

    /// The configuration of this file for `types` (always explicit: never the process-wide default).
    func configuration(_ types: [Object.Type], readOnly: Bool = false, schemaVersion: UInt64 = 0,
                       deleteIfMigrationNeeded: Bool = false, initialMapSize: Int = 8 << 20) -> Lattice.Configuration {
        Lattice.Configuration(fileURL: url, readOnly: readOnly, schemaVersion: schemaVersion,
                              deleteIfMigrationNeeded: deleteIfMigrationNeeded, objectTypes: types,
                              initialMapSize: initialMapSize)
    }

    /// Opens a handle on this file for `types`.
    func open(_ types: [Object.Type], readOnly: Bool = false, schemaVersion: UInt64 = 0) throws -> Lattice {
        try Lattice(configuration: configuration(types, readOnly: readOnly, schemaVersion: schemaVersion))
    }
}

extension XCTestCase {
    /// A fresh temporary database file, removed (with its `-lock` file) at tear-down.
    func makeTempDatabase(_ tag: String = "lattice") -> TempDatabase {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(tag)-\(UUID().uuidString).lattice")
        addTeardownBlock {
            for path in [url.path, url.path + "-lock"] where FileManager.default.fileExists(atPath: path) {
                try? FileManager.default.removeItem(atPath: path)
            }
        }
        return TempDatabase(url: url)
    }

    /// Runs the current run loop until `condition` holds, failing after `timeout` seconds (deliveries
    /// on the registering thread come through its run loop).
    func spin(_ what: String, timeout: TimeInterval = 20, file: StaticString = #filePath, line: UInt = #line,
              until condition: () -> Bool) {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            if Date() > deadline { XCTFail("timed out waiting for \(what)", file: file, line: line); return }
            RunLoop.current.run(until: Date().addingTimeInterval(0.005))
        }
    }

    /// Asserts that `expression` throws exactly `expected`.
    func assertLatticeError<T>(_ expression: @autoclosure () throws -> T, _ expected: LatticeError,
                               file: StaticString = #filePath, line: UInt = #line) {
        do {
            _ = try expression()
            XCTFail("Expected \(expected) but nothing was thrown", file: file, line: line)
        } catch let error as LatticeError {
            XCTAssertEqual(error, expected, file: file, line: line)
        } catch {
            XCTFail("Expected \(expected) but got \(type(of: error)): \(error)", file: file, line: line)
        }
    }

    /// Returns the `LatticeError` that `expression` throws (failing when it throws nothing or something else).
    @discardableResult
    func latticeError<T>(_ expression: @autoclosure () throws -> T,
                         file: StaticString = #filePath, line: UInt = #line) -> LatticeError? {
        do {
            _ = try expression()
            XCTFail("Expected a LatticeError but nothing was thrown", file: file, line: line)
        } catch let error as LatticeError {
            return error
        } catch {
            XCTFail("Expected a LatticeError but got \(type(of: error)): \(error)", file: file, line: line)
        }
        return nil
    }
}

/// The storage path Lattice reports in errors for `db` (symbolic links of the directory resolved).
func storagePath(of db: TempDatabase) throws -> String {
    try Lattice.storagePath(db.configuration([FixtureItem.self]))
}

/// A value shared between threads of a test (closures cannot capture a `Mutex` itself).
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    func withLock<R: Sendable>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
}

// MARK: - Fixture models shared by several test files

/// A class with an integer primary key (the object key itself).
final class FixtureItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted(indexed: true) var rank = 0
    @Persisted var note: String?
}

/// A class with a String primary key (looked up through its index).
final class FixturePerson: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted var age = 0
    @Persisted var email: String?
}

/// A class with a UUID primary key.
final class FixtureDevice: Object {
    @Persisted(primaryKey: true) var id = UUID()
    @Persisted var label = ""
}

/// A class without a primary key.
final class FixtureLogLine: Object {
    @Persisted var text = ""
    @Persisted var level = 0
}

/// A small deterministic generator (splitmix64), so that a randomized test's failure repeats.
struct SeededGenerator {
    var state: UInt64
    /// A number in `0..<bound`.
    mutating func next(_ bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(bound))
    }
}
