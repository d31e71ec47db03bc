import VigilBase
public import VigilCore
public import VigilLibraryCheck
public import VigilPlugin

/// Why a plugin failed: the typed code of the refusal or error behind it, the plugin, a message
/// with the cause and the remedy (without the plugin's name, which is a field), and that error.
///
/// The description (`[plugin] message`) is rendered from the fields; nothing strips it again.
public struct PluginFailure: StructuredError, Hashable {
    /// The code of the error behind a failure; its description is the code's stable spelling.
    public enum Code: Sendable, Hashable, CustomStringConvertible {
        /// Refused before it got an instance: signature, trust, rollback, manifest (``CoreError``).
        case refused(CoreError.Code)
        /// The plugin's own error: a bad setting, an unknown entry, a failed start or resume.
        case plugin(PluginErrorCode)
        /// Its shared library was refused (``SharedLibraryError``).
        case sharedLibrary(SharedLibraryErrorCode)

        /// The code spelled `text` (as a status file has it), or `nil` when it is none of them.
        public init?(_ text: String) {
            if let kind = CoreError.Code.Kind(rawValue: text) {
                self = .refused(CoreError.Code(kind))
            } else if let code = PluginErrorCode(rawValue: text) {
                self = .plugin(code)
            } else if let code = SharedLibraryErrorCode(rawValue: text) {
                self = .sharedLibrary(code)
            } else {
                return nil
            }
        }

        public var description: String {
            switch self {
            case .refused(let code): code.description
            case .plugin(let code): code.rawValue
            case .sharedLibrary(let code): code.rawValue
            }
        }
    }

    /// What kind of failure.
    public let code: Code
    /// The plugin that failed.
    public let plugin: String?
    /// The cause and the remedy.
    public let message: String
    /// The error behind the failure, when it is known (a ``CoreError``, ``PluginError``…).
    public let cause: ErrorCause?

    /// Creates a failure.
    public init(code: Code, plugin: String?, message: String, cause: ErrorCause? = nil) {
        self.code = code
        self.plugin = plugin
        self.message = message
        self.cause = cause
    }

    /// The failure `error` stands for: its code, plugin, message and the error itself.
    public init(_ error: PluginError, plugin: String) {
        self.init(
            code: .plugin(error.code), plugin: error.plugin ?? plugin, message: error.message, cause: ErrorCause(error))
    }

    /// The failure `error` stands for: its code, plugin, message and the error itself.
    public init(_ error: CoreError, plugin: String) {
        self.init(
            code: .refused(error.code), plugin: error.plugin ?? plugin, message: error.message, cause: ErrorCause(error)
        )
    }

    /// The failure `error` stands for: its code, plugin, message and the error itself.
    public init(_ error: SharedLibraryError, plugin: String) {
        self.init(
            code: .sharedLibrary(error.code), plugin: error.plugin ?? plugin, message: error.message,
            cause: ErrorCause(error))
    }
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
    /// Its ``word`` is `blocked` when a declaration is missing, `waiting` when only the
    /// environment is (the host probes again).
    case blocked([UnmetRequirement])

    /// The state's word in the one vocabulary (docs/states.md): `stopped` (for ``idle``),
    /// `starting`, `running`, `stopping`, `interrupted`, `failed`, and for ``blocked`` `waiting`
    /// (only environment requirements unmet: the host probes again) or `blocked` (a declaration).
    public var word: PluginStateName {
        switch self {
        case .idle: .stopped
        case .starting: .starting
        case .running: .running
        case .stopping: .stopping
        case .interrupted: .interrupted
        case .failed: .failed
        case .blocked(let unmet): PluginStateName(unmet: unmet)
        }
    }

    /// The state's word (``word``), as `vigil status --json` writes it.
    public var name: String { word.rawValue }

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
        case .blocked(let unmet): PluginStateName.line(unmet: unmet)
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
    /// How long its signature stays fresh, when its signed manifest carries `expires`.
    public internal(set) var signature: SignatureFreshness? = nil

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
    /// The version of Vigil the host runs (``VigilVersion/version``; `nil` from a host older than 0.1.0).
    public internal(set) var vigilVersion: String? = VigilVersion.version
    /// The git revision that Vigil was built from, when its build recorded one (``VigilVersion/revision``).
    public internal(set) var vigilRevision: String? = VigilVersion.revision

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
