/// Key paths through relationships: `owner.name`, `car.owner.address.city`, `dogs.age`, `walkers.name`,
/// `nicknames`, `$d.age` (inside a SUBQUERY). A path is a list of hops from the queried class to an end
/// class, then what it ends on. Reading it from a row yields *leaves*: the records of the end objects
/// (for a property at the end), the end objects' keys (for a link or collection of objects at the end),
/// or the elements of a collection of values. Comparisons, quantifiers, collection operators and
/// SUBQUERY all consume leaves, so each only says what it does with them.
struct ResolvedPath {
    /// One step through a relationship, from an object of `from` to objects of `to`.
    struct Hop {
        enum Kind {
            case link, list, set, map
            /// LinkingObjects: the objects of `to` linking here through `origin`.
            case backlinks(origin: PropertyInfo)
        }
        let property: PropertyInfo
        let from: ClassInfo
        let to: ClassInfo
        let kind: Kind
        /// `map['key']`: only the object at this key of a Map (a nil link when the key is missing).
        var mapKey: String? = nil
        var toMany: Bool {
            if case .link = kind { return false }
            return mapKey == nil
        }
    }

    /// What the path ends on, in the end class.
    enum End {
        /// A single-value property of the end objects.
        case scalar(ScalarColumn)
        /// The end objects themselves (the path's last hop is a link, collection of objects or backlinks).
        case objects
        /// The elements of a List, MutableSet or Map of values, read as one-column records (column 0).
        case values(ScalarColumn)
        /// The value at one key of a Map of values (`ratings['a']`), as a one-column record; a missing
        /// key is a broken leaf (it reads as nil).
        case mapValue(ScalarColumn, key: String)
        /// The keys of a Map (`ratings.@allKeys`), as one-column String records.
        case keys(ScalarColumn)
    }

    let hops: [Hop]
    let end: End
    let endClass: ClassInfo
    /// How the path reads in messages and `explain()`, worked out when asked (every filter resolves its
    /// paths; few print them).
    var text: String { keyPath?.description ?? name }
    private let keyPath: QueryKeyPath?
    private let name: String

    init(hops: [Hop], end: End, endClass: ClassInfo, text: String) {
        (self.hops, self.end, self.endClass, keyPath, name) = (hops, end, endClass, nil, text)
    }

    init(hops: [Hop], end: End, endClass: ClassInfo, keyPath: QueryKeyPath) {
        (self.hops, self.end, self.endClass, self.keyPath, name) = (hops, end, endClass, keyPath, "")
    }

    /// True when a row may reach several leaves (quantifiers and collection operators apply).
    var toMany: Bool {
        switch end {
        case .values, .keys: return true
        default: return hops.contains { $0.toMany }
        }
    }

    /// The plain column of the queried class, when the path is one (the shape the planner handles).
    var rootColumn: ScalarColumn? {
        guard hops.isEmpty, case let .scalar(column) = end else { return nil }
        return column
    }

    /// A leaf reached from a row.
    enum Leaf {
        /// An earlier link was nil: the path does not reach an end object.
        case broken
        /// The end link itself is nil (only for `.objects` ends).
        case null
        /// An end object, by key (for `.objects` ends, whose records are not read).
        case object(Int64)
        /// The record holding the leaf value: an end object's record, or an element as a one-column record.
        case record(RecordView, key: Int64)
    }

    /// Calls `body` with each leaf of the row until it returns false. Record views are valid only inside `body`.
    func forEachLeaf(_ view: RecordView, _ context: RowContext, _ body: (Leaf, RowContext) -> Bool) {
        // `current`: keys reached so far, nil where the last hop was a nil link. `broken`: paths cut by
        // an earlier nil link (they stay cut through to-one hops and vanish at a to-many hop).
        var current: [Int64?] = [context.key]
        var broken = 0
        for (i, hop) in hops.enumerated() {
            var next: [Int64?] = []
            if hop.toMany { broken = 0 }
            for key in current {
                guard let key else {
                    if !hop.toMany { broken += 1 }
                    continue
                }
                next += i == 0 ? follow(hop, key: key, view: view, context)
                    : context.record(hop.from, key) { follow(hop, key: key, view: $0, context) } ?? []
            }
            current = next
        }
        for _ in 0..<broken where !body(.broken, context) { return }
        for key in current {
            let more: Bool
            switch end {
            case .objects:
                more = body(key.map(Leaf.object) ?? .null, context)
            case .scalar:
                guard let key else { more = body(.broken, context); break }
                if hops.isEmpty {
                    more = body(.record(view, key: key), context)
                } else {
                    more = context.record(endClass, key) { body(.record($0, key: key), context.with(key: key)) } ?? true
                }
            case let .values(column):
                guard let key else { more = true; break }
                var goOn = true
                for payload in ResolvedPath.elements(of: column.property, owner: key, context) where goOn {
                    goOn = ResolvedPath.withElementRecord(payload) { body(.record($0, key: key), context) } ?? true
                }
                more = goOn
            case let .mapValue(column, mapKey):
                guard let key else { more = body(.broken, context); break }
                guard let payload = ResolvedPath.mapPayload(of: column.property, owner: key, at: mapKey, context) else {
                    more = body(.broken, context)
                    break
                }
                more = ResolvedPath.withElementRecord(payload) { body(.record($0, key: key), context) } ?? true
            case let .keys(column):
                guard let key else { more = true; break }
                var goOn = true
                for mapKey in ResolvedPath.mapKeys(of: column.property, owner: key, context) where goOn {
                    goOn = ResolvedPath.withElementRecord(Array(mapKey.utf8)) { body(.record($0, key: key), context) } ?? true
                }
                more = goOn
            }
            if !more { return }
        }
    }

    /// The objects of `hop.from` linked from the objects `keys` of `hop.to` through the origin property of
    /// a LinkingObjects hop (`hop` read backwards: the links themselves, not the backlink table).
    static func origins(of hop: Hop, _ keys: [Int64], _ context: RowContext) -> [Int64] {
        guard case let .backlinks(origin) = hop.kind else { return [] }
        let kind: Hop.Kind = switch origin.property.collection {
        case .list?: .list
        case .set?: .set
        case .map?: .map
        case nil: .link
        }
        let forward = Hop(property: origin, from: hop.to, to: hop.from, kind: kind)
        let path = ResolvedPath(hops: [forward], end: .objects, endClass: hop.from, text: "")
        var out: [Int64] = []
        for key in keys {
            // Only a to-one link is read from the object's record.
            let reached = if case .link = kind {
                context.record(hop.to, key) { path.follow(forward, key: key, view: $0, context) } ?? []
            } else {
                targets(of: forward, from: key, context)
            }
            out += reached.compactMap { $0 }
        }
        return out
    }

    /// The keys one hop leads to from the object `key` whose record is `view` (nil: a nil link).
    private func follow(_ hop: Hop, key: Int64, view: RecordView, _ context: RowContext) -> [Int64?] {
        if case .link = hop.kind {
            return [view.payload(hop.property.column).flatMap { $0.isEmpty ? nil : Int64._latticeDecode($0) }]
        }
        return ResolvedPath.targets(of: hop, from: key, context)
    }

    /// The keys a hop through a collection or LinkingObjects leads to from the object `key` (nil: a nil
    /// link); none of them reads the object's record (a to-one link does: `follow`).
    static func targets(of hop: Hop, from key: Int64, _ context: RowContext) -> [Int64?] {
        switch hop.kind {
        case .link:
            return []
        case .map where hop.mapKey != nil:
            let payload = hop.mapKey.flatMap { mapPayload(of: hop.property, owner: key, at: $0, context) }
            return [payload.flatMap { $0.isEmpty ? nil : $0.withUnsafeBytes { Int64._latticeDecode($0) } }]
        case .list:
            // The entries read in place, not copied out one by one (unless one holds no object).
            if let keys = context.attempt(nil, { try ListStore(lattice: context.lattice, property: hop.property, owner: key).objectKeys() }) {
                return keys.map(Optional.some)
            }
            fallthrough
        case .set, .map:
            return elements(of: hop.property, owner: key, context).map { payload in
                payload.withUnsafeBytes { $0.isEmpty ? nil : Int64._latticeDecode($0) }
            }
        case let .backlinks(origin):
            return context.attempt([]) {
                try context.lattice.backlinks(of: hop.from, key: key, through: origin)
                    .flatMap { Array(repeating: Optional($0.source), count: $0.count) }
            }
        }
    }

    /// The element payloads of a collection property of the object `owner` (List order; Map values in key order).
    private static func elements(of property: PropertyInfo, owner: Int64, _ context: RowContext) -> [[UInt8]] {
        context.attempt([]) {
            switch property.property.collection {
            case .list?: return try context.lattice.listPayloads(property, owner: owner)
            case .set?: return try SetTable(table: property.collectionTable!, owner: owner).entries(context.lattice.readTransaction()).map(\.value)
            case .map?: return try MapTable(table: property.collectionTable!, owner: owner).entries(context.lattice.readTransaction()).map(\.payload)
            case nil: return []
            }
        }
    }

    /// The payload at `mapKey` of a Map property of the object `owner`; nil when the key is missing.
    private static func mapPayload(of property: PropertyInfo, owner: Int64, at mapKey: String, _ context: RowContext) -> [UInt8]? {
        guard let table = property.collectionTable else { return nil }
        return context.attempt(nil) { try MapTable(table: table, owner: owner).payload(context.lattice.readTransaction(), for: mapKey) }
    }

    /// The keys of a Map property of the object `owner`, in key order.
    private static func mapKeys(of property: PropertyInfo, owner: Int64, _ context: RowContext) -> [String] {
        guard let table = property.collectionTable else { return [] }
        return context.attempt([]) { try MapTable(table: table, owner: owner).entries(context.lattice.readTransaction()).map(\.key) }
    }

    /// An element payload as a one-column record, so compiled tests of column 0 read it.
    static func withElementRecord<R>(_ payload: [UInt8], _ body: (RecordView) -> R) -> R? {
        var record: [UInt8] = []
        Record.assemble(payloads: payload, ends: [payload.count], into: &record)
        return record.withUnsafeBytes { bytes in RecordView(bytes).map(body) }
    }

    /// The value of a path through to-one links only (sort and distinct keys); nil when a link is nil.
    /// Whether the path reaches the object holding its value: no nil link on the way cuts it.
    func reachesEnd(_ view: RecordView, _ context: RowContext) -> Bool {
        var reached = false
        forEachLeaf(view, context) { leaf, _ in
            if case .record = leaf { reached = true }
            return false
        }
        return reached
    }

    func value(_ view: RecordView, _ context: RowContext) -> ScalarValue {
        guard case let .scalar(column) = end else { return .null }
        // A property of the row itself: no hop to follow (sorting reads it for every row).
        if hops.isEmpty { return ScalarValue.decode(view.payload(column.column), column) }
        var value = ScalarValue.null
        forEachLeaf(view, context) { leaf, _ in
            if case let .record(v, _) = leaf { value = ScalarValue.decode(v.payload(column.column), column) }
            return false
        }
        return value
    }
}

extension RowContext {
    /// The same context for the object `key`.
    func with(key: Int64) -> RowContext { RowContext(txn: txn, lattice: lattice, key: key, failure: failure) }

    /// Runs `body` with the record of `key` in `info`; nil when there is none.
    func record<R>(_ info: ClassInfo, _ key: Int64, _ body: (RecordView) -> R) -> R? {
        attempt(nil) {
            try KeyCodec.withObjectKey(key) { k in try txn.get(info.objectsTable, k) { $0.flatMap(RecordView.init).map(body) } }
        }
    }

    /// Runs a read that may fail; the first failure is kept for the executor to throw, and `fallback` returned.
    func attempt<R>(_ fallback: R, _ body: () throws -> R) -> R {
        do {
            return try body()
        } catch {
            if failure.error == nil { failure.error = error }
            return fallback
        }
    }
}

/// The first error a compiled test met while reading relationships (tests cannot throw).
final class RowFailure {
    var error: Error?

    /// Throws the recorded error, if any.
    func check() throws {
        if let error { throw error }
    }
}
