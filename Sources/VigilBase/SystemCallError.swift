public import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A failed system or C-library call: its name and the errno it reported.
public struct SystemCallError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The call, e.g. `open`, `snd_pcm_open` or `pa_context_connect`.
    public let call: String
    /// The error number.
    public let errno: Errno

    /// A failure of `call` with `errno`.
    public init(_ call: String, errno: Errno) {
        self.call = call
        self.errno = errno
    }

    /// A failure of `call` with the positive errno value `code` (a negated one is accepted too).
    public init(_ call: String, errno code: Int32) {
        self.init(call, errno: Errno(rawValue: code < 0 ? -code : code))
    }

    /// A failure of `call` with the calling thread's current `errno`.
    public static func current(_ call: String) -> SystemCallError {
        SystemCallError(call, errno: Glibc.errno)
    }

    /// The error number as the C library spells it (`ENOENT`…).
    public var number: Int32 { errno.rawValue }

    /// The system's text for the error number (`strerror`).
    public var reason: String { errno.description }

    /// `call: reason (errno N)`.
    public var description: String { "\(call): \(reason) (errno \(errno.rawValue))" }
}
