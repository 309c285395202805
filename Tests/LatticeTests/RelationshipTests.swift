import Foundation
import XCTest
@testable import Lattice

// The car-repair example model (Person, RepairShop, Car, Repair, Sticker).
final class RPerson: Object {
    @Persisted var name = ""
}

final class RepairShop: Object {
    @Persisted var name = ""
    @Persisted var contact: RPerson?
    @Persisted(originProperty: "shop") var maintainedCars: LinkingObjects<Car>
}

final class Car: Object {
    @Persisted var brand = ""
    @Persisted var year = 0
    @Persisted var owner: RPerson?
    @Persisted var shop: RepairShop?
    @Persisted var repairs: List<Repair>
    @Persisted var plates: List<String>
    @Persisted var checkups: List<Date>
    @Persisted var stickers: List<String>
}

final class Repair: Object {
    @Persisted var date = Date(timeIntervalSince1970: 0)
    @Persisted var person: RPerson?
}

final class Sticker: Object {
    @Persisted(primaryKey: true) var id = ""
    @Persisted var text = ""
}

// Person and Dog: links, lists, sets, maps and backlinks.
final class Owner: Object {
    @Persisted var name = ""
    @Persisted var dogs: List<Pet>
    @Persisted var nicknames: List<String>
    @Persisted var tags: MutableSet<String>
    @Persisted var scores: Map<String, Double>
    @Persisted var address: Address?
    @Persisted var best: Pet?
    @Persisted var friends: MutableSet<Pet>
    @Persisted var petsByName: Map<String, Pet?>
    @Persisted var optionals: List<Int?>
    @Persisted var history: List<Address>
}

final class Pet: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var owner: Owner?
    @Persisted(originProperty: "dogs") var walkers: LinkingObjects<Owner>
    @Persisted(originProperty: "best") var fans: LinkingObjects<Owner>
}

final class Address: EmbeddedObject {
    @Persisted var city = ""
}

final class RTeam: Object {
    @Persisted(primaryKey: true) var id: Int64
    @Persisted var members: List<RMember>
}

final class RMember: Object {
    @Persisted(primaryKey: true) var id: Int64
    @Persisted var team: RTeam?
}

final class RelationshipTests: XCTestCase {
    var url: URL!
    var config: Lattice.Configuration!

    override func setUp() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("rel-\(UUID().uuidString).lattice")
        config = Lattice.Configuration(fileURL: url, objectTypes: [RPerson.self, RepairShop.self, Car.self, Repair.self, Sticker.self,
                                                                   Owner.self, Pet.self, Address.self, RTeam.self, RMember.self])
    }

    override func tearDown() {
        _ = try? Lattice.deleteFiles(for: config)
    }

    func open() throws -> Lattice { try Lattice(configuration: config) }

    /// `min`/`max`/`sum`/`average(ofProperty:)` of a managed List (an entry listed twice counts twice),
    /// MutableSet, LinkingObjects and `AnyLatticeCollection` read the property from the records; inside a
    /// write they see its uncommitted changes; an unmanaged List reads its objects; the same answers and
    /// errors as the objects' own values give.
    func testAggregatesByNameOfManagedCollections() throws {
        let lattice = try open()
        let (owner, shop) = try lattice.write { () -> (Owner, RepairShop) in
            let owner = try lattice.create(Owner.self, value: ["name": "o"])
            let shop = try lattice.create(RepairShop.self, value: ["name": "shop"])
            for i in 0..<300 {
                let pet = try lattice.create(Pet.self, value: ["name": "p\(i)", "age": (i * 37) % 101 - 20])
                owner.dogs.append(pet)
                if i % 3 == 0 { owner.dogs.append(pet) }
                if i % 2 == 0 { owner.friends.insert(pet) }
                if i % 5 != 0 { _ = try lattice.create(Car.self, value: ["brand": "c\(i)", "year": 1950 + (i * 53) % 70, "shop": shop]) }
            }
            return (owner, shop)
        }
        func check(_ label: String, _ ages: [Int], min: () throws -> Int?, max: () throws -> Int?, sum: () throws -> Int,
                   average: () throws -> Double?) throws {
            XCTAssertEqual(try min(), ages.min(), "\(label): min")
            XCTAssertEqual(try max(), ages.max(), "\(label): max")
            XCTAssertEqual(try sum(), ages.reduce(0, +), "\(label): sum")
            let mean = ages.isEmpty ? nil : Double(ages.reduce(0, +)) / Double(ages.count)
            XCTAssertEqual(try average(), mean, "\(label): average")
        }
        func checkAll(_ label: String) throws {
            let dogs = owner.dogs, friends = owner.friends, cars = shop.maintainedCars
            try check("\(label) List", dogs.map(\.age), min: { try dogs.min(ofProperty: "age") }, max: { try dogs.max(ofProperty: "age") },
                      sum: { try dogs.sum(ofProperty: "age") }, average: { try dogs.average(ofProperty: "age") })
            try check("\(label) MutableSet", friends.map(\.age), min: { try friends.min(ofProperty: "age") },
                      max: { try friends.max(ofProperty: "age") }, sum: { try friends.sum(ofProperty: "age") },
                      average: { try friends.average(ofProperty: "age") })
            let any = AnyLatticeCollection(owner.dogs)
            try check("\(label) AnyLatticeCollection", dogs.map(\.age), min: { try any.min(ofProperty: "age") },
                      max: { try any.max(ofProperty: "age") }, sum: { try any.sum(ofProperty: "age") },
                      average: { try any.average(ofProperty: "age") })
            try check("\(label) LinkingObjects", cars.map(\.year), min: { try cars.min(ofProperty: "year") },
                      max: { try cars.max(ofProperty: "year") }, sum: { try cars.sum(ofProperty: "year") },
                      average: { try cars.average(ofProperty: "year") })
        }
        try checkAll("committed")
        XCTAssertThrowsError(try shop.maintainedCars.min(ofProperty: "brand") as String?) { error in
            guard case let LatticeError.wrongType(className, property, _, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(className, "Car")
            XCTAssertEqual(property, "brand")
        }
        XCTAssertThrowsError(try owner.dogs.sum(ofProperty: "weight") as Int) { error in
            guard case let LatticeError.unknownProperty(className, property) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(className, "Pet")
            XCTAssertEqual(property, "weight")
        }
        try lattice.write {
            owner.dogs[5].age = 1_000
            owner.dogs.remove(at: 0)
            owner.dogs.append(try lattice.create(Pet.self, value: ["name": "new", "age": -500]))
            owner.friends.removeAll()
            shop.maintainedCars.first?.year = 3_000
            try checkAll("inside a write")
        }
        try checkAll("after the write")
        XCTAssertNil(try owner.friends.average(ofProperty: "age") as Double?)
        let unmanaged = Owner()
        for age in [3, 9, 4] { let pet = Pet(); pet.age = age; unmanaged.dogs.append(pet) }
        XCTAssertEqual(try unmanaged.dogs.max(ofProperty: "age") as Int?, 9)
        XCTAssertEqual(try unmanaged.dogs.average(ofProperty: "age") as Double?, 16.0 / 3)
    }

    func testSchemaDescribesRelationships() throws {
        let lattice = try open()
        let owner = try XCTUnwrap(lattice.schema["Owner"])
        XCTAssertEqual(owner["dogs"]?.collection, .list)
        XCTAssertEqual(owner["dogs"]?.type, .object)
        XCTAssertEqual(owner["dogs"]?.objectClassName, "Pet")
        XCTAssertEqual(owner["tags"]?.collection, .set)
        XCTAssertEqual(owner["scores"]?.collection, .map)
        XCTAssertEqual(owner["scores"]?.type, .double)
        XCTAssertEqual(owner["address"]?.objectClassName, "Address")
        XCTAssertTrue(lattice.schema["Address"]!.isEmbedded)
        let pet = try XCTUnwrap(lattice.schema["Pet"])
        XCTAssertEqual(pet["walkers"]?.type, .linkingObjects)
        XCTAssertEqual(pet["walkers"]?.originProperty, "dogs")
        XCTAssertEqual(pet["walkers"]?.description, "walkers: LinkingObjects<Owner>.dogs")
    }

    func testCarRepairFixtureRoundTrip() throws {
        let checkup = Date(timeIntervalSince1970: 1_700_000_000)
        do {
            let lattice = try open()
            try lattice.write {
                let ann = RPerson(); ann.name = "Ann"
                let shop = RepairShop(); shop.name = "Fix-It"; shop.contact = ann
                let car = Car(); car.brand = "Volvo"; car.year = 2020; car.owner = ann; car.shop = shop
                let repair = Repair(); repair.date = checkup; repair.person = ann
                car.repairs.append(repair)
                car.plates.append(contentsOf: ["AB-123", "CD-456"])
                car.checkups.append(checkup)
                car.stickers.append(contentsOf: ["eco", "eco"])
                let other = Car(); other.brand = "Saab"; other.shop = shop
                try lattice.add(car)
                try lattice.add(other)
                try lattice.add(Sticker(value: ["id": "eco", "text": "Eco friendly"]))
            }
        }
        let lattice = try open()
        XCTAssertEqual(lattice.objects(RPerson.self).count, 1, "Ann was added once through several links")
        XCTAssertEqual(lattice.objects(Car.self).count, 2)
        let car = try XCTUnwrap(lattice.objects(Car.self).first { $0.brand == "Volvo" })
        XCTAssertEqual(car.owner?.name, "Ann")
        XCTAssertEqual(car.shop?.name, "Fix-It")
        XCTAssertEqual(car.shop?.contact?.name, "Ann")
        XCTAssertEqual(car.owner, car.shop?.contact, "the same stored object through two paths is ==")
        XCTAssertEqual(Array(car.plates), ["AB-123", "CD-456"])
        XCTAssertEqual(Array(car.stickers), ["eco", "eco"], "duplicates allowed")
        XCTAssertEqual(Array(car.checkups), [checkup])
        XCTAssertEqual(car.repairs.count, 1)
        XCTAssertEqual(car.repairs[0].person?.name, "Ann")
        let shop = try XCTUnwrap(car.shop)
        XCTAssertEqual(Set(shop.maintainedCars.map(\.brand)), ["Volvo", "Saab"])
        XCTAssertEqual(lattice.object(ofType: Sticker.self, forPrimaryKey: "eco")?.text, "Eco friendly")
    }

    func testDeletingTargetNullifiesLinksAndLeavesLists() throws {
        let lattice = try open()
        try lattice.write {
            let ann = RPerson(); ann.name = "Ann"
            let car = Car(); car.owner = ann
            let repair = Repair(); repair.person = ann
            car.repairs.append(repair)
            car.repairs.append(repair)
            try lattice.add(car)
        }
        let car = try XCTUnwrap(lattice.objects(Car.self).first)
        XCTAssertEqual(car.repairs.count, 2)
        try lattice.write { try lattice.delete(car.owner!) }
        XCTAssertNil(car.owner)
        XCTAssertNil(car.repairs[0].person)
        XCTAssertEqual(lattice.objects(Repair.self).count, 1)
        try lattice.write { try lattice.delete(car.repairs[0]) }
        XCTAssertEqual(car.repairs.count, 0, "deleting an object removes every list entry of it")
        try lattice.write { try lattice.delete(car) }
        XCTAssertEqual(lattice.objects(Car.self).count, 0)
        let reopened = try open()
        XCTAssertEqual(reopened.objects(Car.self).count, 0)
        XCTAssertEqual(reopened.objects(RPerson.self).count, 0)
    }

    func testDeletingSourceLeavesTarget() throws {
        let lattice = try open()
        try lattice.write {
            let car = Car(); car.owner = RPerson()
            try lattice.add(car)
            try lattice.delete(car)
        }
        XCTAssertEqual(lattice.objects(RPerson.self).count, 1)
    }

    func testCyclesAreAddedOnce() throws {
        let lattice = try open()
        try lattice.write {
            let a = Owner(); a.name = "a"
            let dog = Pet(); dog.name = "d"; dog.owner = a
            a.dogs.append(dog)
            a.best = dog
            try lattice.add(a)
        }
        XCTAssertEqual(lattice.objects(Owner.self).count, 1)
        XCTAssertEqual(lattice.objects(Pet.self).count, 1)
        let dog = try XCTUnwrap(lattice.objects(Pet.self).first)
        XCTAssertEqual(dog.owner?.name, "a")
        XCTAssertEqual(dog.owner?.best, dog)
        XCTAssertEqual(dog.walkers.map(\.name), ["a"])
        XCTAssertEqual(dog.fans.count, 1)
    }

    func testListOperations() throws {
        let lattice = try open()
        let owner = Owner()
        owner.nicknames.append(contentsOf: ["a", "b", "c"])  // unmanaged list before add
        XCTAssertEqual(owner.nicknames.count, 3)
        try lattice.write { try lattice.add(owner) }
        let list = owner.nicknames
        XCTAssertTrue(list.isManaged)
        try lattice.write {
            list.insert("x", at: 1)                 // a x b c
            list.insert(contentsOf: ["y", "z"], at: 0) // y z a x b c
            list.move(from: 0, to: 5)               // z a x b c y
            list.swapAt(0, 1)                       // a z x b c y
            list.remove(at: 2)                      // a z b c y
            list.removeFirst()                      // z b c y
            list.removeLast()                       // z b c
            list.replace(index: 0, object: "q")     // q b c
            list[2] = "w"                           // q b w
            list.removeSubrange(1..<2)              // q w
        }
        XCTAssertEqual(Array(list), ["q", "w"])
        XCTAssertEqual(list.first, "q")
        XCTAssertEqual(list.last, "w")
        XCTAssertEqual(list.index(of: "w"), 1)
        XCTAssertNil(list.index(of: "nope"))
        try lattice.write { list.removeAll() }
        XCTAssertTrue(list.isEmpty)
        try lattice.write { owner.nicknames = { let l = List<String>(); l.append("new"); return l }() }
        XCTAssertEqual(Array(try open().objects(Owner.self).first!.nicknames), ["new"])
    }

    func testListsOfOptionalsAndObjectsWithDuplicates() throws {
        let lattice = try open()
        let owner = Owner()
        let rex = Pet(); rex.name = "Rex"
        try lattice.write {
            owner.optionals.append(contentsOf: [1, nil, 3])
            owner.dogs.append(rex)
            owner.dogs.append(rex)
            try lattice.add(owner)
        }
        XCTAssertEqual(Array(owner.optionals), [1, nil, 3])
        XCTAssertEqual(owner.dogs.count, 2)
        XCTAssertEqual(owner.dogs[0], owner.dogs[1])
        XCTAssertEqual(rex.walkers.count, 2, "an object twice in a list links twice")
        try lattice.write { owner.dogs.remove(at: 0) }
        XCTAssertEqual(rex.walkers.count, 1)
        XCTAssertEqual(lattice.objects(Pet.self).count, 1, "removing from a list does not delete")
        try lattice.write { owner.optionals[1] = 2 }
        XCTAssertEqual(Array(try open().objects(Owner.self).first!.optionals), [1, 2, 3])
    }

    /// Appending one entry at a time (past chunk boundaries, to two lists in turn) keeps every read in
    /// step: the decoded directory a handle keeps between reads never outlives a write, a rollback or
    /// another handle's commit it has not refreshed to.
    func testListsGrownOneEntryAtATimeReadBackExactly() throws {
        let lattice = try open()
        let first = Owner()
        let second = Owner()
        try lattice.write {
            try lattice.add(first)
            try lattice.add(second)
        }
        try lattice.write {
            for i in 0..<600 {
                first.nicknames.append("a\(i)")
                XCTAssertEqual(first.nicknames.count, i + 1)
                XCTAssertEqual(first.nicknames[i], "a\(i)")
                if i % 3 == 0 { second.nicknames.append("b\(i)") }
                XCTAssertEqual(first.nicknames.last, "a\(i)")
            }
        }
        XCTAssertEqual(Array(first.nicknames), (0..<600).map { "a\($0)" })
        XCTAssertEqual(Array(second.nicknames), stride(from: 0, to: 600, by: 3).map { "b\($0)" })
        // Rolled back: the appends made in the write are gone, for reads in the handle too.
        try lattice.beginWrite()
        for i in 0..<300 { first.nicknames.append("x\(i)") }
        XCTAssertEqual(first.nicknames.count, 900)
        lattice.cancelWrite()
        XCTAssertEqual(first.nicknames.count, 600)
        XCTAssertEqual(first.nicknames[599], "a599")
        // Another handle's appends show after a refresh, not before.
        let other = try open()
        let otherFirst = try XCTUnwrap(other.objects(Owner.self).first { $0.nicknames.count == 600 })
        try other.write { for i in 600..<700 { otherFirst.nicknames.append("a\(i)") } }
        XCTAssertEqual(first.nicknames.count, 600)
        lattice.refresh()
        XCTAssertEqual(first.nicknames.count, 700)
        XCTAssertEqual(first.nicknames[699], "a699")
        let reopened = try open()
        let lists = reopened.objects(Owner.self).map { Array($0.nicknames) }.sorted { $0.count > $1.count }
        XCTAssertEqual(lists[0], (0..<700).map { "a\($0)" })
        XCTAssertEqual(lists[1], stride(from: 0, to: 600, by: 3).map { "b\($0)" })
    }

    func testLargeListAndBacklinks() throws {
        let lattice = try open()
        let owner = Owner()
        try lattice.write {
            try lattice.add(owner)
            owner.nicknames.append(contentsOf: (0..<100_000).map { "n\($0)" })
        }
        XCTAssertEqual(owner.nicknames.count, 100_000)
        XCTAssertEqual(owner.nicknames[99_999], "n99999")
        XCTAssertEqual(owner.nicknames[50_000], "n50000")
        try lattice.write {
            owner.nicknames.append("last")
            owner.nicknames.remove(at: 0)
            owner.nicknames.insert("mid", at: 50_000)
        }
        let reopened = try open()
        let list = try XCTUnwrap(reopened.objects(Owner.self).first).nicknames
        XCTAssertEqual(list.count, 100_001)
        XCTAssertEqual(list[0], "n1")
        XCTAssertEqual(list[50_000], "mid")
        XCTAssertEqual(list[100_000], "last")
        XCTAssertEqual(Array(list).count, 100_001)

        let target = Pet()
        try lattice.write {
            for i in 0..<10_000 {
                let o = Owner(); o.name = "o\(i)"; o.best = target
                try lattice.add(o)
            }
        }
        XCTAssertEqual(target.fans.count, 10_000)
        XCTAssertEqual(Set(target.fans.map(\.name)).count, 10_000)
        try lattice.write { try lattice.delete(target) }
        XCTAssertTrue(lattice.objects(Owner.self).allSatisfy { $0.best == nil })
    }

    func testListEditsMatchAnArrayAcrossChunksAndReopening() throws {
        let lattice = try open()
        let owner = Owner()
        try lattice.write { try lattice.add(owner) }
        var model: [String] = []
        var rng = SystemRandomNumberGenerator()
        // Rounds of edits anywhere in a list that grows past many chunks; some entries are large (kilobytes),
        // so chunks also split by size.
        for round in 0..<8 {
            try lattice.write {
                for step in 0..<400 {
                    let value = step % 97 == 0 ? String(repeating: "x", count: 3_000 + step) : "r\(round)s\(step)"
                    switch Int.random(in: 0..<10, using: &rng) {
                    case 0..<4:
                        owner.nicknames.append(value)
                        model.append(value)
                    case 4..<6:
                        let i = Int.random(in: 0...model.count, using: &rng)
                        owner.nicknames.insert(value, at: i)
                        model.insert(value, at: i)
                    case 6..<8 where !model.isEmpty:
                        let i = Int.random(in: 0..<model.count, using: &rng)
                        owner.nicknames[i] = value
                        model[i] = value
                    case 8 where !model.isEmpty:
                        let i = Int.random(in: 0..<model.count, using: &rng)
                        let n = min(model.count - i, Int.random(in: 1...300, using: &rng))
                        owner.nicknames.removeSubrange(i..<i + n)
                        model.removeSubrange(i..<i + n)
                    default:
                        let values = (0..<Int.random(in: 1...600, using: &rng)).map { "\(value)-\($0)" }
                        owner.nicknames.append(contentsOf: values)
                        model.append(contentsOf: values)
                    }
                    XCTAssertEqual(owner.nicknames.count, model.count)
                }
            }
            XCTAssertEqual(Array(owner.nicknames), model, "round \(round)")
            for _ in 0..<50 where !model.isEmpty {
                let i = Int.random(in: 0..<model.count, using: &rng)
                XCTAssertEqual(owner.nicknames[i], model[i])
            }
        }
        XCTAssertEqual(lattice.verify(), [])
        let reopened = try open()
        XCTAssertEqual(Array(try XCTUnwrap(reopened.objects(Owner.self).first).nicknames), model)
    }

    func testAppendsStoreTheirListDirectoryBeforeAnythingElseReadsIt() throws {
        let lattice = try open()
        let first = Owner()
        let second = Owner()
        try lattice.write {
            try lattice.add(first)
            try lattice.add(second)
        }
        try lattice.write {
            for i in 0..<300 { first.nicknames.append("a\(i)") }   // the directory is left unstored
            for i in 0..<300 { second.nicknames.append("b\(i)") }  // first's is stored, second's left
            for i in 300..<600 { first.nicknames.append("a\(i)") }
            first.nicknames[10] = "changed"                         // a replacement keeps it unstored
            XCTAssertEqual(first.nicknames.count, 600)
            XCTAssertEqual(second.nicknames.count, 300)
            XCTAssertEqual(lattice.verify(), [], "verify() inside the write stores it first")
            first.nicknames.append("last")
        }
        let reopened = try open()
        let lists = reopened.objects(Owner.self).map { Array($0.nicknames) }.sorted { $0.count > $1.count }
        var expected = (0..<600).map { "a\($0)" } + ["last"]
        expected[10] = "changed"
        XCTAssertEqual(lists[0], expected)
        XCTAssertEqual(lists[1], (0..<300).map { "b\($0)" })
        XCTAssertEqual(reopened.verify(), [])
        // A cancelled write leaves nothing of its appends, and the next write does not store them.
        try lattice.beginWrite()
        for i in 0..<50 { second.nicknames.append("x\(i)") }
        lattice.cancelWrite()
        try lattice.write { first.nicknames.remove(at: 0) }
        XCTAssertEqual(try open().objects(Owner.self).map { $0.nicknames.count }.sorted(), [300, 600])
        // Appends then deleting everything in the same write.
        try lattice.write {
            for i in 0..<10 { first.nicknames.append("y\(i)") }
            try lattice.deleteAll()
        }
        XCTAssertEqual(try open().objects(Owner.self).count, 0)
        XCTAssertEqual(lattice.verify(), [])
    }

    func testBacklinkCountsFollowEveryKindOfLink() throws {
        let lattice = try open()
        let target = Pet()
        let other = Pet()
        var owners: [Owner] = []
        try lattice.write {
            try lattice.add(target)
            try lattice.add(other)
            for i in 0..<300 {
                let o = Owner()
                o.name = "o\(i)"
                try lattice.add(o)
                owners.append(o)
            }
        }
        var walkers = 0
        var fans = 0
        try lattice.write {
            for (i, o) in owners.enumerated() {
                // Up to three links from one list, some to another pet in between.
                for _ in 0..<(i % 4) { o.dogs.append(target); o.dogs.append(other); walkers += 1 }
                if i % 3 == 0 { o.best = target; fans += 1 }
            }
        }
        XCTAssertEqual(target.walkers.count, walkers)
        XCTAssertEqual(Array(target.walkers).count, walkers)
        XCTAssertEqual(target.fans.count, fans)
        try lattice.write {
            for o in owners.prefix(100) {
                if let i = o.dogs.index(of: target) { o.dogs.remove(at: i); walkers -= 1 }
                if o.best != nil { o.best = other; fans -= 1 }
            }
            for o in owners.suffix(50) {
                walkers -= o.dogs.filter { $0.isSameObject(as: target) }.count
                if o.best != nil { fans -= 1 }
                try lattice.delete(o)
            }
        }
        XCTAssertEqual(target.walkers.count, walkers)
        XCTAssertEqual(target.walkers.map(\.name).count, walkers)
        XCTAssertEqual(target.fans.count, fans)
        XCTAssertEqual(other.fans.count, owners.prefix(100).filter { $0.best != nil }.count)
        XCTAssertEqual(lattice.verify(), [])
        let reopened = try open()
        let pets = reopened.objects(Pet.self).sorted { $0.walkers.count > $1.walkers.count }
        XCTAssertEqual(pets.map { $0.walkers.count }.max(), max(walkers, other.walkers.count))
        // Deleting the target removes every entry naming it: the counts go with it.
        try lattice.write { try lattice.delete(target) }
        XCTAssertTrue(lattice.objects(Owner.self).allSatisfy { $0.best == nil || $0.best!.isSameObject(as: other) })
        XCTAssertEqual(lattice.verify(), [])
    }

    func testAppendingStoredObjectsOneAtATimeKeepsListBacklinksAndOwnerCurrent() throws {
        let lattice = try open()
        let owner = Owner()
        owner.name = "first"
        try lattice.write {
            try lattice.add(owner)
            for i in 0..<200 { try lattice.add(try Pet(value: ["name": "p\(i)"])) }
        }
        let pets = Array(lattice.objects(Pet.self))
        try lattice.write {
            for pet in pets { owner.dogs.append(pet) }
            // A second and third link from the same list to one pet, and one more to another.
            owner.dogs.append(pets[7])
            owner.dogs.append(pets[7])
            owner.dogs.append(pets[9])
            // The owner's record written through another instance: the first one reads the new value.
            lattice.objects(Owner.self).first?.name = "renamed"
            owner.dogs.append(pets[0])
            XCTAssertEqual(owner.name, "renamed")
            // Several links at once from a list that had none to the pet, and from one that had one.
            let other = Owner()
            try lattice.add(other)
            other.dogs.append(objectsIn: [pets[3], pets[3], pets[3]])
            other.dogs.append(objectsIn: [pets[3], pets[3]])
        }
        XCTAssertEqual(pets[3].walkers.count, 6)
        XCTAssertEqual(owner.dogs.count, 204)
        XCTAssertEqual(pets[7].walkers.count, 3)
        XCTAssertEqual(pets[9].walkers.count, 2)
        XCTAssertEqual(pets[0].walkers.count, 2)
        XCTAssertEqual(pets[100].walkers.count, 1)
        XCTAssertEqual(lattice.verify(), [])

        // A stored object deleted through another instance cannot be appended: the write fails as a whole.
        let gone = pets[50]
        try lattice.write { try lattice.delete(lattice.objects(Pet.self).filter("name == 'p50'").first!) }
        assertLatticeError(try lattice.write {
            owner.dogs.append(pets[60])
            owner.dogs.append(gone)
        }, .objectInvalidated(className: "Pet"))
        XCTAssertEqual(owner.dogs.count, 203)   // the deletion took its entry; the failed write added none
        XCTAssertEqual(pets[60].walkers.count, 1)

        let reopened = try open()
        let stored = try XCTUnwrap(reopened.objects(Owner.self).first)
        XCTAssertEqual(stored.name, "renamed")
        XCTAssertEqual(stored.dogs.map(\.name), owner.dogs.map(\.name))
        XCTAssertEqual(stored.dogs.filter { $0.name == "p7" }.count, 3)
        XCTAssertEqual(reopened.verify(), [])
    }

    func testListAppendsThatFillTheMapGrowItAndLoseNothing() throws {
        config.initialMapSize = 1 << 20
        let lattice = try open()
        let owner = Owner()
        let pets = try (0..<300).map { i in try Pet(value: ["name": "pet \(i)"]) }
        try lattice.write {
            try lattice.add(owner)
            for pet in pets { try lattice.add(pet) }
        }
        // Each append rewrites the list's last chunk in place; the map fills several times in this write.
        var names: [String] = []
        try lattice.write {
            for i in 0..<40_000 {
                let name = "nickname \(i) " + String(repeating: "x", count: i % 50)
                owner.nicknames.append(name)
                names.append(name)
                if i % 10 == 0 { owner.dogs.append(pets[(i / 10) % pets.count]) }
            }
        }
        XCTAssertGreaterThan(try lattice.fileInfo().mapSize, 1 << 20)
        let reopened = try open()
        let stored = try XCTUnwrap(reopened.objects(Owner.self).first)
        XCTAssertEqual(Array(stored.nicknames), names)
        XCTAssertEqual(stored.dogs.count, 4_000)
        XCTAssertEqual(stored.dogs.map(\.name).prefix(3), ["pet 0", "pet 1", "pet 2"])
        XCTAssertEqual(reopened.objects(Pet.self).filter { $0.walkers.count == 14 }.count, 100)
        XCTAssertEqual(reopened.verify(), [])
    }

    func testAppendsToChunksLargerThanAPageReadBackExactly() throws {
        let lattice = try open()
        let owner = Owner()
        // Entries of 1-5 KiB: a chunk soon spans several pages (LMDB's overflow pages), grows in place or
        // moves with each append, and splits by size at 64 KiB.
        let texts = (0..<120).map { i in String(repeating: Character(UnicodeScalar(UInt8(65 + i % 26))), count: 1_024 * (1 + i % 5)) }
        try lattice.write { try lattice.add(owner) }
        for batch in stride(from: 0, to: texts.count, by: 40) {
            try lattice.write { for text in texts[batch..<batch + 40] { owner.nicknames.append(text) } }
        }
        XCTAssertEqual(Array(owner.nicknames), texts)
        let reopened = try open()
        let stored = try XCTUnwrap(reopened.objects(Owner.self).first)
        XCTAssertEqual((0..<stored.nicknames.count).map { stored.nicknames[$0] }, texts)
        XCTAssertEqual(reopened.verify(), [])
    }

    func testValueListReadByPositionStaysCurrentAcrossChunksWritesAndViews() throws {
        let lattice = try open()
        let owner = Owner()
        var model = (0..<1_000).map { "n\($0)" }
        try lattice.write {
            try lattice.add(owner)
            for name in model { owner.nicknames.append(name) }
        }
        let list = owner.nicknames
        // Index loops both ways over four chunks, and the collection algorithms that read by position.
        XCTAssertEqual((0..<list.count).map { list[$0] }, model)
        XCTAssertEqual((0..<list.count).reversed().map { list[$0] }, Array(model.reversed()))
        XCTAssertEqual(Array(list.reversed()), Array(model.reversed()))
        XCTAssertEqual(list.last { $0.hasSuffix("7") }, "n997")
        XCTAssertEqual(list.firstIndex { $0 == "n600" }, 600)

        // A write after a read by position: the next read sees it, in the chunk read before and elsewhere.
        XCTAssertEqual(list[300], "n300")
        try lattice.write { list[301] = "changed"; list.append("last") }
        model[301] = "changed"
        model.append("last")
        XCTAssertEqual(list[301], "changed")
        XCTAssertEqual(list[1_000], "last")
        // Inside a write: entries move under reads by position.
        try lattice.write {
            XCTAssertEqual(list[302], "n302")
            list.insert("front", at: 0)
            XCTAssertEqual(list[0], "front")
            XCTAssertEqual(list[302], "changed")
            list.remove(at: 0)
            XCTAssertEqual(list[302], "n302")
        }
        XCTAssertEqual((0..<list.count).map { list[$0] }, model)

        // Another handle's commit, seen after a refresh.
        let other = try open()
        try other.write { other.objects(Owner.self).first!.nicknames[500] = "from other" }
        lattice.refresh()
        model[500] = "from other"
        XCTAssertEqual(list[500], "from other")
        XCTAssertEqual((0..<list.count).map { list[$0] }, model)

        // A frozen list keeps its version while the live one moves on.
        let frozen = list.freeze()
        try lattice.write { list[0] = "live" }
        XCTAssertEqual(frozen[0], "n0")
        XCTAssertEqual((0..<frozen.count).map { frozen[$0] }, model)
        XCTAssertEqual(list[0], "live")
    }

    func testObjectsAddedLinkingToAnObjectAddedInTheSameWrite() throws {
        let lattice = try open()
        try lattice.write {
            let listed = RTeam()
            listed.id = 1
            let linked = RTeam()
            linked.id = 2
            try lattice.add(listed)
            try lattice.add(linked)
            for i in 1...2_000 {
                let member = RMember()
                member.id = Int64(i)
                if i % 5 == 2 { member.team = linked }
                try lattice.add(member)
                if i % 5 == 0 { listed.members.append(member) }
            }
        }
        XCTAssertEqual(lattice.objects(RMember.self).filter { $0.team?.id == 2 }.count, 400)
        XCTAssertEqual(lattice.object(ofType: RTeam.self, forPrimaryKey: Int64(1))?.members.count, 400)
        XCTAssertEqual(lattice.verify(), [])
    }

    func testMutableSet() throws {
        let lattice = try open()
        let owner = Owner()
        owner.tags.insert("a")
        owner.tags.insert("a")
        XCTAssertEqual(owner.tags.count, 1)
        try lattice.write { try lattice.add(owner) }
        let tags = owner.tags
        try lattice.write {
            tags.insert("b")
            tags.insert("b")
            tags.formUnion(["c", "d"])
            tags.remove("a")
        }
        XCTAssertEqual(Set(tags), ["b", "c", "d"])
        XCTAssertTrue(tags.contains("c"))
        try lattice.write { tags.formIntersection(["c", "d", "e"]) }
        XCTAssertEqual(Set(tags), ["c", "d"])
        try lattice.write { tags.subtract(["c"]) }
        XCTAssertEqual(Set(try open().objects(Owner.self).first!.tags), ["d"])

        let rex = Pet()
        try lattice.write {
            owner.friends.insert(rex)
            owner.friends.insert(rex)
        }
        XCTAssertEqual(owner.friends.count, 1)
        try lattice.write { try lattice.delete(rex) }
        XCTAssertEqual(owner.friends.count, 0, "deleting an object removes it from sets")
    }

    func testMap() throws {
        let lattice = try open()
        let owner = Owner()
        owner.scores["math"] = 1.5
        try lattice.write { try lattice.add(owner) }
        try lattice.write {
            owner.scores["art"] = 2.5
            owner.scores["math"] = 3.0
        }
        XCTAssertEqual(owner.scores["math"], 3.0)
        XCTAssertEqual(owner.scores.count, 2)
        XCTAssertEqual(owner.scores.keys, ["art", "math"])
        try lattice.write { owner.scores["art"] = nil }
        XCTAssertNil(owner.scores["art"])
        XCTAssertEqual(Array(try open().objects(Owner.self).first!.scores.map(\.key)), ["math"])

        let rex = Pet(); rex.name = "Rex"
        try lattice.write { owner.petsByName["rex"] = rex }
        XCTAssertEqual(owner.petsByName["rex"]??.name, "Rex")
        try lattice.write { try lattice.delete(rex) }
        XCTAssertEqual(owner.petsByName.count, 1, "the key stays")
        XCTAssertEqual(owner.petsByName.keys, ["rex"])
        XCTAssertNil(owner.petsByName["rex"]!, "with nil")
    }

    func testEmbeddedObjects() throws {
        let lattice = try open()
        let owner = Owner()
        owner.address = Address(); owner.address?.city = "Oslo"
        owner.history.append({ let a = Address(); a.city = "Rome"; return a }())
        try lattice.write { try lattice.add(owner) }
        XCTAssertEqual(owner.address?.city, "Oslo")
        XCTAssertEqual(owner.history.first?.city, "Rome")
        XCTAssertEqual(lattice.objects(Address.self).count, 0, "embedded objects are not queried on their own")
        try lattice.write { owner.address = { let a = Address(); a.city = "Paris"; return a }() }
        XCTAssertEqual(owner.address?.city, "Paris")
        // Only the new embedded object remains (the old one was deleted with its slot).
        let addresses = try lattice.env.withReadTransaction { try $0.count(lattice.classInfo(Address.self)!.objectsTable) }
        XCTAssertEqual(addresses, 2)
        let other = Owner()
        try lattice.beginWrite()
        try lattice.add(other)
        other.address = owner.address
        XCTAssertThrowsError(try lattice.commitWrite()) { error in
            guard case LatticeError.embeddedObject = error else { return XCTFail("\(error)") }
        }
        XCTAssertThrowsError(try lattice.write { try lattice.add(Address()) })
        try lattice.write { try lattice.delete(owner) }
        let left = try lattice.env.withReadTransaction { try $0.count(lattice.classInfo(Address.self)!.objectsTable) }
        XCTAssertEqual(left, 0, "embedded objects are deleted with their parent")
    }

    /// Embedded objects move within their List, as in Realm: `move(from:to:)`, `swapAt` and
    /// `move(fromOffsets:toOffset:)` keep each object (none deleted, none re-parented), and a List
    /// observer sees moves as deletions plus insertions.
    func testEmbeddedObjectsMoveWithinTheirList() throws {
        let lattice = try open()
        let owner = Owner()
        for city in ["a", "b", "c", "d"] { owner.history.append({ let a = Address(); a.city = city; return a }()) }
        try lattice.write { try lattice.add(owner) }
        let first = try XCTUnwrap(owner.history.first)
        var changes: [[Int]] = []
        let token = owner.history.observe { if case let .update(_, d, i, _) = $0 { changes.append(d + [-1] + i) } }
        lattice.refresh()
        try lattice.write { owner.history.move(from: 0, to: 2) }
        lattice.refresh()
        XCTAssertEqual(changes, [[0, -1, 2]])
        XCTAssertEqual(owner.history.map(\.city), ["b", "c", "a", "d"])
        XCTAssertFalse(first.isInvalidated, "the moved object is the one it was")
        XCTAssertEqual(first.city, "a")
        try lattice.write { owner.history.swapAt(0, 3) }
        XCTAssertEqual(owner.history.map(\.city), ["d", "c", "a", "b"])
        try lattice.write { owner.history.move(fromOffsets: IndexSet([0, 2]), toOffset: 1) }
        XCTAssertEqual(owner.history.map(\.city), ["c", "a", "d", "b"], "Realm's order for several offsets")
        token.invalidate()
        let addresses = try lattice.env.withReadTransaction { try $0.count(lattice.classInfo(Address.self)!.objectsTable) }
        XCTAssertEqual(addresses, 4, "no embedded object was deleted or added")
        XCTAssertEqual(lattice.verify(), [])
        let reopened = try open()
        XCTAssertEqual(try XCTUnwrap(reopened.objects(Owner.self).first).history.map(\.city), ["c", "a", "d", "b"])
    }

    func testLinkErrors() throws {
        let lattice = try open()
        let otherURL = FileManager.default.temporaryDirectory.appendingPathComponent("rel-other-\(UUID().uuidString).lattice")
        var otherConfig = config!
        otherConfig.fileURL = otherURL
        defer { _ = try? Lattice.deleteFiles(for: otherConfig) }
        let other = try Lattice(configuration: otherConfig)
        let foreign = RPerson()
        try other.write { try other.add(foreign) }
        let car = Car()
        car.owner = foreign
        XCTAssertThrowsError(try lattice.write { try lattice.add(car) }) { error in
            XCTAssertEqual(error as? LatticeError, .objectFromAnotherLattice(className: "RPerson"))
        }
        XCTAssertEqual(lattice.objects(Car.self).count, 0, "nothing of the failed write is kept")
    }

    func testAggregates() throws {
        let lattice = try open()
        let owner = Owner()
        for (i, name) in ["a", "b", "c"].enumerated() {
            let p = Pet(); p.name = name; p.age = (i + 1) * 10
            owner.dogs.append(p)
        }
        try lattice.write { try lattice.add(owner) }
        XCTAssertEqual(try owner.dogs.min(ofProperty: "age") as Int?, 10)
        XCTAssertEqual(try owner.dogs.max(ofProperty: "age") as Int?, 30)
        XCTAssertEqual(try owner.dogs.sum(ofProperty: "age") as Int, 60)
        XCTAssertEqual(try owner.dogs.average(ofProperty: "age") as Double?, 20)
        XCTAssertThrowsError(try owner.dogs.sum(ofProperty: "name") as Int) { error in
            guard case LatticeError.wrongType(_, "name", _, _) = error else { return XCTFail("\(error)") }
        }
        try lattice.write { owner.optionals.append(contentsOf: [1, 2, 6]) }
        let values = List<Double>(); values.append(contentsOf: [1, 2, 3])
        XCTAssertEqual(values.sum(), 6)
        XCTAssertEqual(values.average(), 2)
        XCTAssertEqual(values.min(), 1)
        XCTAssertEqual(values.max(), 3)
    }

    func testDescriptions() throws {
        let lattice = try open()
        let owner = Owner(); owner.name = "Ann"
        let rex = Pet(); rex.name = "Rex"
        owner.dogs.append(rex)
        try lattice.write { try lattice.add(owner) }
        XCTAssertTrue(owner.dogs.description.hasPrefix("List<Pet> [\n\t[0] Pet { name = Rex"), owner.dogs.description)
    }
}

final class RelationshipMoreTests: XCTestCase {
    func makeConfig() -> Lattice.Configuration {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("rel2-\(UUID().uuidString).lattice")
        return Lattice.Configuration(fileURL: url, objectTypes: [RPerson.self, RepairShop.self, Car.self, Repair.self, Sticker.self,
                                                                 Owner.self, Pet.self, Address.self])
    }

    func testDescriptionsFollowLinksOneLevelAndSurviveCycles() throws {
        let config = makeConfig()
        defer { _ = try? Lattice.deleteFiles(for: config) }
        let lattice = try Lattice(configuration: config)
        let owner = Owner(); owner.name = "Ann"
        let rex = Pet(); rex.name = "Rex"; rex.owner = owner
        owner.dogs.append(rex)
        owner.best = rex
        XCTAssertTrue(rex.description.contains("owner = Owner {...}"), rex.description)  // unmanaged cycle
        try lattice.write { try lattice.add(owner) }
        XCTAssertTrue(rex.description.hasPrefix("Pet { name = Rex; age = 0; owner = Owner {...}; walkers = LinkingObjects<Owner> [Owner {...}]"),
                      rex.description)
        XCTAssertTrue(owner.description.contains("dogs = List<Pet> [Pet {...}]"), owner.description)
    }

    func testUnmanagedCyclesAreFreedAfterAdd() throws {
        let config = makeConfig()
        defer { _ = try? Lattice.deleteFiles(for: config) }
        weak var weakOwner: Owner?
        weak var weakPet: Pet?
        weak var weakLattice: Lattice?
        do {
            let lattice = try Lattice(configuration: config)
            weakLattice = lattice
            let ann = Owner(); ann.name = "Ann"
            let rex = Pet(); rex.name = "Rex"
            rex.owner = ann          // two-way links made while both are unmanaged
            ann.dogs.append(rex)
            weakOwner = ann
            weakPet = rex
            try lattice.write { try lattice.add(ann) }
            XCTAssertEqual(rex.owner, ann)
            XCTAssertEqual(ann.dogs.first, rex)
        }
        XCTAssertNil(weakOwner, "added objects do not keep each other alive")
        XCTAssertNil(weakPet)
        XCTAssertNil(weakLattice, "so the handle closes")
        XCTAssertTrue(try Lattice.deleteFiles(for: config), "and the file can be deleted")
    }

    func testCreateWithNestedValuesBuildsLinksAndLists() throws {
        let config = makeConfig()
        defer { _ = try? Lattice.deleteFiles(for: config) }
        let lattice = try Lattice(configuration: config)
        try lattice.write {
            try lattice.create(Car.self, value: ["brand": "Volvo", "owner": ["name": "Ann"], "plates": ["A", "B"],
                                                 "repairs": [["person": ["name": "Bo"]]]])
        }
        let car = try XCTUnwrap(lattice.objects(Car.self).first)
        XCTAssertEqual(car.owner?.name, "Ann")
        XCTAssertEqual(Array(car.plates), ["A", "B"])
        XCTAssertEqual(car.repairs.first?.person?.name, "Bo")
        XCTAssertEqual(lattice.objects(RPerson.self).count, 2)
    }

    func testAddReachesThroughSetsAndMaps() throws {
        let config = makeConfig()
        defer { _ = try? Lattice.deleteFiles(for: config) }
        let lattice = try Lattice(configuration: config)
        let owner = Owner()
        owner.friends.insert(Pet())
        owner.petsByName["x"] = Pet()
        try lattice.write { try lattice.add(owner) }
        XCTAssertEqual(lattice.objects(Pet.self).count, 2)
        let reopened = try Lattice(configuration: config)
        let again = try XCTUnwrap(reopened.objects(Owner.self).first)
        XCTAssertEqual(again.friends.count, 1)
        XCTAssertNotNil(again.petsByName["x"] ?? nil)
    }

    func testDeletingAListsObjects() throws {
        let config = makeConfig()
        defer { _ = try? Lattice.deleteFiles(for: config) }
        let lattice = try Lattice(configuration: config)
        let owner = Owner()
        for i in 0..<5 { let p = Pet(); p.age = i; owner.dogs.append(p) }
        try lattice.write { try lattice.add(owner) }
        try lattice.write { try lattice.delete(owner.dogs) }
        XCTAssertEqual(owner.dogs.count, 0)
        XCTAssertEqual(lattice.objects(Pet.self).count, 0)
    }

    /// A List holding an object twice (and an array naming one object through two instances) deletes it
    /// once; the rest of the write stands.
    func testDeletingObjectsHeldTwice() throws {
        let config = makeConfig()
        defer { _ = try? Lattice.deleteFiles(for: config) }
        do {
            let lattice = try Lattice(configuration: config)
            let owner = Owner()
            let twice = Pet(), once = Pet(), kept = Pet()
            owner.dogs.append(objectsIn: [twice, once, twice])
            try lattice.write { try lattice.add(owner); try lattice.add(kept) }
            try lattice.write { try lattice.delete(owner.dogs) }
            XCTAssertEqual(owner.dogs.count, 0)
            XCTAssertEqual(lattice.objects(Pet.self).count, 1)
            let again = try XCTUnwrap(lattice.objects(Pet.self).first)
            try lattice.write { try lattice.delete([kept, again]) }
            // The same List read through another handle on the file.
            let twice2 = Pet()
            try lattice.write { owner.dogs.append(objectsIn: [twice2, twice2]) }
            let other = try Lattice(configuration: config)
            let otherList = try XCTUnwrap(other.objects(Owner.self).first).dogs
            XCTAssertEqual(otherList.count, 2)
            try lattice.write { try lattice.delete(otherList) }
        }
        XCTAssertEqual(try Lattice(configuration: config).objects(Pet.self).count, 0)
    }

    func testManagedListOutsideWriteAndWrongFileFailTheTransaction() throws {
        let config = makeConfig()
        defer { _ = try? Lattice.deleteFiles(for: config) }
        let lattice = try Lattice(configuration: config)
        var otherConfig = makeConfig()
        otherConfig.fileURL = otherConfig.fileURL!.deletingLastPathComponent().appendingPathComponent("rel2-o-\(UUID().uuidString).lattice")
        defer { _ = try? Lattice.deleteFiles(for: otherConfig) }
        let other = try Lattice(configuration: otherConfig)
        let foreign = Pet()
        try other.write { try other.add(foreign) }
        let owner = Owner()
        try lattice.write { try lattice.add(owner) }
        XCTAssertThrowsError(try lattice.write { owner.dogs.append(foreign) }) { error in
            XCTAssertEqual(error as? LatticeError, .objectFromAnotherLattice(className: "Pet"))
        }
        XCTAssertEqual(owner.dogs.count, 0, "the failed transaction was rolled back")
    }

    func testInvalidSchemas() throws {
        final class BadLink: Object { @Persisted var target: Pet? }
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("rel-bad-\(UUID().uuidString).lattice")
        XCTAssertThrowsError(try Lattice(configuration: .init(fileURL: url, objectTypes: [BadLink.self]))) { error in
            guard case let LatticeError.invalidSchema(className, reason) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(className, "BadLink")
            XCTAssertTrue(reason.contains("'Pet'"), reason)
        }
        final class BadOrigin: Object { @Persisted(originProperty: "nope") var back: LinkingObjects<Pet> }
        XCTAssertThrowsError(try Lattice(configuration: .init(fileURL: url, objectTypes: [BadOrigin.self, Pet.self, Owner.self, Address.self])))
        _ = try? Lattice.deleteFiles(for: .init(fileURL: url))
    }
}
