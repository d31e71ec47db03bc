/// A change a running plugin reports to the host.
///
/// The host turns these into status transitions and ``PluginEvent``s on its event stream, the
/// counterpart of the `onPlaybackStateChanged` events of iOS background-audio modules.
public enum PluginEvent: Sendable, Hashable {
    /// `run()` acquired what it keeps alive: the host shows the plugin `running` (a `resumed`
    /// event after a restart for system sleep). Reported once per `run()`, before any other event
    /// counts; an error thrown before it is the plugin's start failure.
    case ready
    /// The plugin lost what it keeps alive (sound server died, device unplugged, worker crashed)
    /// and is trying to get it back.
    case interrupted(reason: String)
    /// The plugin is fully working again after an interruption.
    case resumed
    /// The plugin gave up getting back what it lost: the host cancels its `run()`, and it stays
    /// `failed` until the next `keepAlive()`.
    case resumeFailed(reason: String)
    /// The plugin's details changed (for example the device it plays to, or a worker's state).
    case detailsChanged
    /// The kernel refused the plugin an operation its confinement does not allow, with the
    /// capability that would allow it (reported by the host for a shared-library plugin's helper
    /// process; it changes no state).
    case denied(ConfinementDenial)
}

/// The channel through which a plugin reports ``PluginEvent``s to the host. Safe to call from
/// any thread; it never blocks.
public struct PluginReporter: Sendable {
    private let sink: @Sendable (PluginEvent) -> Void

    /// Creates a reporter that forwards every event to `sink`.
    public init(_ sink: @escaping @Sendable (PluginEvent) -> Void) {
        self.sink = sink
    }

    /// Reports `event` to the host.
    public func report(_ event: PluginEvent) {
        sink(event)
    }

    /// Reports ``PluginEvent/ready``: `run()` holds what it keeps alive.
    public func ready() {
        sink(.ready)
    }
}
