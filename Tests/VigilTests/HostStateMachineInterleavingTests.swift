import Testing
import VigilCore
import VigilPlugin
import VigilTestSupport

@testable import Vigil
@testable import VigilHostCore

/// The interleavings the 2,000-call `VigilHost` tests exercise, on the pure machine: a seeded
/// simulation of its executor answers every action in a random order, among random requests,
/// plugin reports, plugins giving up, failed starts and system sleep, and checks the host's
/// promises after every step and at the end.
@Suite("Host state machine: seeded random interleavings")
struct HostStateMachineInterleavingTests {
    /// The executor, simulated: what it owes the machine, and what it saw.
    struct Simulation {
        var machine: HostStateMachine
        var random: SplitMix64
        /// Outcomes still owed (a ready, an end, sleep handling settled or closed), answered in random order.
        var owed: [HostStateMachine.Event] = []
        /// The instance whose `run()` runs, per plugin.
        var live: [Int: UInt64] = [:]
        /// The start or cancellation not answered yet.
        var inFlight: (plugin: Int, instance: UInt64?)?
        var nextInstance: UInt64 = 1
        var settled: UInt64 = 0
        var lastRequest: UInt64 = 0
        var startsMayFail = true
        var violations: [String] = []
        var pendingReload: Reconfiguration?

        static let failure = PluginFailure(code: .plugin(.startFailed), plugin: "p", message: "told to fail")

        init(plugins: Int, audio: Set<Int>, seed: UInt64) {
            machine = HostStateMachine(
                plugins: (0..<plugins).map {
                    HostStateMachine.Plugin(
                        name: "p\($0)", usesAudio: audio.contains($0), unavailable: nil, state: .idle)
                })
            random = SplitMix64(seed: seed)
        }

        mutating func roll(_ sides: UInt64) -> UInt64 { random.next() % sides }

        mutating func feed(_ event: HostStateMachine.Event) {
            var queue = [event]
            while !queue.isEmpty {
                let next = queue.removeFirst()
                answer(next)
                for action in machine.handle(next) { queue += execute(action) }
            }
            check()
        }

        /// Clears the in-flight marker when `event` answers it.
        mutating func answer(_ event: HostStateMachine.Event) {
            guard let flight = inFlight else { return }
            switch event {
            case .blocked(let plugin, _), .notMade(let plugin, _):
                if plugin == flight.plugin { inFlight = nil }
            case .ready(let plugin, let instance), .ended(let plugin, let instance, _),
                .settingsApplied(let plugin, let instance, _):
                if plugin == flight.plugin, instance == flight.instance { inFlight = nil }
            default: break
            }
        }

        /// Carries out `action`; returns the events the real executor feeds back at once.
        mutating func execute(_ action: HostStateMachine.Action) -> [HostStateMachine.Event] {
            switch action {
            case .start(let plugin, _):
                if inFlight != nil { violations.append("start of p\(plugin) while \(inFlight!) is in flight") }
                if live[plugin] != nil { violations.append("start of p\(plugin) with a live instance") }
                inFlight = (plugin, nil)
                switch startsMayFail ? roll(10) : 9 {
                case 0: return [.notMade(plugin: plugin, Self.failure)]
                case 1:
                    let unmet = UnmetRequirement(
                        requirement: HostRequirement(kind: .audioOutput), problem: "none", remedy: "start one")
                    return [.blocked(plugin: plugin, [unmet])]
                case let roll:
                    let id = nextInstance
                    nextInstance += 1
                    live[plugin] = id
                    inFlight = (plugin, id)
                    owed.append(
                        roll == 2
                            ? .ended(plugin: plugin, instance: id, failure: Self.failure)
                            : .ready(plugin: plugin, instance: id))
                    return [.started(plugin: plugin, instance: id)]
                }
            case .cancel(let plugin, let instance):
                if inFlight != nil { violations.append("cancel of p\(plugin) while \(inFlight!) is in flight") }
                if live[plugin] != instance { violations.append("cancel of p\(plugin) #\(instance), not live") }
                inFlight = (plugin, instance)
                owed.removeAll { if case .ready(plugin, instance) = $0 { true } else { false } }
                owed.append(.ended(plugin: plugin, instance: instance, failure: nil))
            case .openSleepHandling: owed.append(.sleepSettled)
            case .closeSleepHandling: owed.append(.sleepClosed)
            case .settled(let generation):
                if generation < settled { violations.append("settled went back from \(settled) to \(generation)") }
                settled = generation
            case .reconfigure:
                return swapForReload()
            case .applySettings(let plugin, let instance):
                if inFlight != nil { violations.append("settings to p\(plugin) while \(inFlight!) is in flight") }
                if live[plugin] != instance { violations.append("settings to p\(plugin) #\(instance), not live") }
                inFlight = (plugin, instance)
                owed.append(.settingsApplied(plugin: plugin, instance: instance, inPlace: roll(3) != 0))
            case .changed, .beginPublishing, .endPublishing, .releaseDelayLock: break
            }
            return []
        }

        /// A reload: a random new list of 1 to 5 plugins, each keeping a current one, replacing
        /// it (same name, changed) or new.
        mutating func reload() {
            let current = machine.plugins.count
            var items: [Reconfiguration.Item] = []
            for index in 0..<current where roll(5) != 0 {
                items.append(
                    Reconfiguration.Item(
                        name: machine.plugins[index].name, usesAudio: machine.plugins[index].usesAudio,
                        keeps: roll(3) == 0 ? nil : index, reconfigures: roll(2) == 0))
            }
            while items.isEmpty || (items.count < 5 && roll(3) == 0) {
                items.append(Reconfiguration.Item(name: "n\(nextInstance)-\(items.count)", usesAudio: roll(2) == 0))
            }
            items.shuffle(using: &random)
            pendingReload = Reconfiguration(items: items)
            feed(.reconfigure(pendingReload!))
            lastRequest = machine.generation
        }

        /// The executor swaps its list: only once nothing is in flight and every plugin the reload
        /// does not keep has stopped; the live instances and owed outcomes follow their plugin.
        mutating func swapForReload() -> [HostStateMachine.Event] {
            // The machine's view: a plugin that could not take its settings in place is no longer kept.
            guard let reload = machine.pendingReload ?? pendingReload else {
                violations.append("reconfigure with no reload pending")
                return []
            }
            if inFlight != nil { violations.append("reconfigure while \(inFlight!) is in flight") }
            var moved: [Int: Int] = [:]
            for (new, item) in reload.items.enumerated() { if let old = item.keeps { moved[old] = new } }
            for (index, _) in live where moved[index] == nil {
                violations.append("reconfigure while p\(index), not kept, still runs")
            }
            live = Dictionary(uniqueKeysWithValues: live.compactMap { old, id in moved[old].map { ($0, id) } })
            owed = owed.compactMap { event in
                switch event {
                case .ready(let plugin, let instance): moved[plugin].map { .ready(plugin: $0, instance: instance) }
                case .ended(let plugin, let instance, let failure):
                    moved[plugin].map { .ended(plugin: $0, instance: instance, failure: failure) }
                default: event
                }
            }
            pendingReload = nil
            return [.reconfigured]
        }

        /// Delivers one owed outcome, at random.
        mutating func deliverOne() {
            guard !owed.isEmpty else { return }
            let event = owed.remove(at: Int(roll(UInt64(owed.count))))
            if case .ended(let plugin, let instance, _) = event, live[plugin] == instance { live[plugin] = nil }
            if case .ready(let plugin, let instance) = event, live[plugin] != instance { return }
            feed(event)
        }

        mutating func request(_ up: Bool) {
            feed(.requested(up: up))
            lastRequest = machine.generation
        }

        /// A running instance reports something, or its `run()` ends on its own.
        mutating func report() {
            guard let (plugin, instance) = live.randomElement(using: &random), machine.plugins[plugin].state.isActive
            else { return }
            switch roll(5) {
            case 0: feed(.reported(plugin: plugin, instance: instance, .interrupted(reason: "lost it")))
            case 1: feed(.reported(plugin: plugin, instance: instance, .resumed))
            case 2: feed(.reported(plugin: plugin, instance: instance, .detailsChanged))
            case 3: feed(.reported(plugin: plugin, instance: instance, .resumeFailed(reason: "gave up")))
            default:
                guard !owed.contains(.ended(plugin: plugin, instance: instance, failure: nil)) else { return }
                live[plugin] = nil
                owed.removeAll { if case .ended(plugin, instance, _) = $0 { true } else { false } }
                feed(.ended(plugin: plugin, instance: instance, failure: Self.failure))
            }
        }

        /// The promises that hold after every step.
        mutating func check() {
            for (index, plugin) in machine.plugins.enumerated() where plugin.instance != live[index] {
                violations.append(
                    "p\(index): the machine has #\(plugin.instance ?? 0), the executor #\(live[index] ?? 0)")
            }
        }
    }

    static func run(seed: UInt64, steps: Int, lastIsUp: Bool, reloads: Bool = false) -> Simulation {
        var sim = Simulation(plugins: 4, audio: [1, 3], seed: seed)
        for _ in 0..<steps {
            switch sim.roll(20) {
            case 0 where reloads: sim.reload()
            case 0..<7: sim.request(sim.roll(3) != 0)
            case 7..<15: sim.deliverOne()
            case 15..<18: sim.report()
            case 18: sim.feed(.sleepComing)
            default: sim.feed(sim.roll(4) == 0 ? .sleepLocksLost : .sleepEnded)
            }
        }
        // The last request, then every owed outcome (starts no longer fail, nothing else happens).
        sim.startsMayFail = false
        sim.feed(.sleepEnded)
        sim.request(lastIsUp)
        var guardSteps = 0
        while !sim.owed.isEmpty && guardSteps < 10_000 {
            sim.deliverOne()
            guardSteps += 1
        }
        return sim
    }

    @Test(
        "2,000 random steps per seed end in the state of the last request, with every caller settled", arguments: 0..<40
    )
    func randomInterleavings(seed: Int) {
        Self.expectLastRequestWins(seed: seed, reloads: false)
    }

    @Test(
        "with reloads among them (plugins kept, changed, added, removed, reordered), the same promises hold",
        arguments: 0..<40)
    func randomInterleavingsWithReloads(seed: Int) {
        Self.expectLastRequestWins(seed: seed, reloads: true)
    }

    static func expectLastRequestWins(seed: Int, reloads: Bool) {
        let lastIsUp = seed % 2 == 0
        let sim = Self.run(seed: UInt64(seed) &* 7919 &+ 1, steps: 2_000, lastIsUp: lastIsUp, reloads: reloads)
        #expect(sim.machine.pendingReload == nil, "seed \(seed)")
        #expect(sim.violations.count == 0, "seed \(seed): \(sim.violations.prefix(3))")
        #expect(sim.owed.isEmpty, "seed \(seed)")
        #expect(sim.inFlight == nil, "seed \(seed)")
        #expect(sim.settled >= sim.lastRequest, "seed \(seed): settled \(sim.settled), last request \(sim.lastRequest)")
        #expect(sim.machine.busy == nil)
        // Up: every plugin runs a live instance (`interrupted` only as its own last report said,
        // never still stopped for a sleep that ended); down: every plugin idle.
        for plugin in sim.machine.plugins {
            if lastIsUp {
                #expect(plugin.state.isActive, "seed \(seed): \(plugin.name) \(plugin.state)")
                #expect(plugin.state != .interrupted(reason: HostStateMachine.sleepReason), "seed \(seed)")
            } else {
                #expect(plugin.state == .idle, "seed \(seed): \(plugin.name) \(plugin.state)")
            }
        }
        #expect(sim.live.count == (lastIsUp ? sim.machine.plugins.count : 0), "seed \(seed)")
        if !lastIsUp { #expect(sim.machine.isAtRest, "seed \(seed)") }
    }
}
