import Foundation
import Testing
import VigilTestSupport

@testable import VigilAudio

/// The sound-server backend against pipewire-pulse (PipeWire's PulseAudio protocol), which
/// most current desktops run instead of PulseAudio.
@Suite("Playback through pipewire-pulse", .serialized)
struct PipeWireIntegrationTests {
    @Test("the sink runs, zero mode carries silence, no media role, requests sized for pipewire-pulse")
    func playsOnPipeWire() async throws {
        try await PipeWireServer.with { server in
            let configuration = PlaybackConfiguration(
                device: "pulse", pulseServer: server.address, bufferMilliseconds: 2000,
                applicationName: "vigil-tests (Vigil keep-alive)")
            setenv("PULSE_PROP", "media.role=music", 1)
            defer { unsetenv("PULSE_PROP") }
            let stream = PlaybackStream(configuration: configuration, source: ZeroSource(), logger: quietLogger)
            try await stream.start()
            #expect(stream.status.backend == .pulseAudio)
            // pipewire-pulse was recognised: the minimum request is half the buffer less 100 ms
            // (PulseDriver.requestSizes), not PulseAudio's sixteenth.
            #expect(stream.status.periodFrames == 43_200, "\(stream.status)")
            #expect(await server.waitForSink(state: "RUNNING", timeout: 3))
            let inputs = try server.sinkInputs()
            #expect(inputs.contains("application.name = \"vigil-tests (Vigil keep-alive)\""), "\(inputs)")
            #expect(!inputs.contains("media.role"), "\(inputs)")
            let samples = try await server.captureMonitor(seconds: 1.5)
            #expect(samples.count >= 48_000 * 2, "captured only \(samples.count) samples")
            #expect(samples.allSatisfy { $0 == 0 })
            #expect(stream.status.state == .running)
            await stream.stop()
            #expect(try server.sinkInputs().isEmpty)
        }
    }
}
