import VigilCore
import VigilPlugin

/// The host's decisions as a pure value: it takes what happened (``Event``: a `keepAlive()` or
/// `stop()`, a plugin ready, failed, interrupted or ended, system sleep coming or over…) and
/// returns what to do (``Action``: start or cancel a plugin's `run()`, open or close sleep
/// handling, publish a change, wake the callers waiting for a request). ``VigilHost`` executes
/// the actions and feeds back their outcomes; this type has no threads, tasks, clocks or I/O.
///
/// Semantics (kept from the first host): plugins start one at a time in `vigil.toml` order and
/// stop in reverse order; at most one start or cancellation is in flight; a request arriving
/// meanwhile takes effect after it (the host switches direction after the plugin it is working
/// on); every request gets a generation, and a caller is woken once the host settled on its
/// generation or a later one, so after any interleaving the final state is the last request's.
/// Each plugin is tried at most once per generation (a `failed` or `blocked` one again by the
/// next request).
struct HostStateMachine: Sendable {
    /// One plugin as the machine sees it.
    struct Plugin: Sendable {
        let name: String
        /// Holds an audio stream: stopped for system sleep, started again after it.
        let usesAudio: Bool
        /// Set for a plugin that can never run (did not verify, unknown entry, revoked while the
        /// host ran).
        var unavailable: PluginFailure?
        var state: PluginState
        /// The live `run()` child's instance number, from its start until it ended.
        var instance: UInt64?
        var attempted: UInt64 = 0
        var resuming = false
        var stoppingForSleep = false
        var stoppedForSleep = false
        /// Gave up (or failed after `ready`) while its `run()` still runs: it is cancelled next.
        var releasing = false
        /// An event reported between the start and `ready`, applied once it is ready.
        var pending: PluginEvent?
    }

    /// What happened.
    enum Event: Sendable, Equatable {
        /// `keepAlive()` (`true`), `stop()` (`false`), or a new pass towards the same state (`nil`).
        case requested(up: Bool?)
        /// The executor made instance `instance` of `plugin` and started its `run()`.
        case started(plugin: Int, instance: UInt64)
        /// The plugin's requirements are unmet: nothing was made.
        case blocked(plugin: Int, [UnmetRequirement])
        /// The plugin could not be made (a bad setting…).
        case notMade(plugin: Int, PluginFailure)
        /// The plugin's `run()` reported ``VigilPlugin/PluginEvent/ready``.
        case ready(plugin: Int, instance: UInt64)
        /// Any other report of a running instance.
        case reported(plugin: Int, instance: UInt64, PluginEvent)
        /// The instance's `run()` returned: with the error it threw, or cancelled by the host.
        case ended(plugin: Int, instance: UInt64, failure: PluginFailure?)
        /// Sleep handling's first attempt ended (on or off).
        case sleepSettled
        /// Sleep handling (its structured child) ended after a ``Action/closeSleepHandling``.
        case sleepClosed
        /// logind's `PrepareForSleep(true)` while the host holds the delay lock.
        case sleepComing
        /// `PrepareForSleep(false)` (the delay lock is taken again).
        case sleepEnded
        /// The system bus connection (and the locks with it) went away.
        case sleepLocksLost
        /// A graceful shutdown came while `run()` was starting: open no sleep handling.
        case startAbandoned
        /// Time to probe the environment again for the plugins waiting on it.
        case recheckRequirements
        /// The plugin's publisher revoked it (a new signed revocation list): a live instance is
        /// stopped and the plugin stays `failed` with `failure` (code `revoked`) — the only case
        /// where trust data stops something already running.
        case revoked(plugin: Int, PluginFailure)
        /// A reload: the plugins of the new configuration (see ``Reconfiguration``).
        case reconfigure(Reconfiguration)
        /// The executor swapped its plugin list after a ``Action/reconfigure``.
        case reconfigured
        /// The answer to ``Action/applySettings(plugin:instance:)``: the instance took its new
        /// settings in place (`true`), or it must be restarted with them (`false`).
        case settingsApplied(plugin: Int, instance: UInt64, inPlace: Bool)
    }

    /// What the executor does.
    enum Action: Sendable, Equatable {
        /// Check the plugin's requirements, make an instance and run it (`resuming` after sleep);
        /// answer with `started`, `blocked` or `notMade`.
        case start(plugin: Int, resuming: Bool)
        /// Cancel that instance's `run()`; it answers with `ended`.
        case cancel(plugin: Int, instance: UInt64)
        /// The plugin's state or details changed: tell subscribers (`event`) and the status file.
        case changed(plugin: Int, event: HostEvent.Kind?)
        /// Publish the status file from now on (and say which plugins run unsigned).
        case beginPublishing
        /// Stop publishing and remove the status file.
        case endPublishing
        /// Start sleep handling (answer `sleepSettled` after its first attempt).
        case openSleepHandling
        /// Cancel sleep handling (answer `sleepClosed`).
        case closeSleepHandling
        /// The audio plugins stopped for sleep: let the system sleep.
        case releaseDelayLock
        /// The host settled on every request up to this generation.
        case settled(UInt64)
        /// Every plugin a reload stops has stopped: replace the plugin list with the pending
        /// reload's now (plugin indices after this action are the new list's); answer `reconfigured`.
        case reconfigure
        /// Hand the pending reload's new settings to this running instance (a
        /// `ReconfigurablePlugin`); answer `settingsApplied`.
        case applySettings(plugin: Int, instance: UInt64)
    }

    static let sleepReason = "stopped for system sleep; it starts again when the system wakes up"

    private(set) var plugins: [Plugin]
    private(set) var desiredUp = false
    private(set) var generation: UInt64 = 0
    private(set) var applied: UInt64 = 0
    /// The plugin whose start or cancellation is in flight.
    private(set) var busy: Int?
    private(set) var asleep = false
    private(set) var publishing = false
    private(set) var sleepOpen = false
    private(set) var sleepSettled = false
    private(set) var sleepClosing = false
    private var abandoned = false
    private var delayLockToRelease = false
    /// The reload waiting for its stops (and for nothing else in flight) before the swap.
    private(set) var pendingReload: Reconfiguration?
    /// A ``Action/reconfigure`` was asked for and not yet answered.
    private var swapping = false
    /// The plugin whose ``Action/applySettings(plugin:instance:)`` is in flight, and whether the
    /// reload it was for is still the pending one (a newer reload asks again with its settings).
    private(set) var applying: (plugin: Int, instance: UInt64, current: Bool)?

    init(plugins: [Plugin]) {
        self.plugins = plugins
    }

    /// True when nothing is in flight and the host is down with no live instance and no sleep
    /// handling: the executor's loop may end.
    var isAtRest: Bool {
        busy == nil && !desiredUp && applied == generation && !sleepOpen && pendingReload == nil && !swapping
            && plugins.allSatisfy { $0.instance == nil }
    }

    /// True while the host is wanted up and some plugin waits only for its environment.
    var hasEnvironmentBlocked: Bool {
        desiredUp && plugins.contains { Self.waitsForEnvironment($0.state) }
    }

    static func waitsForEnvironment(_ state: PluginState) -> Bool {
        if case .blocked(let unmet) = state { unmet.allSatisfy { !$0.requirement.isDeclaration } } else { false }
    }

    /// Takes `event` and returns the actions, in order.
    mutating func handle(_ event: Event) -> [Action] {
        var actions: [Action] = []
        switch event {
        case .requested(let up):
            generation &+= 1
            if let up { desiredUp = up }
            // A stop never waits for the system bus: sleep handling ends now.
            if up == false { closeSleep(&actions) }
        case .started(let index, let instance):
            plugins[index].instance = instance
            plugins[index].pending = nil
            set(index, .starting, nil, &actions)
        case .blocked(let index, let unmet):
            busy = nil
            if plugins[index].state != .blocked(unmet) { set(index, .blocked(unmet), .blocked, &actions) }
        case .notMade(let index, let failure):
            busy = nil
            failStart(index, failure, &actions)
        case .ready(let index, let instance):
            guard plugins[index].instance == instance, plugins[index].state == .starting else { break }
            busy = nil
            set(index, .running, plugins[index].resuming ? .resumed : .started, &actions)
            plugins[index].resuming = false
            if let pending = plugins[index].pending {
                plugins[index].pending = nil
                apply(pending, to: index, &actions)
            }
        case .reported(let index, let instance, let report):
            guard plugins[index].instance == instance else { break }
            // A denial changes no state: it is published at once, whatever the state.
            if case .denied(let denial) = report {
                actions.append(.changed(plugin: index, event: .denied(denial)))
                break
            }
            switch plugins[index].state {
            case .starting: if report != .detailsChanged { plugins[index].pending = report }
            case .running, .interrupted: apply(report, to: index, &actions)
            default: break
            }
        case .ended(let index, let instance, let failure):
            guard plugins[index].instance == instance else { break }
            ended(index, failure: failure, &actions)
        case .sleepSettled:
            sleepSettled = true
        case .sleepClosed:
            sleepOpen = false
            sleepSettled = false
            sleepClosing = false
            delayLockToRelease = false
            if asleep {
                asleep = false
                generation &+= 1
            }
        case .sleepComing:
            guard sleepOpen, !sleepClosing, desiredUp, !asleep else { break }
            asleep = true
            delayLockToRelease = true
            generation &+= 1
        case .sleepEnded:
            guard sleepOpen, desiredUp, asleep else { break }
            asleep = false
            delayLockToRelease = false
            generation &+= 1
        case .sleepLocksLost:
            // No PrepareForSleep(false) will come from a logind that went away: start again.
            guard asleep else { break }
            asleep = false
            delayLockToRelease = false
            generation &+= 1
        case .startAbandoned:
            abandoned = true
            closeSleep(&actions)
        case .recheckRequirements:
            if hasEnvironmentBlocked { generation &+= 1 }
        case .revoked(let index, let failure):
            revoke(index, failure, &actions)
        case .reconfigure(let reload):
            // A newer reload replaces one still waiting: both were made against the current list.
            pendingReload = reload
            if applying != nil { applying?.current = false }
            generation &+= 1
        case .reconfigured:
            guard swapping, let reload = pendingReload else { break }
            swap(to: reload, &actions)
        case .settingsApplied(let index, let instance, let inPlace):
            settingsApplied(index, instance: instance, inPlace: inPlace)
        }
        reconcile(&actions)
        return actions
    }

    // MARK: - Plugin reports

    private mutating func apply(_ report: PluginEvent, to index: Int, _ actions: inout [Action]) {
        switch report {
        case .ready:
            break
        case .interrupted(let reason):
            set(index, .interrupted(reason: reason), .interrupted(reason: reason), &actions)
        case .resumed:
            set(index, .running, .resumed, &actions)
        case .resumeFailed(let reason):
            let failure = PluginFailure(
                code: .plugin(.resumeFailed), plugin: plugins[index].name,
                message: "gave up after an interruption: \(reason)")
            plugins[index].releasing = true
            set(index, .failed(failure), .resumeFailed(reason: reason), &actions)
        case .detailsChanged:
            actions.append(.changed(plugin: index, event: .detailsChanged))
        case .denied(let denial):
            actions.append(.changed(plugin: index, event: .denied(denial)))
        }
    }

    private mutating func ended(_ index: Int, failure: PluginFailure?, _ actions: inout [Action]) {
        plugins[index].instance = nil
        plugins[index].pending = nil
        if busy == index { busy = nil }
        // Settings it was taking are moot: the reload restarts it (its late answer is ignored).
        if applying?.plugin == index { applying = nil }
        switch plugins[index].state {
        case .starting:
            failStart(
                index,
                failure
                    ?? PluginFailure(
                        PluginError.startFailed(
                            plugin: plugins[index].name,
                            reason: "its run() returned before it reported ready — a plugin's run() reports "
                                + "ready, then works until it is cancelled"), plugin: plugins[index].name),
                &actions)
        case .stopping where plugins[index].stoppingForSleep:
            plugins[index].stoppingForSleep = false
            plugins[index].stoppedForSleep = true
            set(index, .interrupted(reason: Self.sleepReason), .interrupted(reason: Self.sleepReason), &actions)
        case .stopping:
            set(index, .idle, .stopped, &actions)
        case .running, .interrupted:
            // Ended on its own: the plugin gave up.
            let reason = failure?.message ?? "its run() returned while the host wanted it running"
            let failure = PluginFailure(
                code: .plugin(.resumeFailed), plugin: plugins[index].name,
                message: "gave up after an interruption: \(reason)")
            set(index, .failed(failure), .resumeFailed(reason: reason), &actions)
        case .idle, .failed, .blocked:
            plugins[index].releasing = false
            actions.append(.changed(plugin: index, event: nil))
        }
    }

    private mutating func revoke(_ index: Int, _ failure: PluginFailure, _ actions: inout [Action]) {
        guard plugins[index].unavailable == nil else { return }
        plugins[index].unavailable = failure
        plugins[index].pending = nil
        plugins[index].resuming = false
        plugins[index].stoppingForSleep = false
        plugins[index].stoppedForSleep = false
        let wasStarting = plugins[index].state == .starting
        set(index, .failed(failure), .revoked(failure), &actions)
        guard let instance = plugins[index].instance else { return }
        if wasStarting && busy == index {
            // Its start is the step in flight: it becomes this cancellation (answered by `ended`).
            actions.append(.cancel(plugin: index, instance: instance))
        } else if busy != index || applying?.plugin == index {
            // Cancelled as soon as nothing else is in flight (a cancellation in flight just ends;
            // new settings in flight are answered first).
            plugins[index].releasing = true
        }
    }

    private mutating func failStart(_ index: Int, _ failure: PluginFailure, _ actions: inout [Action]) {
        let resuming = plugins[index].resuming
        plugins[index].resuming = false
        set(index, .failed(failure), resuming ? .resumeFailed(reason: failure.message) : .failed(failure), &actions)
    }

    private mutating func set(_ index: Int, _ state: PluginState, _ event: HostEvent.Kind?, _ actions: inout [Action]) {
        plugins[index].state = state
        actions.append(.changed(plugin: index, event: event))
    }

    private mutating func closeSleep(_ actions: inout [Action]) {
        guard sleepOpen, !sleepClosing else { return }
        sleepClosing = true
        actions.append(.closeSleepHandling)
    }

    // MARK: - Reconciliation

    /// Takes the next step towards the latest request, if nothing is in flight.
    private mutating func reconcile(_ actions: inout [Action]) {
        while busy == nil, !swapping {
            if let index = plugins.indices.first(where: { plugins[$0].releasing && plugins[$0].instance != nil }),
                let instance = plugins[index].instance
            {
                plugins[index].releasing = false
                busy = index
                actions.append(.cancel(plugin: index, instance: instance))
                return
            }
            if pendingReload != nil {
                retireForReload(&actions)
                continue
            }
            guard applied != generation else { return }
            let done = desiredUp ? stepUp(&actions) : stepDown(&actions)
            guard done else { return }
            applied = generation
            actions.append(.settled(applied))
        }
    }

    /// One step of bringing the plugins up; true when the pass is complete.
    private mutating func stepUp(_ actions: inout [Action]) -> Bool {
        if !publishing {
            publishing = true
            actions.append(.beginPublishing)
        }
        for index in plugins.indices {
            let plugin = plugins[index]
            if asleep && plugin.usesAudio {
                guard let instance = plugin.instance else { continue }
                plugins[index].stoppingForSleep = true
                busy = index
                set(index, .stopping, nil, &actions)
                actions.append(.cancel(plugin: index, instance: instance))
                return false
            }
            let resuming = plugin.stoppedForSleep
            let retry: Bool
            switch plugin.state {
            case .idle, .failed, .blocked: retry = plugin.attempted != generation && plugin.instance == nil
            default: retry = false
            }
            guard resuming || retry else { continue }
            plugins[index].attempted = generation
            plugins[index].stoppedForSleep = false
            if let failure = plugin.unavailable {
                if plugin.state != .failed(failure) { set(index, .failed(failure), .failed(failure), &actions) }
                continue
            }
            plugins[index].resuming = resuming
            busy = index
            actions.append(.start(plugin: index, resuming: resuming))
            return false
        }
        if delayLockToRelease {
            delayLockToRelease = false
            actions.append(.releaseDelayLock)
        }
        // Sleep handling comes after the keep-alive, never in its path: the plugins run already.
        if sleepClosing { return false }
        if !sleepOpen && !abandoned {
            sleepOpen = true
            sleepSettled = false
            actions.append(.openSleepHandling)
        }
        return !sleepOpen || sleepSettled
    }

    /// One step of bringing the plugins down; true when the pass is complete.
    private mutating func stepDown(_ actions: inout [Action]) -> Bool {
        for index in plugins.indices.reversed() where plugins[index].unavailable == nil {
            plugins[index].stoppedForSleep = false
            plugins[index].resuming = false
            if let instance = plugins[index].instance {
                busy = index
                set(index, .stopping, nil, &actions)
                actions.append(.cancel(plugin: index, instance: instance))
                return false
            }
            if plugins[index].state != .idle { set(index, .idle, .stopped, &actions) }
        }
        if publishing {
            publishing = false
            actions.append(.endPublishing)
        }
        closeSleep(&actions)
        if sleepOpen { return false }
        asleep = false
        abandoned = false
        return true
    }

    // MARK: - Reload

    /// One step of a pending reload: stop (in reverse order, one at a time) each plugin the new
    /// list does not keep, then ask the executor to swap the lists.
    private mutating func retireForReload(_ actions: inout [Action]) {
        guard let reload = pendingReload else { return }
        let kept = Set(reload.items.compactMap(\.keeps))
        for index in plugins.indices.reversed() where !kept.contains(index) {
            guard let instance = plugins[index].instance else { continue }
            plugins[index].stoppingForSleep = false
            busy = index
            set(index, .stopping, nil, &actions)
            actions.append(.cancel(plugin: index, instance: instance))
            return
        }
        // A kept plugin with new settings takes them in place while it runs; one that does
        // not run now (failed, blocked, stopped for sleep) starts afresh with them instead.
        if let item = reload.items.firstIndex(where: { $0.reconfigures }), let index = reload.items[item].keeps {
            let plugin = plugins[index]
            if let instance = plugin.instance, !plugin.releasing, plugin.state.isActive {
                busy = index
                applying = (index, instance, true)
                actions.append(.applySettings(plugin: index, instance: instance))
            } else {
                restartInstead(item)
            }
            return
        }
        // One stopped for system sleep has no instance left: it stops for good now.
        for index in plugins.indices.reversed() where !kept.contains(index) && plugins[index].stoppedForSleep {
            plugins[index].stoppedForSleep = false
            set(index, .idle, .stopped, &actions)
        }
        swapping = true
        actions.append(.reconfigure)
    }

    /// The answer to an ``Action/applySettings(plugin:instance:)``: a plugin that took its new
    /// settings is kept as it runs; one that did not (or ended meanwhile) is restarted with them.
    private mutating func settingsApplied(_ index: Int, instance: UInt64, inPlace: Bool) {
        // Matched by instance too: a late answer for an instance that ended is not this one's.
        guard let (plugin, asked, current) = applying, plugin == index, asked == instance else { return }
        applying = nil
        if busy == index { busy = nil }
        // For a reload that a newer one replaced: the newer one asks again with its own settings.
        guard current, let item = pendingReload?.items.firstIndex(where: { $0.keeps == index && $0.reconfigures })
        else { return }
        if inPlace && plugins[index].instance == instance {
            pendingReload?.items[item].reconfigures = false
        } else {
            restartInstead(item)
        }
    }

    /// Item `item` of the pending reload no longer keeps its plugin: it is stopped like a
    /// changed one and starts afresh with its new settings after the swap.
    private mutating func restartInstead(_ item: Int) {
        pendingReload?.items[item].keeps = nil
        pendingReload?.items[item].reconfigures = false
    }

    /// Replaces the plugin list with `reload`'s: a kept plugin carries its state and live instance
    /// over untouched (its stream keeps playing); an added or changed one starts fresh.
    private mutating func swap(to reload: Reconfiguration, _ actions: inout [Action]) {
        plugins = reload.items.map { item in
            if let index = item.keeps { return plugins[index] }
            return Plugin(
                name: item.name, usesAudio: item.usesAudio, unavailable: item.unavailable,
                state: item.unavailable.map { .failed($0) } ?? .idle)
        }
        pendingReload = nil
        swapping = false
        for (index, item) in reload.items.enumerated() where item.keeps == nil {
            actions.append(.changed(plugin: index, event: item.unavailable.map { .failed($0) }))
        }
    }
}

/// A reload's new plugin list, in `vigil.toml` order: each plugin either keeps a current one (by
/// its index in the current list: same manifest, same settings; left running) or is new (added,
/// or a changed one that replaces the current plugin of its name, which is stopped first).
/// Current plugins no item keeps are stopped.
struct Reconfiguration: Sendable, Equatable {
    struct Item: Sendable, Equatable {
        var name: String
        var usesAudio: Bool
        var unavailable: PluginFailure?
        /// The current plugin's index this item keeps running; `nil` for a new one.
        var keeps: Int?
        /// The kept plugin's settings changed and it can take new ones while it runs (a
        /// `ReconfigurablePlugin`): they are applied in place before the swap, or, when it
        /// answers that it cannot, it is restarted as a changed plugin is.
        var reconfigures: Bool

        init(
            name: String, usesAudio: Bool = false, unavailable: PluginFailure? = nil, keeps: Int? = nil,
            reconfigures: Bool = false
        ) {
            self.name = name
            self.usesAudio = usesAudio
            self.unavailable = unavailable
            self.keeps = keeps
            self.reconfigures = reconfigures && keeps != nil
        }
    }

    var items: [Item]
}
