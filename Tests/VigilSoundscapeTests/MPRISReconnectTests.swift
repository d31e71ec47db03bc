import Foundation
import Testing
import VigilPlugin
import VigilTestSupport

@testable import VigilSoundscape

/// The session bus restarts under a running soundscape: a real dbus-daemon killed and started
/// again at the same address, the player found again with the real playerctl.
@Suite("soundscape MPRIS player across a session bus restart", .serialized, .timeLimit(.minutes(2)))
struct MPRISReconnectTests {
    static let name = "org.mpris.MediaPlayer2.vigil.plugin-tests"

    @Test("the player is gone while the bus is: status says so and why, then it is published again")
    func republishedAfterRestart() async throws {
        let bus = try await blockingCall { Result { try DBusDaemon() } }.get()
        defer { bus.stop() }
        try await PulseAudioServer.with(directory: "vigil-soundscape") { server, state in
            let events = EventRecorder<PluginEvent>()
            let plugin = try makePlugin(
                server, state: state.path, bus: bus, events: events, busAddress: bus.socketAddress)
            try await plugin.start()
            #expect(await details(of: plugin) { $0["mpris"] != nil }?["mpris"] == Self.name)
            #expect(await eventually(10) { bus.playerStatus("vigil.plugin-tests") == "Playing" })

            let before = events.all.count
            bus.kill()
            // The truth meanwhile: no player name, the reason, and a status refresh reported.
            let down = await details(of: plugin, within: 10) { $0["mpris_error"] != nil }
            #expect(down?["mpris"] == nil, "\(down ?? [:])")
            #expect(down?["mpris_error"]?.contains("closed the connection") == true, "\(down ?? [:])")
            #expect(down?["state"] == "running", "the keep-alive goes on: \(down ?? [:])")
            #expect(events.all.dropFirst(before).contains(.detailsChanged))

            try await blockingCall { Result { try bus.restart() } }.get()
            let back = await details(of: plugin, within: 30) { $0["mpris"] != nil }
            #expect(back?["mpris"] == Self.name, "\(back ?? [:])")
            #expect(back?["mpris_error"] == nil, "\(back ?? [:])")
            #expect(await eventually(10) { bus.playerStatus("vigil.plugin-tests") == "Playing" })

            await plugin.stop()
            #expect(bus.playerStatus("vigil.plugin-tests") == nil)
        }
    }
}
