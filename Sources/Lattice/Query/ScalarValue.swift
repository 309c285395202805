import Foundation

/// A decoded property value in the form queries compare, sort and aggregate: integers and Bool as
/// `int`, Float/Double/Date as `double`, String/Data/UUID/ObjectId as their bytes (so strings order by
/// Unicode scalar), Decimal as `decimal`. nil sorts first.
enum ScalarValue: Hashable {
    case null
    case int(Int64)
    case double(Double)
    case decimal(Decimal)
    case bytes([UInt8])

    /// Decodes the payload of a property (an absent payload is the type's default).
    @inline(__always)
    static func decode(_ payload: UnsafeRawBufferPointer?, _ c: ScalarColumn) -> ScalarValue {
        let bytes = payload ?? UnsafeRawBufferPointer(start: nil, count: 0)
        if c.isOptional && bytes.isEmpty { return .null }
        let value = c.hasMarker ? UnsafeRawBufferPointer(rebasing: bytes.dropFirst()) : bytes
        switch c.kind {
        case .bool: return .int(Bool._latticeDecode(value) ? 1 : 0)
        case .integer: return .int(Int64._latticeDecode(value))
        case .float: return .double(Double(Float._latticeDecode(value)))
        case .double, .date: return .double(Double._latticeDecode(value))
        case .decimal: return .decimal(Decimal._latticeDecode(value))
        case .string, .data, .uuid, .objectId: return .bytes(Array(value))
        }
    }

    /// The value as the property's Swift type (for aggregates).
    func swiftValue(_ kind: ScalarKind) -> Any? {
        switch (self, kind) {
        case (.null, _): return nil
        case let (.int(i), .bool): return i != 0
        case let (.int(i), _): return i
        case let (.double(d), .date): return Date(timeIntervalSinceReferenceDate: d)
        case let (.double(d), .float): return Float(d)
        case let (.double(d), _): return d
        case let (.decimal(d), _): return d
        case let (.bytes(b), .string): return String(decoding: b, as: UTF8.self)
        case let (.bytes(b), .data): return Data(b)
        case let (.bytes(b), .uuid): return UUID._latticeDecode(b.withUnsafeBytes { UnsafeRawBufferPointer($0) })
        case let (.bytes(b), _): return ObjectId(bytes: b)
        }
    }

    /// Total order: nil first, numbers numerically (Int against Double exactly), bytes lexicographically.
    static func compare(_ a: ScalarValue, _ b: ScalarValue) -> Int {
        switch (a, b) {
        case (.null, .null): return 0
        case (.null, _): return -1
        case (_, .null): return 1
        case let (.int(x), .int(y)): return x < y ? -1 : x == y ? 0 : 1
        case let (.int(x), .double(y)): return compareIntDouble(x, y) ?? -1
        case let (.double(x), .int(y)): return -(compareIntDouble(y, x) ?? -1)
        case let (.double(x), .double(y)): return compareDoubles(x, y)
        case let (.decimal(x), .double(y)): return compareDecimalDouble(x, y)
        case let (.double(x), .decimal(y)): return -compareDecimalDouble(y, x)
        case let (.decimal(x), _): return compareDecimals(x, b.decimalValue)
        case let (_, .decimal(y)): return compareDecimals(a.decimalValue, y)
        case let (.bytes(x), .bytes(y)): return compareBytes(x, y)
        case (.bytes, _): return 1
        case (_, .bytes): return -1
        }
    }

    /// A NaN Double or Decimal (unordered in predicates).
    var isNaN: Bool {
        switch self {
        case let .double(d): return d.isNaN
        case let .decimal(d): return d.isNaN
        default: return false
        }
    }

    var decimalValue: Decimal {
        switch self {
        case .null: return 0
        case let .int(i): return Decimal(i)
        case let .double(d): return decimalFromDouble(d) ?? .nan
        case let .decimal(d): return d
        case .bytes: return 0
        }
    }
}

/// Numeric order with NaN first (a total order, so sorting is deterministic).
@inline(__always)
func compareDoubles(_ x: Double, _ y: Double) -> Int {
    if x < y { return -1 }
    if x > y { return 1 }
    if x == y { return 0 }
    return x.isNaN ? (y.isNaN ? 0 : -1) : 1
}

/// Exact comparison of an integer with a double; nil when `d` is NaN.
@inline(__always)
func compareIntDouble(_ i: Int64, _ d: Double) -> Int? {
    if d.isNaN { return nil }
    if d >= 9_223_372_036_854_775_808.0 { return -1 }
    if d < -9_223_372_036_854_775_808.0 { return 1 }
    let floor = d.rounded(.down)
    let f = Int64(floor)
    if i < f { return -1 }
    if i > f { return 1 }
    return floor == d ? 0 : -1
}

/// A Decimal against a Double: as Decimals when the Double converts, otherwise (infinities, magnitudes
/// Foundation does not convert, such as 1e300 or 5e-324) through the Decimal's nearest Double, so +inf
/// is above every Decimal and -inf below. NaN first, as in `compareDecimals`.
func compareDecimalDouble(_ x: Decimal, _ y: Double) -> Int {
    if let d = decimalFromDouble(y) { return compareDecimals(x, d) }
    if x.isNaN || y.isNaN { return x.isNaN && y.isNaN ? 0 : (x.isNaN ? -1 : 1) }
    return compareDoubles(NSDecimalNumber(decimal: x).doubleValue, y)
}

/// The Decimal of a Double, or nil when Foundation has none for it: `Decimal(_:)` traps on infinities
/// and gives NaN for NaN and for very large or very small magnitudes (such as 1e300 or 5e-324).
func decimalFromDouble(_ d: Double) -> Decimal? {
    guard d.isFinite else { return nil }
    let value = Decimal(d)
    return value.isNaN ? nil : value
}

func compareDecimals(_ x: Decimal, _ y: Decimal) -> Int {
    if x.isNaN || y.isNaN { return x.isNaN == y.isNaN ? 0 : (x.isNaN ? -1 : 1) }
    return x < y ? -1 : x == y ? 0 : 1
}

@inline(__always)
func compareBytes<A: Collection, B: Collection>(_ x: A, _ y: B) -> Int where A.Element == UInt8, B.Element == UInt8 {
    var i = x.makeIterator()
    var j = y.makeIterator()
    while true {
        switch (i.next(), j.next()) {
        case (nil, nil): return 0
        case (nil, _): return -1
        case (_, nil): return 1
        case let (a?, b?): if a != b { return a < b ? -1 : 1 }
        }
    }
}

/// Byte-level string operators (UTF-8, so Unicode scalar semantics) and `LIKE`.
enum ByteMatching {
    static func hasPrefix(_ s: UnsafeRawBufferPointer, _ p: [UInt8]) -> Bool {
        s.count >= p.count && equal(s.baseAddress, p)
    }

    static func hasSuffix(_ s: UnsafeRawBufferPointer, _ p: [UInt8]) -> Bool {
        s.count >= p.count && equal(s.baseAddress.map { $0 + (s.count - p.count) }, p)
    }

    /// Whether `p` occurs in `s`: `memchr` finds each candidate of the first byte (a vectorized scan),
    /// `memcmp` checks the rest.
    static func contains(_ s: UnsafeRawBufferPointer, _ p: [UInt8]) -> Bool {
        if p.isEmpty { return true }
        guard s.count >= p.count, let base = s.baseAddress else { return false }
        return p.withUnsafeBytes { p in
            guard let pattern = p.baseAddress else { return true }
            let first = Int32(p[0]), rest = p.count - 1
            // The last position the pattern can start at, plus one.
            let end = base + (s.count - rest)
            var at = base
            while at < end, let hit = memchr(at, first, end - at) {
                if rest == 0 || memcmp(hit + 1, pattern + 1, rest) == 0 { return true }
                at = UnsafeRawPointer(hit) + 1
            }
            return false
        }
    }

    /// Whether the `p.count` bytes at `start` are `p` (an empty `p` matches anything, even no bytes).
    private static func equal(_ start: UnsafeRawPointer?, _ p: [UInt8]) -> Bool {
        guard !p.isEmpty else { return true }
        guard let start else { return false }
        return p.withUnsafeBytes { q in q.baseAddress.map { memcmp(start, $0, q.count) == 0 } ?? true }
    }

    /// `LIKE`: `?` matches one Unicode scalar, `*` any run (greedy with backtracking to the last `*`).
    static func like(_ text: [Unicode.Scalar], _ pattern: [Unicode.Scalar]) -> Bool {
        var t = 0, p = 0
        var star = -1, mark = 0
        while t < text.count {
            if p < pattern.count && (pattern[p] == "?" || (pattern[p] != "*" && pattern[p] == text[t])) {
                t += 1
                p += 1
            } else if p < pattern.count && pattern[p] == "*" {
                star = p
                mark = t
                p += 1
            } else if star >= 0 {
                p = star + 1
                mark += 1
                t = mark
            } else {
                return false
            }
        }
        while p < pattern.count && pattern[p] == "*" { p += 1 }
        return p == pattern.count
    }
}
