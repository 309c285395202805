import Foundation
import Lattice

/// Writes objects of a dynamic handle as JSON, by their class's stored schema (the values of
/// `lattice export`, `query --json` and `watch --json`).
///
/// Values: numbers and booleans as JSON numbers and booleans (NaN and the infinities as the strings
/// `"NaN"`, `"Infinity"`, `"-Infinity"`); `Data` as base64; a `Date` as ISO 8601 UTC text when it is a
/// whole second of the years 1 to 9999, otherwise as a number of seconds since 2001-01-01T00:00:00Z (the
/// reference date it is stored against, so the value is exact); `UUID`, `ObjectId` and `Decimal` as
/// strings. A link is the linked object's primary key, or its object key when its class has none; an
/// embedded object is a nested object; Lists and MutableSets are arrays, Maps objects. Linking objects
/// are computed from links and left out.
struct ValueEncoder {
    /// Formats whole-second dates; one per encoder (formatters are costly to make).
    private let iso8601: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter
    }()

    /// `{"property": value, ...}` for every stored property of `object`, in storage order.
    func object(_ object: DynamicObject, into out: inout String) {
        let cls = object.objectSchema
        out.append("{")
        var first = true
        for p in cls.properties {
            if !first { out.append(",") }
            first = false
            JSONText.string(p.name, into: &out)
            out.append(":")
            value(object[p.name], p, into: &out)
        }
        out.append("}")
    }

    func object(_ object: DynamicObject) -> String {
        var out = ""
        self.object(object, into: &out)
        return out
    }

    /// The value of property `p`: a single value or a collection.
    func value(_ raw: Any?, _ p: Property, into out: inout String) {
        guard let value = flatten(raw) else { return out.append("null") }
        switch p.collection {
        case nil:
            single(value, p, into: &out)
        case .list?, .set?:
            out.append("[")
            for (i, element) in elements(value).enumerated() {
                if i > 0 { out.append(",") }
                if let element = flatten(element) { single(element, p, into: &out) } else { out.append("null") }
            }
            out.append("]")
        case .map?:
            out.append("{")
            for (i, entry) in elements(value).enumerated() {
                if i > 0 { out.append(",") }
                let parts = Mirror(reflecting: entry).children.map(\.value)
                JSONText.string(parts.first.map { "\($0)" } ?? "", into: &out)
                out.append(":")
                if parts.count == 2, let v = flatten(parts[1]) { single(v, p, into: &out) } else { out.append("null") }
            }
            out.append("}")
        }
    }

    /// One value (not nil) of property `p`'s type.
    func single(_ value: Any, _ p: Property, into out: inout String) {
        switch value {
        case let v as DynamicObject: link(v, into: &out)
        case let v as Bool: out.append(v ? "true" : "false")
        case let v as Int: out.append(String(v))
        case let v as Int8: out.append(String(v))
        case let v as Int16: out.append(String(v))
        case let v as Int32: out.append(String(v))
        case let v as Int64: out.append(String(v))
        case let v as Float: JSONText.number(v, into: &out)
        case let v as Double: JSONText.number(v, into: &out)
        case let v as String: JSONText.string(v, into: &out)
        case let v as Data: JSONText.string(v.base64EncodedString(), into: &out)
        case let v as Date: date(v, into: &out)
        case let v as UUID: JSONText.string(v.uuidString, into: &out)
        case let v as Decimal: JSONText.string(v.description, into: &out)
        case let v as ObjectId: JSONText.string(v.description, into: &out)
        default: JSONText.string("\(value)", into: &out)
        }
    }

    /// A linked object: embedded ones whole, others by primary key or object key.
    func link(_ target: DynamicObject, into out: inout String) {
        let cls = target.objectSchema
        if cls.isEmbedded { return object(target, into: &out) }
        if let pk = cls.primaryKeyProperty, let key = flatten(target[pk.name]) {
            single(key, pk, into: &out)
        } else {
            out.append(target.objectKey.map(String.init) ?? "null")
        }
    }

    private func date(_ date: Date, into out: inout String) {
        let t = date.timeIntervalSinceReferenceDate
        // Whole seconds of the years 1 to 9999 print exactly as ISO 8601.
        if t.rounded(.down) == t, t >= -63_113_904_000, t < 252_423_993_600 {
            JSONText.string(iso8601.string(from: date), into: &out)
        } else {
            JSONText.number(t, into: &out)
        }
    }
}

/// A value with every level of `Optional` removed; nil for none.
func flatten(_ value: Any?) -> Any? {
    guard let value else { return nil }
    if let optional = value as? any OptionalValue { return optional.wrappedAny }
    return value
}

/// `Optional` of any wrapped type, seen through `Any`.
protocol OptionalValue {
    /// The wrapped value (flattened), or nil.
    var wrappedAny: Any? { get }
}

extension Optional: OptionalValue {
    var wrappedAny: Any? { flatMap { flatten($0) } }
}

/// The elements of a List, MutableSet or Map (its `(key, value)` pairs), or none for other values.
func elements(_ value: Any) -> [Any] {
    guard let sequence = value as? any Sequence else { return [] }
    return array(of: sequence)
}

private func array<S: Sequence>(of sequence: S) -> [Any] { sequence.map { $0 } }
