import VigilPlugin

/// The first-party plugin implementations compiled into Vigil: the ONE place built-ins are listed.
enum BuiltinPlugins {
    static var all: [PluginImplementation] {
        [
            // TODO(lead, at merge): register the first-party implementations here once their
            // branches land — `SilentEnginePlugin.implementation` (import VigilSilentEngine) and
            // `SupervisorPlugin.implementation` (import VigilSupervisor). Until then a manifest
            // naming them fails with PluginError.unknownEntry and shows as `failed` in status.
        ]
    }
}
