import Foundation

extension SchemaFile {
    /// Checks the schema files of one module together (classes of one file may link to classes and use
    /// enums of another) and resolves the type of enum properties that leave `type` out.
    ///
    /// Applies the rules the database applies when it opens a file (name lengths, one primary key of a
    /// key type, indexable types, optional to-one links, backlinks that name a link back, embedded
    /// objects only in links and Lists) plus the rules of Swift source (identifiers, defaults).
    /// - Returns: the files, with every enum property's `type` set to its enum's raw type.
    /// - Throws: ``SchemaFileError`` listing every problem found, in file and position order.
    public static func validate(_ files: [SchemaFile]) throws(SchemaFileError) -> [SchemaFile] {
        var validator = SchemaValidator(files: files)
        let resolved = validator.run()
        if !validator.diagnostics.isEmpty { throw SchemaFileError(validator.diagnostics) }
        return resolved
    }
}

/// Limits of the file format: class names become part of LMDB database names.
let maxClassNameBytes = 57
let maxPropertyNameBytes = 63

/// Swift keywords that cannot name a type, property or case without backticks.
private let swiftKeywords: Set<String> = [
    "Any", "Self", "Type", "Protocol", "as", "associatedtype", "await", "break", "case", "catch", "class", "continue",
    "default", "defer", "deinit", "do", "else", "enum", "extension", "fallthrough", "false", "fileprivate", "for",
    "func", "guard", "if", "import", "in", "init", "inout", "internal", "is", "let", "nil", "open", "operator",
    "private", "precedencegroup", "protocol", "public", "repeat", "rethrows", "return", "self", "static", "struct",
    "subscript", "super", "switch", "throw", "throws", "true", "try", "typealias", "var", "where", "while", "_",
]

/// Type names the generated code uses: a class or enum of that name would hide them.
private let reservedTypeNames: Set<String> = [
    "Object", "EmbeddedObject", "Persisted", "List", "MutableSet", "Map", "LinkingObjects", "PersistableEnum", "Lattice",
    "Bool", "Int", "Int8", "Int16", "Int32", "Int64", "Float", "Double", "String", "Data", "Date", "UUID", "Decimal",
    "ObjectId", "Optional", "Array",
]

/// Members of `Object` that a property of a model class cannot redeclare.
private let objectMemberNames: Set<String> = ["description", "lattice", "isInvalidated", "objectSchema", "hashValue"]

/// Whether `name` can be written as a Swift identifier without backticks (ASCII letters, digits, `_`).
func isPlainIdentifier(_ name: String) -> Bool {
    guard let first = name.unicodeScalars.first, first.isASCII, first == "_" || first.properties.isAlphabetic else { return false }
    return name.unicodeScalars.allSatisfy { $0.isASCII && ($0 == "_" || $0.properties.isAlphabetic || $0.properties.numericType != nil) }
        && !swiftKeywords.contains(name)
}

private struct SchemaValidator {
    let files: [SchemaFile]
    var diagnostics: [SchemaDiagnostic] = []
    /// Every class, by name (the first declaration when a name is declared twice).
    var classes: [String: ClassSpec] = [:]
    /// Every enum, by name.
    var enums: [String: EnumSpec] = [:]

    init(files: [SchemaFile]) { self.files = files }

    mutating func report(_ file: SchemaFile, _ position: SourcePosition, _ message: String) {
        diagnostics.append(SchemaDiagnostic(file: file.fileName, position: position, message: message))
    }

    mutating func run() -> [SchemaFile] {
        collectNames()
        var resolved = files
        for fileIndex in resolved.indices {
            let file = resolved[fileIndex]
            for e in file.enums { check(e, in: file) }
            for classIndex in file.classes.indices {
                resolved[fileIndex].classes[classIndex] = check(file.classes[classIndex], in: file)
            }
        }
        diagnostics.sort { ($0.file, $0.position) < ($1.file, $1.position) }
        return resolved
    }

    /// Registers every type name, reporting those declared twice (classes, enums and generated
    /// namespaces share one module namespace).
    mutating func collectNames() {
        var declared: [String: String] = [:]  // name -> what declared it, for the message
        for file in files {
            let namespace = file.namespaceName
            if let other = declared[namespace] {
                report(file, .unknown, "the generated enum '\(namespace)' listing this file's classes clashes with \(other); rename the file")
            } else {
                declared[namespace] = "the enum generated for \(file.fileName)"
            }
        }
        for file in files {
            for e in file.enums {
                if let other = declared[e.name] {
                    report(file, e.locations["name"], "duplicate type name '\(e.name)': already declared as \(other)")
                } else {
                    declared[e.name] = "an enum in \(file.fileName)"
                    enums[e.name] = e
                }
            }
            for c in file.classes {
                if let other = declared[c.className] {
                    report(file, c.locations["className"], "duplicate type name '\(c.className)': already declared as \(other)")
                } else {
                    declared[c.className] = "a class in \(file.fileName)"
                    classes[c.className] = c
                }
            }
        }
    }

    mutating func checkTypeName(_ name: String, _ what: String, at position: SourcePosition, in file: SchemaFile) {
        if !isPlainIdentifier(name) {
            report(file, position, "invalid \(what) name '\(name)': expected a Swift identifier (a letter or '_', then letters, digits or '_'; not a keyword)")
        } else if reservedTypeNames.contains(name) {
            report(file, position, "\(what) name '\(name)' is reserved: the generated code uses the type of that name")
        }
    }

    mutating func check(_ e: EnumSpec, in file: SchemaFile) {
        checkTypeName(e.name, "enum", at: e.locations["name"], in: file)
        guard e.rawType == .string || e.rawType.integerRange != nil else {
            report(file, e.locations["rawType"], "enum '\(e.name)' has raw type '\(e.rawType.rawValue)'; expected string or an integer type")
            return
        }
        if e.cases.isEmpty { report(file, e.locations["cases"], "enum '\(e.name)' has no cases") }
        var names = Set<String>()
        var rawValues = Set<String>()
        for c in e.cases {
            let position = c.locations["name"]
            if !isPlainIdentifier(c.name) {
                report(file, position, "invalid case name '\(c.name)' in enum '\(e.name)': expected a Swift identifier")
            }
            if !names.insert(c.name).inserted { report(file, position, "duplicate case '\(c.name)' in enum '\(e.name)'") }
            let rawPosition = c.locations["rawValue"]
            var raw: String?
            if e.rawType == .string {
                switch c.rawValue {
                case nil: raw = c.name
                case .string(let text)?: raw = text
                default: report(file, rawPosition, "the raw value of case '\(e.name).\(c.name)' must be a string")
                }
            } else if case .number(let text)? = c.rawValue, let value = Int64(text) {
                if let range = e.rawType.integerRange, !range.contains(value) {
                    report(file, rawPosition, "the raw value \(text) of case '\(e.name).\(c.name)' is out of range for \(e.rawType.rawValue)")
                }
                raw = String(value)
            } else {
                report(file, rawPosition, "case '\(e.name).\(c.name)' needs an integer 'rawValue' (an integer enum's raw values are stored, so they are never implied)")
            }
            if let raw, !rawValues.insert(raw).inserted {
                report(file, rawPosition, "duplicate raw value '\(raw)' in enum '\(e.name)' (case '\(c.name)')")
            }
        }
    }

    mutating func check(_ cls: ClassSpec, in file: SchemaFile) -> ClassSpec {
        var cls = cls
        checkTypeName(cls.className, "class", at: cls.locations["className"], in: file)
        if cls.className.utf8.count > maxClassNameBytes {
            report(file, cls.locations["className"], "class name '\(cls.className)' is longer than \(maxClassNameBytes) bytes")
        }
        if let original = cls.originalName, !isPlainIdentifier(original) {
            report(file, cls.locations["originalName"], "invalid original name '\(original)' of class '\(cls.className)': expected a Swift identifier")
        }
        var names = Set<String>()
        var primaryKey: String?
        for index in cls.properties.indices {
            let p = cls.properties[index]
            let at = p.locations
            let what = "property '\(cls.className).\(p.name)'"
            if !isPlainIdentifier(p.name) {
                report(file, at["name"], "invalid property name '\(p.name)' in class '\(cls.className)': expected a Swift identifier (a letter or '_', then letters, digits or '_'; not a keyword)")
            } else if objectMemberNames.contains(p.name) {
                report(file, at["name"], "\(what) clashes with the member '\(p.name)' of Object; rename it")
            }
            if p.name.utf8.count > maxPropertyNameBytes {
                report(file, at["name"], "\(what) has a name longer than \(maxPropertyNameBytes) bytes")
            }
            if !names.insert(p.name).inserted { report(file, at["name"], "duplicate property '\(p.name)' in class '\(cls.className)'") }
            if let original = p.originalName, !isPlainIdentifier(original) {
                report(file, at["originalName"], "invalid original name '\(original)' of \(what): expected a Swift identifier")
            }
            if p.isPrimaryKey {
                if let first = primaryKey {
                    report(file, at["isPrimaryKey"], "class '\(cls.className)' has two primary keys, '\(first)' and '\(p.name)'")
                } else {
                    primaryKey = p.name
                }
                if cls.isEmbedded {
                    report(file, at["isPrimaryKey"], "\(what) cannot be a primary key: embedded objects have none")
                }
            }
            cls.properties[index] = check(p, what: what, of: cls, in: file)
        }
        return cls
    }

    mutating func check(_ p: PropertySpec, what: String, of cls: ClassSpec, in file: SchemaFile) -> PropertySpec {
        var p = p
        let at = p.locations
        var enumSpec: EnumSpec?
        if let name = p.enumName {
            if let e = enums[name] {
                enumSpec = e
                if at.values["type"] != nil && p.type != e.rawType {
                    report(file, at["type"], "\(what) has type '\(p.type.rawValue)' but enum '\(name)' has raw type '\(e.rawType.rawValue)'")
                }
                p.type = e.rawType
            } else {
                report(file, at["enum"], "\(what) uses enum '\(name)', which is not declared (add it to 'enums')")
            }
        }
        if p.objectClassName != nil && p.type != .object && p.type != .linkingObjects {
            report(file, at["objectClassName"], "\(what) has 'objectClassName' but type '\(p.type.rawValue)'; only object and linkingObjects properties link to a class")
        }
        if p.originProperty != nil && p.type != .linkingObjects {
            report(file, at["originProperty"], "\(what) has 'originProperty' but is not of type linkingObjects")
        }
        switch p.type {
        case .object:
            checkLink(p, what: what, in: file)
        case .linkingObjects:
            checkBacklink(p, what: what, of: cls, in: file)
        default:
            break
        }
        if p.isPrimaryKey {
            if p.collection != nil {
                report(file, at["isPrimaryKey"], "\(what) cannot be a primary key: it is a collection")
            } else if !p.type.canBePrimaryKey {
                report(file, at["isPrimaryKey"], "\(what) of type \(p.type.rawValue) cannot be a primary key (allowed: the integer types, string, uuid, objectId and their optionals)")
            }
        } else if p.isIndexed {
            if p.collection != nil {
                report(file, at["isIndexed"], "\(what) cannot be indexed: it is a collection")
            } else if !p.type.canBeIndexed {
                report(file, at["isIndexed"], "\(what) of type \(p.type.rawValue) cannot be indexed (allowed: bool, the integer types, string, date, uuid, objectId and their optionals)")
            }
        }
        if let defaultValue = p.defaultValue { checkDefault(defaultValue, of: p, enumSpec: enumSpec, what: what, in: file) }
        return p
    }

    mutating func checkLink(_ p: PropertySpec, what: String, in file: SchemaFile) {
        let at = p.locations
        guard let targetName = p.objectClassName else {
            report(file, at["type"], "\(what) is a link (type object) but has no 'objectClassName'")
            return
        }
        guard let target = classes[targetName] else {
            report(file, at["objectClassName"], "\(what) links to class '\(targetName)', which is not declared")
            return
        }
        if p.collection == nil && !p.isOptional {
            report(file, at["type"], "\(what) is a to-one link and must be optional (add \"isOptional\": true)")
        }
        if p.collection == .set && p.isOptional {
            report(file, at["isOptional"], "\(what) is a set of objects and cannot hold nil (remove \"isOptional\")")
        }
        if target.isEmbedded && (p.collection == .set || p.collection == .map) {
            report(file, at["collection"], "\(what) holds embedded objects of '\(targetName)' in a \(p.collection?.rawValue ?? ""); embedded objects live in to-one links and lists only")
        }
    }

    mutating func checkBacklink(_ p: PropertySpec, what: String, of cls: ClassSpec, in file: SchemaFile) {
        let at = p.locations
        if p.collection != nil { report(file, at["collection"], "\(what) is linkingObjects and cannot also be a collection") }
        if p.isOptional { report(file, at["isOptional"], "\(what) is linkingObjects and cannot be optional") }
        guard let originClass = p.objectClassName else {
            report(file, at["type"], "\(what) is linkingObjects but has no 'objectClassName' (the class whose links it follows back)")
            return
        }
        guard let originProperty = p.originProperty else {
            report(file, at["type"], "\(what) is linkingObjects but has no 'originProperty' (the property of '\(originClass)' that links here)")
            return
        }
        guard let origin = classes[originClass] else {
            report(file, at["objectClassName"], "\(what) follows links of class '\(originClass)', which is not declared")
            return
        }
        guard let link = origin[originProperty] else {
            report(file, at["originProperty"], "\(what) follows '\(originClass).\(originProperty)', which is not a property of '\(originClass)'")
            return
        }
        guard link.type == .object, link.objectClassName == cls.className, link.collection == nil || link.collection == .list else {
            report(file, at["originProperty"], "\(what) follows '\(originClass).\(originProperty)', which is not a link or list of '\(cls.className)'")
            return
        }
    }

    mutating func checkDefault(_ value: DefaultValue, of p: PropertySpec, enumSpec: EnumSpec?, what: String, in file: SchemaFile) {
        let at = p.locations
        if p.collection != nil || p.type == .object || p.type == .linkingObjects {
            let key = at.values["default"] != nil ? "default" : "defaultExpression"
            report(file, at[key], "\(what) cannot have a default: collections and links start empty")
            return
        }
        switch value {
        case .expression(let source):
            if source.trimmingCharacters(in: .whitespaces).isEmpty || source.contains("\n") || source.contains("\r") {
                report(file, at["defaultExpression"], "the 'defaultExpression' of \(what) must be one non-empty line of Swift")
            }
        case .literal(let literal):
            if let problem = literalProblem(literal, for: p, enumSpec: enumSpec) {
                report(file, at["default"], "the default of \(what) \(problem)")
            }
        }
    }

    /// Why `literal` cannot be the initial value of `p`, or nil when it can.
    func literalProblem(_ literal: JSONNode.Value, for p: PropertySpec, enumSpec: EnumSpec?) -> String? {
        if case .null = literal { return p.isOptional ? nil : "cannot be null: the property is not optional" }
        if let e = enumSpec {
            guard case .string(let name) = literal, e.cases.contains(where: { $0.name == name }) else {
                return "must name a case of enum '\(e.name)' (" + e.cases.map { "\"\($0.name)\"" }.joined(separator: ", ") + ")"
            }
            return nil
        }
        switch (p.type, literal) {
        case (.bool, .bool), (.string, .string), (.float, .number), (.double, .number), (.date, .number):
            return nil
        case (_, .number(let text)) where p.type.integerRange != nil:
            guard let value = Int64(text) else { return "must be an integer, not \(text)" }
            if let range = p.type.integerRange, !range.contains(value) { return "\(text) is out of range for \(p.type.rawValue)" }
            return nil
        case (.decimal, .number(let text)):
            return Int64(text) == nil ? "must be an integer (use 'defaultExpression' for a fraction, for example Decimal(string: \"1.5\") ?? 0)" : nil
        case (.data, _), (.uuid, _), (.objectId, _), (.decimal, _):
            return "cannot be a JSON literal for type \(p.type.rawValue); use 'defaultExpression' (for example UUID(), ObjectId(), Data())"
        default:
            let expected: String
            switch p.type {
            case .bool: expected = "true or false"
            case .string: expected = "a string"
            case .date: expected = "a number (seconds since 1970)"
            default: expected = "a number"
            }
            return "must be \(expected) for type \(p.type.rawValue)"
        }
    }
}
