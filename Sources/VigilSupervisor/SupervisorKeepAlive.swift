import FoundationEssentials
import Logging
import Synchronization
import VigilPlugin
import VigilSupervisorEngine

#if canImport(Glibc)
import Glibc
#endif

/// One instance of the supervisor plugin (see ``SupervisorPlugin``).
final class SupervisorKeepAlive: ReconfigurablePlugin {
    private struct State {
        var supervisor: Supervisor?
        var notification: (any SupervisorNotification)?
        /// True while `run()` runs: a notification shown after it ended is closed, not kept.
        var wantsNotification = false
        var systemdLive = false
        var running = false
        var degraded = false
        var lastSystemdStatus: String?
    }

    let context: PluginContext
    /// The settings in force: the instance's first, then each reload's applied in place.
    var settings: SupervisorSettings { current.withLock { $0 } }
    private let current: Mutex<SupervisorSettings>
    let environment: [String: String]
    let systemd: SystemdNotifier?
    /// Shows the desktop notification; `nil`: none is shown.
    let notifier: (any SupervisorNotifier)?
    let metrics: WorkerMetrics
    private let state = Mutex(State())
    /// Status refreshes (systemd STATUS=, notification body), coalesced: the latest wins.
    private let refreshes: AsyncStream<Void>
    private let refreshSignal: AsyncStream<Void>.Continuation

    init(context: PluginContext, environment: [String: String], notifier: (any SupervisorNotifier)?) throws {
        self.context = context
        let settings = try SupervisorSettings(context.settings)
        self.current = Mutex(settings)
        self.environment = environment
        self.systemd = SystemdNotifier(environment: environment)
        self.notifier = notifier
        self.metrics = WorkerMetrics(
            factory: context.metrics, plugin: context.pluginName, workers: settings.workers.map(\.name))
        (refreshes, refreshSignal) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    deinit {
        refreshSignal.finish()
    }

    var baseStatus: String { "\(context.hostName) — running in background" }

    // MARK: KeepAlivePlugin

    /// Starts the workers (a failure there is the start failure), tells systemd READY=1, reports
    /// ready, then runs the pumps (watchdog, status refreshes, the notification) as children
    /// until cancelled, and stops everything.
    func run() async throws {
        let (watchdogInterval, firstBody) = try await open()
        context.reporter.ready()
        refreshSignal.yield()
        await pumps(watchdog: watchdogInterval, firstBody: firstBody)
        await PluginLifetime.uncancelled { await self.close() }
    }

    /// Starts the supervisor and says READY=1; returns the watchdog interval and the first
    /// notification body (when notifications are on).
    private func open() async throws -> (watchdog: Duration?, notification: String?) {
        let settings = self.settings
        let supervisor: Supervisor
        do {
            supervisor = try Supervisor(
                workers: settings.workers, configuration: settings.configuration, environment: environment,
                logger: context.logger, onEvent: { [weak self] event in self?.handle(event) })
            state.withLock { $0.supervisor = supervisor }
            try await supervisor.start()
        } catch let error as SupervisorError {
            state.withLock { $0.supervisor = nil }
            throw PluginError.startFailed(plugin: context.pluginName, reason: error.message)
        }

        if let failed = supervisor.workers.first(where: { worker in
            worker.state == .failed && settings.workers.first { $0.name == worker.name }?.failureAction == .stop
        }) {
            await supervisor.stop()
            state.withLock { $0.supervisor = nil }
            throw PluginError.startFailed(
                plugin: context.pluginName,
                reason: "worker \"\(failed.name)\" failed (failure_action = \"stop\"): \(failed.reason ?? "")")
        }

        var watchdogInterval: Duration?
        if let systemd {
            let text = statusLine(supervisor.workers)
            let rc = systemd.send(["READY=1", "STATUS=" + text])
            state.withLock {
                $0.systemdLive = rc == 0
                $0.lastSystemdStatus = text
            }
            if rc != 0 {
                context.logger.warning(
                    "could not notify systemd", metadata: ["notify.socket": "\(systemd.address)", "error": "\(-rc)"])
            }
            watchdogInterval = systemd.watchdogPingInterval
        }

        let firstBody = settings.notification && notifier != nil ? notificationBody(supervisor.workers) : nil
        state.withLock { $0.wantsNotification = firstBody != nil }
        state.withLock { $0.running = true }
        return (watchdogInterval, firstBody)
    }

    /// The pumps, children of `run()` until it is cancelled.
    private func pumps(watchdog watchdogInterval: Duration?, firstBody: String?) async {
        let (refreshes, systemd, environment, context, notifier, metrics) = (
            self.refreshes, self.systemd, self.environment, self.context, self.notifier, self.metrics
        )
        await withTaskGroup(of: Void.self) { group in
            if let firstBody, let notifier {
                // Beside the keep-alive, never in its path: a session bus that does not answer
                // costs the notification only (its connect has a deadline and ends on a stop).
                group.addTask { [weak self] in
                    guard
                        let shown = await notifier.show(
                            environment: environment, appName: context.hostName,
                            summary: "\(context.hostName) is running in background", body: firstBody,
                            logger: context.logger)
                    else { return }
                    if Task.isCancelled || self?.adopt(shown) != true { await shown.close() }
                }
            }
            if let systemd, let interval = watchdogInterval {
                // On the cooperative pool, not a thread: if the host's runtime is stuck, the
                // pings stop and systemd restarts the host.
                group.addTask {
                    while !Task.isCancelled {
                        systemd.send(["WATCHDOG=1"])
                        metrics.watchdogPing()
                        try? await Task.sleep(for: interval)
                    }
                }
            }
            group.addTask { [weak self] in
                for await _ in refreshes {
                    if Task.isCancelled { return }
                    await self?.refreshStatus()
                }
            }
            group.addTask {
                await PluginLifetime.untilCancelled()
            }
            await group.waitForAll()
        }
    }

    /// Stops the workers, closes the notification and tells systemd.
    private func close() async {
        let (supervisor, notification, live) = state.withLock { s in
            defer {
                s.notification = nil
                s.wantsNotification = false
                s.running = false
            }
            return (s.supervisor, s.notification, s.systemdLive)
        }
        if let systemd, live { systemd.send(["STOPPING=1", "STATUS=\(context.hostName) — stopping"]) }
        await supervisor?.stop()
        await notification?.close()
        if let systemd, live { systemd.send(["STATUS=\(context.hostName) — stopped"]) }
        state.withLock {
            $0.systemdLive = false
            $0.degraded = false
        }
        context.reporter.report(.detailsChanged)
    }

    func details() async -> [String: String] {
        let (supervisor, running, systemdLive, notificationLive) = state.withLock {
            ($0.supervisor, $0.running, $0.systemdLive, $0.notification != nil)
        }
        var channels: [String] = []
        if systemdLive { channels.append("systemd") }
        if notificationLive { channels.append("notification") }
        channels.append("vigil status")
        var out: [String: String] = [
            "state": running ? "running" : "stopped",
            "channels": channels.joined(separator: ", "),
            "watchdog": systemdLive && systemd?.watchdogPingInterval != nil ? "pinging systemd" : "off",
        ]
        let workers =
            supervisor?.workers
            ?? settings.workers.map {
                WorkerStatus(name: $0.name, state: .stopped, pid: nil, restarts: 0)
            }
        out["workers"] = workers.map(\.name).joined(separator: ", ")
        // Faults end in `_error`: `vigil up` prints each once, when it appears.
        if let problem = supervisor?.cgroupProblem { out["cgroup_error"] = problem }
        if let budget = supervisor?.descriptorBudget {
            out["descriptors"] = budget.summary
            if let problem = budget.problem { out["descriptors_error"] = problem }
        }
        for worker in workers { out.merge(worker.details) { _, new in new } }
        return out
    }

    // MARK: ReconfigurablePlugin

    /// A reload: a change to the workers only is applied in place, by worker name — an
    /// unchanged worker keeps its process, a changed one restarts from its new entry, a removed
    /// one stops and an added one starts (``Supervisor/reconfigure(workers:)``). A change to the
    /// table's other keys (backoff, start limit, stop grace, notification) answers `false`: the
    /// host restarts the plugin.
    func reconfigure(_ settings: PluginSettings) async throws -> Bool {
        let new = try SupervisorSettings(settings)
        let old = self.settings
        guard new.configuration == old.configuration, new.notification == old.notification else { return false }
        guard let supervisor = state.withLock({ $0.running ? $0.supervisor : nil }) else { return false }
        let known = Set(old.workers.map(\.name))
        metrics.add(workers: new.workers.map(\.name).filter { !known.contains($0) })
        // First: the events of the new workers look up their entries (failure_action).
        current.withLock { $0 = new }
        do {
            try await supervisor.reconfigure(workers: new.workers)
        } catch let error as SupervisorError {
            current.withLock { $0 = old }
            // Stopped meanwhile: the host's restart starts from the new settings.
            if error.code == .alreadyStarted { return false }
            throw PluginError.startFailed(plugin: context.pluginName, reason: error.message)
        }
        context.logger.info(
            "workers reconfigured in place",
            metadata: ["supervisor.workers": "\(new.workers.map(\.name).joined(separator: ","))"])
        context.reporter.report(.detailsChanged)
        refreshSignal.yield()
        return true
    }

    // MARK: Events and status

    /// Runs on the supervisor's thread: never blocks.
    ///
    /// A worker's failure is that worker's: the plugin is `interrupted` (degraded) while any
    /// worker still runs or waits to restart. It gives up (`resumeFailed`) only when the failed
    /// worker's `failure_action` is `stop`, or when no worker is left running.
    private func handle(_ event: SupervisorEvent) {
        metrics.record(event)
        let name = event.worker.name
        switch event.kind {
        case .crashed(let exit, let delay):
            state.withLock { $0.degraded = true }
            let (whole, atto) = delay.components
            let ms = Int(whole) * 1000 + Int(atto / 1_000_000_000_000_000)
            context.reporter.report(.interrupted(reason: "worker \(name) \(exit); restarting in \(ms) ms"))
        case .watchdogTimeout:
            state.withLock { $0.degraded = true }
            context.reporter.report(.interrupted(reason: "worker \(name) missed its watchdog deadline; killed"))
        case .failed(let reason):
            let action = settings.workers.first { $0.name == name }?.failureAction ?? .none
            let (anyLeft, running) = state.withLock { s -> (Bool, Bool) in
                s.degraded = true
                let workers = s.supervisor?.workers ?? []
                return (workers.contains { [.starting, .running, .ready, .backingOff].contains($0.state) }, s.running)
            }
            if action == .stop {
                context.reporter.report(
                    .resumeFailed(reason: "worker \(name) failed (failure_action = \"stop\"): \(reason)"))
            } else if !anyLeft && running {
                context.reporter.report(
                    .resumeFailed(reason: "worker \(name) failed and no worker is left running: \(reason)"))
            } else {
                context.reporter.report(.interrupted(reason: "worker \(name) failed: \(reason)"))
            }
        case .started, .ready:
            let healthy = state.withLock { s -> Bool in
                guard s.degraded, let supervisor = s.supervisor else { return false }
                let ok = supervisor.workers.allSatisfy { [.starting, .running, .ready].contains($0.state) }
                if ok { s.degraded = false }
                return ok
            }
            context.reporter.report(healthy ? .resumed : .detailsChanged)
        case .statusChanged, .stopped, .floodingChanged:
            context.reporter.report(.detailsChanged)
        }
        refreshSignal.yield()
    }

    /// Keeps `notification` (shown beside the keep-alive) unless the plugin stopped meanwhile;
    /// reports the new channel and refreshes its body. False: the caller closes it.
    private func adopt(_ notification: any SupervisorNotification) -> Bool {
        let kept = state.withLock { s -> Bool in
            guard s.wantsNotification, s.notification == nil else { return false }
            s.notification = notification
            return true
        }
        if kept {
            context.reporter.report(.detailsChanged)
            refreshSignal.yield()
        }
        return kept
    }

    private func refreshStatus() async {
        let (supervisor, live, notification, running, last) = state.withLock {
            ($0.supervisor, $0.systemdLive, $0.notification, $0.running, $0.lastSystemdStatus)
        }
        guard running, let supervisor else { return }
        let workers = supervisor.workers
        let text = statusLine(workers)
        if let systemd, live, text != last {
            systemd.send(["STATUS=" + text])
            state.withLock { $0.lastSystemdStatus = text }
        }
        await notification?.update(body: notificationBody(workers))
    }

    /// `<host> — running in background`, plus the workers that are not up.
    func statusLine(_ workers: [WorkerStatus]) -> String {
        let problems = workers.filter { ![.starting, .running, .ready].contains($0.state) }
            .map { "\($0.name) \($0.state.rawValue)" }
        let line = problems.isEmpty ? baseStatus : baseStatus + " (" + problems.joined(separator: ", ") + ")"
        return line.replacing("\n", with: " ")
    }

    func notificationBody(_ workers: [WorkerStatus]) -> String {
        guard !workers.isEmpty else { return "Kept alive by Vigil." }
        return workers.map { worker in
            var line = "\(worker.name): \(worker.state.rawValue)"
            if let text = worker.statusText, !text.isEmpty { line += " — \(text)" }
            return line
        }.joined(separator: "\n")
    }
}
