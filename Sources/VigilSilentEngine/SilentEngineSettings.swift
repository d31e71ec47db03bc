import VigilAudio
import VigilPlugin

/// silent-engine's settings, read and range-checked from the merged manifest defaults and the
/// `[silent-engine]` table of `vigil.toml`.
struct SilentEngineSettings: Sendable, Hashable {
    var mode: SilentSignal.Mode
    var device: String?
    var pulseServer: String?
    var bufferMilliseconds: Int
    var sineFrequency: Double
    var sineAmplitude: Double
    var noiseLevel: Double
    var fluctuateRate: Double
    var healthCheckSeconds: Int
    var retryInitialMilliseconds: Int
    var retryMaxMilliseconds: Int
    var retryBudget: Int

    /// Reads every key; throws ``PluginError/Code/invalidSetting`` naming the first bad one.
    init(_ settings: PluginSettings) throws {
        mode = SilentSignal.Mode(
            rawValue: try settings.choice("mode", default: "zero", from: SilentSignal.Mode.allCases.map(\.rawValue)))!
        let device = try settings.string("device", default: "")
        if device.contains("\"") || device.contains("\0") {
            throw PluginError.invalidSetting(
                plugin: settings.pluginName, key: "device",
                reason:
                    "\"\(device)\" is not an ALSA PCM name; use \"\" (automatic), \"pulse\", \"default\" or a name from `aplay -L`"
            )
        }
        self.device = device.isEmpty ? nil : device
        let server = try settings.string("pulse_server", default: "")
        if server.contains("\"") {
            throw PluginError.invalidSetting(
                plugin: settings.pluginName, key: "pulse_server",
                reason:
                    "\"\(server)\" is not a PulseAudio server address; use \"\" or e.g. \"unix:/run/user/1000/pulse/native\""
            )
        }
        pulseServer = server.isEmpty ? nil : server
        bufferMilliseconds = try settings.integer("buffer_ms", default: 2000, in: 100...10_000)
        sineFrequency = try settings.number("sine_frequency_hz", default: 30, in: 1...20_000)
        sineAmplitude = try settings.number("sine_amplitude", default: 0.01, in: 0.0001...1)
        noiseLevel = try settings.number("noise_level", default: 0.001, in: 0.0001...1)
        fluctuateRate = try settings.number("fluctuate_rate_hz", default: 50, in: 1...1000)
        healthCheckSeconds = try settings.integer("health_check_s", default: 30, in: 1...3600)
        retryInitialMilliseconds = try settings.integer("retry_initial_ms", default: 100, in: 10...60_000)
        retryMaxMilliseconds = try settings.integer(
            "retry_max_ms", default: 3000, in: retryInitialMilliseconds...600_000)
        retryBudget = try settings.integer("retry_budget", default: 0, in: 0...1_000_000)
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
        PlaybackConfiguration(
            device: device, pulseServer: pulseServer, soundServerAddresses: environment.soundServerAddresses,
            bufferMilliseconds: bufferMilliseconds,
            healthCheckSeconds: healthCheckSeconds, retryInitialMilliseconds: retryInitialMilliseconds,
            retryMaxMilliseconds: retryMaxMilliseconds, retryBudget: retryBudget,
            applicationName: "\(hostName) (Vigil keep-alive)")
    }
}
