public import Logging

/// The supervisor's "running in background" notification, once shown: its body is updated in
/// place as the workers' states change, and it is closed when the plugin stops.
public protocol SupervisorNotification: Sendable {
    /// Replaces the body in place; does nothing when it is unchanged.
    func update(body: String) async
    /// Closes the notification and whatever connection shows it.
    func close() async
}

/// Shows the supervisor's notification: an optional piece, so that a host that only supervises
/// links no D-Bus. VigilSupervisorDesktop's `DesktopNotifier` (freedesktop Notifications over the
/// session bus) is the one `Vigil` gives the built-in supervisor; without a notifier the plugin
/// shows none and keeps systemd's channel.
public protocol SupervisorNotifier: Sendable {
    /// Shows the notification; `nil` (logged, not an error) when there is nowhere to show it.
    func show(
        environment: [String: String], appName: String, summary: String, body: String, logger: Logger
    ) async -> (any SupervisorNotification)?
}
