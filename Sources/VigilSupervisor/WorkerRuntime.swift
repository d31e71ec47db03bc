/// The supervisor thread's bookkeeping for one worker (confined to that thread).
final class WorkerRuntime {
    let index: Int
    let spec: WorkerSpec
    let notifyPath: String
    var notifyFD: Int32 = -1

    var state: WorkerState = .stopped
    var pid: Int32?
    var pidfd: Int32 = -1
    var restarts = 0
    var lastExit: WorkerExit?
    var statusText: String?
    var reason: String?

    /// Monotonic start times inside the start-limit window.
    var startTimes: [Double] = []
    /// Quick failures in a row (drives the backoff exponent).
    var quickFailures = 0
    var startedAt: Double = 0
    var restartAt: Double?
    var watchdogInterval: Double?
    var watchdogDeadline: Double?
    var watchdogFired = false
    var killAt: Double?
    var stopRequested = false

    init(index: Int, spec: WorkerSpec, notifyPath: String) {
        self.index = index
        self.spec = spec
        self.notifyPath = notifyPath
    }

    var alive: Bool { pid != nil }

    var status: WorkerStatus {
        WorkerStatus(
            name: spec.name, state: state, pid: pid, restarts: restarts, lastExit: lastExit,
            statusText: statusText, reason: reason)
    }
}
