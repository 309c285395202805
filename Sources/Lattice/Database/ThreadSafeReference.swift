import Foundation
import Synchronization

/// Hands an object, ``Results`` or collection to another handle, on any thread or actor.
///
/// ```swift
/// let reference = ThreadSafeReference(to: rex)
/// DispatchQueue.global().async {
///     let lattice = try! Lattice(configuration: configuration)
///     if let dog = lattice.resolve(reference) { print(dog.name) }
/// }
/// ```
/// The reference holds a frozen snapshot of the value (pinning its version) until it is resolved or
/// released. ``Lattice/resolve(_:)`` gives the value at the resolving handle's version (moved forward
/// first when older than the reference's), once: a second resolve gives nil.
public final class ThreadSafeReference<Confined: ThreadConfined>: Sendable {
    private let frozen: Mutex<Frozen<Confined>?>

    /// A reference to `value` (a managed object, results or a managed collection). A reference to an
    /// unmanaged value resolves to nil.
    public init(to value: Confined) {
        frozen = Mutex(Frozen(value))
    }

    /// True once resolved (or when made from an unmanaged value).
    public var isInvalidated: Bool { frozen.withLock { $0 == nil } }

    /// The frozen value, taken out: only the first call gets it.
    fileprivate func take() -> Frozen<Confined>? {
        frozen.withLock { value in
            defer { value = nil }
            return value
        }
    }
}

extension Lattice {
    /// The value `reference` stands for, read through this handle at its current version; nil when it
    /// was deleted meanwhile, belongs to another file, or the reference was resolved before. A handle
    /// whose snapshot is older than the reference's is first moved to the latest commit (``refresh()``),
    /// as Realm does, so an object created just before the reference was made is found.
    public func resolve<Confined: ThreadConfined>(_ reference: ThreadSafeReference<Confined>) -> Confined? {
        guard let frozen = reference.take() else { return nil }
        if writer == nil, let source = frozen.value._latticeHandle, source.env === env,
           source.reading("the reference's version", { $0.id }) > reading("the latest snapshot", { $0.id }) {
            refresh()
        }
        return frozen.value._latticeRebound(in: self)
    }
}

/// A property that keeps an object, ``Results`` or collection usable from any thread: it holds a
/// frozen snapshot and, on each read, gives the value live in a new handle at the latest commit (nil
/// when it was deleted), as Realm's `@ThreadSafe` does.
///
/// ```swift
/// struct Loader: Sendable {
///     @ThreadSafe var dog: Dog?
/// }
/// ```
/// (A `Sendable` class cannot hold it: the wrapper's storage is a `var`; the wrapper itself is
/// `Sendable`, so a struct or an actor can.)
@propertyWrapper
public final class ThreadSafe<Value: ThreadConfined>: Sendable {
    private let frozen: Mutex<Frozen<Value>?>

    /// Holds `wrappedValue` (nil, or an unmanaged value, holds nothing).
    public init(wrappedValue: Value?) {
        frozen = Mutex(wrappedValue.flatMap(Frozen.init))
    }

    /// The value, live in a new handle of the calling thread at the latest commit.
    public var wrappedValue: Value? {
        get {
            guard let frozen = frozen.withLock({ $0 }) else { return nil }
            return frozen.value.thaw()
        }
        set {
            let value = newValue.flatMap(Frozen.init)
            frozen.withLock { $0 = value }
        }
    }
}
