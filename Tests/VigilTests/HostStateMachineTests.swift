import Testing
import VigilCore
import VigilPlugin

@testable import Vigil
@testable import VigilHostCore

/// ``HostStateMachine`` alone: events in, actions out — no threads, tasks, processes or clocks.
@Suite("Host state machine (pure)")
struct HostStateMachineTests {
    typealias Machine = HostStateMachine
    typealias Action = HostStateMachine.Action

    static func machine(_ names: [String], audio: Set<String> = [], unavailable: [String: PluginFailure] = [:])
        -> Machine
    {
        Machine(
            plugins: names.map { name in
                Machine.Plugin(
                    name: name, usesAudio: audio.contains(name), unavailable: unavailable[name],
                    state: unavailable[name].map { .failed($0) } ?? .idle)
            })
    }

    static let failure = PluginFailure(code: .plugin(.startFailed), plugin: "b", message: "no device — plug one in")

    static func states(_ machine: Machine) -> [String] { machine.plugins.map(\.state.name) }

    @Test("up: one start at a time in order, sleep handling after the plugins, settled after its first attempt")
    func bringUpInOrder() {
        var m = Self.machine(["a", "b"])
        #expect(m.handle(.requested(up: true)) == [.beginPublishing, .start(plugin: 0, resuming: false)])
        #expect(m.handle(.started(plugin: 0, instance: 1)) == [.changed(plugin: 0, event: nil)])
        #expect(Self.states(m) == ["starting", "stopped"])
        #expect(
            m.handle(.ready(plugin: 0, instance: 1)) == [
                .changed(plugin: 0, event: .started), .start(plugin: 1, resuming: false),
            ])
        _ = m.handle(.started(plugin: 1, instance: 2))
        #expect(m.handle(.ready(plugin: 1, instance: 2)) == [.changed(plugin: 1, event: .started), .openSleepHandling])
        #expect(m.applied == 0)
        #expect(m.handle(.sleepSettled) == [.settled(1)])
        #expect(Self.states(m) == ["running", "running"])
        // Idempotent: a second keepAlive() settles at once, starting nothing.
        #expect(m.handle(.requested(up: true)) == [.settled(2)])
    }

    @Test("down: cancels in reverse order, one at a time; closes sleep handling; stops publishing")
    func bringDownInReverse() {
        var m = Self.machine(["a", "b"])
        Self.bringUp(&m)
        #expect(
            m.handle(.requested(up: false)) == [
                .closeSleepHandling, .changed(plugin: 1, event: nil), .cancel(plugin: 1, instance: 2),
            ])
        #expect(Self.states(m) == ["running", "stopping"])
        #expect(
            m.handle(.ended(plugin: 1, instance: 2, failure: nil)) == [
                .changed(plugin: 1, event: .stopped), .changed(plugin: 0, event: nil), .cancel(plugin: 0, instance: 1),
            ])
        #expect(
            m.handle(.ended(plugin: 0, instance: 1, failure: nil)) == [
                .changed(plugin: 0, event: .stopped), .endPublishing,
            ])
        #expect(!m.isAtRest)  // sleep handling still ending
        #expect(m.handle(.sleepClosed) == [.settled(2)])
        #expect(m.isAtRest)
    }

    @Test("a start failure (run() threw before ready) fails that plugin only; the next keepAlive() retries it")
    func startFailure() {
        var m = Self.machine(["a", "b", "c"])
        _ = m.handle(.requested(up: true))
        _ = m.handle(.started(plugin: 0, instance: 1))
        _ = m.handle(.ready(plugin: 0, instance: 1))
        _ = m.handle(.started(plugin: 1, instance: 2))
        #expect(
            m.handle(.ended(plugin: 1, instance: 2, failure: Self.failure)) == [
                .changed(plugin: 1, event: .failed(Self.failure)), .start(plugin: 2, resuming: false),
            ])
        _ = m.handle(.notMade(plugin: 2, Self.failure))
        #expect(Self.states(m) == ["running", "failed", "failed"])
        _ = m.handle(.sleepSettled)
        #expect(m.applied == 1)
        // Not retried within the same request…
        #expect(m.busy == nil)
        // …but by the next one, in order.
        #expect(m.handle(.requested(up: true)) == [.start(plugin: 1, resuming: false)])
    }

    @Test("requirements unmet: blocked, retried on a re-probe only while it waits for its environment")
    func blockedAndRecheck() {
        var m = Self.machine(["a"])
        _ = m.handle(.requested(up: true))
        let unmet = [
            UnmetRequirement(
                requirement: HostRequirement(kind: .audioOutput), problem: "no sound server", remedy: "start one")
        ]
        #expect(m.handle(.blocked(plugin: 0, unmet)) == [.changed(plugin: 0, event: .blocked), .openSleepHandling])
        #expect(m.hasEnvironmentBlocked)
        _ = m.handle(.sleepSettled)
        #expect(m.handle(.recheckRequirements) == [.start(plugin: 0, resuming: false)])
        // Still unmet: no new event (the state did not change).
        #expect(m.handle(.blocked(plugin: 0, unmet)) == [.settled(m.generation)])
    }

    @Test("a request during a start switches direction after that plugin; callers settle on the last request")
    func switchDirection() {
        var m = Self.machine(["a", "b"])
        _ = m.handle(.requested(up: true))
        _ = m.handle(.started(plugin: 0, instance: 1))
        #expect(m.handle(.requested(up: false)).isEmpty)  // a start is in flight
        #expect(m.handle(.requested(up: true)).isEmpty)
        #expect(m.handle(.requested(up: false)).isEmpty)
        #expect(
            m.handle(.ready(plugin: 0, instance: 1)) == [
                .changed(plugin: 0, event: .started), .changed(plugin: 0, event: nil), .cancel(plugin: 0, instance: 1),
            ])
        #expect(
            m.handle(.ended(plugin: 0, instance: 1, failure: nil)) == [
                .changed(plugin: 0, event: .stopped), .endPublishing, .settled(4),
            ])
        #expect(m.isAtRest)
    }

    @Test("reports: interrupted and resumed become states; resumeFailed fails it and cancels the instance")
    func reports() {
        var m = Self.machine(["a"])
        Self.bringUp(&m)
        #expect(
            m.handle(.reported(plugin: 0, instance: 1, .interrupted(reason: "server gone"))) == [
                .changed(plugin: 0, event: .interrupted(reason: "server gone"))
            ])
        #expect(m.handle(.reported(plugin: 0, instance: 1, .resumed)) == [.changed(plugin: 0, event: .resumed)])
        // A report from an instance already replaced is ignored.
        #expect(m.handle(.reported(plugin: 0, instance: 99, .interrupted(reason: "stale"))).isEmpty)
        let actions = m.handle(.reported(plugin: 0, instance: 1, .resumeFailed(reason: "gave up")))
        #expect(actions.count == 2)
        #expect(actions.last == .cancel(plugin: 0, instance: 1))
        #expect(m.plugins[0].state.name == "failed")
        #expect(m.handle(.ended(plugin: 0, instance: 1, failure: nil)) == [.changed(plugin: 0, event: nil)])
        #expect(m.plugins[0].instance == nil)
        #expect(m.handle(.requested(up: true)) == [.start(plugin: 0, resuming: false)])
    }

    @Test("an interruption reported before ready is applied right after ready")
    func reportBeforeReady() {
        var m = Self.machine(["a"])
        _ = m.handle(.requested(up: true))
        _ = m.handle(.started(plugin: 0, instance: 1))
        #expect(m.handle(.reported(plugin: 0, instance: 1, .interrupted(reason: "early"))).isEmpty)
        let actions = m.handle(.ready(plugin: 0, instance: 1))
        #expect(
            actions.prefix(2) == [
                .changed(plugin: 0, event: .started), .changed(plugin: 0, event: .interrupted(reason: "early")),
            ])
    }

    @Test("run() ending on its own after ready is giving up: failed, with the reason")
    func endedOnItsOwn() {
        var m = Self.machine(["a"])
        Self.bringUp(&m)
        let actions = m.handle(.ended(plugin: 0, instance: 1, failure: Self.failure))
        guard case .changed(0, .resumeFailed(let reason))? = actions.first else {
            Issue.record("\(actions)")
            return
        }
        #expect(reason == Self.failure.message)
    }

    @Test("system sleep: audio plugins are cancelled, shown interrupted, the delay lock released; back after wake-up")
    func sleepAndWake() {
        var m = Self.machine(["engine", "worker"], audio: ["engine"])
        Self.bringUp(&m)
        let coming = m.handle(.sleepComing)
        #expect(coming == [.changed(plugin: 0, event: nil), .cancel(plugin: 0, instance: 1)])
        let asleep = m.handle(.ended(plugin: 0, instance: 1, failure: nil))
        #expect(
            asleep == [
                .changed(plugin: 0, event: .interrupted(reason: Machine.sleepReason)), .releaseDelayLock,
                .settled(m.generation),
            ])
        #expect(Self.states(m) == ["interrupted", "running"])
        // A second PrepareForSleep(true) changes nothing.
        #expect(m.handle(.sleepComing).isEmpty)
        #expect(m.handle(.sleepEnded) == [.start(plugin: 0, resuming: true)])
        _ = m.handle(.started(plugin: 0, instance: 3))
        #expect(m.handle(.ready(plugin: 0, instance: 3)).first == .changed(plugin: 0, event: .resumed))
        #expect(Self.states(m) == ["running", "running"])
    }

    @Test("logind going away while asleep starts the audio plugins again; a stop while asleep ends idle")
    func locksLostWhileAsleep() {
        var m = Self.machine(["engine"], audio: ["engine"])
        Self.bringUp(&m)
        _ = m.handle(.sleepComing)
        _ = m.handle(.ended(plugin: 0, instance: 1, failure: nil))
        #expect(m.handle(.sleepLocksLost) == [.start(plugin: 0, resuming: true)])
        var n = Self.machine(["engine"], audio: ["engine"])
        Self.bringUp(&n)
        _ = n.handle(.sleepComing)
        _ = n.handle(.ended(plugin: 0, instance: 1, failure: nil))
        let down = n.handle(.requested(up: false))
        #expect(down.contains(.changed(plugin: 0, event: .stopped)))
        _ = n.handle(.sleepClosed)
        #expect(n.isAtRest)
        #expect(Self.states(n) == ["stopped"])
    }

    @Test("a stop never waits for the system bus; a shutdown during start-up opens no sleep handling")
    func stopDuringFirstAttempt() {
        var m = Self.machine(["a"])
        _ = m.handle(.requested(up: true))
        _ = m.handle(.started(plugin: 0, instance: 1))
        #expect(m.handle(.ready(plugin: 0, instance: 1)).last == .openSleepHandling)
        #expect(m.handle(.requested(up: false)).first == .closeSleepHandling)
        var n = Self.machine(["a"])
        _ = n.handle(.requested(up: true))
        _ = n.handle(.startAbandoned)
        _ = n.handle(.started(plugin: 0, instance: 1))
        #expect(n.handle(.ready(plugin: 0, instance: 1)) == [.changed(plugin: 0, event: .started), .settled(1)])
    }

    @Test("a plugin that did not verify stays failed with its error, up or down")
    func unavailable() {
        var m = Self.machine(["bad", "good"], unavailable: ["bad": Self.failure])
        #expect(m.handle(.requested(up: true)) == [.beginPublishing, .start(plugin: 1, resuming: false)])
        _ = m.handle(.started(plugin: 1, instance: 1))
        _ = m.handle(.ready(plugin: 1, instance: 1))
        _ = m.handle(.sleepSettled)
        _ = m.handle(.requested(up: false))
        _ = m.handle(.ended(plugin: 1, instance: 1, failure: nil))
        _ = m.handle(.sleepClosed)
        #expect(m.plugins[0].state == .failed(Self.failure))
        #expect(m.isAtRest)
    }

    /// Brings every plugin of `m` up (instances 1, 2, …) with sleep handling settled.
    static func bringUp(_ m: inout Machine) {
        var pending = m.handle(.requested(up: true))
        var next: UInt64 = 1
        while !pending.isEmpty {
            let action = pending.removeFirst()
            switch action {
            case .start(let index, _):
                let id = next
                next += 1
                pending += m.handle(.started(plugin: index, instance: id))
                pending += m.handle(.ready(plugin: index, instance: id))
            case .openSleepHandling: pending += m.handle(.sleepSettled)
            default: break
            }
        }
    }
}
