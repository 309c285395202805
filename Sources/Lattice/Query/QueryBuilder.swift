import Foundation

/// The `$0` of a type-safe query (``Results/where(_:)``), or an object reached from it through to-one
/// links (`$0.owner`): each single-value persisted property is a member of type ``QueryProperty``, each
/// to-one link a ``QueryObject`` of the linked class, each List, MutableSet or LinkingObjects a
/// ``QueryCollection``, each Map a ``QueryMap``.
///
/// ```swift
/// dogs.where { $0.age < 2 && $0.name.starts(with: "R", options: .caseInsensitive) }
/// dogs.where { $0.owner.name == "Ann" || $0.owner == nil }
/// ```
@dynamicMemberLookup
public struct QueryObject<Root: Object> {
    let resolver: KeyPathResolver<Root>
    /// The links followed from the queried class to reach this object (empty for `$0`).
    var prefix: [String] = []

    /// The query operand for a persisted property.
    public subscript<V: _Persistable>(dynamicMember keyPath: KeyPath<Root, V>) -> QueryProperty<V> {
        QueryProperty(path: QueryKeyPath(variable: nil, segments: prefix + [resolver.name(of: keyPath)], position: 1))
    }
}

/// A property inside a type-safe query; compare it with values or other properties to get a
/// ``QueryPredicate``.
public struct QueryProperty<Value: _Persistable> {
    let path: QueryKeyPath
    /// For a property of a collection's elements (`$0.dogs.age`): how many segments lead to the
    /// collection, where `.avg`, `.min`, `.max` and `.sum` put their operator (`dogs.@avg.age`).
    var collectionEnd: Int?

    init(path: QueryKeyPath, collectionEnd: Int? = nil) {
        self.path = path
        self.collectionEnd = collectionEnd
    }

    func compare(_ op: QueryOperator, _ rhs: QueryExpression, _ options: QueryStringOptions = []) -> QueryPredicate {
        QueryPredicate(node: .comparison(QueryComparison(quantifier: nil, lhs: .keyPath(path), op: op, options: options,
                                                         rhs: rhs, position: 1)),
                       collections: collectionEnd.map { [Array(path.segments.prefix($0))] } ?? [])
    }

    /// Every persistable value converts (an unconvertible one, which cannot occur, would compare as nil).
    static func value(_ v: Value) -> QueryExpression {
        (try? QueryParser.expression(fromArgument: v._latticeAnyValue)) ?? .value(.null)
    }

    /// `property == value` (nil equals nil).
    public static func == (lhs: QueryProperty, rhs: Value) -> QueryPredicate { lhs.compare(.equal, value(rhs)) }
    /// `property != value`.
    public static func != (lhs: QueryProperty, rhs: Value) -> QueryPredicate { lhs.compare(.notEqual, value(rhs)) }
    /// `property IN {values}`.
    public func `in`<S: Sequence>(_ values: S) -> QueryPredicate where S.Element == Value {
        compare(.in, .list(values.map { QueryProperty.value($0) }))
    }
}

extension QueryProperty where Value: _QueryEquatable {
    /// `property == other`: another property of the same type or its Optional.
    public static func == <W: _QueryEquatable>(lhs: QueryProperty, rhs: QueryProperty<W>) -> QueryPredicate
    where W._QueryBase == Value._QueryBase {
        lhs.compare(.equal, .keyPath(rhs.path))
    }
    /// `property != other`.
    public static func != <W: _QueryEquatable>(lhs: QueryProperty, rhs: QueryProperty<W>) -> QueryPredicate
    where W._QueryBase == Value._QueryBase {
        lhs.compare(.notEqual, .keyPath(rhs.path))
    }
}

extension QueryProperty where Value: _QueryComparable {
    /// `property < value`.
    public static func < (lhs: QueryProperty, rhs: Value) -> QueryPredicate { lhs.compare(.less, value(rhs)) }
    /// `property <= value`.
    public static func <= (lhs: QueryProperty, rhs: Value) -> QueryPredicate { lhs.compare(.lessOrEqual, value(rhs)) }
    /// `property > value`.
    public static func > (lhs: QueryProperty, rhs: Value) -> QueryPredicate { lhs.compare(.greater, value(rhs)) }
    /// `property >= value`.
    public static func >= (lhs: QueryProperty, rhs: Value) -> QueryPredicate { lhs.compare(.greaterOrEqual, value(rhs)) }
    /// `property < other`.
    public static func < <W: _QueryComparable>(lhs: QueryProperty, rhs: QueryProperty<W>) -> QueryPredicate where W._QueryBase == Value._QueryBase {
        lhs.compare(.less, .keyPath(rhs.path))
    }
    /// `property <= other`.
    public static func <= <W: _QueryComparable>(lhs: QueryProperty, rhs: QueryProperty<W>) -> QueryPredicate
    where W._QueryBase == Value._QueryBase {
        lhs.compare(.lessOrEqual, .keyPath(rhs.path))
    }
    /// `property > other`.
    public static func > <W: _QueryComparable>(lhs: QueryProperty, rhs: QueryProperty<W>) -> QueryPredicate where W._QueryBase == Value._QueryBase {
        lhs.compare(.greater, .keyPath(rhs.path))
    }
    /// `property >= other`.
    public static func >= <W: _QueryComparable>(lhs: QueryProperty, rhs: QueryProperty<W>) -> QueryPredicate
    where W._QueryBase == Value._QueryBase {
        lhs.compare(.greaterOrEqual, .keyPath(rhs.path))
    }

    /// `property BETWEEN {low, high}` (inclusive).
    public func between(_ low: Value, _ high: Value) -> QueryPredicate {
        compare(.between, .list([QueryProperty.value(low), QueryProperty.value(high)]))
    }
}

extension QueryProperty where Value: _QueryString {
    /// `property BEGINSWITH prefix`.
    public func starts(with prefix: String, options: QueryStringComparison = []) -> QueryPredicate {
        compare(.beginsWith, .value(.string(prefix)), options.query)
    }
    /// `property ENDSWITH suffix`.
    public func ends(with suffix: String, options: QueryStringComparison = []) -> QueryPredicate {
        compare(.endsWith, .value(.string(suffix)), options.query)
    }
    /// `property CONTAINS text`.
    public func contains(_ text: String, options: QueryStringComparison = []) -> QueryPredicate {
        compare(.contains, .value(.string(text)), options.query)
    }
    /// `property LIKE pattern` (`?` one character, `*` any run).
    public func like(_ pattern: String, options: QueryStringComparison = []) -> QueryPredicate {
        compare(.like, .value(.string(pattern)), options.query)
    }
    /// `property ==[options] text`.
    public func equals(_ text: String, options: QueryStringComparison = []) -> QueryPredicate {
        compare(.equal, .value(.string(text)), options.query)
    }
}

/// `[c]` and `[d]` for the string methods of ``QueryProperty``.
public struct QueryStringComparison: OptionSet, Sendable {
    /// The raw bits.
    public let rawValue: UInt8
    /// Creates options from raw bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// `[c]`: Unicode case folding.
    public static let caseInsensitive = QueryStringComparison(rawValue: 1)
    /// `[d]`: diacritics removed.
    public static let diacriticInsensitive = QueryStringComparison(rawValue: 2)

    var query: QueryStringOptions { QueryStringOptions(rawValue: rawValue) }
}

/// A type-safe predicate; combine with `&&`, `||` and `!`.
public struct QueryPredicate {
    let node: QueryNode
    /// The collections whose elements' properties the predicate compares (`["dogs"]` for
    /// `$0.dogs.age < 2`), for ``count``.
    var collections: [[String]] = []

    /// Both predicates.
    public static func && (lhs: QueryPredicate, rhs: QueryPredicate) -> QueryPredicate {
        QueryPredicate(node: lhs.node.and(rhs.node), collections: merged(lhs, rhs))
    }

    /// Either predicate.
    public static func || (lhs: QueryPredicate, rhs: QueryPredicate) -> QueryPredicate {
        var parts: [QueryNode] = []
        for node in [lhs.node, rhs.node] {
            if case let .or(items) = node { parts += items } else { parts.append(node) }
        }
        return QueryPredicate(node: .or(parts), collections: merged(lhs, rhs))
    }

    /// The negation.
    public static prefix func ! (operand: QueryPredicate) -> QueryPredicate {
        QueryPredicate(node: .not(operand.node), collections: operand.collections)
    }

    /// `TRUEPREDICATE` / `FALSEPREDICATE`.
    public init(_ value: Bool) { node = .constant(value) }

    init(node: QueryNode, collections: [[String]] = []) {
        self.node = node
        self.collections = collections
    }

    private static func merged(_ a: QueryPredicate, _ b: QueryPredicate) -> [[String]] {
        a.collections + b.collections.filter { !a.collections.contains($0) }
    }
}

/// Types whose properties can be compared with each other in a type-safe query: `_QueryBase` is the
/// type without Optional, and only properties with the same base compare (so a mismatch does not compile).
public protocol _QueryEquatable {
    /// The non-optional type.
    associatedtype _QueryBase
}

/// Types whose properties can be ordered in a type-safe query (`<`, `BETWEEN`).
public protocol _QueryComparable: _QueryEquatable {}

extension Bool: _QueryEquatable {
    /// Itself.
    public typealias _QueryBase = Bool
}
extension Int: _QueryComparable {
    /// Itself.
    public typealias _QueryBase = Int
}
extension Int8: _QueryComparable {
    /// Itself.
    public typealias _QueryBase = Int8
}
extension Int16: _QueryComparable {
    /// Itself.
    public typealias _QueryBase = Int16
}
extension Int32: _QueryComparable {
    /// Itself.
    public typealias _QueryBase = Int32
}
extension Int64: _QueryComparable {
    /// Itself.
    public typealias _QueryBase = Int64
}
extension Float: _QueryComparable {
    /// Itself.
    public typealias _QueryBase = Float
}
extension Double: _QueryComparable {
    /// Itself.
    public typealias _QueryBase = Double
}
extension String: _QueryComparable {
    /// Itself.
    public typealias _QueryBase = String
}
extension Data: _QueryComparable {
    /// Itself.
    public typealias _QueryBase = Data
}
extension Date: _QueryComparable {
    /// Itself.
    public typealias _QueryBase = Date
}
extension UUID: _QueryComparable {
    /// Itself.
    public typealias _QueryBase = UUID
}
extension ObjectId: _QueryComparable {
    /// Itself.
    public typealias _QueryBase = ObjectId
}
extension Decimal: _QueryComparable {
    /// Itself.
    public typealias _QueryBase = Decimal
}
extension Optional: _QueryEquatable where Wrapped: _QueryEquatable {
    /// The wrapped type's.
    public typealias _QueryBase = Wrapped._QueryBase
}
extension Optional: _QueryComparable where Wrapped: _QueryComparable {}

/// String types, for the string methods of a type-safe query.
public protocol _QueryString {}
extension String: _QueryString {}
extension Optional: _QueryString where Wrapped == String {}

/// Finds the persisted property a Swift key path reads, without any name metadata: it reads the key
/// path from objects whose (in-memory, never stored) records give the candidate columns different
/// values, one bit of the column number per read.
struct KeyPathResolver<Root: Object> {
    let lattice: Lattice
    let info: ClassInfo

    func name<V: _Persistable>(of keyPath: KeyPath<Root, V>) -> String {
        remembered(keyPath) {
            if let name = scalarName(of: keyPath) { return name }
            if V.self is any _CustomPersistableBase.Type || V.self is any _OptionalCustom.Type {
                preconditionFailure("The key path \(keyPath) of a where { } query on '\(info.name)' reads \(V.self), which converts none of "
                    + "the values that tell its properties apart: use the string form (filter(\"name == %@\", value)).")
            }
            unresolved(keyPath)
        }
    }

    /// The name `resolve` finds for `keyPath`, found once per live handle: a key path of a model class
    /// reads the same property every time (the class's properties and their columns come from the class
    /// itself), and probing costs about 30,000 instructions a key path, more than the rest of a small query.
    func remembered(_ keyPath: AnyKeyPath, _ resolve: () throws -> String) rethrows -> String {
        guard lattice.frozenLock == nil else { return try resolve() }
        if let name = lattice.keyPathNames[keyPath] { return name }
        let name = try resolve()
        // Bounded, for programs that build key paths at run time.
        if lattice.keyPathNames.count >= 1_024 { lattice.keyPathNames.removeAll(keepingCapacity: true) }
        lattice.keyPathNames[keyPath] = name
        return name
    }

    /// The single-value property `keyPath` reads, or nil when it reads none.
    func scalarName<V: _Persistable>(of keyPath: KeyPath<Root, V>) -> String? {
        let candidates = info.columns.filter { ObjectIdentifier($0.valueType) == ObjectIdentifier(V.self) && ScalarKind($0) != nil }
        guard !candidates.isEmpty else { return nil }  // before any decoding: a link's type has no decoder of its own
        var base: [UInt8] = []
        V._latticeDefault._latticeEncode(into: &base)
        let marked = KeyPathResolver.markPayloads(V.self).first { p in
            var out: [UInt8] = []
            p.withUnsafeBytes { V._latticeDecode($0)._latticeEncode(into: &out) }
            return out != base
        }
        guard let marked else {
            // A custom type may convert none of the marks to a value of its own: the one column of
            // the type is then the one read.
            let custom = V.self is any _CustomPersistableBase.Type || V.self is any _OptionalCustom.Type
            return custom && candidates.count == 1 ? candidates[0].name : nil
        }
        var markedValue: [UInt8] = []
        marked.withUnsafeBytes { V._latticeDecode($0)._latticeEncode(into: &markedValue) }
        /// Reads the key path with the marked value in the candidates `chosen` selects.
        func read(_ chosen: (Int) -> Bool) -> Bool {
            let probe = self.probe { p in candidates.firstIndex { $0 === p }.flatMap { chosen($0) ? marked : nil } }
            var out: [UInt8] = []
            probe[keyPath: keyPath]._latticeEncode(into: &out)
            return out == markedValue
        }
        var index = 0
        var bit = 0
        while (1 << bit) < candidates.count {
            if read({ $0 & (1 << bit) != 0 }) { index |= 1 << bit }
            bit += 1
        }
        guard index < candidates.count, read({ $0 == index }), !read({ _ in false }) else { return nil }
        return candidates[index].name
    }

    /// An in-memory (never stored) object of the class whose record holds `payload(p)` for each column,
    /// or the column's default where that is nil.
    func probe(_ payload: (PropertyInfo) -> [UInt8]?) -> Root {
        var bytes: [UInt8] = []
        var ends: [Int] = []
        for p in info.columns {
            if let value = payload(p) { bytes += value } else { p.valueType._latticeDefaultEncoded(into: &bytes) }
            ends.append(bytes.count)
        }
        var record: [UInt8] = []
        Record.assemble(payloads: bytes, ends: ends, into: &record)
        return lattice.materialize(Root.self, info, key: 0, record: RecordBuffer.make(record))
    }

    /// Payloads that decode, for every value type, to something other than its default (the first that
    /// does marks a column); `[0]` to the default itself (for a class that declares another). An enum's
    /// (or an optional enum's) cases follow: no other payload need decode to one of them.
    static func markPayloads<V: _Persistable>(_ type: V.Type) -> [[UInt8]] {
        let payloads: [[UInt8]] = [[1], [0x31], [1, 1, 1, 1], [UInt8](repeating: 1, count: 8), [UInt8](repeating: 1, count: 12),
                                   [UInt8](repeating: 1, count: 16), [2], [0x32], [0]]
        if let e = V.self as? any PersistableEnum.Type { return payloads + e._latticeCasePayloads }
        if let e = V.self as? any _OptionalEnum.Type { return payloads + e._latticeCasePayloads }
        if V.self is any _CustomPersistableBase.Type || V.self is any _OptionalCustom.Type { return payloads + customTypeMarks }
        return payloads
    }

    func unresolved(_ keyPath: AnyKeyPath) -> Never {
        preconditionFailure("The key path \(keyPath) of a where { } query on '\(info.name)' does not read a @Persisted property.")
    }
}

/// Further mark payloads for custom types, which may reject every other mark: texts of common shapes (a
/// handle, an address, a URL), each also as an optional's payload (with its marker byte).
private let customTypeMarks: [[UInt8]] = ["a", "@a", "#1", "a@b.c", "a:b", "https://a.b/c", "A1"].flatMap { text in
    [Array(text.utf8), [1] + Array(text.utf8)]
}
