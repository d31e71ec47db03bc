import FoundationEssentials
import Logging
import Synchronization
import VigilCore
import VigilHostCheck
import VigilMetrics
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
    /// Only their settings changed and the running plugin applied them in place (the
    /// supervisor restarts only the workers whose entry changed); not restarted.
    public var reconfigured: [String]

    public init(
        added: [String] = [], removed: [String] = [], restarted: [String] = [], kept: [String] = [],
        reconfigured: [String] = []
    ) {
        self.added = added
        self.removed = removed
        self.restarted = restarted
        self.kept = kept
        self.reconfigured = reconfigured
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        added = try container.decode([String].self, forKey: .added)
        removed = try container.decode([String].self, forKey: .removed)
        restarted = try container.decode([String].self, forKey: .restarted)
        kept = try container.decode([String].self, forKey: .kept)
        // Absent in a host from before it could apply settings in place.
        reconfigured = try container.decodeIfPresent([String].self, forKey: .reconfigured) ?? []
    }
}

/// A reload's report as it ends: a plugin asked to take its settings in place that could not
/// is moved to `restarted` before the caller hears it.
final class ReloadOutcome: Sendable {
    private let value: Mutex<ReloadReport>
    init(_ report: ReloadReport) { value = Mutex(report) }
    var report: ReloadReport { value.withLock { $0 } }

    func restartedInstead(_ name: String) {
        value.withLock { report in
            report.reconfigured.removeAll { $0 == name }
            if !report.restarted.contains(name) { report.restarted.append(name) }
        }
    }
}

extension VigilHost {
    /// Where a slot of the new list comes from: a current slot kept as it is, or a new one.
    enum SlotSource {
        case kept(Int)
        case new(Slot)
        /// A current slot kept with new settings (applied in place), or, when the machine
        /// decided on a restart, the new slot.
        case reconfigured(Int, Slot)
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
            let metrics: MetricsSettings
            (entries, metrics) = try checkReload()
            // The exporter first: a new address that cannot be bound refuses the whole reload
            // before any plugin changes (the old address keeps serving).
            if metrics != metricsApplied, let apply = options.applyMetricsSettings {
                try await apply(metrics)
                metricsApplied = metrics
                logger.notice(
                    "[metrics] applied",
                    metadata: [
                        "metrics.listen": "\(metrics.listen.map { "\($0)" } ?? "")",
                        "metrics.textfile": "\(metrics.textfile ?? "")",
                    ])
            }
        } catch {
            logger.error("reload refused: \(error.message)", metadata: ["vigil.config": "\(configPath ?? "")"])
            notifier?.send(["READY=1"])
            completion(.failure(error))
            return
        }
        let (reconfiguration, sources, report) = plan(entries)
        pendingSlots = sources
        let outcome = ReloadOutcome(report)
        pendingOutcome = outcome
        let summary =
            "reloading \(configPath ?? ""): \(report.added.count) added, \(report.removed.count) removed, "
            + "\(report.restarted.count) restarted, \(report.reconfigured.count) reconfigured in place, "
            + "\(report.kept.count) kept"
        logger.notice(
            "\(summary)",
            metadata: [
                "vigil.added": "\(report.added.joined(separator: ","))",
                "vigil.removed": "\(report.removed.joined(separator: ","))",
                "vigil.restarted": "\(report.restarted.joined(separator: ","))",
                "vigil.reconfigured": "\(report.reconfigured.joined(separator: ","))",
            ])
        let actions = machine.handle(.reconfigure(reconfiguration))
        waiters.append(
            (
                machine.generation,
                {
                    notifier?.send(["READY=1"])
                    completion(.success(outcome.report))
                }
            ))
        await perform(actions, &children)
    }

    /// The new configuration's entries and `[metrics]`, or why it is refused.
    private func checkReload() throws(VigilError) -> (entries: [Entry], metrics: MetricsSettings) {
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
        // `[metrics]` is the exporter's to apply when it can (`applyMetricsSettings`).
        var (oldTables, newTables) = (partTables, loaded.partTables)
        if options.applyMetricsSettings != nil {
            oldTables["metrics"] = nil
            newTables["metrics"] = nil
        }
        let restartOnly = Self.restartOnlyChanges(
            from: (declarations, oldTables, unsafePlugins),
            to: (loaded.configuration.host, newTables, loaded.plan.unsafePlugins))
        if !restartOnly.isEmpty {
            throw VigilError(
                code: .reloadNeedsRestart,
                message: "\(configPath): only a restart applies "
                    + (restartOnly.count == 1 ? "this change" : "these changes") + ":\n"
                    + restartOnly.map { "  \($0.key): \($0.why)" }.joined(separator: "\n")
                    + "\n— restart the host (`systemctl --user restart vigil`, or stop and start `vigil up`) to apply "
                    + (restartOnly.count == 1 ? "it" : "them") + ", or undo "
                    + (restartOnly.count == 1 ? "it" : "them") + " and reload\n"
                    + "(the host keeps running its previous configuration)")
        }
        return (loaded.entries, loaded.options.metricsSettings)
    }

    /// Each key whose change only a restart applies, with why: `[host]`'s keys (the name is
    /// given to plugins and streams at start, the declarations are what plugins were checked
    /// against, the sleep lock is taken at start), every key of the parts' tables (`[announce]`,
    /// and `[metrics]` unless the host has ``Options/applyMetricsSettings``: read once as the host
    /// is made), and `acknowledge_unsafe_plugins`.
    /// `foreign_tables` is not one: only `vigil check` and the build read it.
    static func restartOnlyChanges(
        from old: (host: HostDeclarations, tables: [String: [String: SettingValue]], unsafe: [String]),
        to new: (host: HostDeclarations, tables: [String: [String: SettingValue]], unsafe: [String])
    ) -> [(key: String, why: String)] {
        var changes: [(key: String, why: String)] = []
        if old.host.name != new.host.name {
            changes.append(("[host] name", "plugins, streams and the status took the host's name at start"))
        }
        if old.host.backgroundModes != new.host.backgroundModes {
            changes.append(("[host] background_modes", "the running plugins were checked against the old declarations"))
        }
        if old.host.services != new.host.services {
            changes.append(("[host] services", "the running plugins were checked against the old declarations"))
        }
        if old.host.inhibitSleep != new.host.inhibitSleep {
            changes.append(("[host] inhibit_sleep", "the sleep lock is taken or not as the host starts"))
        }
        var rest = old.host
        rest.foreignTables = new.host.foreignTables
        if changes.isEmpty, rest != new.host {
            // A [host] key this list does not know yet: still refused, by table.
            changes.append(("[host]", "the host's declarations are read as it starts"))
        }
        for table in Set(old.tables.keys).union(new.tables.keys).sorted() {
            let (before, after) = (old.tables[table] ?? [:], new.tables[table] ?? [:])
            for key in Set(before.keys).union(after.keys).sorted() where before[key] != after[key] {
                changes.append(("[\(table)] \(key)", "[\(table)] is read once, as the host is made"))
            }
        }
        if old.unsafe != new.unsafe {
            changes.append(
                ("acknowledge_unsafe_plugins", "unsigned plugins are loaded (or not) and announced as the host starts"))
        }
        return changes
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
        var report = ReloadReport()
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
                if let current, slots[current].implementation != nil,
                    slots[current].manifestDigest == plugin.manifestDigest, slots[current].version == plugin.version,
                    slots[current].instance is any ReconfigurablePlugin, machine.plugins[current].state.isActive
                {
                    // Only the settings changed, and the running instance may take them in place.
                    items.append(.init(name: plugin.name, usesAudio: usesAudio, keeps: current, reconfigures: true))
                    var slot = slots[current]
                    slot.settings = plugin.settings
                    sources.append(.reconfigured(current, slot))
                    report.reconfigured.append(plugin.name)
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
        let items = machine.pendingReload?.items ?? []
        slots = sources.enumerated().map { position, source in
            switch source {
            case .kept(let index): return slots[index]
            case .new(let slot): return slot
            case .reconfigured(let index, let slot):
                if items.indices.contains(position), items[position].keeps == index {
                    var kept = slots[index]
                    kept.settings = slot.settings
                    return kept
                }
                // The machine restarts it instead: a fresh slot with the new settings.
                pendingOutcome?.restartedInstead(slot.name)
                var fresh = slot
                fresh.instance = nil
                fresh.instanceID = 0
                fresh.stop = nil
                fresh.details = [:]
                fresh.since = Date().timeIntervalSince1970
                return fresh
            }
        }
        pendingOutcome = nil
        for slot in slots where slot.isConfined { metrics.confined(plugin: slot.name) }
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
