/// The manifest `entry` names of the first-party plugins compiled into Vigil, for checks that
/// must not link the plugins themselves (the build check's tool). `Vigil`'s `PluginRegistry.builtin`
/// holds their implementations; a test keeps the two the same.
public enum BuiltinEntries {
    /// The silent audio stream.
    public static let silentEngine = "silent-engine"
    /// The process supervisor (its workers' commands are checked).
    public static let supervisor = "supervisor"
    /// The soundscape player.
    public static let soundscape = "soundscape"

    /// Every built-in entry.
    public static let all = [silentEngine, supervisor, soundscape]
}
