import CLatticeSupport
import Foundation

// `Codable` for model classes: a class declared `final class Dog: Object, Codable` gets the compiler's
// synthesized `init(from:)` and `encode(to:)`, which decode and encode each property wrapper (`_name`)
// under the property's name. The conformances below make those wrappers, the collections and the
// Lattice value types `Codable`; the article "Codable" in the documentation catalog describes the result.

// MARK: - Declarations of decoded properties

/// What a decoded `Persisted` holds in its `column` field until `Object.init()` gives it its declaration's.
///
/// A decoded property replaces the one the declaration made (`self._name = decoded`), whose flags it
/// cannot see: the decoder does not know which class or declaration it decodes for. The model's
/// initializer reaches `Object.init()` once every property is set; that looks the declaration up in the
/// class's reflected metadata (see `Object.restoreDecodedDeclarations`).
enum DecodedDeclaration {
    /// Decoded: its value stays, its flags (primary key, indexed, former name) are the declaration's.
    static let flags: Int32 = -4
    /// Its key was missing (or it is ``LinkingObjects``, which decodes nothing): value and flags are the
    /// declaration's, made by a new instance of the class (so `= UUID()` makes a new id).
    static let missing: Int32 = -5
}

extension Persisted {
    /// A property decoded from an encoder's data, waiting for `Object.init()` to restore its declaration.
    init(decoded value: Value, missing: Bool) {
        self.value = value
        self.column = missing ? DecodedDeclaration.missing : DecodedDeclaration.flags
        lattice_set_decoded_pending(lattice_decoded_pending() &+ 1)
    }
}

/// Type-erased restoring of a decoded `Persisted<Value>` field's declaration.
protocol DeclarationRestoring {
    /// Swaps the `Persisted<Value>` at `a` with the one at `b` (a missing key takes a new instance's value).
    static func exchange(_ a: UnsafeMutableRawPointer, _ b: UnsafeMutableRawPointer)
    /// Gives the ``LinkingObjects`` at `field` its declaration's origin property and `column`; false for
    /// another type.
    static func declareOrigin(at field: UnsafeMutableRawPointer, _ originProperty: String, column: Int32) -> Bool
}

/// ``LinkingObjects`` as its declaration makes it, for a type known only at run time.
protocol OriginRestoring {
    init(declaredOrigin: String)
}

extension LinkingObjects: OriginRestoring {
    init(declaredOrigin: String) { self.init(originProperty: declaredOrigin) }
}

extension Persisted: DeclarationRestoring {
    static func exchange(_ a: UnsafeMutableRawPointer, _ b: UnsafeMutableRawPointer) {
        swap(&a.assumingMemoryBound(to: Persisted<Value>.self).pointee, &b.assumingMemoryBound(to: Persisted<Value>.self).pointee)
    }

    static func declareOrigin(at field: UnsafeMutableRawPointer, _ originProperty: String, column: Int32) -> Bool {
        guard let type = Value.self as? any OriginRestoring.Type, let value = type.init(declaredOrigin: originProperty) as? Value else {
            return false
        }
        let p = field.assumingMemoryBound(to: Persisted<Value>.self)
        p.pointee.value = value
        p.pointee.column = column
        return true
    }
}

extension Object {
    /// Gives the properties this thread decoded for this object their declaration's flags, and the
    /// declaration's initial value to those whose key was missing. Runs from `Object.init()` while any
    /// decoded property waits (a synthesized `init(from:)` sets every property before it calls
    /// `super.init()`); an object decoded inside another (a link, a list element) restores its own first,
    /// leaving the count of the enclosing object's.
    @inline(never)
    final func restoreDecodedDeclarations() {
        let pending = lattice_decoded_pending()
        // Cleared first: reflecting the class (first use) and making a new instance run `Object.init()`.
        lattice_set_decoded_pending(0)
        // A class without properties (or not a model class) decodes none: what waits is the enclosing object's.
        guard let metadata = try? ModelMetadata.of(type(of: self)), !metadata.fields.isEmpty else {
            return lattice_set_decoded_pending(pending)
        }
        let base = UnsafeMutableRawPointer(Unmanaged.passUnretained(self).toOpaque())
        var restored: Int32 = 0
        var fresh: Object?
        for (field, property) in zip(metadata.fields, metadata.schema.allProperties) {
            let slot = base + field.offset + field.accessor.columnOffset
            switch slot.load(as: Int32.self) {
            case DecodedDeclaration.flags:
                slot.storeBytes(of: field.declaredColumn, as: Int32.self)
                restored += 1
            case DecodedDeclaration.missing:
                guard let restoring = field.accessor as? any DeclarationRestoring.Type else { continue }
                restored += 1
                // Linking objects need only their origin, which the class's schema holds: no new instance.
                if let origin = property.originProperty,
                   restoring.declareOrigin(at: base + field.offset, origin, column: field.declaredColumn) { continue }
                let instance = fresh ?? type(of: self).init()
                fresh = instance
                let other = UnsafeMutableRawPointer(Unmanaged.passUnretained(instance).toOpaque())
                restoring.exchange(base + field.offset, other + field.offset)
            default:
                continue
            }
        }
        withExtendedLifetime(fresh) {}
        // None of this object's: the count was left by a decode that never reached an object (it threw,
        // or decoded a lone `Persisted`); nothing waits any more.
        lattice_set_decoded_pending(restored > 0 ? max(0, pending - restored) : 0)
    }

    /// An unmanaged copy of a managed object, to encode in its place (a managed object's properties
    /// are read through the object, which `encode(to:)` of a property wrapper cannot reach).
    static func detachedForEncoding(_ object: Object, codingPath: [any CodingKey]) throws -> Object {
        let copy = type(of: object).init()
        do {
            try copy.fill(from: object)
        } catch {
            throw EncodingError.invalidValue(object, EncodingError.Context(
                codingPath: codingPath, debugDescription: "A managed \(type(of: object)) could not be copied to be encoded.",
                underlyingError: error))
        }
        return copy
    }
}

/// Encodes `value`, or an unmanaged copy of it when it is a managed object (a link or a collection
/// element: Lattice copies it so that the encoder reads plain values).
private func encodeDetached<T: Encodable & _Persistable>(_ value: T, codingPath: [any CodingKey],
                                                           _ encode: (any Encodable) throws -> Void) throws {
    if T._latticeObjectType != nil, let object = value as? Object, object._lattice != nil {
        guard let copy = try Object.detachedForEncoding(object, codingPath: codingPath) as? any Encodable else {
            throw EncodingError.invalidValue(object, EncodingError.Context(
                codingPath: codingPath, debugDescription: "\(type(of: object)) is not Encodable."))
        }
        try encode(copy)
    } else {
        try encode(value)
    }
}

/// Encodes the elements of `collection` as an array, in its order, managed objects through unmanaged copies.
private func encodeElements<C: Sequence>(of collection: C, to encoder: any Encoder) throws
where C.Element: Encodable & _Persistable {
    var container = encoder.unkeyedContainer()
    for element in collection {
        try encodeDetached(element, codingPath: container.codingPath) { try container.encode($0) }
    }
}

// MARK: - Persisted

extension Persisted: Decodable where Value: Decodable {
    /// Decodes the property's value from a single value. The decoded property keeps its declaration's
    /// primary-key and index flags. A ``LinkingObjects`` property decodes nothing: it keeps its
    /// declaration (it is computed from the links once the object is added).
    public init(from decoder: any Decoder) throws {
        if Value.self is any OriginDeclaring.Type {
            self.init(decoded: Value._latticeDefault, missing: true)
        } else {
            // Through a container, not `Value(from:)`: decoders apply their strategies (dates, data) there.
            self.init(decoded: try decoder.singleValueContainer().decode(Value.self), missing: false)
        }
    }
}

extension Persisted: Encodable where Value: Encodable {
    /// Encodes the property's value as a single value (a collection as an array or object, a linked
    /// object as a nested object).
    ///
    /// Only an unmanaged object's properties can be encoded: a managed object's are read through the
    /// object, which this method is not given. Encoding one throws `EncodingError.invalidValue`; encode
    /// an unmanaged copy instead, `try Dog(value: managedDog)`. Linked objects and collection elements
    /// that are managed (a copy still links to them) are copied the same way when encoded.
    public func encode(to encoder: any Encoder) throws {
        guard column < 0 else {
            let name = encoder.codingPath.last.map { "'\($0.stringValue)'" } ?? "a property"
            throw EncodingError.invalidValue(Value.self, EncodingError.Context(
                codingPath: encoder.codingPath,
                debugDescription: "Cannot encode \(name) of a managed object: its values are in the database, read through the "
                    + "object, which encoding a property wrapper cannot reach. Encode an unmanaged copy instead, "
                    + "e.g. `try JSONEncoder().encode(Dog(value: managedDog))`."))
        }
        // Through a container, not `value.encode(to:)`: encoders apply their strategies (dates, data) there.
        var container = encoder.singleValueContainer()
        try encodeDetached(value, codingPath: encoder.codingPath) { try container.encode($0) }
    }
}

extension KeyedDecodingContainer {
    /// Decodes a `@Persisted` property, or gives it its declaration's initial value when `key` is
    /// missing (a model's synthesized `init(from:)` calls this for each property). A `null` value is
    /// decoded: nil for an optional property, `DecodingError.valueNotFound` for another.
    public func decode<T: Decodable>(_ type: Persisted<T>.Type, forKey key: Key) throws -> Persisted<T> {
        guard contains(key) else { return Persisted(decoded: T._latticeDefault, missing: true) }
        return try decodeValue(type, forKey: key)
    }

    /// The standard library's `decode(_:forKey:)` (a generic type is not matched by the overload above).
    private func decodeValue<D: Decodable>(_ type: D.Type, forKey key: Key) throws -> D {
        try decode(type, forKey: key)
    }
}

// MARK: - Collections

extension List: Decodable where Element: Decodable {
    /// An unmanaged list of the elements of an array.
    public convenience init(from decoder: any Decoder) throws {
        self.init()
        var container = try decoder.unkeyedContainer()
        var elements: [Element] = []
        if let count = container.count { elements.reserveCapacity(count) }
        while !container.isAtEnd { elements.append(try container.decode(Element.self)) }
        append(contentsOf: elements)
    }
}

extension List: Encodable where Element: Encodable {
    /// Encodes the elements as an array, in order.
    public func encode(to encoder: any Encoder) throws {
        try encodeElements(of: self, to: encoder)
    }
}

extension MutableSet: Decodable where Element: Decodable {
    /// An unmanaged set of the elements of an array (duplicates count once).
    public convenience init(from decoder: any Decoder) throws {
        self.init()
        var container = try decoder.unkeyedContainer()
        var elements: [Element] = []
        while !container.isAtEnd { elements.append(try container.decode(Element.self)) }
        insert(objectsIn: elements)
    }
}

extension MutableSet: Encodable where Element: Encodable {
    /// Encodes the elements as an array, in the set's order.
    public func encode(to encoder: any Encoder) throws {
        try encodeElements(of: self, to: encoder)
    }
}

/// A map key as a coding key (any string).
struct MapCodingKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }

    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { return nil }
}

extension Map: Decodable where Value: Decodable {
    /// An unmanaged map of the members of an object (`null` is a nil value of an optional map value).
    public convenience init(from decoder: any Decoder) throws {
        self.init()
        let container = try decoder.container(keyedBy: MapCodingKey.self)
        for key in container.allKeys {
            self[Key(_mapKeyString: key.stringValue)] = try container.decode(Value.self, forKey: key)
        }
    }
}

extension Map: Encodable where Value: Encodable {
    /// Encodes the entries as an object, a member per key.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: MapCodingKey.self)
        for (key, value) in self {
            let codingKey = MapCodingKey(stringValue: key._mapKeyString)
            try encodeDetached(value, codingPath: container.codingPath + [codingKey]) { try container.encode($0, forKey: codingKey) }
        }
    }
}

extension LinkingObjects: Decodable {
    /// Empty: linking objects are computed from the links pointing at an object once it is added, so
    /// whatever was encoded for them is skipped.
    public init(from decoder: any Decoder) throws {
        self.init()
    }
}

extension LinkingObjects: Encodable where Element: Encodable {
    /// Encodes the linking objects as an array: empty for an unmanaged object (which a managed object
    /// is copied to before it is encoded); the live objects, copied unmanaged, for a managed
    /// `LinkingObjects` encoded on its own.
    public func encode(to encoder: any Encoder) throws {
        try encodeElements(of: self, to: encoder)
    }
}

extension Results: Encodable where Element: Encodable {
    /// Encodes the objects as an array, in the results' order, each through an unmanaged copy (see
    /// ``Persisted``'s `encode(to:)`): `JSONEncoder().encode(lattice.objects(Dog.self))`.
    public func encode(to encoder: any Encoder) throws {
        try encodeElements(of: self, to: encoder)
    }
}

extension AnyLatticeCollection: Encodable where Element: Encodable {
    /// Encodes the objects of the wrapped collection as an array, as the collection itself encodes them.
    public func encode(to encoder: any Encoder) throws {
        try encodeElements(of: self, to: encoder)
    }
}

// MARK: - Value types

extension ObjectId: Codable {
    /// Decodes an id from its 24-digit hexadecimal string; a malformed string is
    /// `DecodingError.dataCorrupted`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let id = ObjectId(string: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "'\(text)' is not an ObjectId: 24 hexadecimal digits are needed.")
        }
        self = id
    }

    /// Encodes the id as its 24-digit lowercase hexadecimal string (``stringValue``).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(stringValue)
    }
}
