#if canImport(Glibc)
import Glibc
#endif

extension UnsafeRawBufferPointer {
    /// Whether these are the same bytes as `other` (`memcmp`: the generic `elementsEqual` steps an
    /// iterator per byte when the optimizer does not inline it).
    @inline(__always)
    func sameBytes(as other: UnsafeRawBufferPointer) -> Bool {
        guard count == other.count else { return false }
        guard let a = baseAddress, let b = other.baseAddress else { return true }  // both empty
        return memcmp(a, b, count) == 0
    }
}
