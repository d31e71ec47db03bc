import VigilAudio
import VigilDBus
public import VigilPlugin

/// The `[announce]` table of `vigil.toml`: the default policy and how prompts play.
///
/// ```toml
/// [announce]
/// policy = "duck"          # duck | pause-spoken | mix
/// duck_level = 0.3         # linear amplitude the others are lowered to (0–1)
/// ramp_ms = 20             # how long lowering and restoring take
/// ducking = "auto"         # auto: the server's module-role-ducking if loaded, else Vigil's; client: always Vigil's
/// role = "event"           # media.role of the prompt when Vigil ducks
/// players = ["mpv"]        # MPRIS players pause-spoken pauses (org.mpris.MediaPlayer2.NAME)
/// voice = "en"             # espeak-ng voice for spoken prompts
/// words_per_minute = 175
/// sink = "alsa_output…"    # where prompts play (default: the server's default sink)
/// ```
public struct AnnounceSettings: Sendable, Hashable {
    /// Who lowers the other apps.
    public enum Ducking: String, Sendable, Hashable {
        /// The server, when it ducks by role (PulseAudio's `module-role-ducking` loaded); else Vigil.
        case auto
        /// Always Vigil (client-side), even when the server could.
        case client
    }

    /// The policy of prompts that do not name one.
    public var policy: AnnouncementPolicy
    /// How long lowering (and, again, restoring) takes, in milliseconds (0–1000).
    public var rampMilliseconds: Int
    /// Who lowers the other apps.
    public var ducking: Ducking
    /// The prompt's `media.role` when Vigil ducks (or nothing is ducked).
    public var role: String
    /// MPRIS player names (the part after `org.mpris.MediaPlayer2.`) that `pause-spoken` pauses.
    public var players: [String]
    /// The D-Bus address `pause-spoken` talks to: the session bus's, which a host fills from its
    /// environment (`VigilHost` does); `nil` when there is none.
    public var sessionBus: String?
    /// The espeak-ng voice.
    public var voice: String
    /// Speech rate in words per minute (80–450).
    public var wordsPerMinute: Int
    /// The sink prompts play to; `nil` for the server's default sink.
    public var sink: String?
    /// The sound server (a libpulse server string); `nil` for the system-wide socket only. A host
    /// fills it from its environment (`VigilHost` does: `pulse_server`, else the addresses
    /// `HostEnvironment.soundServerAddresses` names).
    public var pulseServer: String?

    /// Creates settings; the defaults are those of an empty `[announce]` table.
    public init(
        policy: AnnouncementPolicy = .duck(level: AnnouncementPolicy.defaultDuckLevel), rampMilliseconds: Int = 20,
        ducking: Ducking = .auto, role: String = "event", players: [String] = [], sessionBus: String? = nil,
        voice: String = "en",
        wordsPerMinute: Int = 175, sink: String? = nil, pulseServer: String? = nil
    ) {
        self.policy = policy
        self.rampMilliseconds = rampMilliseconds
        self.ducking = ducking
        self.role = role
        self.players = players
        self.sessionBus = sessionBus
        self.voice = voice
        self.wordsPerMinute = wordsPerMinute
        self.sink = sink
        self.pulseServer = pulseServer
    }

    /// The keys `[announce]` accepts.
    public static let keys = [
        "policy", "duck_level", "ramp_ms", "ducking", "role", "players", "voice", "words_per_minute", "sink",
        "pulse_server",
    ]

    /// Reads an `[announce]` table (`nil`: the defaults).
    /// - Throws: ``AnnounceError/Code/invalidSettings`` naming the key, the problem and the fix.
    public init(table: [String: SettingValue]?) throws(AnnounceError) {
        self.init()
        guard let table else { return }
        func fail(_ key: String, _ problem: String) -> AnnounceError {
            AnnounceError(code: .invalidSettings, message: "[announce] \(key): \(problem)")
        }
        func string(_ key: String) throws(AnnounceError) -> String? {
            guard let value = table[key] else { return nil }
            guard case .string(let s) = value, !s.isEmpty, !s.contains("\0") else {
                throw fail(key, "expected a non-empty string, found \(value.kindName)")
            }
            return s
        }
        func integer(_ key: String, _ range: ClosedRange<Int>) throws(AnnounceError) -> Int? {
            guard let value = table[key] else { return nil }
            guard case .integer(let i) = value, range.contains(i) else {
                throw fail(key, "expected an integer from \(range.lowerBound) to \(range.upperBound), found \(value)")
            }
            return i
        }
        for key in table.keys.sorted() where !Self.keys.contains(key) {
            throw fail(key, "unknown key — [announce] takes \(Self.keys.joined(separator: ", "))")
        }
        var level = AnnouncementPolicy.defaultDuckLevel
        if let value = table["duck_level"] {
            switch value {
            case .double(let d) where (0...1).contains(d): level = d
            case .integer(let i) where (0...1).contains(i): level = Double(i)
            default:
                throw fail("duck_level", "expected a number from 0 to 1 (0.3 is WirePlumber's level), found \(value)")
            }
        }
        switch try string("policy") ?? "duck" {
        case "duck": policy = .duck(level: level)
        case "pause-spoken": policy = .pauseSpoken
        case "mix": policy = .mix
        case let other: throw fail("policy", "\"\(other)\" is not a policy — use duck, pause-spoken or mix")
        }
        if let ramp = try integer("ramp_ms", 0...1000) { rampMilliseconds = ramp }
        if let mode = try string("ducking") {
            guard let parsed = Ducking(rawValue: mode) else {
                throw fail("ducking", "\"\(mode)\" is not a mode — use auto or client")
            }
            ducking = parsed
        }
        if let role = try string("role") {
            guard role.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                throw fail("role", "\"\(role)\" is not a media role — use one of event, a11y, phone, music…")
            }
            self.role = role
        }
        if let value = table["players"] {
            guard case .array(let items) = value else { throw fail("players", "expected an array of player names") }
            var names: [String] = []
            for item in items {
                guard case .string(let name) = item, Self.isPlayerName(name) else {
                    throw fail(
                        "players",
                        "\(item) is not an MPRIS player name — give the part after org.mpris.MediaPlayer2., for example \"mpv\""
                    )
                }
                names.append(name)
            }
            players = names
        }
        if let voice = try string("voice") { self.voice = voice }
        if let rate = try integer("words_per_minute", 80...450) { wordsPerMinute = rate }
        sink = try string("sink")
        pulseServer = try string("pulse_server")
    }
}

extension AnnounceSettings {
    /// These settings with what `environment` says filled in where they name nothing: the sound
    /// server (its ``HostEnvironment/soundServerAddresses`` and the system-wide socket) and the
    /// session bus. The announcer itself never reads the process environment.
    public func filled(from environment: HostEnvironment) -> AnnounceSettings {
        var settings = self
        settings.pulseServer = pulseServer ?? SoundServer.serverList(environment.soundServerAddresses)
        settings.sessionBus = sessionBus ?? DBusBus.session.resolve(environment: environment.variables)
        return settings
    }

    /// True for a bus-name tail: dot-separated elements of ASCII letters, digits, `_` and `-`,
    /// none empty or starting with a digit.
    static func isPlayerName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count < 200
            && name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { part in
                guard let first = part.first, !first.isNumber else { return false }
                return part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }
            }
    }

    /// The duck level of ``policy`` when it ducks, else WirePlumber's 0.3.
    public var defaultDuckLevel: Double {
        if case .duck(let level) = policy { return level }
        return AnnouncementPolicy.defaultDuckLevel
    }
}
