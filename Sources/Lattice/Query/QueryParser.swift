import Foundation

/// Parses the predicate language into a ``QueryNode``, substituting arguments.
///
/// ```
/// predicate   := or
/// or          := and (("OR" | "||") and)*
/// and         := not (("AND" | "&&") not)*
/// not         := ("NOT" | "!") not | "(" predicate ")" | "TRUEPREDICATE" | "FALSEPREDICATE" | comparison
/// comparison  := [ "ANY" | "SOME" | "ALL" | "NONE" ] expression operator [ "[" ("c"|"d"|"cd") "]" ] expression
/// operator    := "==" | "=" | "!=" | "<>" | "<" | "<=" | ">" | ">=" | "BEGINSWITH" | "ENDSWITH"
///              | "CONTAINS" | "LIKE" | "IN" | "BETWEEN"
/// expression  := keypath | "%K" | literal | "%@" | "%d" | "%i" | "%ld" | "%f" | "$0" | "{" [expression ("," expression)*] "}"
///              | "SUBQUERY" "(" keypath "," "$" name "," predicate ")" "." "@count"
/// keypath     := ["$" name "."] name ("." (name | "@count" | "@min" | "@max" | "@sum" | "@avg"))*
/// literal     := number | 'string' | "string" | nil | NULL | true | false | YES | NO | uuid(...) | oid(...)
/// ```
/// Keywords are case-insensitive. Errors throw ``LatticeError/invalidQuery(message:)`` naming the column.
/// Parentheses, NOT, lists and SUBQUERY nest at most ``maxDepth`` deep, so that parsing, binding and
/// evaluating (all recursive over the tree) stay within any thread's stack.
struct QueryParser {
    /// The deepest nesting of parentheses, `NOT`/`!`, `{ }` lists and `SUBQUERY` a predicate may have.
    static let maxDepth = 200

    /// A parse failure at a column (converted to `LatticeError` with the whole predicate by `parse`).
    struct Failure: Error {
        let column: Int
        let message: String
    }

    static func error(_ column: Int, _ message: String) -> Failure { Failure(column: column, message: message) }

    private var tokens: [QueryToken]
    private var at = 0
    private let arguments: [Any]
    private var nextArgument = 0
    /// SUBQUERY variables in scope.
    private var variables: [String] = []
    /// The current nesting (see ``maxDepth``).
    private var depth = 0

    /// Parses `text` with `arguments` for `%@`-style and `$0`-style placeholders.
    static func parse(_ text: String, _ arguments: [Any]) throws -> QueryNode {
        do {
            var parser = QueryParser(tokens: try QueryLexer.tokenize(text), arguments: arguments)
            let node = try parser.predicate()
            guard parser.current.kind == .end else {
                throw error(parser.current.column, "expected AND, OR or the end of the predicate, found \(parser.describe(parser.current))")
            }
            return node
        } catch let failure as Failure {
            throw LatticeError.invalidQuery(message: "\(failure.message) at column \(failure.column) of \(quote(text, around: failure.column)).")
        }
    }

    /// The predicate in quotes; a long one only around `column` (a message stays readable whatever the input).
    private static func quote(_ text: String, around column: Int) -> String {
        let scalars = Array(text.unicodeScalars)
        guard scalars.count > 200 else { return "\"\(text)\"" }
        let from = max(0, min(column - 1, scalars.count) - 60), to = min(scalars.count, from + 120)
        var excerpt = String.UnicodeScalarView()
        excerpt.append(contentsOf: scalars[from..<to])
        return "\"\(from > 0 ? "..." : "")\(String(excerpt))\(to < scalars.count ? "..." : "")\" (\(scalars.count) characters)"
    }

    /// Enters one level of nesting at `column`; callers leave it with `depth -= 1`.
    private mutating func enter(_ column: Int) throws {
        depth += 1
        if depth > QueryParser.maxDepth {
            throw QueryParser.error(column, "the predicate nests parentheses, NOT, lists and SUBQUERY more than "
                + "\(QueryParser.maxDepth) levels deep")
        }
    }

    private init(tokens: [QueryToken], arguments: [Any]) {
        self.tokens = tokens
        self.arguments = arguments
    }

    // MARK: Tokens

    private var current: QueryToken { tokens[at] }

    private mutating func advance() -> QueryToken {
        let token = tokens[at]
        if at < tokens.count - 1 { at += 1 }
        return token
    }

    private func isKeyword(_ token: QueryToken, _ keyword: QueryKeyword) -> Bool { token.keyword == keyword }

    private func isSymbol(_ token: QueryToken, _ symbol: String) -> Bool { token.kind == .symbol(symbol) }

    private mutating func expectSymbol(_ symbol: String, _ what: String) throws {
        guard isSymbol(current, symbol) else { throw QueryParser.error(current.column, "expected \(what), found \(describe(current))") }
        _ = advance()
    }

    func describe(_ token: QueryToken) -> String {
        switch token.kind {
        case let .identifier(s): return "'\(s)'"
        case let .string(s): return "the string '\(s)'"
        case let .integer(i): return "the number \(i)"
        case let .double(d): return "the number \(d)"
        case let .symbol(s): return "'\(s)'"
        case let .format(f): return "'%\(f)'"
        case let .positional(n): return "'$\(n)'"
        case let .variable(v): return "'$\(v)'"
        case let .collectionOperator(o): return "'\(o)'"
        case let .uuidLiteral(u): return "uuid(\(u))"
        case let .objectIdLiteral(o): return "oid(\(o))"
        case .end: return "the end of the predicate"
        }
    }

    // MARK: Predicates

    private mutating func predicate() throws -> QueryNode {
        // Most predicates have one part: no array for it.
        let first = try conjunction()
        guard isKeyword(current, .or) || isSymbol(current, "||") else { return first }
        var parts = [first]
        while isKeyword(current, .or) || isSymbol(current, "||") {
            _ = advance()
            parts.append(try conjunction())
        }
        return .or(parts)
    }

    private mutating func conjunction() throws -> QueryNode {
        let first = try negation()
        guard isKeyword(current, .and) || isSymbol(current, "&&") else { return first }
        var parts = [first]
        while isKeyword(current, .and) || isSymbol(current, "&&") {
            _ = advance()
            parts.append(try negation())
        }
        return .and(parts)
    }

    private mutating func negation() throws -> QueryNode {
        if isKeyword(current, .not) || isSymbol(current, "!") {
            try enter(advance().column)
            defer { depth -= 1 }
            return .not(try negation())
        }
        if isSymbol(current, "(") {
            try enter(advance().column)
            defer { depth -= 1 }
            let inner = try predicate()
            try expectSymbol(")", "')' to close the parenthesis")
            return inner
        }
        if isKeyword(current, .truePredicate) { _ = advance(); return .constant(true) }
        if isKeyword(current, .falsePredicate) { _ = advance(); return .constant(false) }
        return try comparison()
    }

    private mutating func comparison() throws -> QueryNode {
        let start = current.column
        var quantifier: QueryQuantifier?
        if isKeyword(current, .any) || isKeyword(current, .some) {
            quantifier = .any
        } else if isKeyword(current, .all) {
            quantifier = .all
        } else if isKeyword(current, .none) {
            quantifier = .noneMatch
        }
        if quantifier != nil { _ = advance() }
        let lhs = try expression()
        let opToken = current
        let op: QueryOperator
        if case let .symbol(s) = opToken.kind, let o = QueryOperator(rawValue: s), !o.isStringOperator {
            op = o
        } else if let o = opToken.keyword?.queryOperator {
            op = o
        } else if opToken.keyword == .matches {
            throw QueryParser.error(opToken.column, "MATCHES (regular expressions) is not supported; use LIKE with ? and *")
        } else {
            throw QueryParser.error(opToken.column, "expected an operator (==, !=, <, <=, >, >=, BEGINSWITH, ENDSWITH, "
                + "CONTAINS, LIKE, IN, BETWEEN) after \(lhs), found \(describe(opToken))")
        }
        _ = advance()
        var options: QueryStringOptions = []
        if isSymbol(current, "[") {
            _ = advance()
            guard case let .identifier(flags) = current.kind, !flags.isEmpty,
                  flags.lowercased().allSatisfy({ $0 == "c" || $0 == "d" }) else {
                throw QueryParser.error(current.column, "expected the options c, d or cd inside '[ ]', found \(describe(current))")
            }
            if flags.lowercased().contains("c") { options.insert(.caseInsensitive) }
            if flags.lowercased().contains("d") { options.insert(.diacriticInsensitive) }
            _ = advance()
            try expectSymbol("]", "']' to close the options")
        }
        let rhs = try expression()
        if op == .between {
            guard case let .list(items) = rhs, items.count == 2 else {
                throw QueryParser.error(start, "BETWEEN expects two values, as in 'age BETWEEN {1, 5}'")
            }
        }
        return .comparison(QueryComparison(quantifier: quantifier, lhs: lhs, op: op, options: options, rhs: rhs, position: start))
    }

    // MARK: Expressions

    private mutating func expression() throws -> QueryExpression {
        let token = current
        switch token.kind {
        case .identifier:
            switch token.keyword {
            case .nil, .null: _ = advance(); return .value(.null)
            case .true, .yes: _ = advance(); return .value(.bool(true))
            case .false, .no: _ = advance(); return .value(.bool(false))
            case .subquery: return try subquery()
            case let keyword?:
                throw QueryParser.error(token.column, "expected a property name or a value, found the keyword \(keyword.rawValue)")
            case nil:
                return .keyPath(try keyPath(variable: nil))
            }
        case let .variable(name):
            guard variables.contains(name) else {
                throw QueryParser.error(token.column, "unknown variable '$\(name)' (variables are declared by SUBQUERY)")
            }
            _ = advance()
            guard isSymbol(current, ".") else { return .keyPath(QueryKeyPath(variable: name, segments: [], position: token.column)) }
            _ = advance()
            return .keyPath(try keyPath(variable: name, position: token.column))
        case let .string(s): _ = advance(); return .value(.string(s))
        case let .integer(i): _ = advance(); return .value(.int(i))
        case let .double(d): _ = advance(); return .value(.double(d))
        case let .uuidLiteral(text):
            _ = advance()
            guard let u = UUID(uuidString: text) else { throw QueryParser.error(token.column, "malformed UUID '\(text)'") }
            return .value(.uuid(u))
        case let .objectIdLiteral(text):
            _ = advance()
            guard let o = ObjectId(string: text) else { throw QueryParser.error(token.column, "malformed ObjectId '\(text)' (expected 24 hex digits)") }
            return .value(.objectId(o))
        case .symbol("{"):
            try enter(advance().column)
            defer { depth -= 1 }
            var items: [QueryExpression] = []
            if !isSymbol(current, "}") {
                items.append(try expression())
                while isSymbol(current, ",") {
                    _ = advance()
                    items.append(try expression())
                }
            }
            try expectSymbol("}", "',' or '}' in the list")
            return .list(items)
        case let .format(format):
            _ = advance()
            let index = nextArgument
            nextArgument += 1
            let value = try argument(index, format: format, column: token.column)
            // `%K.@count`, `%K.name`: a substituted key path may continue.
            if case var .keyPath(path) = value, isSymbol(current, ".") {
                _ = advance()
                let rest = try keyPath(variable: nil)
                if path.collectionOperator == nil {
                    if let key = rest.mapKey, path.mapKey == nil {
                        path.mapKey = QueryMapKey(after: path.segments.count + key.after, key: key.key)
                    }
                    path.segments += rest.segments
                    path.collectionOperator = rest.collectionOperator
                    path.trailing = rest.trailing
                } else if rest.collectionOperator == nil {
                    path.trailing += rest.segments
                } else {
                    throw QueryParser.error(token.column, "only one collection operator is allowed in a key path")
                }
                return .keyPath(path)
            }
            return value
        case let .positional(n):
            _ = advance()
            return try argument(n, format: "@", column: token.column)
        default:
            throw QueryParser.error(token.column, "expected a property name or a value, found \(describe(token))")
        }
    }

    /// `name(.name | .@op | [key])*`, starting at the current identifier.
    private mutating func keyPath(variable: String?, position: Int? = nil) throws -> QueryKeyPath {
        var path = QueryKeyPath(variable: variable, segments: [], position: position ?? current.column)
        while true {
            let token = advance()
            switch token.kind {
            case let .identifier(name):
                if path.collectionOperator == nil { path.segments.append(name) } else { path.trailing.append(name) }
            case let .collectionOperator(op) where op == QueryMapSegment.allKeys || op == QueryMapSegment.allValues:
                guard path.collectionOperator == nil, path.mapKey == nil else {
                    throw QueryParser.error(token.column, "\(op) must follow a Map property directly")
                }
                path.segments.append(op)
            case let .collectionOperator(op):
                guard path.collectionOperator == nil, let o = QueryCollectionOperator(rawValue: op) else {
                    throw QueryParser.error(token.column, "only one collection operator is allowed in a key path")
                }
                path.collectionOperator = o
            default:
                throw QueryParser.error(token.column, "expected a property name after '.', found \(describe(token))")
            }
            if isSymbol(current, "[") {
                try mapSubscript(&path)
            }
            guard isSymbol(current, ".") else { return path }
            _ = advance()
        }
    }

    /// `['key']`, `[%@]` or `[$0]` after a Map property: the value at one key (a String).
    private mutating func mapSubscript(_ path: inout QueryKeyPath) throws {
        let open = advance()
        guard path.mapKey == nil, path.collectionOperator == nil, let last = path.segments.last, !last.hasPrefix("@") else {
            throw QueryParser.error(open.column, "a key in '[ ]' must follow a Map property, once per key path")
        }
        let keyToken = current
        switch keyToken.kind {
        case .string, .format, .positional: break
        default: throw QueryParser.error(keyToken.column, "expected a String key inside '[ ]', found \(describe(keyToken))")
        }
        let key: String
        switch try expression() {
        case let .value(.string(text)), let .value(.text(text)): key = text
        default: throw QueryParser.error(keyToken.column, "the key inside '[ ]' must be a String")
        }
        try expectSymbol("]", "']' to close the key")
        if isSymbol(current, "[") {
            throw QueryParser.error(current.column, "a key in '[ ]' must follow a Map property, once per key path")
        }
        path.mapKey = QueryMapKey(after: path.segments.count, key: key)
    }

    private mutating func subquery() throws -> QueryExpression {
        let start = advance().column
        try enter(start)
        defer { depth -= 1 }
        try expectSymbol("(", "'(' after SUBQUERY")
        let collection: QueryKeyPath
        if case let .variable(outer) = current.kind, variables.contains(outer) {
            // A nested SUBQUERY over a collection of the enclosing variable: `SUBQUERY($d.toys, $t, ...)`.
            let column = advance().column
            try expectSymbol(".", "'.' and a key path after '$\(outer)'")
            collection = try keyPath(variable: outer, position: column)
        } else {
            guard case .identifier = current.kind else {
                throw QueryParser.error(current.column, "expected the collection key path as SUBQUERY's first argument, found \(describe(current))")
            }
            collection = try keyPath(variable: nil)
        }
        try expectSymbol(",", "',' after SUBQUERY's collection")
        guard case let .variable(name) = current.kind else {
            throw QueryParser.error(current.column, "expected a variable such as $x as SUBQUERY's second argument, found \(describe(current))")
        }
        _ = advance()
        try expectSymbol(",", "',' after SUBQUERY's variable")
        variables.append(name)
        let inner = try predicate()
        variables.removeLast()
        try expectSymbol(")", "')' to close SUBQUERY")
        try expectSymbol(".", "'.@count' after SUBQUERY(...)")
        guard current.kind == .collectionOperator("@count") else {
            throw QueryParser.error(current.column, "expected '@count' after SUBQUERY(...), found \(describe(current))")
        }
        _ = advance()
        return .subquery(collection: collection, variable: name, predicate: inner, position: start)
    }

    // MARK: Arguments

    private func argument(_ index: Int, format: String, column: Int) throws -> QueryExpression {
        guard index < arguments.count else {
            throw QueryParser.error(column, "the predicate uses argument \(index + 1) but only \(arguments.count) "
                + "argument\(arguments.count == 1 ? " was" : "s were") given")
        }
        let value: Any? = arguments[index]
        var which: String { "argument \(index + 1)" }
        // `%@`, the usual format, before the others' string comparisons.
        if format == "@" { return try objectArgument(value, which, column) }
        switch format {
        case "K":
            guard let text = value.flatMap({ $0 as? String }) else {
                throw QueryParser.error(column, "\(which) for %K must be a key path String, not \(QueryParser.typeName(value))")
            }
            return .keyPath(try QueryParser.keyPath(from: text, column: column))
        case "d", "i", "ld", "lld", "u", "lu", "llu":
            guard let v = value.map(unwrapAny), let i = Int64._latticeCast(v), !(v is Bool) else {
                throw QueryParser.error(column, "\(which) for %\(format) must be an integer, not \(QueryParser.typeName(value))")
            }
            return .value(.int(i))
        case "f", "lf":
            guard let v = value.map(unwrapAny), let d = Double._latticeCast(v), !(v is Bool) else {
                throw QueryParser.error(column, "\(which) for %\(format) must be a number, not \(QueryParser.typeName(value))")
            }
            return .value(.double(d))
        case "s":
            guard let s = value.flatMap({ unwrapAny($0) as? String }) else {
                throw QueryParser.error(column, "\(which) for %s must be a String, not \(QueryParser.typeName(value))")
            }
            return .value(.string(s))
        default:
            return try objectArgument(value, which, column)
        }
    }

    /// A `%@` argument (`which` names it in errors).
    private func objectArgument(_ value: Any?, _ which: @autoclosure () -> String, _ column: Int) throws -> QueryExpression {
        do {
            return try QueryParser.expression(fromArgument: value)
        } catch let message as ArgumentError {
            throw QueryParser.error(column, "\(which()): \(message.message)")
        }
    }

    struct ArgumentError: Error { let message: String }

    static func typeName(_ value: Any?) -> String {
        guard let value, !isNilValue(value) else { return "nil" }
        return "\(type(of: unwrapAny(value)))"
    }

    /// A `%@` argument as a value, or a list for arrays, sets, other sequences and Lattice collections
    /// (List, MutableSet, LinkingObjects, Results: their elements; Map: its values). The elements of a
    /// list are single values: a collection inside a collection is an error.
    static func expression(fromArgument argument: Any?) throws -> QueryExpression {
        if let argument, let single = exactScalar(argument) { return .value(single) }
        guard let argument, !isNilValue(argument) else { return .value(.null) }
        let value = unwrapAny(argument)
        // An array is told first: the casts of `scalar` to a class would bridge it to an NSArray, element by element.
        let elements: [Any?]
        if let array = value as? any _ArrayArgument {
            elements = array.queryElements
        } else if let single = try scalar(value) {
            return .value(single)
        } else if let map = value as? any _MapArgument {
            elements = map.queryValues
        } else if let sequence = value as? any Sequence {
            elements = QueryParser.elements(of: sequence)
        } else {
            throw ArgumentError(message: "a value of type \(type(of: value)) cannot be used in a predicate")
        }
        return .list(try elements.map { element in
            if let element, let single = exactScalar(element) { return .value(single) }
            guard let element, !isNilValue(element) else { return .value(.null) }
            let item = unwrapAny(element)
            guard let single = try scalar(item) else {
                throw ArgumentError(message: "the elements of a list argument must be single values, not \(type(of: item))")
            }
            return .value(single)
        })
    }

    /// A value of one of the usual argument types, told by its exact type (neither an Optional nor
    /// NSNull, then): most arguments are, and the casts of `scalar` cost a few hundred instructions each
    /// when they fail.
    private static func exactScalar(_ value: Any) -> QueryValue? {
        let type = ObjectIdentifier(Swift.type(of: value))
        if type == ObjectIdentifier(Int.self), let v = value as? Int { return .int(Int64(v)) }
        if type == ObjectIdentifier(String.self), let v = value as? String { return .string(v) }
        if type == ObjectIdentifier(Int64.self), let v = value as? Int64 { return .int(v) }
        if type == ObjectIdentifier(UUID.self), let v = value as? UUID { return .uuid(v) }
        if type == ObjectIdentifier(Double.self), let v = value as? Double { return .double(v) }
        if type == ObjectIdentifier(Bool.self), let v = value as? Bool { return .bool(v) }
        if type == ObjectIdentifier(Date.self), let v = value as? Date { return .date(v) }
        if type == ObjectIdentifier(ObjectId.self), let v = value as? ObjectId { return .objectId(v) }
        return nil
    }

    /// A single value (not nil): nil for collections and sequences.
    private static func scalar(_ value: Any) throws -> QueryValue? {
        if let single = exactScalar(value) { return single }
        switch value {
        case let v as Object: return .object(.init(object: v))
        case let v as Bool: return .bool(v)
        case let v as String: return .string(v)
        case let v as Substring: return .string(String(v))
        case let v as Double: return .double(v)
        case let v as Float: return .double(Double(v))
        case let v as Data: return .data(v)
        case let v as Date: return .date(v)
        case let v as UUID: return .uuid(v)
        case let v as ObjectId: return .objectId(v)
        case let v as Decimal: return .decimal(v)
        case let v as QueryTextArgument: return .text(v.text)
        default: break
        }
        if let i = Int64._latticeCast(value) { return .int(i) }
        if let u = value as? UInt64 { return .double(Double(u)) }
        if let u = value as? UInt { return .double(Double(u)) }
        // A custom type stands for its persisted value.
        if let custom = value as? any _CustomPersistableBase {
            let persisted = persistedValue(custom)
            if isNilValue(persisted) { return .null }
            guard let single = try scalar(unwrapAny(persisted)) else {
                throw ArgumentError(message: "the persisted value of \(type(of: value)) cannot be used in a predicate")
            }
            return single
        }
        // An enum stands for its raw value.
        if let e = value as? any PersistableEnum, let raw = e._latticeAnyValue, !(raw is any PersistableEnum) {
            if isNilValue(raw) { return .null }
            guard let single = try scalar(unwrapAny(raw)) else {
                throw ArgumentError(message: "the raw value of \(type(of: value)) cannot be used in a predicate")
            }
            return single
        }
        return nil
    }

    private static func elements(of sequence: some Sequence) -> [Any?] { sequence.map { $0 as Any? } }

    /// A key path given as text (`%K`, sort and distinct key paths).
    static func keyPath(from text: String, column: Int = 1) throws -> QueryKeyPath {
        var path = QueryKeyPath(variable: nil, segments: [], position: column)
        for part in text.split(separator: ".", omittingEmptySubsequences: false) {
            // A plain name (`"age"`, `"owner.name"`: what sorting and aggregates by name pass, often) needs
            // no trimming; Foundation's costs more than the rest of the parse.
            let name = part.contains(where: \.isWhitespace) ? part.trimmingCharacters(in: .whitespaces) : String(part)
            if name.hasPrefix("@"), path.collectionOperator == nil,
               let segment = [QueryMapSegment.allKeys, QueryMapSegment.allValues].first(where: { $0.lowercased() == name.lowercased() }) {
                path.segments.append(segment)
            } else if name.hasPrefix("@") {
                guard path.collectionOperator == nil, let op = QueryCollectionOperator(rawValue: name.lowercased()) else {
                    throw error(column, "'\(text)' is not a valid key path ('\(name)' is not a collection operator here)")
                }
                path.collectionOperator = op
            } else {
                guard !name.isEmpty, !name.contains(where: { $0.isWhitespace }) else {
                    throw error(column, "'\(text)' is not a valid key path")
                }
                if path.collectionOperator == nil { path.segments.append(name) } else { path.trailing.append(name) }
            }
        }
        guard !path.segments.isEmpty else { throw error(column, "'\(text)' is not a valid key path") }
        return path
    }
}

/// A Swift array given as an argument stands for its elements.
protocol _ArrayArgument {
    var queryElements: [Any?] { get }
}

extension Array: _ArrayArgument {
    var queryElements: [Any?] { map { $0 as Any? } }
}

/// A ``Map`` given as an argument stands for its values.
protocol _MapArgument {
    var queryValues: [Any?] { get }
}

extension Map: _MapArgument {
    var queryValues: [Any?] { values.map { $0 as Any? } }
}
