import VigilHostCheck
import VigilHostCore
import VigilPlugin
import VigilSilentEngine
import VigilSoundscape
import VigilSupervisor
import VigilSupervisorDesktop

/// The first-party plugin implementations compiled into Vigil, one per ``BuiltinEntry`` (the one
/// list of built-ins, which the checks read too).
enum BuiltinPlugins {
    static var all: [PluginImplementation] { BuiltinEntry.allCases.map(implementation) }

    /// Exhaustive: a new built-in entry does not compile until it has its implementation here. The
    /// implementation answers to the entry's name, whatever its module calls it.
    static func implementation(_ entry: BuiltinEntry) -> PluginImplementation {
        let implementation =
            switch entry {
            case .silentEngine: SilentEnginePlugin.implementation
            case .supervisor: SupervisorPlugin.implementation(notifier: DesktopNotifier())
            case .soundscape: SoundscapePlugin.implementation
            }
        return PluginImplementation(entry: entry.rawValue, make: implementation.make)
    }
}

extension PluginRegistry {
    /// The first-party implementations built into Vigil (``BuiltinPlugins``): the umbrella's
    /// default registry.
    public static var builtin: PluginRegistry { PluginRegistry(BuiltinPlugins.all) }
}
