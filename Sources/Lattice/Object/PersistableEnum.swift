/// A raw-value enum stored as its raw value.
///
/// ```swift
/// enum Department: String, PersistableEnum { case news, sports }
/// final class Person: Object { @Persisted var department = Department.news }
/// ```
/// A stored raw value that no case matches (written by a newer model or through the dynamic API) reads
/// as nil in an optional property or collection element, and as the first case in a non-optional one
/// (a read cannot fail).
public protocol PersistableEnum: _PersistableBase, RawRepresentable, CaseIterable
where RawValue: _PersistableBase {}

extension PersistableEnum {
    /// The raw value's type.
    public static var _latticeType: PropertyType { RawValue._latticeType }
    /// Whether the raw value's payload may be empty.
    public static var _latticeMayBeEmpty: Bool { RawValue._latticeMayBeEmpty }
    /// The first case.
    public static var _latticeDefault: Self { allCases.first! }
    /// Decodes the raw value.
    public static func _latticeDecode(_ payload: UnsafeRawBufferPointer) -> Self {
        Self(rawValue: RawValue._latticeDecode(payload)) ?? _latticeDefault
    }
    /// The case of the raw value; nil when no case has it.
    public static func _latticeDecodeIfValid(_ payload: UnsafeRawBufferPointer) -> Self? {
        Self(rawValue: RawValue._latticeDecode(payload))
    }
    /// The case of the raw value; nil when no case has it.
    public static func _latticeElementIfValid(_ payload: UnsafeRawBufferPointer, _ lattice: Lattice) -> Self? {
        _latticeDecodeIfValid(payload)
    }
    /// Encodes the raw value.
    public func _latticeEncode(into out: inout [UInt8]) { rawValue._latticeEncode(into: &out) }
    /// The raw value's key.
    public func _latticeKey(into out: inout [UInt8]) { rawValue._latticeKey(into: &out) }
    /// The stored raw value's key, whether or not a case has it.
    public static func _latticeKey(fromPayload payload: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        RawValue._latticeKey(fromPayload: payload, into: &out)
    }
    /// The enum itself or a raw value naming a case.
    public static func _latticeCast(_ value: Any) -> Self? {
        if let v = value as? Self { return v }
        return RawValue._latticeCast(value).flatMap { Self(rawValue: $0) }
    }
    /// The raw value (what a dynamic reader of the file sees).
    public var _latticeAnyValue: Any? { rawValue }
}

extension PersistableEnum {
    /// Every case's payload (key path probes mark columns with them).
    static var _latticeCasePayloads: [[UInt8]] { encodedPayloads(Array(allCases)) }
}

/// Optionals of enums, told apart from other optionals.
protocol _OptionalEnum {
    /// Every case's payload as an optional holds it (key path probes mark columns with them).
    static var _latticeCasePayloads: [[UInt8]] { get }
}

extension Optional: _OptionalEnum where Wrapped: PersistableEnum {
    /// Every case's payload, with an optional's marker byte where the raw value needs one.
    static var _latticeCasePayloads: [[UInt8]] { encodedPayloads(Wrapped.allCases.map { $0 as Wrapped? }) }
}

/// The payload of each value.
private func encodedPayloads<T: _Persistable>(_ values: [T]) -> [[UInt8]] {
    values.map { value in
        var out: [UInt8] = []
        value._latticeEncode(into: &out)
        return out
    }
}
