public import VigilPlugin

/// A plugin state change on ``VigilHost/events``, with its reason.
public struct HostEvent: Sendable, Hashable {
    /// What happened.
    public enum Kind: Sendable, Hashable {
        /// The plugin started and is running.
        case started
        /// The plugin was stopped (or reset to idle by `stop()`).
        case stopped
        /// The plugin could not be created or started.
        case failed(PluginFailure)
        /// The plugin's requirements are not met; nothing was started.
        case blocked
        /// The plugin lost what it keeps alive and is trying to get it back.
        case interrupted(reason: String)
        /// The plugin is fully working again.
        case resumed
        /// The plugin gave up after an interruption; it stays stopped until the next `keepAlive()`.
        case resumeFailed(reason: String)
        /// The plugin's details changed.
        case detailsChanged
        /// The plugin's publisher revoked it (a signed revocation list): a running instance was
        /// stopped, and it stays `failed` with this failure (code `revoked`) until a release that
        /// is not revoked is installed and the host restarts.
        case revoked(PluginFailure)
        /// The kernel refused the confined plugin an operation, with the capability that would allow
        /// it (a shared-library plugin's helper reported it); the plugin's state is unchanged.
        case denied(ConfinementDenial)
    }

    /// The plugin's name.
    public let plugin: String
    /// What happened.
    public let kind: Kind
    /// The plugin's state after the change.
    public let state: PluginState

    /// Creates an event.
    public init(plugin: String, kind: Kind, state: PluginState) {
        self.plugin = plugin
        self.kind = kind
        self.state = state
    }
}
