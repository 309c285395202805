import Foundation
import Synchronization

/// A token of the predicate language, with its 1-based column.
struct QueryToken: Equatable {
    enum Kind: Equatable {
        /// A name or keyword (keywords are recognised by the parser, case-insensitively).
        case identifier(String)
        case string(String)
        case integer(Int64)
        case double(Double)
        /// `==`, `!=`, `<=`, `&&`, `(`, `{`, `,`, `.`, `[`, ...
        case symbol(String)
        /// `%@`, `%d`, `%K`, ... (the letters after `%`).
        case format(String)
        /// `$0`, `$1`: positional argument.
        case positional(Int)
        /// `$name`: a SUBQUERY variable.
        case variable(String)
        /// `@count`, `@avg`, ..., `@allKeys`, `@allValues`.
        case collectionOperator(String)
        /// `uuid(...)`, `oid(...)` with their contents.
        case uuidLiteral(String)
        case objectIdLiteral(String)
        case end
    }
    let kind: Kind
    let column: Int
    /// The keyword an identifier spells, told once here: the parser asks at every level of its descent.
    let keyword: QueryKeyword?

    init(kind: Kind, column: Int) {
        self.kind = kind
        self.column = column
        if case let .identifier(name) = kind { keyword = QueryKeyword(identifier: name) } else { keyword = nil }
    }
}

/// The keywords of the predicate language, in any case (`and`, `And`, `AND`); only ASCII spells one.
enum QueryKeyword: String {
    case and = "AND", or = "OR", not = "NOT", any = "ANY", some = "SOME", all = "ALL", none = "NONE"
    case between = "BETWEEN", `in` = "IN", beginsWith = "BEGINSWITH", endsWith = "ENDSWITH", contains = "CONTAINS"
    case like = "LIKE", matches = "MATCHES", subquery = "SUBQUERY"
    case truePredicate = "TRUEPREDICATE", falsePredicate = "FALSEPREDICATE"
    case `nil` = "NIL", null = "NULL", `true` = "TRUE", `false` = "FALSE", yes = "YES", no = "NO"

    init?(identifier name: String) {
        // No keyword is longer than FALSEPREDICATE's 14 letters.
        guard name.utf8.count <= 14, name.utf8.allSatisfy({ $0 < 0x80 }) else { return nil }
        self.init(rawValue: name.uppercased())
    }

    /// The operator this keyword names (`BEGINSWITH`, `IN`, ...), if any: the same spelling.
    var queryOperator: QueryOperator? { QueryOperator(rawValue: rawValue) }
}

/// Splits a predicate string into tokens. Never traps: malformed input throws `invalidQuery`.
struct QueryLexer {
    private let scalars: [Unicode.Scalar]
    private var at = 0

    init(_ text: String) { scalars = Array(text.unicodeScalars) }

    static func tokenize(_ text: String) throws -> [QueryToken] {
        let cacheable = text.utf8.count <= maxCachedLength
        if cacheable, let known = known.withLock({ $0[text] }) { return known }
        var lexer = QueryLexer(text)
        var out: [QueryToken] = []
        while true {
            let token = try lexer.next()
            out.append(token)
            if token.kind == .end { break }
        }
        if cacheable {
            known.withLock {
                if $0.count >= maxCached { $0.removeAll(keepingCapacity: true) }
                $0[text] = out
            }
        }
        return out
    }

    /// The tokens of predicates lexed before (a program filters with the same few texts again and again:
    /// the lookup costs a hash of the text, lexing it again ~1,500 instructions a character). Bounded:
    /// emptied when full, so that texts made with values in them do not pile up.
    private static let known = Mutex<[String: [QueryToken]]>([:])
    private static let maxCached = 256
    private static let maxCachedLength = 1_024

    private func peek(_ offset: Int = 0) -> Unicode.Scalar? {
        at + offset < scalars.count ? scalars[at + offset] : nil
    }

    // ASCII first: Unicode property lookups are slow, and predicates are mostly ASCII. Any other scalar
    // but whitespace and Unicode's pattern syntax (arrows, maths signs) may be part of a name, as in
    // Swift property names (`柱колоéнǢкƱаم👍`); no token of the language is outside ASCII.
    private static func isIdentifierStart(_ c: Unicode.Scalar) -> Bool {
        if c.isASCII { return c == "_" || ("a"..."z").contains(c) || ("A"..."Z").contains(c) }
        return !c.properties.isWhitespace && !c.properties.isPatternSyntax && !c.properties.isNoncharacterCodePoint
    }

    private static func isWhitespace(_ c: Unicode.Scalar) -> Bool {
        if c.isASCII { return c == " " || (0x09...0x0D).contains(c.value) }
        return c.properties.isWhitespace
    }

    private static func isIdentifierPart(_ c: Unicode.Scalar) -> Bool {
        isIdentifierStart(c) || ("0"..."9").contains(c)
    }

    private mutating func next() throws -> QueryToken {
        while let c = peek(), QueryLexer.isWhitespace(c) { at += 1 }
        let start = at
        let column = start + 1
        guard let c = peek() else { return QueryToken(kind: .end, column: column) }

        if QueryLexer.isIdentifierStart(c) {
            while let d = peek(), QueryLexer.isIdentifierPart(d) { at += 1 }
            let name = text(start, at)
            // `uuid(...)` and `oid(...)` literals take their contents verbatim (quotes optional).
            if peek() == "(", ["uuid", "oid"].contains(name.lowercased()) {
                at += 1
                let contentStart = at
                while let d = peek(), d != ")" { at += 1 }
                guard peek() == ")" else { throw QueryParser.error(column, "expected ')' to close \(name)(") }
                var content = text(contentStart, at).trimmingCharacters(in: .whitespaces)
                at += 1
                if content.count >= 2, let q = content.first, q == "'" || q == "\"", content.last == q {
                    content = String(content.dropFirst().dropLast())
                }
                return QueryToken(kind: name.lowercased() == "uuid" ? .uuidLiteral(content) : .objectIdLiteral(content), column: column)
            }
            return QueryToken(kind: .identifier(name), column: column)
        }
        let signed = (c == "-" || c == "+") ? 1 : 0
        if let d = peek(signed), ("0"..."9").contains(d) || (d == "." && peek(signed + 1).map { ("0"..."9").contains($0) } == true) {
            return try number(column)
        }
        switch c {
        case "'", "\"":
            return QueryToken(kind: .string(try string(quote: c, column: column)), column: column)
        case "%":
            at += 1
            var letters = ""
            while let d = peek(), d.properties.isAlphabetic || d == "@" {
                letters.unicodeScalars.append(d)
                at += 1
                if d == "@" || d == "K" || d == "d" || d == "i" || d == "f" || d == "s" || d == "u" { break }
            }
            guard ["@", "K", "d", "i", "ld", "lld", "lu", "llu", "u", "f", "lf", "s"].contains(letters) else {
                throw QueryParser.error(column, "unknown argument format '%\(letters)' (expected %@, %K, %d, %i, %ld, %f or %s)")
            }
            return QueryToken(kind: .format(letters), column: column)
        case "$":
            at += 1
            if let d = peek(), ("0"..."9").contains(d) {
                var digits = ""
                while let e = peek(), ("0"..."9").contains(e) { digits.unicodeScalars.append(e); at += 1 }
                guard let n = Int(digits), n < 1_000_000 else { throw QueryParser.error(column, "argument number $\(digits) is too large") }
                return QueryToken(kind: .positional(n), column: column)
            }
            guard let d = peek(), QueryLexer.isIdentifierStart(d) else {
                throw QueryParser.error(column, "expected a variable name or argument number after '$'")
            }
            let nameStart = at
            while let e = peek(), QueryLexer.isIdentifierPart(e) { at += 1 }
            return QueryToken(kind: .variable(text(nameStart, at)), column: column)
        case "@":
            at += 1
            let nameStart = at
            while let e = peek(), QueryLexer.isIdentifierPart(e) { at += 1 }
            let name = text(nameStart, at)
            switch name.lowercased() {
            case "allkeys": return QueryToken(kind: .collectionOperator(QueryMapSegment.allKeys), column: column)
            case "allvalues": return QueryToken(kind: .collectionOperator(QueryMapSegment.allValues), column: column)
            case "count", "min", "max", "sum", "avg", "size": break
            default:
                throw QueryParser.error(column, "unknown collection operator '@\(name)' (expected @count, @min, @max, @sum, @avg, "
                    + "@allKeys or @allValues)")
            }
            return QueryToken(kind: .collectionOperator("@" + (name.lowercased() == "size" ? "count" : name.lowercased())), column: column)
        default:
            break
        }
        // Two-character operators; `<>`, `=<` and `=>` are spellings of `!=`, `<=` and `>=`.
        var symbol: String?
        switch (c, peek(1) ?? " ") {
        case ("=", "="): symbol = "=="
        case ("!", "="), ("<", ">"): symbol = "!="
        case ("<", "="), ("=", "<"): symbol = "<="
        case (">", "="), ("=", ">"): symbol = ">="
        case ("&", "&"): symbol = "&&"
        case ("|", "|"): symbol = "||"
        default: break
        }
        if let symbol {
            at += 2
            return QueryToken(kind: .symbol(symbol), column: column)
        }
        switch c {
        case "=", "<", ">", "!", "(", ")", "{", "}", ",", ".", "[", "]":
            at += 1
            return QueryToken(kind: .symbol(c == "=" ? "==" : String(c)), column: column)
        default:
            throw QueryParser.error(column, "unexpected character '\(c)'")
        }
    }

    private func text(_ from: Int, _ to: Int) -> String {
        var s = ""
        s.unicodeScalars.append(contentsOf: scalars[from..<to])
        return s
    }

    private mutating func number(_ column: Int) throws -> QueryToken {
        let start = at
        if peek() == "-" || peek() == "+" { at += 1 }
        if peek() == "0", let x = peek(1), x == "x" || x == "X" {
            at += 2
            let digitsStart = at
            while let d = peek(), d.properties.isASCIIHexDigit { at += 1 }
            guard let v = UInt64(text(digitsStart, at), radix: 16) else { throw QueryParser.error(column, "malformed hexadecimal number") }
            let negative = scalars[start] == "-"
            return QueryToken(kind: .integer(negative ? 0 &- Int64(bitPattern: v) : Int64(bitPattern: v)), column: column)
        }
        var isDouble = false
        while let d = peek() {
            if ("0"..."9").contains(d) {
                at += 1
            } else if d == ".", !isDouble, peek(1).map({ ("0"..."9").contains($0) }) == true {
                isDouble = true
                at += 1
            } else if d == "e" || d == "E" {
                isDouble = true
                at += 1
                if peek() == "+" || peek() == "-" { at += 1 }
                guard let e = peek(), ("0"..."9").contains(e) else { throw QueryParser.error(column, "malformed exponent in number") }
            } else {
                break
            }
        }
        var literal = text(start, at)
        if literal.hasPrefix("+") { literal.removeFirst() }
        if !isDouble, let v = Int64(literal) { return QueryToken(kind: .integer(v), column: column) }
        guard let v = Double(literal) else { throw QueryParser.error(column, "malformed number '\(literal)'") }
        return QueryToken(kind: .double(v), column: column)
    }

    /// A quoted string with `\\ \' \" \n \t \r \0 \uXXXX` escapes.
    private mutating func string(quote: Unicode.Scalar, column: Int) throws -> String {
        at += 1
        var out = String.UnicodeScalarView()
        while true {
            guard let c = peek() else { throw QueryParser.error(column, "unterminated string (expected a closing \(quote))") }
            at += 1
            if c == quote { return String(out) }
            guard c == "\\" else { out.append(c); continue }
            guard let e = peek() else { throw QueryParser.error(column, "unterminated string (expected a closing \(quote))") }
            at += 1
            switch e {
            case "n": out.append("\n")
            case "t": out.append("\t")
            case "r": out.append("\r")
            case "0": out.append("\0")
            case "u":
                var hex = ""
                if peek() == "{" {
                    at += 1
                    while let h = peek(), h != "}" { hex.unicodeScalars.append(h); at += 1 }
                    guard peek() == "}" else { throw QueryParser.error(at + 1, "unterminated \\u{...} escape") }
                    at += 1
                } else {
                    for _ in 0..<4 {
                        guard let h = peek() else { break }
                        hex.unicodeScalars.append(h)
                        at += 1
                    }
                }
                guard let v = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(v) else {
                    throw QueryParser.error(at, "malformed \\u escape '\\u\(hex)'")
                }
                out.append(scalar)
            default: out.append(e)
            }
        }
    }
}
