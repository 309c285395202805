import CLatticeSupport
import Synchronization

/// Declares a persisted property of an ``Object`` subclass.
///
/// ```swift
/// final class Dog: Object {
///     @Persisted(primaryKey: true) var id = UUID()
///     @Persisted(indexed: true) var age = 0
///     @Persisted var nickname: String?
/// }
/// ```
/// On an unmanaged object the property is a plain stored value. Once the object is managed (added to
/// a ``Lattice`` or read from one) reads and writes go straight to the database record; writing
/// requires a write transaction.
///
/// An initial value (`= UUID()`, `= Date()`, any expression) is made for each new object, when its
/// initializer runs. An object read from a file gets its values from its record, so for a class whose
/// stored properties are all `@Persisted`, the instance Lattice makes for it skips the initial-value
/// expressions: reading objects never runs them (on Linux, `UUID()` reads the system's random source,
/// a few microseconds each). Code in a custom `init()` after `super.init()` runs as always. A class with
/// other stored properties gets its initial values made for every instance, as Swift does.
///
/// `Persisted` is `Codable` where its value is, so a model class declared `Codable` decodes from JSON and
/// encodes (unmanaged objects only): see <doc:Codable>.
@propertyWrapper
public struct Persisted<Value: _Persistable> {
    // Accessors are @inlinable so that client modules specialize them for their models: the key paths
    // passed to the enclosing-instance subscript then fold to direct field accesses instead of a runtime
    // key-path projection plus generic metadata lookups on every property read.
    // Two fields only: every materialized object initializes (and frees) one of these per property.
    @usableFromInline var value: Value
    /// The record column once the object is managed. Before that, the declaration's flags:
    /// -1 plain, -2 indexed, -3 primary key (see `declaredFlags`).
    @usableFromInline var column: Int32

    /// A property with an initial value.
    @inlinable
    public init(wrappedValue: @autoclosure () -> Value) {
        self.init(value: Self.initial(wrappedValue), primaryKey: false, indexed: false)
    }

    /// A property whose initial value is the type's default (`0`, `""`, `false`, `nil`, ...).
    @inlinable
    public init() {
        self.init(value: Self.initial { Value._latticeDefault }, primaryKey: false, indexed: false)
    }

    /// The primary key (unique, immutable once managed, used by `object(ofType:forPrimaryKey:)`).
    @inlinable
    public init(wrappedValue: @autoclosure () -> Value, primaryKey: Bool) {
        self.init(value: Self.initial(wrappedValue), primaryKey: primaryKey, indexed: false)
    }

    /// The primary key, with the type's default as initial value.
    @inlinable
    public init(primaryKey: Bool) {
        self.init(value: Self.initial { Value._latticeDefault }, primaryKey: primaryKey, indexed: false)
    }

    /// An indexed property: equality, `IN`, range and prefix queries on it use the index.
    @inlinable
    public init(wrappedValue: @autoclosure () -> Value, indexed: Bool) {
        self.init(value: Self.initial(wrappedValue), primaryKey: false, indexed: indexed)
    }

    /// An indexed property with the type's default as initial value.
    @inlinable
    public init(indexed: Bool) {
        self.init(value: Self.initial { Value._latticeDefault }, primaryKey: false, indexed: indexed)
    }

    /// The initial value: `make()` for a new object. For an instance that Lattice makes to stand for a
    /// stored object, whose reads go to its record, a placeholder instead: initial-value expressions
    /// such as `UUID()` (a read of the system's random source on Linux) then cost nothing per object read.
    @inlinable @inline(__always)
    static func initial(_ make: () -> Value) -> Value {
        lattice_placeholding() != 0 ? Value._latticePlaceholder : make()
    }

    @usableFromInline
    init(value: Value, primaryKey: Bool, indexed: Bool) {
        self.value = value
        self.column = primaryKey ? -3 : indexed ? -2 : -1
    }

    /// A property stored under `originalName` until now (it was renamed): the next migration renames
    /// the stored property, keeping its values, collection elements, links and index, with no migration
    /// block. Combine with `indexed` or `primaryKey` as the property is declared now.
    ///
    /// ```swift
    /// @Persisted(originalName: "name") var id = ""
    /// ```
    public init(wrappedValue: @autoclosure () -> Value, originalName: String, indexed: Bool = false, primaryKey: Bool = false) {
        self.value = Self.initial(wrappedValue)
        self.column = FormerNames.column(originalName, primaryKey: primaryKey, indexed: indexed)
    }

    /// A renamed property (see ``init(wrappedValue:originalName:indexed:primaryKey:)``) with the type's
    /// default as initial value.
    public init(originalName: String, indexed: Bool = false, primaryKey: Bool = false) {
        self.init(wrappedValue: Value._latticeDefault, originalName: originalName, indexed: indexed, primaryKey: primaryKey)
    }

    /// Objects linking to this one through `originProperty` of the ``LinkingObjects`` element class.
    ///
    /// ```swift
    /// @Persisted(originProperty: "dogs") var walkers: LinkingObjects<Person>
    /// ```
    // Inlinable: in the model's module it needs no generic metadata lookup, and every new instance of
    // the model (each object read) runs it.
    @inlinable
    public init<T: Object>(originProperty: String) where Value == LinkingObjects<T> {
        self.init(value: LinkingObjects<T>(originProperty: originProperty), primaryKey: false, indexed: false)
    }

    /// Unavailable: `@Persisted` works only inside ``Object`` subclasses.
    @available(*, unavailable, message: "@Persisted can only be used on properties of Object subclasses")
    public var wrappedValue: Value {
        get { fatalError("@Persisted can only be used on properties of Object subclasses") }
        // swiftlint:disable:next unused_setter_value
        set { fatalError("@Persisted can only be used on properties of Object subclasses") }
    }

    /// Reads and writes the property through its enclosing object.
    // Both accessors are always inlined, so that no specialization taking the key paths as arguments
    // survives in the client: a single `\Model._prop` key path left in the module (from one accessor the
    // optimizer chose not to inline, or from the key-path thunks of `\Model.prop`) makes whole-module
    // optimization keep a runtime exclusivity check (swift_beginAccess) on every access to `_prop`,
    // reads of managed objects included. With every access folded to a direct field access, the compiler
    // proves the accesses never overlap and drops the checks.
    @inlinable
    public static subscript<EnclosingSelf: Object>(
        _enclosingInstance object: EnclosingSelf,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Persisted<Value>>
    ) -> Value {
        @inline(__always) get {
            if object._handle != nil {
                return Value._latticeGet(object, column: Int(object[keyPath: storageKeyPath].column))
            }
            return object[keyPath: storageKeyPath].value
        }
        @inline(__always) set {
            if object._handle != nil {
                Value._latticeSet(object, column: Int(object[keyPath: storageKeyPath].column), newValue)
            } else {
                object[keyPath: storageKeyPath].value = newValue
            }
        }
    }
}

/// Type-erased access to a `Persisted<Value>` stored inside an object, by its field address.
protocol PersistedField: SendableMetatype {
    static var valueType: any _Persistable.Type { get }
    static func flags(at field: UnsafeRawPointer) -> (primaryKey: Bool, indexed: Bool, originProperty: String?, originalName: String?)
    /// The byte offset of `column` inside `Persisted<Value>`.
    static var columnOffset: Int { get }
    static func encode(at field: UnsafeRawPointer, into out: inout [UInt8], adding lattice: Lattice) throws
    /// Runs the value's after-add hook (collections store their elements).
    static func didAdd(at field: UnsafeRawPointer, owner: Object, column: Int, replacing: Bool) throws
    static func value(at field: UnsafeRawPointer) -> Any?
    /// Sets a dynamically typed value; false when its type is wrong.
    static func set(at field: UnsafeMutableRawPointer, _ value: Any) -> Bool
    /// Drops the unmanaged value (a managed object never reads it), so objects and collections it held
    /// can be freed: two unmanaged objects linking to each other would otherwise keep each other alive.
    static func releaseUnmanagedValue(at field: UnsafeMutableRawPointer)
}

extension Persisted: PersistedField {
    static var valueType: any _Persistable.Type { Value.self }

    // The hot type-erased accessors (`encode`/`didAdd` on every add; `columnOffset` for `attach`)
    // address the fields from `Value`'s layout alone: going through `Persisted<Value>` makes unspecialized
    // code look its metadata up in the runtime's generic cache on each call, which costs more than the
    // access. Swift lays struct fields out in declaration order, each at its alignment: `value` first,
    // then `column`. `flags(at:)` (run once per property when a model is reflected) checks this.
    @inline(__always)
    static var columnOffset: Int {
        let align = MemoryLayout<Int32>.alignment
        return (MemoryLayout<Value>.size + align - 1) / align * align
    }

    static func flags(at field: UnsafeRawPointer) -> (primaryKey: Bool, indexed: Bool, originProperty: String?, originalName: String?) {
        precondition(MemoryLayout<Self>.offset(of: \Self.value) == 0 && MemoryLayout<Self>.offset(of: \Self.column) == columnOffset,
                     "Persisted<\(Value.self)> has an unexpected layout")
        let p = field.assumingMemoryBound(to: Persisted<Value>.self)
        let column = p.pointee.column
        precondition(column < 0, "Persisted<\(Value.self)> of a managed object has no declaration flags")
        let (primaryKey, indexed, originalName) = FormerNames.flags(column)
        return (primaryKey, indexed, (p.pointee.value as? any OriginDeclaring)?.originProperty, originalName)
    }

    static func encode(at field: UnsafeRawPointer, into out: inout [UInt8], adding lattice: Lattice) throws {
        try field.assumingMemoryBound(to: Value.self).pointee._latticeEncode(into: &out, adding: lattice)
    }

    static func didAdd(at field: UnsafeRawPointer, owner: Object, column: Int, replacing: Bool) throws {
        let value = UnsafeMutableRawPointer(mutating: field).assumingMemoryBound(to: Value.self)
        try value.pointee._latticeDidAdd(owner, column: column, replacing: replacing)
        // The field's collection is now the stored one, bound to its owner (see `_latticeDidAdd`): the
        // owner, which reads its collections from the file from now on, lets go of it (it would otherwise
        // keep itself, and its handle, alive).
        if Value.self is any _PersistableCollection.Type { value.pointee = Value._latticeDefault }
    }

    static func value(at field: UnsafeRawPointer) -> Any? {
        field.assumingMemoryBound(to: Persisted<Value>.self).pointee.value._latticeAnyValue
    }

    static func set(at field: UnsafeMutableRawPointer, _ value: Any) -> Bool {
        Value._latticeAssign(value, to: field)  // `value` is the field's first (see `columnOffset`)
    }

    static func releaseUnmanagedValue(at field: UnsafeMutableRawPointer) {
        field.assumingMemoryBound(to: Value.self).pointee = Value._latticePlaceholder
    }
}

extension _Persistable {
    /// Decodes a payload to `Any` (nil for an empty optional). Value types only: links need `getAny`.
    static func decodeAny(_ payload: UnsafeRawBufferPointer) -> Any? { _latticeDecode(payload)._latticeAnyValue }

    /// A managed object's property as `Any`: the value, the linked object, or the live collection.
    static func getAny(_ owner: Object, column: Int) -> Any? {
        _latticeGet(owner, column: column)._latticeAnyValue
    }

    /// Encodes a dynamically typed value; false when its type is wrong.
    static func encodeAny(_ value: Any, into out: inout [UInt8]) -> Bool { _latticeEncodeAny(value, into: &out) }

    /// The index key of an encoded payload.
    static func key(fromPayload payload: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        _latticeKey(fromPayload: payload, into: &out)
    }
}

/// Former property names declared with `@Persisted(originalName:)`. A `Persisted` keeps its declaration's
/// flags in its `column` field until it is managed (two fields only: one is initialized per property of
/// every object); a former name is kept there as the id of the interned string.
enum FormerNames {
    private static let names = Mutex<[String]>([])

    /// The declaration code: -1 plain, -2 indexed, -3 primary key; with a former name,
    /// -(16 + 4 × id + 0, 1 or 2).
    static func column(_ name: String, primaryKey: Bool, indexed: Bool) -> Int32 {
        let id = names.withLock { names -> Int in
            if let id = names.firstIndex(of: name) { return id }
            names.append(name)
            return names.count - 1
        }
        return -Int32(16 + 4 * id + (primaryKey ? 2 : indexed ? 1 : 0))
    }

    /// The flags of a declaration code.
    static func flags(_ column: Int32) -> (primaryKey: Bool, indexed: Bool, originalName: String?) {
        let code = -Int(column)
        guard code >= 16 else { return (code == 3, code >= 2, nil) }
        let kind = (code - 16) % 4
        let name = names.withLock { names in (code - 16) / 4 < names.count ? names[(code - 16) / 4] : nil }
        return (kind == 2, kind >= 1, name)
    }
}
