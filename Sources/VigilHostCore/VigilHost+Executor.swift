import FoundationEssentials
import Logging
import Synchronization
import VigilBase
import VigilCore
import VigilLibraryCheck
import VigilPlugin
import VigilSharedLibrary

#if canImport(Glibc)
import Glibc
#endif

/// The executor half of ``VigilHost``: what each input means for ``HostStateMachine`` and how
/// its actions are carried out (make an instance, run it as a child, cancel it, publish, log).
extension VigilHost {
    /// A child task the loop starts in its task group.
    enum Child {
        /// A plugin instance's `run()`, until `stop` ends.
        case plugin(Int, instance: UInt64, PluginBox, stop: AsyncStream<Void>)
        /// Sleep handling, until `stop` ends.
        case sleep(any SleepHandling, stop: AsyncStream<Void>)
        /// A running instance taking a reload's new settings (answers `settingsApplied`).
        case applySettings(Int, instance: UInt64, any ReconfigurablePlugin, PluginSettings)
    }

    /// Handles one input; returns the children to start.
    func handle(_ input: HostInbox.Input) async -> [Child] {
        var children: [Child] = []
        switch input {
        case .request(let up, let continuation):
            let actions = machine.handle(.requested(up: up))
            waiters.append((machine.generation, { continuation.resume() }))
            await perform(actions, &children)
        case .machine(let event):
            await feed(event, &children)
        case .plugin(let id, let event):
            // Found by instance: a reload may have moved the plugin to another index since it started.
            guard let index = slotIndex(instance: id), slots[index].instance != nil else { break }
            // Every report carries fresh details into the status (a restarted worker's pid).
            await refreshDetails(index)
            await feed(
                event == .ready ? .ready(plugin: index, instance: id) : .reported(plugin: index, instance: id, event),
                &children)
        case .ended(let id, let failure):
            guard let index = slotIndex(instance: id) else { break }
            slots[index].instance = nil
            slots[index].stop = nil
            slots[index].details = [:]
            await feed(.ended(plugin: index, instance: id, failure: failure), &children)
        case .reload(let completion):
            await beginReload(completion, &children)
        case .refreshDetails(let continuation):
            for index in slots.indices where machine.plugins[index].state.isActive { await refreshDetails(index) }
            continuation.resume()
        case .publishStatus:
            publish()
        case .revocations(let findings):
            await applyWatched(findings)
        case .wake:
            break
        }
        return children
    }

    /// The slot whose instance `id` is or was (instance numbers are never reused).
    private func slotIndex(instance id: UInt64) -> Int? {
        id == 0 ? nil : slots.firstIndex { $0.instanceID == id }
    }

    func feed(_ event: HostStateMachine.Event, _ children: inout [Child]) async {
        await perform(machine.handle(event), &children)
    }

    private func refreshDetails(_ index: Int) async {
        guard let instance = slots[index].instance else { return }
        let id = slots[index].instanceID
        let details = await instance.details()
        if slots[index].instanceID == id, slots[index].instance != nil { slots[index].details = details }
    }

    func perform(_ actions: [HostStateMachine.Action], _ children: inout [Child]) async {
        for action in actions {
            switch action {
            case .start(let index, let resuming):
                if let event = start(index, resuming: resuming, &children) { await feed(event, &children) }
            case .cancel(let index, let id):
                if slots[index].instanceID == id { slots[index].stop?.finish() }
            case .changed(let index, let event):
                changed(index, event)
            case .beginPublishing:
                publishing = publisher != nil
                openControlChannel()
                if let banner = unsafeBanner, !unsafePlugins.isEmpty {
                    logger.warning(
                        "\(banner)", metadata: ["vigil.unsafe_plugins": "\(unsafePlugins.joined(separator: ","))"])
                }
            case .endPublishing:
                controlChannel?.stop()
                controlChannel = nil
                publishing = false
                publisher?.remove()
            case .openSleepHandling:
                guard let sleepHandling else {
                    await feed(.sleepSettled, &children)
                    continue
                }
                let (stop, stopper) = AsyncStream.makeStream(of: Void.self)
                sleepStop = stopper
                children.append(.sleep(sleepHandling, stop: stop))
            case .closeSleepHandling:
                guard sleepHandling != nil else {
                    await feed(.sleepClosed, &children)
                    continue
                }
                sleepStop?.finish()
                sleepStop = nil
            case .releaseDelayLock:
                sleepHandling?.releaseDelayLock()
                if let sleepHandling { metrics.sleepLocks(sleepHandling.status.locks.count) }
                publish()
            case .settled(let generation):
                let ready = waiters.filter { $0.generation <= generation }
                waiters.removeAll { $0.generation <= generation }
                publish()
                for waiter in ready { waiter.resume() }
            case .reconfigure:
                swapSlots()
                await feed(.reconfigured, &children)
            case .applySettings(let index, let id):
                let settings = pendingSlots?.lazy.compactMap { source -> PluginSettings? in
                    if case .reconfigured(index, let slot) = source { return slot.settings }
                    return nil
                }.first
                guard slots[index].instanceID == id, let plugin = slots[index].instance as? any ReconfigurablePlugin,
                    let settings
                else {
                    await feed(.settingsApplied(plugin: index, instance: id, inPlace: false), &children)
                    continue
                }
                children.append(.applySettings(index, instance: id, plugin, settings))
            }
        }
    }

    /// Checks the requirements of plugin `index`, makes an instance and asks for its child;
    /// returns the machine event that says which happened.
    private func start(_ index: Int, resuming: Bool, _ children: inout [Child]) -> HostStateMachine.Event? {
        guard let implementation = slots[index].implementation else { return nil }
        let name = slots[index].name
        let checker = RequirementChecker(declarations: declarations, environment: options.environment)
        let unmet = checker.unmet(slots[index].requirements)
        if !unmet.isEmpty { return .blocked(plugin: index, unmet) }

        nextInstanceID &+= 1
        let id = nextInstanceID
        var pluginLogger = logger
        pluginLogger[metadataKey: "plugin.name"] = "\(name)"
        let inbox = self.inbox
        let reporter = PluginReporter { event in inbox?.send(.plugin(instance: id, event)) }
        let context = PluginContext(
            pluginName: name, hostName: hostName, settings: slots[index].settings, logger: pluginLogger,
            reporter: reporter, stateDirectory: stateDirectory(for: name), environment: options.environment,
            metrics: options.metrics)
        let instance: any KeepAlivePlugin
        do {
            instance = try implementation.make(context)
        } catch {
            return .notMade(plugin: index, Self.failure(from: error, plugin: name))
        }
        let (stop, stopper) = AsyncStream.makeStream(of: Void.self)
        slots[index].instance = instance
        slots[index].instanceID = id
        slots[index].stop = stopper
        slots[index].details = [:]
        children.append(.plugin(index, instance: id, PluginBox(instance), stop: stop))
        _ = resuming
        return .started(plugin: index, instance: id)
    }

    /// Runs `handling` until `stop` ends, turning its reports into the host's events.
    nonisolated static func runSleepHandling(
        _ handling: any SleepHandling, _ inbox: HostInbox, metrics: HostMetrics, until stop: AsyncStream<Void>
    ) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await handling.run { report in
                    metrics.sleep(report, locks: handling.status.locks.count)
                    switch report {
                    case .settled: inbox.send(.machine(.sleepSettled))
                    case .coming: inbox.send(.machine(.sleepComing))
                    case .ended: inbox.send(.machine(.sleepEnded))
                    case .locksLost: inbox.send(.machine(.sleepLocksLost))
                    case .changed: inbox.send(.publishStatus)
                    }
                }
            }
            for await _ in stop {}
            group.cancelAll()
        }
    }

    /// Hands `settings` to a running instance; true when it took them in place. A refusal or
    /// an error means a restart with them (logged here: the new instance says what is wrong).
    nonisolated static func applySettings(
        _ plugin: any ReconfigurablePlugin, _ settings: PluginSettings, name: String, logger: Logger
    ) async -> Bool {
        let metadata: Logger.Metadata = ["plugin.name": "\(name)"]
        do {
            let inPlace = try await plugin.reconfigure(settings)
            if inPlace {
                logger.info("[\(name)] new settings applied in place", metadata: metadata)
            } else {
                logger.info("[\(name)] this settings change needs a restart; restarting it", metadata: metadata)
            }
            return inPlace
        } catch {
            logger.warning(
                "[\(name)] could not apply the new settings in place (\(error)); restarting it", metadata: metadata)
            return false
        }
    }

    /// Runs `box`'s plugin until its `run()` returns or `stop` ends (then cancels it and waits
    /// for it); returns the failure it threw, `nil` when it ended cleanly or was cancelled.
    nonisolated static func runPlugin(_ box: PluginBox, name: String, until stop: AsyncStream<Void>) async
        -> PluginFailure?
    {
        enum Outcome: Sendable {
            case ran(PluginFailure?)
            case stopRequested
        }
        return await withTaskGroup(of: Outcome.self) { group in
            group.addTask {
                // The instance is released when this closure returns: before the host hears `ended`.
                guard let plugin = box.take() else { return .ran(nil) }
                do {
                    try await plugin.run()
                    return .ran(nil)
                } catch {
                    if Task.isCancelled || error is CancellationError { return .ran(nil) }
                    return .ran(VigilHost.failure(from: error, plugin: name))
                }
            }
            group.addTask {
                for await _ in stop {}
                return .stopRequested
            }
            var result: PluginFailure?
            if case .ran(let failure)? = await group.next() { result = failure }
            group.cancelAll()
            while let next = await group.next() {
                if case .ran(let failure) = next { result = failure }
            }
            return result
        }
    }

    /// A state or details change of plugin `index`: log it, tell subscribers and the status file.
    private func changed(_ index: Int, _ event: HostEvent.Kind?) {
        let state = machine.plugins[index].state
        let name = slots[index].name
        switch event {
        case .detailsChanged?, .denied?: break
        default: slots[index].since = Date().timeIntervalSince1970
        }
        if !state.isActive, state != .starting { slots[index].details = [:] }
        if HostStateMachine.waitsForEnvironment(state) { environmentBlockedSignal?.yield() }
        metrics.record(plugin: name, state: state)
        if case .denied(let denial)? = event { metrics.denied(plugin: name, denial) }
        if let event {
            log(event, plugin: name, state: state)
            hub.publish(HostEvent(plugin: name, kind: event, state: state))
        }
        publish()
    }

    private func log(_ event: HostEvent.Kind, plugin name: String, state: PluginState) {
        let metadata: Logger.Metadata = ["plugin.name": "\(name)"]
        switch event {
        case .started: logger.info("[\(name)] running", metadata: metadata)
        case .stopped: logger.info("[\(name)] stopped", metadata: metadata)
        case .failed(let failure):
            logger.error(
                "\(failure)", metadata: metadata.merging([OperatorEvent.metadataKey: "\(failure.operatorEvent)"]) { $1 }
            )
        case .blocked:
            if case .blocked(let unmet) = state {
                for item in unmet { logger.warning("[\(name)] blocked: \(item)", metadata: metadata) }
            }
        case .interrupted(let reason) where reason == HostStateMachine.sleepReason:
            logger.info("[\(name)] stopped for system sleep", metadata: metadata)
        case .interrupted(let reason): logger.warning("[\(name)] interrupted: \(reason)", metadata: metadata)
        case .resumed: logger.info("[\(name)] resumed", metadata: metadata)
        case .resumeFailed(let reason):
            logger.error(
                "[\(name)] gave up: \(reason)",
                metadata: metadata.merging([OperatorEvent.metadataKey: "\(OperatorEvent.pluginFailed)"]) { $1 })
        case .revoked(let failure):
            logger.error(
                "[\(name)] revoked, stopping it: \(failure.message)",
                metadata: metadata.merging([OperatorEvent.metadataKey: "\(OperatorEvent.pluginFailed)"]) { $1 })
        // Its helper session logged the denial (with its metadata) as it arrived.
        case .detailsChanged, .denied: break
        }
    }

    func publish() {
        guard publishing, let publisher else { return }
        publisher.publish(snapshot())
    }

    func snapshot() -> HostStatus {
        HostStatus(
            pid: getpid(), hostName: hostName, configPath: configPath,
            plugins: slots.indices.map { index in
                let slot = slots[index]
                var status = PluginStatus(
                    name: slot.name, version: slot.version, state: machine.plugins[index].state, since: slot.since,
                    details: slot.details)
                status.signature = slot.signature
                return status
            },
            // Shown once its first attempt ended (before that nothing is known of the locks).
            sleep: machine.sleepOpen && machine.sleepSettled
                ? sleepHandling.map { SleepStatus(locks: $0.status.locks, off: $0.status.off) } : nil)
    }

    /// The plugin's state directory from the host's one environment (the account's home
    /// directory when the environment names none).
    private func stateDirectory(for name: String) -> String {
        options.environment.pluginStateDirectory(name)
            ?? (HostEnvironment.accountHomeDirectory ?? "/") + ".local/state/vigil/plugins/\(name)"
    }

    static func failure(from error: any Error, plugin: String) -> PluginFailure {
        if let error = error as? PluginError { return PluginFailure(error, plugin: plugin) }
        if let error = error as? SharedLibraryError { return PluginFailure(error, plugin: plugin) }
        return PluginFailure(PluginError.startFailed(plugin: plugin, reason: "\(error)"), plugin: plugin)
    }
}

/// Hands a plugin instance to its child task, which takes it (so the instance is released as
/// soon as its `run()` returned, not when the task object goes).
final class PluginBox: Sendable {
    private let value: Mutex<(any KeepAlivePlugin)?>
    init(_ plugin: any KeepAlivePlugin) { value = Mutex(plugin) }
    func take() -> (any KeepAlivePlugin)? { value.withLock { $0.take() } }
}
