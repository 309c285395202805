import Foundation
import XCTest
@testable import Lattice

/// An observer standing for a queue observer that is computing its change when another thread
/// invalidates the token: it invalidates from another thread itself, then reports whether it would
/// still call back (its own flag, which `update` checks again before calling back).
private final class InvalidatedWhileComputing: HandleObserver {
    let flag = ObserverFlag()
    private var calls = 0
    private let token: Locked<NotificationToken?>
    private let stillActive: Locked<Bool?>
    private let done: DispatchSemaphore

    init(token: Locked<NotificationToken?>, stillActive: Locked<Bool?>, done: DispatchSemaphore) {
        self.token = token
        self.stillActive = stillActive
        self.done = done
    }

    func update(_ context: DeliveryContext) {
        calls += 1
        if calls == 1 {
            done.signal()  // the initial delivery
            return
        }
        guard calls == 2 else { return }
        let token = self.token
        DispatchQueue.global().sync { token.withLock { $0 }?.invalidate() }
        let active = flag.isActive
        stillActive.withLock { $0 = active }
        done.signal()
    }

    func skip(_ context: DeliveryContext) {}
}

final class QueueObserverInvalidationTests: XCTestCase {
    /// A token invalidated from another thread while its queue observer computes a change (after the
    /// delivery checked the token) stops the observer itself: its callback is not called.
    func testInvalidatingFromAnotherThreadDuringAQueueDeliveryStopsTheCallback() throws {
        let db = makeTempDatabase("queue-invalidation")
        let lattice = try db.open([FixtureItem.self])
        let token = Locked<NotificationToken?>(nil)
        let stillActive = Locked<Bool?>(nil)
        let done = DispatchSemaphore(value: 0)
        let started = QueueDelivery.start(from: lattice, on: DispatchQueue(label: "queue-invalidation"),
                                          onError: { XCTFail("unexpected error \($0)") }) { _ in
            InvalidatedWhileComputing(token: token, stillActive: stillActive, done: done)
        }
        token.withLock { $0 = started }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success, "the initial delivery")

        try lattice.write {
            let item = FixtureItem()
            item.id = 1
            try lattice.add(item)
        }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success, "the delivery of the commit")
        XCTAssertEqual(stillActive.withLock { $0 }, false, "the observer must not call back once invalidate() returned")
    }
}
