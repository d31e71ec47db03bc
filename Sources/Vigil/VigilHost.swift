import FoundationEssentials
public import Logging
public import ServiceLifecycle
public import VigilAnnounce
public import VigilCore
import VigilDBus
import VigilLibraryCheck
public import VigilPlugin
import VigilSharedLibrary

#if canImport(Glibc)
import Glibc
#endif

/// Runs a host's keep-alive plugins: `keepAlive()`, `stop()`, `status()`, `events`.
///
/// ## Semantics
/// - ``keepAlive()`` starts every activated plugin whose host requirements are met; ``stop()``
///   stops them. Both are idempotent and safe to call concurrently from any number of tasks.
///   Every call records the *desired* state with a generation number; one caller at a time (the
///   "driver") reconciles the plugins towards the latest desired state while the others wait.
///   A call made while a start or stop is in flight joins it, and every call returns only once
///   the host has settled on the state of the **latest** call, so after any interleaving the final
///   state matches the last call.
/// - Plugins start one after another in `vigil.toml` order and stop in reverse order. If a newer
///   call changes the desired state mid-way, the driver switches direction after the plugin it is
///   working on.
/// - **Instances are created per start and released on stop**: each start makes a fresh instance
///   through the plugin's ``VigilPlugin/PluginImplementation`` and `stop()` (or a failed start,
///   or a plugin giving up after an interruption) calls its `stop()` and drops it. At most one
///   live instance per plugin exists at any time.
/// - A plugin that fails to be created or started shows `failed` and does not affect the others.
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
        /// How ``VigilHost/announce(_:)`` plays prompts (`[announce]` in `vigil.toml`).
        public var announce: AnnounceSettings
        /// Called (on the status writer's thread) when the status file cannot be written, with the
        /// problem — once, while the writer retries with a growing delay — and with nil once it is
        /// written again: the way to show it where the logs are not read (as `vigil up` does).
        public var statusFileProblem: (@Sendable (_ problem: String?) -> Void)?
        /// The system bus connection's deadline and reconnection backoff (sleep handling).
        var systemBus = DBusKeeper(bus: .system, environment: [:])

        /// Creates options.
        ///
        /// `environment` defaults to ``HostEnvironment/current``: for a library host this is the one
        /// place the process environment (variables and working directory) is read, as the `vigil`
        /// CLI reads it once for its commands; everything below receives it from here. Pass an
        /// explicit ``HostEnvironment`` to run a host in another environment (tests, embedding).
        public init(
            publishStatus: Bool = true,
            environment: RequirementChecker.Environment = .current,
            retryInterval: Duration = .seconds(5),
            announce: AnnounceSettings = AnnounceSettings()
        ) {
            self.publishStatus = publishStatus
            self.environment = environment
            self.retryInterval = retryInterval
            self.announce = announce
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

    private struct Slot {
        let name: String
        let version: String?
        let requirements: [HostRequirement]
        let settings: PluginSettings
        let implementation: PluginImplementation?
        let unavailable: PluginFailure?
        var state: PluginState
        var since: Double
        var instance: (any KeepAlivePlugin)?
        var instanceID: UInt64 = 0
        var details: [String: String] = [:]
        var eventDuringStart: PluginEvent?
        var needsRelease = false
        /// Stopped by the host for system sleep; started again (reporting `resumed`) after it.
        var stoppedForSleep = false
    }

    /// The host application's name given to plugins.
    public nonisolated let hostName: String
    /// The `vigil.toml` this host was built from, if any.
    public nonisolated let configPath: String?
    /// Plugins loaded unsigned under `acknowledge_unsafe_plugins`; logged loudly at `keepAlive()`.
    public nonisolated let unsafePlugins: [String]
    /// The runtime directory status is published in, when publishing is on.
    public nonisolated let runtimeDirectory: RuntimeDirectory?
    /// Plays the host's announcements (``announce(_:)``).
    public nonisolated let announcer: Announcer

    private let declarations: HostDeclarations
    private let options: Options
    private let logger: Logger
    private let hub = EventHub()
    private let inbox = EventInbox()
    private let publisher: StatusPublisher?
    private let unsafeBanner: String?

    private var slots: [Slot]
    private var desiredUp = false
    private var generation: UInt64 = 0
    private var appliedGeneration: UInt64 = 0
    private var driving = false
    private var waiters: [(generation: UInt64, continuation: CheckedContinuation<Void, Never>)] = []
    private var nextInstanceID: UInt64 = 0
    private var draining = false
    private var publishing = false
    private var bannerLogged = false
    /// Told (by ``transition(_:to:event:)``) when a plugin starts waiting for its environment,
    /// so `run()` re-probes only while one does, and sleeps without a timer otherwise.
    private var environmentBlockedSignal: AsyncStream<Void>.Continuation?
    /// logind's sleep locks and `PrepareForSleep` while the host is up (`nil` when sleep handling is off).
    private var sleepInhibitor: SleepInhibitor?
    /// True once bring-up has started sleep handling; false again when the host is down.
    private var sleepHandlingOpened = false
    /// Keeps the system bus connection for sleep handling, beside the keep-alive (reconnects after
    /// the bus restarts); `nil` while the host is down.
    private var sleepKeeper: Task<Void, Never>?
    /// False until sleep handling's first attempt ended (on or off); `keepAlive()` waits for it,
    /// but a stop or cancellation ends that wait at once.
    private var sleepSettled = true
    private var sleepSettledWaiters: [CheckedContinuation<Void, Never>] = []
    /// Set when a shutdown came during `run()`'s start-up: sleep handling is not opened.
    private var startAbandoned = false
    /// Why sleep handling is off, `nil` while it is on.
    private var sleepOff: String?
    /// True once the host said sleep handling is off; said again only after it was back on.
    private var sleepOffSaid = false
    /// True between `PrepareForSleep(true)` and `PrepareForSleep(false)`: audio plugins stay stopped.
    private var systemAsleep = false
    private let sleepSignals = SleepSignalInbox()
    private var sleepDraining = false

    /// Creates a host for plugins that are already prepared: no manifests, no verification.
    ///
    /// Meant for tests and for hosts that embed their own plugins; a `vigil.toml` host uses
    /// ``init(configPath:registry:options:logger:)``.
    public init(
        plugins: [PreparedPlugin],
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
        logger: Logger
    ) throws(VigilError) {
        let now = Date().timeIntervalSince1970
        self.slots = entries.map { entry in
            switch entry {
            case .ready(let plugin):
                Slot(
                    name: plugin.name, version: plugin.version, requirements: plugin.requirements,
                    settings: plugin.settings, implementation: plugin.implementation, unavailable: nil,
                    state: .idle, since: now)
            case .unavailable(let plugin):
                Slot(
                    name: plugin.name, version: plugin.version, requirements: [],
                    settings: PluginSettings(pluginName: plugin.name, values: [:]), implementation: nil,
                    unavailable: plugin.failure, state: .failed(plugin.failure), since: now)
            }
        }
        self.declarations = declarations
        self.hostName = hostName ?? declarations.name ?? Self.executableName()
        self.configPath = configPath
        self.unsafePlugins = unsafePlugins
        self.unsafeBanner = unsafeBanner
        self.options = options
        self.logger = logger
        self.announcer = Self.makeAnnouncer(options: options, logger: logger)
        if options.publishStatus {
            guard let directory = try RuntimeDirectory.resolve(environment: options.environment.variables, create: true)
            else {
                throw VigilError(code: .runtimeDirectory, message: "the runtime directory could not be created")
            }
            self.runtimeDirectory = directory
            self.publisher = StatusPublisher(
                directory: directory, pid: getpid(), logger: logger, onProblem: options.statusFileProblem)
            if let reason = directory.fallbackReason {
                logger.notice(
                    "\(reason) to publish status",
                    metadata: ["vigil.runtime_dir": "\(directory.path)"])
            }
        } else {
            self.runtimeDirectory = nil
            self.publisher = nil
        }
    }

    private static func executableName() -> String {
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
        await recoverAnnouncements()
        await request(up: true)
        let current = await status()
        // The status file is current when keepAlive() returns (later changes are rate-limited).
        if publishing, let publisher, desiredUp { await publisher.publishNow(current) }
        return current
    }

    /// Stops every running plugin and returns once the host has settled on the latest request.
    /// Idempotent.
    public func stop() async {
        await request(up: false)
    }

    /// Each plugin's current status, with live details from running instances.
    ///
    /// The details are asked for only while no `keepAlive()`/`stop()` is reconciling (else the
    /// status has those the driver last read): holding an instance across `details()` while a
    /// driver stopped and replaced it would ask a stopping instance and keep it alive next to its
    /// successor. Requests that arrive meanwhile wait and are driven afterwards.
    public func status() async -> HostStatus {
        guard !driving else { return snapshot() }
        driving = true
        for index in slots.indices {
            guard let instance = slots[index].instance, slots[index].state.isActive else { continue }
            let id = slots[index].instanceID
            let details = await instance.details()
            if slots[index].instanceID == id, slots[index].instance != nil { slots[index].details = details }
        }
        await drive()
        return snapshot()
    }

    /// A new stream of state changes. Each subscriber gets its own stream, starting now; a
    /// subscriber that falls more than 1024 events behind loses the oldest ones.
    public nonisolated var events: AsyncStream<HostEvent> { hub.subscribe() }

    /// `Service` conformance: `keepAlive()`, then wait for graceful shutdown or cancellation
    /// (re-probing environment-blocked plugins every ``Options/retryInterval`` while there are
    /// any — no timer runs otherwise), then `stop()`.
    public func run() async throws {
        let (blocked, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        environmentBlockedSignal = signal
        if hasEnvironmentBlocked { signal.yield() }
        startAbandoned = false
        // A signal during start-up ends the wait for any bus at once; the plugins' starts finish,
        // and the group below sees the shutdown and stops them.
        _ = await withGracefulShutdownHandler {
            await keepAlive()
        } onGracefulShutdown: {
            // The handler cannot wait for the actor: this task hops to it and returns.
            Task { await self.abandonStart() }
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                try? await gracefulShutdown()
            }
            group.addTask { [options] in
                for await _ in blocked {
                    repeat {
                        try? await Task.sleep(for: options.retryInterval)
                        if Task.isCancelled { return }
                        await self.retryEnvironmentBlocked()
                    } while await self.hasEnvironmentBlocked
                }
            }
            await group.next()
            group.cancelAll()
        }
        signal.finish()
        environmentBlockedSignal = nil
        await stop()
    }

    // MARK: - Reconciliation

    /// A shutdown came during `run()`'s `keepAlive()`: end the wait for the system bus and open no
    /// sleep handling until the stop.
    private func abandonStart() {
        startAbandoned = true
        sleepKeeper?.cancel()
    }

    /// How many `keepAlive()`/`stop()` calls have entered the host so far (for tests).
    var requestCount: UInt64 { generation }

    /// True when the latest request was `keepAlive()` (for tests).
    var wantsUp: Bool { desiredUp }

    /// Records a request (`up`, or `nil` to keep the desired state and only reconcile again) and
    /// returns once the host has settled on it or a later one.
    private func request(up: Bool?) async {
        generation &+= 1
        if let up { desiredUp = up }
        // A stop never waits for the system bus: end sleep handling's pending attempt now.
        if up == false { sleepKeeper?.cancel() }
        let mine = generation
        if driving {
            await withCheckedContinuation { continuation in
                waiters.append((mine, continuation))
            }
        } else {
            await drive()
        }
    }

    private func retryEnvironmentBlocked() async {
        if hasEnvironmentBlocked { await request(up: true) }
    }

    /// True while the host is wanted up and some plugin waits only for its environment (a
    /// sound server, a session bus…), not for a declaration only the developer can add.
    private var hasEnvironmentBlocked: Bool {
        desiredUp && slots.contains { Self.waitsForEnvironment($0.state) }
    }

    private static func waitsForEnvironment(_ state: PluginState) -> Bool {
        if case .blocked(let unmet) = state { unmet.allSatisfy { !$0.requirement.isDeclaration } } else { false }
    }

    /// Runs reconciliation passes until the plugins match the latest request.
    private func drive() async {
        driving = true
        while true {
            if let index = slots.indices.first(where: { slots[$0].needsRelease }) {
                await release(index)
                continue
            }
            if appliedGeneration == generation { break }
            let target = generation
            if desiredUp { await bringUp(generation: target) } else { await bringDown(generation: target) }
            if generation == target {
                appliedGeneration = target
                if !desiredUp {
                    publishing = false
                    bannerLogged = false
                    publisher?.remove()
                    await closeSleepHandling()
                }
            }
            resumeSettledWaiters()
        }
        driving = false
        resumeSettledWaiters()
    }

    private func resumeSettledWaiters() {
        var pending: [(generation: UInt64, continuation: CheckedContinuation<Void, Never>)] = []
        for waiter in waiters {
            if waiter.generation <= appliedGeneration { waiter.continuation.resume() } else { pending.append(waiter) }
        }
        waiters = pending
    }

    private func bringUp(generation target: UInt64) async {
        publishing = publisher != nil
        if !bannerLogged {
            bannerLogged = true
            if let banner = unsafeBanner, !unsafePlugins.isEmpty {
                logger.warning(
                    "\(banner)", metadata: ["vigil.unsafe_plugins": "\(unsafePlugins.joined(separator: ","))"])
            }
        }
        for index in slots.indices {
            guard generation == target, desiredUp else { return }
            if systemAsleep && Self.usesAudio(slots[index]) {
                await stopForSleep(index)
            } else {
                await startIfNeeded(index)
            }
        }
        publish()
        // Sleep handling comes after the keep-alive, never in its path: the plugins run already.
        if sleepKeeper?.isCancelled == true { await closeSleepHandling() }
        guard generation == target, desiredUp, !startAbandoned else { return }
        if !sleepHandlingOpened {
            sleepHandlingOpened = true
            startSleepHandling()
        }
        await untilSleepSettled()
        publish()
    }

    private func bringDown(generation target: UInt64) async {
        for index in slots.indices.reversed() {
            guard generation == target, !desiredUp else { return }
            await stopIfNeeded(index)
        }
    }

    private func startIfNeeded(_ index: Int) async {
        if slots[index].needsRelease {
            await release(index)
            return
        }
        // A plugin stopped for system sleep is `interrupted` without an instance: it starts again.
        let resuming = slots[index].stoppedForSleep
        if !resuming {
            switch slots[index].state {
            case .running, .interrupted, .starting, .stopping: return
            case .idle, .failed, .blocked: break
            }
        }
        slots[index].stoppedForSleep = false
        if let failure = slots[index].unavailable {
            if slots[index].state != .failed(failure) {
                transition(index, to: .failed(failure), event: .failed(failure))
            }
            return
        }
        guard let implementation = slots[index].implementation else { return }
        let name = slots[index].name

        let checker = RequirementChecker(declarations: declarations, environment: options.environment)
        let unmet = checker.unmet(slots[index].requirements)
        if !unmet.isEmpty {
            if slots[index].state != .blocked(unmet) {
                for item in unmet {
                    logger.warning("[\(name)] blocked: \(item)", metadata: ["plugin.name": "\(name)"])
                }
                transition(index, to: .blocked(unmet), event: .blocked)
            }
            return
        }

        nextInstanceID &+= 1
        let instanceID = nextInstanceID
        var pluginLogger = logger
        pluginLogger[metadataKey: "plugin.name"] = "\(name)"
        let inbox = self.inbox
        let reporter = PluginReporter { [weak self] event in
            inbox.append(.init(slot: index, instanceID: instanceID, event: event))
            guard let self else { return }
            Task { await self.drainInbox() }
        }
        let context = PluginContext(
            pluginName: name, hostName: hostName, settings: slots[index].settings, logger: pluginLogger,
            reporter: reporter, stateDirectory: stateDirectory(for: name), environment: options.environment)

        let instance: any KeepAlivePlugin
        do {
            instance = try implementation.make(context)
        } catch {
            fail(index, name, error, resuming: resuming)
            return
        }
        slots[index].instance = instance
        slots[index].instanceID = instanceID
        slots[index].eventDuringStart = nil
        transition(index, to: .starting, event: nil)
        do {
            try await instance.start()
        } catch {
            await instance.stop()
            slots[index].instance = nil
            slots[index].details = [:]
            fail(index, name, error, resuming: resuming)
            return
        }
        slots[index].details = await instance.details()
        transition(index, to: .running, event: resuming ? .resumed : .started)
        logger.info(
            resuming ? "[\(name)] resumed after system sleep" : "[\(name)] running",
            metadata: ["plugin.name": "\(name)"])
        if let pending = slots[index].eventDuringStart {
            slots[index].eventDuringStart = nil
            await apply(pending, to: index)
        }
    }

    private func stopIfNeeded(_ index: Int) async {
        if slots[index].unavailable != nil { return }
        slots[index].stoppedForSleep = false
        if let instance = slots[index].instance {
            transition(index, to: .stopping, event: nil)
            await instance.stop()
            slots[index].instance = nil
            slots[index].details = [:]
            slots[index].needsRelease = false
            transition(index, to: .idle, event: .stopped)
            logger.info("[\(slots[index].name)] stopped", metadata: ["plugin.name": "\(slots[index].name)"])
        } else if slots[index].state != .idle {
            transition(index, to: .idle, event: .stopped)
        }
    }

    /// Stops and drops the instance of a plugin that gave up; it stays `failed`.
    private func release(_ index: Int) async {
        slots[index].needsRelease = false
        guard let instance = slots[index].instance else { return }
        slots[index].instance = nil
        slots[index].details = [:]
        await instance.stop()
        publish()
    }

    // MARK: - Plugin events

    private func drainInbox() async {
        guard !draining else { return }
        draining = true
        while true {
            let entries = inbox.takeAll()
            if entries.isEmpty { break }
            for entry in entries {
                guard slots.indices.contains(entry.slot), slots[entry.slot].instanceID == entry.instanceID,
                    slots[entry.slot].instance != nil
                else { continue }  // from an instance already released
                switch slots[entry.slot].state {
                case .starting:
                    if entry.event != .detailsChanged { slots[entry.slot].eventDuringStart = entry.event }
                case .running, .interrupted:
                    await apply(entry.event, to: entry.slot)
                default:
                    continue
                }
            }
        }
        draining = false
        if !driving, slots.contains(where: \.needsRelease) { await drive() }
    }

    private func apply(_ event: PluginEvent, to index: Int) async {
        let name = slots[index].name
        // Every event carries fresh details into the status (a restarted worker's pid, its
        // restart count), not only `detailsChanged`.
        if event != .detailsChanged, let instance = slots[index].instance {
            let id = slots[index].instanceID
            let details = await instance.details()
            guard slots[index].instanceID == id, slots[index].instance != nil else { return }
            slots[index].details = details
        }
        switch event {
        case .interrupted(let reason):
            logger.warning("[\(name)] interrupted: \(reason)", metadata: ["plugin.name": "\(name)"])
            transition(index, to: .interrupted(reason: reason), event: .interrupted(reason: reason))
        case .resumed:
            logger.info("[\(name)] resumed", metadata: ["plugin.name": "\(name)"])
            transition(index, to: .running, event: .resumed)
        case .resumeFailed(let reason):
            logger.error("[\(name)] gave up: \(reason)", metadata: ["plugin.name": "\(name)"])
            let failure = PluginFailure(
                code: .plugin(.resumeFailed), plugin: name, message: "gave up after an interruption: \(reason)")
            slots[index].needsRelease = true
            transition(index, to: .failed(failure), event: .resumeFailed(reason: reason))
        case .detailsChanged:
            guard let instance = slots[index].instance else { return }
            let id = slots[index].instanceID
            let details = await instance.details()
            guard slots[index].instanceID == id, slots[index].instance != nil else { return }
            slots[index].details = details
            hub.publish(HostEvent(plugin: name, kind: .detailsChanged, state: slots[index].state))
            publish()
        }
    }

    // MARK: - System sleep

    static let sleepReason = "stopped for system sleep; it starts again when the system wakes up"
    static let delayLockWhy = "stops the keep-alive audio streams cleanly before sleep"
    static let blockLockWhy = "[host] inhibit_sleep = true in vigil.toml"

    /// Plugins that hold an audio stream (they need an audio output): stopped for system sleep.
    private static func usesAudio(_ slot: Slot) -> Bool {
        slot.requirements.contains { $0.kind == .audioOutput }
    }

    /// Starts keeping sleep handling up beside the keep-alive: a ``DBusKeeper`` connects to the
    /// system bus (within its deadline), checks for logind, takes the sleep delay lock (and the block
    /// lock when `[host] inhibit_sleep = true`) and follows `PrepareForSleep`; when the bus does not
    /// answer, or restarts, the host says once why sleep handling is off and tries again with backoff.
    private func startSleepHandling() {
        var keeper = options.systemBus
        keeper.bus = .system
        keeper.environment = options.environment.variables
        let signals = sleepSignals
        let who = hostName
        let inhibitSleep = declarations.inhibitSleep
        let logger = logger
        sleepSettled = false
        // Beside the keep-alive: keepAlive() waits only for the first attempt, and a stop cancels it.
        let weak = WeakHost(self)
        sleepKeeper = Task {
            await keeper.run(
                logger: logger,
                report: { event in await weak.host?.sleepLink(event) },
                session: { connection throws(DBusError) in
                    let inhibitor = try await SleepInhibitor.open(connection: connection, who: who, logger: logger) {
                        start in
                        signals.append(start)
                        guard let host = weak.host else { return }
                        // Signals arrive on the bus thread; the actor handles them in order.
                        Task { await host.drainSleepSignals() }
                    }
                    do throws(DBusError) {
                        try await inhibitor.take(.delay, why: Self.delayLockWhy)
                        if inhibitSleep { try await inhibitor.take(.block, why: Self.blockLockWhy) }
                    } catch {
                        await inhibitor.close()
                        throw error
                    }
                    await weak.host?.installSleepInhibitor(inhibitor)
                },
                withdraw: { _ in await weak.host?.withdrawSleepInhibitor() })
            await weak.host?.settleSleep()
        }
    }

    private func installSleepInhibitor(_ inhibitor: SleepInhibitor) async {
        if let previous = sleepInhibitor { await previous.close() }
        sleepInhibitor = inhibitor
    }

    /// The system bus connection ended (lost or closed): the locks went with it.
    private func withdrawSleepInhibitor() async {
        guard let inhibitor = sleepInhibitor else { return }
        sleepInhibitor = nil
        await inhibitor.close()
        publish()
        // Asleep when logind went away: no PrepareForSleep(false) will come, so start again.
        if systemAsleep, desiredUp, sleepHandlingOpened {
            systemAsleep = false
            // Not inline: a stop may be driving (and waiting for this withdrawal) right now.
            Task { await self.request(up: nil) }
        }
    }

    /// What the system bus keeper reports: sleep handling on, or off and why (said once per outage).
    private func sleepLink(_ event: DBusLinkEvent) {
        switch event {
        case .up(let again):
            sleepOff = nil
            sleepOffSaid = false
            let locks = sleepInhibitor?.held.map(\.rawValue) ?? []
            logger.log(
                level: again ? .notice : .info,
                "sleep handling \(again ? "back " : "")on: holding logind sleep lock(s) \(locks.joined(separator: ", "))",
                metadata: ["vigil.sleep_locks": "\(locks.joined(separator: ","))"])
        case .down(let reason, let retrying):
            sleepOff = reason
            guard !sleepOffSaid else { break }
            sleepOffSaid = true
            let effect =
                "the audio plugins are not stopped before system sleep"
                + (declarations.inhibitSleep ? " and inhibit_sleep has no effect" : "")
                + (retrying ? "; trying again with backoff" : "")
            logger.notice("sleep handling is off: \(reason) — \(effect)", metadata: ["vigil.sleep": "off"])
        }
        settleSleep()
        publish()
    }

    /// Sleep handling's first attempt ended (or the keeper stopped): `keepAlive()` goes on.
    private func settleSleep() {
        sleepSettled = true
        let waiters = sleepSettledWaiters
        sleepSettledWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    /// Waits for sleep handling's first attempt (bounded by the system bus deadline); a stop or
    /// the caller's cancellation cancels the attempt, which ends this wait at once.
    private func untilSleepSettled() async {
        guard !sleepSettled, let keeper = sleepKeeper else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { sleepSettledWaiters.append($0) }
        } onCancel: {
            keeper.cancel()
        }
    }

    private func closeSleepHandling() async {
        sleepHandlingOpened = false
        systemAsleep = false
        if let keeper = sleepKeeper {
            sleepKeeper = nil
            keeper.cancel()
            await keeper.value
        }
        settleSleep()
        if let inhibitor = sleepInhibitor {
            sleepInhibitor = nil
            await inhibitor.close()
        }
        sleepOff = nil
    }

    /// Handles `PrepareForSleep` signals on the actor, one at a time and in order.
    private func drainSleepSignals() async {
        guard !sleepDraining else { return }
        sleepDraining = true
        while let start = sleepSignals.next() { await prepareForSleep(start) }
        sleepDraining = false
    }

    /// `PrepareForSleep(true)`: stop the audio plugins, then release the delay lock so the system
    /// may sleep. `PrepareForSleep(false)`: take the delay lock again and start them again.
    private func prepareForSleep(_ start: Bool) async {
        guard let inhibitor = sleepInhibitor, desiredUp, start != systemAsleep else { return }
        systemAsleep = start
        if start {
            logger.notice("the system is going to sleep: stopping the audio plugins", metadata: ["vigil.sleep": "true"])
            await request(up: nil)
            inhibitor.release(.delay)
        } else {
            logger.notice("the system woke up: starting the audio plugins again", metadata: ["vigil.sleep": "false"])
            do {
                try await inhibitor.take(.delay, why: Self.delayLockWhy)
            } catch {
                logger.warning("cannot take the sleep delay lock again: \(error)", metadata: ["vigil.sleep": "false"])
            }
            await request(up: nil)
        }
        publish()
    }

    /// Stops a running audio plugin for system sleep: it shows `interrupted` until the wake-up.
    private func stopForSleep(_ index: Int) async {
        guard let instance = slots[index].instance else { return }
        let name = slots[index].name
        transition(index, to: .stopping, event: nil)
        await instance.stop()
        slots[index].instance = nil
        slots[index].details = [:]
        slots[index].needsRelease = false
        slots[index].stoppedForSleep = true
        transition(index, to: .interrupted(reason: Self.sleepReason), event: .interrupted(reason: Self.sleepReason))
        logger.info("[\(name)] stopped for system sleep", metadata: ["plugin.name": "\(name)"])
    }

    // MARK: - Helpers

    private func transition(_ index: Int, to state: PluginState, event: HostEvent.Kind?) {
        slots[index].state = state
        if Self.waitsForEnvironment(state) { environmentBlockedSignal?.yield() }
        slots[index].since = Date().timeIntervalSince1970
        if let event { hub.publish(HostEvent(plugin: slots[index].name, kind: event, state: state)) }
        publish()
    }

    private func publish() {
        guard publishing, let publisher else { return }
        publisher.publish(snapshot())
    }

    private func snapshot() -> HostStatus {
        HostStatus(
            pid: getpid(), hostName: hostName, configPath: configPath,
            plugins: slots.map {
                PluginStatus(name: $0.name, version: $0.version, state: $0.state, since: $0.since, details: $0.details)
            },
            sleep: sleepHandlingOpened
                ? SleepStatus(locks: sleepInhibitor?.held.map(\.rawValue) ?? [], off: sleepOff) : nil)
    }

    /// The plugin's state directory from the host's one environment (the account's home
    /// directory when the environment names none).
    private func stateDirectory(for name: String) -> String {
        options.environment.pluginStateDirectory(name)
            ?? (HostEnvironment.accountHomeDirectory ?? "/") + ".local/state/vigil/plugins/\(name)"
    }

    /// Plugin `name` (slot `index`) failed to be created or to start with `error`: logs it and
    /// records the failure (as a failed resume when `resuming`).
    private func fail(_ index: Int, _ name: String, _ error: any Error, resuming: Bool) {
        let failure = Self.failure(from: error, plugin: name)
        logger.error("\(failure)", metadata: ["plugin.name": "\(name)"])
        transition(
            index, to: .failed(failure), event: resuming ? .resumeFailed(reason: failure.message) : .failed(failure))
    }

    static func failure(from error: any Error, plugin: String) -> PluginFailure {
        if let error = error as? PluginError { return PluginFailure(error, plugin: plugin) }
        if let error = error as? SharedLibraryError { return PluginFailure(error, plugin: plugin) }
        return PluginFailure(PluginError.startFailed(plugin: plugin, reason: "\(error)"), plugin: plugin)
    }
}

/// A weak reference to a host, for the tasks and bus callbacks that must not keep it alive.
private final class WeakHost: Sendable {
    weak let host: VigilHost?
    init(_ host: VigilHost) { self.host = host }
}
