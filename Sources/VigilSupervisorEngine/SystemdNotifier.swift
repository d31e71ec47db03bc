internal import CVigilSpawn

#if canImport(Glibc)
import Glibc
#endif

/// Speaks the sd_notify protocol to the service manager that started the host: one datagram of
/// newline-separated `KEY=VALUE` lines to `$NOTIFY_SOCKET` (`@` = abstract namespace).
public struct SystemdNotifier: Sendable {
    /// The socket address from `NOTIFY_SOCKET`.
    public let address: String
    /// Half of `WATCHDOG_USEC` when the service manager watches this process, else `nil`.
    public let watchdogPingInterval: Duration?

    /// A notifier for `environment`, or `nil` when `NOTIFY_SOCKET` is unset (not under systemd).
    public init?(environment: [String: String]) {
        guard let address = environment["NOTIFY_SOCKET"], address.hasPrefix("/") || address.hasPrefix("@") else {
            return nil
        }
        self.address = address
        self.watchdogPingInterval = Self.watchdogPingInterval(environment: environment)
    }

    /// Half the watchdog interval when `WATCHDOG_USEC` is set and `WATCHDOG_PID`, if set, is us
    /// (sd_watchdog_enabled(3)).
    public static func watchdogPingInterval(environment: [String: String]) -> Duration? {
        guard let text = environment["WATCHDOG_USEC"], let usec = UInt64(text), usec > 0 else { return nil }
        if let pidText = environment["WATCHDOG_PID"], Int32(pidText) != getpid() { return nil }
        return .microseconds(Int64(usec / 2))
    }

    /// Sends the assignments (joined by newlines) as one datagram; returns 0 or -errno.
    @discardableResult
    public func send(_ assignments: [String]) -> Int32 {
        let message = assignments.joined(separator: "\n")
        return message.withCString { vigil_notify_send(address, $0, strlen($0)) }
    }
}
