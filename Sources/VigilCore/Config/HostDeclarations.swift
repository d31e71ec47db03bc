/// The host's `[host]` table in `vigil.toml`: its name and what it declares to plugins.
public struct HostDeclarations: Sendable, Hashable {
    /// The application name shown in `pactl`, notifications and status (`name`).
    public var name: String?
    /// Declared background modes (`background_modes`, for example `["audio"]`).
    public var backgroundModes: [String]
    /// Declared services (`services`, for example `["supervisor"]`).
    public var services: [String]
    /// Hold a logind sleep *block* lock while the host runs (`inhibit_sleep`, default false).
    public var inhibitSleep: Bool
    /// Tables of `vigil.toml` that another program reads (`foreign_tables`): `vigil check` and the
    /// build do not call them unknown.
    public var foreignTables: [String] = []

    /// Creates declarations.
    public init(
        name: String? = nil, backgroundModes: [String] = [], services: [String] = [], inhibitSleep: Bool = false
    ) {
        self.name = name
        self.backgroundModes = backgroundModes
        self.services = services
        self.inhibitSleep = inhibitSleep
    }
}
