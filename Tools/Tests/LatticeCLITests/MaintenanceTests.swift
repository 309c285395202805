import Foundation
import Lattice
import ToolsTestSupport
import XCTest

/// `check` on healthy and damaged files; `compact` alone and while another process has the file open.
final class MaintenanceTests: CLITestCase {
    func testCheckPassesAHealthyFileAndListsTheProblemsOfADamagedOne() throws {
        try makePeople()
        let healthy = try lattice("check", "people.lattice")
        XCTAssertEqual(healthy.status, 0, healthy.stderr)
        XCTAssertEqual(healthy.stdout, "No problems found in people.lattice (3 classes).\n")
        XCTAssertEqual(try json(try lattice("check", "people.lattice", "--json").stdout) as? [String: [String]], ["problems": []])

        // Change one byte of the names of two people wherever the file holds them (their records, their
        // index entries, old page copies): LMDB's pages stay intact, the records fail their checksums.
        var bytes = try Data(contentsOf: url("people.lattice"))
        for name in ["person 17", "person 23"] {
            var from = bytes.startIndex
            while let range = bytes.range(of: Data(name.utf8), in: from..<bytes.endIndex) {
                bytes[range.lowerBound + 2] ^= 0x20
                from = range.upperBound
            }
        }
        try bytes.write(to: url("people.lattice"))

        let damaged = try lattice("check", "people.lattice")
        XCTAssertEqual(damaged.status, 1)
        let lines = damaged.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.filter { $0.hasPrefix("damagedValue in o:CLIPerson: ") }.count, 2, damaged.stdout)
        XCTAssertEqual(lines.last, "\(lines.count - 1) problems found in people.lattice.")
        let report = try XCTUnwrap(try json(try lattice("check", "people.lattice", "--json").stdout) as? [String: [[String: String]]])
        let problems = try XCTUnwrap(report["problems"])
        XCTAssertEqual(problems.count, lines.count - 1)
        XCTAssertEqual(problems.filter { $0["kind"] == "damagedValue" && $0["database"] == "o:CLIPerson" }.count, 2)
        XCTAssertTrue(problems.allSatisfy { !($0["detail"] ?? "").isEmpty })
    }

    func testCompactShrinksTheFileOnlyWhenNoOtherProcessHasItOpen() throws {
        try makePeople()
        do {
            // Grow the file: a reader's snapshot keeps the pages every commit replaces from being reused;
            // once it is gone they are all free.
            let reader = try open("people.lattice")
            XCTAssertEqual(reader.objects(CLINote.self).count, 30)
            let lattice = try open("people.lattice")
            for round in 0..<200 {
                try lattice.write {
                    for note in lattice.objects(CLINote.self) { note.text = String(note.text.prefix(7)) + String(repeating: "!", count: round % 50) }
                }
            }
        }
        let before = try dump("people.lattice")
        let size = { try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: self.url("people.lattice").path)[.size] as? Int) }
        let grown = try size()

        // While this process has it open, the file is left alone.
        do {
            let holder = try open("people.lattice")
            let refused = try lattice("compact", "people.lattice")
            XCTAssertEqual(refused.status, 1)
            XCTAssertTrue(refused.stderr.contains("is open in another process"), refused.stderr)
            XCTAssertEqual(try size(), grown)
            _ = holder
        }

        let result = try lattice("compact", "people.lattice")
        XCTAssertEqual(result.status, 0, result.stderr)
        let compacted = try size()
        XCTAssertLessThan(compacted, grown / 2)
        XCTAssertTrue(result.stdout.hasPrefix("Compacted people.lattice: "), result.stdout)
        XCTAssertTrue(result.stdout.contains("(\(grown) bytes) -> "), result.stdout)
        XCTAssertTrue(result.stdout.hasSuffix("(\(compacted) bytes).\n"), result.stdout)
        XCTAssertEqual(try dump("people.lattice"), before)
        XCTAssertEqual(try lattice("check", "people.lattice").status, 0)
    }
}
