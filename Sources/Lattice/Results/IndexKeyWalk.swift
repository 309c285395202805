/// The keys of a whole class (or of its objects a filter matches) sorted by an indexed property, taken
/// from the index a batch at a time for a loop over the results: a loop that stops after twenty objects
/// reads twenty-odd index entries (or those up to its twentieth match), not the whole index.
///
/// The loop still walks the objects as they were when it began: each batch walks the index from its
/// start again, further than the one before, on the snapshot the loop began on; before that
/// snapshot ends (a write begins, the handle refreshes), the walk takes every remaining key from it (see
/// `Lattice.readUntilSnapshotEnds`). Used outside write transactions only, where a snapshot is still.
final class IndexKeyWalk: SnapshotReader {
    private let lattice: Lattice
    private let info: ClassInfo
    private let column: ScalarColumn
    private let ascending: Bool
    /// For filtered results, the filter's matches (ascending) on the loop's snapshot: only they are
    /// taken (see `ResultsOrdering.firstKeys`).
    private let matches: [Int64]?
    /// The keys taken so far, in order.
    private(set) var keys: [Int64] = []
    /// Whether `keys` are every key.
    private(set) var complete = false

    /// The first batch in the order of `column`; nil when its index cannot give the order (see
    /// `ResultsOrdering.firstKeys`).
    init?(_ lattice: Lattice, _ info: ClassInfo, _ column: ScalarColumn, ascending: Bool, among matches: [Int64]?) {
        self.lattice = lattice
        self.info = info
        self.column = column
        self.ascending = ascending
        self.matches = matches
        guard walk(limit: 32) else { return nil }
        if !complete && !lattice.isFrozen { lattice.readUntilSnapshotEnds(self) }
    }

    /// The keys, longer than the first `count`; nil when there are no more. Each batch walks sixteen times
    /// as far as the one before: a loop that reads every object walks the index about 1.07 times.
    func keys(after count: Int) -> [Int64]? {
        if count >= keys.count && !complete { _ = walk(limit: 16 * keys.count) }
        return keys.count > count ? keys : nil
    }

    func snapshotWillEnd() {
        if !complete { _ = walk(limit: .max) }
    }

    /// Walks the index to at least `limit` keys; false when it cannot give the order.
    private func walk(limit: Int) -> Bool {
        let walked = lattice.reading("the objects of '\(info.name)'") { txn in
            try ResultsOrdering.firstKeys(info, column, ascending: ascending, limit: limit, among: matches, lattice, txn)
        }
        guard let walked else { return false }
        (keys, complete) = walked
        return true
    }
}
