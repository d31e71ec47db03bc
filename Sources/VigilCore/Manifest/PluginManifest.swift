public import VigilPlugin

/// A plugin manifest (`plugin.json`), as parsed after its signature verified.
public struct PluginManifest: Sendable, Hashable {
    /// The `"schema"` tag of the current manifest format: `settings` is a settings schema (each
    /// key's type, range or choices, default and description).
    public static let schema = "vigil.plugin-manifest/v2"
    /// The first format, still read: `settings` holds only default values, and the plugin's table
    /// in `vigil.toml` is checked by the plugin alone when it starts.
    public static let schemaV1 = "vigil.plugin-manifest/v1"
    /// Every `"schema"` tag this version of Vigil reads.
    public static let schemas = [schemaV1, schema]

    /// A file the plugin loads, bound to the manifest by size and SHA-256.
    public struct Resource: Sendable, Hashable {
        /// Path relative to the plugin directory; never escapes it.
        public let path: String
        /// Lower-case hex SHA-256 of the file's bytes.
        public let sha256: String
        /// Size in bytes.
        public let size: Int

        /// Creates a resource entry.
        public init(path: String, sha256: String, size: Int) {
            self.path = path
            self.sha256 = sha256
            self.size = size
        }
    }

    /// A manifest `entry` of kind `shared-library`: a third-party implementation in a shared library
    /// shipped in the plugin directory (`{"kind": "shared-library", "path": "libfoo.so", "abi": 1}`).
    /// The library and every non-system library it needs are listed in ``resources``.
    public struct SharedLibraryEntry: Sendable, Hashable {
        /// The library's path inside the plugin directory; one of ``resources``.
        public let path: String
        /// The plugin ABI major version the library is built for.
        public let abi: Int

        /// Creates a shared-library entry.
        public init(path: String, abi: Int) {
            self.path = path
            self.abi = abi
        }
    }

    /// The plugin's name; equals its directory name and its `[trusted_plugins]` key.
    public let name: String
    /// The plugin's version (SemVer).
    public let version: SemanticVersion
    /// A one-line description.
    public let description: String
    /// Which plugin implementation runs it: a built-in implementation's name, or
    /// `"shared-library"` when ``sharedLibrary`` is set.
    public let entry: String
    /// The shared library that implements the plugin, when `entry` is of kind `shared-library`.
    public let sharedLibrary: SharedLibraryEntry?
    /// What the host must declare or provide.
    public let hostRequirements: [HostRequirement]
    /// Every file the plugin loads.
    public let resources: [Resource]
    /// Default settings, overlaid by the plugin's table in `vigil.toml`.
    public let settings: [String: SettingValue]
    /// What the plugin's table in `vigil.toml` may hold (a v2 manifest); `nil` for a v1 manifest,
    /// whose settings only the plugin itself checks.
    public var settingsSchema: SettingsSchema? = nil
    /// When the signature stops being fresh (`expires`, RFC 3339, signed with the manifest), in
    /// seconds since the Unix epoch; after it, this manifest is refused as a change.
    public var expires: Int64? = nil
    /// What the plugin may do beyond running its own code (`"capabilities"`, signed with the
    /// manifest); ``PluginCapabilities/none`` when the manifest declares none.
    public var capabilities: PluginCapabilities = .none

    /// Creates a manifest value.
    public init(
        name: String, version: SemanticVersion, description: String, entry: String,
        hostRequirements: [HostRequirement], resources: [Resource], settings: [String: SettingValue],
        sharedLibrary: SharedLibraryEntry? = nil
    ) {
        self.sharedLibrary = sharedLibrary
        self.name = name
        self.version = version
        self.description = description
        self.entry = entry
        self.hostRequirements = hostRequirements
        self.resources = resources
        self.settings = settings
    }
}
