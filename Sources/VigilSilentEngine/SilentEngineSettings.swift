import VigilAudio
import VigilPlugin

/// silent-engine's settings, read and range-checked from the merged manifest defaults and the
/// `[silent-engine]` table of `vigil.toml`.
struct SilentEngineSettings: Sendable, Hashable {
    var mode: SilentSignal.Mode
    /// `device`, `pulse_server`, `buffer_ms`, `health_check_s` and the `retry_*` keys.
    var playback: PlaybackSettings
    var sineFrequency: Double
    var sineAmplitude: Double
    var noiseLevel: Double
    var fluctuateRate: Double

    /// Every setting's default, in one place. The signed manifest
    /// (`manifests/silent-engine/plugin.json`) ships the same ``defaults``, which a test checks.
    enum Default {
        static let mode = SilentSignal.Mode.zero
        static let playback = PlaybackSettings.Defaults(bufferMilliseconds: 2000, retryMaxMilliseconds: 3000)
        static let sineFrequency = 30
        static let sineAmplitude = 0.01
        static let noiseLevel = 0.001
        static let fluctuateRate = 50
    }

    /// The defaults as settings values (what the manifest's `settings` holds).
    static var defaults: [String: SettingValue] {
        Default.playback.values.merging([
            "mode": .string(Default.mode.rawValue), "sine_frequency_hz": .integer(Default.sineFrequency),
            "sine_amplitude": .double(Default.sineAmplitude), "noise_level": .double(Default.noiseLevel),
            "fluctuate_rate_hz": .integer(Default.fluctuateRate),
        ]) { _, new in new }
    }

    /// Reads every key; throws ``PluginError/Code/invalidSetting`` naming the first bad one.
    init(_ settings: PluginSettings) throws {
        let modes = SilentSignal.Mode.allCases.map(\.rawValue)
        mode = SilentSignal.Mode(rawValue: try settings.choice("mode", default: Default.mode.rawValue, from: modes))!
        playback = try PlaybackSettings(settings, defaults: Default.playback)
        sineFrequency = try settings.number(
            "sine_frequency_hz", default: Double(Default.sineFrequency), in: 1...20_000)
        sineAmplitude = try settings.number("sine_amplitude", default: Default.sineAmplitude, in: 0.0001...1)
        noiseLevel = try settings.number("noise_level", default: Default.noiseLevel, in: 0.0001...1)
        fluctuateRate = try settings.number("fluctuate_rate_hz", default: Double(Default.fluctuateRate), in: 1...1000)
    }

    /// The signal these settings ask for.
    var signal: SilentSignal {
        SilentSignal(
            mode: mode, fluctuateRate: fluctuateRate, sineFrequency: sineFrequency, sineAmplitude: sineAmplitude,
            noiseLevel: noiseLevel)
    }

    /// The playback configuration for a host named `hostName` in `environment` (where the sound
    /// server is when `pulse_server` is unset).
    func playbackConfiguration(hostName: String, environment: HostEnvironment) -> PlaybackConfiguration {
        PlaybackConfiguration(playback, environment: environment, applicationName: "\(hostName) (Vigil keep-alive)")
    }
}
