import Foundation

/// The built-in value type of a property, for encoding without type erasure.
///
/// `PersistedField.encode` and `_Persistable.key(fromPayload:into:)` are type-erased: every call runs
/// generic code that copies the value through its value witnesses and reaches the codec through two
/// witness tables, which costs several times the encoding itself on every add. For the value types
/// Lattice ships, these switches call the same codec (`_latticeEncode`, `_latticeKey`) on the concrete
/// type instead, reading a field's value in place.
enum ValueKind {
    case int, int64, int32, int16, int8, bool, double, float, string, date, data, uuid, objectId
    case optionalInt, optionalInt64, optionalInt32, optionalBool, optionalDouble, optionalString, optionalDate
    case optionalData, optionalUUID
    /// Any other type (links, collections, enums, Decimal, ...): use the type-erased path.
    case other

    init(_ type: any _Persistable.Type) {
        switch type {
        case is Int.Type: self = .int
        case is Int64.Type: self = .int64
        case is Int32.Type: self = .int32
        case is Int16.Type: self = .int16
        case is Int8.Type: self = .int8
        case is Bool.Type: self = .bool
        case is Double.Type: self = .double
        case is Float.Type: self = .float
        case is String.Type: self = .string
        case is Date.Type: self = .date
        case is Data.Type: self = .data
        case is UUID.Type: self = .uuid
        case is ObjectId.Type: self = .objectId
        case is Int?.Type: self = .optionalInt
        case is Int64?.Type: self = .optionalInt64
        case is Int32?.Type: self = .optionalInt32
        case is Bool?.Type: self = .optionalBool
        case is Double?.Type: self = .optionalDouble
        case is String?.Type: self = .optionalString
        case is Date?.Type: self = .optionalDate
        case is Data?.Type: self = .optionalData
        case is UUID?.Type: self = .optionalUUID
        default: self = .other
        }
    }

    /// Appends the payload of the value stored at a `Persisted` field's address (a `Persisted<T>`
    /// stores its value first; `Persisted.flags(at:)` checks the layout). False for `.other`.
    @inline(__always)
    func encode(at field: UnsafeRawPointer, into out: inout [UInt8]) -> Bool {
        @inline(__always)
        func encode<T: _Persistable>(_: T.Type) -> Bool {
            field.assumingMemoryBound(to: T.self).pointee._latticeEncode(into: &out)
            return true
        }
        switch self {
        case .int: return encode(Int.self)
        case .int64: return encode(Int64.self)
        case .int32: return encode(Int32.self)
        case .int16: return encode(Int16.self)
        case .int8: return encode(Int8.self)
        case .bool: return encode(Bool.self)
        case .double: return encode(Double.self)
        case .float: return encode(Float.self)
        case .string: return encode(String.self)
        case .date: return encode(Date.self)
        case .data: return encode(Data.self)
        case .uuid: return encode(UUID.self)
        case .objectId: return encode(ObjectId.self)
        case .optionalInt: return encode(Int?.self)
        case .optionalInt64: return encode(Int64?.self)
        case .optionalInt32: return encode(Int32?.self)
        case .optionalBool: return encode(Bool?.self)
        case .optionalDouble: return encode(Double?.self)
        case .optionalString: return encode(String?.self)
        case .optionalDate: return encode(Date?.self)
        case .optionalData: return encode(Data?.self)
        case .optionalUUID: return encode(UUID?.self)
        case .other: return false
        }
    }

    /// Appends the index key of an encoded payload. False for `.other`.
    @inline(__always)
    func key(fromPayload payload: UnsafeRawBufferPointer, into out: inout [UInt8]) -> Bool {
        @inline(__always)
        func key<T: _Persistable>(_: T.Type) -> Bool {
            T._latticeDecode(payload)._latticeKey(into: &out)
            return true
        }
        switch self {
        case .int: return key(Int.self)
        case .int64: return key(Int64.self)
        case .int32: return key(Int32.self)
        case .int16: return key(Int16.self)
        case .int8: return key(Int8.self)
        case .bool: return key(Bool.self)
        case .double: return key(Double.self)
        case .float: return key(Float.self)
        case .string: return key(String.self)
        case .date: return key(Date.self)
        case .data: return key(Data.self)
        case .uuid: return key(UUID.self)
        case .objectId: return key(ObjectId.self)
        case .optionalInt: return key(Int?.self)
        case .optionalInt64: return key(Int64?.self)
        case .optionalInt32: return key(Int32?.self)
        case .optionalBool: return key(Bool?.self)
        case .optionalDouble: return key(Double?.self)
        case .optionalString: return key(String?.self)
        case .optionalDate: return key(Date?.self)
        case .optionalData: return key(Data?.self)
        case .optionalUUID: return key(UUID?.self)
        case .other: return false
        }
    }

    /// The value of a non-optional integer payload, nil for other kinds.
    @inline(__always)
    func integer(fromPayload payload: UnsafeRawBufferPointer) -> Int64? {
        switch self {
        case .int: return Int64(Int._latticeDecode(payload))
        case .int64: return Int64._latticeDecode(payload)
        case .int32: return Int64(Int32._latticeDecode(payload))
        case .int16: return Int64(Int16._latticeDecode(payload))
        case .int8: return Int64(Int8._latticeDecode(payload))
        default: return nil
        }
    }
}
