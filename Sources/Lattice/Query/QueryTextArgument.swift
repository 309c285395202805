import Foundation

/// A predicate argument given as text, converted to the type of the property it is compared with.
///
/// For values that arrive as text (a command line, a URL, a form) when the caller does not know the
/// property's type: `filter("date > $0 AND age >= $1", QueryTextArgument("2024-01-01T00:00:00Z"),
/// QueryTextArgument("18"))` compares a `Date` and an `Int`. The text must spell a value of the type:
///
/// | Property type | Text |
/// | --- | --- |
/// | `Bool` | `true`, `false` |
/// | integers | a decimal integer in the type's range |
/// | `Float`, `Double` | a number (`1.5`, `-2e3`, `nan`, `inf`) |
/// | `Decimal` | a decimal number |
/// | `String` | any text, as it is |
/// | `Data` | any text, as its UTF-8 bytes |
/// | `Date` | ISO 8601: `2024-01-31`, `2024-01-31T12:00:00Z`, with fractional seconds or an offset |
/// | `UUID`, `ObjectId` | their usual text forms |
///
/// Text that does not spell a value of the type, or a comparison with no property (links, constants),
/// throws ``LatticeError/invalidQuery(message:)`` naming the property and the column.
public struct QueryTextArgument: Sendable, Hashable, CustomStringConvertible {
    /// The text as given.
    public let text: String

    /// An argument that takes the type of the property it is compared with.
    public init(_ text: String) { self.text = text }

    /// The text, quoted.
    public var description: String { "'\(text)'" }

    /// The text as a constant of `type`, or nil when it does not spell one.
    func value(as type: PropertyType) -> QueryValue? {
        let t = text.trimmingCharacters(in: .whitespaces)
        switch type {
        case .bool:
            switch t.lowercased() {
            case "true": return .bool(true)
            case "false": return .bool(false)
            default: return nil
            }
        case .int, .int64: return Int64(t).map(QueryValue.int)
        case .int8: return Int8(t).map { .int(Int64($0)) }
        case .int16: return Int16(t).map { .int(Int64($0)) }
        case .int32: return Int32(t).map { .int(Int64($0)) }
        case .float, .double: return Double(t).map(QueryValue.double)
        case .decimal:
            // `Decimal(string:)` accepts a numeric prefix ("12abc"); require a number throughout.
            guard Double(t) != nil, let d = Decimal(string: t, locale: Locale(identifier: "en_US_POSIX")) else { return nil }
            return .decimal(d)
        case .string: return .string(text)
        case .data: return .data(Data(text.utf8))
        case .date: return QueryTextArgument.date(t).map(QueryValue.date)
        case .uuid: return UUID(uuidString: t).map(QueryValue.uuid)
        case .objectId: return ObjectId(string: t).map(QueryValue.objectId)
        case .object, .linkingObjects: return nil
        }
    }

    /// An ISO 8601 date, date and time, or date and time with fractional seconds; nil otherwise.
    static func date(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        for options: ISO8601DateFormatter.Options in [[.withInternetDateTime, .withFractionalSeconds], [.withInternetDateTime], [.withFullDate]] {
            formatter.formatOptions = options
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
}
