import Foundation

/// A type that can be the value of a `@Persisted` property.
///
/// Lattice conforms every supported type and their optionals; conform your raw-value
/// enums through ``PersistableEnum``. The underscored requirements are the storage codec and are not
/// meant to be implemented by hand. The type itself may be used from any isolation (its conformance is
/// not isolated to an actor): observers delivered on a queue rebuild collections of it there.
public protocol _Persistable: SendableMetatype {
    /// The storage type.
    static var _latticeType: PropertyType { get }
    /// Whether nil is a value of the type.
    static var _latticeIsOptional: Bool { get }
    /// The value of a property declared without an initial value.
    static var _latticeDefault: Self { get }
    /// A value that costs nothing to make, held by an instance standing for a stored object (which reads
    /// its record instead); the default unless making that is costly.
    static var _latticePlaceholder: Self { get }
    /// Decodes a record payload (never fails: malformed bytes decode to a default).
    static func _latticeDecode(_ payload: UnsafeRawBufferPointer) -> Self
    /// Appends this value's record payload.
    func _latticeEncode(into out: inout [UInt8])
    /// Appends an order-preserving index key (memcmp order is value order).
    func _latticeKey(into out: inout [UInt8])
    /// Appends the index key of a stored payload: the key of the value it holds, taken from the payload
    /// itself where the type reads some payloads as another value (an enum's raw value of no case).
    static func _latticeKey(fromPayload payload: UnsafeRawBufferPointer, into out: inout [UInt8])
    /// Converts a dynamically typed value (from `create(_:value:)`); nil when the type is wrong.
    static func _latticeCast(_ value: Any) -> Self?
    /// Stores `_latticeCast(value)` at `pointer` (initialized memory of this type); false when the type is wrong.
    static func _latticeAssign(_ value: Any, to pointer: UnsafeMutableRawPointer) -> Bool
    /// Appends the payload of `_latticeCast(value)`; false when the type is wrong.
    static func _latticeEncodeAny(_ value: Any, into out: inout [UInt8]) -> Bool
    /// The value as `Any`, with nil for an empty optional.
    var _latticeAnyValue: Any? { get }

    // Relationship hooks: value types use the defaults; links and collections need the handle.

    /// Reads the property of a managed object.
    static func _latticeGet(_ owner: Object, column: Int) -> Self
    /// Writes the property of a managed object (inside a write transaction).
    static func _latticeSet(_ owner: Object, column: Int, _ value: Self)
    /// Appends the record payload of a value being added; a link first adds its unmanaged target.
    func _latticeEncode(into out: inout [UInt8], adding lattice: Lattice) throws
    /// Called once the object holding this value was added: collections store their elements here,
    /// replacing the stored ones when `replacing` (an update of a stored object; a new object has none).
    func _latticeDidAdd(_ owner: Object, column: Int, replacing: Bool) throws
    /// Decodes a collection element (object elements are materialized through the handle).
    static func _latticeElement(_ payload: UnsafeRawBufferPointer, _ lattice: Lattice) -> Self
    /// The linked class, for links and collections of objects.
    static var _latticeObjectType: Object.Type? { get }
    /// The collection kind, for ``List``, ``MutableSet`` and ``Map``.
    static var _latticeCollection: CollectionKind? { get }
}

extension _Persistable {
    /// The default.
    @inlinable
    public static var _latticePlaceholder: Self { _latticeDefault }
    /// Decodes the record payload.
    @inlinable
    public static func _latticeGet(_ owner: Object, column: Int) -> Self { owner._read(column: column) }
    /// Encodes into the record.
    public static func _latticeSet(_ owner: Object, column: Int, _ value: Self) { owner._write(column: column, value) }
    /// The plain payload.
    public func _latticeEncode(into out: inout [UInt8], adding lattice: Lattice) throws { _latticeEncode(into: &out) }
    /// Nothing to store outside the record.
    public func _latticeDidAdd(_ owner: Object, column: Int, replacing: Bool) throws {}
    /// The plain payload.
    public static func _latticeElement(_ payload: UnsafeRawBufferPointer, _ lattice: Lattice) -> Self { _latticeDecode(payload) }
    /// The key of the decoded value.
    public static func _latticeKey(fromPayload payload: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        _latticeDecode(payload)._latticeKey(into: &out)
    }
    /// Not a link.
    public static var _latticeObjectType: Object.Type? { nil }
    /// Not a collection.
    public static var _latticeCollection: CollectionKind? { nil }
    /// `_latticeCast`, stored in place. A requirement, so that each type's own version runs: in code
    /// generic over the type, the `Self?` in between would be looked up in the runtime's metadata cache
    /// on every call.
    public static func _latticeAssign(_ value: Any, to pointer: UnsafeMutableRawPointer) -> Bool {
        guard let v = _latticeCast(value) else { return false }
        pointer.assumingMemoryBound(to: Self.self).pointee = v
        return true
    }
    /// `_latticeCast`, encoded: a requirement for the same reason as ``_latticeAssign(_:to:)``.
    public static func _latticeEncodeAny(_ value: Any, into out: inout [UInt8]) -> Bool {
        guard let v = _latticeCast(value) else { return false }
        v._latticeEncode(into: &out)
        return true
    }
}

/// Marks the Optionals of single-value types (see `PropertyInfo.isSingleValue`).
protocol _OptionalScalar {}
extension Optional: _OptionalScalar where Wrapped: _PersistableBase {}

/// A non-optional persistable type; its `Optional` is persistable too.
public protocol _PersistableBase: _Persistable {
    /// Whether the payload may be empty (String, Data): then an optional's payload needs a marker byte.
    static var _latticeMayBeEmpty: Bool { get }
    /// Reads an optional property of a managed object (links override this).
    static func _latticeGetOptional(_ owner: Object, column: Int) -> Self?
    /// Writes an optional property of a managed object (links override this).
    static func _latticeSetOptional(_ owner: Object, column: Int, _ value: Self?)
    /// Decodes the non-empty payload of an optional holding this type: nil when it names no value of the
    /// type (an enum's raw value that no case has), where ``_latticeDecode(_:)`` falls back to a default.
    static func _latticeDecodeIfValid(_ payload: UnsafeRawBufferPointer) -> Self?
    /// ``_latticeElement(_:_:)`` for an element of a collection of optionals: nil as ``_latticeDecodeIfValid(_:)`` gives it.
    static func _latticeElementIfValid(_ payload: UnsafeRawBufferPointer, _ lattice: Lattice) -> Self?
}

extension _PersistableBase {
    /// Non-optional.
    public static var _latticeIsOptional: Bool { false }
    /// Only String and Data payloads can be empty.
    public static var _latticeMayBeEmpty: Bool { false }
    /// Itself.
    public var _latticeAnyValue: Any? { self }
    /// Decodes the record payload.
    public static func _latticeGetOptional(_ owner: Object, column: Int) -> Self? { owner._read(column: column) as Self? }
    /// Encodes into the record.
    public static func _latticeSetOptional(_ owner: Object, column: Int, _ value: Self?) { owner._write(column: column, value) }
    /// Every payload is a value: the plain decode.
    @inlinable
    public static func _latticeDecodeIfValid(_ payload: UnsafeRawBufferPointer) -> Self? { _latticeDecode(payload) }
    /// Every payload is a value: the plain element.
    @inlinable
    public static func _latticeElementIfValid(_ payload: UnsafeRawBufferPointer, _ lattice: Lattice) -> Self? {
        _latticeElement(payload, lattice)
    }
}

extension Optional: _Persistable where Wrapped: _PersistableBase {
    /// The wrapped type's.
    public static var _latticeType: PropertyType { Wrapped._latticeType }
    /// Always true.
    public static var _latticeIsOptional: Bool { true }
    /// nil.
    public static var _latticeDefault: Wrapped? { nil }

    /// nil is an empty payload; a value that may itself be empty carries a leading 1 byte. A payload that
    /// names no value of the type (an enum's unknown raw value) is nil too.
    @inline(__always)
    public static func _latticeDecode(_ payload: UnsafeRawBufferPointer) -> Wrapped? {
        if payload.isEmpty { return nil }
        if Wrapped._latticeMayBeEmpty { return Wrapped._latticeDecodeIfValid(UnsafeRawBufferPointer(rebasing: payload.dropFirst())) }
        return Wrapped._latticeDecodeIfValid(payload)
    }

    /// See ``_latticeDecode(_:)``.
    public func _latticeEncode(into out: inout [UInt8]) {
        guard let value = self else { return }
        if Wrapped._latticeMayBeEmpty { out.append(1) }
        value._latticeEncode(into: &out)
    }

    /// nil sorts first (tag 0); values carry tag 1.
    public func _latticeKey(into out: inout [UInt8]) {
        guard let value = self else { out.append(0); return }
        out.append(1)
        value._latticeKey(into: &out)
    }

    /// Tag 0 for an empty payload, else tag 1 and the wrapped type's key of the payload.
    public static func _latticeKey(fromPayload payload: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        if payload.isEmpty { out.append(0); return }
        out.append(1)
        Wrapped._latticeKey(fromPayload: Wrapped._latticeMayBeEmpty ? UnsafeRawBufferPointer(rebasing: payload.dropFirst()) : payload,
                            into: &out)
    }

    /// nil, `NSNull` and an empty optional give nil; otherwise the wrapped type's conversion.
    public static func _latticeCast(_ value: Any) -> Wrapped?? {
        if isNilValue(value) { return .some(nil) }
        return Wrapped._latticeCast(value).map { .some($0) }
    }

    /// The wrapped value or nil.
    public var _latticeAnyValue: Any? { self.map { $0 as Any } }

    /// The wrapped type's optional read (a link materializes its target).
    public static func _latticeGet(_ owner: Object, column: Int) -> Wrapped? { Wrapped._latticeGetOptional(owner, column: column) }
    /// The wrapped type's optional write.
    public static func _latticeSet(_ owner: Object, column: Int, _ value: Wrapped?) {
        Wrapped._latticeSetOptional(owner, column: column, value)
    }
    /// nil is empty; otherwise as `_latticeEncode(into:)`, letting a link add its target.
    public func _latticeEncode(into out: inout [UInt8], adding lattice: Lattice) throws {
        guard let value = self else { return }
        if Wrapped._latticeMayBeEmpty { out.append(1) }
        try value._latticeEncode(into: &out, adding: lattice)
    }
    /// nil for an empty payload, else the wrapped element.
    public static func _latticeElement(_ payload: UnsafeRawBufferPointer, _ lattice: Lattice) -> Wrapped? {
        if payload.isEmpty { return nil }
        if Wrapped._latticeMayBeEmpty { return Wrapped._latticeElementIfValid(UnsafeRawBufferPointer(rebasing: payload.dropFirst()), lattice) }
        return Wrapped._latticeElementIfValid(payload, lattice)
    }
    /// The wrapped type's.
    public static var _latticeObjectType: Object.Type? { Wrapped._latticeObjectType }
}

/// Whether a dynamically typed value is nil (an empty Optional of any type, or `NSNull`).
func isNilValue(_ value: Any) -> Bool {
    let type = type(of: value)
    if type is NSNull.Type { return true }
    // Only an Optional holds nil or wraps an NSNull. `is NSNull` on any other value would first bridge
    // it to a Foundation object (a String to an NSString, a dictionary to an NSDictionary): far dearer.
    guard type is any _AnyOptional.Type, let optional = value as? any _AnyOptional else { return false }
    return optional._isNil || value is NSNull
}

/// `value as? Object`, without the runtime's attempt to bridge a Swift value (a dictionary, a string, a
/// number) to a Foundation object first, which costs far more than the check: only an object, or an
/// Optional or AnyHashable that may wrap one, takes the full cast.
func objectValue(_ value: Any) -> Object? {
    let type = type(of: value)
    guard type is Object.Type || type is any _AnyOptional.Type || type == AnyHashable.self else { return nil }
    return value as? Object
}

protocol _AnyOptional { var _isNil: Bool { get } }
extension Optional: _AnyOptional { var _isNil: Bool { self == nil } }

/// Unwraps values nested in Optionals inside `Any`.
func unwrapAny(_ value: Any) -> Any {
    if let optional = value as? any _AnyOptional, !optional._isNil {
        return Mirror(reflecting: value).children.first.map { unwrapAny($0.value) } ?? value
    }
    return value
}

// MARK: - Fixed-width helpers

@inline(__always)
func appendLE<T: FixedWidthInteger>(_ value: T, to out: inout [UInt8]) {
    withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) }
}

@inline(__always)
func loadLE<T: FixedWidthInteger>(_ payload: UnsafeRawBufferPointer, as: T.Type) -> T {
    guard payload.count >= MemoryLayout<T>.size else { return 0 }
    return T(littleEndian: payload.loadUnaligned(as: T.self))
}

// MARK: - Integers

/// Shared codec of the integer types: zigzag varints in records, 8-byte sign-flipped keys.
public protocol _PersistableInteger: _PersistableBase, FixedWidthInteger, SignedInteger {}

extension _PersistableInteger {
    /// 0.
    public static var _latticeDefault: Self { 0 }

    /// Zigzag varint. Inlinable, like the property reads that call it: client models then decode their
    /// integers without going through generic code.
    @inlinable
    public static func _latticeDecode(_ payload: UnsafeRawBufferPointer) -> Self {
        var at = 0
        return Self(truncatingIfNeeded: Varint.unzigzag(Varint.read(payload, &at)))
    }

    /// Zigzag varint.
    @inline(__always)
    public func _latticeEncode(into out: inout [UInt8]) {
        Varint.append(Varint.zigzag(Int64(self)), to: &out)
    }

    /// 8-byte sign-flipped big-endian, so every integer width shares one key order.
    public func _latticeKey(into out: inout [UInt8]) { KeyCodec.appendInt(Int64(self), to: &out) }

    /// Any integer (or `NSNumber` holding one) that fits; a Double only when it is integral.
    public static func _latticeCast(_ value: Any) -> Self? {
        switch value {
        case let v as Int: return Self(exactly: v)
        case let v as Int8: return Self(exactly: v)
        case let v as Int16: return Self(exactly: v)
        case let v as Int32: return Self(exactly: v)
        case let v as Int64: return Self(exactly: v)
        case let v as UInt: return Self(exactly: v)
        case let v as UInt8: return Self(exactly: v)
        case let v as UInt16: return Self(exactly: v)
        case let v as UInt32: return Self(exactly: v)
        case let v as UInt64: return Self(exactly: v)
        case let v as Double: return Self(exactly: v)
        case let v as Float: return Self(exactly: v)
        default: return nil
        }
    }
}

extension Int: _PersistableInteger {
    /// `.int`.
    public static var _latticeType: PropertyType { .int }
}
extension Int8: _PersistableInteger {
    /// `.int8`.
    public static var _latticeType: PropertyType { .int8 }
}
extension Int16: _PersistableInteger {
    /// `.int16`.
    public static var _latticeType: PropertyType { .int16 }
}
extension Int32: _PersistableInteger {
    /// `.int32`.
    public static var _latticeType: PropertyType { .int32 }
}
extension Int64: _PersistableInteger {
    /// `.int64`.
    public static var _latticeType: PropertyType { .int64 }
}

// MARK: - Bool

extension Bool: _PersistableBase {
    /// `.bool`.
    public static var _latticeType: PropertyType { .bool }
    /// false.
    public static var _latticeDefault: Bool { false }
    /// One byte.
    public static func _latticeDecode(_ payload: UnsafeRawBufferPointer) -> Bool { payload.first.map { $0 != 0 } ?? false }
    /// One byte.
    public func _latticeEncode(into out: inout [UInt8]) { out.append(self ? 1 : 0) }
    /// One byte: false < true.
    public func _latticeKey(into out: inout [UInt8]) { out.append(self ? 1 : 0) }
    /// Only `Bool`.
    public static func _latticeCast(_ value: Any) -> Bool? { value as? Bool }
}

// MARK: - Floating point

extension Float: _PersistableBase {
    /// `.float`.
    public static var _latticeType: PropertyType { .float }
    /// 0.
    public static var _latticeDefault: Float { 0 }
    /// 4-byte IEEE bit pattern (exact, NaN and -0.0 kept).
    @inline(__always)
    public static func _latticeDecode(_ payload: UnsafeRawBufferPointer) -> Float { Float(bitPattern: loadLE(payload, as: UInt32.self)) }
    /// 4-byte IEEE bit pattern.
    public func _latticeEncode(into out: inout [UInt8]) { appendLE(bitPattern, to: &out) }
    /// Numeric order.
    public func _latticeKey(into out: inout [UInt8]) { KeyCodec.appendDouble(Double(self), to: &out) }
    /// Any Float, Double or integer.
    public static func _latticeCast(_ value: Any) -> Float? {
        switch value {
        case let v as Float: return v
        case let v as Double: return Float(v)
        default: return Int64._latticeCast(value).map { Float($0) }
        }
    }
}

extension Double: _PersistableBase {
    /// `.double`.
    public static var _latticeType: PropertyType { .double }
    /// 0.
    public static var _latticeDefault: Double { 0 }
    /// 8-byte IEEE bit pattern (exact, NaN and -0.0 kept).
    @inline(__always)
    public static func _latticeDecode(_ payload: UnsafeRawBufferPointer) -> Double { Double(bitPattern: loadLE(payload, as: UInt64.self)) }
    /// 8-byte IEEE bit pattern.
    public func _latticeEncode(into out: inout [UInt8]) { appendLE(bitPattern, to: &out) }
    /// Numeric order.
    public func _latticeKey(into out: inout [UInt8]) { KeyCodec.appendDouble(self, to: &out) }
    /// Any Double, Float or integer.
    public static func _latticeCast(_ value: Any) -> Double? {
        switch value {
        case let v as Double: return v
        case let v as Float: return Double(v)
        default: return Int64._latticeCast(value).map { Double($0) }
        }
    }
}

// MARK: - String and Data

extension String: _PersistableBase {
    /// `.string`.
    public static var _latticeType: PropertyType { .string }
    /// "".
    public static var _latticeDefault: String { "" }
    /// Empty strings have empty payloads.
    public static var _latticeMayBeEmpty: Bool { true }
    /// UTF-8 bytes (invalid sequences are repaired, never trapped on).
    @inline(__always)
    public static func _latticeDecode(_ payload: UnsafeRawBufferPointer) -> String { String(decoding: payload, as: UTF8.self) }
    /// UTF-8 bytes.
    public func _latticeEncode(into out: inout [UInt8]) { out.append(contentsOf: utf8) }
    /// UTF-8 bytes: Unicode scalar order.
    public func _latticeKey(into out: inout [UInt8]) { out.append(contentsOf: utf8) }
    /// Any String or Substring.
    public static func _latticeCast(_ value: Any) -> String? {
        switch value {
        case let v as String: return v
        case let v as Substring: return String(v)
        default: return nil
        }
    }
}

extension Data: _PersistableBase {
    /// `.data`.
    public static var _latticeType: PropertyType { .data }
    /// Empty.
    public static var _latticeDefault: Data { Data() }
    /// Empty data has an empty payload.
    public static var _latticeMayBeEmpty: Bool { true }
    /// The bytes.
    public static func _latticeDecode(_ payload: UnsafeRawBufferPointer) -> Data { Data(payload) }
    /// The bytes.
    public func _latticeEncode(into out: inout [UInt8]) { out.append(contentsOf: self) }
    /// The bytes.
    public func _latticeKey(into out: inout [UInt8]) { out.append(contentsOf: self) }
    /// Data or a byte array.
    public static func _latticeCast(_ value: Any) -> Data? {
        switch value {
        case let v as Data: return v
        case let v as [UInt8]: return Data(v)
        default: return nil
        }
    }
}

// MARK: - Date, UUID, Decimal, ObjectId

extension Date: _PersistableBase {
    /// `.date`.
    public static var _latticeType: PropertyType { .date }
    /// The reference date (2001-01-01); declare a default to get another.
    public static var _latticeDefault: Date { Date(timeIntervalSinceReferenceDate: 0) }
    /// The 8-byte `timeIntervalSinceReferenceDate` (exact round trip, `distantPast`/`distantFuture` included).
    @inline(__always)
    public static func _latticeDecode(_ payload: UnsafeRawBufferPointer) -> Date {
        Date(timeIntervalSinceReferenceDate: Double._latticeDecode(payload))
    }
    /// See ``_latticeDecode(_:)``.
    public func _latticeEncode(into out: inout [UInt8]) { timeIntervalSinceReferenceDate._latticeEncode(into: &out) }
    /// Time order.
    public func _latticeKey(into out: inout [UInt8]) { KeyCodec.appendDouble(timeIntervalSinceReferenceDate, to: &out) }
    /// Only Date.
    public static func _latticeCast(_ value: Any) -> Date? { value as? Date }
}

extension UUID: _PersistableBase {
    /// `.uuid`.
    public static var _latticeType: PropertyType { .uuid }
    /// A new random UUID.
    public static var _latticeDefault: UUID { UUID() }
    /// The nil UUID (all zeros): no read of the system's random source.
    public static var _latticePlaceholder: UUID { UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) }
    /// 16 bytes.
    public static func _latticeDecode(_ payload: UnsafeRawBufferPointer) -> UUID {
        var u = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)).uuid
        guard payload.count == 16 else { return UUID(uuid: u) }
        withUnsafeMutableBytes(of: &u) { $0.copyMemory(from: payload) }
        return UUID(uuid: u)
    }
    /// 16 bytes.
    public func _latticeEncode(into out: inout [UInt8]) { withUnsafeBytes(of: uuid) { out.append(contentsOf: $0) } }
    /// 16 bytes.
    public func _latticeKey(into out: inout [UInt8]) { _latticeEncode(into: &out) }
    /// A UUID or its string form.
    public static func _latticeCast(_ value: Any) -> UUID? {
        switch value {
        case let v as UUID: return v
        case let v as String: return UUID(uuidString: v)
        default: return nil
        }
    }
}

extension ObjectId: _PersistableBase {
    /// `.objectId`.
    public static var _latticeType: PropertyType { .objectId }
    /// A new id.
    public static var _latticeDefault: ObjectId { ObjectId() }
    /// 12 bytes.
    public static func _latticeDecode(_ payload: UnsafeRawBufferPointer) -> ObjectId {
        ObjectId(bytes: payload) ?? _latticePlaceholder
    }
    /// 12 bytes.
    public func _latticeEncode(into out: inout [UInt8]) { withUnsafeBytes(of: bytes) { out.append(contentsOf: $0) } }
    /// 12 bytes: creation-time order.
    public func _latticeKey(into out: inout [UInt8]) { _latticeEncode(into: &out) }
    /// An ObjectId or its hexadecimal string.
    public static func _latticeCast(_ value: Any) -> ObjectId? {
        switch value {
        case let v as ObjectId: return v
        case let v as String: return ObjectId(string: v)
        default: return nil
        }
    }
}

extension Decimal: _PersistableBase {
    /// `.decimal`.
    public static var _latticeType: PropertyType { .decimal }
    /// 0.
    public static var _latticeDefault: Decimal { 0 }
    /// The exact decimal text (`description`), which `Decimal(string:)` reads back to the same value.
    public static func _latticeDecode(_ payload: UnsafeRawBufferPointer) -> Decimal {
        let text = String(decoding: payload, as: UTF8.self)
        if text == "NaN" { return .nan }
        return Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) ?? 0
    }
    /// See ``_latticeDecode(_:)``.
    public func _latticeEncode(into out: inout [UInt8]) { out.append(contentsOf: description.utf8) }
    /// Numeric order through the nearest Double (decimals are not indexable; used for sorting only).
    public func _latticeKey(into out: inout [UInt8]) {
        KeyCodec.appendDouble(NSDecimalNumber(decimal: self).doubleValue, to: &out)
    }
    /// A Decimal, a number, or a numeric string.
    public static func _latticeCast(_ value: Any) -> Decimal? {
        switch value {
        case let v as Decimal: return v
        case let v as Double: return Decimal(v)
        case let v as String: return Decimal(string: v)
        default: return Int64._latticeCast(value).map { Decimal($0) }
        }
    }
}
