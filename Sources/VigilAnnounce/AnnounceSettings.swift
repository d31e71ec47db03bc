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

    /// Reads an `[announce]` table (`nil`: the defaults) with the plugins' one settings reader.
    /// - Throws: ``AnnounceError/Code/invalidSettings`` naming the key, the problem and the fix,
    ///   with the reader's ``PluginError`` as its cause.
    public init(table: [String: SettingValue]?) throws(AnnounceError) {
        self.init()
        guard let table else { return }
        do {
            try read(PluginSettings(pluginName: "announce", values: table))
        } catch let error as PluginError {
            throw AnnounceError(code: .invalidSettings, message: error.message, cause: ErrorCause(error))
        } catch {
            throw AnnounceError(code: .invalidSettings, message: "[announce]: \(error)")
        }
    }

    private mutating func read(_ settings: PluginSettings) throws {
        try settings.refuseUnknownKeys(known: Self.keys, kind: "key")
        let level = try settings.number("duck_level", in: 0...1) ?? AnnouncementPolicy.defaultDuckLevel
        switch try settings.choice("policy", default: "duck", from: ["duck", "pause-spoken", "mix"]) {
        case "duck": policy = .duck(level: level)
        case "pause-spoken": policy = .pauseSpoken
        default: policy = .mix
        }
        rampMilliseconds = try settings.integer("ramp_ms", in: 0...1000) ?? rampMilliseconds
        ducking = Ducking(
            rawValue: try settings.choice("ducking", default: ducking.rawValue, from: ["auto", "client"]))!
        if let role = try settings.nonEmptyString("role") {
            guard role.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                throw settings.invalid(
                    "role", "\"\(role)\" is not a media role — use one of event, a11y, phone, music…")
            }
            self.role = role
        }
        if let items = try settings.array("players") {
            players = try items.map { item in
                guard case .string(let name) = item, Self.isPlayerName(name) else {
                    throw settings.invalid(
                        "players",
                        "\(item) is not an MPRIS player name — give the part after org.mpris.MediaPlayer2., "
                            + "for example \"mpv\"")
                }
                return name
            }
        }
        voice = try settings.nonEmptyString("voice") ?? voice
        wordsPerMinute = try settings.integer("words_per_minute", in: 80...450) ?? wordsPerMinute
        sink = try settings.nonEmptyString("sink")
        pulseServer = try settings.nonEmptyString("pulse_server")
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
