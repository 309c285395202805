import Foundation
import Synchronization
import XCTest
@testable import Lattice

/// Initial-value expressions (`= UUID()`, `= Date()`, a counter) give every new object its values, and
/// cost nothing when an object is read from the file: the instance standing for it reads its record.
final class InitialValueTests: XCTestCase {
    /// How many times a `Ticket` initial value was made.
    static let serials = Mutex(0)

    static func nextSerial() -> Int { serials.withLock { $0 += 1; return $0 } }

    final class Ticket: Object {
        @Persisted(primaryKey: true) var id = UUID()
        @Persisted(indexed: true) var serial = InitialValueTests.nextSerial()
        @Persisted var tag = ObjectId()
        @Persisted var code: UUID
        @Persisted var holder: Holder?
    }

    final class Holder: Object {
        @Persisted(primaryKey: true) var name = ""
        @Persisted var tickets: List<Ticket>
        @Persisted(originProperty: "holder") var held: LinkingObjects<Ticket>
    }

    /// Keeps nothing but `@Persisted` properties, and makes a new `Ticket` in its initializer after
    /// `super.init()`: that ticket is a new object and gets its initial values.
    final class Maker: Object {
        nonisolated(unsafe) static var made: [Ticket] = []
        @Persisted(primaryKey: true) var id = InitialValueTests.nextSerial()
        required init() {
            super.init()
            Maker.made.append(Ticket())
        }
    }

    private let types: [Object.Type] = [Ticket.self, Holder.self, Maker.self]

    /// Writes `count` tickets held by "ann" (a link each, and her list); returns their ids, serials and tags.
    private func populate(_ db: TempDatabase, count: Int) throws -> [UUID: (serial: Int, tag: ObjectId, code: UUID)] {
        let lattice = try db.open(types)
        var made: [UUID: (Int, ObjectId, UUID)] = [:]
        try lattice.write {
            let ann = Holder()
            ann.name = "ann"
            try lattice.add(ann)
            for _ in 0..<count {
                let ticket = Ticket()
                made[ticket.id] = (ticket.serial, ticket.tag, ticket.code)
                ticket.holder = ann
                try lattice.add(ticket)
                ann.tickets.append(ticket)
            }
        }
        return made
    }

    func testObjectsReadFromTheFileRunNoInitialValueExpressions() throws {
        let db = makeTempDatabase("initial-values")
        let made = try populate(db, count: 40)
        XCTAssertEqual(Set(made.values.map(\.serial)).count, 40, "every new ticket made its own serial")
        XCTAssertEqual(Set(made.values.map(\.code)).count, 40, "every new ticket made its own UUID default")

        let lattice = try db.open(types)
        let before = Self.serials.withLock { $0 }
        func check(_ tickets: some Sequence<Ticket>, _ path: String) {
            var seen = 0
            for ticket in tickets {
                guard let stored = made[ticket.id] else { return XCTFail("\(path): unknown id \(ticket.id)") }
                XCTAssertEqual(ticket.serial, stored.serial, path)
                XCTAssertEqual(ticket.tag, stored.tag, path)
                XCTAssertEqual(ticket.code, stored.code, path)
                seen += 1
            }
            XCTAssertEqual(seen, made.count, path)
        }
        let all = lattice.objects(Ticket.self)
        check(all, "for … in")
        check(all.map { $0 }, "map")
        check(Array(all), "Array(_:)")
        check((0..<all.count).map { all[$0] }, "subscript")
        check(all.reversed(), "reversed()")
        check(try all.sorted(byKeyPath: "serial"), "sorted")
        check(try all.filter("serial > 0"), "query")
        check(made.keys.compactMap { lattice.object(ofType: Ticket.self, forPrimaryKey: $0) }, "by primary key")
        let ann = try XCTUnwrap(lattice.object(ofType: Holder.self, forPrimaryKey: "ann"))
        check(ann.tickets, "List")
        check(ann.held, "LinkingObjects")
        XCTAssertTrue(all.allSatisfy { $0.holder == ann }, "links")
        check(all.freeze(), "frozen Results")
        check(all.map { $0.freeze().thaw()! }, "frozen and thawed objects")
        XCTAssertEqual(Self.serials.withLock { $0 }, before, "reading objects ran a model's initial-value expression")

        // New objects made while reading still get their initial values.
        var fresh: [Ticket] = []
        for _ in all.prefix(3) { fresh.append(Ticket()) }
        XCTAssertEqual(Self.serials.withLock { $0 }, before + 3)
        XCTAssertEqual(Set(fresh.map(\.id)).count, 3)
        XCTAssertEqual(Set(fresh.map(\.code)).count, 3)
        XCTAssertFalse(fresh.contains { $0.code == UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) })
    }

    /// A model's initializer that makes another object after `super.init()` makes a real new object,
    /// also when the model's own instance stands for a stored object.
    func testObjectsMadeByAModelsInitializerGetTheirInitialValues() throws {
        let db = makeTempDatabase("initial-values")
        let lattice = try db.open(types)
        try lattice.write { try lattice.add(Maker()) }
        let id = try XCTUnwrap(lattice.objects(Maker.self).first?.id)
        Maker.made = []
        let before = Self.serials.withLock { $0 }

        let reopened = try db.open(types)
        let maker = try XCTUnwrap(reopened.object(ofType: Maker.self, forPrimaryKey: id))
        XCTAssertEqual(maker.id, id)
        XCTAssertEqual(Maker.made.count, 1)
        XCTAssertEqual(Self.serials.withLock { $0 }, before + 1, "the ticket made inside got its serial; the maker's own id ran nothing")
        let inner = try XCTUnwrap(Maker.made.first)
        XCTAssertNil(inner.lattice)
        XCTAssertEqual(inner.serial, before + 1)
        XCTAssertNotEqual(inner.code, UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
        Maker.made = []
    }

    /// Adding an object keeps the values it had; reading them after the add and after reopening gives them.
    func testAddedObjectsKeepTheirInitialValues() throws {
        let db = makeTempDatabase("initial-values")
        let lattice = try db.open(types)
        let ticket = Ticket()
        let (id, serial, tag, code) = (ticket.id, ticket.serial, ticket.tag, ticket.code)
        try lattice.write { try lattice.add(ticket) }
        XCTAssertEqual([ticket.id, ticket.code], [id, code])
        XCTAssertEqual(ticket.serial, serial)
        XCTAssertEqual(ticket.tag, tag)
        let reopened = try db.open(types)
        let read = try XCTUnwrap(reopened.object(ofType: Ticket.self, forPrimaryKey: id))
        XCTAssertEqual([read.id, read.code], [id, code])
        XCTAssertEqual(read.serial, serial)
        XCTAssertEqual(read.tag, tag)
        // The key's own type, or a value that converts to it; other values find nothing.
        XCTAssertEqual(reopened.object(ofType: Ticket.self, forPrimaryKey: id.uuidString)?.serial, serial)
        XCTAssertEqual(reopened.object(ofType: Ticket.self, forPrimaryKey: Optional(id))?.serial, serial)
        XCTAssertNil(reopened.object(ofType: Ticket.self, forPrimaryKey: UUID()))
        XCTAssertNil(reopened.object(ofType: Ticket.self, forPrimaryKey: 7))
    }
}
