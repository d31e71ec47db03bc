public import VigilCore
public import VigilLibraryCheck
public import VigilPlugin

/// Third-party keep-alive plugins shipped as shared libraries.
///
/// ``check(_:)`` runs every check that needs no mapping on a plugin the core loader verified
/// (ELF shape, SONAME, dependencies, descriptor ABI); ``implementation(for:)`` returns the
/// implementation a host runs, which maps the verified bytes from sealed memfds when the plugin
/// starts and unmaps them when it stops. See docs/native-plugins.md.
public enum SharedLibraryPlugins {
    /// The plugin ABI this host implements, as `major.minor`.
    public static var abiVersion: String { "\(VerifiedLibrarySet.abiMajor).\(VerifiedLibrarySet.abiMinor)" }

    /// Checks `plugin`'s library and listed dependencies from their verified bytes. Maps nothing
    /// and runs none of the plugin's code.
    ///
    /// - Throws: ``SharedLibraryError`` for the first problem found.
    public static func check(_ plugin: LoadedPlugin) throws(SharedLibraryError) {
        _ = try VerifiedLibrarySet(plugin)
    }

    /// The implementation that runs `plugin` (checked as by ``check(_:)`` first), confined to the
    /// capabilities of its signed manifest. `acknowledgedUnenforced`: the operator listed it in
    /// `[confinement] acknowledge_unenforced`, so a kernel that cannot enforce all of its confinement
    /// runs it with what it can enforce instead of refusing it.
    public static func implementation(for plugin: LoadedPlugin, acknowledgedUnenforced: Bool = false)
        throws(SharedLibraryError) -> PluginImplementation
    {
        try implementation(
            for: plugin,
            confinement: HelperSession.Confinement(
                capabilities: plugin.manifest.capabilities, acknowledgedUnenforced: acknowledgedUnenforced))
    }

    /// The implementation that runs `plugin` confined by `confinement` (tests give it a kernel's support).
    static func implementation(for plugin: LoadedPlugin, confinement: HelperSession.Confinement)
        throws(SharedLibraryError) -> PluginImplementation
    {
        let set = try VerifiedLibrarySet(plugin)
        return PluginImplementation(entry: plugin.manifest.entry) { context in
            try SharedLibraryKeepAlive(
                set: set, context: context, confinement: confinement, deadlines: HelperSession.Deadlines())
        }
    }
}
