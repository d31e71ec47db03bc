/// When the status writer tries again after a failed write (a full runtime directory), and which
/// outcomes are news: a pure state machine, time passed in.
///
/// The first failure is retried after ``firstDelay`` seconds, each further one after twice the
/// delay before, up to ``maximumDelay``. The first failure after a success (or at start) and the
/// first success after a failure are reported; the failures between them are not.
struct StatusRetry: Sendable, Equatable {
    /// The delay after the first failure, in seconds.
    static let firstDelay = 1.0
    /// The longest delay between two attempts, in seconds.
    static let maximumDelay = 30.0

    /// Failed attempts since the last success.
    private(set) var failures = 0
    /// When to try again (a ``MonotonicClock`` time), or nil when the last attempt succeeded.
    private(set) var nextAttempt: Double?

    /// The delay before the next attempt after ``failures`` failures, in seconds (0 after a success).
    var delay: Double {
        guard failures > 0 else { return 0 }
        var delay = Self.firstDelay
        for _ in 1..<min(failures, 16) { delay = min(delay * 2, Self.maximumDelay) }
        return delay
    }

    /// Records an attempt made at `now`; returns true when its outcome is news to report.
    mutating func record(success: Bool, at now: Double) -> Bool {
        if success {
            defer {
                failures = 0
                nextAttempt = nil
            }
            return failures > 0
        }
        failures += 1
        nextAttempt = now + delay
        return failures == 1
    }
}
