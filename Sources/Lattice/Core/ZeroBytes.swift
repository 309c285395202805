extension Array where Element == UInt8 {
    /// Appends `count` zero bytes. Large counts go through a zeroed array: appending `repeatElement` is
    /// a generic element-by-element loop in unoptimized builds (seconds for the megabytes of a large
    /// value), while small ones stay free of the temporary array.
    @inline(__always)
    mutating func appendZeros(_ count: Int) {
        if count <= 512 {
            append(contentsOf: repeatElement(0, count: count))
        } else {
            append(contentsOf: [UInt8](repeating: 0, count: count))
        }
    }
}
