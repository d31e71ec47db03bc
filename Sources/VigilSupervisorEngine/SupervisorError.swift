/// An error of the supervisor: what went wrong and how to fix it.
public struct SupervisorError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure, stable for scripts and tests.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Storage: String, Hashable, Sendable {
            case invalidWorker = "invalid-worker"
            case spawnFailed = "spawn-failed"
            case runtimeDirectory = "runtime-directory"
            case alreadyStarted = "already-started"
            case system = "system"
        }
        private let storage: Storage

        /// A ``WorkerSpec`` is unusable (empty name or command, duplicate name, bad value).
        public static let invalidWorker = Code(storage: .invalidWorker)
        /// A worker's first start failed (program not found, not executable, bad directory…).
        public static let spawnFailed = Code(storage: .spawnFailed)
        /// The private directory for the workers' notify sockets could not be created.
        public static let runtimeDirectory = Code(storage: .runtimeDirectory)
        /// `start()` was called on a supervisor that is already running or was stopped.
        public static let alreadyStarted = Code(storage: .alreadyStarted)
        /// A system call the supervisor needs failed (epoll, eventfd, thread).
        public static let system = Code(storage: .system)

        public var description: String { storage.rawValue }
    }

    /// The kind of failure.
    public let code: Code
    /// The cause and the remedy.
    public let message: String

    /// Creates an error whose message states the cause and the remedy.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
