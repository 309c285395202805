import Foundation
import XCTest
@testable import Lattice

/// The Results API (access, liveness, sorting, bulk updates, aggregates) over filtered and sorted results.
final class QueryResultsTests: QueryTestCase {
    /// Five items: ids 1...5, ints [3, 1, 3, nil-ish...].
    private func seed() throws {
        let rows: [(Int, Int, Int?, String, String?, Double, Date)] = [
            (1, 3, 5, "b", "x", 1.5, Date(timeIntervalSinceReferenceDate: 30)),
            (2, 1, nil, "a", nil, -2, Date(timeIntervalSinceReferenceDate: 10)),
            (3, 3, 2, "B", "y", 0.25, Date(timeIntervalSinceReferenceDate: 20)),
            (4, 2, nil, "ä", "x", 8, Date(timeIntervalSinceReferenceDate: 40)),
            (5, 1, 7, "a", "z", 4, Date(timeIntervalSinceReferenceDate: 0)),
        ]
        try lattice.write {
            for (id, int, optInt, string, optString, double, date) in rows {
                let item = QItem()
                item.id = id
                item.int = int
                item.intIdx = int
                item.optInt = optInt
                item.string = string
                item.stringIdx = string
                item.optString = optString
                item.double = double
                item.float = Float(double)
                item.decimal = Decimal(id) / 4
                item.optDecimal = id % 2 == 0 ? nil : Decimal(id)
                item.date = date
                item.int8 = Int8(id)
                try lattice.add(item)
            }
        }
    }

    private var items: Results<QItem> { lattice.objects(QItem.self) }

    func testSortingIsStableNilFirstAndByUnicodeScalars() throws {
        try seed()
        XCTAssertEqual(try items.sorted(byKeyPath: "int").map(\.id), [2, 5, 4, 1, 3])
        XCTAssertEqual(try items.sorted(byKeyPath: "int", ascending: false).map(\.id), [1, 3, 4, 2, 5])
        XCTAssertEqual(try items.sorted(byKeyPath: "optInt").map(\.id), [2, 4, 3, 1, 5])
        XCTAssertEqual(try items.sorted(byKeyPath: "optInt", ascending: false).map(\.id), [5, 1, 3, 2, 4])
        XCTAssertEqual(try items.sorted(byKeyPath: "string").map(\.string), ["B", "a", "a", "b", "ä"])
        XCTAssertEqual(try items.sorted(byKeyPath: "stringIdx").map(\.stringIdx), ["B", "a", "a", "b", "ä"], "index walk agrees")
        XCTAssertEqual(try items.sorted(by: [SortDescriptor(keyPath: "int"), SortDescriptor(keyPath: "double", ascending: false)]).map(\.id),
                       [5, 2, 4, 1, 3])
        // A later sort takes precedence; the earlier one breaks its ties.
        XCTAssertEqual(try items.sorted(byKeyPath: "double").sorted(byKeyPath: "int").map(\.id), [2, 5, 4, 3, 1])
        XCTAssertEqual(try items.sorted(byKeyPath: "date").map(\.id), [5, 2, 3, 1, 4])
        XCTAssertEqual(try items.sorted(byKeyPath: "decimal", ascending: false).map(\.id), [5, 4, 3, 2, 1])
        XCTAssertEqual(try items.filter("int >= 2").sorted(byKeyPath: "double").map(\.id), [3, 1, 4])
        XCTAssertEqual(try items.sorted(byKeyPath: "double").filter("int >= 2").map(\.id), [3, 1, 4], "filter after sort keeps the order")
        XCTAssertEqual(SortDescriptor(keyPath: "a").reversed().ascending, false)
        XCTAssertThrowsError(try items.sorted(byKeyPath: "nope")) { XCTAssertTrue("\($0)".contains("'QItem' has no property 'nope'")) }
        XCTAssertThrowsError(try items.sorted(byKeyPath: "int.name")) { XCTAssertTrue("\($0)".contains("not a link")) }
    }

    func testDistinct() throws {
        try seed()
        XCTAssertEqual(try items.distinct(by: ["int"]).map(\.id), [1, 2, 4])
        XCTAssertEqual(try items.distinct(by: ["int", "optString"]).map(\.id), [1, 2, 3, 4, 5])
        XCTAssertEqual(try items.sorted(byKeyPath: "id", ascending: false).distinct(by: ["int"]).map(\.id), [5, 4, 3])
        XCTAssertEqual(try items.distinct(by: ["string"]).count, 4)
        XCTAssertThrowsError(try items.distinct(by: ["nope"]))
    }

    func testCollectionAccess() throws {
        try seed()
        let sorted = try items.filter("int > 1").sorted(byKeyPath: "double", ascending: false)
        XCTAssertEqual(sorted.count, 3)
        XCTAssertEqual(sorted.first?.id, 4)
        XCTAssertEqual(sorted.last?.id, 3)
        XCTAssertEqual(sorted[1].id, 1)
        XCTAssertEqual(sorted.index(of: sorted[2]), 2)
        let other = try XCTUnwrap(lattice.object(ofType: QItem.self, forPrimaryKey: 2))
        XCTAssertNil(sorted.index(of: other))
        XCTAssertEqual(items.index(of: other), 1)
        XCTAssertEqual(try sorted.index(matching: "id == %d", 1), 1)
        XCTAssertEqual(try sorted.index(matching: "string BEGINSWITH[c] 'b'"), 1)
        XCTAssertNil(try sorted.index(matching: "FALSEPREDICATE"))
        XCTAssertThrowsError(try sorted.index(matching: "nope == 1"))
        XCTAssertTrue(try items.filter("int > 10").isEmpty)
        XCTAssertEqual(Array(try items.filter("id IN {1, 5}")).map(\.id), [1, 5])
        XCTAssertEqual(try items.filter("int == 1").filter("optInt != nil").map(\.id), [5])
    }

    /// `index(matching:)` gives the first position whose object matches, whichever way it finds it: by
    /// the index's matches on results in key order (whole class or filtered, before and after deletes,
    /// inside a write with its own additions), by testing objects in order otherwise.
    func testIndexMatchingIsTheFirstPositionThatMatches() throws {
        try lattice.write {
            for id in 0..<400 {
                let item = QItem()
                item.id = (id * 37) % 400
                item.intIdx = id % 13
                item.int = id % 7
                item.stringIdx = ["rex", "Rover", "bella", "max"][id % 4]
                item.optIntIdx = id % 5 == 0 ? nil : id % 9
                try lattice.add(item)
            }
        }
        let predicates: [(String, Int?)] = [
            ("id == %d", 123), ("id == %d", 999), ("id IN {5, 377, 12}", nil), ("intIdx == %d", 4), ("intIdx == 99", nil),
            ("intIdx IN {11, 3}", nil), ("stringIdx == 'bella'", nil), ("stringIdx ==[c] 'ROVER'", nil), ("optIntIdx == nil", nil),
            ("optIntIdx == 8", nil), ("int == 3", nil), ("intIdx == 2 AND int == 5", nil), ("FALSEPREDICATE", nil), ("TRUEPREDICATE", nil),
        ]
        func check(_ results: Results<QItem>, _ label: String) throws {
            let objects = Array(results)
            for (predicate, argument) in predicates {
                let arguments: [Any] = argument.map { [$0] } ?? []
                let matching = Set(try lattice.objects(QItem.self).filter(predicate, argumentArray: arguments).map(\.id))
                let expected = objects.firstIndex { matching.contains($0.id) }
                let found = try argument.map { try results.index(matching: predicate, $0) } ?? results.index(matching: predicate)
                XCTAssertEqual(found, expected, "\(label): \(predicate)")
            }
        }
        let all = lattice.objects(QItem.self)
        let filtered = try all.filter("int != 3")
        try check(all, "whole class")
        try check(filtered, "filtered")
        try check(try all.sorted(byKeyPath: "intIdx", ascending: false), "sorted")
        try lattice.write {
            try lattice.delete(try all.filter("id < 40 OR intIdx == 4"))
            for id in 400..<420 {
                let item = QItem()
                item.id = id
                item.intIdx = 4
                item.stringIdx = "bella"
                try lattice.add(item)
            }
            try check(all, "whole class in a write")
            try check(filtered, "filtered in a write")
        }
        try check(all, "whole class after the write")
        try check(filtered, "filtered after the write")
    }

    /// Results a program keeps and reads after each of its own writes (patched from those writes' changes
    /// where they can be) always read what a fresh evaluation reads: after inserts that match or not,
    /// deletes, writes to filtered, sorted and other columns, several commits between reads, a large
    /// commit, a cancelled write, reads inside a write, and another handle's commit.
    func testKeptResultsFollowTheHandlesOwnCommits() throws {
        var rng = SplitMix64(state: 11)
        func random(_ n: Int) -> Int { Int(rng.next() % UInt64(n)) }
        var nextID = 0
        func add(_ count: Int) throws {
            for _ in 0..<count {
                let item = QItem()
                item.id = nextID
                nextID += 1
                item.int = random(10)
                item.intIdx = random(6)
                item.double = Double(random(50))
                item.string = ["a", "b", "c"][random(3)]
                try lattice.add(item)
            }
        }
        try lattice.write { try add(300) }
        let all = lattice.objects(QItem.self)
        let kept: [Results<QItem>] = [
            try all.filter("intIdx == 2").sorted(byKeyPath: "double", ascending: false),
            try all.filter("int < 5").sorted(byKeyPath: "intIdx").sorted(byKeyPath: "double"),
            try all.filter("string == 'b' AND int >= 3"),
            try all.sorted(byKeyPath: "int"),
            all,
        ]
        func fresh() throws -> [[Int]] {
            let all = lattice.objects(QItem.self)
            return [
                try all.filter("intIdx == 2").sorted(byKeyPath: "double", ascending: false).map(\.id),
                try all.filter("int < 5").sorted(byKeyPath: "intIdx").sorted(byKeyPath: "double").map(\.id),
                try all.filter("string == 'b' AND int >= 3").map(\.id),
                try all.sorted(byKeyPath: "int").map(\.id),
                all.map(\.id),
            ]
        }
        func check(_ label: String) throws {
            let expected = try fresh()
            for (i, results) in kept.enumerated() {
                // Each way of reading: the count, an end, then every element.
                XCTAssertEqual(results.count, expected[i].count, "\(label), results \(i): count")
                XCTAssertEqual(results.first?.id, expected[i].first, "\(label), results \(i): first")
                XCTAssertEqual(results.last?.id, expected[i].last, "\(label), results \(i): last")
                XCTAssertEqual(results.map(\.id), expected[i], "\(label), results \(i)")
            }
        }
        func change(_ edits: Int) throws {
            for _ in 0..<edits {
                let live = Array(lattice.objects(QItem.self))
                switch random(6) {
                case 0: try add(1 + random(3))
                case 1: try live.randomElement(using: &rng).map { try lattice.delete($0) }
                case 2: live.randomElement(using: &rng)?.double = Double(random(50))
                case 3: live.randomElement(using: &rng)?.intIdx = random(6)
                case 4: live.randomElement(using: &rng)?.int = random(10)
                default: live.randomElement(using: &rng)?.optString = "x\(random(9))"  // read by no query
                }
            }
        }
        try check("start")
        for round in 0..<60 {
            try lattice.write { try change(1 + random(4)) }
            if round % 7 == 3 { try lattice.write { try change(2) } }  // two commits between reads
            if round % 13 == 5 { for _ in 0..<10 { try lattice.write { try change(1) } } }  // more than are kept
            try check("round \(round)")
        }
        try lattice.write { try add(300) }  // a commit too large to keep
        try check("after a large commit")
        try lattice.beginWrite()
        try change(5)
        lattice.cancelWrite()
        try check("after a cancelled write")
        try lattice.write {
            try change(3)
            try check("inside a write")
        }
        try check("after reading inside a write")
        let other = try Lattice(configuration: config)
        try other.write {
            let item = QItem()
            item.id = 100_000
            item.intIdx = 2
            item.int = 1
            item.string = "b"
            try other.add(item)
        }
        try lattice.write { try change(2) }
        try check("after another handle's commit")
    }

    /// `first` and `last` of sorted results that are never read in full (found by one pass over the sort
    /// values, and kept until something they depend on changes) read what a fresh evaluation reads, asked
    /// again and again, after own writes to sorted, filtered and other columns, and after another
    /// handle's commit picked up by `refresh()`.
    func testEndsOfSortedResultsReadAgainAfterChanges() throws {
        var rng = SplitMix64(state: 5)
        func random(_ n: Int) -> Int { Int(rng.next() % UInt64(n)) }
        try lattice.write {
            for id in 0..<200 {
                let item = QItem()
                item.id = id
                item.int = random(10)
                item.double = Double(random(1000))
                item.optInt = random(3) == 0 ? nil : random(100)
                try lattice.add(item)
            }
        }
        let all = lattice.objects(QItem.self)
        let kept = [try all.filter("int < 6").sorted(byKeyPath: "double"), try all.sorted(byKeyPath: "double", ascending: false),
                    try all.filter("int == 3").sorted(byKeyPath: "optInt")]
        func check(_ label: String) throws {
            let fresh = [try all.filter("int < 6").sorted(byKeyPath: "double"), try all.sorted(byKeyPath: "double", ascending: false),
                         try all.filter("int == 3").sorted(byKeyPath: "optInt")].map { Array($0).map(\.id) }
            for (i, results) in kept.enumerated() {
                for _ in 0..<2 {
                    XCTAssertEqual(results.first?.id, fresh[i].first, "\(label), results \(i): first")
                    XCTAssertEqual(results.last?.id, fresh[i].last, "\(label), results \(i): last")
                }
            }
        }
        let other = try Lattice(configuration: config)
        try check("start")
        for round in 0..<40 {
            let id = random(200)
            switch round % 5 {
            case 0: try lattice.write { lattice.object(ofType: QItem.self, forPrimaryKey: id)?.double = Double(random(2000)) - 500 }
            case 1: try lattice.write { lattice.object(ofType: QItem.self, forPrimaryKey: id)?.int = random(10) }
            case 2: try lattice.write { lattice.object(ofType: QItem.self, forPrimaryKey: id)?.string = "unread \(round)" }
            case 3:
                try other.write { other.object(ofType: QItem.self, forPrimaryKey: id)?.double = Double(random(2000)) - 500 }
                lattice.refresh()
            default:
                try lattice.write {
                    if let item = lattice.object(ofType: QItem.self, forPrimaryKey: id) { try lattice.delete(item) }
                    let item = QItem()
                    item.id = 1_000 + round
                    item.int = 3
                    item.optInt = random(2) == 0 ? nil : random(100)
                    item.double = Double(random(2000)) - 500
                    try lattice.add(item)
                }
            }
            try check("round \(round)")
        }
    }

    /// `first` and `last` of a class filtered by an index (`==`, `IN`) and sorted by an indexed property,
    /// found by walking the sort's index from that end among the filter's matches, are what a full
    /// evaluation gives: ties (kept in object-key order either way), nil values, matches far from the end
    /// walked from (the walk gives up and the matches are sorted), no matches, filters matching most of
    /// the class, kept results after own writes, inserts and deletes, and another handle's commit.
    func testEndsOfFilteredResultsSortedByAnIndexedProperty() throws {
        var rng = SplitMix64(state: 11)
        func random(_ n: Int) -> Int { Int(rng.next() % UInt64(n)) }
        func fill(_ item: QItem, id: Int) {
            item.id = id
            item.intIdx = random(30)
            // Group 7 holds only the oldest dates and the lowest numbers: far from the newest end.
            let old = item.intIdx == 7
            item.dateIdx = Date(timeIntervalSinceReferenceDate: Double(old ? random(3) : 3 + random(60)) * 86_400)
            item.optIntIdx = random(4) == 0 ? nil : (old ? random(5) : 5 + random(200))
            item.stringIdx = ["a", "b", "c", "d", "e"][random(5)]
            item.boolIdx = random(10) != 0
        }
        try lattice.write {
            for id in 0..<900 {
                let item = QItem()
                fill(item, id: id)
                try lattice.add(item)
            }
        }
        let all = lattice.objects(QItem.self)
        let filters = ["intIdx == 3", "intIdx == 7", "intIdx == 99", "intIdx IN {1, 7, 12}", "boolIdx == true", "stringIdx == 'c'",
                       "id == 5", "id IN {17, 400, 899, 2000}"]
        let sorts: [(String, Bool)] = [("dateIdx", true), ("dateIdx", false), ("optIntIdx", true), ("optIntIdx", false),
                                       ("stringIdx", false), ("intIdx", true), ("id", false)]
        func shapes() throws -> [(String, Results<QItem>)] {
            try filters.flatMap { filter in
                try sorts.map { ("\(filter) sorted by \($0.0) \($0.1 ? "up" : "down")", try all.filter(filter).sorted(byKeyPath: $0.0, ascending: $0.1)) }
            }
        }
        let kept = try shapes()
        func check(_ label: String) throws {
            for (i, (name, fresh)) in try shapes().enumerated() {
                let expected = Array(fresh).map(\.id)
                let again = try all.filter(filters[i / sorts.count]).sorted(byKeyPath: sorts[i % sorts.count].0,
                                                                             ascending: sorts[i % sorts.count].1)
                XCTAssertEqual(again.first?.id, expected.first, "\(label): \(name): first")
                XCTAssertEqual(again.last?.id, expected.last, "\(label): \(name): last")
                XCTAssertEqual(kept[i].1.first?.id, expected.first, "\(label): \(name): first of kept results")
                XCTAssertEqual(kept[i].1.last?.id, expected.last, "\(label): \(name): last of kept results")
            }
        }
        try check("start")
        let other = try Lattice(configuration: config)
        for round in 0..<12 {
            let id = random(900)
            switch round % 4 {
            case 0:
                try lattice.write {
                    let item = lattice.object(ofType: QItem.self, forPrimaryKey: id)
                    item?.dateIdx = Date(timeIntervalSinceReferenceDate: Double(random(90)) * 86_400)
                    item?.intIdx = 7
                }
            case 1:
                try lattice.write {
                    if let item = lattice.object(ofType: QItem.self, forPrimaryKey: id) { try lattice.delete(item) }
                    let item = QItem()
                    fill(item, id: 2_000 + round)
                    try lattice.add(item)
                }
            case 2:
                try other.write { other.object(ofType: QItem.self, forPrimaryKey: id)?.optIntIdx = random(2) == 0 ? nil : random(300) }
                lattice.refresh()
            default:
                try lattice.write { try lattice.delete(all.filter("intIdx == 3").sorted(byKeyPath: "dateIdx", ascending: false).prefix(3)) }
            }
            try check("round \(round)")
        }
    }

    /// Filtered results sorted by an indexed property read by every idiomatic path (positions, prefixes,
    /// loops that stop early or run to the end, count, aggregates), fresh and kept, against the objects
    /// filtered and sorted in Swift: filters matching most of the class take their first keys from the
    /// sort's index, small ones sort their matches; both must give the same objects in the same order.
    func testFilteredResultsSortedByAnIndexedPropertyReadByEveryPath() throws {
        var rng = SplitMix64(state: 29)
        func random(_ n: Int) -> Int { Int(rng.next() % UInt64(n)) }
        func fill(_ item: QItem, id: Int) {
            item.id = id
            item.intIdx = random(30)
            item.dateIdx = Date(timeIntervalSinceReferenceDate: Double(random(400)) * 3_600)  // ties
            item.optIntIdx = random(5) == 0 ? nil : random(100)
            item.stringIdx = ["a", "b", "c", "d", "e"][random(5)]
            item.boolIdx = random(10) != 0
            item.double = Double(random(1_000)) / 8
        }
        try lattice.write {
            for id in 0..<1_500 {
                let item = QItem()
                fill(item, id: id)
                try lattice.add(item)
            }
        }
        let all = lattice.objects(QItem.self)
        typealias Row = (id: Int, intIdx: Int, date: Date, optInt: Int?, string: String, bool: Bool, double: Double)
        let filters: [(String, (Row) -> Bool)] = [
            ("boolIdx == true", { $0.bool }), ("intIdx < 15", { $0.intIdx < 15 }), ("intIdx >= 2 AND boolIdx == true", { $0.intIdx >= 2 && $0.bool }),
            ("stringIdx == 'c'", { $0.string == "c" }), ("intIdx == 3", { $0.intIdx == 3 }), ("intIdx == 99", { _ in false }),
        ]
        // Ties keep object-key order in both directions; nil sorts first.
        func order<T: Comparable>(_ value: @escaping (Row) -> T) -> (Row, Row, Bool) -> Bool {
            { a, b, up in value(a) == value(b) ? a.id < b.id : (up ? value(a) < value(b) : value(a) > value(b)) }
        }
        let optional: (Row, Row, Bool) -> Bool = { a, b, up in
            let (x, y) = (a.optInt.map { $0 + 1 } ?? 0, b.optInt.map { $0 + 1 } ?? 0)
            return x == y ? a.id < b.id : (up ? x < y : x > y)
        }
        let sorts: [(String, Bool, (Row, Row, Bool) -> Bool)] = [
            ("dateIdx", true, order(\.date)), ("dateIdx", false, order(\.date)), ("optIntIdx", true, optional), ("optIntIdx", false, optional),
            ("stringIdx", false, order(\.string)), ("intIdx", true, order(\.intIdx)), ("id", false, order(\.id)), ("id", true, order(\.id)),
        ]
        func results() throws -> [(name: String, results: Results<QItem>)] {
            try filters.flatMap { filter in
                try sorts.map { ("\(filter.0) sorted by \($0.0) \($0.1 ? "up" : "down")", try all.filter(filter.0).sorted(byKeyPath: $0.0, ascending: $0.1)) }
            }
        }
        let kept = try results()
        func check(_ label: String) throws {
            // The reference: the whole class read in key order, filtered and sorted here.
            var rows: [Row] = []
            for o in all { rows.append((o.id, o.intIdx, o.dateIdx, o.optIntIdx, o.stringIdx, o.boolIdx, o.double)) }
            let fresh = try results()
            for i in fresh.indices {
                let (filter, sort) = (filters[i / sorts.count], sorts[i % sorts.count])
                let matching = rows.filter(filter.1)
                let expected = matching.sorted { sort.2($0, $1, sort.1) }.map(\.id)
                let sum = matching.reduce(0) { $0 + $1.double }
                for (which, r) in [("fresh", fresh[i].results), ("kept", kept[i].results)] {
                    let name = "\(label): \(fresh[i].name), \(which)"
                    XCTAssertEqual(r.count, expected.count, "\(name): count")
                    XCTAssertEqual(try r.sum(ofProperty: "double") as Double, sum, "\(name): sum")
                    XCTAssertEqual(try r.max(ofProperty: "double") as Double?, matching.map(\.double).max(), "\(name): max")
                    for n in [1, 5, 33] {
                        XCTAssertEqual(Array(r.prefix(n)).map(\.id), Array(expected.prefix(n)), "\(name): prefix(\(n))")
                    }
                    var looped: [Int] = []
                    for o in r {
                        looped.append(o.id)
                        if looped.count == 40 { break }
                    }
                    XCTAssertEqual(looped, Array(expected.prefix(40)), "\(name): a loop that stops")
                    XCTAssertEqual(r.map(\.id), expected, "\(name): map")
                    XCTAssertEqual(r.first?.id, expected.first, "\(name): first")
                    XCTAssertEqual(r.last?.id, expected.last, "\(name): last")
                }
                let again = try all.filter(filter.0).sorted(byKeyPath: sort.0, ascending: sort.1)
                let positions = stride(from: 0, to: expected.count, by: 7).map { $0 }
                XCTAssertEqual(positions.map { again[$0].id }, positions.map { expected[$0] }, "\(label): \(fresh[i].name): by position")
            }
        }
        try check("start")
        let other = try Lattice(configuration: config)
        for round in 0..<4 {
            let id = random(1_500)
            switch round % 4 {
            case 0:
                try lattice.write {
                    let item = lattice.object(ofType: QItem.self, forPrimaryKey: id)
                    item?.dateIdx = Date(timeIntervalSinceReferenceDate: Double(random(400)) * 3_600)
                    item?.boolIdx.toggle()
                }
            case 1:
                try lattice.write {
                    if let item = lattice.object(ofType: QItem.self, forPrimaryKey: id) { try lattice.delete(item) }
                    let item = QItem()
                    fill(item, id: 2_000 + round)
                    try lattice.add(item)
                }
            case 2:
                try other.write { other.object(ofType: QItem.self, forPrimaryKey: id)?.optIntIdx = random(2) == 0 ? nil : random(100) }
                lattice.refresh()
            default:
                try lattice.write { try lattice.delete(all.filter("boolIdx == true").sorted(byKeyPath: "dateIdx", ascending: false).prefix(3)) }
            }
            try check("round \(round)")
        }

        // A loop walks the objects as they were when it began, whatever it writes on the way.
        let newest = try all.filter("boolIdx == true").sorted(byKeyPath: "dateIdx", ascending: false)
        let before = newest.map(\.id)
        var seen: [Int] = []
        for item in newest {
            seen.append(item.id)
            if seen.count == 5 {
                try lattice.write {
                    let added = QItem()
                    fill(added, id: 5_000)
                    added.boolIdx = true
                    added.dateIdx = Date(timeIntervalSinceReferenceDate: 1e9)
                    try lattice.add(added)
                    lattice.object(ofType: QItem.self, forPrimaryKey: before[before.count - 1])?.dateIdx = Date(timeIntervalSinceReferenceDate: 2e9)
                }
            }
        }
        XCTAssertEqual(seen, before)
        XCTAssertEqual(newest.first?.id, before[before.count - 1])
        XCTAssertEqual(Array(newest.prefix(2)).map(\.id), [before[before.count - 1], 5_000])
    }

    func testChainedFiltersMakeOnePlan() throws {
        try seed()
        let chained = try items.filter("intIdx == 3").filter("string == 'B'")
        XCTAssertTrue(chained.explain().contains("index seek QItem.intIdx == 3 (~2 rows) -> filter string == 'B'"), chained.explain())
        XCTAssertEqual(chained.map(\.id), [3])
    }

    func testAggregates() throws {
        try seed()
        XCTAssertEqual(try items.min(ofProperty: "int") as Int?, 1)
        XCTAssertEqual(try items.max(ofProperty: "optInt") as Int?, 7)
        XCTAssertEqual(try items.min(ofProperty: "double") as Double?, -2)
        XCTAssertEqual(try items.max(ofProperty: "float") as Float?, 8)
        XCTAssertEqual(try items.min(ofProperty: "date") as Date?, Date(timeIntervalSinceReferenceDate: 0))
        XCTAssertEqual(try items.max(ofProperty: "date") as Date?, Date(timeIntervalSinceReferenceDate: 40))
        XCTAssertEqual(try items.max(ofProperty: "decimal") as Decimal?, Decimal(5) / 4)
        XCTAssertEqual(try items.sum(ofProperty: "int") as Int, 10)
        XCTAssertEqual(try items.sum(ofProperty: "int8") as Int8, 15)
        XCTAssertEqual(try items.sum(ofProperty: "optInt") as Int, 14)
        XCTAssertEqual(try items.sum(ofProperty: "double") as Double, 11.75)
        XCTAssertEqual(try items.sum(ofProperty: "optDecimal") as Decimal, 9)
        XCTAssertEqual(try items.average(ofProperty: "int") as Double?, 2)
        XCTAssertEqual(try items.average(ofProperty: "optInt") as Double?, 14.0 / 3)
        XCTAssertEqual(try items.average(ofProperty: "optDecimal") as Decimal?, 3)
        let filtered = try items.filter("int == 3")
        XCTAssertEqual(try filtered.sum(ofProperty: "double") as Double, 1.75)
        let none = try items.filter("FALSEPREDICATE")
        XCTAssertNil(try none.min(ofProperty: "int") as Int?)
        XCTAssertNil(try none.average(ofProperty: "double") as Double?)
        XCTAssertEqual(try none.sum(ofProperty: "int") as Int, 0)
        XCTAssertThrowsError(try items.min(ofProperty: "string") as String?) {
            XCTAssertEqual($0 as? LatticeError, .wrongType(className: "QItem", property: "string", expected: "a number or a date",
                                                           found: "string: String"))
        }
        XCTAssertThrowsError(try items.sum(ofProperty: "date") as Double) {
            XCTAssertEqual($0 as? LatticeError, .wrongType(className: "QItem", property: "date", expected: "a number", found: "date: Date"))
        }
        XCTAssertThrowsError(try items.average(ofProperty: "bool") as Double?) {
            XCTAssertEqual($0 as? LatticeError, .wrongType(className: "QItem", property: "bool", expected: "a number", found: "bool: Bool"))
        }
        XCTAssertThrowsError(try items.max(ofProperty: "nope") as Int?) {
            XCTAssertEqual($0 as? LatticeError, .unknownProperty(className: "QItem", property: "nope"))
        }
        // An integer mean asked for as an integer is rounded toward zero, as Realm's is (5, 2, 7: 14 / 3).
        XCTAssertEqual(try items.average(ofProperty: "optInt") as Int?, 4)
        XCTAssertEqual(try XCTUnwrap(try items.average(ofProperty: "optInt") as Double?), 14.0 / 3, accuracy: 1e-12)
        XCTAssertEqual(try items.average(of: \.optInt), 4, "the key-path form agrees")
    }

    func testBulkSetValueKeepsIndexesRight() throws {
        try seed()
        let ones = try items.filter("intIdx == 1")
        XCTAssertThrowsError(try ones.setValue(9, forKey: "intIdx")) { XCTAssertEqual($0 as? LatticeError, .notInWriteTransaction(operation: "setValue(_:forKey:)")) }
        try lattice.write {
            try ones.setValue("Q", forKey: "stringIdx")
            try ones.setValue(9, forKey: "intIdx")
            XCTAssertThrowsError(try items.setValue(1, forKey: "nope"))
            XCTAssertThrowsError(try items.setValue(1, forKey: "id"))
            XCTAssertThrowsError(try items.setValue("x", forKey: "int"))
            XCTAssertThrowsError(try items.setValue(nil, forKey: "int"))
            try items.filter("id == 1").setValue(nil, forKey: "optString")
        }
        XCTAssertEqual(ones.count, 0, "live: nothing has intIdx == 1 now")
        let nines = try items.filter("intIdx == 9")
        XCTAssertTrue(nines.explain().contains("index seek"))
        XCTAssertEqual(nines.map(\.id), [2, 5])
        XCTAssertEqual(try items.filter("stringIdx ==[c] 'q'").map(\.id), [2, 5])
        XCTAssertEqual(try items.filter("stringIdx == 'a'").count, 0)
        XCTAssertNil(lattice.object(ofType: QItem.self, forPrimaryKey: 1)?.optString)
        XCTAssertEqual(try items.filter("optString == nil").map(\.id), [1, 2])
    }

    func testResultsAreLiveAndIterationWalksTheStartState() throws {
        try seed()
        let threes = try items.filter("intIdx == 3").sorted(byKeyPath: "id")
        XCTAssertEqual(threes.map(\.id), [1, 3])
        try lattice.write {
            lattice.object(ofType: QItem.self, forPrimaryKey: 5)!.intIdx = 3
            XCTAssertEqual(threes.map(\.id), [1, 3, 5], "inside the write transaction")
            var seen: [Int] = []
            for item in threes {
                seen.append(item.id)
                if item.id == 1 {
                    let extra = QItem()
                    extra.id = 6
                    extra.intIdx = 3
                    try lattice.add(extra)
                }
            }
            XCTAssertEqual(seen, [1, 3, 5], "the loop walks the state at its start")
            XCTAssertEqual(threes.count, 4)
        }
        XCTAssertEqual(threes.map(\.id), [1, 3, 5, 6])
        // Another handle's commit shows after refresh().
        let other = try Lattice(configuration: config)
        try other.write { try other.delete(other.objects(QItem.self).filter("id == 3")) }
        XCTAssertEqual(threes.count, 4, "this handle's snapshot is unchanged")
        lattice.refresh()
        XCTAssertEqual(threes.map(\.id), [1, 5, 6])
        XCTAssertEqual(threes.count, 3)
    }

    /// A loop over a class sorted by an indexed property takes the keys from the index a batch at a time:
    /// it must still walk exactly the objects of its start, in their order then, whatever the loop does
    /// to the index (writes, another handle's commits and a refresh) and however long it goes on.
    func testLoopsOverIndexSortedResultsWalkTheStartStateWhileTakingKeysInBatches() throws {
        var rng = SystemRandomNumberGenerator()
        try lattice.write {
            for id in 0..<600 { try lattice.add(QItem(value: ["id": id, "intIdx": Int.random(in: 0..<50, using: &rng)])) }
        }
        // Each loop on new results: their keys are not known yet, so the loop takes them from the index.
        func sorted() throws -> Results<QItem> { try lattice.objects(QItem.self).sorted(byKeyPath: "intIdx", ascending: false) }
        let start = try sorted().map(\.id)
        XCTAssertEqual(start, (0..<600).map { lattice.object(ofType: QItem.self, forPrimaryKey: $0)! }
            .sorted { ($0.intIdx, -$0.id) > ($1.intIdx, -$1.id) }.map(\.id), "the index order, ties by key")

        // Breaking early, a whole loop, and loops side by side.
        var firstTen: [Int] = []
        for item in try sorted() { firstTen.append(item.id); if firstTen.count == 10 { break } }
        XCTAssertEqual(firstTen, Array(start.prefix(10)))
        XCTAssertEqual(Array(try sorted()).map(\.id), start)
        let twice = try sorted()
        XCTAssertEqual(zip(twice, twice.lazy.dropFirst()).map { [$0.id, $1.id] }, zip(start, start.dropFirst()).map { [$0, $1] })

        // A write after the first batch reorders everything, deletes objects not reached yet, adds others.
        let deleted = Set(start[100..<110])
        var seen: [Int] = []
        for item in try sorted() {
            seen.append(item.id)
            if seen.count == 40 {
                try lattice.write {
                    for other in lattice.objects(QItem.self) { other.intIdx = -other.intIdx }
                    try lattice.delete(lattice.objects(QItem.self).filter("id IN %@", Array(deleted)))
                    try lattice.add(QItem(value: ["id": 1_000, "intIdx": 99]))
                }
            }
        }
        XCTAssertEqual(seen, start.filter { !deleted.contains($0) }, "the start's objects in the start's order, less those deleted")

        // Another handle's commit, seen through refresh() in the middle of the loop.
        let before = try sorted().map(\.id)
        let other = try Lattice(configuration: config)
        try other.write { for item in other.objects(QItem.self) { item.intIdx += 1_000 * (item.id % 2) } }
        seen = []
        for item in try sorted() {
            seen.append(item.id)
            if seen.count == 33 { XCTAssertTrue(lattice.refresh()) }
        }
        XCTAssertEqual(seen, before)
        XCTAssertNotEqual(try sorted().map(\.id), before, "the refreshed order differs")

        // Frozen results walk their own snapshot.
        let frozen = try sorted().freeze()
        XCTAssertEqual(Array(frozen).map(\.id), try sorted().map(\.id))
    }

    /// Sorts, aggregates and distinct of a whole class take its keys from the table's runs without opening
    /// the records: over many runs, dense and with gaps, and inside a write with its own changes.
    func testWholeClassSortsAndAggregatesSeeEveryObject() throws {
        var ints: [Int: Int] = [:]
        func check(_ label: String) throws {
            let all = lattice.objects(QItem.self)
            let expected = ints.sorted { ($0.value, $0.key) < ($1.value, $1.key) }.map(\.key)
            XCTAssertEqual(try all.sorted(byKeyPath: "int").map(\.id), expected, label)
            // Descending, ties keep key order: the smallest key of the largest value.
            let top = ints.values.max()
            XCTAssertEqual(try all.sorted(byKeyPath: "int", ascending: false).first?.id, ints.filter { $0.value == top }.keys.min(), label)
            XCTAssertEqual(try all.sum(ofProperty: "int") as Int, ints.values.reduce(0, +), label)
            XCTAssertEqual(try all.distinct(by: ["int"]).count, Set(ints.values).count, label)
        }
        try lattice.write {
            for id in 0..<3_000 {
                ints[id] = (id * 7_919) % 1_000
                try lattice.add(QItem(value: ["id": id, "int": ints[id]!]))
            }
        }
        try check("dense runs")
        try lattice.write {
            try lattice.delete(lattice.objects(QItem.self).filter("id IN %@", Array(stride(from: 0, to: 3_000, by: 7))))
            for id in stride(from: 0, to: 3_000, by: 7) { ints[id] = nil }
        }
        try check("runs with gaps")
        try lattice.write {
            for id in 5_000..<5_300 {
                ints[id] = id % 13
                try lattice.add(QItem(value: ["id": id, "int": ints[id]!]))
            }
            try lattice.delete(lattice.objects(QItem.self).filter("id < 500"))
            for id in 0..<500 { ints[id] = nil }
            try check("inside a write")
        }
        try check("after the commit")
    }

    func testEveryOperatorOnEveryType() throws {
        try seed()
        func ids(_ predicate: String, _ args: Any...) throws -> [Int] {
            try items.filter(predicate, argumentArray: args).map(\.id).sorted()
        }
        XCTAssertEqual(try ids("optInt == nil"), [2, 4])
        XCTAssertEqual(try ids("optInt != nil"), [1, 3, 5])
        XCTAssertEqual(try ids("optInt != 5"), [2, 3, 4, 5], "nil is not equal to 5")
        XCTAssertEqual(try ids("optInt < 6"), [1, 3], "nil never orders")
        XCTAssertEqual(try ids("NOT optInt < 6"), [2, 4, 5])
        XCTAssertEqual(try ids("int == 1.0"), [2, 5], "Int against Double is numeric")
        XCTAssertEqual(try ids("int < 1.5"), [2, 5])
        XCTAssertEqual(try ids("double > 1"), [1, 4, 5])
        XCTAssertEqual(try ids("double BETWEEN {0, 4}"), [1, 3, 5])
        XCTAssertEqual(try ids("float == 0.25"), [3])
        XCTAssertEqual(try ids("decimal == 0.5"), [2])
        XCTAssertEqual(try ids("decimal >= %@", Decimal(1)), [4, 5])
        XCTAssertEqual(try ids("int8 IN {1, 3, 9}"), [1, 3])
        XCTAssertEqual(try ids("date > %@", Date(timeIntervalSinceReferenceDate: 15)), [1, 3, 4])
        XCTAssertEqual(try ids("date BETWEEN %@", [Date(timeIntervalSinceReferenceDate: 10), Date(timeIntervalSinceReferenceDate: 30)]), [1, 2, 3])
        XCTAssertEqual(try ids("string ==[c] 'A'"), [2, 5])
        XCTAssertEqual(try ids("string ==[d] 'a'"), [2, 4, 5])
        XCTAssertEqual(try ids("string ==[cd] 'A'"), [2, 4, 5])
        XCTAssertEqual(try ids("string LIKE '?'"), [1, 2, 3, 4, 5], "? matches one character, ä included")
        XCTAssertEqual(try ids("string != 'a'"), [1, 3, 4])
        XCTAssertEqual(try ids("string < 'a'"), [3])
        XCTAssertEqual(try ids("optString CONTAINS 'x'"), [1, 4])
        XCTAssertEqual(try ids("optString ENDSWITH 'z'"), [5])
        XCTAssertEqual(try ids("optString == nil"), [2])
        XCTAssertEqual(try ids("int == int8"), [3])
        XCTAssertEqual(try ids("int8 > int"), [2, 4, 5])
        XCTAssertEqual(try ids("TRUEPREDICATE AND NOT FALSEPREDICATE"), [1, 2, 3, 4, 5])
        for (p, expected) in [("int < %f", [Int]()), ("intIdx >= %f", []), ("double < %f", []), ("double > %f", []), ("int == %f", []),
                              ("double == %f", []), ("int != %f", [1, 2, 3, 4, 5]), ("double != %f", [1, 2, 3, 4, 5]),
                              ("double BETWEEN {0, %f}", []), ("float IN {%f, 0.25}", [3])] {
            XCTAssertEqual(try ids(p, Double.nan), expected, "NaN is unordered: \(p)")
        }
        XCTAssertEqual(try ids("kind == 'alpha' AND kind != %@", QKind.beta), [1, 2, 3, 4, 5])
        try lattice.write {
            lattice.object(ofType: QItem.self, forPrimaryKey: 1)!.data = Data("hello".utf8)
            lattice.object(ofType: QItem.self, forPrimaryKey: 2)!.optData = Data([0, 1, 2])
        }
        XCTAssertEqual(try ids("data == %@", Data("hello".utf8)), [1])
        XCTAssertEqual(try ids("data BEGINSWITH 'he'"), [1])
        XCTAssertEqual(try ids("data CONTAINS %@", Data("ll".utf8)), [1])
        XCTAssertEqual(try ids("data ENDSWITH 'lo'"), [1])
        XCTAssertEqual(try ids("data LIKE 'h*o'"), [1])
        XCTAssertEqual(try ids("optData == %@", Data([0, 1, 2])), [2])
        XCTAssertEqual(try ids("optData == nil"), [1, 3, 4, 5])
        XCTAssertEqual(try ids("data == %@", Data()), [2, 3, 4, 5])
        let uuid = UUID()
        let oid = ObjectId()
        try lattice.write {
            lattice.object(ofType: QItem.self, forPrimaryKey: 3)!.uuidIdx = uuid
            lattice.object(ofType: QItem.self, forPrimaryKey: 3)!.objectId = oid
        }
        XCTAssertEqual(try ids("uuidIdx == %@", uuid), [3])
        XCTAssertEqual(try ids("uuidIdx == %@", uuid.uuidString), [3])
        XCTAssertEqual(try ids("uuidIdx != uuid(\(uuid.uuidString))"), [1, 2, 4, 5])
        XCTAssertEqual(try ids("objectId == %@", oid), [3])
        XCTAssertEqual(try ids("objectId > %@", ObjectId(bytes: [UInt8](repeating: 0, count: 12))!), [3])
    }

    func testUnicodeCaseFolding() throws {
        try lattice.write {
            for (i, s) in ["Straße", "STRASSE", "ΣΊΣΥΦΟΣ", "σίσυφος", "Ǆ", "ǆ", "ÉCOLE", "école", "ecole"].enumerated() {
                try lattice.add(QTag(value: ["name": s, "rank": i]))
            }
        }
        let tags = lattice.objects(QTag.self)
        func ranks(_ p: String) throws -> [Int] { try tags.filter(p).map(\.rank).sorted() }
        XCTAssertEqual(try ranks("name ==[c] 'strasse'"), [0, 1])
        XCTAssertEqual(try ranks("name ==[c] 'σίσυφος'"), [2, 3])
        XCTAssertEqual(try ranks("name ==[c] 'ǅ'"), [4, 5])
        XCTAssertEqual(try ranks("name ==[c] 'école'"), [6, 7])
        XCTAssertEqual(try ranks("name ==[cd] 'ECOLE'"), [6, 7, 8])
        XCTAssertEqual(try ranks("name BEGINSWITH[c] 'STRASS'"), [0, 1])
        XCTAssertEqual(try ranks("name CONTAINS[c] 'SS'"), [0, 1])
        XCTAssertTrue(try tags.filter("name ==[c] 'strasse'").explain().contains("case-insensitive index seek QTag.name"))
    }

    /// Scans compare string bytes in place and lowercase ASCII rows without making a String (eight bytes at
    /// a time): every operator has to agree with Foundation's folding, at the letters' edges ('@' 'A' 'Z'
    /// '[' and '`' 'a' 'z' '{'), at every length around a word of eight, and when a non-ASCII character
    /// sends the row to the full folding.
    func testStringOperatorsOnScannedRowsAgreeWithFoundation() throws {
        let alphabet = Array("@AZ[`az{mM 0"), wide: [Character] = ["É", "ß", "Σ"]
        var rng = SystemRandomNumberGenerator()
        var notes: [String?] = [nil, ""]
        for length in 1...19 {
            for _ in 0..<6 { notes.append(String((0..<length).map { _ in alphabet.randomElement(using: &rng)! })) }
            var withWide = Array(notes.last!!)
            withWide[Int.random(in: 0..<length, using: &rng)] = wide.randomElement(using: &rng)!
            notes.append(String(withWide))
        }
        try lattice.write {
            for (i, note) in notes.enumerated() { try lattice.add(QTag(value: ["name": "t\(i)", "rank": i, "note": note as Any])) }
        }
        let tags = lattice.objects(QTag.self)
        func fold(_ s: String, _ c: Bool) -> String { c ? s.folding(options: .caseInsensitive, locale: nil) : s }
        let checks: [(String, (String, String) -> Bool)] = [
            ("==", { $0 == $1 }), ("BEGINSWITH", { $0.utf8.starts(with: $1.utf8) }),
            ("ENDSWITH", { $0.utf8.reversed().starts(with: $1.utf8.reversed()) }),
            ("CONTAINS", { $1.isEmpty || $0.range(of: $1, options: .literal) != nil }),
            ("<", { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }),
        ]
        let patterns = ["", "a", "A", "z", "[", "`", "@", "{", "az", "AZ[", "m M", "Mm", "zzzzzzzzz", "É", "é", "ss", "σ",
                        "@az[`AZ{mM 0", notes[40]!, notes[90]!.uppercased()]
        for pattern in patterns {
            for caseInsensitive in [false, true] {
                for (op, holds) in checks {
                    let predicate = "note \(op)\(caseInsensitive ? "[c]" : "") %@"
                    let expected = notes.indices.filter { i in
                        notes[i].map { holds(fold($0, caseInsensitive), fold(pattern, caseInsensitive)) } ?? false
                    }
                    XCTAssertEqual(try tags.filter(predicate, pattern).map(\.rank).sorted(), expected, "\(predicate) with '\(pattern)'")
                }
            }
        }
    }

    func testClassNotInSchemaGivesEmptyResults() throws {
        final class Stranger: Object { @Persisted var x = 0 }
        let results = try lattice.objects(Stranger.self).filter("x == 1")
        XCTAssertEqual(results.count, 0)
        XCTAssertTrue(results.explain().contains("not in this database's schema"))
    }
}
