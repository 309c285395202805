/// What a range of commits changed, merged from their change-log entries: the keys each class inserted,
/// deleted and modified (with the columns), and the owners whose collection properties changed.
struct ChangeSummary {
    struct ClassChanges {
        var inserted = Set<Int64>()
        var deleted = Set<Int64>()
        /// Modified keys and the union of their changed columns (collection changes count as their column).
        var modified: [Int64: UInt64] = [:]
        var isEmpty: Bool { inserted.isEmpty && deleted.isEmpty && modified.isEmpty }
    }

    private(set) var classes: [String: ClassChanges] = [:]
    /// The operations on each List (by qualified property name and owner), in the order they were made.
    private var listOperations: [ListOwner: [ChangeSet.CollectionOperation]] = [:]

    private struct ListOwner: Hashable {
        let property: String
        let owner: Int64
    }
    /// The version the summarized commits follow (they run from just after it to the handle's view).
    let after: Int64

    /// The summary of `entries`, collection properties numbered by `lattice`'s classes.
    init(_ entries: [ChangeSet], after: Int64, in lattice: Lattice) {
        self.init(entries, after: after) { className, property in
            lattice.classesByName[className]?.columns.first { $0.name == property }?.column
        }
    }

    init(_ entries: [ChangeSet], after: Int64, columnOf: (String, String) -> Int?) {
        self.after = after
        for entry in entries {
            for change in entry.objects {
                switch change.kind {
                case .inserted:
                    classes[change.className, default: ClassChanges()].inserted.insert(change.key)
                case .deleted:
                    classes[change.className, default: ClassChanges()].deleted.insert(change.key)
                case .modified:
                    // A record written again with every value it had (an update with `.modified`) is no change.
                    guard change.columns != 0 else { continue }
                    classes[change.className, default: ClassChanges()].modified[change.key, default: 0] |= change.columns
                }
            }
            for change in entry.collections {
                if case .key = change.operation {} else {
                    listOperations[ListOwner(property: change.property, owner: change.owner), default: []].append(change.operation)
                }
                guard let dot = change.property.firstIndex(of: ".") else { continue }
                let className = String(change.property[..<dot])
                let column = columnOf(className, String(change.property[change.property.index(after: dot)...])) ?? 63
                classes[className, default: ClassChanges()].modified[change.owner, default: 0] |= ChangeSet.columnBit(column)
            }
        }
    }

    func changes(of className: String) -> ClassChanges? { classes[className] }

    /// The operations on the List `property` ("Class.property") of `owner`, oldest first.
    func operations(ofList property: String, owner: Int64) -> [ChangeSet.CollectionOperation] {
        listOperations[ListOwner(property: property, owner: owner)] ?? []
    }

    /// The keys of `className`'s objects inserted, deleted, or modified in `columns`.
    func touchedKeys(_ className: String, columns: UInt64 = .max) -> Set<Int64> {
        guard let c = classes[className] else { return [] }
        var keys = c.inserted.union(c.deleted)
        for (key, changed) in c.modified where changed & columns != 0 { keys.insert(key) }
        return keys
    }

    /// Whether the object `key` of `className` was inserted, deleted or modified (in `columns`).
    func touched(_ className: String, _ key: Int64, columns: UInt64 = .max) -> Bool {
        guard let c = classes[className] else { return false }
        if c.inserted.contains(key) || c.deleted.contains(key) { return true }
        return (c.modified[key] ?? 0) & columns != 0
    }
}

/// The n-th occurrence of a value in a collection.
private struct Occurrence<T: Hashable>: Hashable {
    let value: T
    let n: Int
}

/// The change of an ordered collection between two evaluations, as Realm reports it.
enum CollectionDiff {
    /// Deletions (old indices), insertions (new indices) and modifications (old indices of elements kept
    /// in place). Elements are matched by value (the n-th occurrence of a value with its n-th occurrence);
    /// the matched elements that keep their relative order (a longest increasing run of their new
    /// positions) stay, every other one is deleted and inserted.
    // Called from generic observers, where every hash, comparison and dictionary access would otherwise
    // look the identity type's metadata up at run time (three quarters of a Map observer's work): the
    // identity types Lattice observes get their own compiled copies.
    @_specialize(where T == Int64)
    @_specialize(where T == [UInt8])
    @_specialize(where T == MapEntryIdentity)
    static func compute<T: Hashable>(old: [T], new: [T], isModified: (T) -> Bool) -> (deletions: [Int], insertions: [Int], modifications: [Int]) {
        // The common start and end stay in place: only what lies between them is matched by hashing
        // (a commit usually changes a few elements of a long collection).
        var start = 0
        while start < old.count, start < new.count, old[start] == new[start] { start += 1 }
        if start == old.count && start == new.count {
            return ([], [], old.indices.filter { isModified(old[$0]) })
        }
        var oldEnd = old.count, newEnd = new.count
        while oldEnd > start, newEnd > start, old[oldEnd - 1] == new[newEnd - 1] {
            oldEnd -= 1
            newEnd -= 1
        }
        var newPositions: [Occurrence<T>: Int] = [:]
        newPositions.reserveCapacity(newEnd - start)
        var counts: [T: Int] = [:]
        for i in start..<newEnd {
            let n = counts[new[i], default: 0]
            counts[new[i]] = n + 1
            newPositions[Occurrence<T>(value: new[i], n: n)] = i
        }
        counts.removeAll(keepingCapacity: true)
        // For each old element between the common ends, its new position (or -1).
        var matched = [Int](repeating: -1, count: oldEnd - start)
        for i in start..<oldEnd {
            let n = counts[old[i], default: 0]
            counts[old[i]] = n + 1
            matched[i - start] = newPositions[Occurrence<T>(value: old[i], n: n)] ?? -1
        }
        let keptBetween = longestIncreasing(matched)
        var keptNew = [Bool](repeating: false, count: new.count)
        var deletions: [Int] = []
        var modifications: [Int] = []
        for i in old.indices {
            let newPosition = i < start ? i : i >= oldEnd ? i - oldEnd + newEnd : keptBetween[i - start] ? matched[i - start] : -1
            if newPosition >= 0 {
                keptNew[newPosition] = true
                if isModified(old[i]) { modifications.append(i) }
            } else {
                deletions.append(i)
            }
        }
        let insertions = new.indices.filter { !keptNew[$0] }
        return (deletions, insertions, modifications)
    }

    /// Marks the entries (>= 0) of a longest strictly increasing subsequence of `values` (patience sorting).
    private static func longestIncreasing(_ values: [Int]) -> [Bool] {
        var tails: [Int] = []       // index into values of the smallest tail of each length
        var previous = [Int](repeating: -1, count: values.count)
        for (i, v) in values.enumerated() where v >= 0 {
            var low = 0, high = tails.count
            while low < high {
                let mid = (low + high) / 2
                if values[tails[mid]] < v { low = mid + 1 } else { high = mid }
            }
            if low > 0 { previous[i] = tails[low - 1] }
            if low == tails.count { tails.append(i) } else { tails[low] = i }
        }
        var kept = [Bool](repeating: false, count: values.count)
        var at = tails.last ?? -1
        while at >= 0 {
            kept[at] = true
            at = previous[at]
        }
        return kept
    }
}
