import Foundation

extension SchemaFile {
    /// Reads and checks the shape of one schema file: JSON syntax, the kind of every value, unknown or
    /// missing keys, type names. Cross-references (links, backlinks, enums, primary keys) are checked
    /// by ``validate(_:)``, which sees every file of a module at once.
    ///
    /// - Parameters:
    ///   - bytes: the file's content (UTF-8).
    ///   - fileName: how diagnostics name the file (usually its path).
    /// - Throws: ``SchemaFileError`` with the position of the first problem.
    public static func read(_ bytes: [UInt8], fileName: String) throws(SchemaFileError) -> SchemaFile {
        let root: JSONNode
        do {
            root = try JSONNode.parse(bytes)
        } catch {
            throw SchemaFileError([SchemaDiagnostic(file: fileName, position: error.position, message: "malformed JSON: \(error.message)")])
        }
        do {
            return try SchemaFileReader(fileName: fileName).file(root)
        } catch {
            throw SchemaFileError([error])
        }
    }

    /// Reads the schema file at `path` (see ``read(_:fileName:)``); diagnostics name it `path`.
    public static func read(contentsOf path: String) throws(SchemaFileError) -> SchemaFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            let reason = FileManager.default.fileExists(atPath: path) ? "cannot read the file" : "no such file"
            throw SchemaFileError([SchemaDiagnostic(file: path, position: .unknown, message: reason)])
        }
        return try read(Array(data), fileName: path)
    }
}

/// The members of one JSON object, read by key; remembers where each value is.
private struct ObjectReader {
    let fileName: String
    let node: JSONNode
    let members: [JSONNode.Member]
    /// What the object is, for messages: `class 'Person'`, `property 'Person.name'`.
    var what: String

    init(_ node: JSONNode, fileName: String, what: String) throws(SchemaDiagnostic) {
        guard case .object(let members) = node.value else {
            throw SchemaDiagnostic(file: fileName, position: node.position, message: "\(what) must be an object, not \(node.kindDescription)")
        }
        self.fileName = fileName
        self.node = node
        self.members = members
        self.what = what
    }

    var locations: SourceLocations {
        SourceLocations(start: node.position, values: Dictionary(uniqueKeysWithValues: members.map { ($0.key, $0.value.position) }))
    }

    func error(_ message: String, at position: SourcePosition) -> SchemaDiagnostic {
        SchemaDiagnostic(file: fileName, position: position, message: message)
    }

    /// Fails on the first key not in `allowed`; keys starting with `$` (`$comment`, `$schema`) are free.
    func checkKeys(_ allowed: [String]) throws(SchemaDiagnostic) {
        for member in members where !member.key.hasPrefix("$") && !allowed.contains(member.key) {
            throw error("unknown key '\(member.key)' in \(what) (expected one of: \(allowed.joined(separator: ", ")))",
                        at: member.keyPosition)
        }
    }

    subscript(key: String) -> JSONNode? { members.first { $0.key == key }?.value }

    func string(_ key: String) throws(SchemaDiagnostic) -> String? {
        guard let value = self[key] else { return nil }
        guard case .string(let text) = value.value else { throw wrongKind(key, value, expected: "a string") }
        return text
    }

    func requiredString(_ key: String) throws(SchemaDiagnostic) -> String {
        guard let text = try string(key) else { throw error("\(what) has no '\(key)'", at: node.position) }
        return text
    }

    func bool(_ key: String) throws(SchemaDiagnostic) -> Bool {
        guard let value = self[key] else { return false }
        guard case .bool(let flag) = value.value else { throw wrongKind(key, value, expected: "true or false") }
        return flag
    }

    func array(_ key: String) throws(SchemaDiagnostic) -> [JSONNode]? {
        guard let value = self[key] else { return nil }
        guard case .array(let elements) = value.value else { throw wrongKind(key, value, expected: "an array") }
        return elements
    }

    /// A doc comment: a string, or an array of strings (one per line).
    func doc() throws(SchemaDiagnostic) -> String? {
        guard let value = self["doc"] else { return nil }
        switch value.value {
        case .string(let text):
            return text
        case .array(let lines):
            var out: [String] = []
            for line in lines {
                guard case .string(let text) = line.value else {
                    throw error("'doc' of \(what) must be a string or an array of strings, not an array holding \(line.kindDescription)",
                                at: line.position)
                }
                out.append(text)
            }
            return out.joined(separator: "\n")
        default:
            throw wrongKind("doc", value, expected: "a string or an array of strings")
        }
    }

    func wrongKind(_ key: String, _ value: JSONNode, expected: String) -> SchemaDiagnostic {
        error("'\(key)' of \(what) must be \(expected), not \(value.kindDescription)", at: value.position)
    }
}

private struct SchemaFileReader {
    let fileName: String

    func file(_ node: JSONNode) throws(SchemaDiagnostic) -> SchemaFile {
        let r = try ObjectReader(node, fileName: fileName, what: "the schema file")
        try r.checkKeys(["schemaVersion", "enums", "objectSchemas"])
        var version: UInt64?
        if let value = r["schemaVersion"] {
            guard case .number(let text) = value.value, let parsed = UInt64(text) else {
                throw r.error("'schemaVersion' must be an integer from 0 to \(UInt64.max)", at: value.position)
            }
            version = parsed
        }
        var enums: [EnumSpec] = []
        for element in try r.array("enums") ?? [] { enums.append(try enumSpec(element)) }
        guard let classNodes = try r.array("objectSchemas") else {
            throw r.error("the schema file has no 'objectSchemas' (the array of classes)", at: node.position)
        }
        var classes: [ClassSpec] = []
        for element in classNodes { classes.append(try classSpec(element)) }
        return SchemaFile(fileName: fileName, schemaVersion: version, enums: enums, classes: classes, locations: r.locations)
    }

    func classSpec(_ node: JSONNode) throws(SchemaDiagnostic) -> ClassSpec {
        var r = try ObjectReader(node, fileName: fileName, what: "a class")
        let name = try r.requiredString("className")
        r.what = "class '\(name)'"
        try r.checkKeys(["className", "isEmbedded", "properties", "doc", "originalName"])
        guard let propertyNodes = try r.array("properties") else { throw r.error("class '\(name)' has no 'properties'", at: node.position) }
        var properties: [PropertySpec] = []
        for element in propertyNodes { properties.append(try property(element, className: name)) }
        return ClassSpec(className: name, isEmbedded: try r.bool("isEmbedded"), properties: properties, doc: try r.doc(),
                         originalName: try r.string("originalName"), locations: r.locations)
    }

    func property(_ node: JSONNode, className: String) throws(SchemaDiagnostic) -> PropertySpec {
        var r = try ObjectReader(node, fileName: fileName, what: "a property of class '\(className)'")
        let name = try r.requiredString("name")
        r.what = "property '\(className).\(name)'"
        try r.checkKeys(["name", "type", "enum", "collection", "objectClassName", "originProperty", "isOptional", "isIndexed",
                         "isPrimaryKey", "default", "defaultExpression", "doc", "originalName"])
        let enumName = try r.string("enum")
        // An enum property's type is its raw type; the enum says which, so `type` may be left out.
        var type = ValueType.string
        if let typeName = try r.string("type") {
            guard let known = ValueType(rawValue: typeName) else {
                throw r.error("unknown type '\(typeName)' for \(r.what) (expected one of: "
                    + ValueType.allCases.map(\.rawValue).joined(separator: ", ") + ")", at: r["type"]?.position ?? node.position)
            }
            type = known
        } else if enumName == nil {
            throw r.error("\(r.what) has no 'type'", at: node.position)
        }
        var collection: CollectionType?
        if let collectionName = try r.string("collection") {
            guard let known = CollectionType(rawValue: collectionName) else {
                throw r.error("unknown collection '\(collectionName)' for \(r.what) (expected list, set or map)",
                              at: r["collection"]?.position ?? node.position)
            }
            collection = known
        }
        var defaultValue: DefaultValue?
        if let literal = r["default"] {
            switch literal.value {
            case .object, .array: throw r.wrongKind("default", literal, expected: "a string, number, boolean or null")
            default: defaultValue = .literal(literal.value)
            }
        }
        if let expression = try r.string("defaultExpression") {
            if defaultValue != nil {
                throw r.error("\(r.what) has both 'default' and 'defaultExpression'; keep one", at: r["defaultExpression"]?.position ?? node.position)
            }
            defaultValue = .expression(expression)
        }
        return PropertySpec(name: name, type: type, enumName: enumName, collection: collection,
                            objectClassName: try r.string("objectClassName"), originProperty: try r.string("originProperty"),
                            isOptional: try r.bool("isOptional"), isIndexed: try r.bool("isIndexed"),
                            isPrimaryKey: try r.bool("isPrimaryKey"), defaultValue: defaultValue, doc: try r.doc(),
                            originalName: try r.string("originalName"), locations: r.locations)
    }

    func enumSpec(_ node: JSONNode) throws(SchemaDiagnostic) -> EnumSpec {
        var r = try ObjectReader(node, fileName: fileName, what: "an enum")
        let name = try r.requiredString("name")
        r.what = "enum '\(name)'"
        try r.checkKeys(["name", "rawType", "cases", "doc"])
        let rawTypeName = try r.requiredString("rawType")
        guard let rawType = ValueType(rawValue: rawTypeName) else {
            throw r.error("unknown type '\(rawTypeName)' for the raw values of enum '\(name)' (expected string or an integer type)",
                          at: r["rawType"]?.position ?? node.position)
        }
        guard let caseNodes = try r.array("cases") else { throw r.error("enum '\(name)' has no 'cases'", at: node.position) }
        var cases: [EnumCaseSpec] = []
        for element in caseNodes {
            // A plain string is a case whose raw value is its name.
            if case .string(let caseName) = element.value {
                cases.append(EnumCaseSpec(name: caseName, locations: SourceLocations(start: element.position, values: ["name": element.position])))
                continue
            }
            var c = try ObjectReader(element, fileName: fileName, what: "a case of enum '\(name)'")
            let caseName = try c.requiredString("name")
            c.what = "case '\(name).\(caseName)'"
            try c.checkKeys(["name", "rawValue", "doc"])
            cases.append(EnumCaseSpec(name: caseName, rawValue: c["rawValue"]?.value, doc: try c.doc(), locations: c.locations))
        }
        return EnumSpec(name: name, rawType: rawType, cases: cases, doc: try r.doc(), locations: r.locations)
    }
}
