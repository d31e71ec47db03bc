import Testing
import VigilCore
import VigilPlugin

@testable import Vigil
@testable import VigilHostCore

/// Reload on the pure ``HostStateMachine``: only what changed stops and starts; an unchanged
/// plugin's instance is never cancelled; reloads interleave with stop, start and system sleep.
@Suite("Host state machine: reload (pure)")
struct HostStateMachineReloadTests {
    typealias Machine = HostStateMachine
    typealias Action = HostStateMachine.Action
    typealias Item = Reconfiguration.Item

    /// Answers every action as the executor would at once (a start is made and ready, a cancel
    /// ends, sleep handling settles or closes, a reconfigure is done); returns every action seen.
    @discardableResult
    static func drive(_ m: inout Machine, _ event: Machine.Event, next: inout UInt64) -> [Action] {
        var seen: [Action] = []
        var pending = m.handle(event)
        while !pending.isEmpty {
            let action = pending.removeFirst()
            seen.append(action)
            switch action {
            case .start(let index, _):
                next += 1
                pending += m.handle(.started(plugin: index, instance: next))
                pending += m.handle(.ready(plugin: index, instance: next))
            case .cancel(let index, let instance):
                pending += m.handle(.ended(plugin: index, instance: instance, failure: nil))
            case .openSleepHandling: pending += m.handle(.sleepSettled)
            case .closeSleepHandling: pending += m.handle(.sleepClosed)
            case .reconfigure: pending += m.handle(.reconfigured)
            default: break
            }
        }
        return seen
    }

    static func names(_ m: Machine) -> [String] { m.plugins.map(\.name) }

    /// b's instance 2 was cancelled for a reload: it ends, the lists swap, b starts as instance 3
    /// and the reload (generation 2) settles.
    static func expectBRestarts(_ m: inout Machine) {
        #expect(
            m.handle(.ended(plugin: 1, instance: 2, failure: nil)) == [
                .changed(plugin: 1, event: .stopped), .reconfigure,
            ])
        #expect(m.handle(.reconfigured) == [.changed(plugin: 1, event: nil), .start(plugin: 1, resuming: false)])
        _ = m.handle(.started(plugin: 1, instance: 3))
        #expect(m.handle(.ready(plugin: 1, instance: 3)) == [.changed(plugin: 1, event: .started), .settled(2)])
    }

    @Test("a changed plugin restarts; the unchanged one keeps its instance and is never cancelled")
    func changedRestartsUnchangedKeeps() {
        var m = HostStateMachineTests.machine(["a", "b"])
        HostStateMachineTests.bringUp(&m)
        let reload = Reconfiguration(items: [Item(name: "a", keeps: 0), Item(name: "b")])
        #expect(m.handle(.reconfigure(reload)) == [.changed(plugin: 1, event: nil), .cancel(plugin: 1, instance: 2)])
        Self.expectBRestarts(&m)
        #expect(m.plugins[0].instance == 1)
        #expect(m.plugins[0].state == .running)
        #expect(m.plugins[1].instance == 3)
    }

    @Test("added, removed and reordered: the removed one stops, the kept one moves with its instance")
    func addRemoveReorder() {
        var m = HostStateMachineTests.machine(["a", "b"])
        HostStateMachineTests.bringUp(&m)
        var next: UInt64 = 2
        let seen = Self.drive(
            &m, .reconfigure(Reconfiguration(items: [Item(name: "c"), Item(name: "a", keeps: 0)])), next: &next)
        #expect(seen.filter { if case .cancel = $0 { true } else { false } } == [.cancel(plugin: 1, instance: 2)])
        #expect(seen.last == .settled(2))
        #expect(Self.names(m) == ["c", "a"])
        #expect(m.plugins.map(\.state.name) == ["running", "running"])
        #expect(m.plugins[1].instance == 1)
        #expect(m.plugins[0].instance == 3)
    }

    @Test("a reload waits for a start in flight; the swap never happens while one is")
    func waitsForStartInFlight() {
        var m = HostStateMachineTests.machine(["a", "b"])
        #expect(m.handle(.requested(up: true)) == [.beginPublishing, .start(plugin: 0, resuming: false)])
        #expect(m.handle(.reconfigure(Reconfiguration(items: [Item(name: "a", keeps: 0), Item(name: "c")]))) == [])
        _ = m.handle(.started(plugin: 0, instance: 1))
        #expect(m.handle(.ready(plugin: 0, instance: 1)) == [.changed(plugin: 0, event: .started), .reconfigure])
        #expect(m.handle(.reconfigured) == [.changed(plugin: 1, event: nil), .start(plugin: 1, resuming: false)])
        #expect(Self.names(m) == ["a", "c"])
    }

    @Test("stop() while a reload stops a plugin: the swap happens, then everything stops; the caller of each settles")
    func stopDuringReload() {
        var m = HostStateMachineTests.machine(["a", "b"])
        HostStateMachineTests.bringUp(&m)
        _ = m.handle(.reconfigure(Reconfiguration(items: [Item(name: "a", keeps: 0), Item(name: "b")])))
        let reloadGeneration = m.generation
        #expect(m.handle(.requested(up: false)) == [.closeSleepHandling])
        let stopGeneration = m.generation
        var next: UInt64 = 2
        let seen = Self.drive(&m, .ended(plugin: 1, instance: 2, failure: nil), next: &next)
        #expect(seen.contains(.reconfigure))
        #expect(!seen.contains { if case .start = $0 { true } else { false } })
        #expect(seen.contains(.cancel(plugin: 0, instance: 1)))
        #expect(!seen.contains { if case .settled = $0 { true } else { false } }, "not before sleep handling closed")
        #expect(Self.drive(&m, .sleepClosed, next: &next) == [.settled(stopGeneration)])
        #expect(stopGeneration > reloadGeneration, "one settle answers the reload's caller and the stop's")
        #expect(m.plugins.map(\.state) == [.idle, .idle])
        #expect(m.isAtRest)
    }

    @Test("a reload while stop() is stopping: the new list comes down too, and the kept plugin is cancelled once")
    func reloadDuringStop() {
        var m = HostStateMachineTests.machine(["a", "b"])
        HostStateMachineTests.bringUp(&m)
        var all = m.handle(.requested(up: false))
        #expect(all.contains(.cancel(plugin: 1, instance: 2)))
        all += m.handle(.reconfigure(Reconfiguration(items: [Item(name: "b"), Item(name: "a", keeps: 0)])))
        var next: UInt64 = 2
        all += Self.drive(&m, .ended(plugin: 1, instance: 2, failure: nil), next: &next)
        all += Self.drive(&m, .sleepClosed, next: &next)
        #expect(Self.names(m) == ["b", "a"])
        #expect(all.filter { $0 == .cancel(plugin: 1, instance: 1) }.count == 1)
        #expect(!all.contains { if case .start = $0 { true } else { false } })
        #expect(m.plugins.map(\.state) == [.idle, .idle])
        #expect(m.isAtRest)
    }

    @Test("asleep: a kept audio plugin stays stopped for sleep through the reload and resumes after it")
    func reloadWhileAsleepKeepsAudioStopped() {
        var m = HostStateMachineTests.machine(["a", "b"], audio: ["a"])
        HostStateMachineTests.bringUp(&m)
        var next: UInt64 = 2
        _ = Self.drive(&m, .sleepComing, next: &next)
        #expect(m.plugins[0].state == .interrupted(reason: Machine.sleepReason))
        let seen = Self.drive(
            &m, .reconfigure(Reconfiguration(items: [Item(name: "a", usesAudio: true, keeps: 0), Item(name: "b")])),
            next: &next)
        #expect(!seen.contains { if case .start(plugin: 0, _) = $0 { true } else { false } })
        #expect(seen.contains(.start(plugin: 1, resuming: false)))
        #expect(m.plugins[0].state == .interrupted(reason: Machine.sleepReason))
        #expect(Self.drive(&m, .sleepEnded, next: &next).contains(.start(plugin: 0, resuming: true)))
        #expect(m.plugins.map(\.state) == [.running, .running])
    }

    @Test("asleep: a changed audio plugin is stopped for good, and starts only once the system woke up")
    func reloadWhileAsleepReplacesAudio() {
        var m = HostStateMachineTests.machine(["a", "b"], audio: ["a"])
        HostStateMachineTests.bringUp(&m)
        var next: UInt64 = 2
        _ = Self.drive(&m, .sleepComing, next: &next)
        let seen = Self.drive(
            &m, .reconfigure(Reconfiguration(items: [Item(name: "a", usesAudio: true), Item(name: "b", keeps: 1)])),
            next: &next)
        #expect(seen.contains(.changed(plugin: 0, event: .stopped)))
        #expect(!seen.contains { if case .start = $0 { true } else { false } })
        #expect(!seen.contains { if case .cancel = $0 { true } else { false } })
        #expect(m.plugins[0].state == .idle)
        #expect(Self.drive(&m, .sleepEnded, next: &next).contains(.start(plugin: 0, resuming: false)))
        #expect(m.plugins.map(\.state) == [.running, .running])
    }

    @Test("a host that is down swaps at once and starts nothing; a plugin that cannot run shows failed")
    func reloadWhileDown() {
        var m = HostStateMachineTests.machine(["a", "b"])
        #expect(m.handle(.reconfigure(Reconfiguration(items: [Item(name: "b", keeps: 1)]))) == [.reconfigure])
        #expect(m.handle(.reconfigured) == [.settled(1)])
        #expect(Self.names(m) == ["b"])
        #expect(m.isAtRest)
        let failure = HostStateMachineTests.failure
        #expect(
            m.handle(.reconfigure(Reconfiguration(items: [Item(name: "x", unavailable: failure)]))) == [.reconfigure])
        #expect(m.handle(.reconfigured) == [.changed(plugin: 0, event: .failed(failure)), .settled(2)])
        #expect(m.plugins[0].state == .failed(failure))
    }

    @Test("a second reload before the first swapped replaces it")
    func newerReloadReplacesPending() {
        var m = HostStateMachineTests.machine(["a", "b"])
        HostStateMachineTests.bringUp(&m)
        _ = m.handle(.reconfigure(Reconfiguration(items: [Item(name: "a", keeps: 0), Item(name: "b")])))
        #expect(m.handle(.reconfigure(Reconfiguration(items: [Item(name: "b", keeps: 1)]))) == [])
        var next: UInt64 = 2
        let seen = Self.drive(&m, .ended(plugin: 1, instance: 2, failure: nil), next: &next)
        // The second reload keeps nothing of a: it stops too; b (already stopped by the first) starts again.
        #expect(seen.contains(.cancel(plugin: 0, instance: 1)))
        #expect(Self.names(m) == ["b"])
        #expect(m.plugins[0].state == .running)
        #expect(m.applied == m.generation)
    }

    // MARK: - Settings applied in place (a ReconfigurablePlugin)

    /// a and b running; a reload that keeps a and gives b new settings, whose application is in flight.
    static func applyingToB() -> Machine {
        var m = HostStateMachineTests.machine(["a", "b"])
        HostStateMachineTests.bringUp(&m)
        let reload = Reconfiguration(items: [Item(name: "a", keeps: 0), Item(name: "b", keeps: 1, reconfigures: true)])
        #expect(m.handle(.reconfigure(reload)) == [.applySettings(plugin: 1, instance: 2)])
        return m
    }

    @Test("new settings a running plugin takes in place: no cancel, no start, the same instance after the swap")
    func settingsAppliedInPlace() {
        var m = Self.applyingToB()
        #expect(m.busy == 1, "nothing else runs while the plugin applies them")
        #expect(!m.isAtRest)
        #expect(m.handle(.settingsApplied(plugin: 1, instance: 2, inPlace: true)) == [.reconfigure])
        #expect(m.handle(.reconfigured) == [.settled(2)])
        #expect(m.plugins.map(\.instance) == [1, 2])
        #expect(m.plugins.map(\.state) == [.running, .running])
    }

    @Test("a plugin that answers it cannot take them in place is restarted with them, as a changed one")
    func settingsNeedARestart() {
        var m = Self.applyingToB()
        #expect(
            m.handle(.settingsApplied(plugin: 1, instance: 2, inPlace: false)) == [
                .changed(plugin: 1, event: nil), .cancel(plugin: 1, instance: 2),
            ])
        Self.expectBRestarts(&m)
        #expect(m.plugins.map(\.instance) == [1, 3], "a kept its instance")
    }

    @Test("a plugin that does not run (failed) gets no settings in place: it starts afresh with them")
    func notRunningStartsAfresh() {
        let failure = HostStateMachineTests.failure
        var m = HostStateMachineTests.machine(["a", "b"])
        var next: UInt64 = 0
        var pending = m.handle(.requested(up: true))
        while !pending.isEmpty {
            switch pending.removeFirst() {
            case .start(0, _):
                next += 1
                pending += m.handle(.started(plugin: 0, instance: next))
                pending += m.handle(.ready(plugin: 0, instance: next))
            case .start(1, _): pending += m.handle(.notMade(plugin: 1, failure))
            case .openSleepHandling: pending += m.handle(.sleepSettled)
            default: break
            }
        }
        #expect(m.plugins[1].state == .failed(failure))
        let reload = Reconfiguration(items: [Item(name: "a", keeps: 0), Item(name: "b", keeps: 1, reconfigures: true)])
        let seen = Self.drive(&m, .reconfigure(reload), next: &next)
        #expect(!seen.contains { if case .applySettings = $0 { true } else { false } })
        #expect(seen.contains(.start(plugin: 1, resuming: false)))
        #expect(m.plugins.map(\.state) == [.running, .running])
        #expect(m.plugins[0].instance == 1)
    }

    @Test("a plugin that ends while it applies them is restarted; its late answer changes nothing")
    func endsWhileApplying() {
        var m = Self.applyingToB()
        var next: UInt64 = 2
        let seen = Self.drive(&m, .ended(plugin: 1, instance: 2, failure: nil), next: &next)
        #expect(seen.contains(.start(plugin: 1, resuming: false)), "\(seen)")
        #expect(m.handle(.settingsApplied(plugin: 1, instance: 2, inPlace: true)) == [])
        #expect(m.plugins.map(\.state) == [.running, .running])
        #expect(m.plugins[1].instance == 3)
        #expect(m.applied == m.generation)
    }

    @Test("a late answer for an instance that ended does not answer the next instance's settings")
    func lateAnswerForAnEndedInstance() {
        var m = Self.applyingToB()
        var next: UInt64 = 2
        _ = Self.drive(&m, .ended(plugin: 1, instance: 2, failure: nil), next: &next)
        #expect(m.plugins[1].instance == 3)
        let again = Reconfiguration(items: [Item(name: "a", keeps: 0), Item(name: "b", keeps: 1, reconfigures: true)])
        #expect(m.handle(.reconfigure(again)) == [.applySettings(plugin: 1, instance: 3)])
        #expect(m.handle(.settingsApplied(plugin: 1, instance: 2, inPlace: false)) == [], "instance 2's answer")
        #expect(m.busy == 1, "instance 3 still applies them")
        #expect(m.handle(.settingsApplied(plugin: 1, instance: 3, inPlace: true)) == [.reconfigure])
        #expect(m.handle(.reconfigured) == [.settled(m.generation)])
        #expect(m.plugins.map(\.instance) == [1, 3])
    }

    @Test("a newer reload while one applies settings: the newer one's settings are applied too, then the swap")
    func newerReloadWhileApplying() {
        var m = Self.applyingToB()
        let second = Reconfiguration(items: [
            Item(name: "a", keeps: 0, reconfigures: true), Item(name: "b", keeps: 1, reconfigures: true),
        ])
        #expect(m.handle(.reconfigure(second)) == [], "waits for the one in flight")
        // The first answer is for settings the newer reload replaced: both plugins are asked again.
        #expect(
            m.handle(.settingsApplied(plugin: 1, instance: 2, inPlace: true)) == [
                .applySettings(plugin: 0, instance: 1)
            ])
        #expect(
            m.handle(.settingsApplied(plugin: 0, instance: 1, inPlace: true)) == [
                .applySettings(plugin: 1, instance: 2)
            ])
        #expect(m.handle(.settingsApplied(plugin: 1, instance: 2, inPlace: true)) == [.reconfigure])
        #expect(m.handle(.reconfigured) == [.settled(3)])
        #expect(m.plugins.map(\.instance) == [1, 2])
    }
}
