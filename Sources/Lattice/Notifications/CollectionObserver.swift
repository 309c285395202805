import Foundation

/// How a collection is watched: its elements' identities now, which changes concern it, and which of
/// its elements a change modified.
struct CollectionWatch<Identity: Hashable> {
    /// The identities of the elements at the handle's current view, in order.
    let elements: () -> [Identity]
    /// Whether the summarised commits may change the collection at all.
    let concerns: (ChangeSummary) -> Bool
    /// Whether an element (by identity) was modified by the summarised commits.
    let isModified: (ChangeSummary, DeliveryContext) -> (Identity) -> Bool
    /// When the summarised commits cannot change membership or order, the unchanged elements (which the
    /// watch may adopt as the collection's current value); nil when they must be evaluated again.
    let unchangedOrder: (ChangeSummary, [Identity]) -> [Identity]?
    /// The change computed from the summary and the old elements alone (placing only the elements the
    /// commits touched); nil, or a nil result, when the elements must be evaluated again.
    var incremental: ((ChangeSummary, [Identity], DeliveryContext) -> IncrementalChange<Identity>?)? = nil
}

/// Delivers ``LatticeCollectionChange`` notifications of one collection on one handle.
final class CollectionObserver<Collection, Identity: Hashable>: HandleObserver, InitialPending {
    let flag = ObserverFlag()
    private let collection: Collection
    private let watch: CollectionWatch<Identity>
    private let block: (LatticeCollectionChange<Collection>) -> Void
    private var baseline: [Identity]?
    private var version: Int64 = 0
    /// Called with the old and new identities before each `.update` is delivered (a Map's observer turns
    /// the change's positions into keys with them).
    var willUpdate: (([Identity], [Identity]) -> Void)?

    init(_ collection: Collection, _ watch: CollectionWatch<Identity>, _ block: @escaping (LatticeCollectionChange<Collection>) -> Void) {
        self.collection = collection
        self.watch = watch
        self.block = block
    }

    var needsInitial: Bool { baseline == nil }

    func update(_ context: DeliveryContext) {
        guard flag.isActive else { return }
        // Checked again once the change is computed: the token may have been invalidated meanwhile from
        // another thread (a queue observer's).
        if let change = nextChange(context), flag.isActive { block(change) }
    }

    /// The change since the previous call (the initial value first); nil when nothing it watches changed.
    func nextChange(_ context: DeliveryContext) -> LatticeCollectionChange<Collection>? {
        guard let old = baseline else {
            baseline = watch.elements()
            version = context.version
            return .initial(collection)
        }
        guard context.version != version else { return nil }
        let summary = context.summary(after: version)
        version = context.version
        // Tried first even when nothing watched changed: the collection then adopts its unchanged elements
        // instead of evaluating them again at its next read.
        if let summary, let change = watch.incremental?(summary, old, context) {
            baseline = change.elements
            if change.deletions.isEmpty && change.insertions.isEmpty && change.modifications.isEmpty { return nil }
            willUpdate?(old, change.elements)
            return .update(collection, deletions: change.deletions, insertions: change.insertions, modifications: change.modifications)
        }
        if let summary, !watch.concerns(summary) { return nil }
        let new = summary.flatMap { watch.unchangedOrder($0, old) } ?? watch.elements()
        // Without the log every element kept counts as modified: the callback sees a correct superset.
        let isModified = summary.map { watch.isModified($0, context) } ?? { _ in true }
        let diff = CollectionDiff.compute(old: old, new: new, isModified: isModified)
        baseline = new
        if diff.deletions.isEmpty && diff.insertions.isEmpty && diff.modifications.isEmpty { return nil }
        willUpdate?(old, new)
        return .update(collection, deletions: diff.deletions, insertions: diff.insertions, modifications: diff.modifications)
    }

    func skip(_ context: DeliveryContext) {
        guard baseline != nil else { return }
        baseline = watch.elements()
        version = context.version
    }
}

// MARK: - Results

extension Results {
    /// The watch of these results: identities are object keys.
    func collectionWatch(keyPaths: [String]?) -> CollectionWatch<Int64> {
        let results = self
        guard let info else {
            return CollectionWatch(elements: { [] }, concerns: { _ in false }, isModified: { _, _ in { _ in false } },
                                   unchangedOrder: { _, old in old })
        }
        let observed = ObservedColumns(info, keyPaths: keyPaths)
        let queryColumns = query.plainColumns(of: info)
        let ownerClass: String? = { if case let .collection(owner, _) = source { return owner._info?.name } else { return nil } }()
        let related = info.forwardReachableClasses(depth: 4)
        let placement = ResultsPlacement(self)
        // Whether changes reached through links may modify elements.
        func deep(_ summary: ChangeSummary) -> Bool {
            observed.all && info.columns.contains { $0.linksObjects } && related.contains { summary.changes(of: $0) != nil }
        }
        // Whether key paths through relationships (`"owner.name"`) may see a change: every element is asked.
        func nested(_ summary: ChangeSummary) -> Bool { !observed.all && observed.mayChangeThrough(summary) }
        // The elements modified through links, found backwards from the changes; nil: ask every element.
        func reached(_ summary: ChangeSummary, _ context: DeliveryContext) -> Set<Int64>? {
            context.objectsReachingChanges(info, summary)
        }
        func isModified(_ summary: ChangeSummary, _ context: DeliveryContext, _ reached: Set<Int64>?, deep: Bool) -> (Int64) -> Bool {
            let own = summary.changes(of: info.name)
            return { key in
                if let own, own.inserted.contains(key) || (own.modified[key] ?? 0) & observed.mask != 0 { return true }
                if deep { return reached.map { $0.contains(key) } ?? context.reachesChange(info, key, summary) }
                return !observed.all && observed.changedThrough(info, key, summary, context)
            }
        }
        return CollectionWatch(
            elements: { results.keys() },
            concerns: { summary in
                // Queries through links or a collection's owner may change with any class: only the
                // simple case is narrowed to the classes the elements reach.
                if queryColumns == nil || ownerClass != nil { return true }
                return related.contains { summary.changes(of: $0) != nil }
            },
            isModified: { summary, context in
                let deep = deep(summary)
                return isModified(summary, context, deep ? reached(summary, context) : nil, deep: deep)
            },
            unchangedOrder: { _, _ in nil },
            incremental: placement.map { placement in
                { summary, old, context in
                    let deep = deep(summary)
                    let reached = deep ? reached(summary, context) : nested(summary) ? nil : []
                    guard let change = placement.change(old: old, summary, context.lattice, checkAll: reached == nil,
                                                        alsoModified: reached ?? [],
                                                        isModified: isModified(summary, context, reached, deep: deep)) else { return nil }
                    results.adoptKeys(change.elements)
                    return change
                }
            })
    }

    /// Observes these results: `block` first gets `.initial` with them, then `.update` after each commit
    /// (of any handle, thread or process) that changed them, on this thread's run loop and whenever the
    /// handle is refreshed (see the *Notifications* article). With `keyPaths`, only changes to those
    /// properties count as modifications. Inside a write transaction, `block` gets `.error` and nothing else.
    public func observe(keyPaths: [String]? = nil,
                        _ block: @escaping (LatticeCollectionChange<Results<Element>>) -> Void) -> NotificationToken {
        lattice.register(CollectionObserver(self, collectionWatch(keyPaths: keyPaths), block), keyPaths: keyPaths, of: info,
                         onError: { block(.error($0)) })
    }

    /// Observes these results on `queue` (nil: as ``observe(keyPaths:_:)``). The results handed to
    /// `block` belong to a handle opened for the queue, already at the new version: use them only there.
    /// Results filtered with an object argument, or of a List or LinkingObjects, can be observed on a
    /// queue only through their owner's handle (the block gets `.error`).
    public func observe(keyPaths: [String]? = nil, on queue: DispatchQueue?,
                        _ block: @escaping @Sendable (LatticeCollectionChange<Results<Element>>) -> Void) -> NotificationToken {
        guard let queue else { return observe(keyPaths: keyPaths, block) }
        do {
            let recipe = try ResultsRecipe(self)
            return QueueDelivery.start(from: lattice, on: queue, onError: { block(.error($0)) }) { handle in
                let results: Results<Element> = try recipe.results(on: handle)
                if let info = results.info, let error = ObservedColumns.invalidKeyPath(keyPaths, of: info) { throw error }
                return CollectionObserver(results, results.collectionWatch(keyPaths: keyPaths), block)
            }
        } catch {
            block(.error(error))
            return NotificationToken(flag: ObserverFlag(), stop: {})
        }
    }
}

/// The query of a ``Results`` in a form another handle can rebuild.
struct ResultsRecipe: Sendable {
    let className: String
    let node: QueryNodeValue?
    let steps: [Step]

    enum Step: Sendable {
        case sort([SortDescriptor])
        case distinct([String])
    }

    init<Element>(_ results: Results<Element>) throws {
        guard let info = results.info else { throw LatticeError.classNotInSchema(className: "\(Element.self)") }
        if case .collection = results.source {
            throw LatticeError.unsupported(feature: "Observing the results of a List or LinkingObjects on a queue (observe them without a queue)")
        }
        className = info.name
        node = try results.query.node.map(QueryNodeValue.init)
        steps = results.query.ops.map { step in
            switch step {
            case let .sort(keys): return .sort(keys.map { SortDescriptor(keyPath: $0.path.text, ascending: $0.ascending) })
            case let .distinct(paths): return .distinct(paths.map(\.text))
            }
        }
    }

    /// The same results on `lattice`.
    func results<Element: Object>(on lattice: Lattice) throws -> Results<Element> {
        // Dynamic objects name their class by its name, not by their Swift type.
        var results = Element.self == DynamicObject.self
            ? Results<Element>(lattice: lattice, info: lattice.classInfo(named: className, dynamic: true))
            : lattice.objects(Element.self)
        if let node { results = try results.filtered(node.node) }
        for step in steps {
            switch step {
            case let .sort(descriptors): results = try results.sorted(by: descriptors)
            case let .distinct(paths): results = try results.distinct(by: paths)
            }
        }
        return results
    }
}

/// A query tree that holds no object argument.
struct QueryNodeValue: @unchecked Sendable {
    // @unchecked Sendable is safe: `init` refuses a tree holding an object argument, so what remains is
    // an immutable tree of enums and structs over strings, numbers, Data, Date, UUID, ObjectId and
    // Decimal: value types with no shared mutable state.
    let node: QueryNode

    init(_ node: QueryNode) throws {
        guard !node.holdsObjectArgument else {
            throw LatticeError.unsupported(feature: "Observing on a queue results filtered with an object argument (observe them without a queue)")
        }
        self.node = node
    }
}

extension QueryNode {
    /// Whether some comparison compares with an object.
    var holdsObjectArgument: Bool {
        switch self {
        case .constant: return false
        case let .not(node): return node.holdsObjectArgument
        case let .and(nodes), let .or(nodes): return nodes.contains { $0.holdsObjectArgument }
        case let .comparison(c): return c.lhs.holdsObjectArgument || c.rhs.holdsObjectArgument
        }
    }
}

extension QueryExpression {
    var holdsObjectArgument: Bool {
        switch self {
        case .keyPath: return false
        case let .value(value): if case .object = value { return true } else { return false }
        case let .list(items): return items.contains { $0.holdsObjectArgument }
        case let .subquery(_, _, predicate, _): return predicate.holdsObjectArgument
        }
    }
}

/// Which changes of an object count. Without key paths: any change of the object, and of an object it
/// reaches through links and Lists of objects (up to four hops). With them: the columns their first
/// segments name, and through a relationship named with more segments (`"owner.name"`, `"dogs.age"`,
/// `"walkers.name"`) what the rest names in the objects it leads to.
struct ObservedColumns {
    /// The object's own columns that count.
    let mask: UInt64
    /// No key paths: changes reached through links count, whatever they are.
    let all: Bool
    /// For each relationship column named with more segments: the class it leads to, and what the rest of
    /// those paths watch there (worked out once, not per object and delivery).
    let nested: [Int: (target: ClassInfo, through: ObservedColumns)]

    init(_ info: ClassInfo, keyPaths: [String]?) {
        guard let keyPaths else {
            mask = .max
            all = true
            nested = [:]
            return
        }
        var mask: UInt64 = 0
        var rests: [Int: [String]] = [:]
        for path in keyPaths {
            let parts = path.split(separator: ".", maxSplits: 1).map(String.init)
            guard let first = parts.first, let p = info.columns.first(where: { $0.name == first }) else { continue }
            mask |= ChangeSet.columnBit(p.column)
            if parts.count == 2 { rests[p.column, default: []].append(parts[1]) }
        }
        self.mask = mask
        all = false
        nested = rests.reduce(into: [:]) { out, entry in
            if let target = info.columns[entry.key].target { out[entry.key] = (target, ObservedColumns(target, keyPaths: entry.value)) }
        }
    }

    /// Whether changes of other objects can count.
    var looksThroughLinks: Bool { all || !nested.isEmpty }

    /// The first of `keyPaths` that names no property of `info` (each segment checked against the class
    /// the one before leads to), as the error an observer registered with it gets; nil when all do.
    static func invalidKeyPath(_ keyPaths: [String]?, of info: ClassInfo) -> LatticeError? {
        for path in keyPaths ?? [] {
            var current: ClassInfo? = info
            for segment in path.split(separator: ".", omittingEmptySubsequences: false).map(String.init) {
                guard let cls = current, let p = cls.columns.first(where: { $0.name == segment }) else {
                    return .unknownProperty(className: current?.name ?? info.name, property: current == nil ? path : segment)
                }
                current = p.linksObjects || p.property.type == .linkingObjects ? p.target : nil
            }
        }
        return nil
    }

    /// Whether a commit in `summary` may have changed, through relationships, what these key paths name:
    /// a class the nested paths lead to changed (without key paths: see `ClassInfo.forwardReachableClasses`).
    func mayChangeThrough(_ summary: ChangeSummary) -> Bool {
        all || nested.values.contains { summary.changes(of: $0.target.name) != nil || $0.through.mayChangeThrough(summary) }
    }

    /// Whether object `key` of `info` changed in what is watched: its own columns, or through its relationships.
    func changed(_ info: ClassInfo, _ key: Int64, _ summary: ChangeSummary, _ context: DeliveryContext, depth: Int = 4) -> Bool {
        summary.touched(info.name, key, columns: mask) || changedThrough(info, key, summary, context, depth: depth)
    }

    /// Whether object `key` of `info` changed, through its relationships, in what these key paths name
    /// (without key paths: whether it reaches a change within `depth` hops).
    func changedThrough(_ info: ClassInfo, _ key: Int64, _ summary: ChangeSummary, _ context: DeliveryContext, depth: Int = 4) -> Bool {
        if all { return context.reachesChange(info, key, summary, depth: depth) }
        return nested.contains { column, next in
            (summary.changes(of: next.target.name) != nil || next.through.mayChangeThrough(summary))
                && context.linkedKeys(info, key, through: info.columns[column]).contains { next.through.changed(next.target, $0, summary, context) }
        }
    }
}

extension ClassInfo {
    /// The names of this class and of the classes its links and collections of objects reach within
    /// `depth` hops.
    func forwardReachableClasses(depth: Int) -> Set<String> {
        var seen: Set<String> = [name]
        var frontier: [ClassInfo] = [self]
        for _ in 0..<depth {
            var next: [ClassInfo] = []
            for info in frontier {
                for p in info.columns where p.linksObjects {
                    if let target = p.target, seen.insert(target.name).inserted { next.append(target) }
                }
            }
            frontier = next
        }
        return seen
    }
}

// MARK: - Collection properties

extension ManagedCollection {
    /// How a collection property of this owner is watched: `elements` reads the elements' identities in
    /// order, `payload` gives an identity's element payload (a link's object key for collections of
    /// objects). A modification is a change to an element object (or, without key paths, to an object it
    /// links to); the elements themselves change only through the owner's collection changes or deletion.
    func watch<Identity: Hashable>(keyPaths: [String]?, elements: @escaping (Lattice, Int64) throws -> [Identity],
                                   payload: @escaping (Identity) -> [UInt8]) -> CollectionWatch<Identity> {
        let owner = self.owner
        let target = property.target
        let observed = target.map { ObservedColumns($0, keyPaths: keyPaths) }
        let ownerClass = info.name
        let column = property.column
        return CollectionWatch<Identity>(
            elements: {
                guard owner._lattice != nil, !owner.isInvalidated else { return [] }
                return self.read(elements)
            },
            concerns: { _ in true },
            isModified: { summary, context in
                { identity in
                    guard let target, let observed else { return false }
                    let bytes = payload(identity)
                    guard !bytes.isEmpty else { return false }
                    var at = 0
                    let key = bytes.withUnsafeBytes { Varint.unzigzag(Varint.read($0, &at)) }
                    return observed.changed(target, key, summary, context)
                }
            },
            unchangedOrder: { summary, old in
                guard let changes = summary.changes(of: ownerClass) else { return old }
                if changes.deleted.contains(owner._key) { return nil }
                if let mask = changes.modified[owner._key], mask & ChangeSet.columnBit(column) != 0 { return nil }
                return old
            })
    }
}

// MARK: - List

extension List {
    /// Observes the list (see ``Results/observe(keyPaths:_:)``): indices are list positions, a replaced
    /// entry is a deletion plus an insertion, and for a list of objects a modification is a change to
    /// an element object (or, without key paths, to an object it links to). An unmanaged list cannot be
    /// observed (the block gets `.error`).
    public func observe(keyPaths: [String]? = nil, _ block: @escaping (LatticeCollectionChange<List<Element>>) -> Void) -> NotificationToken {
        guard let managed else {
            block(.error(LatticeError.unsupported(feature: "Observing an unmanaged List")))
            return NotificationToken(flag: ObserverFlag(), stop: {})
        }
        return managed.lattice.register(observer(managed, keyPaths, block), keyPaths: keyPaths, of: managed.property.target,
                                        onError: { block(.error($0)) })
    }

    /// Observes the list on `queue` (nil: as ``observe(keyPaths:_:)``). The list handed to `block` belongs
    /// to a handle opened for the queue, already at the new version: use it only there.
    public func observe(keyPaths: [String]? = nil, on queue: DispatchQueue?,
                        _ block: @escaping @Sendable (LatticeCollectionChange<List<Element>>) -> Void) -> NotificationToken {
        guard let queue else { return observe(keyPaths: keyPaths, block) }
        guard let managed else { return observe(keyPaths: keyPaths, block) }  // unmanaged: `.error`
        return managed.observe(on: queue, keyPaths: keyPaths, of: managed.property.target, onError: { block(.error($0)) }) { (list: List, managed) in
            list.observer(managed, keyPaths, block)
        }
    }

    private func observer(_ managed: ManagedCollection, _ keyPaths: [String]?,
                          _ block: @escaping (LatticeCollectionChange<List<Element>>) -> Void) -> any HandleObserver {
        let property = managed.property
        var watch = managed.watch(keyPaths: keyPaths, elements: { lattice, key in try lattice.listPayloads(property, owner: key) },
                                  payload: { $0 })
        watch.incremental = managed.listIncrementalChange(keyPaths: keyPaths)
        return CollectionObserver(self, watch, block)
    }
}

extension ManagedCollection {
    /// Observes on `queue` this collection read through a handle opened there: `make` builds the observer
    /// of that handle's collection (of type `C`, with its binding). Key paths are checked against `target`.
    func observe<C>(on queue: DispatchQueue, keyPaths: [String]?, of target: ClassInfo?, onError: @escaping @Sendable (Error) -> Void,
                    make: @escaping @Sendable (C, ManagedCollection) throws -> any HandleObserver) -> NotificationToken {
        if let target, let error = ObservedColumns.invalidKeyPath(keyPaths, of: target) {
            onError(error)
            return NotificationToken(flag: ObserverFlag(), stop: {})
        }
        let className = info.name, key = owner._key, name = property.name, dynamic = info.type == DynamicObject.self
        return QueueDelivery.start(from: lattice, on: queue, onError: onError) { handle in
            guard let info = handle.classInfo(named: className, dynamic: dynamic), let owner = try handle.fetchObject(info, key: key),
                  let property = info.property(named: name), let collection = owner.value(of: property) as? C else {
                throw LatticeError.objectInvalidated(className: className)
            }
            return try make(collection, ManagedCollection(owner: owner, property: property))
        }
    }
}
