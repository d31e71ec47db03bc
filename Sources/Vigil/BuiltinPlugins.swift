import VigilPlugin

/// The first-party plugin implementations compiled into Vigil: the ONE place built-ins are listed.
enum BuiltinPlugins {
    static var all: [PluginImplementation] {
        [
            // Added at merge: SilentEnginePlugin.implementation (VigilSilentEngine), SupervisorPlugin.implementation (VigilSupervisor).
        ]
    }
}
