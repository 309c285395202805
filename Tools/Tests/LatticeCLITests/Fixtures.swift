import Foundation
import Lattice
import ToolsTestSupport
import XCTest

// Models of the files the command-line tests make: every value type, an embedded object with a link,
// a class without a primary key, links in both directions (so an import meets links to objects it has
// not created yet), Lists, MutableSets, Maps and linking objects.

final class CLIPerson: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted(indexed: true) var name = ""
    @Persisted var born = Date(timeIntervalSinceReferenceDate: 0)
    @Persisted var height: Double?
    @Persisted var ratio: Float = 0
    @Persisted var isVIP = false
    @Persisted var small: Int8 = 0
    @Persisted var photo: Data?
    @Persisted var uuid = UUID()
    @Persisted var oid = ObjectId()
    @Persisted var balance = Decimal(0)
    @Persisted var address: CLIAddress?
    @Persisted var best: CLINote?
    @Persisted var friends: List<CLIPerson>
    @Persisted var notes: List<CLINote>
    @Persisted var nicknames: List<String?>
    @Persisted var tags: MutableSet<String>
    @Persisted var scores: Map<String, Int?>
    @Persisted(originProperty: "friends") var friendOf: LinkingObjects<CLIPerson>
}

final class CLIAddress: EmbeddedObject {
    @Persisted var city = ""
    @Persisted var zip: Int?
    @Persisted var landlord: CLIPerson?
}

/// No primary key: links to notes are written by object key.
final class CLINote: Object {
    @Persisted var text = ""
    @Persisted var at = Date(timeIntervalSinceReferenceDate: 0)
    @Persisted var author: CLIPerson?
}

let cliTypes: [Object.Type] = [CLIPerson.self, CLIAddress.self, CLINote.self]

class CLITestCase: XCTestCase {
    var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("lattice-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try FileManager.default.removeItem(at: directory)
    }

    func url(_ name: String) -> URL { directory.appendingPathComponent(name) }

    /// Runs `lattice` with `arguments` in the test's directory.
    func lattice(_ arguments: String..., stdin: URL? = nil) throws -> ProcessResult {
        try runProcess(Paths.lattice(), arguments, in: directory, stdin: stdin)
    }

    func open(_ name: String) throws -> Lattice {
        try Lattice(configuration: .init(fileURL: url(name), objectTypes: cliTypes))
    }

    /// `people.lattice`: 30 people (every third a VIP, born a day apart from 2024-01-01), each with an
    /// address whose landlord is the next person, a best note and a list of notes written by the next
    /// person, friends before and after them, nicknames, tags and scores; odd values on person 0.
    @discardableResult
    func makePeople(_ name: String = "people.lattice", count: Int = 30) throws -> URL {
        let lattice = try open(name)
        let start = try XCTUnwrap(ISO8601DateFormatter().date(from: "2024-01-01T00:00:00Z"))
        try lattice.write {
            var people: [CLIPerson] = []
            for i in 0..<count {
                people.append(try lattice.create(CLIPerson.self, value: [
                    "id": i, "name": "person \(i)", "born": start.addingTimeInterval(Double(i) * 86_400),
                    "height": (i % 4 == 0 ? nil : 1.5 + Double(i) / 100) as Any, "ratio": Float(i) / 3, "isVIP": i % 3 == 0,
                    "small": Int8(i - 10), "photo": (i % 5 == 0 ? Data([UInt8(i), 0, 255]) : nil) as Any,
                    "balance": Decimal(4 * i + 1) / 4, "nicknames": ["p\(i)", nil], "tags": ["t\(i % 3)", "all"],
                    "scores": ["math": i, "art": nil],
                ]))
            }
            for (i, person) in people.enumerated() {
                let next = people[(i + 1) % count]
                person.address = try CLIAddress(value: ["city": "City \(i % 5)", "zip": (i % 2 == 0 ? 1000 + i : nil) as Any, "landlord": next])
                let note = try lattice.create(CLINote.self, value: ["text": "note \(i)", "at": start.addingTimeInterval(Double(i) + 0.25),
                                                                     "author": next])
                person.best = note
                person.notes.append(note)
                person.friends.append(objectsIn: [people[(i + count - 1) % count], next])
            }
            // Values JSON has no number for, and a date that is no whole second.
            people[0].height = .nan
            people[0].ratio = -.infinity
            people[0].born = Date(timeIntervalSinceReferenceDate: 1.1)
        }
        return url(name)
    }

    /// Every object of a file made by `makePeople`, as text: two files with equal dumps hold the same
    /// objects with the same values, links and collections.
    func dump(_ name: String) throws -> String {
        let lattice = try open(name)
        func date(_ d: Date) -> String { "\(d.timeIntervalSinceReferenceDate)" }
        var lines: [String] = []
        for p in lattice.objects(CLIPerson.self).sorted(by: { $0.id < $1.id }) {
            let fields: [String] = [
                "\(p.id)", p.name, date(p.born), "\(p.height.map { "\($0)" } ?? "nil")", "\(p.ratio)", "\(p.isVIP)", "\(p.small)",
                "\(p.photo.map { Array($0) } ?? [])", p.uuid.uuidString, p.oid.description, "\(p.balance)",
                "\(p.address.map { "\($0.city)/\($0.zip.map(String.init) ?? "nil")/\($0.landlord?.id ?? -1)" } ?? "nil")",
                p.best?.text ?? "nil", "\(p.friends.map(\.id))", "\(p.notes.map(\.text))", "\(Array(p.nicknames))",
                "\(p.tags.sorted())", "\(p.scores.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.map(String.init) ?? "nil")" })",
                "\(p.friendOf.map(\.id).sorted())",
            ]
            lines.append(fields.joined(separator: " | "))
        }
        for n in lattice.objects(CLINote.self).sorted(by: { $0.text < $1.text }) {
            lines.append("\(n.text) | \(date(n.at)) | \(n.author?.id ?? -1)")
        }
        return lines.joined(separator: "\n")
    }

    /// Parses JSON output.
    func json(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> Any {
        do {
            return try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
        } catch {
            XCTFail("not JSON: \(text)", file: file, line: line)
            throw error
        }
    }
}
