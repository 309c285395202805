import Foundation
import Synchronization

/// Keeps an observer registered: ``invalidate()`` (or releasing the token) stops its deliveries at once,
/// including any already scheduled.
public final class NotificationToken: Sendable {
    let flag: ObserverFlag
    private let stop: Mutex<(@Sendable () -> Void)?>

    init(flag: ObserverFlag, stop: @escaping @Sendable () -> Void) {
        self.flag = flag
        self.stop = Mutex(stop)
    }

    /// Stops the observer: no callback starts after this returns (from the callback itself: after the
    /// callback returns). A callback of a queue observer that another thread is already running when this
    /// is called may still finish. Calling it again does nothing.
    public func invalidate() {
        flag.deactivate()
        let body = stop.withLock { stop -> (@Sendable () -> Void)? in
            defer { stop = nil }
            return stop
        }
        body?()
    }

    deinit { invalidate() }
}

/// Whether an observer still delivers; checked right before every callback.
final class ObserverFlag: Sendable {
    private let active = Atomic<Bool>(true)
    var isActive: Bool { active.load(ordering: .acquiring) }
    func deactivate() { active.store(false, ordering: .releasing) }
}

extension Lattice {
    /// What a ``Lattice/observe(_:)`` block is told.
    public enum Notification: String, Sendable {
        /// The handle moved to a newer commit (its own write or another thread's or process's).
        case didChange
        /// A newer commit exists but ``Lattice/autorefresh`` is false: call ``Lattice/refresh()`` to see it.
        case refreshRequired
    }
}

/// A change of an observed collection (``Results``, ``List``, ``LinkingObjects``).
///
/// Deletions and modifications are indices in the collection as the previous notification saw it,
/// insertions indices in the new one; a moved element is a deletion plus an insertion. Applying the
/// deletions (highest first), then the insertions (lowest first) to the previous contents gives the new
/// contents.
public enum LatticeCollectionChange<Collection> {
    /// The collection when observation began; always the first notification.
    case initial(Collection)
    /// The collection changed.
    case update(Collection, deletions: [Int], insertions: [Int], modifications: [Int])
    /// Observation failed and stopped.
    case error(Error)
}

/// A change of an observed object.
public enum ObjectChange<T> {
    /// Properties of the object changed (each with its old and new value; see ``PropertyChange``).
    case change(T, [PropertyChange])
    /// The object was deleted; always the last notification.
    case deleted
    /// Observation failed and stopped.
    case error(Error)
}

/// One changed property of an observed object.
public struct PropertyChange {
    /// The property's name (for a change found through a link, the link property's name).
    public let name: String
    /// The value before the change: set for single-value properties, nil for links and collections.
    public let oldValue: Any?
    /// The value after the change.
    public let newValue: Any?
}

