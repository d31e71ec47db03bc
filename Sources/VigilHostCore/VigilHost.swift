public import CoreMetrics
import FoundationEssentials
public import Logging
public import ServiceLifecycle
public import VigilCore
import VigilLibraryCheck
public import VigilMetrics
public import VigilPlugin
import VigilSharedLibrary

#if canImport(Glibc)
import Glibc
#endif

/// Runs a host's keep-alive plugins: `keepAlive()`, `stop()`, `status()`, `events`.
///
/// The host core runs the plugins of the registry it is given and nothing else; the `Vigil`
/// umbrella's initialisers (`init(configPath:registry:options:logger:)`,
/// `init(plugins:declarations:hostName:options:logger:)`) add its built-in plugins, logind sleep
/// handling and the announcer.
///
/// ## Semantics
/// - ``keepAlive()`` starts every activated plugin whose host requirements are met; ``stop()``
///   stops them. Both are idempotent and safe to call concurrently from any number of tasks.
///   Every call is an event on the host's one event stream; the decisions are
///   ``HostStateMachine``'s (a pure value), and this actor executes them in one loop — `run()`'s
///   structured child, or for a library host without a `ServiceGroup` the loop `keepAlive()`
///   starts — whose children are the plugins' `run()` and sleep handling. Every call returns only
///   once the host has settled on the state of the **latest** call, so after any interleaving the
///   final state matches the last call.
/// - Plugins start one after another in `vigil.toml` order and stop in reverse order. If a newer
///   call changes the desired state mid-way, the host switches direction after the plugin it is
///   working on.
/// - **Instances are created per start and released on stop**: each start makes a fresh instance
///   through the plugin's ``VigilPlugin/PluginImplementation`` and runs its `run()` as a child
///   task; `stop()` (or a plugin giving up after an interruption) cancels that task and drops the
///   instance once `run()` returned. At most one live instance per plugin exists at any time.
/// - A plugin that fails to be created or whose `run()` throws before it is ready shows `failed`
///   and does not affect the others.
///   A plugin whose requirements are unmet shows `blocked` with each unmet requirement and its fix,
///   and nothing of it is created. `blocked` and `failed` plugins are retried by the next
///   `keepAlive()` (and, while the host runs as a `Service`, environment-blocked plugins are
///   re-probed every ``Options/retryInterval``).
/// - A plugin whose manifest did not verify (or whose `entry` is unknown) never gets an instance:
///   it stays `failed` with the core's error, whatever is called.
public actor VigilHost: Service {
    /// Host behaviour that is not in `vigil.toml`.
    public struct Options: Sendable {
        /// Publish status under `$XDG_RUNTIME_DIR/vigil/` for `vigil status` (default true).
        public var publishStatus: Bool
        /// The host's one environment: probed for requirements, used for the runtime and state
        /// directories and the working directory a relative `vigil.toml` is found from, and handed
        /// to the rollback store, the configuration check and every plugin's ``PluginContext``.
        public var environment: RequirementChecker.Environment
        /// How often a host running as a `Service` re-probes plugins blocked by their environment.
        public var retryInterval: Duration
        /// Called (on the status writer's thread) when the status file cannot be written, with the
        /// problem — once, while the writer retries with a growing delay — and with nil once it is
        /// written again: the way to show it where the logs are not read (as `vigil up` does).
        public var statusFileProblem: (@Sendable (_ problem: String?) -> Void)?
        /// Makes the host's sleep handling; unset (the host core's default) or returning `nil`: none.
        /// `Vigil`'s initialisers set logind's when it is unset.
        package var makeSleepHandling: (@Sendable (SleepHandlingSetup) -> (any SleepHandling)?)?
        /// The optional parts' hooks and settings (see ``HostParts``).
        package var parts = HostParts()
        /// Called for each problem of `vigil.toml` that does not stop the host (a table nothing
        /// reads, which `vigil check` calls an error), located, besides the log's warning: the way
        /// to show it where the logs are not read (as `vigil up` does).
        public var configurationWarning: (@Sendable (_ warning: String) -> Void)?
        /// Plugins a `vigil.toml` host runs after the file's own, outside its manifests and trust
        /// (what `vigil run` shows its command through); empty by default.
        public var additionalPlugins: [PreparedPlugin] = []
        /// Where the host and its plugins record metrics (swift-metrics; a no-op by default, never
        /// bootstrapped by the library): `vigil up` gives its Prometheus registry when `[metrics]` is on.
        public var metrics: any MetricsFactory = NOOPMetricsHandler.instance
        /// `[metrics]` of `vigil.toml` (both ways out off by default); read by whoever exports them.
        public var metricsSettings = MetricsSettings()
        /// Applies a reload's new `[metrics]` to whatever exports the metrics (`vigil up`:
        /// `MetricsEndpoints.Reconfiguration` of VigilMetricsExport), called by ``reload()`` once
        /// the new `vigil.toml` checked and before any plugin changes, only when `[metrics]`
        /// changed. Throwing refuses the reload with that error: nothing changed, and the exporter
        /// must keep its previous settings then. Unset (the default): a change to `[metrics]` is
        /// refused with `reload-needs-restart`, since nothing here can apply it.
        public var applyMetricsSettings: (@Sendable (MetricsSettings) async throws(VigilError) -> Void)?

        /// Creates options.
        ///
        /// `environment` defaults to ``HostEnvironment/current``: for a library host this is the one
        /// place the process environment (variables and working directory) is read, as the `vigil`
        /// CLI reads it once for its commands; everything below receives it from here. Pass an
        /// explicit ``HostEnvironment`` to run a host in another environment (tests, embedding).
        public init(
            publishStatus: Bool = true,
            environment: RequirementChecker.Environment = .current,
            retryInterval: Duration = .seconds(5)
        ) {
            self.publishStatus = publishStatus
            self.environment = environment
            self.retryInterval = retryInterval
        }
    }

    /// A plugin ready to run: what the config-based initializer makes from a verified manifest.
    public struct PreparedPlugin: Sendable {
        /// The plugin's name.
        public var name: String
        /// Its version, for status.
        public var version: String?
        /// Its host requirements.
        public var requirements: [HostRequirement]
        /// Its merged settings.
        public var settings: PluginSettings
        /// Its implementation.
        public var implementation: PluginImplementation
        /// The verified plugin it came from (a `vigil.toml` host), re-checked when its publisher's
        /// revocation list changes.
        var loaded: LoadedPlugin?
        /// How long its signature stays fresh, when its signed manifest says (for status).
        var signature: SignatureFreshness?
        /// The SHA-256 of the verified manifest it comes from: a reload restarts it when this changes.
        var manifestDigest: String?

        /// Creates a prepared plugin.
        public init(
            name: String, version: String? = nil, requirements: [HostRequirement] = [],
            settings: PluginSettings? = nil, implementation: PluginImplementation
        ) {
            self.name = name
            self.version = version
            self.requirements = requirements
            self.settings = settings ?? PluginSettings(pluginName: name, values: [:])
            self.implementation = implementation
        }
    }

    /// A plugin that cannot run at all (did not verify, unknown entry); it shows `failed`.
    struct UnavailablePlugin: Sendable {
        var name: String
        var version: String?
        var failure: PluginFailure
    }

    /// A plugin as the config-based initializer found it.
    enum Entry: Sendable {
        case ready(PreparedPlugin)
        case unavailable(UnavailablePlugin)
    }

    /// What the executor keeps per plugin beside the machine's view: its definition, the live
    /// instance (for `details()`), the details last read and when the state last changed.
    struct Slot {
        let name: String
        let version: String?
        let requirements: [HostRequirement]
        /// Replaced in place by a reload the running instance took (a `ReconfigurablePlugin`).
        var settings: PluginSettings
        let implementation: PluginImplementation?
        /// The SHA-256 of the verified manifest it was made from (`nil`: not from a manifest).
        var manifestDigest: String? = nil
        var since: Double
        var instance: (any KeepAlivePlugin)?
        var instanceID: UInt64 = 0
        /// Ends the instance's `run()` child (the host's "cancel child X").
        var stop: AsyncStream<Void>.Continuation?
        var details: [String: String] = [:]
        /// The verified plugin, for re-checking revocations and showing its signature's freshness.
        var loaded: LoadedPlugin? = nil
        var signature: SignatureFreshness? = nil

        /// A shared-library plugin: it runs in a confined helper process.
        var isConfined: Bool { loaded.map { !$0.manifest.runsInHostProcess } ?? false }
    }

    /// The host application's name given to plugins.
    public nonisolated let hostName: String
    /// The `vigil.toml` this host was built from, if any.
    public nonisolated let configPath: String?
    /// Plugins loaded unsigned under `acknowledge_unsafe_plugins`; logged loudly at `keepAlive()`.
    public nonisolated let unsafePlugins: [String]
    /// The runtime directory status is published in, when publishing is on.
    public nonisolated let runtimeDirectory: RuntimeDirectory?
    /// The optional parts made for this host (as `Vigil`'s announcer), each once.
    package nonisolated let madeParts = MadeParts()
    /// The lock of ``configPath`` (one host per `vigil.toml`), held while this host lives; `nil`
    /// without a `vigil.toml` or when status is not published (no runtime directory to lock in).
    nonisolated let configLock: ConfigLock?

    let declarations: HostDeclarations
    package nonisolated let options: Options
    let metrics: HostMetrics
    package nonisolated let logger: Logger
    let hub = EventHub()
    let publisher: StatusPublisher?
    let unsafeBanner: String?

    var machine: HostStateMachine
    var slots: [Slot]
    /// The running loop's event stream; `nil` while no loop runs (the host is down and at rest).
    var inbox: HostInbox?
    /// True while `run()` holds the loop (it ends with `run()`, not when the host is at rest).
    var serviceHoldsLoop = false
    /// Callers waiting for the host to settle on a generation (`keepAlive()`/`stop()`, a reload).
    var waiters: [(generation: UInt64, resume: @Sendable () -> Void)] = []
    /// The host's control channel while it is up and publishes status (`vigil reload`).
    var controlChannel: HostControlChannel?
    /// The slots of a reload the machine has not swapped in yet (``VigilHost/reload()``).
    var pendingSlots: [SlotSource]?
    /// The pending reload's report, completed at the swap.
    var pendingOutcome: ReloadOutcome?
    /// `[metrics]` as the exporter serves it now: the file's at start, then each reload's
    /// that ``Options/applyMetricsSettings`` applied.
    var metricsApplied: MetricsSettings
    /// The plugin implementations a `vigil.toml` host was made with (what a reload looks entries up in).
    let registry: PluginRegistry?
    /// The tables the optional parts read when the host was made (a reload refuses a change).
    let partTables: [String: [String: SettingValue]]
    var nextInstanceID: UInt64 = 0
    var publishing = false
    /// The partly-up summary ``reportStart(_:)`` last logged since the host was last asked to
    /// stop: `keepAlive()` then `run()` (a library host) report the same start twice, logged once.
    var reportedSummary: String?
    /// Told when a plugin starts waiting for its environment, so `run()` re-probes only while
    /// one does, and sleeps without a timer otherwise.
    var environmentBlockedSignal: AsyncStream<Void>.Continuation?
    /// The host's sleep handling (injected through ``Options``; `nil`: none).
    let sleepHandling: (any SleepHandling)?
    /// Sleep handling's child while it runs: finishing this ends it.
    var sleepStop: AsyncStream<Void>.Continuation?
    /// True while the `Service`'s revocation watch is established (for tests).
    var watchingRevocations = false
    /// How many `keepAlive()`/`stop()` calls have entered the host so far (for tests).
    private(set) var requestCount: UInt64 = 0

    /// Creates a host for plugins that are already prepared: no manifests, no verification, and
    /// no optional part (no sleep handling, no announcer).
    ///
    /// Meant for tests and for hosts that embed their own plugins; a `vigil.toml` host uses
    /// ``init(configPath:running:options:logger:)``. `Vigil`'s `init(plugins:…)` is this one with
    /// its parts added.
    public init(
        preparedPlugins plugins: [PreparedPlugin],
        declarations: HostDeclarations = HostDeclarations(),
        hostName: String? = nil,
        options: Options = Options(),
        logger: Logger
    ) throws(VigilError) {
        try self.init(
            entries: plugins.map { .ready($0) }, declarations: declarations, hostName: hostName,
            configPath: nil, unsafePlugins: [], unsafeBanner: nil, options: options, logger: logger)
    }

    init(
        entries: [Entry],
        declarations: HostDeclarations,
        hostName: String?,
        configPath: String?,
        unsafePlugins: [String],
        unsafeBanner: String?,
        options: Options,
        logger: Logger,
        registry: PluginRegistry? = nil,
        partTables: [String: [String: SettingValue]] = [:]
    ) throws(VigilError) {
        self.registry = registry
        self.partTables = partTables
        let now = Date().timeIntervalSince1970
        var slots: [Slot] = []
        var plugins: [HostStateMachine.Plugin] = []
        for entry in entries {
            switch entry {
            case .ready(let plugin):
                slots.append(
                    Slot(
                        name: plugin.name, version: plugin.version, requirements: plugin.requirements,
                        settings: plugin.settings, implementation: plugin.implementation,
                        manifestDigest: plugin.manifestDigest, since: now, loaded: plugin.loaded,
                        signature: plugin.signature))
                plugins.append(
                    HostStateMachine.Plugin(
                        name: plugin.name, usesAudio: plugin.requirements.contains { $0.kind == .audioOutput },
                        unavailable: nil, state: .idle))
            case .unavailable(let plugin):
                slots.append(
                    Slot(
                        name: plugin.name, version: plugin.version, requirements: [],
                        settings: PluginSettings(pluginName: plugin.name, values: [:]), implementation: nil,
                        since: now))
                plugins.append(
                    HostStateMachine.Plugin(
                        name: plugin.name, usesAudio: false, unavailable: plugin.failure,
                        state: .failed(plugin.failure)))
            }
        }
        self.slots = slots
        self.machine = HostStateMachine(plugins: plugins)
        self.declarations = declarations
        self.hostName = hostName ?? declarations.name ?? Self.executableName()
        self.configPath = configPath
        self.unsafePlugins = unsafePlugins
        self.unsafeBanner = unsafeBanner
        self.options = options
        self.metricsApplied = options.metricsSettings
        let metrics = HostMetrics(factory: options.metrics, plugins: plugins.map { ($0.name, $0.state) })
        for slot in slots where slot.isConfined { metrics.confined(plugin: slot.name) }
        self.metrics = metrics
        self.logger = logger
        self.sleepHandling = options.makeSleepHandling?(
            SleepHandlingSetup(
                hostName: self.hostName, inhibitSleep: declarations.inhibitSleep,
                environment: options.environment.variables, logger: logger))
        if options.publishStatus {
            guard let directory = try RuntimeDirectory.resolve(environment: options.environment.variables, create: true)
            else {
                throw VigilError(code: .runtimeDirectory, message: "the runtime directory could not be created")
            }
            self.runtimeDirectory = directory
            // One host per vigil.toml, in every process that runs one (a second would run every
            // worker twice): taken before anything starts, released when this host goes.
            self.configLock = try configPath.map { path throws(VigilError) in
                try ConfigLock.acquire(configPath: path, in: directory)
            }
            self.publisher = StatusPublisher(
                directory: directory, pid: getpid(), logger: logger, onProblem: options.statusFileProblem)
            if let reason = directory.fallbackReason {
                logger.notice(
                    "\(reason) to publish status",
                    metadata: ["vigil.runtime_dir": "\(directory.path)"])
            }
        } else {
            self.runtimeDirectory = nil
            self.configLock = nil
            self.publisher = nil
        }
    }

    static func executableName() -> String {
        let path = CommandLine.arguments.first ?? "vigil-host"
        return path.split(separator: "/").last.map(String.init) ?? path
    }

    // MARK: - Public API

    /// Starts every activated plugin whose host requirements are met, and returns the status
    /// once the host has settled on the latest `keepAlive()`/`stop()` request.
    ///
    /// Idempotent: running plugins are left alone; `failed` and `blocked` ones are retried.
    @discardableResult
    public func keepAlive() async -> HostStatus {
        for hook in options.parts.beforeStart { await hook(self) }
        await request(up: true)
        let current = await status()
        // The status file is current when keepAlive() returns (later changes are rate-limited).
        if publishing, let publisher, machine.desiredUp { await publisher.publishNow(current) }
        return current
    }

    /// Stops every running plugin and returns once the host has settled on the latest request.
    /// Idempotent.
    public func stop() async {
        reportedSummary = nil
        await request(up: false)
    }

    /// Each plugin's current status, with live details from running instances (read by the
    /// host's loop, between its other steps, so no instance is asked while it is replaced).
    public func status() async -> HostStatus {
        if let inbox {
            await withCheckedContinuation { inbox.send(.refreshDetails($0)) }
        }
        return snapshot()
    }

    /// A new stream of state changes. Each subscriber gets its own stream, starting now; a
    /// subscriber that falls more than 1024 events behind loses the oldest ones.
    public nonisolated var events: AsyncStream<HostEvent> { hub.subscribe() }

    /// True when the latest request was `keepAlive()` (for tests).
    var wantsUp: Bool { machine.desiredUp }

    /// `Service` conformance: `keepAlive()`, then wait for graceful shutdown or cancellation
    /// (re-probing environment-blocked plugins every ``Options/retryInterval`` while there are
    /// any — no timer runs otherwise), then `stop()`. The host's loop (its plugins' `run()` and
    /// sleep handling) is this task's child, unless a library call started it before.
    ///
    /// - Throws: ``VigilError/Code/noPluginCanRun`` (after stopping) when, once the start settled,
    ///   every activated plugin failed or is blocked by a missing declaration (see
    ///   ``HostStatus/noPluginCanRun``); `systemd` is told why in `STATUS=`.
    public func run() async throws {
        let owned = inbox == nil
        let inbox = self.inbox ?? HostInbox()
        if owned {
            self.inbox = inbox
            serviceHoldsLoop = true
        }
        let refusal = await withDiscardingTaskGroup { group -> VigilError? in
            if owned { group.addTask { await self.serve(inbox) } }
            let refusal = await serviceBody(inbox)
            if owned {
                serviceHoldsLoop = false
                inbox.send(.wake)
            }
            return refusal
        }
        if let refusal { throw refusal }
    }

    private func serviceBody(_ inbox: HostInbox) async -> VigilError? {
        // A signal during start-up ends the wait for any bus at once; the plugins' starts finish,
        // and the group below sees the shutdown and stops them.
        let started = await withGracefulShutdownHandler {
            await keepAlive()
        } onGracefulShutdown: {
            inbox.send(.machine(.startAbandoned))
        }
        if let refusal = reportStart(started) {
            await stop()
            return refusal
        }
        let (blocked, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        environmentBlockedSignal = signal
        if machine.hasEnvironmentBlocked { signal.yield() }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                try? await gracefulShutdown()
            }
            // Never ends before it is cancelled: a new revocation list stops a revoked plugin.
            group.addTask { await self.watchRevocations(inbox) }
            group.addTask { [options] in
                for await _ in blocked {
                    repeat {
                        try? await Task.sleep(for: options.retryInterval)
                        if Task.isCancelled { return }
                        inbox.send(.machine(.recheckRequirements))
                        await Task.yield()
                    } while await self.machine.hasEnvironmentBlocked
                }
            }
            await group.next()
            group.cancelAll()
        }
        signal.finish()
        environmentBlockedSignal = nil
        await stop()
        return nil
    }

    // MARK: - The loop

    /// Records a request (`up`, or `nil` to keep the desired state and only reconcile again) and
    /// returns once the host has settled on it or a later one.
    private func request(up: Bool) async {
        requestCount &+= 1
        let inbox = runningInbox()
        await withCheckedContinuation { inbox.send(.request(up: up, $0)) }
    }

    /// The running loop's inbox; starts the loop when none runs.
    func runningInbox() -> HostInbox {
        if let current = self.inbox { return current }
        let inbox = HostInbox()
        self.inbox = inbox
        // The one unstructured task of the host: a library host (`Vigil.keepAlive()`, or
        // `keepAlive()` before any `run()`) has no ServiceGroup; this is its loop, the same
        // `serve` as `run()`'s child, and it ends once the host is down and at rest.
        Task { await self.serve(inbox) }
        return inbox
    }

    /// Drains `inbox`: each input goes to the machine, its actions are executed, and the plugin
    /// and sleep-handling children it asks for are started in this task group.
    func serve(_ inbox: HostInbox) async {
        await withDiscardingTaskGroup { group in
            while true {
                let children = await handle(await inbox.next())
                for child in children {
                    switch child {
                    case .plugin(let index, let id, let plugin, let stop):
                        let name = slots[index].name
                        group.addTask {
                            let failure = await Self.runPlugin(plugin, name: name, until: stop)
                            inbox.send(.ended(instance: id, failure: failure))
                        }
                    case .applySettings(let index, let id, let plugin, let settings):
                        let (name, logger) = (slots[index].name, logger)
                        group.addTask {
                            let inPlace = await Self.applySettings(plugin, settings, name: name, logger: logger)
                            inbox.send(.machine(.settingsApplied(plugin: index, instance: id, inPlace: inPlace)))
                        }
                    case .sleep(let handling, let stop):
                        let metrics = self.metrics
                        group.addTask {
                            await Self.runSleepHandling(handling, inbox, metrics: metrics, until: stop)
                            inbox.send(.machine(.sleepClosed))
                        }
                    }
                }
                if machine.isAtRest, waiters.isEmpty, !serviceHoldsLoop, inbox.isEmpty {
                    self.inbox = nil
                    break
                }
            }
        }
    }
}
