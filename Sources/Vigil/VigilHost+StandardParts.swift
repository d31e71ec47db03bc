public import Logging
public import VigilAnnounce
public import VigilCore
import VigilDBus
public import VigilHostCore
public import VigilPlugin

/// What `Vigil` adds to the host core: every first-party plugin registered, logind sleep handling
/// and the announcer, through its initialisers (the host core's, `init(preparedPlugins:…)` and
/// `init(configPath:running:…)`, add none of these parts).
extension VigilHost {
    /// Creates a host for plugins that are already prepared (no manifests, no verification), with
    /// Vigil's sleep handling (logind) and announcer.
    public init(
        plugins: [PreparedPlugin],
        declarations: HostDeclarations = HostDeclarations(),
        hostName: String? = nil,
        options: Options = Options(),
        logger: Logger
    ) throws(VigilError) {
        try self.init(
            preparedPlugins: plugins, declarations: declarations, hostName: hostName,
            options: options.addingStandardParts(), logger: logger)
        _ = announcer
    }

    /// Creates a host from a `vigil.toml` (see the host core's `init(configPath:running:…)`), with
    /// Vigil's built-in plugins (unless `registry` says otherwise), sleep handling (logind) and
    /// announcer (`[announce]` in `vigil.toml`).
    public init(
        configPath: String? = nil, registry: PluginRegistry = .builtin, options: Options = Options(), logger: Logger
    ) throws(VigilError) {
        try self.init(configPath: configPath, running: registry, options: options.addingStandardParts(), logger: logger)
        _ = announcer
    }

    /// The same, with `label` nil for a logger labelled with the host's name (what
    /// ``keepAlive(configPath:logger:)`` makes when it is given no logger).
    init(configPath: String?, registry: PluginRegistry, options: Options, label: Logger?) throws(VigilError) {
        try self.init(configPath: configPath, running: registry, options: options.addingStandardParts(), label: label)
        _ = announcer
    }
}

extension VigilHost.Options {
    /// Creates options with how ``VigilHost/announce(_:)`` plays prompts.
    public init(
        publishStatus: Bool = true,
        environment: RequirementChecker.Environment = .current,
        retryInterval: Duration = .seconds(5),
        announce: AnnounceSettings
    ) {
        self.init(publishStatus: publishStatus, environment: environment, retryInterval: retryInterval)
        self.announce = announce
    }

    /// How ``VigilHost/announce(_:)`` plays prompts (`[announce]` in `vigil.toml`).
    public var announce: AnnounceSettings {
        get { parts["announce", as: AnnounceSettings.self] ?? AnnounceSettings() }
        set { parts["announce", as: AnnounceSettings.self] = newValue }
    }

    /// The system bus connection's deadline and reconnection backoff (logind sleep handling).
    var systemBus: DBusKeeper {
        get { parts["systemBus", as: DBusKeeper.self] ?? DBusKeeper(bus: .system, environment: [:]) }
        set { parts["systemBus", as: DBusKeeper.self] = newValue }
    }

    /// These options with Vigil's parts: logind sleep handling unless the host set its own, the
    /// `[announce]` table and the announcer's crash recovery (once, however often it is called).
    func addingStandardParts() -> Self {
        var options = self
        if options.makeSleepHandling == nil {
            let bus = systemBus
            options.makeSleepHandling = { LogindSleepHandling($0, systemBus: bus) }
        }
        guard options.parts["vigil", as: Bool.self] == nil else { return options }
        options.parts["vigil", as: Bool.self] = true
        options.parts.restartOnlyTables.append("announce")
        options.parts.readConfiguration.append { configuration, options throws(VigilError) in
            guard let table = configuration.pluginSettings["announce"] else { return }
            do throws(AnnounceError) {
                options.announce = try AnnounceSettings(table: table)
            } catch {
                throw VigilError(code: .configuration, message: "\(configuration.path): \(error.message)")
            }
        }
        options.parts.beforeStart.append { await $0.recoverAnnouncements() }
        return options
    }
}
