extension Array where Element: Equatable {
    /// The elements without those equal to the one before them: each value once, for a sorted array.
    func removingAdjacentDuplicates() -> [Element] {
        guard count > 1 else { return self }
        var out: [Element] = [self[0]]
        out.reserveCapacity(count)
        for element in self[1...] where element != out[out.count - 1] { out.append(element) }
        return out
    }
}
