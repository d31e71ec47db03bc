/// The host's `[host]` table in `vigil.toml`: its name and what it declares to plugins.
public struct HostDeclarations: Sendable, Hashable {
    /// The application name shown in `pactl`, notifications and status (`name`).
    public var name: String?
    /// Declared background modes (`background_modes`, for example `["audio"]`).
    public var backgroundModes: [String]
    /// Declared services (`services`, for example `["supervisor"]`).
    public var services: [String]

    /// Creates declarations.
    public init(name: String? = nil, backgroundModes: [String] = [], services: [String] = []) {
        self.name = name
        self.backgroundModes = backgroundModes
        self.services = services
    }
}
