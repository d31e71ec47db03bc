/// The soundscape's time source for its timers (the sleep timer): `ContinuousClock` in a host,
/// any `Clock` in tests (a manual or test clock, so a 24-hour timer runs out in virtual time).
///
/// Time is an offset from the moment the `TimerClock` was made, so the controller needs no
/// clock-specific instant type.
struct TimerClock: Sendable {
    /// Time since the origin.
    let elapsed: @Sendable () -> Duration
    /// Sleeps until ``elapsed`` reaches the offset; throws when cancelled.
    let sleep: @Sendable (_ until: Duration) async throws -> Void

    /// A timer clock on `clock`; its origin is now.
    init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let origin = clock.now
        elapsed = { origin.duration(to: clock.now) }
        sleep = { offset in try await clock.sleep(until: origin.advanced(by: offset), tolerance: .milliseconds(200)) }
    }

    /// The host's clock.
    static var continuous: TimerClock { TimerClock(ContinuousClock()) }
}
