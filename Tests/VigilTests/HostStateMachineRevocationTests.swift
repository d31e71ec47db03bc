import Testing
import VigilCore
import VigilPlugin

@testable import Vigil

/// ``HostStateMachine``'s `revoked` event alone: a revoked plugin is stopped wherever it is in its
/// life cycle, shows `failed` with the code `revoked`, and never starts again in this host.
@Suite("Host state machine: revocation (pure)")
struct HostStateMachineRevocationTests {
    typealias Machine = HostStateMachine

    static let revoked = PluginFailure(
        code: .refused(.revoked), plugin: "b", message: "its manifest is on its revocation list")

    static func states(_ machine: Machine) -> [String] { machine.plugins.map(\.state.name) }

    @Test(
        "a running plugin is cancelled with a revoked event; the others keep running; keepAlive() does not restart it")
    func runningPluginIsStopped() {
        var m = HostStateMachineTests.machine(["a", "b", "c"])
        HostStateMachineTests.bringUp(&m)
        let instance = m.plugins[1].instance!
        #expect(
            m.handle(.revoked(plugin: 1, Self.revoked)) == [
                .changed(plugin: 1, event: .revoked(Self.revoked)), .cancel(plugin: 1, instance: instance),
            ])
        #expect(m.plugins[1].state == .failed(Self.revoked))
        #expect(m.handle(.ended(plugin: 1, instance: instance, failure: nil)) == [.changed(plugin: 1, event: nil)])
        #expect(Self.states(m) == ["running", "failed", "running"])
        #expect(m.plugins[1].instance == nil)
        // Not retried by the next request, unlike an ordinary failure.
        #expect(m.handle(.requested(up: true)) == [.settled(m.generation)])
        #expect(m.plugins[1].state == .failed(Self.revoked))
        // A second notice of the same revocation changes nothing.
        #expect(m.handle(.revoked(plugin: 1, Self.revoked)) == [])
    }

    @Test("revoked while starting: the start in flight becomes its cancellation; a late ready is ignored")
    func startingPluginIsCancelled() {
        var m = HostStateMachineTests.machine(["a", "b"])
        _ = m.handle(.requested(up: true))
        _ = m.handle(.started(plugin: 0, instance: 1))
        #expect(
            m.handle(.revoked(plugin: 0, Self.revoked)) == [
                .changed(plugin: 0, event: .revoked(Self.revoked)), .cancel(plugin: 0, instance: 1),
            ])
        #expect(m.handle(.ready(plugin: 0, instance: 1)) == [])
        // Once its run() ended, the host goes on with the next plugin.
        #expect(
            m.handle(.ended(plugin: 0, instance: 1, failure: nil)) == [
                .changed(plugin: 0, event: nil), .start(plugin: 1, resuming: false),
            ])
        #expect(m.plugins[0].state == .failed(Self.revoked))
    }

    @Test("revoked while another plugin's start is in flight: cancelled once that step is done")
    func waitsForTheStepInFlight() {
        var m = HostStateMachineTests.machine(["a", "b"])
        _ = m.handle(.requested(up: true))
        _ = m.handle(.started(plugin: 0, instance: 1))
        _ = m.handle(.ready(plugin: 0, instance: 1))
        _ = m.handle(.started(plugin: 1, instance: 2))
        // b is starting (in flight); a is revoked: one step at a time.
        #expect(m.handle(.revoked(plugin: 0, Self.revoked)) == [.changed(plugin: 0, event: .revoked(Self.revoked))])
        #expect(
            m.handle(.ready(plugin: 1, instance: 2)) == [
                .changed(plugin: 1, event: .started), .cancel(plugin: 0, instance: 1),
            ])
        #expect(m.handle(.ended(plugin: 0, instance: 1, failure: nil)).first == .changed(plugin: 0, event: nil))
        #expect(Self.states(m) == ["failed", "running"])
    }

    @Test("revoked while stopped: it shows failed (revoked) and the next keepAlive() does not start it")
    func idlePluginIsNotStarted() {
        var m = HostStateMachineTests.machine(["a", "b"])
        #expect(m.handle(.revoked(plugin: 1, Self.revoked)) == [.changed(plugin: 1, event: .revoked(Self.revoked))])
        HostStateMachineTests.bringUp(&m)
        #expect(Self.states(m) == ["running", "failed"])
        #expect(m.plugins[1].instance == nil)
        #expect(m.plugins[1].state == .failed(Self.revoked))
    }

    @Test("revoked while stopping for system sleep: it is not started again when the system wakes up")
    func stoppedForSleepStaysStopped() {
        var m = HostStateMachineTests.machine(["a", "b"], audio: ["b"])
        HostStateMachineTests.bringUp(&m)
        _ = m.handle(.sleepComing)
        #expect(m.plugins[1].state == .stopping)
        let instance = m.plugins[1].instance!
        _ = m.handle(.revoked(plugin: 1, Self.revoked))
        _ = m.handle(.ended(plugin: 1, instance: instance, failure: nil))
        let actions = m.handle(.sleepEnded)
        #expect(!actions.contains(.start(plugin: 1, resuming: true)))
        #expect(m.plugins[1].state == .failed(Self.revoked))
        #expect(m.plugins[1].instance == nil)
    }
}
