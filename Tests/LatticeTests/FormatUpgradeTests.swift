import Foundation
import XCTest
@testable import Lattice

// MARK: - The fixture's classes (their schema is stored in the fixture files: do not change them)

final class UpgradePerson: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var dogs: List<UpgradeDog>
    @Persisted var favourite: UpgradeDog?
    @Persisted var toys: MutableSet<UpgradeDog>
    @Persisted var byName: Map<String, UpgradeDog?>
    @Persisted var numbers: List<Int>
    @Persisted var address: UpgradeAddress?
}

final class UpgradeDog: Object {
    @Persisted var name = ""
    @Persisted(indexed: true) var age = 0
    @Persisted(originProperty: "dogs") var walkers: LinkingObjects<UpgradePerson>
    @Persisted(originProperty: "favourite") var fans: LinkingObjects<UpgradePerson>
}

final class UpgradeAddress: EmbeddedObject {
    @Persisted var street = ""
}

final class FormatUpgradeTests: XCTestCase {
    static let types: [Object.Type] = [UpgradePerson.self, UpgradeDog.self, UpgradeAddress.self]

    /// The fixtures under `Fixtures/` were written by this function, run by the code of the format they
    /// hold (`LATTICE_WRITE_FIXTURE=<path> swift test --filter testWriteFixture`); kept to show what they hold.
    func testWriteFixture() throws {
        guard let path = ProcessInfo.processInfo.environment["LATTICE_WRITE_FIXTURE"] else {
            throw XCTSkip("set LATTICE_WRITE_FIXTURE to write a fixture file")
        }
        let lattice = try Lattice(configuration: .init(fileURL: URL(fileURLWithPath: path), objectTypes: Self.types))
        try lattice.write {
            var dogs: [UpgradeDog] = []
            for i in 0..<300 {
                let dog = UpgradeDog()
                dog.name = "dog \(i)"
                dog.age = i % 17
                try lattice.add(dog)
                dogs.append(dog)
            }
            for p in 1...40 {
                let person = UpgradePerson()
                person.id = p
                person.name = "person \(p)"
                // Dog 0 is walked by every person, twice by the even ones; dog p walked by person p.
                person.dogs.append(dogs[0])
                person.dogs.append(dogs[p])
                if p % 2 == 0 { person.dogs.append(dogs[0]) }
                person.favourite = dogs[p % 5]
                person.toys.insert(dogs[100 + p % 3])
                person.byName["first"] = dogs[200 + p]
                person.byName["none"] = nil
                for n in 0..<(p == 1 ? 700 : p) { person.numbers.append(n * p) }
                let address = UpgradeAddress()
                address.street = "\(p) Main Street"
                person.address = address
                try lattice.add(person)
            }
        }
        // Some changes after the first commit: a removed link, a deleted dog, a deleted person.
        try lattice.write {
            let first = try XCTUnwrap(lattice.object(ofType: UpgradePerson.self, forPrimaryKey: 1))
            first.dogs.remove(at: 1)
            first.numbers.remove(at: 300)
            try lattice.delete(try lattice.objects(UpgradeDog.self).filter("name == 'dog 3'"))
            try lattice.delete(try XCTUnwrap(lattice.object(ofType: UpgradePerson.self, forPrimaryKey: 40)))
        }
        XCTAssertEqual(lattice.verify(), [])
    }
}
