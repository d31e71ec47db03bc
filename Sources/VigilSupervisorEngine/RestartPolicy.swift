/// What happens after a worker's process ends: restart (after a backoff), stop, or give up.
///
/// A pure value: it reads no clock and starts no process. The caller passes the times (seconds
/// on the supervisor's injected clock, ``SupervisorClock``) and keeps the worker's ``History``.
struct RestartPolicy: Sendable, Hashable {
    /// The worker's `restart` setting.
    var restart: WorkerSpec.RestartPolicy
    /// The first backoff delay, in seconds.
    var backoffInitial: Double
    /// The cap of the doubling delay, in seconds.
    var backoffMax: Double
    /// A run at least this long resets the backoff, in seconds.
    var stableAfter: Double
    /// Starts allowed within ``startLimitInterval`` (0: no limit).
    var startLimitBurst: Int
    /// The start-limit window, in seconds (0: no limit).
    var startLimitInterval: Double

    init(restart: WorkerSpec.RestartPolicy, configuration: SupervisorConfiguration) {
        self.restart = restart
        backoffInitial = configuration.backoffInitial.seconds
        backoffMax = configuration.backoffMax.seconds
        stableAfter = configuration.stableAfter.seconds
        startLimitBurst = configuration.startLimitBurst
        startLimitInterval = configuration.startLimitInterval.seconds
    }

    /// One worker's restart bookkeeping.
    struct History: Sendable, Hashable {
        /// Start times inside the start-limit window.
        var startTimes: [Double] = []
        /// Quick failures in a row (the backoff exponent).
        var quickFailures = 0
    }

    /// The verdict on a process that ended.
    enum Decision: Sendable, Hashable {
        /// Start it again after `delay` seconds.
        case restart(after: Double)
        /// Leave it stopped; `failed` says whether that is a failure.
        case stop(failed: Bool)
    }

    /// The verdict on a start that is due.
    enum StartVerdict: Sendable, Hashable {
        case allowed
        /// `starts` starts already happened within the window.
        case limitHit(starts: Int)
    }

    /// Whether `exit` counts as a failure (systemd's `on-failure`): a non-zero status, a death by
    /// any signal but SIGHUP, SIGINT, SIGTERM or SIGPIPE, a failed start, or a watchdog kill.
    static func isFailure(_ exit: WorkerExit, watchdogFired: Bool) -> Bool {
        if watchdogFired { return true }
        switch exit {
        case .exited(let code): return code != 0
        case .signaled(let signal, _): return ![1, 2, 15, 13].contains(signal)
        case .spawnFailed: return true
        }
    }

    /// Decides what follows a process that ran `ranFor` seconds and ended with `exit`; updates
    /// `history`'s backoff exponent when it restarts.
    func afterExit(_ exit: WorkerExit, watchdogFired: Bool, ranFor: Double, history: inout History) -> Decision {
        let failure = Self.isFailure(exit, watchdogFired: watchdogFired)
        guard restart == .always || (restart == .onFailure && failure) else { return .stop(failed: failure) }
        if ranFor >= stableAfter { history.quickFailures = 0 }
        var delay = backoff(afterFailures: history.quickFailures)
        // A program that cannot even be executed must not spin the CPU.
        if case .spawnFailed = exit { delay = max(delay, 0.1) }
        history.quickFailures += 1
        return .restart(after: delay)
    }

    /// The backoff delay after `failures` quick failures in a row: the first delay doubled each
    /// time, capped.
    func backoff(afterFailures failures: Int) -> Double {
        var delay = backoffInitial
        for _ in 0..<min(failures, 64) {
            delay *= 2
            if delay >= backoffMax { break }
        }
        return min(backoffMax, delay)
    }

    /// Whether a start at `now` is within the start limit; records it when it is.
    func mayStart(at now: Double, history: inout History) -> StartVerdict {
        guard startLimitBurst > 0 && startLimitInterval > 0 else {
            history.startTimes.removeAll()
            return .allowed
        }
        history.startTimes.removeAll { $0 <= now - startLimitInterval }
        if history.startTimes.count >= startLimitBurst { return .limitHit(starts: history.startTimes.count) }
        history.startTimes.append(now)
        return .allowed
    }
}
