import Foundation

/// Delivers ``ObjectChange`` notifications of one object on one handle.
final class ObjectObserver<T: Object>: HandleObserver {
    let flag = ObserverFlag()
    private let object: T
    private let info: ClassInfo
    private let key: Int64
    private let observed: ObservedColumns
    private let block: (ObjectChange<T>) -> Void
    private var baseline: RecordBuffer?
    /// The objects linking here through each linking-objects property that key paths name, as last seen.
    private var linking: [Int: [Int64]] = [:]
    private var stamp: UInt64 = 0
    private var version: Int64 = 0
    private var started = false

    init(_ object: T, info: ClassInfo, keyPaths: [String]?, _ block: @escaping (ObjectChange<T>) -> Void) {
        self.object = object
        self.info = info
        key = object._key
        let observed = ObservedColumns(info, keyPaths: keyPaths)
        self.observed = observed
        self.block = block
        related = observed.looksThroughLinks ? info.forwardReachableClasses(depth: 4) : []
        watchedBacklinks = keyPaths == nil ? [] : info.columns.filter { $0.property.type == .linkingObjects && observed.mask & ChangeSet.columnBit($0.column) != 0 }
    }

    /// Linking-objects properties named by key paths (never watched without key paths: backlinks do not
    /// count by default).
    private let watchedBacklinks: [PropertyInfo]
    /// When changes of other objects can count: the classes the object reaches through links (changes
    /// elsewhere cannot reach it).
    private let related: Set<String>

    /// The objects linking to the observed one through `p`, in backlink order.
    private func linkingKeys(_ p: PropertyInfo, _ lattice: Lattice) -> [Int64] {
        guard let origin = p.target, let name = p.property.originProperty, let through = origin.property(named: name) else { return [] }
        return ((try? lattice.backlinks(of: info, key: key, through: through)) ?? []).flatMap { Array(repeating: $0.source, count: $0.count) }
    }

    /// Whether the linking objects through `p` changed: others link here, or (with a key path going on,
    /// like `"walkers.name"`) one of them changed in what that path names.
    private func backlinksChanged(_ p: PropertyInfo, _ summary: ChangeSummary?, _ context: DeliveryContext) -> Bool {
        let now = linkingKeys(p, context.lattice)
        defer { linking[p.column] = now }
        if linking[p.column] != now { return true }
        guard let next = observed.nested[p.column] else { return false }
        guard let summary else { return true }  // the log cannot tell: they may have changed
        return now.contains { next.through.changed(next.target, $0, summary, context, depth: 3) }
    }

    func update(_ context: DeliveryContext) {
        guard flag.isActive else { return }
        guard let change = nextChange(context) else { return }
        // Checked again once the change is computed: the token may have been invalidated meanwhile from
        // another thread (a queue observer's). `.deleted` ends the observer itself (its flag too) and is
        // delivered all the same.
        if case .deleted = change { return block(change) }
        if flag.isActive { block(change) }
    }

    /// The record of the observed object at the handle's view; nil once it was deleted (or re-created).
    private func current(_ lattice: Lattice) -> RecordBuffer? {
        guard let record = try? lattice.fetchRecord(info, key: key) else { return nil }
        if stamp != 0 && record.stamp != stamp { return nil }
        return record
    }

    /// Takes the object as the handle sees it now as the state later changes are told against; at
    /// registration (so a commit before the first delivery is a change, as in Realm), or at the first
    /// delivery. `.deleted` when the object is gone.
    @discardableResult
    func start(_ context: DeliveryContext) -> ObjectChange<T>? {
        started = true
        baseline = current(context.lattice)
        stamp = baseline?.stamp ?? 0
        version = context.version
        if baseline == nil { flag.deactivate(); return .deleted }
        for p in watchedBacklinks { linking[p.column] = linkingKeys(p, context.lattice) }
        return nil
    }

    /// The change since the previous call (or `start`); `.deleted` once (then nothing more).
    func nextChange(_ context: DeliveryContext) -> ObjectChange<T>? {
        if !started { return start(context) }
        guard let old = baseline, context.version != version else { return nil }
        let summary = context.summary(after: version)
        version = context.version
        // An object the commits did not touch keeps its record: nothing to read. Unless the observer looks
        // through links (at classes that changed) or at backlinks, nothing it watches changed either.
        let untouched = summary.map { !$0.touched(info.name, key) } ?? false
        if untouched && watchedBacklinks.isEmpty && !(observed.looksThroughLinks && related.contains { summary?.changes(of: $0) != nil }) {
            return nil
        }
        guard let record = untouched ? old : current(context.lattice) else {
            baseline = nil
            flag.deactivate()
            return .deleted
        }
        baseline = record
        // The columns the commits set on this object (equal values included); nil when the log cannot tell.
        let setColumns = summary.map { $0.changes(of: info.name)?.modified[key] ?? 0 }
        var properties: [PropertyChange] = []
        for p in info.columns where observed.mask & ChangeSet.columnBit(p.column) != 0 {
            let bit = ChangeSet.columnBit(p.column)
            if p.property.type == .linkingObjects {
                if watchedBacklinks.contains(where: { $0 === p }), backlinksChanged(p, summary, context) {
                    properties.append(PropertyChange(name: p.name, oldValue: nil, newValue: object.value(forKey: p.name)))
                }
                continue
            }
            // Without a summary (the log cannot tell) collections and links count as changed: a superset,
            // as collection observers then report every element kept in place as modified.
            if p.property.collection != nil {
                var changed = setColumns.map { $0 & bit != 0 } ?? true
                // A collection of objects changed, too, when one of its objects changed in what is watched.
                if !changed, let summary, let target = p.target, p.linksObjects, watchesThrough(p),
                   observed.nested[p.column] != nil || context.objectsReachingChanges(info, summary, depth: 4)?.contains(key) != false {
                    changed = context.linkedKeys(info, key, through: p).contains { linkChanged(p, target, $0, summary, context) }
                }
                if changed { properties.append(PropertyChange(name: p.name, oldValue: nil, newValue: object.value(forKey: p.name))) }
                continue
            }
            if untouched && !p.isLink { continue }  // the stored value, unchanged
            let was = old.withBytes { RecordView($0)?.payload(p.column).map(Array.init) }
            let now = record.withBytes { RecordView($0)?.payload(p.column).map(Array.init) }
            // Set to the value it had: a change all the same (as in Realm), when the log tells.
            let setAgain = (setColumns ?? 0) & bit != 0
            if was != now || setAgain {
                if p.isLink {
                    properties.append(PropertyChange(name: p.name, oldValue: nil, newValue: object.value(forKey: p.name)))
                } else {
                    // Values as reading the property by name gives them (integers as `Int`).
                    properties.append(PropertyChange(name: p.name, oldValue: valueByName(was.flatMap { $0.withUnsafeBytes(p.valueType.decodeAny) }, p.property),
                                                     newValue: valueByName(now.flatMap { $0.withUnsafeBytes(p.valueType.decodeAny) }, p.property)))
                }
            } else if p.isLink, let target = p.target, let linked = now.flatMap({ $0.withUnsafeBytes(context.lattice.linkedKey) }),
                      summary.map({ linkChanged(p, target, linked, $0, context) }) ?? watchesThrough(p) {
                properties.append(PropertyChange(name: p.name, oldValue: nil, newValue: object.value(forKey: p.name)))
            }
        }
        return properties.isEmpty ? nil : .change(object, properties)
    }

    /// Whether changes of the object link `p` reaches count (`linkChanged` without its summary).
    private func watchesThrough(_ p: PropertyInfo) -> Bool {
        observed.all || observed.nested[p.column] != nil
    }

    /// Whether the object a link reaches changed in what is observed through it.
    private func linkChanged(_ p: PropertyInfo, _ target: ClassInfo, _ key: Int64, _ summary: ChangeSummary, _ context: DeliveryContext) -> Bool {
        if let next = observed.nested[p.column] { return next.through.changed(target, key, summary, context, depth: 3) }
        return observed.all && (summary.touched(target.name, key) || context.reachesChange(target, key, summary, depth: 3))
    }

    func skip(_ context: DeliveryContext) {
        guard started, baseline != nil else { return }
        baseline = current(context.lattice)
        for p in watchedBacklinks { linking[p.column] = linkingKeys(p, context.lattice) }
        version = context.version
    }
}

/// Model classes (``Object`` subclasses) gain observation typed by their own class.
public protocol LatticeObservable: AnyObject {}

extension Object: LatticeObservable {}

extension LatticeObservable where Self: Object {
    /// Observes the object: `block` gets `.change` with the changed properties (old and new values)
    /// after each commit that changed it, and `.deleted` once when it is deleted, on this thread's run
    /// loop and whenever the handle is refreshed. Without `keyPaths`, a change of an object reached
    /// through to-one links (up to four hops) counts as a change of the link property; with them, only
    /// the named properties count, where `"owner.name"` watches `name` of the linked `owner`, and a
    /// linking-objects property `"walkers"` watches which objects link here (`"walkers.name"` also their
    /// `name`). An
    /// unmanaged object, or a registration inside a write transaction, gets `.error`.
    public func observe(keyPaths: [String]? = nil, _ block: @escaping (ObjectChange<Self>) -> Void) -> NotificationToken {
        guard let lattice = _lattice, let info = _info else {
            block(.error(LatticeError.objectNotManaged(className: "\(type(of: self))", operation: "observe(keyPaths:_:)")))
            return NotificationToken(flag: ObserverFlag(), stop: {})
        }
        let observer = ObjectObserver(self, info: info, keyPaths: keyPaths, block)
        if lattice.writer == nil && !isInvalidated { observer.start(DeliveryContext(lattice)) }
        return lattice.register(observer, keyPaths: keyPaths, of: info, onError: { block(.error($0)) })
    }

    /// Observes the object on `queue` (nil: as ``observe(keyPaths:_:)``); the object handed to `block`
    /// belongs to a handle opened for the queue: use it only there.
    public func observe(keyPaths: [String]? = nil, on queue: DispatchQueue?,
                        _ block: @escaping @Sendable (ObjectChange<Self>) -> Void) -> NotificationToken {
        guard let queue else { return observe(keyPaths: keyPaths, block) }
        guard let lattice = _lattice, let info = _info else {
            block(.error(LatticeError.objectNotManaged(className: "\(type(of: self))", operation: "observe(keyPaths:on:_:)")))
            return NotificationToken(flag: ObserverFlag(), stop: {})
        }
        let className = info.name, key = _key, dynamic = info.type == DynamicObject.self
        return QueueDelivery.start(from: lattice, on: queue, onError: { block(.error($0)) }) { handle in
            guard let info = handle.classInfo(named: className, dynamic: dynamic), let object = try handle.fetchObject(info, key: key) as? Self else {
                throw LatticeError.objectInvalidated(className: className)
            }
            if let error = ObservedColumns.invalidKeyPath(keyPaths, of: info) { throw error }
            return ObjectObserver(object, info: info, keyPaths: keyPaths, block)
        }
    }

    /// The changes of the object as an `AsyncSequence` (see ``LatticeChanges``); it ends after `.deleted`.
    public var changes: LatticeChanges<ObjectChange<Self>> {
        let object = self
        guard let lattice = _lattice, let info = _info else {
            preconditionFailure("\(LatticeError.objectNotManaged(className: "\(type(of: self))", operation: "changes"))")
        }
        return LatticeChanges(lattice: lattice) {
            if lattice.isFrozen { return LatticeChanges.once(.error(LatticeError.frozen(operation: "changes"))) }
            let observer = ObjectObserver(object, info: info, keyPaths: nil) { _ in }
            return ({ observer.nextChange($0) }, { !observer.flag.isActive })
        }
    }

}
