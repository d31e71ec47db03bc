import VigilBase

/// The supervisor thread's bookkeeping for one worker (confined to that thread).
final class WorkerRuntime {
    let index: Int
    /// What it runs: replaced by a reload that changed it, once the old process is gone.
    var spec: WorkerSpec
    let notifyPath: String
    var policy: RestartPolicy
    /// A reload changed it: once its process is reaped it starts again from this spec.
    var replacement: WorkerSpec?
    /// A reload removed it: once its process is reaped it is forgotten.
    var retiring = false
    /// The notify socket's number while the loop owns it (`notifyToken`), else -1.
    var notifyFD: Int32 = -1
    var notifyToken: PollLoop.Token?

    var state: WorkerState = .stopped
    var pid: Int32?
    /// The process id of the last process, once it ended (for the restart's log entry).
    var lastPID: Int32?
    /// The pidfd's number while the loop owns it (`pidToken`), else -1.
    var pidfd: Int32 = -1
    var pidToken: PollLoop.Token?
    var restarts = 0
    var lastExit: WorkerExit?
    var statusText: String?
    var reason: String?
    /// Why this worker runs without its cgroup (the others keep theirs); reported once.
    var cgroupProblem: String?
    /// What stopped the running process (SIGTTIN, SIGSTOP…), while it is stopped.
    var suspended: String?

    /// Start times and quick failures, for ``RestartPolicy``.
    var history = RestartPolicy.History()
    var startedAt: Double = 0
    var restartAt: Double?
    var watchdogInterval: Double?
    var watchdogDeadline: Double?
    var watchdogFired = false
    var killAt: Double?
    var stopRequested = false

    /// Notify traffic: datagrams in the current one-second window, and whether the worker floods.
    var notifyWindowStart: Double = 0
    var notifyCount = 0
    var flooding = false
    /// When the last `statusChanged` event went out, and when a held-back one is due.
    var lastStatusEvent: Double = -.infinity
    var statusEventAt: Double?

    init(index: Int, spec: WorkerSpec, notifyPath: String, configuration: SupervisorConfiguration) {
        self.index = index
        self.spec = spec
        self.notifyPath = notifyPath
        self.policy = RestartPolicy(restart: spec.restart, configuration: configuration)
    }

    var alive: Bool { pid != nil }

    var status: WorkerStatus {
        WorkerStatus(
            name: spec.name, state: state, pid: pid, restarts: restarts, lastExit: lastExit,
            statusText: statusText, reason: reason, flooding: flooding, suspended: suspended,
            cgroupProblem: cgroupProblem)
    }
}
