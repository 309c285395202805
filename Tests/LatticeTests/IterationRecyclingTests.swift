import Foundation
import XCTest
@testable import Lattice

/// A class that opts in may have a `for … in` loop hand out one instance again for the next object once
/// the loop kept no reference to it; without the opt-in every object is a new instance.
final class IterationRecyclingTests: XCTestCase {
    final class Plain: Object {
        @Persisted(primaryKey: true) var id: Int64
        @Persisted(indexed: true) var group = 0
        @Persisted var name = ""
        override class var reusesInstancesWhileIterating: Bool { true }
    }

    /// Counts its deinitializations: a class that did not opt in sees one per object a loop hands out.
    final class Counted: Object {
        nonisolated(unsafe) static var deinits = 0
        @Persisted(primaryKey: true) var id: Int64
        deinit { Counted.deinits += 1 }
    }

    /// Keeps state of its own besides its `@Persisted` properties.
    final class Annotated: Object {
        @Persisted(primaryKey: true) var id: Int64
        @Persisted var name = ""
        var note = ""
        lazy var shout: String = name.uppercased()
    }

    private var config: Lattice.Configuration!

    override func setUp() {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("recycling-\(UUID().uuidString).lattice")
        config = Lattice.Configuration(fileURL: url, objectTypes: [Plain.self, Annotated.self, Counted.self])
    }

    override func tearDown() {
        _ = try? Lattice.deleteFiles(for: config)
    }

    private func populate(_ lattice: Lattice, count: Int64 = 600) throws {
        try lattice.write {
            for id in 1...count {
                let plain = Plain()
                plain.id = id
                plain.group = Int(id % 4)
                plain.name = "plain \(id)"
                try lattice.add(plain)
                let annotated = Annotated()
                annotated.id = id
                annotated.name = "annotated \(id)"
                try lattice.add(annotated)
            }
        }
    }

    /// Without the opt-in, a loop keeping nothing still creates and releases one instance per object, so
    /// a model's `init()` and `deinit` run as often as in code that builds the objects by hand.
    func testClassesThatDidNotOptInGetOneInstancePerObject() throws {
        let lattice = try Lattice(configuration: config)
        try lattice.write {
            for id in 1...300 as ClosedRange<Int64> { try lattice.create(Counted.self, value: ["id": id]) }
        }
        Counted.deinits = 0
        var sum: Int64 = 0
        for counted in lattice.objects(Counted.self) { sum += counted.id }
        XCTAssertEqual(sum, 300 * 301 / 2)
        XCTAssertEqual(Counted.deinits, 300)
    }

    /// Objects the loop keeps stay the objects they were, whichever way the loop keeps them.
    func testObjectsKeptByTheLoopKeepStandingForTheirOwnObjects() throws {
        try populate(try Lattice(configuration: config))
        let lattice = try Lattice(configuration: config)
        var kept: [Plain] = []
        var everyOther: [Plain] = []
        for plain in lattice.objects(Plain.self) {
            kept.append(plain)
            if plain.id % 2 == 0 { everyOther.append(plain) }
        }
        XCTAssertEqual(kept.map(\.id), Array(1...600))
        XCTAssertEqual(kept.map(\.name), (1...600).map { "plain \($0)" })
        XCTAssertEqual(Set(kept.map(ObjectIdentifier.init)).count, 600)
        XCTAssertEqual(everyOther.map(\.id), Array(stride(from: 2, through: 600, by: 2)))
        // Filtered results (a snapshot of keys) and the collection algorithms built on iterators.
        let filtered = try lattice.objects(Plain.self).filter("group == 1")
        XCTAssertEqual(filtered.map { $0 }.map(\.id), Array(stride(from: 1, through: 600, by: 4)))
        XCTAssertEqual(Array(filtered).map(\.name), stride(from: 1, through: 600, by: 4).map { "plain \($0)" })
        let kept42 = lattice.objects(Plain.self).first { $0.id == 42 }
        for plain in lattice.objects(Plain.self) { XCTAssertEqual(plain.name, "plain \(plain.id)") }
        XCTAssertEqual(kept42?.id, 42)
        XCTAssertEqual(kept42?.name, "plain 42")
    }

    /// A weak reference to the object of the previous step sees that object or nothing, never the next one.
    func testAWeakReferenceNeverSeesTheInstanceStandForAnotherObject() throws {
        try populate(try Lattice(configuration: config))
        let lattice = try Lattice(configuration: config)
        weak var previous: Plain?
        var previousID: Int64 = 0
        var steps = 0
        for plain in lattice.objects(Plain.self) {
            if let previous { XCTAssertEqual(previous.id, previousID) }
            previous = plain
            previousID = plain.id
            steps += 1
        }
        XCTAssertEqual(steps, 600)
    }

    /// A class with state of its own (a plain stored property, a lazy one) gets a new instance per
    /// object, so that state starts fresh for each.
    func testInstancesOfClassesWithStateOfTheirOwnAreNeverReused() throws {
        try populate(try Lattice(configuration: config))
        let lattice = try Lattice(configuration: config)
        for annotated in lattice.objects(Annotated.self) {
            XCTAssertEqual(annotated.note, "")
            XCTAssertEqual(annotated.shout, "ANNOTATED \(annotated.id)")
            annotated.note = "seen"
        }
    }

    /// A loop keeping no object reuses one instance: the iteration allocates no object per step.
    func testALoopKeepingNoObjectReusesOneInstance() throws {
        try populate(try Lattice(configuration: config))
        let lattice = try Lattice(configuration: config)
        var instances = Set<ObjectIdentifier>()
        var names: [String] = []
        for plain in lattice.objects(Plain.self) {
            instances.insert(ObjectIdentifier(plain))
            names.append(plain.name)
        }
        XCTAssertEqual(instances.count, 1)
        XCTAssertEqual(names, (1...600).map { "plain \($0)" })
        instances.removeAll()
        for plain in try lattice.objects(Plain.self).filter("group == 2") {
            instances.insert(ObjectIdentifier(plain))
            XCTAssertEqual(plain.group, 2)
        }
        XCTAssertEqual(instances.count, 1)
    }

    /// Inside a write, a reused instance writes to the object it stands for now, and one deleted in the
    /// loop does not keep the next one from being read.
    func testWritesAndDeletesThroughReusedInstancesReachTheRightObjects() throws {
        try populate(try Lattice(configuration: config))
        let lattice = try Lattice(configuration: config)
        try lattice.write {
            for plain in lattice.objects(Plain.self) {
                if plain.id % 3 == 0 {
                    try lattice.delete(plain)
                } else {
                    plain.name = "renamed \(plain.id)"
                }
            }
        }
        let reopened = try Lattice(configuration: config)
        let remaining = (1...600).filter { $0 % 3 != 0 }
        XCTAssertEqual(Array(reopened.objects(Plain.self)).map(\.id), remaining.map(Int64.init))
        XCTAssertEqual(Array(reopened.objects(Plain.self)).map(\.name), remaining.map { "renamed \($0)" })
    }
}
