import Foundation

// The key-path forms of `observe(keyPaths:)`: the properties that count as modifications named by Swift
// key paths (`[\.name, \.dogs]`) instead of strings. Each key path names one `@Persisted` property of
// the observed class (a single value, a link, a collection or a LinkingObjects property); one that reads
// none hands `.error` to the block. Paths through to-one links (`\.owner?.name`) name `"owner.name"`. An empty
// array means what `[] as [String]` means: no property counts.

/// The names of the properties `keyPaths` read, or nil after handing the error to `fail`. Without a
/// handle (an unmanaged object or collection) the names are not needed: the string form reports that.
private func propertyNames<Root: Object>(_ keyPaths: [PartialKeyPath<Root>], in lattice: Lattice?, _ fail: (LatticeError) -> Void) -> [String]? {
    guard let lattice else { return [] }
    do {
        return try KeyPathResolver<Root>.of(lattice).names(keyPaths)
    } catch {
        fail(error as? LatticeError ?? .invalidQuery(message: "\(error)"))
        return nil
    }
}

/// The token of an observation that never started.
private var inertToken: NotificationToken { NotificationToken(flag: ObserverFlag(), stop: {}) }

extension Results {
    /// ``observe(keyPaths:_:)`` with the properties named by key paths.
    ///
    /// ```swift
    /// let token = dogs.observe(keyPaths: [\.name, \.age]) { change in ... }
    /// ```
    public func observe(keyPaths: [PartialKeyPath<Element>],
                        _ block: @escaping (LatticeCollectionChange<Results<Element>>) -> Void) -> NotificationToken {
        guard let names = propertyNames(keyPaths, in: lattice, { block(.error($0)) }) else { return inertToken }
        return observe(keyPaths: names, block)
    }

    /// ``observe(keyPaths:on:_:)`` with the properties named by key paths.
    public func observe(keyPaths: [PartialKeyPath<Element>], on queue: DispatchQueue?,
                        _ block: @escaping @Sendable (LatticeCollectionChange<Results<Element>>) -> Void) -> NotificationToken {
        guard let names = propertyNames(keyPaths, in: lattice, { block(.error($0)) }) else { return inertToken }
        return observe(keyPaths: names, on: queue, block)
    }
}

extension List where Element: Object {
    /// ``observe(keyPaths:_:)`` with the element properties named by key paths.
    public func observe(keyPaths: [PartialKeyPath<Element>],
                        _ block: @escaping (LatticeCollectionChange<List<Element>>) -> Void) -> NotificationToken {
        guard let names = propertyNames(keyPaths, in: managed?.owner._lattice, { block(.error($0)) }) else { return inertToken }
        return observe(keyPaths: names, block)
    }
}

extension MutableSet where Element: Object {
    /// ``observe(keyPaths:_:)`` with the element properties named by key paths.
    public func observe(keyPaths: [PartialKeyPath<Element>],
                        _ block: @escaping (LatticeCollectionChange<MutableSet<Element>>) -> Void) -> NotificationToken {
        guard let names = propertyNames(keyPaths, in: managed?.owner._lattice, { block(.error($0)) }) else { return inertToken }
        return observe(keyPaths: names, block)
    }
}

extension LinkingObjects {
    /// ``observe(keyPaths:_:)`` with the properties of the linking objects named by key paths.
    public func observe(keyPaths: [PartialKeyPath<Element>],
                        _ block: @escaping (LatticeCollectionChange<LinkingObjects<Element>>) -> Void) -> NotificationToken {
        guard let names = propertyNames(keyPaths, in: managed?.owner._lattice, { block(.error($0)) }) else { return inertToken }
        return observe(keyPaths: names, block)
    }
}

extension LatticeObservable where Self: Object {
    /// ``observe(keyPaths:_:)`` with the properties named by key paths.
    ///
    /// ```swift
    /// let token = dog.observe(keyPaths: [\.name, \.owner]) { change in ... }
    /// ```
    public func observe(keyPaths: [PartialKeyPath<Self>], _ block: @escaping (ObjectChange<Self>) -> Void) -> NotificationToken {
        guard let names = propertyNames(keyPaths, in: _lattice, { block(.error($0)) }) else { return inertToken }
        return observe(keyPaths: names, block)
    }

    /// ``observe(keyPaths:on:_:)`` with the properties named by key paths.
    public func observe(keyPaths: [PartialKeyPath<Self>], on queue: DispatchQueue?,
                        _ block: @escaping @Sendable (ObjectChange<Self>) -> Void) -> NotificationToken {
        guard let names = propertyNames(keyPaths, in: _lattice, { block(.error($0)) }) else { return inertToken }
        return observe(keyPaths: names, on: queue, block)
    }
}
