import Foundation

/// A type stored as another, persistable type: declare it as `@Persisted` properties, optional or not,
/// and as elements of ``List``, ``MutableSet`` (when `Hashable`) and ``Map``.
///
/// ```swift
/// struct Money: CustomPersistable {
///     var amount: Decimal
///     init(persistedValue: Decimal) { amount = persistedValue }
///     var persistableValue: Decimal { amount }
/// }
/// final class Invoice: Object { @Persisted var total: Money }
/// ```
///
/// The file stores the persisted value: a property of a custom type has the schema of a property of its
/// `PersistedType`, so replacing one by the other needs no migration. Queries, sorting, indexes and
/// primary keys work on the persisted value; dynamic objects and migrations see it too. A property read
/// by name, or reported in a ``PropertyChange``, gives the custom type. See <doc:CustomTypes>.
///
/// A type that cannot represent every stored value conforms to ``FailableCustomPersistable`` instead.
public protocol CustomPersistable: _CustomPersistableBase {
    /// Makes the value that `persistedValue` stands for.
    init(persistedValue: PersistedType)
}

/// A type stored as another, persistable type, which not every stored value converts to (`URL` stored as
/// a `String`).
///
/// ```swift
/// extension URL: @retroactive FailableCustomPersistable {
///     public typealias PersistedType = String
///     public init?(persistedValue: String) { self.init(string: persistedValue) }
///     public var persistableValue: String { absoluteString }
///     public static var fallbackValue: URL? { URL(string: "about:blank") }
/// }
/// ```
///
/// A stored value that `init?(persistedValue:)` rejects (written by another program or through the
/// dynamic API) reads as nil in an optional property or collection of optionals, and as
/// ``fallbackValue`` in a non-optional one: a read never fails.
public protocol FailableCustomPersistable: _CustomPersistableBase {
    /// Makes the value that `persistedValue` stands for; nil when it stands for none.
    init?(persistedValue: PersistedType)

    /// The value of a non-optional property declared without an initial value, and what a non-optional
    /// property or collection element reads when its stored value converts to nothing. The default
    /// converts the persisted type's default value (`""`, `0`, the reference date, ...). A type that
    /// rejects that value and is used non-optionally must implement this with a non-nil value: a model
    /// class using such a type non-optionally is otherwise refused with
    /// ``LatticeError/invalidSchema(className:reason:)`` (and a new object of it stops the program when
    /// the property is declared without an initial value, as there is no value to give it).
    ///
    /// Note the optional type: a `static var fallbackValue: URL` (not `URL?`) is another property, which
    /// Lattice does not see.
    static var fallbackValue: Self? { get }
}

/// What ``CustomPersistable`` and ``FailableCustomPersistable`` share: the persisted type and the
/// conversion to it. Conform to one of those two, not to this protocol.
public protocol _CustomPersistableBase: _PersistableBase {
    /// The type the file stores: a value type Lattice persists natively (`String`, `Int`, `Double`,
    /// `Decimal`, `Date`, `Data`, `UUID`, `ObjectId`, ...), not an object or a collection.
    associatedtype PersistedType: _PersistableBase
    /// The value stored for this one.
    var persistableValue: PersistedType { get }
    /// The value `persisted` stands for, nil when none.
    static func _latticeConvert(_ persisted: PersistedType) -> Self?
    /// The value of a non-optional property with no value of its own; nil when the type has none.
    static var _latticeFallback: Self? { get }
}

extension CustomPersistable {
    /// The initializer, which always succeeds.
    public static func _latticeConvert(_ persisted: PersistedType) -> Self? { Self(persistedValue: persisted) }
    /// The value of the persisted type's default.
    public static var _latticeFallback: Self? { Self(persistedValue: PersistedType._latticeDefault) }
    /// The value of the persisted type's default.
    public static var _latticeDefault: Self { Self(persistedValue: PersistedType._latticeDefault) }
    /// The value of the persisted type's placeholder.
    public static var _latticePlaceholder: Self { Self(persistedValue: PersistedType._latticePlaceholder) }
    /// The value of the stored value.
    public static func _latticeDecode(_ payload: UnsafeRawBufferPointer) -> Self {
        Self(persistedValue: PersistedType._latticeDecode(payload))
    }
}

extension FailableCustomPersistable {
    /// The failable initializer.
    public static func _latticeConvert(_ persisted: PersistedType) -> Self? { Self(persistedValue: persisted) }
    /// The value of the persisted type's default, if the type has one.
    public static var fallbackValue: Self? { Self(persistedValue: PersistedType._latticeDefault) }
    /// ``fallbackValue``.
    public static var _latticeFallback: Self? { fallbackValue }
    /// ``fallbackValue``; a type without one stops the program (see ``fallbackValue``).
    public static var _latticeDefault: Self {
        guard let value = fallbackValue else {
            preconditionFailure("\(Self.self) converts no default \(PersistedType.self) and has no fallbackValue: declare the "
                + "property optional, give it an initial value and implement FailableCustomPersistable.fallbackValue")
        }
        return value
    }
    /// The value of the persisted type's placeholder, else the default.
    public static var _latticePlaceholder: Self { Self(persistedValue: PersistedType._latticePlaceholder) ?? _latticeDefault }
    /// The value of the stored value; ``fallbackValue`` when it has none.
    public static func _latticeDecode(_ payload: UnsafeRawBufferPointer) -> Self {
        Self(persistedValue: PersistedType._latticeDecode(payload)) ?? _latticeDefault
    }
}

extension _CustomPersistableBase {
    /// The persisted type's.
    public static var _latticeType: PropertyType { PersistedType._latticeType }
    /// The persisted type's.
    public static var _latticeMayBeEmpty: Bool { PersistedType._latticeMayBeEmpty }
    /// The value of the stored value; nil when it stands for none.
    public static func _latticeDecodeIfValid(_ payload: UnsafeRawBufferPointer) -> Self? {
        PersistedType._latticeDecodeIfValid(payload).flatMap(_latticeConvert)
    }
    /// The value of the stored value; nil when it stands for none.
    public static func _latticeElementIfValid(_ payload: UnsafeRawBufferPointer, _ lattice: Lattice) -> Self? {
        _latticeDecodeIfValid(payload)
    }
    /// The persisted value's payload.
    public func _latticeEncode(into out: inout [UInt8]) { persistableValue._latticeEncode(into: &out) }
    /// The persisted value's key: indexes, sorting and range queries follow the persisted type's order.
    public func _latticeKey(into out: inout [UInt8]) { persistableValue._latticeKey(into: &out) }
    /// The key of the stored value, whether or not it converts.
    public static func _latticeKey(fromPayload payload: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        PersistedType._latticeKey(fromPayload: payload, into: &out)
    }
    /// A value of this type, or a persisted value that converts to one.
    public static func _latticeCast(_ value: Any) -> Self? {
        if let v = value as? Self { return v }
        return PersistedType._latticeCast(value).flatMap(_latticeConvert)
    }
    /// The value itself (a dynamic reader of the file sees the persisted value instead).
    public var _latticeAnyValue: Any? { self }
    /// The persisted value as `Any`.
    var _latticePersistedAny: Any? { persistableValue._latticeAnyValue }
}

/// The persisted value of a custom type (see ``CustomPersistable``), the value itself otherwise: what
/// queries, aggregates and conversions between property types work on.
func persistedValue(_ value: Any) -> Any {
    guard let custom = value as? any _CustomPersistableBase else { return value }
    return custom._latticePersistedAny.map { persistedValue($0) } ?? Optional<Any>.none as Any
}

/// Optionals of custom types, told apart from other optionals.
protocol _OptionalCustom {
    /// The wrapped type.
    static var _latticeCustomType: any _CustomPersistableBase.Type { get }
}

extension Optional: _OptionalCustom where Wrapped: _CustomPersistableBase {
    static var _latticeCustomType: any _CustomPersistableBase.Type { Wrapped.self }
}

extension _CustomPersistableBase {
    /// Why a model cannot use this type (nil when it can): the persisted type is an object, or, used
    /// non-optionally, the type has no fallback value.
    static func _latticeProblem(optional: Bool) -> String? {
        if PersistedType._latticeObjectType != nil || PersistedType._latticeCollection != nil {
            return "\(Self.self) is persisted as \(PersistedType.self); a custom type is persisted as a value type, not an object."
        }
        if let inner = PersistedType.self as? any _CustomPersistableBase.Type, let problem = inner._latticeProblem(optional: optional) {
            return problem
        }
        if !optional && _latticeFallback == nil {
            return "\(Self.self) converts no default \(PersistedType.self) and has no fallbackValue: use \(Self.self)? (an optional "
                + "property or optional elements) or implement FailableCustomPersistable.fallbackValue."
        }
        return nil
    }
}

/// Collections, told apart by their element type (a ``Map`` by its value type).
protocol _CollectionOfValues {
    /// The type of the elements.
    static var _latticeElementType: any _Persistable.Type { get }
}

extension List: _CollectionOfValues {
    static var _latticeElementType: any _Persistable.Type { Element.self }
}

extension MutableSet: _CollectionOfValues {
    static var _latticeElementType: any _Persistable.Type { Element.self }
}

extension Map: _CollectionOfValues {
    static var _latticeElementType: any _Persistable.Type { Value.self }
}

/// Why a property of `type` (a value, an optional or a collection's elements) cannot be declared; nil
/// when it can, or when it holds no custom type.
func customTypeProblem(_ type: any _Persistable.Type) -> String? {
    if let custom = type as? any _CustomPersistableBase.Type { return custom._latticeProblem(optional: false) }
    if let optional = type as? any _OptionalCustom.Type { return optional._latticeCustomType._latticeProblem(optional: true) }
    if let collection = type as? any _CollectionOfValues.Type { return customTypeProblem(collection._latticeElementType) }
    return nil
}
