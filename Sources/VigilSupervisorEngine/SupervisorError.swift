@_exported public import VigilBase

/// An error of the supervisor: what went wrong and how to fix it.
public typealias SupervisorError = CodedError<SupervisorErrorCode>

/// The kind of a ``SupervisorError``, stable for scripts and tests.
public enum SupervisorErrorCode: String, ErrorCode {
    /// A ``WorkerSpec`` is unusable (empty name or command, duplicate name, bad value).
    case invalidWorker = "invalid-worker"
    /// A worker's first start failed (program not found, not executable, bad directory…).
    case spawnFailed = "spawn-failed"
    /// The private directory for the workers' notify sockets could not be created.
    case runtimeDirectory = "runtime-directory"
    /// `start()` was called on a supervisor that is already running or was stopped, or
    /// `reconfigure(workers:)` on one that was stopped.
    case alreadyStarted = "already-started"
    /// A system call the supervisor needs failed (eventfd, thread).
    case system = "system"
}
