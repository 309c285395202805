import Foundation
import XCTest
@testable import Lattice

final class ShortcutMessage: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted(indexed: true) var chat = 0
    @Persisted var read = false
    @Persisted(indexed: true) var sent = Date(timeIntervalSince1970: 0)
    @Persisted var text = ""
}

final class ShortcutContact: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted(indexed: true) var group = 0
    @Persisted var plainGroup = 0
    @Persisted(indexed: true) var city: String?
    @Persisted var plainCity: String?
    @Persisted(indexed: true) var flag = false
    @Persisted var plainFlag = false
}

final class ShortcutTag: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted var uses = 0
}

/// Answers read from an index without reading every match (the first match of a filter with an
/// indexed term and others, a count kept while nothing it depends on changes, `TRUEPREDICATE`) must be
/// what reading every match gives: `Array(results)` is the oracle.
final class QueryShortcutTests: XCTestCase {
    private func fill(_ lattice: Lattice, _ ids: [Int], _ rng: inout SplitMix64) throws {
        try lattice.write {
            for id in ids {
                try lattice.create(ShortcutMessage.self, value: ["id": id, "chat": Int(rng.next() % 7), "read": rng.next() % 3 == 0,
                                                                "sent": Date(timeIntervalSince1970: Double(rng.next() % 50)),
                                                                "text": "m\(id)"])
            }
        }
    }

    private let predicates = [
        "chat == 3 AND read == false", "chat IN {1, 2, 5} AND read == true", "chat >= 4 AND text ENDSWITH '7'",
        "id BETWEEN {20, 120} AND read == false", "id IN {90, 15, 60, 33, 7} AND read == false", "id >= 150 AND chat == 2",
        "sent >= %@ AND chat != 1", "chat == 6 AND read == false AND id > 100",
    ]

    private func check(_ lattice: Lattice, _ label: String) throws {
        let all = lattice.objects(ShortcutMessage.self)
        for text in predicates {
            let results = try all.filter(text, Date(timeIntervalSince1970: 25))
            let oracle = Array(try all.filter(text, Date(timeIntervalSince1970: 25))).map(\.id)
            XCTAssertEqual(results.first?.id, oracle.first, "\(label): first of \(text)")
            XCTAssertEqual(try all.filter(text, Date(timeIntervalSince1970: 25)).last?.id, oracle.last, "\(label): last of \(text)")
            XCTAssertEqual(results.count, oracle.count, "\(label): count of \(text)")
            XCTAssertEqual(results.count, oracle.count, "\(label): count of \(text), asked again")
            XCTAssertEqual(Array(results.prefix(3)).map(\.id), Array(oracle.prefix(3)), "\(label): prefix of \(text)")
        }
        XCTAssertEqual(try all.filter("TRUEPREDICATE").count, all.count, label)
        XCTAssertEqual(try all.filter("TRUEPREDICATE").map(\.id), all.map(\.id), label)
        XCTAssertEqual(try all.sorted(byKeyPath: "sent").filter("TRUEPREDICATE").map(\.id), try all.sorted(byKeyPath: "sent").map(\.id), label)
    }

    func testDistinctByAnIndexedPropertyIsDistinctByItsValues() throws {
        let db = makeTempDatabase("shortcut")
        var rng = SplitMix64(state: 5)
        let lattice = try db.open([ShortcutContact.self])
        let long = String(repeating: "x", count: FileLayout.maxIndexKey + 5)
        func add(_ ids: Range<Int>, cities: [String?]) throws {
            try lattice.write {
                for id in ids {
                    let group = Int(rng.next() % 9) - 4, city = cities[Int(rng.next() % UInt64(cities.count))], flag = rng.next() % 2 == 0
                    try lattice.create(ShortcutContact.self, value: ["id": (id * 7919) % 1000, "group": group, "plainGroup": group,
                                                                     "city": city as Any, "plainCity": city as Any,
                                                                     "flag": flag, "plainFlag": flag], update: .all)
                }
            }
        }
        func check(_ label: String) throws {
            let all = lattice.objects(ShortcutContact.self)
            for (indexed, plain) in [("group", "plainGroup"), ("city", "plainCity"), ("flag", "plainFlag")] {
                XCTAssertEqual(try all.distinct(by: [indexed]).map(\.id), try all.distinct(by: [plain]).map(\.id), "\(label): \(indexed)")
                XCTAssertEqual(try all.distinct(by: [indexed]).sorted(byKeyPath: plain, ascending: false).map(\.id),
                               try all.distinct(by: [plain]).sorted(byKeyPath: plain, ascending: false).map(\.id), "\(label): \(indexed), sorted")
                XCTAssertEqual(try all.distinct(by: [indexed]).count, try all.distinct(by: [plain]).count, "\(label): \(indexed) count")
            }
        }
        try add(0..<300, cities: [nil, "Oslo", "Bergen", "oslo", "Tromsø", "Bergen "])
        try check("filled")
        try lattice.write { try lattice.delete(try lattice.objects(ShortcutContact.self).filter("group == 2 OR city == 'Oslo'")) }
        try check("deleted")
        try lattice.write {
            for contact in try lattice.objects(ShortcutContact.self).filter("group == -4") { contact.group = 7; contact.plainGroup = 7 }
            try check("uncommitted")
        }
        // Strings longer than an index key (several values under one key), and the empty string.
        try add(300..<400, cities: [long + "a", long + "b", "", nil])
        try check("long strings")
        XCTAssertEqual(Set(try lattice.objects(ShortcutContact.self).distinct(by: ["city"]).map(\.city)).count,
                       try lattice.objects(ShortcutContact.self).distinct(by: ["city"]).count)
    }

    func testInListsOfPrimaryKeysFindWhatLookupsFind() throws {
        let db = makeTempDatabase("shortcut-in")
        var rng = SplitMix64(state: 5)
        let lattice = try db.open([ShortcutMessage.self, ShortcutTag.self])
        try fill(lattice, Array(0..<300), &rng)
        try lattice.write { for i in 0..<300 { try lattice.add(ShortcutTag(value: ["name": "t\(i)", "uses": i])) } }
        // Unsorted, repeated, missing keys: each object once, as looking each key up finds it.
        var ids = (0..<400).map { _ in Int(rng.next() % 500) }
        ids += ids.prefix(50)
        let expected = Set(ids.filter { lattice.object(ofType: ShortcutMessage.self, forPrimaryKey: $0) != nil })
        let messages = lattice.objects(ShortcutMessage.self)
        for argument in [ids as Any, ids.map { Optional($0) } + [nil] as Any, ids.map { Int64($0) as Any } as Any, Set(ids) as Any] {
            XCTAssertEqual(try messages.filter("id IN %@", argument).count, expected.count)
            XCTAssertEqual(Set(try messages.filter("id IN %@", argument).map(\.id)), expected)
            let counted = try messages.filter("id IN %@", argument)
            XCTAssertEqual(counted.count, expected.count)
            XCTAssertEqual(Array(counted).map(\.id), expected.sorted())
        }
        let names = ids.map { "t\($0)" }
        let found = Set(names.filter { lattice.object(ofType: ShortcutTag.self, forPrimaryKey: $0) != nil })
        let tags = try lattice.objects(ShortcutTag.self).filter("name IN %@", names)
        XCTAssertEqual(tags.count, found.count)
        XCTAssertEqual(Set(tags.map(\.name)), found)
        // Inside a write: an object added and one deleted before it commits.
        try lattice.write {
            try lattice.add(ShortcutTag(value: ["name": "t499"]))
            try lattice.delete(try XCTUnwrap(lattice.object(ofType: ShortcutTag.self, forPrimaryKey: "t0")))
            let now = found.subtracting(["t0"]).union(names.contains("t499") ? ["t499"] : [])
            XCTAssertEqual(Set(try lattice.objects(ShortcutTag.self).filter("name IN %@", names).map(\.name)), now)
            XCTAssertEqual(try lattice.objects(ShortcutTag.self).filter("name IN %@", names).count, now.count)
        }
        // A list argument holding something that is no value names it.
        XCTAssertThrowsError(try messages.filter("id IN %@", [[1, 2]])) { error in
            XCTAssertTrue("\(error)".contains("single values"), "\(error)")
        }
    }

    func testFirstLastAndCountOfIndexedFiltersFollowEveryChange() throws {
        let db = makeTempDatabase("shortcut")
        var rng = SplitMix64(state: 11)
        let lattice = try db.open([ShortcutMessage.self])
        try fill(lattice, Array((0..<200).shuffled(using: &rng)), &rng)
        // Counts and keys read before each change, so that a count kept from before would show.
        let kept = try lattice.objects(ShortcutMessage.self).filter("chat == 3 AND read == false")
        let keptCount = kept.count
        try check(lattice, "filled")
        // A change to a column the filter reads, to one it does not, an insert and a delete.
        try lattice.write {
            for message in try lattice.objects(ShortcutMessage.self).filter("chat == 3").prefix(5) { message.read.toggle() }
        }
        XCTAssertNotEqual(kept.count, keptCount, "a count follows a write to a column it reads")
        try check(lattice, "read toggled")
        try lattice.write { for message in lattice.objects(ShortcutMessage.self).prefix(20) { message.text += "7" } }
        try check(lattice, "text changed")
        try fill(lattice, Array(200..<260), &rng)
        try check(lattice, "inserted")
        try lattice.write { try lattice.delete(try lattice.objects(ShortcutMessage.self).filter("id < 40 OR chat == 3")) }
        try check(lattice, "deleted")
        // Another handle's commits, seen after refresh.
        let other = try db.open([ShortcutMessage.self])
        try fill(other, Array(300..<340), &rng)
        try other.write { for message in try other.objects(ShortcutMessage.self).filter("chat == 2") { message.chat = 3 } }
        lattice.refresh()
        try check(lattice, "another handle's commits")
        // Inside a write, before it commits.
        try lattice.write {
            try lattice.create(ShortcutMessage.self, value: ["id": 1000, "chat": 3, "read": false])
            try check(lattice, "uncommitted")
        }
    }
}
