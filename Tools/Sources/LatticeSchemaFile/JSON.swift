/// A JSON value with the position where it starts in its text.
///
/// `JSONDecoder` reports a coding path but no line or column; schema files need both for their
/// diagnostics, so they are read with this small parser (RFC 8259, UTF-8).
public struct JSONNode: Sendable, Equatable {
    /// A member of an object, with the position of its key.
    public struct Member: Sendable, Equatable {
        /// The key.
        public var key: String
        /// Where the key's opening quote is.
        public var keyPosition: SourcePosition
        /// The value.
        public var value: JSONNode
    }

    /// The kinds of JSON values. Numbers keep their text, so integers wider than a `Double` stay exact.
    public enum Value: Sendable, Equatable {
        /// `{...}`, members in text order.
        case object([Member])
        /// `[...]`.
        case array([JSONNode])
        /// A string, unescaped.
        case string(String)
        /// A number, as written.
        case number(String)
        /// `true` or `false`.
        case bool(Bool)
        /// `null`.
        case null
    }

    /// The value.
    public var value: Value
    /// Where the value's first character is.
    public var position: SourcePosition

    /// The kind of value, as diagnostics name it: `an object`, `a string`, ...
    public var kindDescription: String {
        switch value {
        case .object: return "an object"
        case .array: return "an array"
        case .string: return "a string"
        case .number: return "a number"
        case .bool: return "a boolean"
        case .null: return "null"
        }
    }

    /// Parses a whole JSON text; the error names the position of the first problem.
    public static func parse(_ bytes: [UInt8]) throws(JSONSyntaxError) -> JSONNode {
        var scanner = JSONScanner(bytes: bytes)
        return try scanner.document()
    }
}

/// Text that is not valid JSON.
public struct JSONSyntaxError: Error, Sendable, Equatable {
    /// What is wrong.
    public var message: String
    /// Where.
    public var position: SourcePosition
}

private struct JSONScanner {
    let bytes: [UInt8]
    var index = 0
    var line = 1
    var column = 1
    /// Deep enough for any schema; bounds the recursion on hostile input.
    let maxDepth = 256

    init(bytes: [UInt8]) {
        self.bytes = bytes
        // A UTF-8 byte order mark is not part of the text.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
    }

    var position: SourcePosition { SourcePosition(line: line, column: column) }

    func fail(_ message: String, at position: SourcePosition? = nil) -> JSONSyntaxError {
        JSONSyntaxError(message: message, position: position ?? self.position)
    }

    var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func advance() {
        let byte = bytes[index]
        index += 1
        if byte == UInt8(ascii: "\n") {
            line += 1
            column = 1
        } else if byte & 0xC0 != 0x80 {
            // Continuation bytes of a multi-byte scalar do not start a new column.
            column += 1
        }
    }

    mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { advance() }
    }

    /// A description of the character at the current position, for "unexpected ..." messages.
    var currentDescription: String {
        guard let byte = current else { return "end of file" }
        if byte >= 0x20 && byte < 0x7F { return "'\(Character(UnicodeScalar(byte)))'" }
        return "byte 0x" + String(byte, radix: 16, uppercase: true)
    }

    mutating func document() throws(JSONSyntaxError) -> JSONNode {
        skipWhitespace()
        let node = try value(depth: 0)
        skipWhitespace()
        if current != nil { throw fail("unexpected \(currentDescription) after the JSON value") }
        return node
    }

    mutating func value(depth: Int) throws(JSONSyntaxError) -> JSONNode {
        let start = position
        guard let byte = current else { throw fail("expected a JSON value, found end of file") }
        switch byte {
        case UInt8(ascii: "{"):
            if depth >= maxDepth { throw fail("values are nested more than \(maxDepth) deep") }
            return JSONNode(value: .object(try object(depth: depth)), position: start)
        case UInt8(ascii: "["):
            if depth >= maxDepth { throw fail("values are nested more than \(maxDepth) deep") }
            return JSONNode(value: .array(try array(depth: depth)), position: start)
        case UInt8(ascii: "\""):
            return JSONNode(value: .string(try string()), position: start)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return JSONNode(value: .number(try number()), position: start)
        case UInt8(ascii: "t"):
            try literal("true")
            return JSONNode(value: .bool(true), position: start)
        case UInt8(ascii: "f"):
            try literal("false")
            return JSONNode(value: .bool(false), position: start)
        case UInt8(ascii: "n"):
            try literal("null")
            return JSONNode(value: .null, position: start)
        default:
            throw fail("expected a JSON value, found \(currentDescription)")
        }
    }

    mutating func literal(_ word: String) throws(JSONSyntaxError) {
        let start = position
        for expected in word.utf8 {
            guard current == expected else { throw fail("invalid literal; expected '\(word)'", at: start) }
            advance()
        }
    }

    mutating func object(depth: Int) throws(JSONSyntaxError) -> [JSONNode.Member] {
        advance()  // {
        var members: [JSONNode.Member] = []
        var seen = Set<String>()
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            advance()
            return members
        }
        while true {
            skipWhitespace()
            let keyPosition = position
            guard current == UInt8(ascii: "\"") else { throw fail("expected a string key, found \(currentDescription)") }
            let key = try string()
            if !seen.insert(key).inserted { throw fail("duplicate key '\(key)'", at: keyPosition) }
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw fail("expected ':' after key '\(key)', found \(currentDescription)") }
            advance()
            skipWhitespace()
            members.append(JSONNode.Member(key: key, keyPosition: keyPosition, value: try value(depth: depth + 1)))
            skipWhitespace()
            if current == UInt8(ascii: ",") {
                advance()
                continue
            }
            if current == UInt8(ascii: "}") {
                advance()
                return members
            }
            throw fail("expected ',' or '}' in object, found \(currentDescription)")
        }
    }

    mutating func array(depth: Int) throws(JSONSyntaxError) -> [JSONNode] {
        advance()  // [
        var elements: [JSONNode] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            advance()
            return elements
        }
        while true {
            skipWhitespace()
            elements.append(try value(depth: depth + 1))
            skipWhitespace()
            if current == UInt8(ascii: ",") {
                advance()
                continue
            }
            if current == UInt8(ascii: "]") {
                advance()
                return elements
            }
            throw fail("expected ',' or ']' in array, found \(currentDescription)")
        }
    }

    mutating func string() throws(JSONSyntaxError) -> String {
        let start = position
        advance()  // opening quote
        var out: [UInt8] = []
        while true {
            guard let byte = current else { throw fail("unterminated string", at: start) }
            switch byte {
            case UInt8(ascii: "\""):
                advance()
                guard let text = String(validating: out, as: UTF8.self) else { throw fail("string is not valid UTF-8", at: start) }
                return text
            case UInt8(ascii: "\\"):
                let escapePosition = position
                advance()
                guard let escaped = current else { throw fail("unterminated string", at: start) }
                advance()
                switch escaped {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4(escapePosition)
                    if (0xD800..<0xDC00).contains(scalar) {
                        // A high surrogate must be followed by an escaped low surrogate.
                        guard current == UInt8(ascii: "\\") else { throw fail("unpaired UTF-16 surrogate in \\u escape", at: escapePosition) }
                        advance()
                        guard current == UInt8(ascii: "u") else { throw fail("unpaired UTF-16 surrogate in \\u escape", at: escapePosition) }
                        advance()
                        let low = try hex4(escapePosition)
                        guard (0xDC00..<0xE000).contains(low) else { throw fail("unpaired UTF-16 surrogate in \\u escape", at: escapePosition) }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw fail("unpaired UTF-16 surrogate in \\u escape", at: escapePosition) }
                    out.append(contentsOf: Array(String(Character(unicode)).utf8))
                default:
                    throw fail("invalid escape sequence in string", at: escapePosition)
                }
            default:
                if byte < 0x20 { throw fail("control character in string (escape it, for example as \\n)") }
                out.append(byte)
                advance()
            }
        }
    }

    mutating func hex4(_ escapePosition: SourcePosition) throws(JSONSyntaxError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = current, let digit = hexDigit(byte) else {
                throw fail("invalid \\u escape: expected four hexadecimal digits", at: escapePosition)
            }
            value = value << 4 | digit
            advance()
        }
        return value
    }

    func hexDigit(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(byte - UInt8(ascii: "A") + 10)
        default: return nil
        }
    }

    mutating func number() throws(JSONSyntaxError) -> String {
        let start = index
        let startPosition = position
        func isDigit(_ b: UInt8?) -> Bool { b.map { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") } ?? false }
        if current == UInt8(ascii: "-") { advance() }
        guard isDigit(current) else { throw fail("invalid number: expected a digit", at: startPosition) }
        if current == UInt8(ascii: "0") {
            advance()
            if isDigit(current) { throw fail("invalid number: leading zeros are not allowed", at: startPosition) }
        } else {
            while isDigit(current) { advance() }
        }
        if current == UInt8(ascii: ".") {
            advance()
            guard isDigit(current) else { throw fail("invalid number: expected a digit after '.'", at: startPosition) }
            while isDigit(current) { advance() }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            advance()
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { advance() }
            guard isDigit(current) else { throw fail("invalid number: expected a digit in the exponent", at: startPosition) }
            while isDigit(current) { advance() }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }
}
