import Foundation

/// An observer that computes and delivers its changes on one handle.
protocol HandleObserver: AnyObject {
    var flag: ObserverFlag { get }
    /// Brings the observer to the handle's current view, calling back when something it watches changed
    /// (the first call delivers the initial value).
    func update(_ context: DeliveryContext)
    /// Takes the handle's current view as seen, without calling back (`write(withoutNotifying:)`).
    func skip(_ context: DeliveryContext)
}

/// One delivery on a handle: the version it delivers, and the change-log summaries observers share.
final class DeliveryContext {
    let lattice: Lattice
    /// The transaction id the handle sees.
    let version: Int64
    private var summaries: [Int64: ChangeSummary?] = [:]
    /// `objectsReachingChanges` per summary, class and depth, shared by every observer of the delivery.
    private var reaching: [Reach: Set<Int64>?] = [:]

    private struct Reach: Hashable {
        let after: Int64
        let info: ObjectIdentifier
        let depth: Int
    }

    init(_ lattice: Lattice) {
        self.lattice = lattice
        version = Int64(lattice.reading("the latest snapshot") { $0.id })
    }

    /// What the commits after `after` up to `version` changed; nil when the log cannot tell (trimmed,
    /// not logged, too large): the observer then re-evaluates.
    func summary(after: Int64) -> ChangeSummary? {
        if let known = summaries[after] { return known }
        let lattice = self.lattice
        let entries: [ChangeSet]? = (try? lattice.changeLogTable()).flatMap { table in
            table.flatMap { table in
                try? ChangeLog(table: table).entries(lattice.readTransaction(), after: after, through: version)
            }
        }
        let summary = entries.map { ChangeSummary($0, after: after, in: lattice) }
        summaries[after] = summary
        return summary
    }

    /// The objects of `info` that reach, through forward links and Lists of objects up to `depth` hops,
    /// an object `summary` inserted, deleted or modified: found backwards from those objects through the
    /// backlink tables, so the cost follows the changes, not the observed collection. Nil when more than
    /// `limit` objects would be visited (the caller then asks each element with `reachesChange`).
    func objectsReachingChanges(_ info: ClassInfo, _ summary: ChangeSummary, limit: Int, depth: Int = 4) -> Set<Int64>? {
        var frontier: [(ClassInfo, Int64)] = []
        for (name, changes) in summary.classes {
            guard let cls = lattice.classesByName[name] else { continue }
            for key in changes.modified.keys { frontier.append((cls, key)) }
            for key in changes.inserted.union(changes.deleted) { frontier.append((cls, key)) }
        }
        if frontier.count > limit { return nil }
        var found = Set<Int64>()
        var visited = Set<[Int64]>()
        for _ in 0..<depth where !frontier.isEmpty {
            var next: [(ClassInfo, Int64)] = []
            for (cls, key) in frontier {
                guard let entries = try? lattice.backlinks(of: cls, key: key) else { return nil }
                for entry in entries {
                    // Only the links `reachesChange` follows: to-one links and Lists of objects.
                    guard let property = cls.incoming.first(where: { $0.linkID == entry.id }),
                          property.isLink || property.property.collection == .list,
                          let source = cls.incomingOwners[entry.id] else { continue }
                    guard visited.insert([Int64(entry.id), entry.source]).inserted else { continue }
                    if visited.count > limit { return nil }
                    // By name: `info` may be the dynamic class standing for the model class `source`.
                    if source === info || source.name == info.name { found.insert(entry.source) }
                    next.append((source, entry.source))
                }
            }
            frontier = next
        }
        return found
    }

    /// `objectsReachingChanges` with the limit observers use, found once per delivery: a thousand observers
    /// of objects of one class walk the backlinks once, not a thousand times.
    func objectsReachingChanges(_ info: ClassInfo, _ summary: ChangeSummary, depth: Int = 4) -> Set<Int64>? {
        let reach = Reach(after: summary.after, info: ObjectIdentifier(info), depth: depth)
        if let known = reaching[reach] { return known }
        let found = objectsReachingChanges(info, summary, limit: 10_000, depth: depth)
        reaching[reach] = found
        return found
    }

    /// Whether an object reaches, through forward links and Lists of objects up to `depth` hops, an
    /// object `summary` inserted, deleted or modified. Answered from the objects found backwards from the
    /// changes (their cost follows the changes); only when those are too many, by walking forward from the
    /// object, whose cost follows what it links to (a List of a hundred thousand objects, each with links
    /// of its own, is a hundred thousand reads).
    func reachesChange(_ info: ClassInfo, _ key: Int64, _ summary: ChangeSummary, depth: Int = 4) -> Bool {
        if let reached = objectsReachingChanges(info, summary, depth: depth) { return reached.contains(key) }
        var visited = Set<[Int64]>()
        return reaches(info, key, summary, depth, &visited)
    }

    /// The objects object `key` of `info` reaches through the relationship `p`: its to-one link, the
    /// objects of its List, MutableSet or Map, or the objects linking to it (a LinkingObjects property).
    func linkedKeys(_ info: ClassInfo, _ key: Int64, through p: PropertyInfo) -> [Int64] {
        lattice.reading("links of '\(info.name)'") { _ -> [Int64] in
            if p.property.type == .linkingObjects {
                guard let origin = p.target, let name = p.property.originProperty, let through = origin.property(named: name) else { return [] }
                return try lattice.backlinks(of: info, key: key, through: through).map(\.source)
            }
            guard p.linksObjects else { return [] }
            switch p.property.collection {
            case nil:
                guard let record = try lattice.fetchRecord(info, key: key) else { return [] }
                return record.withBytes { RecordView($0)?.payload(p.column).flatMap(lattice.linkedKey) }.map { [$0] } ?? []
            case .list?:
                return try lattice.listPayloads(p, owner: key).compactMap { $0.withUnsafeBytes(lattice.linkedKey) }
            case .set?, .map?:
                return try lattice.keyedEntries(p, owner: key).compactMap { $0.value.withUnsafeBytes(lattice.linkedKey) }
            }
        }
    }

    private func reaches(_ info: ClassInfo, _ key: Int64, _ summary: ChangeSummary, _ depth: Int, _ visited: inout Set<[Int64]>) -> Bool {
        guard depth > 0 else { return false }
        let targets: [(ClassInfo, Int64)] = info.columns.flatMap { p -> [(ClassInfo, Int64)] in
            guard let target = p.target, p.isLink || (p.property.collection == .list && p.linksObjects) else { return [] }
            return linkedKeys(info, key, through: p).map { (target, $0) }
        }
        for (target, k) in targets {
            if summary.touched(target.name, k) { return true }
            if visited.insert([Int64(bitPattern: UInt64(UInt(bitPattern: ObjectIdentifier(target).hashValue))), k]).inserted,
               reaches(target, k, summary, depth - 1, &visited) { return true }
        }
        return false
    }
}

/// The observers of one handle delivered on its thread's run loop and by ``Lattice/refresh()``, the
/// handle's own ``Lattice/observe(_:)`` blocks, and its asynchronous writes (`AsyncWriteQueue`), run by
/// the same turns.
final class HandleObservation {
    private unowned let lattice: Lattice
    /// The observers, each with what it is told when it can go on no longer (see `fail(_:)`).
    private var observers: [ObjectIdentifier: (observer: any HandleObserver, onError: (Error) -> Void)] = [:]
    private var latticeObservers: [(flag: ObserverFlag, block: (Lattice.Notification, Lattice) -> Void)] = []
    private var subscription: (Notifier, UInt64)?
    private var keepAlive: Timer?
    private var delivering = false
    /// The commit the observers last heard of.
    private var lastVersion: Int64 = 0
    /// The commit the handle's own `observe(_:)` blocks last heard of (they also hear of each own commit
    /// at once, see `didCommit`).
    private var announced: Int64 = 0
    /// The newest commit `.refreshRequired` was sent for (autorefresh off).
    private var refreshRequiredFor = 0

    init(_ lattice: Lattice) {
        self.lattice = lattice
        followsCommits = lattice.confinedActor != nil
    }

    /// Whether the handle is confined to an actor, and so stays subscribed (`followCommits`). Kept here:
    /// `prune()` may release the last observer holding the handle, and must not read it after that.
    private let followsCommits: Bool

    deinit {
        keepAlive?.invalidate()
        if let (notifier, id) = subscription { notifier.unsubscribe(id) }
    }

    /// Registers an observer delivered here; the first also subscribes the handle to the file's notifier
    /// and keeps the thread's run loop running.
    func add(_ observer: any HandleObserver, onError: @escaping (Error) -> Void) throws {
        try subscribe()
        observers[ObjectIdentifier(observer)] = (observer, onError)
        schedule()
    }

    /// Ends every observer with `error` (another handle migrated the file: the handle cannot move on).
    func fail(_ error: Error) {
        for (observer, onError) in observers.values where observer.flag.isActive {
            observer.flag.deactivate()
            onError(error)
        }
        prune()
    }

    func addLatticeObserver(_ flag: ObserverFlag, _ block: @escaping (Lattice.Notification, Lattice) -> Void) throws {
        try subscribe()
        // Inside a write, the commit the write started from: the write's own id is the next commit's only
        // if the write changes something.
        if latticeObservers.isEmpty { announced = Int64(lattice.writer.map { $0.txn.id - 1 } ?? lattice.reading("the latest snapshot") { $0.id }) }
        latticeObservers.append((flag, block))
    }

    /// After a commit of this handle (an empty one too): its `observe(_:)` blocks hear of it at once, as
    /// Realm's do, except those of `skipped` tokens (`commitWrite(withoutNotifying:)`). Object and
    /// collection observers hear of it at the next turn or refresh.
    func didCommit(skipping skipped: [ObserverFlag]) {
        writeEnded()
        guard !latticeObservers.isEmpty else { return }
        announced = Int64(lattice.viewCommit)
        let lattice = self.lattice
        for entry in latticeObservers where entry.flag.isActive && !skipped.contains(where: { $0 === entry.flag }) {
            entry.block(.didChange, lattice)
        }
    }

    private func subscribe() throws {
        guard subscription == nil else { return }
        let waker = wakerHere()
        subscription = try Notifier.subscribe(lattice.env) { _ in waker.wake() }
        if waker.usesRunLoop {
            let timer = Timer(timeInterval: 1e9, repeats: true) { _ in }
            RunLoop.current.add(timer, forMode: .default)
            keepAlive = timer
        }
    }

    private var waker: HandleWaker?

    /// The waker of this handle, made on first need (the first observer, or the first asynchronous write)
    /// where the handle lives.
    private func wakerHere() -> HandleWaker {
        if let waker { return waker }
        let made = HandleWaker(self, actor: lattice.confinedActor)
        waker = made
        return made
    }

    /// The handle's asynchronous writes (`writeAsync`, `beginAsyncWrite`, `commitAsyncWrite`), made with
    /// the first; run by `turn()`, one block a turn.
    private(set) var asyncWrites: AsyncWriteQueue?

    /// The asynchronous write queue, made on first use.
    var asyncWriteQueue: AsyncWriteQueue {
        if let asyncWrites { return asyncWrites }
        let made = AsyncWriteQueue()
        asyncWrites = made
        return made
    }

    /// Asks for a turn where the handle lives, for the asynchronous writes.
    func wakeForAsyncWrites() {
        wakerHere().wake()
    }

    /// After the handle's write transaction ended (committed or rolled back): a turn that found it writing
    /// left its asynchronous writes queued, and they go on now.
    func writeEnded() {
        if asyncWrites?.hasWork == true { wakerHere().wake() }
    }

    /// Keeps a handle confined to an actor at the latest commit while it is not in a write, as Realm's
    /// actor-confined handles are: each commit of another handle or process moves it on the actor
    /// (delivering to its observers), as the run loop of the thread that opened any other handle does
    /// once observers exist.
    func followCommits() throws {
        try subscribe()
    }

    /// Asks for a delivery at the next turn (initial notifications).
    private func schedule() {
        waker?.wake()
    }

    /// A turn where the handle lives, after a commit or a stopped token: let stopped observers go, then
    /// move the handle (which delivers), or tell it a refresh is due.
    func turn() {
        // Kept alive for the turn: pruning may release the last observer holding the handle.
        let lattice = self.lattice
        prune()
        // Asynchronous writes first: the deliveries below then tell of their commits in this turn.
        if let asyncWrites, asyncWrites.hasWork {
            let waker = wakerHere()
            asyncWrites.run(on: lattice, wake: { waker.wake() })
            if asyncWrites.needsTurn(writing: lattice.writer != nil) { wakerHere().wake() }
        }
        if lattice.writer != nil { return }
        if lattice.autorefresh {
            lattice.refresh()  // delivers
        } else {
            // The handle's view is the latest commit (its own): deliver; otherwise a refresh is due, told
            // once per commit however many wake-ups come.
            let newest = lattice.env.lastTransactionID
            guard newest != lattice.viewCommit else { deliver(); return }
            if newest != refreshRequiredFor {
                refreshRequiredFor = newest
                for entry in latticeObservers where entry.flag.isActive { entry.block(.refreshRequired, lattice) }
            }
            // Initial notifications still go out at the handle's current version.
            deliver(initialOnly: true)
        }
    }

    /// Whether an observer has yet to hear of commit `latest` (or of anything: nothing delivered yet).
    func isBehind(_ latest: Int) -> Bool {
        (!observers.isEmpty && lastVersion != Int64(latest)) || (!latticeObservers.isEmpty && announced != Int64(latest))
    }

    /// Delivers every pending change at the handle's current view (run by the run loop and by `refresh()`).
    func deliver(initialOnly: Bool = false) {
        guard !delivering, lattice.writer == nil else { return }
        delivering = true
        defer { delivering = false }
        prune()
        let context = DeliveryContext(lattice)
        for (observer, _) in Array(observers.values) where observer.flag.isActive {
            if initialOnly, !((observer as? InitialPending)?.needsInitial ?? false) { continue }
            observer.update(context)
        }
        guard !initialOnly else { return }
        lastVersion = context.version
        if context.version > announced {  // not again for a commit an observer made meanwhile (`didCommit`)
            announced = context.version
            for entry in latticeObservers where entry.flag.isActive { entry.block(.didChange, lattice) }
        }
    }

    /// Marks the observers of `tokens` as having seen the handle's current view (inside the write).
    func skip(_ flags: [ObserverFlag]) {
        // Observers that have not heard of a commit before this write (`beginWrite()` after an own commit
        // not delivered yet) cannot tell its changes from this write's: they hear of both, rather than of
        // neither (a changeset missing a change no longer takes the old collection to the new one).
        guard let write = lattice.writer, lastVersion == Int64(write.txn.id - 1) else { return }
        let context = DeliveryContext(lattice)
        for (observer, _) in observers.values where flags.contains(where: { $0 === observer.flag }) { observer.skip(context) }
    }

    /// The stop of a token of this handle's observers. On the handle's thread it lets the invalidated
    /// observers go at once, with what they hold (results, objects, and through them the handle itself,
    /// which a program may then close and delete); from another thread, and for a handle confined to an
    /// actor, at the handle's next turn.
    func tokenStop() -> @Sendable () -> Void {
        let waker = self.waker
        return {
            if let observation = waker?.observationHere { return observation.prune() }
            waker?.wake()
        }
    }

    func prune() {
        observers = observers.filter { $0.value.observer.flag.isActive }
        latticeObservers.removeAll { !$0.flag.isActive }
        // A handle confined to an actor stays subscribed: it follows commits (`followCommits`).
        if observers.isEmpty && latticeObservers.isEmpty && !followsCommits, let (notifier, id) = subscription {
            notifier.unsubscribe(id)
            subscription = nil
            keepAlive?.invalidate()
            keepAlive = nil
        }
    }
}

/// Observers whose initial notification is still due.
protocol InitialPending {
    var needsInitial: Bool { get }
}

extension Lattice {
    /// The handle's observation state, created with its first observer.
    var observation: HandleObservation {
        if let existing = observationState as? HandleObservation { return existing }
        let created = HandleObservation(self)
        observationState = created
        return created
    }

    /// Delivers pending notifications of this handle (after `refresh()`).
    func deliverNotifications() {
        (observationState as? HandleObservation)?.deliver()
    }
}
