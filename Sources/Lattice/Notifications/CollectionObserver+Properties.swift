import Foundation

// MARK: - MutableSet

extension MutableSet {
    /// Observes the set (see ``Results/observe(keyPaths:_:)``): indices are positions in the set's
    /// order (its elements' key order), and for a set of objects a modification is a change to an
    /// element object (or, without key paths, to an object it links to). An unmanaged set cannot be
    /// observed (the block gets `.error`).
    public func observe(keyPaths: [String]? = nil,
                        _ block: @escaping (LatticeCollectionChange<MutableSet<Element>>) -> Void) -> NotificationToken {
        guard let managed else {
            block(.error(LatticeError.unsupported(feature: "Observing an unmanaged MutableSet")))
            return NotificationToken(flag: ObserverFlag(), stop: {})
        }
        return managed.lattice.register(observer(managed, keyPaths, block), keyPaths: keyPaths, of: managed.property.target,
                                        onError: { block(.error($0)) })
    }

    /// Observes the set on `queue` (nil: as ``observe(keyPaths:_:)``). The set handed to `block` belongs
    /// to a handle opened for the queue, already at the new version: use it only there.
    public func observe(keyPaths: [String]? = nil, on queue: DispatchQueue?,
                        _ block: @escaping @Sendable (LatticeCollectionChange<MutableSet<Element>>) -> Void) -> NotificationToken {
        guard let queue, let managed else { return observe(keyPaths: keyPaths, block) }
        return managed.observe(on: queue, keyPaths: keyPaths, of: managed.property.target, onError: { block(.error($0)) }) { (set: MutableSet, managed) in
            set.observer(managed, keyPaths, block)
        }
    }

    private func observer(_ managed: ManagedCollection, _ keyPaths: [String]?,
                          _ block: @escaping (LatticeCollectionChange<MutableSet<Element>>) -> Void) -> any HandleObserver {
        let property = managed.property
        let watch = managed.watch(keyPaths: keyPaths, elements: { lattice, key in
            try SetTable(table: property.collectionTable!, owner: key).entries(lattice.readTransaction()).map(\.value)
        }, payload: { $0 })
        return CollectionObserver(self, watch, block)
    }
}

// MARK: - Map

/// A change of an observed ``Map``, reported by key.
public enum LatticeMapChange<Collection> {
    /// The map when observation began; always the first notification.
    case initial(Collection)
    /// The map changed: keys removed, keys added, and keys whose value changed (or, for a map of objects,
    /// whose object changed).
    case update(Collection, deletions: [String], insertions: [String], modifications: [String])
    /// Observation failed and stopped.
    case error(Error)
}

/// One entry of an observed map: its key and value payload.
struct MapEntryIdentity: Hashable {
    let key: String
    let payload: [UInt8]
}

extension Map {
    /// Observes the map: a new key is an insertion, a removed key a deletion, and a key whose value
    /// changed (for a map of objects, also a key whose object changed) a modification. An unmanaged map
    /// cannot be observed (the block gets `.error`).
    public func observe(keyPaths: [String]? = nil, _ block: @escaping (LatticeMapChange<Map<Key, Value>>) -> Void) -> NotificationToken {
        guard let managed else {
            block(.error(LatticeError.unsupported(feature: "Observing an unmanaged Map")))
            return NotificationToken(flag: ObserverFlag(), stop: {})
        }
        return managed.lattice.register(observer(managed, keyPaths, block), keyPaths: keyPaths, of: managed.property.target,
                                        onError: { block(.error($0)) })
    }

    /// Observes the map on `queue` (nil: as ``observe(keyPaths:_:)``). The map handed to `block` belongs
    /// to a handle opened for the queue, already at the new version: use it only there.
    public func observe(keyPaths: [String]? = nil, on queue: DispatchQueue?,
                        _ block: @escaping @Sendable (LatticeMapChange<Map<Key, Value>>) -> Void) -> NotificationToken {
        guard let queue, let managed else { return observe(keyPaths: keyPaths, block) }
        return managed.observe(on: queue, keyPaths: keyPaths, of: managed.property.target, onError: { block(.error($0)) }) { (map: Map, managed) in
            map.observer(managed, keyPaths, block)
        }
    }

    private func observer(_ managed: ManagedCollection, _ keyPaths: [String]?,
                          _ block: @escaping (LatticeMapChange<Map<Key, Value>>) -> Void) -> any HandleObserver {
        let property = managed.property
        let read: (Lattice, Int64) throws -> [MapEntryIdentity] = { lattice, key in
            try MapTable(table: property.collectionTable!, owner: key).entries(lattice.readTransaction())
                .map { MapEntryIdentity(key: $0.key, payload: $0.payload) }
        }
        let watch = managed.watch(keyPaths: keyPaths, elements: read, payload: \.payload)
        // The collection observer reports positions; the entries it compared turn them into keys.
        var compared: (old: [MapEntryIdentity], new: [MapEntryIdentity]) = ([], [])
        let observer = CollectionObserver(self, watch) { (change: LatticeCollectionChange<Map<Key, Value>>) in
            switch change {
            case let .initial(map):
                block(.initial(map))
            case let .update(map, deletions, insertions, modifications):
                let (old, new) = compared
                let removed = Set(deletions.map { old[$0].key })
                let added = Set(insertions.map { new[$0].key })
                let changed = removed.intersection(added).union(modifications.map { old[$0].key })
                block(.update(map, deletions: removed.subtracting(added).sorted(), insertions: added.subtracting(removed).sorted(),
                              modifications: changed.sorted()))
            case let .error(error):
                block(.error(error))
            }
        }
        observer.willUpdate = { compared = ($0, $1) }
        return observer
    }
}

// MARK: - LinkingObjects

extension LinkingObjects {
    /// Observes the objects linking here (see ``Results/observe(keyPaths:_:)``): indices are positions
    /// in the collection, a modification is a change to a linking object (or, without key paths, to an
    /// object it links to). The backlinks of an unmanaged object cannot be observed (`.error`).
    public func observe(keyPaths: [String]? = nil,
                        _ block: @escaping (LatticeCollectionChange<LinkingObjects<Element>>) -> Void) -> NotificationToken {
        guard let managed, let originInfo, let originProperty = originLink else {
            block(.error(LatticeError.unsupported(feature: "Observing the linking objects of an unmanaged object")))
            return NotificationToken(flag: ObserverFlag(), stop: {})
        }
        return managed.lattice.register(observer(managed, originInfo, originProperty, keyPaths, block), keyPaths: keyPaths, of: originInfo,
                                        onError: { block(.error($0)) })
    }

    /// Observes the objects linking here on `queue` (nil: as ``observe(keyPaths:_:)``). The collection
    /// handed to `block` belongs to a handle opened for the queue, already at the new version: use it
    /// only there.
    public func observe(keyPaths: [String]? = nil, on queue: DispatchQueue?,
                        _ block: @escaping @Sendable (LatticeCollectionChange<LinkingObjects<Element>>) -> Void) -> NotificationToken {
        guard let queue, let managed, let originInfo else { return observe(keyPaths: keyPaths, block) }
        return managed.observe(on: queue, keyPaths: keyPaths, of: originInfo, onError: { block(.error($0)) }) { (linking: LinkingObjects, managed) in
            // Found as the observed collection was (the same property of the same schema).
            guard let originInfo = linking.originInfo, let originProperty = linking.originLink else {
                throw LatticeError.objectInvalidated(className: managed.info.name)
            }
            return linking.observer(managed, originInfo, originProperty, keyPaths, block)
        }
    }

    private func observer(_ managed: ManagedCollection, _ originInfo: ClassInfo, _ originProperty: PropertyInfo, _ keyPaths: [String]?,
                          _ block: @escaping (LatticeCollectionChange<LinkingObjects<Element>>) -> Void) -> any HandleObserver {
        let owner = managed.owner
        let observed = ObservedColumns(originInfo, keyPaths: keyPaths)
        let watch = CollectionWatch<Int64>(
            elements: {
                guard owner._lattice != nil, !owner.isInvalidated else { return [] }
                return managed.read { lattice, key in
                    try lattice.backlinks(of: managed.info, key: key, through: originProperty)
                        .flatMap { Array(repeating: $0.source, count: $0.count) }
                }
            },
            concerns: { _ in true },
            isModified: { summary, context in
                { key in
                    observed.changed(originInfo, key, summary, context)
                }
            },
            unchangedOrder: { summary, old in
                // Links here change only through the origin class's link column (or its objects' deletion).
                guard let changes = summary.changes(of: originInfo.name) else { return old }
                if !changes.inserted.isEmpty || !changes.deleted.isEmpty { return nil }
                let bit = ChangeSet.columnBit(originProperty.column)
                return changes.modified.values.contains { $0 & bit != 0 } ? nil : old
            })
        return CollectionObserver(self, watch, block)
    }
}
