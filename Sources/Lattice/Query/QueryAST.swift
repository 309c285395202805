import Foundation

/// The syntax tree of a predicate, shared by the string parser (`filter("...")`) and the type-safe
/// builder (`where { }`), so that both mean exactly the same thing.
///
/// Key paths are lists of segments resolved against a class only when the query is bound, so link
/// hops, to-many paths and collection operators need no change here.
indirect enum QueryNode: Equatable {
    /// `TRUEPREDICATE` / `FALSEPREDICATE`.
    case constant(Bool)
    case not(QueryNode)
    case and([QueryNode])
    case or([QueryNode])
    case comparison(QueryComparison)
}

/// `ANY`, `ALL`, `NONE`, `SOME` in front of a comparison (to-many key paths).
enum QueryQuantifier: String, Equatable {
    case any = "ANY", all = "ALL", noneMatch = "NONE"
}

/// Comparison and string operators.
enum QueryOperator: String, Equatable, CaseIterable {
    case equal = "==", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
    case beginsWith = "BEGINSWITH", endsWith = "ENDSWITH", contains = "CONTAINS", like = "LIKE"
    case `in` = "IN", between = "BETWEEN"

    var isStringOperator: Bool {
        switch self {
        case .beginsWith, .endsWith, .contains, .like: return true
        default: return false
        }
    }

    var isOrdering: Bool {
        switch self {
        case .less, .lessOrEqual, .greater, .greaterOrEqual, .between: return true
        default: return false
        }
    }

    /// The operator with its operands swapped (`5 < age` is `age > 5`); nil when not symmetric.
    var flipped: QueryOperator? {
        switch self {
        case .equal, .notEqual: return self
        case .less: return .greater
        case .lessOrEqual: return .greaterOrEqual
        case .greater: return .less
        case .greaterOrEqual: return .lessOrEqual
        default: return nil
        }
    }
}

/// `[c]`, `[d]`, `[cd]`.
struct QueryStringOptions: OptionSet, Equatable, Hashable {
    let rawValue: UInt8
    static let caseInsensitive = QueryStringOptions(rawValue: 1)
    static let diacriticInsensitive = QueryStringOptions(rawValue: 2)

    var suffix: String {
        if isEmpty { return "" }
        return "[" + (contains(.caseInsensitive) ? "c" : "") + (contains(.diacriticInsensitive) ? "d" : "") + "]"
    }
}

/// `lhs op[options] rhs`, optionally quantified.
struct QueryComparison: Equatable {
    var quantifier: QueryQuantifier?
    var lhs: QueryExpression
    var op: QueryOperator
    var options: QueryStringOptions
    var rhs: QueryExpression
    /// Column (1-based) of the comparison's start, for error messages.
    var position: Int
}

/// `@count`, `@min`, `@max`, `@sum`, `@avg`.
enum QueryCollectionOperator: String, Equatable {
    case count = "@count", min = "@min", max = "@max", sum = "@sum", avg = "@avg"
}

/// A key path: `owner.name`, `dogs.@avg.age`, `$d.age` (inside a SUBQUERY), `ratings['a']`,
/// `ratings.@allKeys`.
struct QueryKeyPath: Equatable, CustomStringConvertible {
    /// The SUBQUERY variable the path starts from (`$d`), or nil for the queried class.
    var variable: String?
    /// Property names before any collection operator; `@allKeys` and `@allValues` after a Map are
    /// segments too (no property name starts with `@`).
    var segments: [String]
    /// `map['key']`: the value at one key of the Map named by `segments[mapKey.after - 1]`.
    var mapKey: QueryMapKey? = nil
    /// A collection operator after `segments`, with the property names after it (`@avg.age`).
    var collectionOperator: QueryCollectionOperator?
    var trailing: [String] = []
    var position: Int

    var description: String {
        var parts: [String] = variable.map { ["$" + $0] } ?? []
        parts += segments
        if let mapKey, mapKey.after > 0, mapKey.after <= segments.count {
            let at = parts.count - segments.count + mapKey.after - 1
            parts[at] += "[" + QueryValue.string(mapKey.key).description + "]"
        }
        if let op = collectionOperator { parts.append(op.rawValue) }
        parts += trailing
        return parts.joined(separator: ".")
    }
}

/// `map['key']` in a key path: the key, and how many segments come before it (the Map's included).
struct QueryMapKey: Equatable {
    var after: Int
    var key: String
}

/// `@allKeys` and `@allValues`, written as key path segments after a Map.
enum QueryMapSegment {
    static let allKeys = "@allKeys", allValues = "@allValues"
}

/// One side of a comparison.
indirect enum QueryExpression: Equatable, CustomStringConvertible {
    case keyPath(QueryKeyPath)
    case value(QueryValue)
    /// `{a, b, c}` or an array argument.
    case list([QueryExpression])
    /// `SUBQUERY(collection, $var, predicate).@count`.
    case subquery(collection: QueryKeyPath, variable: String, predicate: QueryNode, position: Int)

    var description: String {
        switch self {
        case let .keyPath(k): return k.description
        case let .value(v): return v.description
        case let .list(items): return describeList(items)
        case let .subquery(c, v, _, _): return "SUBQUERY(\(c), $\(v), ...).@count"
        }
    }
}

/// A literal or argument value.
enum QueryValue: Equatable, CustomStringConvertible {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case data(Data)
    case date(Date)
    case uuid(UUID)
    case objectId(ObjectId)
    case decimal(Decimal)
    /// A managed or unmanaged object (for `owner == %@`, once links exist).
    case object(ObjectRef)
    /// A ``QueryTextArgument``: typed by the property it is compared with when bound.
    case text(String)

    /// Wraps an object so the enum stays `Equatable` (identity).
    struct ObjectRef: Equatable {
        let object: Object
        static func == (a: ObjectRef, b: ObjectRef) -> Bool { a.object == b.object }
    }

    var typeName: String {
        switch self {
        case .null: return "nil"
        case .bool: return "Bool"
        case .int: return "Int"
        case .double: return "Double"
        case .string: return "String"
        case .data: return "Data"
        case .date: return "Date"
        case .uuid: return "UUID"
        case .objectId: return "ObjectId"
        case .decimal: return "Decimal"
        case let .object(o): return "\(type(of: o.object))"
        case .text: return "text"
        }
    }

    var description: String {
        switch self {
        case .null: return "nil"
        case let .bool(b): return b ? "true" : "false"
        case let .int(i): return "\(i)"
        case let .double(d): return "\(d)"
        case let .string(s): return "'" + s.replacingOccurrences(of: "'", with: "\\'") + "'"
        case let .data(d): return "<\(d.count) bytes>"
        case let .date(d): return QueryValue.describe(d)
        case let .uuid(u): return "uuid(\(u.uuidString))"
        case let .objectId(o): return "oid(\(o))"
        case let .decimal(d): return "\(d)"
        case let .object(o): return "\(type(of: o.object)) object"
        case let .text(t): return "'" + t.replacingOccurrences(of: "'", with: "\\'") + "'"
        }
    }
}

/// `{a, b, c}`; a long list shows its first 20 items and its size.
func describeList<C: Collection>(_ items: C) -> String where C.Element: CustomStringConvertible {
    "{" + items.prefix(20).map(\.description).joined(separator: ", ") + (items.count > 20 ? ", ... (\(items.count) values)" : "") + "}"
}

extension QueryValue {
    /// A date as text that never traps (see `Date.safeDescription`).
    static func describe(_ date: Date) -> String { date.safeDescription }
}

extension QueryNode {
    /// The deepest nesting of NOT, AND and OR (a comparison or constant is 1), counted without recursion
    /// so that a tree of any depth can be checked.
    var depth: Int {
        var deepest = 0
        var pending: [(node: QueryNode, depth: Int)] = [(self, 1)]
        while let (node, depth) = pending.popLast() {
            deepest = max(deepest, depth)
            switch node {
            case let .not(inner): pending.append((inner, depth + 1))
            case let .and(parts), let .or(parts): pending += parts.map { ($0, depth + 1) }
            case let .comparison(c):
                for case let .subquery(_, _, predicate, _) in [c.lhs, c.rhs] { pending.append((predicate, depth + 1)) }
            case .constant: break
            }
        }
        return deepest
    }

    /// `self AND other`, flattening nested ANDs.
    func and(_ other: QueryNode) -> QueryNode {
        var parts: [QueryNode] = []
        for node in [self, other] {
            if case let .and(items) = node { parts += items } else { parts.append(node) }
        }
        return .and(parts)
    }
}
