/// The supervisor's time: an injected `Clock`, read as seconds since the supervisor was created.
///
/// Every deadline the supervisor keeps — a restart after its backoff, the start-limit window,
/// the SIGKILL at the end of the stop grace, a worker's watchdog, the spacing of status events —
/// is a time on this clock. A host passes nothing and gets `SuspendingClock` (`CLOCK_MONOTONIC`
/// on Linux, the clock `epoll_wait` timeouts run on); tests pass a `TestClock` (swift-clocks),
/// move it with `advance(by:)` and call ``Supervisor/synchronize()`` to have the supervisor act
/// on what became due, so that backoffs, give-up windows and stop deadlines of minutes take no
/// real time and cannot come out differently on a loaded machine.
struct SupervisorClock: Sendable {
    private let elapsed: @Sendable () -> Duration

    init(_ clock: any Clock<Duration>) {
        self.init(opening: clock)
    }

    private init<C: Clock<Duration>>(opening clock: C) {
        let origin = clock.now
        elapsed = { origin.duration(to: clock.now) }
    }

    /// Seconds since this value was made.
    func seconds() -> Double { elapsed().seconds }
}
