/// What to run as one supervised worker, and how to keep it alive.
public struct WorkerSpec: Sendable, Hashable {
    /// When a worker that exited is started again (systemd's `Restart=`).
    public enum RestartPolicy: String, Sendable, Hashable, CaseIterable {
        /// Restart whatever the exit status.
        case always
        /// Restart after a non-zero exit, a death by signal other than SIGHUP/SIGINT/SIGTERM/SIGPIPE,
        /// a failed exec or a watchdog timeout.
        case onFailure = "on-failure"
        /// Never restart.
        case never
    }

    /// How the worker says it is up (systemd's `Type=`).
    /// What a worker that ends up `failed` means for the rest (systemd's `FailureAction=`).
    public enum FailureAction: String, Sendable, Hashable, CaseIterable {
        /// Nothing: the other workers keep running; the plugin is degraded (the default).
        case none
        /// Stop every worker: the supervisor plugin fails as a whole.
        case stop
    }

    public enum ReadinessType: String, Sendable, Hashable, CaseIterable {
        /// Up once `exec` succeeded (state `running`; `READY=1` still moves it to `ready`).
        case simple
        /// Up once it sends `READY=1` on its `NOTIFY_SOCKET` (state `starting` until then).
        case notify
    }

    /// A unique name, used in status, logs and the notify socket's file name.
    public var name: String
    /// The program: an absolute or relative path, or a name looked up in `PATH`.
    public var command: String
    /// Arguments after the program name.
    public var arguments: [String]
    /// Variables added to (or replacing those of) the supervisor's environment.
    public var environment: [String: String]
    /// The directory the worker starts in; `nil` inherits the supervisor's.
    public var workingDirectory: String?
    /// When the worker is restarted.
    public var restart: RestartPolicy
    /// How the worker reports readiness.
    public var readiness: ReadinessType
    /// Seconds within which the worker must send `WATCHDOG=1`, or it is killed and restarted;
    /// `nil` disables the watchdog. The worker receives `WATCHDOG_USEC` and `WATCHDOG_PID`.
    public var watchdogSeconds: Double?
    /// The worker's `/proc/PID/oom_score_adj` (−1000…1000), or `nil` to inherit.
    public var oomScoreAdjust: Int?
    /// What this worker's failure means for the others (default ``FailureAction/none``).
    public var failureAction: FailureAction

    /// Creates a worker specification.
    public init(
        name: String,
        command: String,
        arguments: [String] = [],
        environment: [String: String] = [:],
        workingDirectory: String? = nil,
        restart: RestartPolicy = .onFailure,
        readiness: ReadinessType = .simple,
        watchdogSeconds: Double? = nil,
        oomScoreAdjust: Int? = nil,
        failureAction: FailureAction = .none
    ) {
        self.name = name
        self.command = command
        self.arguments = arguments
        self.environment = environment
        self.workingDirectory = workingDirectory
        self.restart = restart
        self.readiness = readiness
        self.watchdogSeconds = watchdogSeconds
        self.oomScoreAdjust = oomScoreAdjust
        self.failureAction = failureAction
    }
}

/// Timing and limits shared by every worker of a ``Supervisor``.
public struct SupervisorConfiguration: Sendable, Hashable {
    /// Delay before the first restart; doubles with each quick failure. Zero restarts at once.
    public var backoffInitial: Duration
    /// Upper bound of the restart delay.
    public var backoffMax: Duration
    /// A run at least this long resets the backoff.
    public var stableAfter: Duration
    /// At most this many starts within ``startLimitInterval``; then the worker is marked failed.
    /// Zero disables the limit.
    public var startLimitBurst: Int
    /// The window of the start limit; zero disables the limit.
    public var startLimitInterval: Duration
    /// Time between SIGTERM and SIGKILL when stopping a worker.
    public var stopGrace: Duration

    /// Creates a configuration; the defaults match systemd's (100 ms restart delay, 5 starts in
    /// 10 s) plus a 30 s backoff cap.
    public init(
        backoffInitial: Duration = .milliseconds(100),
        backoffMax: Duration = .seconds(30),
        stableAfter: Duration = .seconds(10),
        startLimitBurst: Int = 5,
        startLimitInterval: Duration = .seconds(10),
        stopGrace: Duration = .seconds(5)
    ) {
        self.backoffInitial = backoffInitial
        self.backoffMax = backoffMax
        self.stableAfter = stableAfter
        self.startLimitBurst = startLimitBurst
        self.startLimitInterval = startLimitInterval
        self.stopGrace = stopGrace
    }
}

extension WorkerSpec {
    /// What makes `workers` unusable together (an invalid name, a name used twice, an empty
    /// command, an out-of-range value), naming the worker and the fix; `nil` when they are usable.
    /// The engine's `Supervisor.validate` and the settings reader both ask this one check.
    public static func problem(in workers: [WorkerSpec]) -> String? {
        var seen = Set<String>()
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        for worker in workers {
            func bad(_ reason: String) -> String { "worker \"\(worker.name)\": \(reason)" }
            guard !worker.name.isEmpty, worker.name.count <= 64, worker.name.allSatisfy(allowed.contains) else {
                return bad("the name must be 1–64 letters, digits, '.', '_' or '-'")
            }
            guard seen.insert(worker.name).inserted else { return bad("the name is used by two workers; rename one") }
            guard !worker.command.isEmpty else { return bad("the command is empty; give a program path or name") }
            if let w = worker.watchdogSeconds, !(w > 0 && w <= 86_400) {
                return bad("watchdog_sec must be more than 0 and at most 86400 seconds")
            }
            if let o = worker.oomScoreAdjust, !(-1000...1000).contains(o) {
                return bad("oom_score_adj must be from -1000 to 1000")
            }
            if let d = worker.workingDirectory, !d.hasPrefix("/") {
                return bad("working_directory must be an absolute path")
            }
            for key in worker.environment.keys where key.isEmpty || key.contains("=") {
                return bad("environment variable name \"\(key)\" is invalid")
            }
        }
        return nil
    }
}
