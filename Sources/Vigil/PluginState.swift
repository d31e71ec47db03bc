public import VigilCore

/// Why a plugin failed: a stable code and a message with the cause and the remedy.
public struct PluginFailure: Sendable, Hashable, CustomStringConvertible {
    /// A stable code such as `start-failed`, `invalid-setting`, `untrusted-key` or `resume-failed`.
    public let code: String
    /// The message: the cause and the remedy.
    public let message: String

    /// Creates a failure.
    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

/// Where a plugin is in its life cycle.
public enum PluginState: Sendable, Hashable, CustomStringConvertible {
    /// Not running (before `keepAlive()` or after `stop()`).
    case idle
    /// `start()` is in flight.
    case starting
    /// Running and keeping the host alive.
    case running
    /// `stop()` is in flight.
    case stopping
    /// Running but lost what it keeps alive; it is trying to get it back.
    case interrupted(reason: String)
    /// Could not be verified, created or started, or gave up after an interruption.
    case failed(PluginFailure)
    /// Its host requirements are not met, so nothing was started; each entry says how to fix it.
    case blocked([UnmetRequirement])

    /// The state's name: `idle`, `starting`, `running`, `stopping`, `interrupted`, `failed`, `blocked`.
    public var name: String {
        switch self {
        case .idle: "idle"
        case .starting: "starting"
        case .running: "running"
        case .stopping: "stopping"
        case .interrupted: "interrupted"
        case .failed: "failed"
        case .blocked: "blocked"
        }
    }

    /// True while the plugin holds a live instance that keeps the host alive (`running` or `interrupted`).
    public var isActive: Bool {
        switch self {
        case .running, .interrupted: true
        default: false
        }
    }

    /// The state with its reason, for one status line.
    public var description: String {
        switch self {
        case .interrupted(let reason): "interrupted: \(reason)"
        case .failed(let failure): "failed: \(failure.message)"
        case .blocked(let unmet): "blocked: " + unmet.map(\.description).joined(separator: "; ")
        default: name
        }
    }
}

/// One plugin's status.
public struct PluginStatus: Sendable, Hashable {
    /// The plugin's name.
    public let name: String
    /// The manifest version, when the plugin came from a verified manifest.
    public let version: String?
    /// Its state.
    public let state: PluginState
    /// Seconds since 1970 when it entered `state`.
    public let since: Double
    /// The plugin's own details (``VigilPlugin/KeepAlivePlugin/details()``); empty without a live instance.
    public let details: [String: String]

    /// Creates a status value.
    public init(name: String, version: String?, state: PluginState, since: Double, details: [String: String]) {
        self.name = name
        self.version = version
        self.state = state
        self.since = since
        self.details = details
    }
}

/// A host's status: every activated plugin, in `vigil.toml` order.
public struct HostStatus: Sendable, Hashable {
    /// The host process.
    public let pid: Int32
    /// The host application's name.
    public let hostName: String
    /// The `vigil.toml` it was built from, if any.
    public let configPath: String?
    /// Each plugin's status.
    public let plugins: [PluginStatus]
    /// The host's system sleep handling (`nil` while the host is not up, or from an older host).
    public let sleep: SleepStatus?

    /// Creates a status value.
    public init(
        pid: Int32, hostName: String, configPath: String?, plugins: [PluginStatus], sleep: SleepStatus? = nil
    ) {
        self.pid = pid
        self.hostName = hostName
        self.configPath = configPath
        self.plugins = plugins
        self.sleep = sleep
    }

    /// The status of the plugin called `name`.
    public subscript(plugin name: String) -> PluginStatus? {
        plugins.first { $0.name == name }
    }
}

/// The host's system sleep handling: the systemd-logind sleep locks it holds, or why it has none.
public struct SleepStatus: Sendable, Hashable {
    /// The modes of the sleep locks held now: `delay` (audio plugins stop before sleep) and, with
    /// `[host] inhibit_sleep = true`, `block`.
    public let locks: [String]
    /// Why sleep handling is off (no system bus, no logind), or `nil` when it is on.
    public let off: String?

    /// Creates a sleep status.
    public init(locks: [String], off: String? = nil) {
        self.locks = locks
        self.off = off
    }
}
