import Testing
import VigilCore
import VigilPlugin

@testable import VigilHostCore

/// A confined plugin's denial on the pure machine: published at once as a `denied` change in any
/// state, never held back until `ready` and never in place of the report that is.
@Suite("Host state machine: confinement denials")
struct HostStateMachineDenialTests {
    static let denial = ConfinementDenial(
        operation: "openat", capability: .fileRead("/home/u/.ssh/id_ed25519"), detail: "EACCES")

    @Test("a denial while starting is published at once; the report held for ready is kept")
    func denialWhileStarting() {
        var machine = HostStateMachine(
            plugins: [HostStateMachine.Plugin(name: "p", usesAudio: false, unavailable: nil, state: .idle)])
        #expect(machine.handle(.requested(up: true)).contains(.start(plugin: 0, resuming: false)))
        _ = machine.handle(.started(plugin: 0, instance: 1))
        _ = machine.handle(.reported(plugin: 0, instance: 1, .interrupted(reason: "lost it")))
        let actions = machine.handle(.reported(plugin: 0, instance: 1, .denied(Self.denial)))
        #expect(actions.contains(.changed(plugin: 0, event: .denied(Self.denial))), "\(actions)")
        #expect(machine.plugins[0].state == .starting)
        _ = machine.handle(.ready(plugin: 0, instance: 1))
        #expect(machine.plugins[0].state == .interrupted(reason: "lost it"), "the held report was not replaced")
    }

    @Test("a denial while running changes no state; one from an ended instance is ignored")
    func denialWhileRunning() {
        var machine = HostStateMachine(
            plugins: [HostStateMachine.Plugin(name: "p", usesAudio: false, unavailable: nil, state: .idle)])
        _ = machine.handle(.requested(up: true))
        _ = machine.handle(.started(plugin: 0, instance: 1))
        _ = machine.handle(.ready(plugin: 0, instance: 1))
        let actions = machine.handle(.reported(plugin: 0, instance: 1, .denied(Self.denial)))
        #expect(actions.contains(.changed(plugin: 0, event: .denied(Self.denial))), "\(actions)")
        #expect(machine.plugins[0].state == .running)
        let stale = machine.handle(.reported(plugin: 0, instance: 7, .denied(Self.denial)))
        #expect(!stale.contains { if case .changed = $0 { true } else { false } }, "\(stale)")
    }
}
