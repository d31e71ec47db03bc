import FoundationEssentials
public import VigilPlugin
import VigilSupervisorEngine

#if canImport(Glibc)
import Glibc
#endif

/// The `supervisor` keep-alive plugin: the Linux counterpart of an Android foreground service.
///
/// On `keepAlive()` it starts the workers of the `[supervisor]` table and keeps them alive,
/// tells systemd `READY=1` and a `STATUS=` line (when `NOTIFY_SOCKET` is set), pings systemd's
/// watchdog from the Swift concurrency runtime (when `WATCHDOG_USEC` is set), and shows one
/// low-urgency desktop notification (with a ``SupervisorNotifier``, when a session bus has a notification
/// server).
public enum SupervisorPlugin {
    /// The implementation for the manifest entry `"supervisor"`, using the host's environment
    /// (``PluginContext/environment``), with no desktop notification (see ``implementation(notifier:)``).
    public static let implementation = implementation(notifier: nil)

    /// The implementation, showing its notification through `notifier` (VigilSupervisorDesktop's
    /// `DesktopNotifier` for the desktop's; `nil` for none).
    public static func implementation(notifier: (any SupervisorNotifier)?) -> PluginImplementation {
        PluginImplementation(entry: "supervisor") { context in
            try SupervisorKeepAlive(context: context, environment: context.environment.variables, notifier: notifier)
        }
    }

    /// The implementation, with the environment given explicitly (`NOTIFY_SOCKET`, `WATCHDOG_USEC`,
    /// `DBUS_SESSION_BUS_ADDRESS`, `XDG_RUNTIME_DIR`, and what workers inherit).
    public static func implementation(
        environment: [String: String], notifier: (any SupervisorNotifier)? = nil
    ) -> PluginImplementation {
        PluginImplementation(entry: "supervisor") { context in
            try SupervisorKeepAlive(context: context, environment: environment, notifier: notifier)
        }
    }
}
