import FoundationEssentials
import Logging
import VigilCore
import VigilHostCheck
import VigilPlugin
import VigilSupervisorEngine

#if canImport(Glibc)
import Glibc
#endif

/// What a reload changed: each plugin of the old and the new `vigil.toml` by name.
public struct ReloadReport: Sendable, Hashable, Codable {
    /// New in the configuration: started.
    public var added: [String]
    /// Gone from the configuration: stopped.
    public var removed: [String]
    /// Their settings or manifest changed: stopped, then started from the new ones.
    public var restarted: [String]
    /// Unchanged: left running as they were (an audio plugin's stream keeps playing).
    public var kept: [String]
}

extension VigilHost {
    /// Where a slot of the new list comes from: a current slot kept as it is, or a new one.
    enum SlotSource {
        case kept(Int)
        case new(Slot)
    }

    /// Reads `vigil.toml` again and applies it without stopping what did not change.
    ///
    /// The file goes through the same checks as at start (StrictModes, the TOML, every manifest's
    /// signatures, rotations, revocation list, rollback and expiry, the plan). Then plugins that are
    /// new start, plugins that are gone stop, and a plugin whose settings or verified manifest
    /// changed restarts; an unchanged plugin keeps its running instance (an audio plugin's stream
    /// never stops). Returns once the host settled on the new list, like ``keepAlive()``.
    ///
    /// Under systemd (`NOTIFY_SOCKET`), the reload is announced with `RELOADING=1` and
    /// `MONOTONIC_USEC=`, and `READY=1` once it is over, applied or refused.
    ///
    /// - Throws: ``VigilError/Code/reloadRefused`` when the new configuration does not check (a
    ///   plugin does not verify, the file is invalid, or it changes what only a restart applies:
    ///   `[host]`, `[announce]` or `acknowledge_unsafe_plugins`); nothing changed and the old
    ///   plugins keep running. ``VigilError/Code/reloadUnsupported`` for a host made from
    ///   prepared plugins.
    @discardableResult
    public func reload() async throws(VigilError) -> ReloadReport {
        let inbox = runningInbox()
        let result = await withCheckedContinuation { continuation in
            inbox.send(.reload { continuation.resume(returning: $0) })
        }
        return try result.get()
    }

    /// Carries out a reload request on the loop: check the file, then hand the new list to the
    /// machine; `completion` is called once the host settled on it (or at once when refused).
    func beginReload(
        _ completion: @escaping @Sendable (Result<ReloadReport, VigilError>) -> Void, _ children: inout [Child]
    ) async {
        let notifier = SystemdNotifier(environment: options.environment.variables)
        notifier?.send(["RELOADING=1", "MONOTONIC_USEC=\(MonotonicClock.nanoseconds() / 1000)"])
        let entries: [Entry]
        do throws(VigilError) {
            entries = try checkReload()
        } catch {
            logger.error("reload refused: \(error.message)", metadata: ["vigil.config": "\(configPath ?? "")"])
            notifier?.send(["READY=1"])
            completion(.failure(error))
            return
        }
        let (reconfiguration, sources, report) = plan(entries)
        pendingSlots = sources
        let summary =
            "reloading \(configPath ?? ""): \(report.added.count) added, \(report.removed.count) removed, "
            + "\(report.restarted.count) restarted, \(report.kept.count) kept"
        logger.notice(
            "\(summary)",
            metadata: [
                "vigil.added": "\(report.added.joined(separator: ","))",
                "vigil.removed": "\(report.removed.joined(separator: ","))",
                "vigil.restarted": "\(report.restarted.joined(separator: ","))",
            ])
        let actions = machine.handle(.reconfigure(reconfiguration))
        waiters.append(
            (
                machine.generation,
                {
                    notifier?.send(["READY=1"])
                    completion(.success(report))
                }
            ))
        await perform(actions, &children)
    }

    /// The new configuration's entries, or why it is refused.
    private func checkReload() throws(VigilError) -> [Entry] {
        guard let configPath, let registry else {
            throw VigilError(
                code: .reloadUnsupported,
                message: "this host was not made from a vigil.toml, so there is nothing to reload — "
                    + "make it with VigilHost(configPath:) to reload it")
        }
        let loaded: LoadedConfiguration
        do throws(VigilError) {
            loaded = try Self.load(path: configPath, registry: registry, options: options, label: logger)
        } catch {
            throw Self.refusal(error.message, cause: error.cause)
        }
        let refused = loaded.entries.compactMap { entry -> String? in
            if case .unavailable(let plugin) = entry { return plugin.failure.description }
            return nil
        }
        if !refused.isEmpty {
            throw Self.refusal(refused.joined(separator: "\n") + "\n— fix it (`vigil check` says the same) and reload")
        }
        var restartOnly: [String] = []
        if loaded.configuration.host != declarations { restartOnly.append("[host]") }
        for name in Set(partTables.keys).union(loaded.partTables.keys).sorted()
        where partTables[name] != loaded.partTables[name] {
            restartOnly.append("[\(name)]")
        }
        if loaded.plan.unsafePlugins != unsafePlugins { restartOnly.append("acknowledge_unsafe_plugins") }
        if !restartOnly.isEmpty {
            throw Self.refusal(
                "\(configPath): \(restartOnly.joined(separator: ", ")) changed, which only a restart applies — "
                    + "restart the host (`systemctl --user restart vigil`), or undo that change and reload")
        }
        return loaded.entries
    }

    private static func refusal(_ message: String, cause: CoreError? = nil) -> VigilError {
        VigilError(
            code: .reloadRefused, message: "\(message)\n(the host keeps running its previous configuration)",
            cause: cause)
    }

    /// The machine's view of the new list, the executor's slots for it and the report: a plugin is
    /// kept when its name, verified manifest and settings are the same as a current ready one's.
    private func plan(_ entries: [Entry]) -> (Reconfiguration, [SlotSource], ReloadReport) {
        let now = Date().timeIntervalSince1970
        var items: [Reconfiguration.Item] = []
        var sources: [SlotSource] = []
        var report = ReloadReport(added: [], removed: [], restarted: [], kept: [])
        let newNames = Set(entries.map(\.name))
        for slot in slots where !newNames.contains(slot.name) { report.removed.append(slot.name) }
        for entry in entries {
            let current = slots.firstIndex { $0.name == entry.name }
            switch entry {
            case .ready(let plugin):
                let usesAudio = plugin.requirements.contains { $0.kind == .audioOutput }
                if let current, slots[current].implementation != nil,
                    slots[current].manifestDigest == plugin.manifestDigest, slots[current].settings == plugin.settings,
                    slots[current].version == plugin.version
                {
                    items.append(.init(name: plugin.name, usesAudio: usesAudio, keeps: current))
                    sources.append(.kept(current))
                    report.kept.append(plugin.name)
                    continue
                }
                items.append(.init(name: plugin.name, usesAudio: usesAudio))
                sources.append(
                    .new(
                        Slot(
                            name: plugin.name, version: plugin.version, requirements: plugin.requirements,
                            settings: plugin.settings, implementation: plugin.implementation,
                            manifestDigest: plugin.manifestDigest, since: now, loaded: plugin.loaded,
                            signature: plugin.signature)))
            case .unavailable(let plugin):
                // Not reached (checkReload refuses these), kept total: it shows failed.
                items.append(.init(name: plugin.name, unavailable: plugin.failure))
                sources.append(
                    .new(
                        Slot(
                            name: plugin.name, version: plugin.version, requirements: [],
                            settings: PluginSettings(pluginName: plugin.name, values: [:]), implementation: nil,
                            since: now)))
            }
            if current == nil { report.added.append(entry.name) } else { report.restarted.append(entry.name) }
        }
        return (Reconfiguration(items: items), sources, report)
    }

    /// Serves `control-PID.sock` beside the status file while the host is up: its requests go to
    /// this loop like any other input. A host that cannot listen logs why and runs on.
    func openControlChannel() {
        guard controlChannel == nil, publisher != nil, let runtimeDirectory, let inbox else { return }
        do throws(VigilError) {
            controlChannel = try HostControlChannel.start(
                path: runtimeDirectory.controlSocket(pid: getpid()), logger: logger
            ) { _, answer in
                inbox.send(
                    .reload { result in
                        switch result {
                        case .success(let report): answer(HostControlResponse(ok: true, reload: report))
                        case .failure(let error):
                            answer(
                                HostControlResponse(
                                    ok: false, error: .init(code: error.code.rawValue, message: error.message)))
                        }
                    })
            }
        } catch {
            logger.warning("\(error.message); `vigil reload` cannot reach this host")
        }
    }

    /// Replaces the slots with the pending reload's (the machine asked: everything it stops stopped);
    /// the machine swaps its list right after, before anything else runs on the actor.
    func swapSlots() {
        guard let sources = pendingSlots else { return }
        pendingSlots = nil
        slots = sources.map { source in
            switch source {
            case .kept(let index): slots[index]
            case .new(let slot): slot
            }
        }
        // Published after the machine swapped too (its `changed` and `settled` actions).
    }
}

extension VigilHost.Entry {
    var name: String {
        switch self {
        case .ready(let plugin): plugin.name
        case .unavailable(let plugin): plugin.name
        }
    }
}
