/// The lifecycle state of one worker.
public enum WorkerState: String, Sendable, Hashable {
    /// Spawned; waiting for `READY=1` (readiness `notify`).
    case starting
    /// Running and said `READY=1`.
    case ready
    /// Running (readiness `simple`, no `READY=1` yet).
    case running
    /// Said `STOPPING=1`, or is being stopped by the supervisor.
    case stopping
    /// Exited; waiting out the backoff delay before the next start.
    case backingOff = "backing-off"
    /// Gave up: the start limit was hit, or it exited with a failure under restart `never`.
    case failed
    /// Not running and not going to be started (stopped, or exited cleanly without restart).
    case stopped
}

/// How a worker's process ended.
public enum WorkerExit: Sendable, Hashable, CustomStringConvertible {
    /// It exited with a status.
    case exited(Int32)
    /// It was killed by a signal.
    case signaled(Int32, coreDumped: Bool)
    /// It could not be started at all.
    case spawnFailed(String)

    /// The exit status a shell would report: the status, 128 + signal, or 127 for a failed start.
    public var shellStatus: Int32 {
        switch self {
        case .exited(let code): code
        case .signaled(let signal, _): 128 + signal
        case .spawnFailed: 127
        }
    }

    /// Why a worker that ended this way is restarted, as `vigil_worker_restarts_total`'s `reason`
    /// label and the journal's `VIGIL_WORKER_RESTART_REASON` say it (docs/metrics.md): `watchdog`
    /// when the supervisor killed it for a missed watchdog deadline (`watchdogFired`), else `exit`,
    /// `signal` or `start_failure`.
    public func restartReason(watchdogFired: Bool) -> String {
        if watchdogFired { return "watchdog" }
        return switch self {
        case .exited: "exit"
        case .signaled: "signal"
        case .spawnFailed: "start_failure"
        }
    }

    public var description: String {
        switch self {
        case .exited(let code): "exited with status \(code)"
        case .signaled(let signal, let core):
            "killed by signal \(signal) (\(signalName(signal)))" + (core ? ", core dumped" : "")
        case .spawnFailed(let reason): "could not start: \(reason)"
        }
    }
}

/// A snapshot of one worker, for status displays.
public struct WorkerStatus: Sendable, Hashable {
    /// The worker's name.
    public var name: String
    /// Its state.
    public var state: WorkerState
    /// The process id while it runs.
    public var pid: Int32?
    /// How many times it was restarted since the supervisor started.
    public var restarts: Int
    /// How its last process ended.
    public var lastExit: WorkerExit?
    /// The last `STATUS=` text it sent.
    public var statusText: String?
    /// Why it is `failed`, or why it was last restarted.
    public var reason: String?
    /// True while it sends more notify datagrams than the supervisor takes (its `STATUS=` text
    /// is then taken at most once a second).
    public var flooding: Bool
    /// While its process is stopped (SIGTTIN from the terminal, SIGSTOP…): what stopped it and
    /// what to do.
    public var suspended: String?
    /// Why it runs without its cgroup while the other workers keep theirs (its own children are
    /// then cleaned up by process group only).
    public var cgroupProblem: String?

    /// Creates a status snapshot.
    public init(
        name: String, state: WorkerState, pid: Int32?, restarts: Int, lastExit: WorkerExit? = nil,
        statusText: String? = nil, reason: String? = nil, flooding: Bool = false, suspended: String? = nil,
        cgroupProblem: String? = nil
    ) {
        self.name = name
        self.state = state
        self.pid = pid
        self.restarts = restarts
        self.lastExit = lastExit
        self.statusText = statusText
        self.reason = reason
        self.flooding = flooding
        self.suspended = suspended
        self.cgroupProblem = cgroupProblem
    }
}

/// Something that happened to a worker, delivered on the supervisor's own thread (do not block).
public struct SupervisorEvent: Sendable, Hashable {
    /// What happened.
    public enum Kind: Sendable, Hashable {
        /// A process was started (first start or restart).
        case started
        /// The worker sent `READY=1`.
        case ready
        /// The worker's `STATUS=` text changed.
        case statusChanged
        /// The process ended and will be restarted after `delay`.
        case crashed(WorkerExit, restartIn: Duration)
        /// The worker gave up (start limit, or a failure under restart `never`).
        case failed(String)
        /// The worker stopped for good (clean exit without restart, or stopped by the supervisor).
        case stopped
        /// The worker missed its watchdog deadline and was killed.
        case watchdogTimeout
        /// The worker started or stopped flooding its notify socket (see ``WorkerStatus/flooding``).
        case floodingChanged
    }

    /// What happened.
    public var kind: Kind
    /// The worker's status right after it happened.
    public var worker: WorkerStatus
}

func signalName(_ signal: Int32) -> String {
    let names: [Int32: String] = [
        1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE",
        9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM",
        18: "SIGCONT", 19: "SIGSTOP", 20: "SIGTSTP", 21: "SIGTTIN", 22: "SIGTTOU",
    ]
    return names[signal] ?? "signal \(signal)"
}
