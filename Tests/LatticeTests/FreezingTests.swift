import Foundation
import Synchronization
import XCTest
@testable import Lattice

final class FrozenDog: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted(indexed: true) var age = 0
    @Persisted(originProperty: "dogs") var walkers: LinkingObjects<FrozenPerson>
}

final class FrozenPerson: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted var dogs: List<FrozenDog>
    @Persisted var tags: MutableSet<String>
    @Persisted var scores: Map<String, Int>
}

/// The store of the actor tests: a handle confined to the actor.
actor FrozenStore {
    var lattice: Lattice!

    init(configuration: Lattice.Configuration) async throws {
        lattice = try await Lattice(configuration: configuration, actor: self)
    }

    func rename(_ reference: ThreadSafeReference<FrozenDog>, to name: String) async throws -> Bool {
        guard let dog = lattice.resolve(reference) else { return false }
        try await lattice.asyncWrite { dog.name = name }
        return true
    }

    func names() -> [String] { lattice.objects(FrozenDog.self).sorted { $0.id < $1.id }.map(\.name) }

    func count() -> Int { lattice.objects(FrozenDog.self).count }

    /// The counts the observer of all dogs heard (initial, then updates), on this actor.
    private(set) var heard: [Int] = []
    private(set) var heardOnActor = true
    private var token: NotificationToken?

    func observe() {
        token = lattice.objects(FrozenDog.self).observe { [unowned self] change in
            let count: Int?
            switch change {
            case .initial(let dogs): count = dogs.count
            case .update(let dogs, _, _, _): count = dogs.count
            case .error: count = nil
            }
            // The block runs isolated to the actor (the compiler cannot tell, so it is checked here).
            self.assumeIsolated { store in
                if let count { store.heard.append(count) } else { store.heardOnActor = false }
            }
        }
    }
}

/// An actor whose handle has an observer, for the tests of closing and releasing it.
actor ObservingStore {
    private var lattice: Lattice?
    private var token: NotificationToken?
    /// Whether the observer got its initial notification.
    private(set) var delivered = false

    init(configuration: Lattice.Configuration) async throws {
        let lattice = try await Lattice(configuration: configuration, actor: self)
        self.lattice = lattice
        // Delivered on this actor (weakly held: the store must be free to go).
        token = lattice.objects(FrozenDog.self).observe { [weak self] _ in self?.assumeIsolated { $0.delivered = true } }
    }

    func close() {
        token?.invalidate()
        token = nil
        lattice = nil
    }
}

/// Frozen snapshots, thread-safe references and actor-confined handles.
final class FreezingTests: XCTestCase {
    private var database: TempDatabase!

    override func setUp() {
        super.setUp()
        database = makeTempDatabase("frozen")
    }

    private var configuration: Lattice.Configuration {
        database.configuration([FrozenDog.self, FrozenPerson.self], initialMapSize: 64 << 20)
    }

    private func open() throws -> Lattice { try Lattice(configuration: configuration) }

    /// 100 dogs (age = id % 10) walked by one person with tags and scores.
    private func populate(_ lattice: Lattice) throws {
        try lattice.write {
            let person = FrozenPerson()
            person.name = "ann"
            for id in 0..<100 {
                let dog = FrozenDog()
                dog.id = id
                dog.name = "dog\(id)"
                dog.age = id % 10
                if id < 5 { person.dogs.append(dog) }
                try lattice.add(dog)
            }
            person.tags.insert("a")
            person.tags.insert("b")
            person.scores["x"] = 1
            try lattice.add(person)
        }
    }

    /// Frozen results (filtered, sorted, iterated, subscripted) read from 8 threads at once while the
    /// live handle keeps writing: every read sees the frozen version.
    func testFrozenResultsReadConcurrentlyWhileTheLiveHandleWrites() throws {
        let lattice = try open()
        try populate(lattice)
        let young = try lattice.objects(FrozenDog.self).filter("age < 5")
        let frozen = try XCTUnwrap(Frozen(young))
        XCTAssertTrue(frozen.isFrozen)
        let failures = Mutex<[String]>([])
        let threads = (0..<8).map { n in
            Thread {
                for round in 0..<40 {
                    let results = frozen.value
                    var problems: [String] = []
                    if results.count != 50 { problems.append("count \(results.count)") }
                    let names = Set(results.map(\.name))
                    if names.count != 50 || !names.contains("dog44") { problems.append("names \(names.count)") }
                    if results.map(\.age).reduce(0, +) != 100 { problems.append("ages") }
                    if let sorted = try? results.sorted(byKeyPath: "id", ascending: false), sorted.first?.id != 94 {
                        problems.append("sorted first \(String(describing: sorted.first?.id))")
                    }
                    if (try? results.filter("age == 4").count) != 10 { problems.append("filter") }
                    if results[round % 50].isFrozen == false { problems.append("element not frozen") }
                    let dog = results.first { $0.id == 3 }
                    if dog?.walkers.count != 1 || dog?.walkers.first?.dogs.count != 5 { problems.append("links") }
                    if !problems.isEmpty { failures.withLock { $0.append("thread \(n) round \(round): \(problems)") } }
                }
            }
        }
        threads.forEach { $0.start() }
        for round in 0..<30 {
            try lattice.write {
                try lattice.objects(FrozenDog.self).filter("id == %@", round).first?.age = 100
                let dog = FrozenDog()
                dog.id = 1_000 + round
                dog.age = 1
                try lattice.add(dog)
            }
        }
        while threads.contains(where: { !$0.isFinished }) { usleep(5_000) }
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertEqual(young.count, 50 - 15 + 30, "the live results moved on")
        XCTAssertEqual(frozen.count, 50)
        XCTAssertEqual(frozen.value.thaw()?.count, 65)
    }

    func testFrozenObjectsAndCollectionsAreImmutableSnapshots() throws {
        let lattice = try open()
        try populate(lattice)
        let person = try XCTUnwrap(lattice.object(ofType: FrozenPerson.self, forPrimaryKey: "ann"))
        let frozen = person.freeze()
        let dogs = person.dogs.freeze()
        let tags = person.tags.freeze()
        let scores = person.scores.freeze()
        let walkers = try XCTUnwrap(lattice.object(ofType: FrozenDog.self, forPrimaryKey: 2)).walkers.freeze()
        for value in [frozen.isFrozen, dogs.isFrozen, tags.isFrozen, scores.isFrozen, walkers.isFrozen] { XCTAssertTrue(value) }
        XCTAssertFalse(person.isFrozen)
        XCTAssertTrue(frozen.lattice === dogs.lattice, "one frozen handle per version")
        XCTAssertTrue(frozen.freeze() === frozen)

        try lattice.write {
            person.dogs.removeAll()
            person.tags.insert("c")
            person.scores["y"] = 2
            try lattice.delete(lattice.objects(FrozenDog.self).filter("id == 2"))
        }
        XCTAssertEqual(frozen.dogs.count, 5)
        XCTAssertEqual(dogs.map(\.id), [0, 1, 2, 3, 4])
        XCTAssertEqual(Set(tags), ["a", "b"])
        XCTAssertEqual(scores.count, 1)
        XCTAssertEqual(walkers.map(\.name), ["ann"])
        XCTAssertEqual(person.dogs.count, 0)

        // Writing to frozen data is a clear error.
        let handle = try XCTUnwrap(frozen.lattice)
        assertLatticeError(try handle.write {}, .frozen(operation: "beginWrite()"))
        assertLatticeError(try handle.add(FrozenDog()), .frozen(operation: "add(_:)"))
        XCTAssertFalse(handle.refresh())

        // So is observing it, as in Realm: on the handle's thread and on a queue, for every kind.
        var errors: [LatticeError] = []
        let record: (Error) -> Void = { errors.append(($0 as? LatticeError) ?? .frozen(operation: "?")) }
        let queueErrors = Locked(0)
        let tokens = [
            frozen.observe { if case .error(let e) = $0 { record(e) } },
            dogs.observe { if case .error(let e) = $0 { record(e) } },
            tags.observe { if case .error(let e) = $0 { record(e) } },
            scores.observe { if case .error(let e) = $0 { record(e) } },
            walkers.observe { if case .error(let e) = $0 { record(e) } },
            handle.objects(FrozenDog.self).observe { if case .error(let e) = $0 { record(e) } },
            dogs.observe(on: DispatchQueue(label: "frozen")) { if case .error = $0 { queueErrors.withLock { $0 += 1 } } },
            handle.objects(FrozenDog.self).observe(on: DispatchQueue(label: "frozen")) { if case .error = $0 { queueErrors.withLock { $0 += 1 } } },
        ]
        XCTAssertEqual(errors, Array(repeating: .frozen(operation: "observe"), count: 6))
        XCTAssertEqual(queueErrors.withLock { $0 }, 2)
        var told = false
        let handleToken = handle.observe { _, _ in told = true }
        RunLoop.current.run(until: Date().addingTimeInterval(0.02))
        XCTAssertFalse(told)
        (tokens + [handleToken]).forEach { $0.invalidate() }

        // Thawing gives the live state; a deleted object thaws to nil.
        let thawed = try XCTUnwrap(frozen.thaw())
        XCTAssertFalse(thawed.isFrozen)
        XCTAssertEqual(thawed.dogs.count, 0)
        XCTAssertEqual(thawed.tags.count, 3)
        XCTAssertNil(dogs[2].thaw(), "deleted since")
        XCTAssertEqual(dogs[1].thaw()?.name, "dog1")
        try thawed.lattice?.write { thawed.scores["z"] = 3 }
        lattice.refresh()
        XCTAssertEqual(person.scores.count, 3)
    }

    /// Everything frozen at one version shares one snapshot (one reader slot); releasing the last of it
    /// releases the version, which `maximumNumberOfActiveVersions` counts meanwhile, with every later one.
    func testFrozenVersionsShareOneSnapshotAndCountAsActiveVersions() throws {
        var config = configuration
        config.maximumNumberOfActiveVersions = 2
        let lattice = try Lattice(configuration: config)
        try populate(lattice)
        func versions() throws -> Set<Int> { Set(try lattice.env.readerSlots().compactMap(\.snapshot)) }
        var first: FrozenDog? = lattice.objects(FrozenDog.self)[0].freeze()
        var sameVersion: Results<FrozenDog>? = lattice.objects(FrozenDog.self).freeze()
        XCTAssertTrue(first?.lattice === sameVersion?.lattice)
        XCTAssertEqual(try versions().count, 1)
        let other = try open()
        XCTAssertEqual(other.objects(FrozenDog.self).freeze().first?.lattice?.env === lattice.env, true)

        try lattice.write { lattice.objects(FrozenDog.self)[0].name = "moved" }  // frozen version + new one: 2
        var second: Results<FrozenDog>? = lattice.objects(FrozenDog.self).freeze()
        XCTAssertEqual(try versions().count, 2)
        XCTAssertNotNil(latticeError(try lattice.write {}), "a third version would exceed the limit")
        XCTAssertEqual(second?.first?.name, "moved")
        XCTAssertEqual(first?.name, "dog0")

        second = nil
        lattice.invalidate()
        XCTAssertEqual(try versions().count, 1, "only the first frozen version is pinned")
        // It keeps every later version alive too, as Realm counts them: with the latest, two.
        XCTAssertNotNil(latticeError(try lattice.write {}), "the first version and the latest, and a third")
        first = nil
        sameVersion = nil
        other.invalidate()  // its own snapshot, at the first version too
        XCTAssertEqual(try versions().count, 0)
        try lattice.write {}
    }

    func testThreadSafeReferenceResolvesOnceOnAnotherThreadAndActor() async throws {
        let lattice = try open()
        try populate(lattice)
        let dog = try XCTUnwrap(lattice.object(ofType: FrozenDog.self, forPrimaryKey: 7))
        let reference = ThreadSafeReference(to: dog)
        let config = configuration
        let resolved = Mutex<[String?]>([])
        let thread = Thread {
            guard let other = try? Lattice(configuration: config) else { return }
            resolved.withLock { $0.append(other.resolve(reference)?.name) }
            resolved.withLock { $0.append(other.resolve(reference)?.name) }
        }
        thread.start()
        while !thread.isFinished { usleep(1_000) }
        XCTAssertEqual(resolved.withLock { $0 }, ["dog7", nil], "resolves once")
        XCTAssertTrue(reference.isInvalidated)

        // Results and collections, resolved at the resolving handle's version.
        let results = ThreadSafeReference(to: try lattice.objects(FrozenDog.self).filter("age == 3").sorted(byKeyPath: "id", ascending: false))
        let list = ThreadSafeReference(to: try XCTUnwrap(lattice.object(ofType: FrozenPerson.self, forPrimaryKey: "ann")).dogs)
        try await lattice.asyncWrite { try lattice.objects(FrozenDog.self).filter("id == 93").first?.age = 0 }
        let other = try open()
        XCTAssertEqual(other.resolve(results)?.map(\.id), [83, 73, 63, 53, 43, 33, 23, 13, 3])
        XCTAssertEqual(other.resolve(list)?.count, 5)

        // In an actor, with a write there.
        let store = try await FrozenStore(configuration: config)
        let renamed = try await store.rename(ThreadSafeReference(to: dog), to: "rex")
        XCTAssertTrue(renamed)
        let names = await store.names()
        XCTAssertEqual(names[7], "rex")
        lattice.refresh()
        XCTAssertEqual(dog.name, "rex")

        // A deleted object resolves to nil.
        let gone = ThreadSafeReference(to: dog)
        try await lattice.asyncWrite { try lattice.delete(dog) }
        XCTAssertNil(try open().resolve(gone))
    }

    /// Eventually true, polling every millisecond for up to 10 seconds.
    private func eventually(_ what: String, _ condition: () async -> Bool) async {
        for _ in 0..<10_000 {
            if await condition() { return }
            try? await Task.sleep(nanoseconds: 1_000_000)
        }
        XCTFail("timed out waiting for \(what)")
    }

    /// Adds dog `id` through a handle of its own (a write transaction is synchronous code).
    private func addDog(_ id: Int) throws {
        let other = try open()
        try other.write { try other.add(FrozenDog(value: ["id": id, "name": "dog\(id)"])) }
    }

    func testActorHandlesFollowCommitsAndDeliverThere() async throws {
        try populate(try open())
        let store = try await FrozenStore(configuration: configuration)
        let before = await store.count()
        XCTAssertEqual(before, 100)
        // No observer: the handle still moves to other handles' commits on its actor, as Realm's do.
        try addDog(100)
        await eventually("the actor's handle to see the commit") { await store.count() == 101 }
        // Observers registered on the actor hear the initial value and each commit there.
        await store.observe()
        await eventually("the initial notification") { await store.heard == [101] }
        try addDog(101)
        await eventually("the update") { await store.heard == [101, 102] }
        let onActor = await store.heardOnActor
        XCTAssertTrue(onActor)
    }

    func testResolvingOnAnOlderHandleMovesItForward() throws {
        let lattice = try open()
        try populate(lattice)
        let worker = try open()
        XCTAssertEqual(worker.objects(FrozenDog.self).count, 100, "the worker holds a snapshot")
        let created = try lattice.write { try lattice.create(FrozenDog.self, value: ["id": 500, "name": "new"]) }
        let person = try XCTUnwrap(lattice.object(ofType: FrozenPerson.self, forPrimaryKey: "ann"))
        try lattice.write { person.dogs.append(created) }
        XCTAssertEqual(worker.resolve(ThreadSafeReference(to: created))?.name, "new", "created after the worker's snapshot")
        XCTAssertEqual(worker.resolve(ThreadSafeReference(to: lattice.objects(FrozenDog.self)))?.count, 101)
        XCTAssertEqual(worker.resolve(ThreadSafeReference(to: person.dogs))?.last?.id, 500)
    }

    /// An actor's handle with an observer closes when the actor stops observing and drops it, and when
    /// the actor itself goes: the file can then be deleted (the handle and its observers hold each other).
    func testActorHandlesWithObserversClose() async throws {
        try populate(try open())
        let configuration = self.configuration
        func deletable() -> Bool { (try? Lattice.deleteFiles(for: configuration)) != nil }
        let store = try await ObservingStore(configuration: configuration)
        await eventually("the initial delivery", { await store.delivered })
        await store.close()
        await eventually("the closed handle to let the file go", { deletable() })

        try populate(try open())
        var released: ObservingStore? = try await ObservingStore(configuration: configuration)
        XCTAssertFalse(deletable(), "open while the actor lives")
        released = nil
        await eventually("the released actor's handle to let the file go", { deletable() })
        _ = released
    }

    func testThreadSafePropertyWrapper() throws {
        struct Holder: Sendable {
            @ThreadSafe var dog: FrozenDog?
        }
        let lattice = try open()
        try populate(lattice)
        let holder = Holder(dog: lattice.object(ofType: FrozenDog.self, forPrimaryKey: 9))
        try lattice.write { lattice.object(ofType: FrozenDog.self, forPrimaryKey: 9)?.name = "nine" }
        let seen = Mutex<[String?]>([])
        let thread = Thread {
            seen.withLock { $0.append(holder.dog?.name) }
            seen.withLock { $0.append(holder.dog?.name) }
        }
        thread.start()
        while !thread.isFinished { usleep(1_000) }
        XCTAssertEqual(seen.withLock { $0 }, ["nine", "nine"], "read again on each access, at the latest commit")
        XCTAssertFalse(holder.dog?.isFrozen ?? true)
        holder.dog = nil
        XCTAssertNil(holder.dog)
    }
}
