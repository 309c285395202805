/// Positional reads (`results[i]`) of every object of a class while the class's keys are not all known.
///
/// The position of an object is its rank in key order, so a read by position needs the keys before it.
/// Reading every key first (a walk of the whole class) and then the records (a second walk) would double
/// the work of an index loop, and make `results[0]` or `results[results.count - 1]` of a million objects
/// read a million keys. Instead the keys are learnt from both ends, in the walks that read the records:
/// positions asked one after another from the start (an index loop, `prefix`, slices) or from the end
/// (`reversed()`, `last(where:)`) move a cursor walk up or down the class, which reads keys and records
/// together, in batches; a jump near either end reads the keys up to it. Once both ends meet, the keys are
/// complete and the results keep them. A position the ends do not reach (a jump into the middle) is not
/// served here: the caller reads every key.
///
/// Valid under one `KeyStamp` of the results: while it holds, no object of the class was added or
/// deleted, so positions and keys stay as learnt. A class, used in place by its results' key cache
/// (under the handle's `synchronized`): a struct there would be copied around every read. Its fields
/// have no runtime exclusivity checks (five per read otherwise): only `object(at:)` touches them, under
/// that lock, and nothing it calls comes back here.
final class ClassPositions {
    @exclusivity(unchecked) private var stamp: ResultsKeyCache.KeyStamp?
    /// The number of objects of the class under `stamp`.
    @exclusivity(unchecked) private var count = 0
    /// The keys of positions `0..<front.count`, and of the last `back.count` positions, the last first.
    @exclusivity(unchecked) private var front: [Int64] = []
    @exclusivity(unchecked) private var back: [Int64] = []
    /// The walks extending `front` (upward, after its last key) and `back` (downward), created on demand.
    @exclusivity(unchecked) private var upward: ResultsReader?
    @exclusivity(unchecked) private var downward: ResultsReader?
    /// Where the walks started: `front.count` and `back.count` then.
    @exclusivity(unchecked) private var upwardBase = 0
    @exclusivity(unchecked) private var downwardBase = 0

    /// How far from an end a position may be for the keys up to it to be read; how far ahead of a walk
    /// a position may be for the walk to go on to it.
    static let jumpLimit = 1_024
    static let walkAhead = 64

    /// Whether the two ends met: every key of the class is known.
    var isComplete: Bool { stamp != nil && front.count + back.count == count }

    /// Every key of the class in order, once the two ends met.
    var completeKeys: [Int64] { front + back.reversed() }

    /// The object at `position` (an instance of `type`) and its key, read through `txn` (the handle's
    /// current one); nil when the position is past the end or too far from both ends (the caller then
    /// reads every key).
    func object(at position: Int, lattice: Lattice, info: ClassInfo, type: Object.Type,
                _ current: ResultsKeyCache.KeyStamp, _ txn: Transaction) throws -> (Object?, Int64)? {
        if stamp != current {
            (front, back, upward, downward) = ([], [], nil, nil)
            count = try txn.count(info.objectsTable)
            stamp = current
        }
        guard position >= 0, position < count else { return nil }
        let fromEnd = count - 1 - position
        if position < front.count {
            let walked = upward?.walked(at: position - upwardBase)
            return (walked ?? lattice.materializeReading(type, info, key: front[position]), front[position])
        }
        if fromEnd < back.count {
            let walked = downward?.walked(at: fromEnd - downwardBase)
            return (walked ?? lattice.materializeReading(type, info, key: back[fromEnd]), back[fromEnd])
        }
        // Between the ends: walk on from the nearer one when the position is just ahead of it.
        if position - front.count < Self.walkAhead && position - front.count <= fromEnd - back.count {
            while true {
                guard let object = step(upward: true, lattice, info, type) else { return nil }
                if front.count > position { return (object, front[position]) }
            }
        }
        if fromEnd - back.count < Self.walkAhead {
            while true {
                guard let object = step(upward: false, lattice, info, type) else { return nil }
                if back.count > fromEnd { return (object, back[fromEnd]) }
            }
        }
        // A jump near an end: read the keys up to it (at least twice as many as known), then the object alone.
        if position < Self.jumpLimit {
            try readKeys(upward: true, to: position, info, txn)
            guard position < front.count else { return nil }
            return (lattice.materializeReading(type, info, key: front[position]), front[position])
        }
        if fromEnd < Self.jumpLimit {
            try readKeys(upward: false, to: fromEnd, info, txn)
            guard fromEnd < back.count else { return nil }
            return (lattice.materializeReading(type, info, key: back[fromEnd]), back[fromEnd])
        }
        return nil
    }

    /// The next object of the upward or downward walk, its key learnt; nil when the class ended early
    /// (it cannot while `stamp` holds).
    private func step(upward up: Bool, _ lattice: Lattice, _ info: ClassInfo, _ type: Object.Type) -> Object? {
        if up ? upward == nil : downward == nil {
            let walk = ResultsWalk(snapshot: nil, lastKey: .max, downward: !up, after: up ? front.last : back.last)
            let reader = ResultsReader(lattice: lattice, info: info, type: type, keys: nil, walk: walk)
            if up { (upward, upwardBase) = (reader, front.count) } else { (downward, downwardBase) = (reader, back.count) }
        }
        let object = up ? upward?.next() : downward?.next()
        if let object {
            if up { front.append(object._key) } else { back.append(object._key) }
        }
        return object
    }

    /// Extends `front` (or `back`) by a walk of keys alone until it holds the position `index` from its end,
    /// and at least twice as many keys as before; the walk from that end starts again after them.
    private func readKeys(upward up: Bool, to index: Int, _ info: ClassInfo, _ txn: Transaction) throws {
        let known = front.count + back.count
        let wanted = Swift.min(Swift.max(index + 1, (up ? front.count : back.count) * 2, Self.walkAhead),
                               (up ? front.count : back.count) + count - known)
        var keys = up ? front : back
        if up { front = [] } else { back = [] }  // extended uniquely
        try txn.withCursor(info.objectsTable) { cursor in
            let walk = ResultsWalk(snapshot: nil, lastKey: .max, downward: !up, after: keys.last)
            var entry = try up ? walk.entry(after: &cursor) : walk.entry(before: &cursor)
            while let e = entry, keys.count < wanted {
                keys.append(KeyCodec.int(e.key))
                entry = try up ? cursor.next() : cursor.previous()
            }
        }
        if up { (front, upward) = (keys, nil) } else { (back, downward) = (keys, nil) }
    }
}
