import Foundation
import Synchronization

/// A 12-byte unique identifier in the style of MongoDB's ObjectId: a 4-byte big-endian timestamp
/// (seconds since 1970), 5 random bytes fixed per process, and a 3-byte counter.
///
/// Ids generated later in time sort after earlier ones.
public struct ObjectId: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The 12 bytes.
    public let bytes: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8)

    private static let processUnique: [UInt8] = (0..<5).map { _ in UInt8.random(in: 0...255) }
    private static let counter = Mutex(UInt32.random(in: 0...0xFF_FFFF))

    /// A new, unique id.
    public init() {
        self.init(at: Date(), middle: ObjectId.processUnique)
    }

    /// A new id for the moment `timestamp` (to the second), whose middle five bytes are the low three
    /// bytes of `machineId` and the low two of `processId` (big-endian) instead of the process's random
    /// ones; the last three are the counter, as for ``init()``.
    public init(timestamp: Date, machineId: Int, processId: Int32) {
        let machine = UInt32(truncatingIfNeeded: machineId), process = UInt16(truncatingIfNeeded: processId)
        self.init(at: timestamp, middle: [UInt8(truncatingIfNeeded: machine >> 16), UInt8(truncatingIfNeeded: machine >> 8),
                                          UInt8(truncatingIfNeeded: machine), UInt8(truncatingIfNeeded: process >> 8),
                                          UInt8(truncatingIfNeeded: process)])
    }

    /// The seconds of `date` since 1970 (held to what four bytes hold), the five `middle` bytes, then the
    /// next count.
    private init(at date: Date, middle p: [UInt8]) {
        let interval = date.timeIntervalSince1970
        let seconds = interval.isNaN ? 0 : UInt32(Swift.min(Swift.max(interval.rounded(.down), 0), Double(UInt32.max)))
        let count = ObjectId.counter.withLock { c -> UInt32 in
            c = (c &+ 1) & 0xFF_FFFF
            return c
        }
        bytes = (UInt8(seconds >> 24), UInt8(truncatingIfNeeded: seconds >> 16), UInt8(truncatingIfNeeded: seconds >> 8),
                 UInt8(truncatingIfNeeded: seconds), p[0], p[1], p[2], p[3], p[4],
                 UInt8(truncatingIfNeeded: count >> 16), UInt8(truncatingIfNeeded: count >> 8), UInt8(truncatingIfNeeded: count))
    }

    /// The all-zero id, which `init()` never makes: the placeholder an instance standing for a stored
    /// object holds (see `_Persistable._latticePlaceholder`), made without the clock or the lock.
    public static var _latticePlaceholder: ObjectId { ObjectId(zeroes: ()) }

    private init(zeroes: ()) { bytes = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) }

    /// An id from exactly 12 bytes; nil for any other length.
    public init?<C: Collection>(bytes: C) where C.Element == UInt8 {
        guard bytes.count == 12 else { return nil }
        let b = Array(bytes)
        self.bytes = (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11])
    }

    /// An id from its 24-character hexadecimal form; nil when malformed.
    public init?(string: String) {
        let chars = Array(string.utf8)
        guard chars.count == 24 else { return nil }
        var out: [UInt8] = []
        for i in stride(from: 0, to: 24, by: 2) {
            guard let byte = UInt8(String(decoding: chars[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
            out.append(byte)
        }
        self.init(bytes: out)
    }

    /// A new, unique id (Realm's name for ``init()``).
    public static func generate() -> ObjectId { ObjectId() }

    /// An id from a 24-character hexadecimal literal (`ObjectId("6058f12682b2fbb1f334ef1d")`), as Realm's
    /// initializer takes it; a malformed literal is a programming error and stops with a message. For
    /// text read at run time use ``init(string:)``, which returns nil instead.
    public init(_ literal: StaticString) {
        let text = literal.withUTF8Buffer { String(decoding: $0, as: UTF8.self) }
        guard let id = ObjectId(string: text) else {
            preconditionFailure("'\(text)' is not an ObjectId: 24 hexadecimal digits are needed.")
        }
        self = id
    }

    /// The bytes as an array.
    public var byteArray: [UInt8] { withUnsafeBytes(of: bytes) { Array($0) } }

    /// The 24-character lowercase hexadecimal form.
    public var stringValue: String {
        byteArray.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    /// The moment encoded in the first four bytes.
    public var timestamp: Date {
        let b = byteArray
        let s = UInt32(b[0]) << 24 | UInt32(b[1]) << 16 | UInt32(b[2]) << 8 | UInt32(b[3])
        return Date(timeIntervalSince1970: TimeInterval(s))
    }

    /// Same as ``stringValue``.
    public var description: String { stringValue }

    /// Byte-wise equality.
    public static func == (a: ObjectId, b: ObjectId) -> Bool { a.byteArray == b.byteArray }

    /// Hashes the bytes.
    public func hash(into hasher: inout Hasher) { hasher.combine(byteArray) }

    /// Byte-wise (and so creation-time) order.
    public static func < (a: ObjectId, b: ObjectId) -> Bool { a.byteArray.lexicographicallyPrecedes(b.byteArray) }
}
