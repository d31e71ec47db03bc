/// A keep-alive plugin implementation: the code behind a signed manifest's `entry`.
///
/// The host creates one instance per activated plugin, through a ``PluginImplementation``,
/// only after the plugin's manifest verified against its trusted key and its host requirements
/// were met. The host serialises calls: `start()` and `stop()` never overlap on one instance,
/// `start()` is only called on a stopped instance and `stop()` only after `start()` was called
/// (even one that threw). Idempotence across concurrent `keepAlive()`/`stop()` callers is the
/// host's job, not the plugin's.
///
/// Blocking work (audio writes, waiting on child processes) must run on threads the plugin owns,
/// never on Swift's cooperative pool.
public protocol KeepAlivePlugin: AnyObject, Sendable {
    /// Starts keeping the host alive and returns once the plugin is running.
    ///
    /// - Throws: an error whose description says what failed and how to fix it. The host shows it
    ///   as the plugin's `failed` status; other plugins are not affected.
    func start() async throws

    /// Stops everything `start()` started and returns once every resource is released.
    func stop() async

    /// Plugin-specific details for `vigil status`, such as `["device": "pulse", "mode": "zero"]`.
    func details() async -> [String: String]
}

/// How the host makes instances of one plugin implementation.
public struct PluginImplementation: Sendable {
    /// The manifest `entry` this implementation answers to, for example `"silent-engine"`.
    public let entry: String

    /// Makes an instance. Validate settings here and throw a ``PluginError`` for a bad one.
    public let make: @Sendable (PluginContext) throws -> any KeepAlivePlugin

    /// Creates an implementation for the manifest entry `entry`.
    public init(entry: String, make: @escaping @Sendable (PluginContext) throws -> any KeepAlivePlugin) {
        self.entry = entry
        self.make = make
    }
}
