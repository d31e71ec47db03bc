import VigilPlugin
import VigilSilentEngine
import VigilSoundscape
import VigilSupervisor

/// The first-party plugin implementations compiled into Vigil: the ONE place built-ins are listed.
enum BuiltinPlugins {
    static var all: [PluginImplementation] {
        [
            SilentEnginePlugin.implementation,
            SupervisorPlugin.implementation,
            SoundscapePlugin.implementation,
        ]
    }
}
