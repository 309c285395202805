import Foundation
import Synchronization
import XCTest
@testable import Lattice
#if canImport(Glibc)
import Glibc
#endif

final class NoteOwner: Object {
    @Persisted var name = ""
    @Persisted var pets: List<NotePet>
    @Persisted var tags: List<String>
}

final class NotePet: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var owner: NoteOwner?
    @Persisted var toy: NoteToy?
}

final class NoteToy: Object {
    @Persisted var label = ""
    @Persisted var maker: NoteOwner?
}

/// A chain of objects, each linking to the next.
final class NoteChain: Object {
    @Persisted var name = ""
    @Persisted var next: NoteChain?
}

/// Notifications on one handle, across handles and threads, and across real processes.
final class NotificationTests: XCTestCase {
    private var database: TempDatabase!
    private let types: [Object.Type] = [NoteOwner.self, NotePet.self, NoteToy.self, NoteChain.self]

    override func setUp() {
        super.setUp()
        signal(SIGPIPE, SIG_IGN)
        database = makeTempDatabase("notify")
    }

    private func open(readOnly: Bool = false) throws -> Lattice { try database.open(types, readOnly: readOnly) }


    private func addPet(_ lattice: Lattice, _ id: Int, _ name: String, age: Int) throws {
        try lattice.write { _ = try lattice.create(NotePet.self, value: ["id": id, "name": name, "age": age]) }
    }

    // MARK: Closing

    /// Observers whose tokens were invalidated (or released) hold nothing open: once the program drops
    /// its handle and objects, the file closes at once and can be deleted, with no run loop turn between
    /// (and no wait for the notifier's worker, which without a FIFO wakes only every 50 ms).
    func testStoppedObserversLetTheFileCloseAtOnce() throws {
        let configuration = database.configuration(types)
        defer { Notifier.fifoCandidates.withLock { $0 = nil } }
        for (release, fifo) in [(false, true), (true, true), (false, false)] {
            Notifier.fifoCandidates.withLock { $0 = fifo ? nil : [] }
            do {
                let lattice = try open()
                let owner = try lattice.write { () -> NoteOwner in
                    let owner = try lattice.create(NoteOwner.self, value: ["name": "o"])
                    owner.pets.append(try lattice.create(NotePet.self, value: ["id": 1, "name": "p"]))
                    return owner
                }
                var tokens: [NotificationToken] = [
                    lattice.objects(NotePet.self).observe { _ in },
                    try lattice.objects(NotePet.self).filter("age > 0").observe(keyPaths: ["name"]) { _ in },
                    owner.observe { _ in },
                    owner.pets.observe { _ in },
                    lattice.observe { _, _ in },
                ]
                lattice.refresh()
                try lattice.write { owner.name = "changed" }
                lattice.refresh()
                if release { tokens.removeAll() } else { tokens.forEach { $0.invalidate() } }
                XCTAssertTrue(Environment.isOpen(path: database.path), "the handle is still in use")
                withExtendedLifetime(tokens) {}
            }
            XCTAssertFalse(Environment.isOpen(path: database.path), release ? "tokens released" : "tokens invalidated")
            XCTAssertTrue(try Lattice.deleteFiles(for: configuration))
        }
    }

    // MARK: Change log

    func testCommitsAreLoggedWhileObservedAndLogIsBounded() throws {
        let lattice = try open()
        try addPet(lattice, 1, "unobserved", age: 1)
        let table = try XCTUnwrap(lattice.changeLogTable())
        XCTAssertEqual(lattice.reading("log") { try $0.count(table) }, 0, "nobody observes: nothing is logged")

        let token = lattice.objects(NotePet.self).observe { _ in }
        try addPet(lattice, 2, "observed", age: 2)
        try lattice.write { lattice.object(ofType: NotePet.self, forPrimaryKey: 2)!.age = 3 }
        lattice.refresh()
        let entries = lattice.reading("log") { txn -> [ChangeSet]? in
            try ChangeLog(table: table).entries(txn, after: Int64(txn.id) - 2, through: Int64(txn.id))
        }
        let log = try XCTUnwrap(entries)
        XCTAssertEqual(log.count, 2)
        XCTAssertEqual(log[0].objects.map(\.kind), [.inserted])
        XCTAssertEqual(log[1].objects.first?.kind, .modified)
        XCTAssertEqual(log[1].objects.first?.columns, ChangeSet.columnBit(2), "only the age column")
        token.invalidate()

        // Reopened from disk the log is still there; the window keeps it bounded.
        let reopened = try open()
        XCTAssertEqual(reopened.reading("log") { try $0.count(table) }, 2)
        lattice.invalidate()
        reopened.invalidate()
        let bounded = try open()
        let keep = bounded.objects(NotePet.self).observe { _ in }
        // Trimmed a batch at a time: never more than window + batch entries, never one of the last
        // `window` commits missing.
        for i in 0..<Int(ChangeLog.window + 3 * ChangeLog.trimBatch) + 7 {
            try bounded.write { bounded.object(ofType: NotePet.self, forPrimaryKey: 2)!.age = i }
            guard i > Int(ChangeLog.window) + 40, i % 9 == 0 else { continue }
            let count = bounded.reading("log") { try $0.count(table) }
            XCTAssertLessThanOrEqual(count, Int(ChangeLog.window + ChangeLog.trimBatch), "after commit \(i)")
            XCTAssertGreaterThanOrEqual(count, Int(ChangeLog.window), "after commit \(i)")
            let recent = bounded.reading("log") { txn in
                try ChangeLog(table: table).entries(txn, after: Int64(txn.id) - ChangeLog.window, through: Int64(txn.id))
            }
            XCTAssertEqual(recent?.count, Int(ChangeLog.window), "after commit \(i)")
        }
        keep.invalidate()
    }

    func testChangeSetEncodingRoundTrips() {
        var changes = ChangeSet()
        changes.record("Dog", key: -5, .inserted)
        changes.record("Dog", key: 7, .modified, columns: 0b1010)
        changes.record("Person", key: 1 << 40, .deleted)
        changes.record("Person.dogs", owner: 3, .insert(2..<5))
        changes.record("Person.dogs", owner: 3, .remove(0..<1))
        changes.record("Person.dogs", owner: 3, .set(4))
        changes.record("Person.dogs", owner: 3, .clear)
        changes.record("Person.tags", owner: 9, .key(Array("tag".utf8)))
        let decoded = ChangeLog.encode(changes).withUnsafeBytes { ChangeLog.decode($0) }
        XCTAssertEqual(decoded?.objects.map(\.key), [-5, 7, 1 << 40])
        XCTAssertEqual(decoded?.objects.map(\.columns), [0, 0b1010, 0])
        XCTAssertEqual(decoded?.collections.map(\.operation), changes.collections.map(\.operation))
        XCTAssertEqual(decoded?.collections.map(\.property), changes.collections.map(\.property))
    }

    // MARK: Results on the run loop

    func testResultsObserverGetsInitialThenIndices() throws {
        let lattice = try open()
        for (id, name) in [(1, "a"), (2, "c"), (3, "e")] { try addPet(lattice, id, name, age: 1) }
        let puppies = try lattice.objects(NotePet.self).filter("age < 2").sorted(byKeyPath: "name")
        var changes: [LatticeCollectionChange<Results<NotePet>>] = []
        let token = puppies.observe { changes.append($0) }
        spin("initial") { changes.count == 1 }
        guard case .initial(let initial) = changes.first else { return XCTFail("initial first") }
        XCTAssertEqual(initial.count, 3)

        // Another handle (as another thread would) inserts "b", modifies "e" and ages "a" out of the filter.
        let other = try open()
        try other.write {
            _ = try other.create(NotePet.self, value: ["id": 4, "name": "b", "age": 0])
            other.object(ofType: NotePet.self, forPrimaryKey: 3)!.name = "e2"
            other.object(ofType: NotePet.self, forPrimaryKey: 1)!.age = 5
        }
        spin("update") { changes.count == 2 }
        guard case let .update(results, deletions, insertions, modifications) = changes.last else { return XCTFail("update") }
        XCTAssertEqual(results.map(\.name), ["b", "c", "e2"])
        XCTAssertEqual(deletions, [0])   // "a" left the filter
        XCTAssertEqual(insertions, [0])  // "b" sorts first
        XCTAssertEqual(modifications, [2], "\"e\" became \"e2\" and kept its place (old index 2)")

        // A sort-column change that moves an object: a deletion plus an insertion.
        try other.write { other.object(ofType: NotePet.self, forPrimaryKey: 4)!.name = "z" }
        spin("move") { changes.count == 3 }
        guard case let .update(moved, d2, i2, m2) = changes.last else { return XCTFail("update") }
        XCTAssertEqual(moved.map(\.name), ["c", "e2", "z"])
        XCTAssertEqual(d2, [0])
        XCTAssertEqual(i2, [2])
        XCTAssertEqual(m2, [])
        token.invalidate()
    }

    func testNonSortColumnChangeKeepsOrderAndReportsModification() throws {
        let lattice = try open()
        try lattice.write {
            for i in 0..<200 { _ = try lattice.create(NotePet.self, value: ["id": i, "name": "p\(1000 + i)", "age": i]) }
        }
        let sorted = try lattice.objects(NotePet.self).sorted(byKeyPath: "name")
        var last: (deletions: [Int], insertions: [Int], modifications: [Int])?
        var initial = false
        let token = sorted.observe { change in
            switch change {
            case .initial: initial = true
            case let .update(_, d, i, m): last = (d, i, m)
            case .error(let error): XCTFail("\(error)")
            }
        }
        spin("initial") { initial }
        try lattice.write { lattice.object(ofType: NotePet.self, forPrimaryKey: 150)!.age = -1 }
        spin("update") { last != nil }
        XCTAssertEqual(last?.deletions, [])
        XCTAssertEqual(last?.insertions, [])
        XCTAssertEqual(last?.modifications, [150])
        token.invalidate()
    }

    func testSortedResultsPlaceOnlyTheChangedObjects() throws {
        let lattice = try open()
        let owner = try lattice.write { () -> NoteOwner in
            for i in 0..<1_000 {
                _ = try lattice.create(NotePet.self, value: ["id": i, "name": String(format: "p%04d", (i * 7) % 1_000), "age": i % 10])
            }
            return try lattice.create(NoteOwner.self, value: ["name": "o"])
        }
        let query = { try lattice.objects(NotePet.self).filter("age < 8").sorted(byKeyPath: "name") }
        let results = try query()
        XCTAssertNotNil(ResultsPlacement(results), "a filter and sort on own columns is placed incrementally")
        XCTAssertNil(ResultsPlacement(try results.distinct(by: ["age"])), "distinct is evaluated again")
        XCTAssertNil(ResultsPlacement(try lattice.objects(NotePet.self).sorted(byKeyPath: "owner.name")), "a sort through a link is evaluated again")
        var last: (deletions: [Int], insertions: [Int], modifications: [Int])?
        let token = results.observe { if case let .update(_, d, i, m) = $0 { last = (d, i, m) } }
        lattice.refresh()
        let before = results.map(\.id)

        let other = try open()
        try other.write {
            other.object(ofType: NotePet.self, forPrimaryKey: 1)!.name = "p9999"      // moves to the end
            other.object(ofType: NotePet.self, forPrimaryKey: 2)!.age = 9             // leaves the filter
            other.object(ofType: NotePet.self, forPrimaryKey: 3)!.owner = other.objects(NoteOwner.self).first  // not a query column
            other.object(ofType: NotePet.self, forPrimaryKey: 4)!.name = "p0028a"      // was p0028: same place
            try other.delete(other.object(ofType: NotePet.self, forPrimaryKey: 5)!)
            _ = try other.create(NotePet.self, value: ["id": 5_000, "name": "p0000a", "age": 1])
        }
        lattice.refresh()
        let after = try query().map(\.id)
        XCTAssertEqual(results.map(\.id), after)
        let change = try XCTUnwrap(last)
        XCTAssertEqual(change.deletions, [1, 2, 5].compactMap { before.firstIndex(of: $0) }.sorted())
        XCTAssertEqual(change.insertions, [1, 5_000].compactMap { after.firstIndex(of: $0) }.sorted())
        XCTAssertEqual(change.modifications, [3, 4].compactMap { before.firstIndex(of: $0) }.sorted(),
                       "a changed sort value that keeps the object's place is a modification")
        _ = owner
        token.invalidate()
    }

    func testRefreshDeliversWithoutRunLoop() throws {
        let lattice = try open()
        var counts: [Int] = []
        let token = lattice.objects(NotePet.self).observe { change in
            if case .initial(let r) = change { counts.append(r.count) }
            if case .update(let r, _, _, _) = change { counts.append(r.count) }
        }
        lattice.refresh()
        XCTAssertEqual(counts, [0], "refresh delivers the initial notification")
        let other = try open()
        try addPet(other, 1, "x", age: 1)
        lattice.refresh()
        XCTAssertEqual(counts, [0, 1])
        token.invalidate()
    }

    func testRegistrationInsideWriteReportsError() throws {
        let lattice = try open()
        var error: Error?
        try lattice.write {
            _ = lattice.objects(NotePet.self).observe { change in if case .error(let e) = change { error = e } }
        }
        guard case .unsupported? = error as? LatticeError else { return XCTFail("expected a LatticeError, got \(String(describing: error))") }

        // On a queue too, for every kind: nothing is registered.
        let owner = try lattice.write { try lattice.create(NoteOwner.self, value: ["name": "o"]) }
        let pet = try lattice.write { try lattice.create(NotePet.self, value: ["id": 1]) }
        let queue = DispatchQueue(label: "inside-write")
        let errors = Locked(0), delivered = Locked(0)
        try lattice.beginWrite()
        let tokens = [
            lattice.objects(NotePet.self).observe(on: queue) { if case .error = $0 { errors.withLock { $0 += 1 } } else { delivered.withLock { $0 += 1 } } },
            owner.pets.observe(on: queue) { if case .error = $0 { errors.withLock { $0 += 1 } } else { delivered.withLock { $0 += 1 } } },
            pet.observe(on: queue) { if case .error = $0 { errors.withLock { $0 += 1 } } else { delivered.withLock { $0 += 1 } } },
        ]
        lattice.cancelWrite()
        queue.sync {}
        XCTAssertEqual(errors.withLock { $0 }, 3)
        XCTAssertEqual(delivered.withLock { $0 }, 0)
        tokens.forEach { $0.invalidate() }
    }

    // MARK: Property test: applying changesets reproduces the new array

    func testChangesetsReproduceResultsAndLists() throws {
        let lattice = try open()
        let owner = try lattice.write { try lattice.create(NoteOwner.self, value: ["name": "o"]) }
        var generator = SystemRandomNumberGenerator()
        // LATTICE_TEST_SEED replays a failing run.
        var seed = ProcessInfo.processInfo.environment["LATTICE_TEST_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 0...UInt64.max, using: &generator)
        print("changeset property test seed \(seed)")
        func next(_ n: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(n))
        }
        try lattice.write {
            for i in 0..<30 { _ = try lattice.create(NotePet.self, value: ["id": i, "name": "n\(next(50))", "age": next(10)]) }
        }
        // Each query is built again from scratch for the comparison: the observed results adopt the
        // incrementally computed order, so comparing them with themselves would prove nothing.
        let queries: [(String, (Lattice) throws -> Results<NotePet>)] = [
            ("unsorted", { $0.objects(NotePet.self) }),
            ("filtered", { try $0.objects(NotePet.self).filter("age < 5") }),
            ("sorted", { try $0.objects(NotePet.self).sorted(by: [SortDescriptor(keyPath: "name"), SortDescriptor(keyPath: "id")]) }),
            ("filtered sorted", { try $0.objects(NotePet.self).filter("age >= 3").sorted(byKeyPath: "age", ascending: false) }),
            ("sorted twice", { try $0.objects(NotePet.self).sorted(byKeyPath: "age").sorted(byKeyPath: "name", ascending: false) }),
            ("filtered on two columns", { try $0.objects(NotePet.self).filter("name BEGINSWITH 'n1' OR age == 7").sorted(byKeyPath: "name") }),
        ]
        let observed = try queries.map { ($0.0, try $0.1(lattice)) }
        let fresh = { (n: Int) throws -> [Int] in try queries[n].1(lattice).map(\.id) }
        /// What each pet looked like (name, age, owner's name): a kept element whose state changed must
        /// be reported as modified.
        func states() -> [Int: String] {
            Dictionary(uniqueKeysWithValues: lattice.objects(NotePet.self).map { ($0.id, "\($0.name) \($0.age) \($0.owner?.name ?? "-")") })
        }
        var previousStates = states()

        var previous: [[Int]] = try observed.indices.map(fresh)
        var tokens: [NotificationToken] = []
        var pending: [Int: (deletions: [Int], insertions: [Int], modifications: [Int])] = [:]
        for (n, entry) in observed.enumerated() {
            tokens.append(entry.1.observe { change in
                if case let .update(_, d, i, m) = change { pending[n] = (d, i, m) }
            })
        }
        var previousList = owner.pets.map(\.id)
        var listChange: (deletions: [Int], insertions: [Int], modifications: [Int])?
        var replacedInList = false
        tokens.append(owner.pets.observe { change in if case let .update(_, d, i, m) = change { listChange = (d, i, m) } })
        var previousTags = Array(owner.tags)
        var tagChange: (deletions: [Int], insertions: [Int])?
        tokens.append(owner.tags.observe { change in if case let .update(_, d, i, _) = change { tagChange = (d, i) } })
        lattice.refresh()  // initial notifications

        let writer = try open()
        var nextID = 100
        for round in 0..<60 {
            try writer.write {
                let pets = Array(writer.objects(NotePet.self))
                let list = writer.objects(NoteOwner.self).first!
                // Now and then a commit changes most objects: the observers evaluate their queries again.
                if round % 15 == 14 {
                    for pet in pets where next(4) != 0 { pet.name = "n\(next(50))" }
                    for i in 0..<70 { _ = try writer.create(NotePet.self, value: ["id": nextID + i, "name": "n\(next(50))", "age": next(10)]) }
                    nextID += 70
                }
                if round % 15 == 7 { list.name = "o\(round)" }
                for _ in 0..<(1 + next(4)) {
                    switch next(8) {
                    case 0:
                        _ = try writer.create(NotePet.self, value: ["id": nextID, "name": "n\(next(50))", "age": next(10)])
                        nextID += 1
                    case 1 where pets.count > 5:
                        let victim = pets[next(pets.count)]
                        if !victim.isInvalidated { try writer.delete(victim) }
                    case 2:
                        if let pet = pets.randomElement(), !pet.isInvalidated { pet.age = next(10) }
                    case 3:
                        if let pet = pets.randomElement(), !pet.isInvalidated { pet.name = "n\(next(50))" }
                    case 4:
                        if let pet = pets.randomElement(), !pet.isInvalidated { list.pets.insert(pet, at: next(list.pets.count + 1)) }
                    case 5 where list.pets.count > 1:
                        list.pets.move(from: next(list.pets.count), to: next(list.pets.count))
                    case 6 where !list.pets.isEmpty:
                        if next(2) == 0 {
                            list.pets.remove(at: next(list.pets.count))
                        } else if let pet = pets.randomElement(), !pet.isInvalidated {
                            list.pets[next(list.pets.count)] = pet
                            replacedInList = true
                        }
                    case 7:
                        if let pet = pets.randomElement(), !pet.isInvalidated { pet.owner = next(2) == 0 ? list : nil }
                        if list.tags.count > 3 { list.tags.remove(at: next(list.tags.count)) } else { list.tags.append("t\(next(5))") }
                    default:
                        break
                    }
                }
            }
            lattice.refresh()
            let nowStates = states()
            for (n, entry) in observed.enumerated() {
                let now = try fresh(n)
                XCTAssertEqual(entry.1.map(\.id), now, "\(entry.0) round \(round): the observed results match a new evaluation")
                let change = pending.removeValue(forKey: n)
                if let change {
                    XCTAssertEqual(apply(previous[n], change.deletions, change.insertions, now), now, "\(entry.0) round \(round)")
                    let deleted = Set(change.deletions)
                    XCTAssertTrue(change.modifications.allSatisfy { previous[n].indices.contains($0) && !deleted.contains($0) },
                                  "\(entry.0) round \(round): modifications are old indices of kept elements")
                    let changedKept = previous[n].indices.filter { !deleted.contains($0) && previousStates[previous[n][$0]] != nowStates[previous[n][$0]] }
                    XCTAssertTrue(Set(changedKept).isSubset(of: change.modifications), "\(entry.0) round \(round): every changed kept element is modified")
                } else {
                    XCTAssertEqual(previous[n], now, "\(entry.0) round \(round): changed without a notification")
                    XCTAssertTrue(previous[n].allSatisfy { previousStates[$0] == nowStates[$0] }, "\(entry.0) round \(round): a change not reported")
                }
                previous[n] = now
            }
            let listNow = owner.pets.map(\.id)
            if let change = listChange {
                XCTAssertEqual(apply(previousList, change.deletions, change.insertions, change.modifications, listNow), listNow, "list round \(round)")
                let deleted = Set(change.deletions)
                let kept = previousList.indices.filter { !deleted.contains($0) }
                XCTAssertTrue(Set(change.modifications).isSubset(of: kept), "list round \(round): modifications are old indices of kept entries")
                let changedKept = kept.filter { previousStates[previousList[$0]] != nowStates[previousList[$0]] }
                XCTAssertTrue(Set(changedKept).isSubset(of: change.modifications), "list round \(round): every changed kept entry is modified")
            } else {
                XCTAssertEqual(previousList, listNow, "list round \(round): changed without a notification")
                XCTAssertTrue(previousList.allSatisfy { previousStates[$0] == nowStates[$0] }, "list round \(round): a change not reported")
            }
            previousStates = nowStates
            listChange = nil
            previousList = listNow
            let tagsNow = Array(owner.tags)
            if let change = tagChange {
                XCTAssertEqual(apply(previousTags, change.deletions, change.insertions, tagsNow), tagsNow, "tags round \(round)")
            } else {
                XCTAssertEqual(previousTags, tagsNow)
            }
            tagChange = nil
            previousTags = tagsNow
        }
        tokens.forEach { $0.invalidate() }
        XCTAssertTrue(replacedInList, "the rounds replaced a List entry in place")
    }

    /// `list[i] = x` and `replace(index:object:)` are modifications of that entry, as Realm reports them.
    func testReplacingAListEntryIsAModification() throws {
        let lattice = try open()
        let (owner, extra) = try lattice.write { () -> (NoteOwner, NotePet) in
            let owner = try lattice.create(NoteOwner.self, value: ["name": "o"])
            for i in 0..<3 { owner.pets.append(try lattice.create(NotePet.self, value: ["id": i, "name": "p\(i)"])) }
            return (owner, try lattice.create(NotePet.self, value: ["id": 9, "name": "extra"]))
        }
        var changes: [[[Int]]] = []
        let token = owner.pets.observe { change in
            if case let .update(_, d, i, m) = change { changes.append([d, i, m]) }
        }
        lattice.refresh()
        try lattice.write { owner.pets[1] = extra }
        lattice.refresh()
        try lattice.write { owner.pets.replace(index: 0, object: extra) }
        lattice.refresh()
        // Replaced, then removed in the same commit: a deletion only.
        try lattice.write {
            owner.pets[2] = extra
            owner.pets.remove(at: 2)
        }
        lattice.refresh()
        XCTAssertEqual(changes, [[[], [], [1]], [[], [], [0]], [[2], [], []]])
        XCTAssertEqual(owner.pets.map(\.id), [9, 9])
        token.invalidate()
    }

    /// The changeset of two arrays (duplicates, shared starts and ends, edits anywhere) turns the old one
    /// into the new one; elements kept in place are reported modified exactly when the test says so.
    func testCollectionDiffReproducesTheNewArray() {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<2_000 {
            let old = (0..<Int.random(in: 0...40, using: &generator)).map { _ in Int64.random(in: 0..<12, using: &generator) }
            var new = old
            for _ in 0..<Int.random(in: 0...4, using: &generator) {
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: new.insert(Int64.random(in: 0..<12, using: &generator), at: Int.random(in: 0...new.count, using: &generator))
                case 1 where !new.isEmpty: new.remove(at: Int.random(in: 0..<new.count, using: &generator))
                default: if new.count > 1 { new.swapAt(Int.random(in: 0..<new.count, using: &generator), Int.random(in: 0..<new.count, using: &generator)) }
                }
            }
            let diff = CollectionDiff.compute(old: old, new: new) { $0 % 3 == 0 }
            XCTAssertEqual(apply(old, diff.deletions, diff.insertions, new), new, "round \(round): \(old) -> \(new)")
            let deleted = Set(diff.deletions)
            let kept = old.indices.filter { !deleted.contains($0) }
            XCTAssertEqual(diff.modifications, kept.filter { old[$0] % 3 == 0 }, "round \(round)")
            XCTAssertEqual(old.count - diff.deletions.count + diff.insertions.count, new.count)
        }
    }

    /// The previous array with `deletions` removed (old indices) and the new array's elements at
    /// `insertions` inserted (new indices).
    private func apply<T>(_ old: [T], _ deletions: [Int], _ insertions: [Int], _ new: [T]) -> [T] {
        var out = old
        for i in deletions.sorted(by: >) { out.remove(at: i) }
        for i in insertions.sorted() { out.insert(new[i], at: i) }
        return out
    }

    /// `apply`, with the kept entries at the old positions `modifications` reloaded from `new` (a List
    /// entry replaced in place is a modification, as in Realm).
    private func apply<T>(_ old: [T], _ deletions: [Int], _ insertions: [Int], _ modifications: [Int], _ new: [T]) -> [T] {
        let deleted = Set(deletions), inserted = Set(insertions), modified = Set(modifications)
        var kept = old.indices.filter { !deleted.contains($0) }.makeIterator()
        return new.indices.map { j in
            if inserted.contains(j) { return new[j] }
            guard let i = kept.next() else { return new[j] }
            return modified.contains(i) ? new[j] : old[i]
        }
    }

    // MARK: Objects

    /// Setting a property to the value it has counts as a change, as in Realm: the object observer gets
    /// it (old and new value equal), collection observers a modification; `add(_:update: .modified)` of
    /// an equal object does not, `.all` counts every property.
    func testSettingAPropertyToItsValueCounts() throws {
        let lattice = try open()
        let pet = try lattice.write { try lattice.create(NotePet.self, value: ["id": 1, "name": "a", "age": 3]) }
        var objectChanges: [[String]] = []
        var modifications: [[Int]] = []
        let objectToken = pet.observe { change in
            if case let .change(_, properties) = change {
                objectChanges.append(properties.map { "\($0.name) \($0.oldValue ?? "nil") \($0.newValue ?? "nil")" })
            }
        }
        let resultsToken = lattice.objects(NotePet.self).observe { change in
            if case let .update(_, _, _, m) = change { modifications.append(m) }
        }
        lattice.refresh()
        try lattice.write { pet.age = 3 }
        lattice.refresh()
        XCTAssertEqual(objectChanges, [["age 3 3"]])
        XCTAssertEqual(modifications, [[0]])
        try lattice.write { try lattice.add(try NotePet(value: ["id": 1, "name": "a", "age": 3]), update: .modified) }
        lattice.refresh()
        XCTAssertEqual(objectChanges.count, 1, "an upsert of equal values changes nothing")
        // `.all` counts every property, equal or not.
        try lattice.write { try lattice.add(try NotePet(value: ["id": 1, "name": "a", "age": 3]), update: .all) }
        lattice.refresh()
        XCTAssertEqual(objectChanges.last, ["name a a", "age 3 3", "owner nil nil", "toy nil nil"])
        XCTAssertEqual(modifications.last, [0])
        // Every way of setting: key-value coding, the subscript, a link set to what it is.
        let before = objectChanges.count
        try lattice.write { pet.setValue(3, forKey: "age") }
        lattice.refresh()
        try lattice.write { pet["name"] = "a" }
        lattice.refresh()
        try lattice.write { pet.owner = nil }
        lattice.refresh()
        XCTAssertEqual(Array(objectChanges.dropFirst(before)), [["age 3 3"], ["name a a"], ["owner nil nil"]])
        // `create(_:value:update:)`: `.modified` counts what differs, `.all` what it is given.
        try lattice.write { _ = try lattice.create(NotePet.self, value: ["id": 1, "age": 3], update: .modified) }
        lattice.refresh()
        XCTAssertEqual(objectChanges.count, before + 3)
        try lattice.write { _ = try lattice.create(NotePet.self, value: ["id": 1, "age": 3], update: .all) }
        lattice.refresh()
        XCTAssertEqual(objectChanges.last, ["age 3 3"])
        XCTAssertEqual(try XCTUnwrap(lattice.object(ofType: NotePet.self, forPrimaryKey: 1)).age, 3)
        objectToken.invalidate()
        resultsToken.invalidate()
    }

    func testObjectObserverReportsValuesKeyPathsDeepChangesAndDeletion() throws {
        let lattice = try open()
        let (pet, toy) = try lattice.write { () -> (NotePet, NoteToy) in
            let owner = try lattice.create(NoteOwner.self, value: ["name": "Ann"])
            let toy = try lattice.create(NoteToy.self, value: ["label": "ball", "maker": owner])
            let pet = try lattice.create(NotePet.self, value: ["id": 1, "name": "Rex", "age": 3, "owner": owner, "toy": toy])
            return (pet, toy)
        }
        var all: [ObjectChange<NotePet>] = []
        var named: [[String]] = []
        let token = pet.observe { all.append($0) }
        let nameToken = pet.observe(keyPaths: ["name", "owner.name"]) { change in
            if case .change(_, let properties) = change { named.append(properties.map(\.name)) }
        }
        lattice.refresh()
        try lattice.write { pet.age = 4 }
        lattice.refresh()
        XCTAssertEqual(all.count, 1)
        if case .change(_, let properties)? = all.last {
            XCTAssertEqual(properties.map(\.name), ["age"])
            XCTAssertEqual(properties.first?.oldValue as? Int, 3)
            XCTAssertEqual(properties.first?.newValue as? Int, 4)
        } else { XCTFail("expected a change") }
        XCTAssertEqual(named, [], "age is not among the key paths")

        // Two hops away: pet -> toy -> maker. Counts without key paths, not with ["name", "owner.name"].
        try lattice.write { toy.maker!.name = "Bea" }
        lattice.refresh()
        if case .change(_, let properties)? = all.last { XCTAssertEqual(Set(properties.map(\.name)), ["owner", "toy"]) } else { XCTFail() }
        XCTAssertEqual(named, [["owner"]], "owner.name changed (the owner is also the toy's maker)")
        try lattice.write { toy.label = "bone" }
        lattice.refresh()
        XCTAssertEqual(named.count, 1, "toy.label is not watched by the key paths")

        try lattice.write { try lattice.delete(pet) }
        lattice.refresh()
        try addPet(lattice, 2, "other", age: 1)
        lattice.refresh()
        guard case .deleted? = all.last else { return XCTFail("expected .deleted last") }
        XCTAssertEqual(all.filter { if case .deleted = $0 { return true } else { return false } }.count, 1, ".deleted once")
        token.invalidate()
        nameToken.invalidate()
    }

    /// A commit too large to log still tells an object observer that what it reaches through a link may
    /// have changed (a superset, as collection observers report then); one watching only its own values
    /// hears nothing of it.
    func testObjectObserverHearsOfLinkedChangesInACommitTooLargeToLog() throws {
        let lattice = try open()
        let pet = try lattice.write { () -> NotePet in
            let owner = try lattice.create(NoteOwner.self, value: ["name": "Ann"])
            return try lattice.create(NotePet.self, value: ["id": 1, "name": "Rex", "owner": owner])
        }
        var reported: [[String]] = []
        var named: [[String]] = []
        let tokens = [
            pet.observe { if case .change(_, let properties) = $0 { reported.append(properties.map(\.name)) } },
            pet.observe(keyPaths: ["name"]) { if case .change(_, let properties) = $0 { named.append(properties.map(\.name)) } },
        ]
        lattice.refresh()
        try lattice.write {
            pet.owner!.name = "Bea"
            for i in 0..<1_100 { _ = try lattice.create(NoteChain.self, value: ["name": "bulk \(i)"]) }
        }
        lattice.refresh()
        XCTAssertEqual(reported.count, 1)
        XCTAssertTrue(reported.first?.contains("owner") == true, "the owner it links to changed: \(reported)")
        XCTAssertFalse(reported.first?.contains("name") == true, "its own values are compared, not guessed")
        XCTAssertEqual(named, [], "only name is watched, and it did not change")
        tokens.forEach { $0.invalidate() }
    }

    func testChangesFourLinksAwayCountAndFiveDoNot() throws {
        let lattice = try open()
        let chain = try lattice.write { () -> [NoteChain] in
            let nodes = try (0..<6).map { try lattice.create(NoteChain.self, value: ["name": "c\($0)"]) }
            for i in 0..<5 { nodes[i].next = nodes[i + 1] }
            return nodes
        }
        let head = try lattice.objects(NoteChain.self).filter("name == 'c0'")
        var modifications: [[Int]] = []
        var named: [[Int]] = []
        var properties: [[String]] = []
        let tokens = [
            head.observe { if case let .update(_, _, _, m) = $0 { modifications.append(m) } },
            head.observe(keyPaths: ["name"]) { if case let .update(_, _, _, m) = $0 { named.append(m) } },
            chain[0].observe { if case let .change(_, p) = $0 { properties.append(p.map(\.name)) } },
        ]
        lattice.refresh()
        try lattice.write { chain[5].name = "five hops away" }
        lattice.refresh()
        XCTAssertEqual(modifications, [], "c0 -> c1 -> c2 -> c3 -> c4 -> c5 is five hops: not a change of c0")
        XCTAssertEqual(properties, [])
        try lattice.write { chain[4].name = "four hops away" }
        lattice.refresh()
        XCTAssertEqual(modifications, [[0]], "four hops away is a modification of c0")
        XCTAssertEqual(properties, [["next"]], "reported as a change of the link it goes through")
        XCTAssertEqual(named, [], "with key paths only the named property counts")
        try lattice.write { chain[0].name = "c0" }
        lattice.refresh()
        XCTAssertEqual(named, [[0]], "a value written equal to the stored one still counts, as in Realm")
        tokens.forEach { $0.invalidate() }
    }

    /// A List observed while its owner is deleted reports every entry deleted, then nothing more.
    func testListObserverOfADeletedOwnerReportsItsEntriesDeleted() throws {
        let lattice = try open()
        let owner = try lattice.write { () -> NoteOwner in
            let owner = try lattice.create(NoteOwner.self, value: ["name": "o"])
            owner.pets.append(objectsIn: try (0..<3).map { try lattice.create(NotePet.self, value: ["id": $0, "name": "p\($0)"]) })
            return owner
        }
        var deletions: [[Int]] = []
        let token = owner.pets.observe { if case let .update(_, d, _, _) = $0 { deletions.append(d) } }
        lattice.refresh()
        try lattice.write { try lattice.delete(owner) }
        lattice.refresh()
        XCTAssertEqual(deletions, [[0, 1, 2]])
        try addPet(lattice, 10, "later", age: 1)
        lattice.refresh()
        XCTAssertEqual(deletions.count, 1)
        token.invalidate()
    }

    /// Hundreds of object observers over one graph: the objects a change reaches are found once per
    /// delivery, backwards from the change, and tell each observer what walking forward from its object
    /// would; a commit changing more objects than that walk takes asks each observer's object instead.
    func testManyObjectObserversSeeChangesReachedThroughALargeList() throws {
        let lattice = try open()
        let (pets, loner) = try lattice.write { () -> ([NotePet], NotePet) in
            let hub = try lattice.create(NoteOwner.self, value: ["name": "hub"])
            let pets = try (0..<200).map { try lattice.create(NotePet.self, value: ["id": $0, "name": "p\($0)", "owner": hub]) }
            hub.pets.append(objectsIn: pets)
            return (pets, try lattice.create(NotePet.self, value: ["id": 1_000, "name": "loner"]))
        }
        var seen: [Int: [[String]]] = [:]
        let tokens = (pets + [loner]).map { pet in
            let id = pet.id
            return pet.observe { if case .change(_, let properties) = $0 { seen[id, default: []].append(properties.map(\.name)) } }
        }
        lattice.refresh()
        func expectOneCommitChanging(_ changed: Int, _ what: String) {
            XCTAssertEqual(seen[changed], [["age", "owner"]], "its owner's list holds it too (\(what))")
            XCTAssertNil(seen[1_000], "the loner links to nothing that changed (\(what))")
            for pet in pets where pet.id != changed {
                XCTAssertEqual(seen[pet.id], [["owner"]], "pet \(pet.id) reaches pet \(changed) through its owner's list (\(what))")
            }
            seen = [:]
        }

        try lattice.write { pets[7].age = 99 }
        lattice.refresh()
        expectOneCommitChanging(7, "found backwards from the change")

        // Commits logged one by one (each under the log's limit per commit), delivered together.
        for batch in 0..<11 {
            try lattice.write {
                for i in 0..<1_000 { _ = try lattice.create(NoteChain.self, value: ["name": "bulk \(batch).\(i)"]) }
                if batch == 10 { pets[9].age = 5 }
            }
        }
        lattice.refresh()
        expectOneCommitChanging(9, "too many changes: asked of each object")
        tokens.forEach { $0.invalidate() }
    }

    // MARK: Tokens and skipping

    /// A skipped write skips its own changes only: what another handle committed before it (and an
    /// own commit not delivered yet) is still reported, to collection and object observers alike.
    func testWriteWithoutNotifyingStillReportsEarlierCommits() throws {
        let lattice = try open()
        for id in 0..<5 { try addPet(lattice, id, "p\(id)", age: 1) }
        let pets = try lattice.objects(NotePet.self).sorted(byKeyPath: "id")
        let first = try XCTUnwrap(pets.first)
        var ids: [Int] = []
        var changes: [String] = []
        var objectChanges: [[String]] = []
        let tokens = [
            pets.observe { change in
                switch change {
                case let .initial(r): ids = r.map(\.id)
                case let .update(r, deletions, insertions, modifications):
                    var applied = ids
                    for i in deletions.sorted(by: >) { applied.remove(at: i) }
                    for i in insertions.sorted() { applied.insert(r[i].id, at: i) }
                    XCTAssertEqual(applied, r.map(\.id), "the changeset takes the old array to the new one")
                    ids = r.map(\.id)
                    changes.append("d\(deletions) i\(insertions) m\(modifications)")
                case let .error(error): XCTFail("\(error)")
                }
            },
            first.observe { if case let .change(_, p) = $0 { objectChanges.append(p.map(\.name)) } },
        ]
        lattice.refresh()
        let other = try open()
        try other.write {
            _ = try other.create(NotePet.self, value: ["id": 50, "name": "foreign"])
            other.object(ofType: NotePet.self, forPrimaryKey: 0)?.name = "renamed elsewhere"
        }
        try lattice.write(withoutNotifying: tokens) { first.age = 99 }
        XCTAssertEqual(changes, ["d[] i[5] m[0]"], "the other handle's commit, delivered before the skipped write")
        XCTAssertEqual(objectChanges, [["name"]])
        try lattice.write { pets[2].age = 7 }
        try lattice.write(withoutNotifying: tokens) { pets[3].age = 8 }
        lattice.refresh()
        XCTAssertEqual(changes, ["d[] i[5] m[0]", "d[] i[] m[2]"], "an own commit not delivered yet is reported too")
        XCTAssertEqual(ids, [0, 1, 2, 3, 4, 50])
        XCTAssertEqual(objectChanges, [["name"]], "the age change was skipped")
        tokens.forEach { $0.invalidate() }
    }

    /// `beginWrite()` then `commitWrite(withoutNotifying:)` after an own commit the observers have not
    /// heard of yet: they hear of both (the two cannot be told apart), never of neither.
    func testCommitWithoutNotifyingAfterAnUndeliveredOwnCommitReportsBoth() throws {
        let lattice = try open()
        var inserted: [[Int]] = []
        let token = lattice.objects(NotePet.self).observe { if case let .update(_, _, i, _) = $0 { inserted.append(i) } }
        lattice.refresh()
        try addPet(lattice, 1, "a", age: 1)  // not delivered: no run loop turn, no refresh
        try lattice.beginWrite()
        _ = try lattice.create(NotePet.self, value: ["id": 2, "name": "b"])
        try lattice.commitWrite(withoutNotifying: [token])
        lattice.refresh()
        XCTAssertEqual(inserted, [[0, 1]], "the first insertion is reported, with the skipped one it cannot be told from")
        token.invalidate()
    }

    /// An object observer hears of a change of an object in one of its Lists: without key paths (up to four
    /// hops) and with a key path through the List.
    func testObjectObserversSeeChangesThroughTheirLists() throws {
        let lattice = try open()
        let owner = try lattice.write { () -> NoteOwner in
            let owner = try lattice.create(NoteOwner.self, value: ["name": "o"])
            owner.pets.append(try lattice.create(NotePet.self, value: ["id": 1, "name": "p"]))
            return owner
        }
        var all: [[String]] = [], named: [[String]] = [], aged: [[String]] = [], own: [[String]] = []
        let tokens = [
            owner.observe { if case let .change(_, p) = $0 { all.append(p.map(\.name)) } },
            owner.observe(keyPaths: ["pets.name"]) { if case let .change(_, p) = $0 { named.append(p.map(\.name)) } },
            owner.observe(keyPaths: ["pets.age"]) { if case let .change(_, p) = $0 { aged.append(p.map(\.name)) } },
            owner.observe(keyPaths: ["name"]) { if case let .change(_, p) = $0 { own.append(p.map(\.name)) } },
        ]
        lattice.refresh()
        try lattice.write { owner.pets[0].name = "renamed" }
        lattice.refresh()
        XCTAssertEqual(all, [["pets"]])
        XCTAssertEqual(named, [["pets"]])
        XCTAssertEqual(aged, [], "only the pets' age is watched")
        XCTAssertEqual(own, [])
        try lattice.write { _ = try lattice.create(NotePet.self, value: ["id": 2, "name": "unrelated"]) }
        lattice.refresh()
        XCTAssertEqual(all, [["pets"]], "a pet not in the List is no change")
        tokens.forEach { $0.invalidate() }
    }

    /// Key paths through a link count only what they name in the linked object, for collection observers
    /// as for object observers.
    func testCollectionKeyPathsThroughLinksCountOnlyWhatTheyName() throws {
        let lattice = try open()
        let owner = try lattice.write { () -> NoteOwner in
            let owner = try lattice.create(NoteOwner.self, value: ["name": "Ann"])
            let pet = try lattice.create(NotePet.self, value: ["id": 1, "name": "Rex", "owner": owner])
            owner.pets.append(pet)
            return owner
        }
        var results: [[Int]] = [], list: [[Int]] = []
        let tokens = [
            lattice.objects(NotePet.self).observe(keyPaths: ["owner.name"]) { if case let .update(_, _, _, m) = $0 { results.append(m) } },
            owner.pets.observe(keyPaths: ["owner.name"]) { if case let .update(_, _, _, m) = $0 { list.append(m) } },
        ]
        lattice.refresh()
        try lattice.write { owner.tags.append("x") }
        lattice.refresh()
        try lattice.write { owner.pets[0].age = 3 }
        lattice.refresh()
        XCTAssertEqual(results, [], "neither the owner's List nor the pet's age is watched")
        XCTAssertEqual(list, [])
        try lattice.write { owner.name = "Bea" }
        lattice.refresh()
        XCTAssertEqual(results, [[0]])
        XCTAssertEqual(list, [[0]])
        try lattice.write { owner.pets[0].owner = nil }
        lattice.refresh()
        XCTAssertEqual(results, [[0], [0]], "the link itself is watched too")
        tokens.forEach { $0.invalidate() }
    }

    /// A key path that names no property is an error, not an observer that never fires.
    func testMistypedKeyPathsAreErrors() throws {
        let lattice = try open()
        let (owner, pet) = try lattice.write { () -> (NoteOwner, NotePet) in
            let owner = try lattice.create(NoteOwner.self, value: ["name": "Ann"])
            return (owner, try lattice.create(NotePet.self, value: ["id": 1, "name": "Rex", "owner": owner]))
        }
        var errors: [LatticeError] = []
        let tokens = [
            pet.observe(keyPaths: ["nmae"]) { if case let .error(e) = $0 { errors.append(e as? LatticeError ?? .invalidQuery(message: "?")) } },
            lattice.objects(NotePet.self).observe(keyPaths: ["owner.nmae"]) {
                if case let .error(e) = $0 { errors.append(e as? LatticeError ?? .invalidQuery(message: "?")) }
            },
            owner.pets.observe(keyPaths: ["age.years"]) { if case let .error(e) = $0 { errors.append(e as? LatticeError ?? .invalidQuery(message: "?")) } },
            pet.observe(keyPaths: ["owner.pets.name", "toy.maker.name"]) { if case .error = $0 { XCTFail("valid paths") } },
        ]
        XCTAssertEqual(errors, [.unknownProperty(className: "NotePet", property: "nmae"),
                                .unknownProperty(className: "NoteOwner", property: "nmae"),
                                .unknownProperty(className: "NotePet", property: "age.years")])
        tokens.forEach { $0.invalidate() }
    }

    /// A handle observer registered inside a write that changes nothing hears of that commit at once (as
    /// every own commit), and of the next one.
    func testHandleObserverRegisteredInAnEmptyWriteHearsTheNextCommit() throws {
        let lattice = try open()
        var notified = 0
        var token: NotificationToken?
        try lattice.write { token = lattice.observe { _, _ in notified += 1 } }
        XCTAssertEqual(notified, 1)
        let other = try open()
        try addPet(other, 1, "a", age: 1)
        lattice.refresh()
        XCTAssertEqual(notified, 2)
        token?.invalidate()
    }

    func testWriteWithoutNotifyingAndInvalidateInsideCallback() throws {
        let lattice = try open()
        var skippedCount = 0, otherCount = 0
        let results = lattice.objects(NotePet.self)
        let skipped = results.observe { if case .update = $0 { skippedCount += 1 } }
        var selfStopping: NotificationToken?
        var stoppingCount = 0
        selfStopping = results.observe { change in
            if case .update = change {
                stoppingCount += 1
                selfStopping?.invalidate()
            }
        }
        let other = results.observe { if case .update = $0 { otherCount += 1 } }
        lattice.refresh()
        try lattice.write(withoutNotifying: [skipped]) { _ = try lattice.create(NotePet.self, value: ["id": 1]) }
        lattice.refresh()
        XCTAssertEqual(skippedCount, 0)
        XCTAssertEqual(otherCount, 1)
        try addPet(lattice, 2, "b", age: 1)
        lattice.refresh()
        XCTAssertEqual(skippedCount, 1, "later writes are reported")
        XCTAssertEqual(stoppingCount, 1, "invalidated inside its own callback: no further delivery")
        XCTAssertEqual(otherCount, 2)

        // An observer added while deliveries are under way starts with its initial value.
        var late: [String] = []
        let lateToken = results.observe { change in
            if case .initial(let r) = change { late.append("initial \(r.count)") }
            if case .update(let r, _, _, _) = change { late.append("update \(r.count)") }
        }
        try addPet(lattice, 3, "c", age: 1)
        lattice.refresh()
        XCTAssertEqual(late, ["initial 3"], "the initial notification is at the version it is delivered")
        try addPet(lattice, 4, "d", age: 1)
        lattice.refresh()
        XCTAssertEqual(late, ["initial 3", "update 4"])
        [skipped, other, lateToken].forEach { $0.invalidate() }
    }

    /// As Realm's: a commit of the handle, an empty one too, calls its `observe` blocks before the
    /// write returns, and only once (not again at the next turn or refresh).
    func testHandleObserversHearOfOwnCommitsAtOnce() throws {
        let lattice = try open()
        var notes: [Lattice.Notification] = []
        let token = lattice.observe { note, observed in
            XCTAssertTrue(observed === lattice)
            notes.append(note)
        }
        XCTAssertEqual(notes, [])
        try lattice.write {}
        XCTAssertEqual(notes, [.didChange], "an empty write notifies too")
        try addPet(lattice, 1, "a", age: 1)
        XCTAssertEqual(notes, [.didChange, .didChange])
        lattice.refresh()
        RunLoop.current.run(until: Date().addingTimeInterval(0.05))
        XCTAssertEqual(notes.count, 2, "told once")
        try lattice.beginWrite()
        try addPetInWrite(lattice, 2)
        try lattice.commitWrite()
        XCTAssertEqual(notes.count, 3)
        token.invalidate()
        try addPet(lattice, 3, "c", age: 1)
        XCTAssertEqual(notes.count, 3, "an invalidated token hears nothing")
    }

    /// A commit made by an observer's callback during a delivery is told to the handle's blocks once,
    /// and the delivery under way does not tell them of its older commit afterwards.
    func testHandleObserversHearOfACommitMadeDuringADeliveryOnce() throws {
        let lattice = try open()
        var told = 0
        let handleToken = lattice.observe { _, _ in told += 1 }
        var wrote = false
        let resultsToken = lattice.objects(NotePet.self).observe { change in
            guard case .update = change, !wrote else { return }
            wrote = true
            try? self.addPet(lattice, 2, "b", age: 1)
        }
        lattice.refresh()
        let other = try open()
        try addPet(other, 1, "a", age: 1)
        lattice.refresh()
        XCTAssertTrue(wrote)
        XCTAssertEqual(told, 1, "the handle's state holds both commits when it is told")
        lattice.refresh()
        RunLoop.current.run(until: Date().addingTimeInterval(0.05))
        XCTAssertEqual(told, 1)
        XCTAssertEqual(lattice.objects(NotePet.self).count, 2)
        [handleToken, resultsToken].forEach { $0.invalidate() }
    }

    private func addPetInWrite(_ lattice: Lattice, _ id: Int) throws {
        _ = try lattice.create(NotePet.self, value: ["id": id])
    }

    /// `write(withoutNotifying:)` and `commitWrite(withoutNotifying:)` skip the handle's own observers
    /// listed too; the others, and later writes, are told.
    func testWriteWithoutNotifyingSkipsHandleObservers() throws {
        let lattice = try open()
        var skipped = 0, told = 0
        let skippedToken = lattice.observe { _, _ in skipped += 1 }
        let toldToken = lattice.observe { _, _ in told += 1 }
        try lattice.write(withoutNotifying: [skippedToken]) { try lattice.deleteAll() }
        try lattice.write(withoutNotifying: [skippedToken]) { _ = try lattice.create(NotePet.self, value: ["id": 1]) }
        try lattice.beginWrite()
        try addPetInWrite(lattice, 2)
        try lattice.commitWrite(withoutNotifying: [skippedToken])
        lattice.refresh()
        RunLoop.current.run(until: Date().addingTimeInterval(0.05))
        XCTAssertEqual(skipped, 0)
        XCTAssertEqual(told, 3)
        try addPet(lattice, 3, "c", age: 1)
        XCTAssertEqual(skipped, 1)
        XCTAssertEqual(told, 4)
        [skippedToken, toldToken].forEach { $0.invalidate() }
    }

    /// An object observer measures changes from its registration, as Realm's: a commit before its first
    /// delivery (of this handle, or of another one seen by `refresh()`) is reported.
    func testObjectObserverReportsCommitsBeforeItsFirstDelivery() throws {
        let lattice = try open()
        try addPet(lattice, 1, "a", age: 1)
        let pet = try XCTUnwrap(lattice.object(ofType: NotePet.self, forPrimaryKey: 1))
        var changes: [[String]] = []
        let token = pet.observe { change in
            if case .change(_, let properties) = change {
                changes.append(properties.map { "\($0.name) \($0.oldValue.map { "\($0)" } ?? "nil") \($0.newValue.map { "\($0)" } ?? "nil")" })
            }
        }
        try lattice.write { pet.age = 2 }
        spin("the change") { !changes.isEmpty }
        XCTAssertEqual(changes, [["age 1 2"]])

        let other = try open()
        let again = try XCTUnwrap(lattice.object(ofType: NotePet.self, forPrimaryKey: 1))
        var remote: [[String]] = []
        let remoteToken = again.observe { change in
            if case .change(_, let properties) = change { remote.append(properties.map(\.name)) }
        }
        try other.write { other.object(ofType: NotePet.self, forPrimaryKey: 1)?.name = "b" }
        lattice.refresh()
        XCTAssertEqual(remote, [["name"]], "delivered by refresh()")
        [token, remoteToken].forEach { $0.invalidate() }
    }

    func testLatticeObserverAndAutorefreshOff() throws {
        let lattice = try open()
        var notes: [Lattice.Notification] = []
        let token = lattice.observe { note, _ in notes.append(note) }
        let other = try open()
        try addPet(other, 1, "a", age: 1)
        spin("didChange") { notes == [.didChange] }
        lattice.autorefresh = false
        // An object observer registered meanwhile wakes the handle too: still one refreshRequired a commit.
        let pet = try XCTUnwrap(lattice.object(ofType: NotePet.self, forPrimaryKey: 1))
        let petToken = pet.observe { _ in }
        try addPet(other, 2, "b", age: 1)
        spin("refreshRequired") { notes.last == .refreshRequired }
        RunLoop.current.run(until: Date().addingTimeInterval(0.05))
        XCTAssertEqual(notes, [.didChange, .refreshRequired])
        petToken.invalidate()
        XCTAssertEqual(lattice.objects(NotePet.self).count, 1, "the handle stays on its snapshot")
        lattice.refresh()
        XCTAssertEqual(notes.last, .didChange)
        XCTAssertEqual(lattice.objects(NotePet.self).count, 2)
        token.invalidate()
    }

    func testObserversAddedAndRemovedWhileCommitsArrive() throws {
        let lattice = try open()
        let config = database.configuration(types)
        let finished = Locked(false)
        let writer = Thread {
            defer { finished.withLock { $0 = true } }
            guard let other = try? Lattice(configuration: config) else { return }
            for i in 0..<300 {
                try? other.write {
                    _ = try other.create(NotePet.self, value: ["id": i, "name": "w\(i % 37)", "age": i % 10])
                    if i % 3 == 0, let old = other.object(ofType: NotePet.self, forPrimaryKey: i / 2) { try other.delete(old) }
                }
            }
        }
        // One observer stays for the whole run and mirrors the results by applying each changeset.
        let sorted = try lattice.objects(NotePet.self).filter("age < 7").sorted(byKeyPath: "name")
        var mirror: [Int] = []
        let mirrorToken = sorted.observe { change in
            switch change {
            case .initial(let r): mirror = r.map(\.id)
            case let .update(r, d, i, _): mirror = self.apply(mirror, d, i, r.map(\.id))
            case .error(let e): XCTFail("\(e)")
            }
        }
        writer.start()
        // Meanwhile observers come and go, on the run loop and on a queue.
        var churn: [(token: NotificationToken, stopped: Locked<Bool>)] = []
        let queue = DispatchQueue(label: "churn")
        var lateCallbacks = 0
        var rounds = 0
        while !finished.withLock({ $0 }) || rounds < 30 {
            let stopped = Locked(false)
            let token = rounds % 2 == 0
                ? try lattice.objects(NotePet.self).filter("age > 2").observe { _ in if stopped.withLock({ $0 }) { lateCallbacks += 1 } }
                : lattice.objects(NotePet.self).observe(on: queue) { _ in }
            churn.append((token, stopped))
            RunLoop.current.run(until: Date().addingTimeInterval(0.003))
            if churn.count > 4 {
                let gone = churn.removeFirst()
                gone.token.invalidate()
                gone.stopped.withLock { $0 = true }
            }
            rounds += 1
        }
        let expected = try lattice.objects(NotePet.self).filter("age < 7").sorted(byKeyPath: "name")
        spin("the mirror to catch up") {
            lattice.refresh()
            return mirror == expected.map(\.id)
        }
        XCTAssertEqual(lateCallbacks, 0, "no callback after invalidate()")
        XCTAssertEqual(mirror, try lattice.objects(NotePet.self).filter("age < 7").sorted(byKeyPath: "name").map(\.id))
        churn.forEach { $0.token.invalidate() }
        mirrorToken.invalidate()
    }

    // MARK: Queues and async sequences

    func testQueueObserverGetsResultsAtTheNewVersion() throws {
        let lattice = try open()
        let queue = DispatchQueue(label: "observer")
        let seen = Locked<[String]>([])
        let token = try lattice.objects(NotePet.self).filter("age > 1").observe(on: queue) { change in
            switch change {
            case .initial(let r): seen.withLock { $0.append("initial \(r.count)") }
            case let .update(r, _, i, _): seen.withLock { $0.append("update \(r.count) +\(i.count) \(r.map(\.name).sorted())") }
            case .error(let e): seen.withLock { $0.append("error \(e)") }
            }
        }
        spin("initial") { seen.withLock { $0.count } == 1 }
        try addPet(lattice, 1, "young", age: 1)
        try addPet(lattice, 2, "old", age: 9)
        spin("update") { seen.withLock { $0.last } == "update 1 +1 [\"old\"]" }
        XCTAssertEqual(seen.withLock { $0.first }, "initial 0")
        token.invalidate()
        _ = try XCTUnwrap(Optional(lattice))
    }

    func testQueueObserverGetsEveryCommitTooLargeToLog() throws {
        let lattice = try open()
        try lattice.write { for i in 0..<1_200 { _ = try lattice.create(NotePet.self, value: ["id": i, "name": "p\(i)"]) } }
        let arrived = DispatchSemaphore(value: 0)
        let seen = Locked<[Int]>([])
        let token = try lattice.objects(NotePet.self).sorted(byKeyPath: "name").observe(on: DispatchQueue(label: "overflow")) { change in
            if case let .update(_, _, _, modifications) = change { seen.withLock { $0.append(modifications.count) } }
            if case let .update(results, _, _, _) = change { _ = results.count }
            arrived.signal()
        }
        XCTAssertEqual(arrived.wait(timeout: .now() + 20), .success, "initial")
        for round in 1...5 {
            // More changes than one log entry holds: the observer evaluates its query again.
            try lattice.write { for pet in lattice.objects(NotePet.self) { pet.age = round } }
            XCTAssertEqual(arrived.wait(timeout: .now() + 20), .success, "round \(round) delivered")
        }
        XCTAssertEqual(seen.withLock { $0 }, Array(repeating: 1_200, count: 5), "every object kept its place and is modified")
        token.invalidate()
    }

    func testAsyncSequenceYieldsInitialThenChanges() async throws {
        let lattice = try open()
        let writerConfig = database.configuration(types)
        var iterator = lattice.objects(NotePet.self).changes.makeAsyncIterator()
        guard case .initial(let r)? = await iterator.next() else { return XCTFail("initial first") }
        XCTAssertEqual(r.count, 0)
        let writer = Thread {
            guard let other = try? Lattice(configuration: writerConfig) else { return }
            try? other.write { _ = try other.create(NotePet.self, value: ["id": 7, "name": "async"]) }
        }
        writer.start()
        guard case let .update(results, _, insertions, _)? = await iterator.next() else { return XCTFail("update") }
        XCTAssertEqual(insertions, [0])
        XCTAssertEqual(results.first?.name, "async")
    }

    /// Frozen data never changes: its async sequences yield one `.error` and end, as observing it does.
    func testChangesOfFrozenDataEndWithAnError() async throws {
        let lattice = try open()
        try addPet(lattice, 1, "a", age: 1)
        let frozen = lattice.objects(NotePet.self).freeze()
        var results = frozen.changes.makeAsyncIterator()
        guard case .error(let error)? = await results.next() else { return XCTFail("an error first") }
        XCTAssertEqual(error as? LatticeError, .frozen(operation: "changes"))
        let end = await results.next()
        XCTAssertNil(end)
        let pet = try XCTUnwrap(frozen.first)
        var object = pet.changes.makeAsyncIterator()
        guard case .error? = await object.next() else { return XCTFail("an error first") }
        let objectEnd = await object.next()
        XCTAssertNil(objectEnd)
    }

    // MARK: Wake-up paths

    func testFallbackFIFOAndBackstopDeliver() throws {
        // A regular file where the FIFO directory belongs: listeners and writers use the fallback directory.
        _ = FileManager.default.createFile(atPath: database.path + ".notes", contents: Data("not a directory".utf8))
        defer { try? FileManager.default.removeItem(atPath: database.path + ".notes") }
        try checkDelivery()
        // No FIFO at all: the backstop check alone delivers.
        Notifier.fifoCandidates.withLock { $0 = [] }
        defer { Notifier.fifoCandidates.withLock { $0 = nil } }
        try checkDelivery()
    }

    private func checkDelivery(file: StaticString = #filePath, line: UInt = #line) throws {
        let lattice = try open()
        var count = -1
        let token = lattice.objects(NotePet.self).observe { change in
            if case .initial(let r) = change { count = r.count }
            if case .update(let r, _, _, _) = change { count = r.count }
        }
        spin("initial", file: file, line: line) { count >= 0 }
        let other = try open()
        let expected = count + 1
        try addPet(other, 100 + expected, "w", age: 1)
        spin("update", file: file, line: line) { count == expected }
        token.invalidate()
    }
}

/// Notifications of commits made by other processes.
final class NotificationProcessTests: XCTestCase {
    private var database: TempDatabase!

    override func setUp() {
        super.setUp()
        signal(SIGPIPE, SIG_IGN)
        database = makeTempDatabase("notify-mp")
    }

    private func open() throws -> Lattice {
        try Lattice(configuration: database.configuration([MultiProcessItem.self, MultiProcessCounter.self]))
    }

    private func spin(_ what: String, until condition: () -> Bool) {
        spin(what, timeout: 30, until: condition)
    }

    /// The commit id the notifier wakes observers with is one a snapshot begun right after sees. LMDB's
    /// meta page shows a commit before new snapshots do (an fsync apart, on a disk): a queue observer
    /// woken for such an id once read the commit before, took the id as seen, and missed the commit.
    /// A thread asks the notifier's probe (and, to show the lag, the meta page) over and over while
    /// commits go to disk, each time beginning a snapshot right after.
    func testWakeUpsNameCommitsANewSnapshotSees() throws {
        let lattice = try open()
        let env = lattice.env
        let state = Mutex((done: false, samples: 0, probeAhead: 0, metaAhead: 0))
        let sampler = Thread {
            guard let probe = CommitProbe(env), let txn = try? Transaction(readOn: env) else { return }
            func seen() -> Int? {
                guard (try? txn.renew()) != nil else { return nil }
                defer { txn.reset() }
                return txn.id
            }
            while !state.withLock({ $0.done }) {
                let newest = probe.newest()
                guard let afterProbe = seen() else { return }
                let meta = env.lastTransactionID
                guard let afterMeta = seen() else { return }
                state.withLock {
                    $0.samples += 1
                    if afterProbe < newest { $0.probeAhead += 1 }
                    if afterMeta < meta { $0.metaAhead += 1 }
                }
            }
            probe.end()
            txn.abort()
        }
        sampler.start()
        for id in 0..<100 { try lattice.write { try lattice.add(makeItem(id: id, size: 8)) } }
        state.withLock { $0.done = true }
        while !sampler.isFinished { usleep(1_000) }
        let (_, samples, probeAhead, metaAhead) = state.withLock { $0 }
        XCTAssertGreaterThan(samples, 100)
        XCTAssertEqual(probeAhead, 0, "ids ahead of what a snapshot begun after sees, of \(samples)")
        print("the meta page was ahead of a new snapshot in \(metaAhead) of \(samples) samples")
    }

    func testChildCommitFiresObserverWithIndices() throws {
        let lattice = try open()
        try lattice.write { for id in [10, 20] { try lattice.add(makeItem(id: id, size: 8)) } }
        let sorted = try lattice.objects(MultiProcessItem.self).sorted(byKeyPath: "id")
        var updates: [(deletions: [Int], insertions: [Int], ids: [Int])] = []
        var initial = false
        let token = sorted.observe { change in
            if case .initial = change { initial = true }
            if case let .update(r, d, i, _) = change { updates.append((d, i, r.map(\.id))) }
        }
        spin("initial") { initial }
        let child = try Helper(["add", database.path, "15", "1", "8"])
        XCTAssertEqual(try child.readLine(), "done")
        try child.waitForSuccess()
        spin("child's commit") { !updates.isEmpty }
        XCTAssertEqual(updates.first?.insertions, [1])
        XCTAssertEqual(updates.first?.deletions, [])
        XCTAssertEqual(updates.first?.ids, [10, 15, 20])
        token.invalidate()
    }

    func testKilledWriterProducesNoNotificationAndObserversKeepWorking() throws {
        let lattice = try open()
        try lattice.write { for id in 0..<100 { try lattice.add(makeItem(id: id, size: 8)) } }
        var counts: [Int] = []
        let token = lattice.objects(MultiProcessItem.self).observe { change in
            if case .initial(let r) = change { counts.append(r.count) }
            if case .update(let r, _, _, _) = change { counts.append(r.count) }
        }
        spin("initial") { counts == [100] }
        let child = try Helper(["crash", database.path])
        XCTAssertEqual(try child.readLine(), "writing")
        try child.kill()
        // Give the backstop time to look: the lost transaction never committed.
        RunLoop.current.run(until: Date().addingTimeInterval(0.3))
        XCTAssertEqual(counts, [100], "no notification for the killed writer's transaction")
        let writer = try open()
        try writer.write { try writer.add(makeItem(id: 500, size: 8)) }
        spin("the next commit") { counts == [100, 101] }
        token.invalidate()
    }

    /// Each observing process has its own FIFO: a commit wakes every one of them (with one FIFO for all,
    /// the first to read the byte took it, and the others waited for their backstop check); the FIFO of
    /// a killed observer is removed by the next writer.
    func testEveryObserverProcessHasItsOwnWakeUp() throws {
        let lattice = try open()
        try lattice.write { try lattice.add(makeItem(id: 0, size: 8)) }
        let watchers = try (0..<3).map { _ in try Helper(["watch", database.path, "2"]) }
        for watcher in watchers { XCTAssertEqual(try watcher.readLine(), "ready 1") }
        let directory = database.path + ".notes"
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory).count, 3, "one FIFO per process")
        let killed = try Helper(["watch", database.path, "9"])
        XCTAssertEqual(try killed.readLine(), "ready 1")
        try killed.kill()
        try lattice.write { try lattice.add(makeItem(id: 1, size: 8)) }
        for watcher in watchers {
            XCTAssertEqual(try watcher.readLine(), "update 2 1")
            try watcher.waitForSuccess()
        }
        // The killed process's FIFO went with that commit; the ones of the watchers, which have exited,
        // go with the next.
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory).count, 3)
        try lattice.write { try lattice.add(makeItem(id: 2, size: 8)) }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory), [])
        // A listener that stops removes its FIFO, and the directory once it is empty.
        let token = lattice.objects(MultiProcessItem.self).observe { _ in }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory).count, 1)
        token.invalidate()
        spin("the directory to go") { !FileManager.default.fileExists(atPath: directory) }
    }

    func testReadOnlyObserverProcessSeesWriterCommits() throws {
        // The second watcher's main thread runs `dispatchMain()`, as an async `main` does: no run loop runs.
        for mode in [[], ["dispatch"]] {
            let lattice = try open()
            try lattice.write { try lattice.deleteAll(); try lattice.add(makeItem(id: 0, size: 8)) }
            let watcher = try Helper(["watch", database.path, "3"] + mode)
            XCTAssertEqual(try watcher.readLine(), "ready 1", "\(mode)")
            try lattice.write { try lattice.add(makeItem(id: 1, size: 8)) }
            XCTAssertEqual(try watcher.readLine(), "update 2 1", "\(mode)")
            try lattice.write { try lattice.add(makeItem(id: 2, size: 8)) }
            XCTAssertEqual(try watcher.readLine(), "update 3 1", "\(mode)")
            try watcher.waitForSuccess()
        }
    }
}
