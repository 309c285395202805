extension SchemaFile {
    /// The file as JSON text, in a fixed key order with two-space indentation; an object without nested
    /// objects (a property, an enum case) stays on one line when it fits. Keys equal to their default
    /// (`false`, absent) are left out. Reading the text back gives an equal ``SchemaFile``.
    ///
    /// - Parameter schemaReference: the `$schema` to write first (the JSON Schema editors validate
    ///   against), or nil for none.
    public func jsonText(schemaReference: String? = nil) -> String {
        var top: [(String, JSONNode.Value)] = []
        if let schemaReference { top.append(("$schema", .string(schemaReference))) }
        if let schemaVersion { top.append(("schemaVersion", .number(String(schemaVersion)))) }
        if !enums.isEmpty { top.append(("enums", .array(enums.map(\.json)))) }
        top.append(("objectSchemas", .array(classes.map(\.json))))
        var out = ""
        JSONWriter.write(.object(top.map(member)), indent: 0, into: &out)
        return out + "\n"
    }
}

private func member(_ pair: (String, JSONNode.Value)) -> JSONNode.Member {
    JSONNode.Member(key: pair.0, keyPosition: .unknown, value: JSONNode(value: pair.1, position: .unknown))
}

private func docValue(_ doc: String) -> JSONNode.Value {
    let lines = doc.split(separator: "\n", omittingEmptySubsequences: false)
    return lines.count == 1 ? .string(doc) : .array(lines.map { JSONNode(value: .string(String($0)), position: .unknown) })
}

extension EnumSpec {
    var json: JSONNode {
        var m: [(String, JSONNode.Value)] = [("name", .string(name))]
        if let doc { m.append(("doc", docValue(doc))) }
        m.append(("rawType", .string(rawType.rawValue)))
        m.append(("cases", .array(cases.map { c in
            if c.rawValue == nil && c.doc == nil { return JSONNode(value: .string(c.name), position: .unknown) }
            var cm: [(String, JSONNode.Value)] = [("name", .string(c.name))]
            if let raw = c.rawValue { cm.append(("rawValue", raw)) }
            if let doc = c.doc { cm.append(("doc", docValue(doc))) }
            return JSONNode(value: .object(cm.map(member)), position: .unknown)
        })))
        return JSONNode(value: .object(m.map(member)), position: .unknown)
    }
}

extension ClassSpec {
    var json: JSONNode {
        var m: [(String, JSONNode.Value)] = [("className", .string(className))]
        if let doc { m.append(("doc", docValue(doc))) }
        if let originalName { m.append(("originalName", .string(originalName))) }
        if isEmbedded { m.append(("isEmbedded", .bool(true))) }
        m.append(("properties", .array(properties.map(\.json))))
        return JSONNode(value: .object(m.map(member)), position: .unknown)
    }
}

extension PropertySpec {
    var json: JSONNode {
        // An enum property's type is its enum's raw type, which validation fills in.
        var m: [(String, JSONNode.Value)] = [("name", .string(name))]
        if let enumName { m.append(("enum", .string(enumName))) } else { m.append(("type", .string(type.rawValue))) }
        if let collection { m.append(("collection", .string(collection.rawValue))) }
        if let objectClassName { m.append(("objectClassName", .string(objectClassName))) }
        if let originProperty { m.append(("originProperty", .string(originProperty))) }
        if isOptional { m.append(("isOptional", .bool(true))) }
        if isPrimaryKey { m.append(("isPrimaryKey", .bool(true))) }
        if isIndexed && !isPrimaryKey { m.append(("isIndexed", .bool(true))) }
        switch defaultValue {
        case .literal(let value)?: m.append(("default", value))
        case .expression(let source)?: m.append(("defaultExpression", .string(source)))
        case nil: break
        }
        if let originalName { m.append(("originalName", .string(originalName))) }
        if let doc { m.append(("doc", docValue(doc))) }
        return JSONNode(value: .object(m.map(member)), position: .unknown)
    }
}

enum JSONWriter {
    /// Longest line an object or array is written on when it holds no nested object.
    static let lineLimit = 120

    static func write(_ value: JSONNode.Value, indent: Int, into out: inout String) {
        switch value {
        case .object(let members):
            if members.isEmpty { return out += "{}" }
            let oneLine = members.allSatisfy { !$0.value.value.isObject } ? compact(value) : nil
            if let oneLine, indent + oneLine.count <= lineLimit { return out += oneLine }
            out += "{\n"
            for (i, m) in members.enumerated() {
                out += String(repeating: " ", count: indent + 2) + quoted(m.key) + ": "
                write(m.value.value, indent: indent + 2, into: &out)
                out += i == members.count - 1 ? "\n" : ",\n"
            }
            out += String(repeating: " ", count: indent) + "}"
        case .array(let elements):
            if elements.isEmpty { return out += "[]" }
            let oneLine = elements.allSatisfy { !$0.value.isObject && !$0.value.isArray } ? compact(value) : nil
            if let oneLine, indent + oneLine.count <= lineLimit { return out += oneLine }
            out += "[\n"
            for (i, e) in elements.enumerated() {
                out += String(repeating: " ", count: indent + 2)
                write(e.value, indent: indent + 2, into: &out)
                out += i == elements.count - 1 ? "\n" : ",\n"
            }
            out += String(repeating: " ", count: indent) + "]"
        default:
            out += compact(value)
        }
    }

    /// The value on one line, `{ "a": 1, "b": [1, 2] }`.
    static func compact(_ value: JSONNode.Value) -> String {
        switch value {
        case .object(let members):
            return members.isEmpty ? "{}" : "{ " + members.map { quoted($0.key) + ": " + compact($0.value.value) }.joined(separator: ", ") + " }"
        case .array(let elements):
            return "[" + elements.map { compact($0.value) }.joined(separator: ", ") + "]"
        case .string(let text): return quoted(text)
        case .number(let text): return text
        case .bool(let flag): return flag ? "true" : "false"
        case .null: return "null"
        }
    }

    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}

extension JSONNode.Value {
    var isObject: Bool {
        if case .object = self { return true }
        return false
    }

    var isArray: Bool {
        if case .array = self { return true }
        return false
    }
}
