/// What an announcement does to the other apps' audio while it plays.
public enum AnnouncementPolicy: Sendable, Hashable, CustomStringConvertible {
    /// Lower every other app's stream to `level` (linear amplitude, 0–1) and put it back after.
    case duck(level: Double)
    /// Pause the MPRIS players named in `[announce] players` that are playing (spoken audio:
    /// podcasts, audiobooks), resume them after; nothing else is touched.
    case pauseSpoken
    /// Touch nothing: the prompt plays over the others.
    case mix

    /// WirePlumber's duck level, the default.
    public static let defaultDuckLevel = 0.3

    /// The name written in `vigil.toml` and on the command line: `duck`, `pause-spoken`, `mix`.
    public var name: String {
        switch self {
        case .duck: "duck"
        case .pauseSpoken: "pause-spoken"
        case .mix: "mix"
        }
    }

    public var description: String {
        if case .duck(let level) = self { return "duck (level \(level))" }
        return name
    }
}
