/// A raw-value enum stored as its raw value.
///
/// ```swift
/// enum Department: String, PersistableEnum { case news, sports }
/// final class Person: Object { @Persisted var department = Department.news }
/// ```
/// A stored raw value that no case matches (written by a newer model) reads as the first case.
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
    /// Encodes the raw value.
    public func _latticeEncode(into out: inout [UInt8]) { rawValue._latticeEncode(into: &out) }
    /// The raw value's key.
    public func _latticeKey(into out: inout [UInt8]) { rawValue._latticeKey(into: &out) }
    /// The enum itself or a raw value naming a case.
    public static func _latticeCast(_ value: Any) -> Self? {
        if let v = value as? Self { return v }
        return RawValue._latticeCast(value).flatMap { Self(rawValue: $0) }
    }
    /// The raw value (what a dynamic reader of the file sees).
    public var _latticeAnyValue: Any? { rawValue }
}
