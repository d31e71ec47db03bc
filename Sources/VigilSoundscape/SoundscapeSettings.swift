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
    /// `device`, `pulse_server`, `buffer_ms`, `health_check_s` and the `retry_*` keys.
    var playback: PlaybackSettings

    /// Reads every key; throws ``PluginError/Code/invalidSetting`` naming the first bad one.
    init(_ settings: PluginSettings) throws {
        var files: [(String, String)] = []
        for (name, value) in (try settings.table("files") ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard Soundscape.isValidID(name), !Soundscape.generated.contains(where: { $0.id == name }) else {
                throw settings.invalid(
                    "files.\(name)",
                    "a file's name must be 1–40 of a–z, 0–9 and '-', start with a letter and not be a built-in soundscape"
                )
            }
            guard case .string(let path) = value, path.hasPrefix("/"), !path.contains("\0") else {
                throw settings.invalid("files.\(name)", "give the sound file's absolute path as a string")
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
        playback = try PlaybackSettings(settings, defaults: .init(bufferMilliseconds: 1000, retryMaxMilliseconds: 2000))
    }

    /// The playback configuration for a host named `hostName` in `environment` (where the sound
    /// server is when `pulse_server` is unset).
    func playbackConfiguration(hostName: String, environment: HostEnvironment) -> PlaybackConfiguration {
        var configuration = PlaybackConfiguration(
            playback, environment: environment, applicationName: "\(hostName) (Vigil soundscape)")
        if !mediaRole.isEmpty { configuration.streamProperties = ["media.role": mediaRole] }
        return configuration
    }
}
