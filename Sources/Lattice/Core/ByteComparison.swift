#if canImport(Glibc)
import Glibc
#endif

extension UnsafeRawBufferPointer {
    /// Whether these bytes sort before `other`: byte by byte (`memcmp`), a prefix first.
    @inline(__always)
    func sortsBefore(_ other: UnsafeRawBufferPointer) -> Bool {
        let common = Swift.min(count, other.count)
        if common > 0, let a = baseAddress, let b = other.baseAddress {
            let order = memcmp(a, b, common)
            if order != 0 { return order < 0 }
        }
        return count < other.count
    }

    /// Whether these are the same bytes as `other` (`memcmp`: the generic `elementsEqual` steps an
    /// iterator per byte when the optimizer does not inline it).
    @inline(__always)
    func sameBytes(as other: UnsafeRawBufferPointer) -> Bool {
        guard count == other.count else { return false }
        guard let a = baseAddress, let b = other.baseAddress else { return true }  // both empty
        return memcmp(a, b, count) == 0
    }
}
