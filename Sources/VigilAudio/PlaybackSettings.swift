public import VigilPlugin

/// The playback keys an audio plugin's settings share (`device`, `pulse_server`, `buffer_ms`,
/// `health_check_s`, `retry_initial_ms`, `retry_max_ms`, `retry_budget`), read and range-checked
/// once for every audio plugin (silent-engine, soundscape). Part of the playback layer, not of the
/// third-party plugin contract (VigilPlugin): only audio plugins read these keys.
public struct PlaybackSettings: Sendable, Hashable {
    /// The output (`nil`: automatic).
    public var device: String?
    /// The sound server (`nil`: the host environment's).
    public var pulseServer: String?
    /// The buffer, 100–10000 ms.
    public var bufferMilliseconds: Int
    /// The health-check interval, 1–3600 s.
    public var healthCheckSeconds: Int
    /// The first reopen delay, 10–60000 ms.
    public var retryInitialMilliseconds: Int
    /// The longest reopen delay, from the first delay to 600000 ms.
    public var retryMaxMilliseconds: Int
    /// Reopen attempts before giving up (0: never).
    public var retryBudget: Int

    /// A plugin's defaults for the playback keys (`device` and `pulse_server` default to `""`,
    /// automatic).
    public struct Defaults: Sendable, Hashable {
        /// `buffer_ms`.
        public var bufferMilliseconds: Int
        /// `health_check_s`.
        public var healthCheckSeconds: Int
        /// `retry_initial_ms`.
        public var retryInitialMilliseconds: Int
        /// `retry_max_ms`.
        public var retryMaxMilliseconds: Int
        /// `retry_budget`.
        public var retryBudget: Int

        /// Creates defaults.
        public init(
            bufferMilliseconds: Int, healthCheckSeconds: Int = 30, retryInitialMilliseconds: Int = 100,
            retryMaxMilliseconds: Int, retryBudget: Int = 0
        ) {
            self.bufferMilliseconds = bufferMilliseconds
            self.healthCheckSeconds = healthCheckSeconds
            self.retryInitialMilliseconds = retryInitialMilliseconds
            self.retryMaxMilliseconds = retryMaxMilliseconds
            self.retryBudget = retryBudget
        }

        /// The defaults as settings values, as a manifest's `settings` ships them.
        public var values: [String: SettingValue] {
            [
                "device": .string(""), "pulse_server": .string(""), "buffer_ms": .integer(bufferMilliseconds),
                "health_check_s": .integer(healthCheckSeconds), "retry_initial_ms": .integer(retryInitialMilliseconds),
                "retry_max_ms": .integer(retryMaxMilliseconds), "retry_budget": .integer(retryBudget),
            ]
        }
    }

    /// Reads the playback keys of `settings`; throws ``PluginError/Code/invalidSetting`` naming
    /// the first bad one.
    public init(_ settings: PluginSettings, defaults: Defaults) throws {
        let device = try settings.string("device", default: "")
        if device.contains("\"") || device.contains("\0") {
            throw settings.invalid(
                "device",
                "\"\(device)\" is not an output name; use \"\" (automatic), \"pulse\", \"pulse:SINK\" "
                    + "or an ALSA PCM from `aplay -L`")
        }
        self.device = device.isEmpty ? nil : device
        let server = try settings.string("pulse_server", default: "")
        if server.contains("\"") || server.contains("\0") {
            throw settings.invalid(
                "pulse_server",
                "\"\(server)\" is not a PulseAudio server address; use \"\" or e.g. \"unix:/run/user/1000/pulse/native\""
            )
        }
        pulseServer = server.isEmpty ? nil : server
        bufferMilliseconds = try settings.integer("buffer_ms", default: defaults.bufferMilliseconds, in: 100...10_000)
        healthCheckSeconds = try settings.integer("health_check_s", default: defaults.healthCheckSeconds, in: 1...3600)
        retryInitialMilliseconds = try settings.integer(
            "retry_initial_ms", default: defaults.retryInitialMilliseconds, in: 10...60_000)
        retryMaxMilliseconds = try settings.integer(
            "retry_max_ms", default: defaults.retryMaxMilliseconds, in: retryInitialMilliseconds...600_000)
        retryBudget = try settings.integer("retry_budget", default: defaults.retryBudget, in: 0...1_000_000)
    }
}
