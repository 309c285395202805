import Foundation
import LatticeSchemaFile

/// Writing JSON text: strings, numbers and parsed nodes, compact (one line), appended to a `String`.
enum JSONText {
    /// `text` as a JSON string literal.
    static func string(_ text: String, into out: inout String) {
        out.append("\"")
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out.append("\\\"")
            case "\\": out.append("\\\\")
            case "\n": out.append("\\n")
            case "\r": out.append("\\r")
            case "\t": out.append("\\t")
            case let c where c.value < 0x20:
                out.append("\\u00")
                out.append(c.value < 0x10 ? "0" : "1")
                out.append(String(c.value & 0xF, radix: 16))
            default: out.unicodeScalars.append(scalar)
            }
        }
        out.append("\"")
    }

    static func string(_ text: String) -> String {
        var out = ""
        string(text, into: &out)
        return out
    }

    /// A floating-point number: finite ones as the shortest text that reads back to the same value;
    /// NaN and the infinities, which JSON has no number for, as the strings `"NaN"`, `"Infinity"`, `"-Infinity"`.
    static func number<F: BinaryFloatingPoint & LosslessStringConvertible>(_ value: F, into out: inout String) {
        if value.isNaN {
            out.append("\"NaN\"")
        } else if value.isInfinite {
            out.append(value < 0 ? "\"-Infinity\"" : "\"Infinity\"")
        } else {
            out.append(value.description)
        }
    }

    /// A parsed node, compact.
    static func node(_ node: JSONNode, into out: inout String) {
        switch node.value {
        case let .object(members):
            out.append("{")
            for (i, m) in members.enumerated() {
                if i > 0 { out.append(",") }
                string(m.key, into: &out)
                out.append(":")
                self.node(m.value, into: &out)
            }
            out.append("}")
        case let .array(items):
            out.append("[")
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(",") }
                self.node(item, into: &out)
            }
            out.append("]")
        case let .string(s): string(s, into: &out)
        case let .number(n): out.append(n)
        case let .bool(b): out.append(b ? "true" : "false")
        case .null: out.append("null")
        }
    }
}

extension JSONNode {
    /// The member named `key` of an object node, or nil.
    subscript(key: String) -> JSONNode? {
        guard case let .object(members) = value else { return nil }
        return members.first { $0.key == key }?.value
    }
}
