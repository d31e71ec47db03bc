@_exported public import VigilBase
import VigilCore

/// An error from the Vigil host runtime: what went wrong and how to fix it.
public struct VigilError: StructuredError, Hashable {
    /// The kind of failure, stable for scripts and tests.
    public enum Code: String, ErrorCode {
        /// The host configuration could not be found or loaded.
        case configuration = "configuration"
        /// The runtime directory for status publication is missing, unsafe or unwritable.
        case runtimeDirectory = "runtime-directory"
        /// A published status file could not be read.
        case statusUnreadable = "status-unreadable"
        /// Another running host holds the lock of the same `vigil.toml`.
        case configInUse = "config-in-use"
        /// A reload was refused: the new `vigil.toml` does not check; the host keeps running the old one.
        case reloadRefused = "reload-refused"
        /// A reload was refused because the new `vigil.toml` changes a key that only a restart
        /// applies (the message names each one); the host keeps running the old configuration.
        case reloadNeedsRestart = "reload-needs-restart"
        /// The host cannot reload: it was not made from a `vigil.toml`.
        case reloadUnsupported = "reload-unsupported"
        /// A reload changed `[metrics] listen` and the new address could not be bound (in use, no
        /// such address): the reload is refused, and the previous address keeps serving.
        case metricsListenFailed = "metrics-listen-failed"
        /// Every activated plugin failed or is blocked by a missing declaration: the host can
        /// keep nothing alive until `vigil.toml`, a manifest or the trust is changed.
        case noPluginCanRun = "no-plugin-can-run"
    }

    /// The kind of failure.
    public let code: Code
    /// The full message: the cause and the remedy.
    public let message: String
    /// The core's error this one reports (with its own code, plugin and location), if any.
    public let cause: CoreError?

    /// Creates an error with a message that states the cause and the remedy.
    public init(code: Code, message: String, cause: CoreError? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }
}
