import Foundation

extension QueryPredicate {
    /// The number of elements of a collection that match this predicate, as in Realm Swift:
    /// `($0.dogs.age < 2 && $0.dogs.name.starts(with: "R")).count > 0` is
    /// `SUBQUERY(dogs, $col, $col.age < 2 AND $col.name BEGINSWITH 'R').@count > 0`.
    ///
    /// Every comparison in the predicate must be on properties of the elements of one collection; a
    /// predicate on none or on several, or comparing with a property of the queried object, is a
    /// programming error and stops with a message.
    public var count: QuerySubqueryCount {
        guard collections.count == 1, let collection = collections.first else {
            preconditionFailure("(...).count in a where { } query needs comparisons on properties of one collection's elements, "
                + "as in ($0.dogs.age < 2).count > 0; this one has \(collections.isEmpty ? "none" : "several")")
        }
        let variable = "col"
        return QuerySubqueryCount(expression: .subquery(collection: QueryKeyPath(variable: nil, segments: collection, position: 1),
                                                         variable: variable,
                                                         predicate: QueryPredicate.rewrite(node, collection, variable), position: 1))
    }

    /// `node` with the key paths through `collection` starting from `variable` instead (`dogs.age`: `$col.age`).
    private static func rewrite(_ node: QueryNode, _ collection: [String], _ variable: String) -> QueryNode {
        func side(_ e: QueryExpression) -> QueryExpression {
            guard case var .keyPath(p) = e, p.variable == nil, p.segments.count > collection.count,
                  Array(p.segments.prefix(collection.count)) == collection else { return e }
            p.variable = variable
            p.segments.removeFirst(collection.count)
            if let key = p.mapKey { p.mapKey = QueryMapKey(after: key.after - collection.count, key: key.key) }
            return .keyPath(p)
        }
        switch node {
        case .constant: return node
        case let .not(inner): return .not(rewrite(inner, collection, variable))
        case let .and(parts): return .and(parts.map { rewrite($0, collection, variable) })
        case let .or(parts): return .or(parts.map { rewrite($0, collection, variable) })
        case var .comparison(c):
            c.lhs = side(c.lhs)
            c.rhs = side(c.rhs)
            return .comparison(c)
        }
    }
}

/// `SUBQUERY(...).@count` in a type-safe query (``QueryPredicate/count``); compare it with a number.
public struct QuerySubqueryCount {
    let expression: QueryExpression

    private func compare(_ op: QueryOperator, _ n: Int) -> QueryPredicate {
        QueryPredicate(node: .comparison(QueryComparison(quantifier: nil, lhs: expression, op: op, options: [],
                                                         rhs: .value(.int(Int64(n))), position: 1)))
    }

    /// `SUBQUERY(...).@count == n`.
    public static func == (lhs: QuerySubqueryCount, rhs: Int) -> QueryPredicate { lhs.compare(.equal, rhs) }
    /// `SUBQUERY(...).@count != n`.
    public static func != (lhs: QuerySubqueryCount, rhs: Int) -> QueryPredicate { lhs.compare(.notEqual, rhs) }
    /// `SUBQUERY(...).@count < n`.
    public static func < (lhs: QuerySubqueryCount, rhs: Int) -> QueryPredicate { lhs.compare(.less, rhs) }
    /// `SUBQUERY(...).@count <= n`.
    public static func <= (lhs: QuerySubqueryCount, rhs: Int) -> QueryPredicate { lhs.compare(.lessOrEqual, rhs) }
    /// `SUBQUERY(...).@count > n`.
    public static func > (lhs: QuerySubqueryCount, rhs: Int) -> QueryPredicate { lhs.compare(.greater, rhs) }
    /// `SUBQUERY(...).@count >= n`.
    public static func >= (lhs: QuerySubqueryCount, rhs: Int) -> QueryPredicate { lhs.compare(.greaterOrEqual, rhs) }
}
