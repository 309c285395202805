import Foundation
import Lattice
import LatticeSchemaFile

/// A link to an object the import has not created yet: the property is set once every row is in.
struct UnresolvedLink: Error {}

/// Reads values written by ``ValueEncoder`` back into the Swift values the dynamic API takes, by the
/// stored schema of the receiving file. Links resolve against the file (primary keys) and the objects the
/// import created (object keys of the export).
struct ValueDecoder {
    let lattice: Lattice
    /// Objects this import created for classes without a primary key, by class and the object key they
    /// had in the export. Only classes that some link targets are kept.
    var createdByKey: [String: [Int64: DynamicObject]] = [:]
    private let iso8601 = ISO8601DateFormatter()

    init(lattice: Lattice) { self.lattice = lattice }

    /// The values of a row's `value` object for class `cls`, with the properties whose links name
    /// objects not created yet left apart (unless `final`, when such a link fails).
    func values(_ node: JSONNode, _ cls: ObjectSchema) throws -> (values: [String: Any], deferred: [(Property, JSONNode)]) {
        guard case let .object(members) = node.value else {
            throw CommandFailure.failure("the value of a '\(cls.className)' object must be an object, found \(node.kindDescription).")
        }
        var values: [String: Any] = [:]
        var deferred: [(Property, JSONNode)] = []
        for member in members {
            guard let p = cls[member.key], p.type != .linkingObjects else {
                throw CommandFailure.failure("'\(cls.className)' has no stored property '\(member.key)'.")
            }
            do {
                values[p.name] = try value(member.value, p, cls, final: false)
            } catch is UnresolvedLink {
                deferred.append((p, member.value))
            }
        }
        return (values, deferred)
    }

    /// The value of property `p` of class `cls`.
    func value(_ node: JSONNode, _ p: Property, _ cls: ObjectSchema, final: Bool) throws -> Any {
        if case .null = node.value {
            guard p.isOptional || p.collection != nil else {
                throw CommandFailure.failure("'\(cls.className).\(p.name)' cannot be null.")
            }
            return Optional<Any>.none as Any
        }
        switch (p.collection, node.value) {
        case (nil, _): return try single(node, p, cls, final: final)
        case let (.list?, .array(items)), let (.set?, .array(items)):
            return try items.map { item -> Any in
                if case .null = item.value, p.isOptional { return Optional<Any>.none as Any }
                return try single(item, p, cls, final: final)
            }
        case let (.map?, .object(members)):
            var map: [String: Any] = [:]
            for m in members {
                if case .null = m.value.value { map[m.key] = Optional<Any>.none as Any } else { map[m.key] = try single(m.value, p, cls, final: final) }
            }
            return map
        default:
            throw mismatch(p, cls, node, expected: p.collection == .map ? "an object" : "an array")
        }
    }

    /// One value of `p`'s type (an element for collections).
    private func single(_ node: JSONNode, _ p: Property, _ cls: ObjectSchema, final: Bool) throws -> Any {
        func fail(_ expected: String) -> CommandFailure { mismatch(p, cls, node, expected: expected) }
        func number<T>(_ parse: (String) -> T?, _ name: String) throws -> T {
            guard case let .number(text) = node.value, let v = parse(text) else { throw fail("an \(name)") }
            return v
        }
        func floating<T: BinaryFloatingPoint & LosslessStringConvertible>(_: T.Type) throws -> T {
            switch node.value {
            case let .number(text): if let v = T(text) { return v }
            case .string("NaN"): return .nan
            case .string("Infinity"): return .infinity
            case .string("-Infinity"): return -.infinity
            default: break
            }
            throw fail("a number")
        }
        func text(_ expected: String) throws -> String {
            guard case let .string(s) = node.value else { throw fail(expected) }
            return s
        }
        switch p.type {
        case .bool:
            guard case let .bool(b) = node.value else { throw fail("true or false") }
            return b
        case .int: return try number({ Int($0) }, "Int")
        case .int8: return try number({ Int8($0) }, "Int8")
        case .int16: return try number({ Int16($0) }, "Int16")
        case .int32: return try number({ Int32($0) }, "Int32")
        case .int64: return try number({ Int64($0) }, "Int64")
        case .float: return try floating(Float.self)
        case .double: return try floating(Double.self)
        case .string: return try text("a string")
        case .data:
            guard let data = Data(base64Encoded: try text("base64 text")) else { throw fail("base64 text") }
            return data
        case .date:
            if case let .number(n) = node.value, let t = Double(n) { return Date(timeIntervalSinceReferenceDate: t) }
            guard let date = parseDate(try text("an ISO 8601 date")) else { throw fail("an ISO 8601 date") }
            return date
        case .uuid:
            guard let uuid = UUID(uuidString: try text("a UUID")) else { throw fail("a UUID") }
            return uuid
        case .objectId:
            guard let oid = ObjectId(string: try text("an ObjectId")) else { throw fail("an ObjectId (24 hexadecimal digits)") }
            return oid
        case .decimal:
            let t: String
            switch node.value {
            case let .string(s): t = s
            case let .number(n): t = n
            default: throw fail("a decimal number")
            }
            guard Double(t) != nil, let d = Decimal(string: t, locale: Locale(identifier: "en_US_POSIX")) else { throw fail("a decimal number") }
            return d
        case .object:
            return try link(node, p, cls, final: final)
        case .linkingObjects:
            throw CommandFailure.failure("'\(cls.className).\(p.name)' is computed from links and cannot be imported.")
        }
    }

    /// A linked object: an embedded one as the dictionary that creates it; others found by primary key
    /// or by the object key they had in the export.
    private func link(_ node: JSONNode, _ p: Property, _ cls: ObjectSchema, final: Bool) throws -> Any {
        guard let targetName = p.objectClassName, let target = lattice.schema[targetName] else {
            throw CommandFailure.failure("'\(cls.className).\(p.name)' links to a class the file does not have.")
        }
        if target.isEmbedded {
            guard case let .object(members) = node.value else { throw mismatch(p, cls, node, expected: "an object") }
            var values: [String: Any] = [:]
            for m in members {
                guard let q = target[m.key], q.type != .linkingObjects else {
                    throw CommandFailure.failure("'\(target.className)' has no stored property '\(m.key)'.")
                }
                values[q.name] = try value(m.value, q, target, final: final)
            }
            return values
        }
        let found: DynamicObject?
        let described: String
        if let pk = target.primaryKeyProperty {
            let key = try single(node, pk, target, final: final)
            found = try lattice.dynamicObject(ofType: targetName, forPrimaryKey: key)
            described = "primary key \(flatten(key).map { "\($0)" } ?? "nil")"
        } else {
            guard case let .number(text) = node.value, let key = Int64(text) else {
                throw mismatch(p, cls, node, expected: "the object key of a '\(targetName)' object")
            }
            found = createdByKey[targetName]?[key]
            described = "object key \(key) in the export"
        }
        if let found { return found }
        if final {
            throw CommandFailure.failure("'\(cls.className).\(p.name)' links to the '\(targetName)' object with \(described), "
                + "which is neither in the file nor in the import.")
        }
        throw UnresolvedLink()
    }

    /// An ISO 8601 date: with time and fractional seconds, with time, or a date alone (midnight UTC).
    func parseDate(_ text: String) -> Date? {
        for options: ISO8601DateFormatter.Options in [[.withInternetDateTime, .withFractionalSeconds], [.withInternetDateTime], [.withFullDate]] {
            iso8601.formatOptions = options
            if let date = iso8601.date(from: text) { return date }
        }
        return nil
    }

    private func mismatch(_ p: Property, _ cls: ObjectSchema, _ node: JSONNode, expected: String) -> CommandFailure {
        var found = ""
        JSONText.node(node, into: &found)
        if found.count > 40 { found = String(found.prefix(40)) + "..." }
        return CommandFailure.failure("'\(cls.className).\(p.name)' expects \(expected), found \(found).")
    }
}
