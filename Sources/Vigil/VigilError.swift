public import VigilCore

/// An error from the Vigil host runtime: what went wrong and how to fix it.
public struct VigilError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure, stable for scripts and tests.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Storage: String, Hashable, Sendable {
            case configuration = "configuration"
            case runtimeDirectory = "runtime-directory"
            case statusUnreadable = "status-unreadable"
            case configInUse = "config-in-use"
        }
        private let storage: Storage

        /// The host configuration could not be found or loaded.
        public static let configuration = Code(storage: .configuration)
        /// The runtime directory for status publication is missing, unsafe or unwritable.
        public static let runtimeDirectory = Code(storage: .runtimeDirectory)
        /// A published status file could not be read.
        public static let statusUnreadable = Code(storage: .statusUnreadable)
        /// Another running host holds the lock of the same `vigil.toml`.
        public static let configInUse = Code(storage: .configInUse)

        public var description: String { storage.rawValue }
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

    public var description: String { message }
}
