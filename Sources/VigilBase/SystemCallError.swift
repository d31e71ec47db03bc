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

    /// A failure of `call` with the calling thread's current `errno`. Call it right after the
    /// failing call, before anything else can change `errno`; ``check(_:retryingInterrupts:_:)``
    /// does that for you.
    public static func current(_ call: String) -> SystemCallError {
        SystemCallError(call, errno: Glibc.errno)
    }

    /// Runs `body`, a C call that returns -1 (or any negative value) and sets `errno` on
    /// failure, retrying `EINTR` unless told not to (swift-system's `valueOrErrno`), and
    /// returns its result. `errno` is read right after the failing call, before any other code.
    /// - Throws: ``SystemCallError`` naming `call`.
    @discardableResult
    package static func check<Result: FixedWidthInteger>(
        _ call: String, retryingInterrupts: Bool = true, _ body: () -> Result
    ) throws(SystemCallError) -> Result {
        while true {
            let result = body()
            if result >= 0 { return result }
            let number = Glibc.errno
            if number == EINTR && retryingInterrupts { continue }
            throw SystemCallError(call, errno: number)
        }
    }

    /// Runs `body`, a call that returns a negated errno on failure (sd-bus, our C shims), and
    /// returns its non-negative result.
    /// - Throws: ``SystemCallError`` naming `call`.
    @discardableResult
    package static func checkNegated(_ call: String, _ body: () -> Int32) throws(SystemCallError) -> Int32 {
        let result = body()
        if result < 0 { throw SystemCallError(call, errno: -result) }
        return result
    }

    /// The error number as the C library spells it (`ENOENT`…).
    public var number: Int32 { errno.rawValue }

    /// The system's text for the error number (`strerror`).
    public var reason: String { errno.description }

    /// `call: reason (errno N)`.
    public var description: String { "\(call): \(reason) (errno \(errno.rawValue))" }
}
