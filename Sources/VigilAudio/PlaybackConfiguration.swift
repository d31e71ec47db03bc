/// How a ``PlaybackStream`` opens its device, sizes its buffer and heals itself.
///
/// The stream always plays signed 16-bit little-endian stereo at 48 kHz; the device or sound
/// server converts if it must.
public struct PlaybackConfiguration: Sendable, Hashable {
    /// The output, or `nil` to choose automatically: `pulse` when a sound server (PulseAudio or
    /// pipewire-pulse) is reachable when the stream starts, else `default`.
    ///
    /// `pulse` (the server's default sink, followed when it changes) and `pulse:SINK` (one sink)
    /// talk to the server over its native protocol. Every other name is an ALSA PCM: `default`,
    /// `dmix` and the server-backed PCMs are shared with other programs; a `hw:` device is
    /// exclusive and blocks every other program while the stream runs.
    public var device: String?

    /// The PulseAudio server to connect to (for example `unix:/run/user/1000/pulse/native`), or
    /// `nil` for the first of ``soundServerAddresses`` and the system-wide socket that answers.
    /// Only used when the device is `pulse` or `pulse:SINK`.
    public var pulseServer: String?

    /// Where the sound server is when ``pulseServer`` is unset: the addresses the host's
    /// environment names (`HostEnvironment.soundServerAddresses`: each `$PULSE_SERVER` entry,
    /// then `$XDG_RUNTIME_DIR/pulse/native`), tried in order before the system-wide
    /// `unix:/run/pulse/native`. The playback layer never reads the process environment, so a
    /// host passes its own here.
    public var soundServerAddresses: [String]

    /// The server string libpulse connects to: ``pulseServer``, else ``soundServerAddresses`` and
    /// the system-wide socket (never `NULL`, with which libpulse would read the process's
    /// `PULSE_SERVER` itself).
    public var serverList: String { pulseServer ?? SoundServer.serverList(soundServerAddresses) }

    /// How much audio is queued ahead, in milliseconds (100–10000). On the sound server, the
    /// server asks for more each time its sink pulls a block (with a 2000 ms buffer, every 1.75 s;
    /// with 10000 ms, every 4 s). On an ALSA PCM, the writer tops the buffer up when about
    /// half of it is left, so a 2000 ms buffer costs about one wakeup a second.
    public var bufferMilliseconds: Int

    /// How often the writer confirms that the PCM is RUNNING, in seconds (1–3600).
    public var healthCheckSeconds: Int

    /// The first delay before reopening a failed stream, in milliseconds (10–60000).
    public var retryInitialMilliseconds: Int

    /// The longest delay between reopen attempts, in milliseconds (≥ the initial delay, ≤ 600000).
    public var retryMaxMilliseconds: Int

    /// How many reopen attempts to make before giving up; 0 means never give up.
    public var retryBudget: Int

    /// The application name the sound server shows for the stream (`application.name` in
    /// `pactl list sink-inputs`), for example `"my-signer (Vigil keep-alive)"`.
    public var applicationName: String

    /// Extra stream properties for the sound server (native backend only), for example
    /// `["media.role": "music"]`: the role decides how role-based policies treat the stream
    /// (`module-role-cork` corks `music` and `video` during a phone call). Empty by default: a
    /// keep-alive stream with no role is left alone by those policies.
    public var streamProperties: [String: String] = [:]

    /// The sample rate, fixed at 48 kHz.
    public static let sampleRate = 48_000
    /// The channel count, fixed at 2 (interleaved stereo).
    public static let channels = 2

    /// Creates a configuration; see each property for its meaning and range.
    public init(
        device: String? = nil,
        pulseServer: String? = nil,
        soundServerAddresses: [String] = [],
        bufferMilliseconds: Int = 2000,
        healthCheckSeconds: Int = 30,
        retryInitialMilliseconds: Int = 100,
        retryMaxMilliseconds: Int = 3000,
        retryBudget: Int = 0,
        applicationName: String = "Vigil keep-alive"
    ) {
        self.device = device
        self.pulseServer = pulseServer
        self.soundServerAddresses = soundServerAddresses
        self.bufferMilliseconds = bufferMilliseconds
        self.healthCheckSeconds = healthCheckSeconds
        self.retryInitialMilliseconds = retryInitialMilliseconds
        self.retryMaxMilliseconds = retryMaxMilliseconds
        self.retryBudget = retryBudget
        self.applicationName = applicationName
    }

    /// Throws ``AudioError/Code/invalidConfiguration`` naming the first value out of range.
    public func validate() throws(AudioError) {
        func check(_ ok: Bool, _ what: String) throws(AudioError) {
            if !ok { throw AudioError(code: .invalidConfiguration, message: "invalid playback configuration: \(what)") }
        }
        try check(
            (100...10_000).contains(bufferMilliseconds), "buffer of \(bufferMilliseconds) ms; use 100 to 10000 ms")
        try check(
            (1...3600).contains(healthCheckSeconds), "health check every \(healthCheckSeconds) s; use 1 to 3600 s")
        try check(
            (10...60_000).contains(retryInitialMilliseconds),
            "first retry after \(retryInitialMilliseconds) ms; use 10 to 60000 ms")
        try check(
            (retryInitialMilliseconds...600_000).contains(retryMaxMilliseconds),
            "longest retry delay \(retryMaxMilliseconds) ms; use the first delay (\(retryInitialMilliseconds) ms) to 600000 ms"
        )
        try check(retryBudget >= 0, "retry budget \(retryBudget); use 0 (unlimited) or more")
        if let device {
            try check(
                !device.isEmpty && !device.contains("\0"), "empty device name; leave it unset to choose automatically")
        }
        if let pulseServer {
            try check(!pulseServer.isEmpty && !pulseServer.contains("\""), "PulseAudio server \"\(pulseServer)\"")
        }
        for address in soundServerAddresses {
            try check(
                !address.isEmpty && !address.contains(" ") && !address.contains("\0"),
                "sound server address \"\(address)\"; give one address per entry")
        }
        try check(!applicationName.isEmpty, "empty application name")
        for (key, value) in streamProperties {
            try check(
                !key.isEmpty && key.utf8.allSatisfy({ $0 > 32 && $0 < 127 }) && !value.contains("\0"),
                "stream property \"\(key)\"; keys are printable ASCII without spaces")
        }
    }
}
