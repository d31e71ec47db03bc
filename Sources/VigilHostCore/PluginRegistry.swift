public import VigilPlugin

/// Maps a manifest's `entry` to the ``VigilPlugin/PluginImplementation`` that runs it.
///
/// The host core has no plugin of its own: a host registers the implementations it runs (a
/// supervisor-only host, the supervisor's), and `Vigil`'s `PluginRegistry.builtin` holds every
/// first-party one; a host can add its own in-process implementations with ``registering(_:)``.
public struct PluginRegistry: Sendable {
    private var implementations: [String: PluginImplementation]

    /// Creates a registry holding `implementations`; a later one with the same entry wins.
    public init(_ implementations: [PluginImplementation]) {
        var map: [String: PluginImplementation] = [:]
        for implementation in implementations { map[implementation.entry] = implementation }
        self.implementations = map
    }

    /// A copy of this registry that also holds `implementation`.
    public func registering(_ implementation: PluginImplementation) -> PluginRegistry {
        var copy = self
        copy.implementations[implementation.entry] = implementation
        return copy
    }

    /// The implementation for `entry`, if registered.
    public func implementation(for entry: String) -> PluginImplementation? {
        implementations[entry]
    }

    /// Every registered entry name, sorted.
    public var entries: [String] { implementations.keys.sorted() }
}
