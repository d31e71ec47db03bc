import Synchronization

/// Collects events from any thread (a stream's, a plugin's reporter, a lock holder's) so that a
/// test can look at them or wait for them.
public final class EventRecorder<Event: Sendable>: Sendable {
    private let events = Mutex<[Event]>([])

    public init() {}

    /// Appends `event`; pass it where a callback is wanted (`onEvent: events.record`).
    public func record(_ event: Event) { events.withLock { $0.append(event) } }

    /// Every event so far, in order.
    public var all: [Event] { events.withLock { $0 } }

    /// Waits up to `timeout` seconds (monotonic) until `predicate` holds for the recorded events.
    public func wait(timeout: Double, until predicate: ([Event]) -> Bool) async -> Bool {
        await RuntimeFixtures.waitUntil(timeout: timeout, interval: .milliseconds(20)) { predicate(all) }
    }
}
