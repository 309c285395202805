import Foundation
import XCTest
@testable import Lattice

/// People with dogs (a List), friends (a MutableSet of objects), values in a List, a MutableSet and a
/// Map, an embedded address and a to-one partner; dogs link back to an owner and have walkers
/// (LinkingObjects through `dogs`); cars link to an owner, for two-hop paths. Ages are indexed, so
/// `owner.age > 35` and `ANY dogs.age < 2` can be planned through the backlink table.
final class LPerson: Object {
    @Persisted var name = ""
    @Persisted(indexed: true) var age = 0
    @Persisted var dogs: List<LDog>
    @Persisted var friends: MutableSet<LDog>
    @Persisted var pets: Map<String, LDog?>
    @Persisted var nicknames: List<String>
    @Persisted var scores: List<Double>
    @Persisted var optInts: List<Int?>
    @Persisted var tags: MutableSet<String>
    @Persisted var ratings: Map<String, Int>
    @Persisted var address: LAddress?
    @Persisted var partner: LPerson?
    @Persisted(originProperty: "owner") var cars: LinkingObjects<LCar>
}

final class LDog: Object {
    @Persisted var name = ""
    @Persisted(indexed: true) var age = 0
    @Persisted var weight: Double?
    @Persisted var born = Date(timeIntervalSinceReferenceDate: 0)
    @Persisted var owner: LPerson?
    @Persisted(originProperty: "dogs") var walkers: LinkingObjects<LPerson>
}

final class LAddress: EmbeddedObject {
    @Persisted var city = ""
    @Persisted var zip: Int?
}

final class LCar: Object {
    @Persisted var model = ""
    @Persisted var owner: LPerson?
    @Persisted var driver: LPerson?
    @Persisted var previousOwner: LPerson?
}

/// A fresh database of the link fixtures, deleted at tear-down.
class LinkQueryTestCase: XCTestCase {
    var config: Lattice.Configuration!
    var lattice: Lattice!

    override func setUpWithError() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("querylink-\(UUID().uuidString).lattice")
        config = Lattice.Configuration(fileURL: url, objectTypes: [LPerson.self, LDog.self, LAddress.self, LCar.self])
        lattice = try Lattice(configuration: config)
    }

    override func tearDownWithError() throws {
        lattice = nil
        try Lattice.deleteFiles(for: config)
    }

    /// The names of `results`, sorted (queries of whole classes have no guaranteed order).
    func names<T: Object>(_ results: Results<T>) -> [String] {
        results.map { ($0.value(ofProperty: "name") as? String) ?? ($0.value(ofProperty: "model") as? String) ?? "?" }.sorted()
    }

    /// Throws `invalidQuery` whose message contains every part.
    func assertInvalid<T: Object>(_ results: Results<T>, _ predicate: String, _ args: Any..., contains parts: [String],
                                  file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try results.filter(predicate, argumentArray: args), file: file, line: line) { error in
            guard case let LatticeError.invalidQuery(message) = error else {
                return XCTFail("expected invalidQuery, got \(error)", file: file, line: line)
            }
            for part in parts { XCTAssertTrue(message.contains(part), "'\(message)' lacks '\(part)'", file: file, line: line) }
        }
    }

    /// Ann (dogs Rex 1, Rover 3; nicknames), Bo (dog Fido 5; partner Ann), Cy (no dogs, no address);
    /// cars: Golf (Ann), Polo (Bo), Up (no owner); Stray the dog has no owner and no walkers.
    @discardableResult
    func makeSample() throws -> (ann: LPerson, bo: LPerson, cy: LPerson) {
        let ann = LPerson(), bo = LPerson(), cy = LPerson()
        ann.name = "Ann"; ann.age = 30
        bo.name = "Bo"; bo.age = 40
        cy.name = "Cy"; cy.age = 20
        let rex = LDog(), rover = LDog(), fido = LDog(), stray = LDog()
        rex.name = "Rex"; rex.age = 1; rex.weight = 10
        rover.name = "Rover"; rover.age = 3; rover.weight = 20
        fido.name = "Fido"; fido.age = 5
        stray.name = "Stray"; stray.age = 7
        ann.dogs.append(contentsOf: [rex, rover])
        bo.dogs.append(contentsOf: [fido, rex])
        ann.friends.insert(fido)
        ann.pets["first"] = rex
        ann.nicknames.append(contentsOf: ["annie", "a"])
        bo.nicknames.append(contentsOf: ["bobby"])
        ann.scores.append(contentsOf: [1.5, 9.0])
        bo.scores.append(contentsOf: [4.0])
        ann.tags.insert("vip")
        ann.ratings["x"] = 3
        ann.ratings["y"] = 7
        bo.ratings["x"] = 1
        ann.optInts.append(contentsOf: [nil, 2])
        ann.address = LAddress()
        ann.address?.city = "Oslo"
        bo.address = LAddress()
        bo.address?.city = "Rome"
        bo.partner = ann
        let golf = LCar(), polo = LCar(), up = LCar()
        golf.model = "Golf"; golf.owner = ann
        polo.model = "Polo"; polo.owner = bo
        up.model = "Up"
        try lattice.write {
            try lattice.add(contentsOf: [ann, bo, cy])
            try lattice.add(contentsOf: [stray])
            try lattice.add(contentsOf: [golf, polo, up])
            // Set after adding: unmanaged objects linking both ways would keep each other (and the file) alive.
            rex.owner = ann; rover.owner = ann; fido.owner = bo
        }
        return (ann, bo, cy)
    }
}
