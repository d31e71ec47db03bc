import VigilPlugin
import VigilSupervisor

/// The first-party plugin implementations compiled into Vigil: the ONE place built-ins are listed.
enum BuiltinPlugins {
    static var all: [PluginImplementation] {
        [
            SupervisorPlugin.implementation
        ]
    }
}
