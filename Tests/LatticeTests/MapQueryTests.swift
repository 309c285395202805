import Foundation
import XCTest
import Lattice

final class MQDog: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var weight: Double?
}

final class MQOwner: Object {
    @Persisted var name = ""
    @Persisted var dogsByName: Map<String, MQDog?>
    @Persisted var ratings: Map<String, Int>
}

/// A map of objects queried as Realm's is: `filter`, `where`, `sorted` and aggregates over its objects.
final class MapQueryTests: XCTestCase {
    private let types: [Object.Type] = [MQDog.self, MQOwner.self]

    func testAMapOfObjectsIsQueriedLikeAList() throws {
        let db = makeTempDatabase("map-queries")
        let unmanaged = MQOwner()
        let rex = try MQDog(value: ["name": "Rex", "age": 3, "weight": 20.0])
        unmanaged.dogsByName["rex"] = rex
        unmanaged.dogsByName["none"] = nil as MQDog?
        XCTAssertEqual(try unmanaged.dogsByName.max(ofProperty: "age") as Int?, 3, "aggregates of an unmanaged map")
        XCTAssertThrowsError(try unmanaged.dogsByName.filter("age > 1")) { error in
            guard case LatticeError.objectNotManaged = error else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(unmanaged.ratings.sorted(), [])

        do {
            let lattice = try db.open(types)
            try lattice.write {
                let owner = try lattice.create(MQOwner.self, value: ["name": "Ann"])
                owner.dogsByName["rex"] = rex
                owner.dogsByName["fido"] = try MQDog(value: ["name": "Fido", "age": 1, "weight": 8.5])
                owner.dogsByName["ace"] = try MQDog(value: ["name": "Ace", "age": 7])
                owner.dogsByName["gone"] = nil as MQDog?
                owner.ratings["a"] = 3
                owner.ratings["b"] = 1
                owner.ratings["c"] = 2
                // Another owner's dogs stay out of Ann's map's results.
                let bob = try lattice.create(MQOwner.self, value: ["name": "Bob"])
                bob.dogsByName["max"] = try MQDog(value: ["name": "Max", "age": 9])
            }
        }
        let lattice = try db.open(types)
        let map = try XCTUnwrap(lattice.objects(MQOwner.self).filter("name == 'Ann'").first).dogsByName
        XCTAssertEqual(try map.filter("age > 2").map(\.name).sorted(), ["Ace", "Rex"])
        XCTAssertEqual(try map.filter("age > %@", 0).count, 3, "nil values are no objects")
        XCTAssertEqual(map.where { $0.name.starts(with: "F") }.map(\.name), ["Fido"])
        XCTAssertEqual(try map.sorted(byKeyPath: "age", ascending: false).map(\.name), ["Ace", "Rex", "Fido"])
        XCTAssertEqual(try map.sorted(by: [SortDescriptor(keyPath: "name")]).map(\.name), ["Ace", "Fido", "Rex"])
        XCTAssertEqual(try map.min(ofProperty: "age") as Int?, 1)
        XCTAssertEqual(try map.max(ofProperty: "age") as Int?, 7)
        XCTAssertEqual(try map.sum(ofProperty: "age") as Int, 11)
        XCTAssertEqual(try map.average(ofProperty: "weight") as Double?, 14.25, "nil weights are skipped")
        XCTAssertThrowsError(try map.filter("nmae == 'x'"))
        XCTAssertThrowsError(try map.max(ofProperty: "nmae") as Int?)

        // Live: a dog added to the map joins the kept results.
        let puppies = try map.filter("age < 2")
        XCTAssertEqual(puppies.count, 1)
        try lattice.write { map["bit"] = try MQDog(value: ["name": "Bit", "age": 0]) }
        XCTAssertEqual(puppies.map(\.name), ["Bit", "Fido"], "key order")

        let ratings = try XCTUnwrap(map.lattice?.objects(MQOwner.self).first).ratings
        XCTAssertEqual(ratings.sorted(), [1, 2, 3])
        XCTAssertEqual(ratings.sorted(ascending: false), [3, 2, 1])
    }
}
