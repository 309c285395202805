/// The change of a List computed from the operations the change log recorded on it (inserts, removals,
/// replacements, in order), not from reading and comparing the whole list: an observer of a list of a
/// hundred thousand entries reads only the entries a commit inserted or replaced. A moved entry is a
/// deletion plus an insertion and a replaced one (`list[i] = x`) a modification, as Realm reports them;
/// the entries kept never change their relative order.
enum ListChanges {
    /// The entries after `operations` on a list of `count` entries, each its position before them or -1
    /// for one inserted since, and the old positions of the entries replaced in place; nil when an
    /// operation does not fit (the log and the list disagree: the caller then reads the list).
    static func replay(_ operations: [ChangeSet.CollectionOperation], count: Int) -> (slots: [Int], replaced: Set<Int>)? {
        var slots = Array(0..<count)
        var replaced = Set<Int>()
        for operation in operations {
            switch operation {
            case .insert(let range):
                guard range.lowerBound <= slots.count else { return nil }
                slots.insert(contentsOf: repeatElement(-1, count: range.count), at: range.lowerBound)
            case .remove(let range):
                guard range.upperBound <= slots.count else { return nil }
                slots.removeSubrange(range)
            case .set(let position):
                guard position < slots.count else { return nil }
                if slots[position] >= 0 { replaced.insert(slots[position]) }
            case .clear:
                slots.removeAll()
            case .key:
                return nil
            }
        }
        return (slots, replaced)
    }
}

extension ManagedCollection {
    /// The incremental change of this List for `CollectionWatch.incremental`: identities are entry
    /// payloads. Nil (evaluate the list again) when the owner is gone, the log and the list disagree,
    /// or so many entries are new that reading the whole list costs less than reading them one by one.
    func listIncrementalChange(keyPaths: [String]?) -> (ChangeSummary, [[UInt8]], DeliveryContext) -> IncrementalChange<[UInt8]>? {
        let target = property.target
        let observed = target.map { ObservedColumns($0, keyPaths: keyPaths) }
        let name = property.qualifiedName
        return { summary, old, context in
            // A deleted owner's list is read again (as empty), not replayed.
            guard !self.owner.isInvalidated else { return nil }
            let operations = summary.operations(ofList: name, owner: self.owner._key)
            if operations.isEmpty {
                let all = [Bool](repeating: true, count: old.count)
                return IncrementalChange(elements: old, deletions: [], insertions: [],
                                         modifications: Self.modified(old, all, target, observed, summary, context))
            }
            guard let (slots, replaced) = ListChanges.replay(operations, count: old.count) else { return nil }
            let inserted = slots.indices.filter { slots[$0] < 0 }
            if inserted.count + replaced.count > max(64, slots.count / 8) { return nil }
            // The entries now: the old ones kept, the new ones read by position.
            let elements: [[UInt8]]? = self.read { lattice, owner in
                let store = ListStore(lattice: lattice, property: self.property, owner: owner)
                guard try store.count() == slots.count else { return nil }
                var elements: [[UInt8]] = []
                elements.reserveCapacity(slots.count)
                for (position, slot) in slots.enumerated() {
                    if slot >= 0 && !replaced.contains(slot) {
                        elements.append(old[slot])
                    } else {
                        guard let payload = try store.withPayload(at: position, Array.init) else { return nil }
                        elements.append(payload)
                    }
                }
                return elements
            }
            guard let elements else { return nil }
            var kept = [Bool](repeating: false, count: old.count)
            for slot in slots where slot >= 0 { kept[slot] = true }
            let deletions = old.indices.filter { !kept[$0] }
            let modified = Set(Self.modified(old, kept, target, observed, summary, context)).union(replaced.filter { kept[$0] })
            return IncrementalChange(elements: elements, deletions: deletions, insertions: inserted, modifications: modified.sorted())
        }
    }

    /// The old positions of the kept entries whose objects the commits modified (directly in the observed
    /// columns, or, watched deeply, through links).
    private static func modified(_ old: [[UInt8]], _ kept: [Bool], _ target: ClassInfo?, _ observed: ObservedColumns?,
                                 _ summary: ChangeSummary, _ context: DeliveryContext) -> [Int] {
        guard let target, let observed else { return [] }
        var keys = summary.touchedKeys(target.name, columns: observed.mask)
        var everyKey = false
        if observed.all {
            if let reached = context.objectsReachingChanges(target, summary) { keys.formUnion(reached) } else { everyKey = true }
        } else if observed.mayChangeThrough(summary) {
            everyKey = true  // key paths through relationships: each element asked
        }
        if keys.isEmpty && !everyKey { return [] }
        return old.indices.filter { i in
            guard kept[i], let key = old[i].withUnsafeBytes(context.lattice.linkedKey) else { return false }
            return keys.contains(key) || (everyKey && observed.changedThrough(target, key, summary, context))
        }
    }
}
