import Foundation
import XCTest
@testable import Lattice

// `add(_:update:)` of an object whose primary key is stored, when it holds embedded objects: `.modified`
// writes them into the stored embedded objects (a to-one link, List positions) and reports only what
// differs; `.all` replaces them.

final class EUTrip: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var start: EUStop?
    @Persisted var stops: List<EUStop>
}

final class EUStop: EmbeddedObject {
    @Persisted var city = ""
    @Persisted var nights = 0
    @Persisted var note: EUNote?
}

final class EUNote: EmbeddedObject {
    @Persisted var text = ""
}

final class EmbeddedUpdateTests: XCTestCase {
    private let types: [Object.Type] = [EUTrip.self, EUStop.self, EUNote.self]

    /// An unmanaged trip 1 "Tour" starting in Oslo (note "n"), stopping in `stops` (one night each).
    private func trip(_ stops: [String], start: String = "Oslo", note: String = "n") -> EUTrip {
        let trip = EUTrip()
        trip.id = 1
        trip.name = "Tour"
        let first = EUStop()
        first.city = start
        first.note = EUNote()
        first.note?.text = note
        trip.start = first
        for city in stops {
            let stop = EUStop()
            stop.city = city
            stop.nights = 1
            trip.stops.append(stop)
        }
        return trip
    }

    private func storedStops(_ lattice: Lattice) throws -> Int {
        let info = try lattice.requireClass(EUStop.self)
        return lattice.reading("count") { try $0.count(info.objectsTable) }
    }

    func testEqualValuesChangeNothingAndKeepHeldEmbeddedObjects() throws {
        let lattice = try makeTempDatabase("embedded-update").open(types)
        try lattice.write { try lattice.add(trip(["Rome", "Pisa"])) }
        let stored = try XCTUnwrap(lattice.object(ofType: EUTrip.self, forPrimaryKey: 1))
        let start = try XCTUnwrap(stored.start)
        let note = try XCTUnwrap(start.note)
        let rome = stored.stops[0]
        var tripChanges = 0, startChanges = 0, classChanges = 0, listChanges = 0
        let tokens = [
            stored.observe { if case .change = $0 { tripChanges += 1 } },
            start.observe { if case .change = $0 { startChanges += 1 } },
            lattice.objects(EUTrip.self).observe { if case .update = $0 { classChanges += 1 } },
            stored.stops.observe { if case .update = $0 { listChanges += 1 } },
        ]
        lattice.refresh()
        try lattice.write { try lattice.add(trip(["Rome", "Pisa"]), update: .modified) }
        lattice.refresh()
        XCTAssertEqual([tripChanges, startChanges, classChanges, listChanges], [0, 0, 0, 0], "equal values are no change")
        XCTAssertFalse(start.isInvalidated)
        XCTAssertFalse(note.isInvalidated)
        XCTAssertFalse(rome.isInvalidated)
        XCTAssertEqual(try storedStops(lattice), 3)
        tokens.forEach { $0.invalidate() }
    }

    func testChangedValuesAreWrittenIntoTheStoredEmbeddedObjects() throws {
        let lattice = try makeTempDatabase("embedded-update").open(types)
        try lattice.write { try lattice.add(trip(["Rome", "Pisa", "Bari"])) }
        let stored = try XCTUnwrap(lattice.object(ofType: EUTrip.self, forPrimaryKey: 1))
        let start = try XCTUnwrap(stored.start)
        let note = try XCTUnwrap(start.note)
        let rome = stored.stops[0], pisa = stored.stops[1], bari = stored.stops[2]
        var startChanges: [[String]] = []
        let token = start.observe { if case .change(_, let properties) = $0 { startChanges.append(properties.map(\.name)) } }
        lattice.refresh()

        let update = trip(["Rome", "Siena"], start: "Bergen", note: "m")
        try lattice.write { try lattice.add(update, update: .modified) }
        lattice.refresh()
        XCTAssertFalse(start.isInvalidated)
        XCTAssertEqual(start.city, "Bergen", "a held embedded object sees the new value")
        XCTAssertEqual(note.text, "m")
        XCTAssertEqual(startChanges, [["city", "note"]], "only what changed is reported (the note through its link)")
        XCTAssertEqual(rome.city, "Rome")
        XCTAssertEqual(pisa.city, "Siena", "position 1 is updated in place")
        XCTAssertTrue(bari.isInvalidated, "the surplus stored element is deleted")
        XCTAssertEqual(stored.stops.map(\.city), ["Rome", "Siena"])
        XCTAssertEqual(update.start?.city, "Bergen", "the added instances are managed, in the stored slots")
        XCTAssertEqual(try storedStops(lattice), 3)

        try lattice.write { try lattice.add(trip(["Rome", "Siena", "Lecce", "Ostia"], start: "Bergen", note: "m"), update: .modified) }
        XCTAssertEqual(stored.stops.map(\.city), ["Rome", "Siena", "Lecce", "Ostia"], "extra elements are appended")
        XCTAssertEqual(pisa.city, "Siena")
        XCTAssertEqual(try storedStops(lattice), 5)
        token.invalidate()
    }

    func testListObserverHearsOfTheChangedPositionOnly() throws {
        let lattice = try makeTempDatabase("embedded-update").open(types)
        try lattice.write { try lattice.add(trip(["Rome", "Pisa", "Bari"])) }
        let stored = try XCTUnwrap(lattice.object(ofType: EUTrip.self, forPrimaryKey: 1))
        var listChanges: [(deletions: [Int], insertions: [Int], modifications: [Int])] = []
        var tripChanges: [(deletions: [Int], insertions: [Int], modifications: [Int])] = []
        let tokens = [
            stored.stops.observe { if case let .update(_, d, i, m) = $0 { listChanges.append((d, i, m)) } },
            lattice.objects(EUTrip.self).observe { if case let .update(_, d, i, m) = $0 { tripChanges.append((d, i, m)) } },
        ]
        lattice.refresh()
        try lattice.write { try lattice.add(trip(["Rome", "Siena", "Bari"]), update: .modified) }
        lattice.refresh()
        XCTAssertEqual(listChanges.count, 1)
        XCTAssertEqual(listChanges.first?.deletions, [])
        XCTAssertEqual(listChanges.first?.insertions, [])
        XCTAssertEqual(listChanges.first?.modifications, [1], "the element updated in place is modified, not replaced")
        XCTAssertEqual(tripChanges.first?.modifications, [0], "the trip is modified through its embedded object")
        tokens.forEach { $0.invalidate() }
    }

    func testUpdateAllReplacesTheEmbeddedObjects() throws {
        let lattice = try makeTempDatabase("embedded-update").open(types)
        try lattice.write { try lattice.add(trip(["Rome"])) }
        let stored = try XCTUnwrap(lattice.object(ofType: EUTrip.self, forPrimaryKey: 1))
        let start = try XCTUnwrap(stored.start)
        let rome = stored.stops[0]
        try lattice.write { try lattice.add(trip(["Rome"]), update: .all) }
        XCTAssertTrue(start.isInvalidated, "as in Realm, `.all` replaces embedded objects with new ones")
        XCTAssertTrue(rome.isInvalidated)
        XCTAssertEqual(stored.start?.city, "Oslo")
        XCTAssertEqual(try storedStops(lattice), 2)
    }

    func testCreateWithModifiedUpdatesListElementsInPlace() throws {
        let lattice = try makeTempDatabase("embedded-update").open(types)
        try lattice.write { try lattice.add(trip(["Rome", "Pisa"])) }
        let stored = try XCTUnwrap(lattice.object(ofType: EUTrip.self, forPrimaryKey: 1))
        let rome = stored.stops[0]
        try lattice.write {
            try lattice.create(EUTrip.self, value: ["id": 1, "stops": [["city": "Rome", "nights": 2]]], update: .modified)
        }
        XCTAssertFalse(rome.isInvalidated)
        XCTAssertEqual(rome.nights, 2)
        XCTAssertEqual(stored.stops.count, 1)
        XCTAssertEqual(try storedStops(lattice), 2)
    }
}
