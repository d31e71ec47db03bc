import Foundation
import Testing
import VigilPlugin
import VigilTestSupport

@testable import VigilSoundscape

/// The soundscape on pipewire-pulse (PipeWire 0.3 with WirePlumber), through the PipeWire fixture.
@Suite("soundscape plugin on PipeWire", .serialized)
struct PipeWireSoundscapeTests {
    @Test("plays at the set level and hot-swaps with the sink RUNNING throughout")
    func playsAndSwaps() async throws {
        try await PipeWireServer.with(directory: "vigil-soundscape") { server, state in
            let events = EventRecorder<PluginEvent>()
            let (plugin, controller) = try await startPlugin(
                server, state: state.path, ["soundscape": .string("pink-noise"), "volume": .double(1)], events: events)
            #expect(await server.waitForSink(state: "RUNNING", timeout: 5))
            let full = rms(try await server.captureMonitor(seconds: 2.5))
            #expect(full > 0.01, "RMS \(full)")
            let seen = try await sinkStates(server) {
                try controller.select("ocean-waves")
                try await Task.sleep(for: .milliseconds(800))
                controller.setPreset(.med)
                try await Task.sleep(for: .milliseconds(1500))
            }
            #expect(seen == ["RUNNING"], "\(seen)")
            // The swap and the preset each refresh the host's status; neither is an interruption.
            #expect(events.all == [.detailsChanged, .detailsChanged], "\(events.all)")
            let details = await plugin.details()
            #expect(details["backend"] == "pulseaudio")
            #expect(details["soundscape"] == "ocean-waves")
            await plugin.stop()
        }
    }
}
