/// The first-party plugins compiled into Vigil, by manifest `entry`: the ONE list of built-ins.
/// The checks use it without linking the plugins (the build check's tool); `Vigil`'s
/// `PluginRegistry.builtin` maps each case to its implementation in an exhaustive `switch`, so a
/// new case does not compile until it has one.
public enum BuiltinEntry: String, Sendable, Hashable, CaseIterable {
    /// The silent audio stream.
    case silentEngine = "silent-engine"
    /// The process supervisor (its workers' commands are checked).
    case supervisor
    /// The soundscape player.
    case soundscape
}

/// The entry names of ``BuiltinEntry``, as the strings manifests hold.
public enum BuiltinEntries {
    /// The silent audio stream.
    public static let silentEngine = BuiltinEntry.silentEngine.rawValue
    /// The process supervisor (its workers' commands are checked).
    public static let supervisor = BuiltinEntry.supervisor.rawValue
    /// The soundscape player.
    public static let soundscape = BuiltinEntry.soundscape.rawValue

    /// Every built-in entry.
    public static let all = BuiltinEntry.allCases.map(\.rawValue)
}
