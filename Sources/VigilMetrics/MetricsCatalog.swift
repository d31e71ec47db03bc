/// One metric Vigil registers: its name, type, unit, labels and help text (docs/metrics.md is
/// this table, and `MetricsCatalogTests` keeps the two in agreement).
public struct MetricDescription: Sendable, Hashable {
    /// The Prometheus type.
    public enum Kind: String, Sendable, Hashable {
        case counter, gauge, histogram
    }

    /// The full name (`vigil_` prefix, base units, `_total` for counters).
    public let name: String
    /// The Prometheus type.
    public let kind: Kind
    /// The unit (`seconds`, `1` for counts and states, `info`).
    public let unit: String
    /// The label names, each from a bounded set (the config's own names, fixed words).
    public let labels: [String]
    /// The `# HELP` text.
    public let help: String

    /// Creates a description.
    public init(_ name: String, _ kind: Kind, unit: String, labels: [String], help: String) {
        self.name = name
        self.kind = kind
        self.unit = unit
        self.labels = labels
        self.help = help
    }
}

/// Every metric Vigil registers (through the host's and the plugins' `MetricsFactory`).
public enum MetricsCatalog {
    /// The build: `version`, always 1.
    public static let buildInfo = MetricDescription(
        "vigil_build_info", .gauge, unit: "info", labels: ["version"],
        help: "Vigil's build; the value is always 1.")
    /// One series per plugin state; the current one is 1.
    public static let pluginState = MetricDescription(
        "vigil_plugin_state", .gauge, unit: "1", labels: ["plugin", "state"],
        help: "1 for the plugin's current state, 0 for every other state.")
    /// One series per worker state; the current one is 1.
    public static let workerState = MetricDescription(
        "vigil_worker_state", .gauge, unit: "1", labels: ["plugin", "worker", "state"],
        help: "1 for the supervisor worker's current state, 0 for every other state.")
    /// Processes started per worker (first starts and restarts).
    public static let workerStarts = MetricDescription(
        "vigil_worker_starts_total", .counter, unit: "1", labels: ["plugin", "worker"],
        help: "Processes the supervisor started for the worker (first start and restarts).")
    /// Restarts per worker and reason.
    public static let workerRestarts = MetricDescription(
        "vigil_worker_restarts_total", .counter, unit: "1", labels: ["plugin", "worker", "reason"],
        help: "Restarts scheduled after the worker's process ended, by why it ended.")
    /// The last exit status (shell style: 128 + signal).
    public static let workerLastExitCode = MetricDescription(
        "vigil_worker_last_exit_code", .gauge, unit: "1", labels: ["plugin", "worker"],
        help: "How the worker's last process ended, as a shell reports it (128 + signal when killed).")
    /// The backoff before the next start.
    public static let workerBackoff = MetricDescription(
        "vigil_worker_backoff_seconds", .gauge, unit: "seconds", labels: ["plugin", "worker"],
        help: "The delay before the worker's next start; 0 while it runs.")
    /// 1 while the worker is ready.
    public static let workerReady = MetricDescription(
        "vigil_worker_ready", .gauge, unit: "1", labels: ["plugin", "worker"],
        help: "1 while the worker is ready (READY=1, or running under readiness simple).")
    /// WATCHDOG=1 pings sent to systemd.
    public static let watchdogPings = MetricDescription(
        "vigil_watchdog_pings_total", .counter, unit: "1", labels: ["plugin"],
        help: "WATCHDOG=1 pings the supervisor plugin sent to systemd's watchdog.")

    /// 1 while silent-engine's keep-alive stream plays.
    public static let streamUp = MetricDescription(
        "vigil_audio_stream_up", .gauge, unit: "1", labels: ["plugin"],
        help: "1 while the plugin's keep-alive audio stream plays; 0 while it is interrupted or stopped.")
    /// Interruptions of the keep-alive stream by cause.
    public static let streamInterruptions = MetricDescription(
        "vigil_audio_stream_interruptions_total", .counter, unit: "1", labels: ["plugin", "reason"],
        help: "Times the keep-alive audio stream was lost and reconnected, by the playback error's code.")

    /// The keep-alive stream's sink, as the stream sees it: one series per state.
    public static let sinkState = MetricDescription(
        "vigil_audio_sink_state", .gauge, unit: "1", labels: ["plugin", "state"],
        help: "1 for the state of the sink the keep-alive stream plays to, as the stream sees it (running, "
            + "suspended by another program, unknown while no stream plays), 0 for the others.")
    /// Suspensions of the keep-alive stream's sink by another program.
    public static let sinkSuspends = MetricDescription(
        "vigil_audio_sink_suspends_total", .counter, unit: "1", labels: ["plugin"],
        help: "Times another program suspended the sink while the keep-alive stream played to it.")
    /// Underruns of the keep-alive stream.
    public static let underruns = MetricDescription(
        "vigil_audio_underruns_total", .counter, unit: "1", labels: ["plugin"],
        help: "Underruns of the keep-alive stream (the server or the device ran out of audio; refilled in place).")
    /// 1 while the soundscape plays.
    public static let soundscapePlaying = MetricDescription(
        "vigil_soundscape_playing", .gauge, unit: "1", labels: ["plugin"],
        help: "1 while the soundscape is audible (playing, not paused, asleep or corked by the server); 0 otherwise.")
    /// The soundscape's volume.
    public static let soundscapeVolume = MetricDescription(
        "vigil_soundscape_volume_ratio", .gauge, unit: "ratio", labels: ["plugin"],
        help: "The soundscape's volume, 0 to 1 (linear amplitude).")
    /// Announcements by outcome.
    public static let announcements = MetricDescription(
        "vigil_announcements_total", .counter, unit: "1", labels: ["outcome"],
        help: "Announcements the host's announcer finished, by outcome: played, or the error's code.")
    /// How long announcements took.
    public static let announcementDuration = MetricDescription(
        "vigil_announcement_duration_seconds", .histogram, unit: "seconds", labels: [],
        help: "How long each announcement took, from the call to its return (waiting for its turn included).")

    /// Operations the kernel refused a confined plugin, by the capability that would allow them.
    public static let pluginDenials = MetricDescription(
        "vigil_plugin_denials_total", .counter, unit: "1", labels: ["plugin", "capability"],
        help: "Operations the kernel refused a confined shared-library plugin, by the kind of capability its "
            + "manifest would declare to allow them (none: no capability allows it).")

    /// logind inhibitor locks held.
    public static let sleepLocks = MetricDescription(
        "vigil_sleep_locks", .gauge, unit: "1", labels: [],
        help: "logind inhibitor locks the host holds now (delay, and block with inhibit_sleep).")
    /// System sleeps and wake-ups seen.
    public static let sleepEvents = MetricDescription(
        "vigil_sleep_events_total", .counter, unit: "1", labels: ["event"],
        help: "System sleeps (event=sleep, PrepareForSleep(true)) and wake-ups (event=resume) the host handled.")

    /// Every metric, in the order of docs/metrics.md.
    public static let all: [MetricDescription] = [
        buildInfo, pluginState, workerState, workerStarts, workerRestarts, workerLastExitCode, workerBackoff,
        workerReady, watchdogPings, streamUp, streamInterruptions, sinkState, sinkSuspends, underruns,
        soundscapePlaying, soundscapeVolume, announcements, announcementDuration, pluginDenials, sleepLocks,
        sleepEvents,
    ]

    /// The description of the metric named `name`.
    public static func description(named name: String) -> MetricDescription? {
        all.first { $0.name == name }
    }

    /// The reasons of ``workerRestarts``: the process exited with a status, was killed by a signal,
    /// was killed for missing its watchdog deadline, or could not be started.
    public static let restartReasons = ["exit", "signal", "watchdog", "start_failure"]

    /// The states of ``sinkState``.
    public static let sinkStates = ["running", "suspended", "unknown"]

    /// The capabilities of ``pluginDenials``: the kind of manifest declaration that would allow the
    /// refused operation (`files` read or read-write, a `tcp_connect` port, `network`, a UNIX socket
    /// through `sound_server` or `bus`, `spawn`), or `none` when no declaration allows it (another
    /// process's memory or signals, namespaces, mounts, BPF, …). The path, port or program is not a
    /// label (it is the plugin's choice, unbounded); `vigil status` shows the last one.
    public static let denialCapabilities = [
        "file_read", "file_write", "tcp_connect", "network", "unix_socket", "spawn", "none",
    ]

    /// The outcomes of ``announcements`` besides the error codes: the prompt played.
    public static let announcementPlayed = "played"
}
