/// The error type most Vigil modules throw: one of the module's ``ErrorCode``s, the plugin
/// concerned, the message (cause and remedy) and the typed error underneath, if any.
///
/// A module names its specialisation (`public typealias CryptoError = CodedError<CryptoErrorCode>`)
/// and adds its factory functions in an extension of that name.
public struct CodedError<Code: ErrorCode>: StructuredError, Hashable {
    /// The kind of failure.
    public let code: Code
    /// The plugin concerned, if any.
    public let plugin: String?
    /// The cause and the remedy.
    public let message: String
    /// The typed error underneath (a system call's errno, a library's error), if any.
    public let cause: ErrorCause?

    /// Creates an error; `message` states the cause and the remedy.
    public init(code: Code, plugin: String? = nil, message: String, cause: ErrorCause? = nil) {
        self.code = code
        self.plugin = plugin
        self.message = message
        self.cause = cause
    }
}

/// The typed error underneath another one, kept as a value (compare, hash, cast back with
/// ``error``): a ``SystemCallError``, a crypto refusal, a D-Bus error…
public struct ErrorCause: Sendable, Hashable, CustomStringConvertible {
    /// The underlying error; cast it to its type (`cause.error as? CryptoError`).
    public let error: any Error & Sendable & CustomStringConvertible
    /// The same value, for equality and hashing.
    private let key: any Hashable & Sendable

    /// Wraps `error`.
    public init(_ error: some Error & Sendable & Hashable & CustomStringConvertible) {
        self.error = error
        self.key = error
    }

    /// The failed system call, when that is the cause.
    public var systemCall: SystemCallError? { error as? SystemCallError }

    public var description: String { error.description }

    public static func == (lhs: ErrorCause, rhs: ErrorCause) -> Bool {
        erase(lhs.key) == erase(rhs.key)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(Self.erase(key))
    }

    private static func erase(_ value: some Hashable) -> AnyHashable { AnyHashable(value) }
}
