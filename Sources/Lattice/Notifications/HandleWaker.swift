import Foundation
import Synchronization

/// Asks a handle's observation state to take a turn (`HandleObservation.turn()`) where the handle lives,
/// from any thread: on the run loop of the thread that opened it, on the main queue for the main thread
/// (a running main run loop serves the main queue, and so does an async `main`, which runs no run loop),
/// or on the actor a handle opened with `Lattice(configuration:actor:)` is confined to (an actor runs
/// no run loop and may resume on any thread).
///
/// Wake-ups while one is pending are merged: a turn does everything due (prunes stopped observers,
/// moves or delivers), so none is lost.
final class HandleWaker: @unchecked Sendable {
    // @unchecked Sendable is safe: `observation` is read only on the handle's own thread (checked with
    // `pthread_equal`), inside a block that runs isolated to the handle's actor (the one isolation
    // domain the handle may be used in), or once that actor is gone (then no code can run on the handle,
    // and the `scheduled` flag lets one caller in at a time); the other stored properties are immutable
    // or atomic, and other threads only call `RunLoop.perform`, `RunLoop.add(_:forMode:)` and
    // `DispatchQueue.async`, which are thread-safe.
    private weak var observation: HandleObservation?
    private weak var actor: (any Actor)?
    private let confinedToActor: Bool
    private let thread = pthread_self()
    private let runLoop = RunLoop.current
    private let onMainThread = Thread.isMainThread
    private let scheduled = Atomic<Bool>(false)

    init(_ observation: HandleObservation, actor: (any Actor)?) {
        self.observation = observation
        self.actor = actor
        confinedToActor = actor != nil
    }

    /// Whether the delivery is by run loop (keeping the thread's run loop running helps) rather than by actor.
    var usesRunLoop: Bool { !confinedToActor }

    /// The observation state, when called on the thread that opened a handle not confined to an actor;
    /// nil elsewhere (an actor's handle is reached through `wake()` only).
    var observationHere: HandleObservation? {
        !confinedToActor && pthread_equal(thread, pthread_self()) != 0 ? observation : nil
    }

    /// Runs a turn where the handle lives, soon.
    func wake() {
        guard scheduled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        let turn: @Sendable () -> Void = { [self] in
            scheduled.store(false, ordering: .releasing)
            observation?.turn()
        }
        if confinedToActor {
            guard let actor else {
                // The actor is gone, and nothing can run on its handle any more: stopped observers are let
                // go here, which frees the handle they hold (it holds them too).
                observation?.prune()
                scheduled.store(false, ordering: .releasing)
                return
            }
            Task { await Self.run(on: actor, turn) }
        } else if onMainThread {
            DispatchQueue.main.async(execute: turn)
        } else {
            runLoop.perform(turn)
            // A timer due now wakes a sleeping run loop (perform alone does not).
            runLoop.add(Timer(timeInterval: 0, repeats: false) { _ in }, forMode: .default)
        }
    }

    private static func run(on actor: isolated any Actor, _ body: @Sendable () -> Void) { body() }
}
