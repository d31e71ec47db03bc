import VigilAudio
import VigilPlugin

/// soundscape's settings, read and range-checked from the merged manifest defaults and the
/// `[soundscape]` table of `vigil.toml`. They give the starting point; the user's saved
/// preferences (soundscape, volume, paused) win over them.
struct SoundscapeSettings: Sendable {
    /// The soundscape to play when nothing was saved.
    var soundscape: String
    /// The volume when nothing was saved.
    var volume: Double
    /// User files: name → path, in name order.
    var files: [(name: String, path: String)]
    /// The sleep timer in minutes (0: off), counted from start.
    var sleepTimerMinutes: Double
    var mpris: Bool
    /// The stream's `media.role` (default `music`, so role-based policies treat it as music).
    var mediaRole: String
    var controlSocket: Bool
    var device: String?
    var pulseServer: String?
    var bufferMilliseconds: Int
    var healthCheckSeconds: Int
    var retryInitialMilliseconds: Int
    var retryMaxMilliseconds: Int
    var retryBudget: Int

    /// Reads every key; throws ``PluginError/Code/invalidSetting`` naming the first bad one.
    init(_ settings: PluginSettings) throws {
        let plugin = settings.pluginName
        var files: [(String, String)] = []
        for (name, value) in (try settings.table("files") ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard Soundscape.isValidID(name), !Soundscape.generated.contains(where: { $0.id == name }) else {
                throw PluginError.invalidSetting(
                    plugin: plugin, key: "files.\(name)",
                    reason:
                        "a file's name must be 1–40 of a–z, 0–9 and '-', start with a letter and not be a built-in soundscape"
                )
            }
            guard case .string(let path) = value, path.hasPrefix("/"), !path.contains("\0") else {
                throw PluginError.invalidSetting(
                    plugin: plugin, key: "files.\(name)", reason: "give the sound file's absolute path as a string")
            }
            files.append((name, path))
        }
        self.files = files
        let known = Soundscape.generated.map(\.id) + files.map(\.0)
        soundscape = try settings.choice("soundscape", default: Soundscape.defaultID, from: known)
        let preset = try settings.choice(
            "preset", default: VolumePreset.default.rawValue, from: VolumePreset.allCases.map(\.rawValue))
        let presetVolume = VolumePreset(rawValue: preset)!.volume
        let explicit = try settings.number("volume", default: -1, in: -1...1)
        volume = explicit >= 0 ? explicit : presetVolume
        sleepTimerMinutes = try settings.number("sleep_timer_min", default: 0, in: 0...1440)
        mpris = try settings.bool("mpris", default: true)
        controlSocket = try settings.bool("control_socket", default: true)
        mediaRole = try settings.choice(
            "media_role", default: "music",
            from: ["music", "video", "game", "event", "animation", "production", "a11y", "test", ""])
        let device = try settings.string("device", default: "")
        if device.contains("\"") || device.contains("\0") {
            throw PluginError.invalidSetting(
                plugin: plugin, key: "device",
                reason:
                    "\"\(device)\" is not an output name; use \"\" (automatic), \"pulse\", \"pulse:SINK\" or an ALSA PCM from `aplay -L`"
            )
        }
        self.device = device.isEmpty ? nil : device
        let server = try settings.string("pulse_server", default: "")
        if server.contains("\"") {
            throw PluginError.invalidSetting(
                plugin: plugin, key: "pulse_server",
                reason:
                    "\"\(server)\" is not a PulseAudio server address; use \"\" or e.g. \"unix:/run/user/1000/pulse/native\""
            )
        }
        pulseServer = server.isEmpty ? nil : server
        bufferMilliseconds = try settings.integer("buffer_ms", default: 1000, in: 100...10_000)
        healthCheckSeconds = try settings.integer("health_check_s", default: 30, in: 1...3600)
        retryInitialMilliseconds = try settings.integer("retry_initial_ms", default: 100, in: 10...60_000)
        retryMaxMilliseconds = try settings.integer(
            "retry_max_ms", default: 2000, in: retryInitialMilliseconds...600_000)
        retryBudget = try settings.integer("retry_budget", default: 0, in: 0...1_000_000)
    }

    /// The playback configuration for a host named `hostName` in `environment` (where the sound
    /// server is when `pulse_server` is unset).
    func playbackConfiguration(hostName: String, environment: HostEnvironment) -> PlaybackConfiguration {
        var configuration = PlaybackConfiguration(
            device: device, pulseServer: pulseServer, soundServerAddresses: environment.soundServerAddresses,
            bufferMilliseconds: bufferMilliseconds,
            healthCheckSeconds: healthCheckSeconds, retryInitialMilliseconds: retryInitialMilliseconds,
            retryMaxMilliseconds: retryMaxMilliseconds, retryBudget: retryBudget,
            applicationName: "\(hostName) (Vigil soundscape)")
        if !mediaRole.isEmpty { configuration.streamProperties = ["media.role": mediaRole] }
        return configuration
    }
}
