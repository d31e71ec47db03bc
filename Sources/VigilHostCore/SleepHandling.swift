import Logging

/// System sleep handling, an injected and optional component of the host: while the host is up
/// it runs as a structured child of the host's loop and reports what the host's state machine
/// needs; the host asks it to let the system sleep once the audio plugins stopped. The host core
/// knows only this protocol and has none of its own: `Vigil` adds logind's (on the system bus),
/// and a host without one (``VigilHost/Options/makeSleepHandling`` unset or returning `nil`) has no
/// sleep handling and no `sleep` in its status.
package protocol SleepHandling: Sendable {
    /// Runs until cancelled, then releases every lock. `report` is called in order.
    func run(report: @escaping @Sendable (SleepReport) async -> Void) async

    /// The audio plugins stopped for sleep: release what delays it.
    func releaseDelayLock()

    /// The locks held now and why sleep handling is off (`nil` while it is on), for the status.
    var status: (locks: [String], off: String?) { get }
}

/// What sleep handling tells the host.
package enum SleepReport: Sendable, Equatable {
    /// Its first attempt ended (on or off): `keepAlive()` may return.
    case settled
    /// The system is going to sleep (the delay lock is held).
    case coming
    /// The system woke up (the delay lock is taken again).
    case ended
    /// The locks went away with the connection.
    case locksLost
    /// The locks or the reason it is off changed: publish the status.
    case changed
}

/// What a sleep handling is made from: the host's name, `[host] inhibit_sleep`, its environment
/// and logger.
package struct SleepHandlingSetup: Sendable {
    package var hostName: String
    package var inhibitSleep: Bool
    package var environment: [String: String]
    package var logger: Logger
}
