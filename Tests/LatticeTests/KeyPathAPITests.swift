import Foundation
import XCTest
@testable import Lattice

extension LDog {
    /// Not persisted: a key path to it names no property.
    var greeting: String { "Hello, " + name }
}

enum KPKind: String, PersistableEnum { case low, mid, high }

/// A class whose declared defaults are values a probe might mark a property with.
final class KPOwner: Object {
    @Persisted var isActive = true
    @Persisted var kind = KPKind.mid
    @Persisted var rank = 1
    @Persisted var optKind: KPKind?
}

final class KPDog: Object {
    @Persisted var name = ""
    @Persisted var owner: KPOwner?
}

/// The key-path forms of sorting, `distinct`, the aggregates and `observe(keyPaths:)` mean what the
/// string forms mean.
final class KeyPathAPITests: LinkQueryTestCase {
    /// A path through a link is found whatever the linked class declares as defaults.
    func testKeyPathsThroughLinksToPropertiesWithDeclaredDefaults() throws {
        let db = makeTempDatabase("keypath-defaults")
        let lattice = try db.open([KPOwner.self, KPDog.self])
        try lattice.write {
            for (i, kind) in [KPKind.high, .low, .mid].enumerated() {
                let owner = try lattice.create(KPOwner.self, value: ["isActive": i != 1, "kind": kind, "rank": 3 - i])
                _ = try lattice.create(KPDog.self, value: ["name": "d\(i)", "owner": owner])
            }
        }
        let dogs = lattice.objects(KPDog.self)
        XCTAssertEqual(try dogs.sorted(by: \.owner?.isActive).map(\.name), try dogs.sorted(byKeyPath: "owner.isActive").map(\.name))
        XCTAssertEqual(try dogs.sorted(by: \.owner?.kind).map(\.name), try dogs.sorted(byKeyPath: "owner.kind").map(\.name))
        XCTAssertEqual(try dogs.sorted(by: \.owner?.rank).map(\.name), ["d2", "d1", "d0"])
        XCTAssertEqual(try dogs.distinct(by: [\KPDog.owner?.isActive]).count, 2)
    }

    /// An optional enum whose raw values are none of the probes' own marks is found by key path too.
    func testKeyPathsToOptionalEnums() throws {
        let lattice = try makeTempDatabase("keypath-optional-enum").open([KPOwner.self, KPDog.self])
        try lattice.write {
            for (i, kind) in [KPKind.high, nil, .low].enumerated() {
                let owner = try lattice.create(KPOwner.self, value: ["rank": i, "optKind": kind as Any])
                _ = try lattice.create(KPDog.self, value: ["name": "d\(i)", "owner": owner])
            }
        }
        let owners = lattice.objects(KPOwner.self)
        XCTAssertEqual(try owners.sorted(by: \.optKind).map(\.rank), [1, 0, 2], "nil first, then by raw value")
        XCTAssertEqual(owners.where { $0.optKind == .low }.map(\.rank), [2])
        XCTAssertEqual(try lattice.objects(KPDog.self).sorted(by: \.owner?.optKind).map(\.name), ["d1", "d0", "d2"])
    }

    func testSortAndDistinctByKeyPathMatchTheStringForms() throws {
        let (ann, _, _) = try makeSample()
        let dogs = lattice.objects(LDog.self)
        XCTAssertEqual(try dogs.sorted(by: \.age, ascending: false).map(\.name),
                       try dogs.sorted(byKeyPath: "age", ascending: false).map(\.name))
        XCTAssertEqual(try dogs.sorted(by: \.age, ascending: false).map(\.name), ["Stray", "Fido", "Rover", "Rex"])
        XCTAssertEqual(try dogs.sorted(by: \.weight).map(\.name), ["Fido", "Stray", "Rex", "Rover"], "nil sorts first")
        XCTAssertEqual(try ann.dogs.sorted(by: \.name, ascending: false).map(\.name), ["Rover", "Rex"])
        XCTAssertEqual(try lattice.objects(LPerson.self).sorted(by: \.age).map(\.name), ["Cy", "Ann", "Bo"])

        try lattice.write { _ = try lattice.create(LDog.self, value: ["name": "Twin", "age": 5]) }
        let distinct = try dogs.sorted(by: \.name).distinct(by: [\LDog.age])
        XCTAssertEqual(distinct.map(\.name), try dogs.sorted(byKeyPath: "name").distinct(by: ["age"]).map(\.name))
        XCTAssertEqual(distinct.map(\.name), ["Fido", "Rex", "Rover", "Stray"], "Twin repeats Fido's age")
        XCTAssertEqual(try dogs.distinct(by: [\LDog.age, \LDog.name]).count, 5)
    }

    func testAggregatesByKeyPath() throws {
        let (ann, _, _) = try makeSample()
        let dogs = lattice.objects(LDog.self)
        XCTAssertEqual(try dogs.min(of: \.age), 1)
        XCTAssertEqual(try dogs.max(of: \.age), 7)
        XCTAssertEqual(try dogs.sum(of: \.age), 16)
        XCTAssertEqual(try dogs.average(of: \.age), 4)
        try lattice.write { _ = try lattice.create(LDog.self, value: ["name": "Pup", "age": 2]) }
        XCTAssertEqual(try dogs.average(of: \.age), 3, "18 / 5 as an Int, rounded toward zero as Realm's key-path form does")
        XCTAssertEqual(try dogs.average(ofProperty: "age") as Double?, 3.6)
        // Optional values: nil values are skipped.
        XCTAssertEqual(try dogs.min(of: \.weight), .some(10))
        XCTAssertEqual(try dogs.sum(of: \.weight), 30)
        XCTAssertEqual(try dogs.average(of: \.weight), .some(15))
        XCTAssertEqual(try dogs.max(of: \.born), Date(timeIntervalSinceReferenceDate: 0))
        // NaN compares with nothing: neither the smallest nor the largest value.
        try lattice.write { ann.dogs.append(try lattice.create(LDog.self, value: ["name": "NaN", "weight": Double.nan])) }
        XCTAssertEqual(try dogs.min(ofProperty: "weight") as Double?, 10)
        XCTAssertEqual(try dogs.max(ofProperty: "weight") as Double?, 20)
        XCTAssertEqual(try ann.dogs.min(ofProperty: "weight") as Double?, 10, "the same over a List's objects")
        try lattice.write { try lattice.delete(dogs.filter("name == 'NaN'")) }
        // Managed collections.
        XCTAssertEqual(try ann.dogs.max(of: \.age), 3)
        XCTAssertEqual(try ann.dogs.sum(of: \.age), 4)
        XCTAssertEqual(try dogs.filter("name == 'Rex'").first?.walkers.min(of: \.age), 30)
        XCTAssertNil(try lattice.objects(LPerson.self).filter("age > 100").max(of: \.age) as Int?)
    }

    func testKeyPathsThatNameNoPropertyThrow() throws {
        try makeSample()
        let dogs = lattice.objects(LDog.self)
        for (operation, call) in [("sorted", { _ = try dogs.sorted(by: \.greeting) }),
                                  ("computed through a link", { _ = try dogs.sorted(by: \.owner?.name.count) }),
                                  ("max", { _ = try dogs.max(of: \.greeting) }),
                                  ("distinct", { _ = try dogs.distinct(by: [\LDog.greeting]) })] as [(String, () throws -> Void)] {
            XCTAssertThrowsError(try call(), operation) { error in
                guard case let LatticeError.invalidQuery(message) = error else { return XCTFail("\(operation): \(error)") }
                XCTAssertTrue(message.contains("LDog") && message.contains("\\LDog."), message)
            }
        }
        XCTAssertThrowsError(try LPerson().dogs.sorted(by: \.age)) { error in
            guard case LatticeError.objectNotManaged = error else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(dogs.count, 4, "nothing changed")
    }

    /// Key paths through to-one links name the same paths as the string forms (`\.owner?.name` is
    /// `"owner.name"`), as Realm's do: sorting, `distinct` and observation.
    func testKeyPathsThroughLinks() throws {
        let (ann, bo, _) = try makeSample()
        let dogs = lattice.objects(LDog.self)
        try lattice.write {
            for dog in dogs { dog.owner = ann.dogs.contains(dog) ? ann : bo }
            ann.partner = bo
            bo.partner = ann
        }
        XCTAssertEqual(try dogs.sorted(by: \.owner?.name, ascending: false).map(\.name),
                       try dogs.sorted(byKeyPath: "owner.name", ascending: false).map(\.name))
        XCTAssertEqual(try dogs.sorted(by: \.owner?.partner?.age).map(\.name),
                       try dogs.sorted(byKeyPath: "owner.partner.age").map(\.name))
        XCTAssertEqual(try dogs.sorted(by: \.owner?.address?.city).map(\.name),
                       try dogs.sorted(byKeyPath: "owner.address.city").map(\.name), "an embedded object on the way")
        XCTAssertEqual(try dogs.distinct(by: [\LDog.owner?.name]).count, 2)
        XCTAssertEqual(try ann.dogs.sorted(by: \.owner?.age).count, 2)

        var modifications: [[Int]] = []
        var changed: [[String]] = []
        let rex = try XCTUnwrap(dogs.filter("name == 'Rex'").first)
        let sorted = try dogs.sorted(by: \.name)
        let tokens = [
            sorted.observe(keyPaths: [\.owner?.name]) { if case let .update(_, _, _, m) = $0 { modifications.append(m) } },
            rex.observe(keyPaths: [\.owner?.age]) { if case let .change(_, p) = $0 { changed.append(p.map(\.name)) } },
        ]
        lattice.refresh()
        try lattice.write { bo.age = 41 }
        lattice.refresh()
        XCTAssertEqual(modifications, [], "the owners' age is not watched by the results")
        try lattice.write { bo.name = "Bob" }
        lattice.refresh()
        let boDogs = sorted.enumerated().filter { $0.element.owner?.name == "Bob" }.map(\.offset)
        XCTAssertEqual(modifications, [boDogs])
        XCTAssertEqual(changed, rex.owner?.name == "Bob" ? [["owner"]] : [])
        tokens.forEach { $0.invalidate() }
    }

    func testObserveByKeyPaths() throws {
        let (ann, _, _) = try makeSample()
        let rex = try XCTUnwrap(lattice.objects(LDog.self).filter("name == 'Rex'").first)
        var objectChanges: [[String]] = []
        var resultsModifications: [[Int]] = []
        var listModifications: [[Int]] = []
        var personChanges: [[String]] = []
        var errors: [String] = []
        let dogs = try lattice.objects(LDog.self).sorted(by: \.name)
        let tokens = [
            rex.observe(keyPaths: [\.name, \.owner]) { if case let .change(_, p) = $0 { objectChanges.append(p.map(\.name)) } },
            dogs.observe(keyPaths: [\.age]) { if case let .update(_, _, _, m) = $0 { resultsModifications.append(m) } },
            ann.dogs.observe(keyPaths: [\.name]) { if case let .update(_, _, _, m) = $0 { listModifications.append(m) } },
            ann.observe(keyPaths: [\.dogs]) { if case let .change(_, p) = $0 { personChanges.append(p.map(\.name)) } },
            rex.observe(keyPaths: [\.greeting]) { if case let .error(e) = $0 { errors.append("\(e)") } },
        ]
        lattice.refresh()
        XCTAssertEqual(errors.count, 1, "a key path naming no property is reported as an error")
        XCTAssertTrue(errors.first?.contains("does not read a @Persisted property of 'LDog'") == true, "\(errors)")

        try lattice.write { rex.age = 2 }
        lattice.refresh()
        XCTAssertEqual(objectChanges, [], "age is not watched")
        XCTAssertEqual(resultsModifications, [[1]], "Rex is second by name")
        XCTAssertEqual(listModifications, [], "the list watches name only")

        try lattice.write { rex.name = "Rexy"; rex.owner = nil }
        lattice.refresh()
        XCTAssertEqual(objectChanges, [["name", "owner"]])
        XCTAssertEqual(listModifications, [[0]])
        XCTAssertEqual(resultsModifications, [[1]], "no age changed")

        XCTAssertEqual(personChanges, [])
        try lattice.write { ann.dogs.append(LDog()) }
        lattice.refresh()
        XCTAssertEqual(personChanges, [["dogs"]])
        tokens.forEach { $0.invalidate() }
    }
}
