import Foundation
import Testing
import VigilTestSupport
@testable import VigilAudio

/// The playback layer against a real, private PulseAudio server with a null sink.
@Suite("Playback through PulseAudio", .serialized)
struct PulseIntegrationTests {
    static func configuration(_ server: PulseAudioServer, buffer: Int = 1000) -> PlaybackConfiguration {
        PlaybackConfiguration(
            device: "pulse", pulseServer: server.address, bufferMilliseconds: buffer, healthCheckSeconds: 30,
            retryInitialMilliseconds: 100, retryMaxMilliseconds: 1000, applicationName: "vigil-tests (Vigil keep-alive)")
    }

    @Test("the sink runs while the stream plays and suspends after stop()")
    func runningThenSuspended() async throws {
        try await PulseAudioServer.with { server in
            #expect(await server.waitForSink(state: "SUSPENDED", timeout: 5))
            let stream = PlaybackStream(configuration: Self.configuration(server), source: ZeroSource(), logger: quietLogger)
            try await stream.start()
            #expect(stream.status.state == .running)
            #expect(await server.waitForSink(state: "RUNNING", timeout: 2))
            // Stays RUNNING well past the suspend timeout (1 s) and several refills.
            try await Task.sleep(nanoseconds: 2_500_000_000)
            #expect(try server.sinkState() == "RUNNING")
            #expect(stream.status.underruns == 0)
            await stream.stop()
            #expect(await server.waitForSink(state: "SUSPENDED", timeout: 4))
        }
    }

    @Test("the stream names the host and Vigil and has no media role")
    func identification() async throws {
        try await PulseAudioServer.with { server in
            setenv("PULSE_PROP", "media.role=music", 1)
            defer { unsetenv("PULSE_PROP") }
            let stream = PlaybackStream(configuration: Self.configuration(server), source: ZeroSource(), logger: quietLogger)
            try await stream.start()
            let inputs = try server.sinkInputs()
            await stream.stop()
            #expect(inputs.contains("application.name = \"vigil-tests (Vigil keep-alive)\""), "\(inputs)")
            #expect(!inputs.contains("media.role"), "\(inputs)")
            #expect(inputs.contains("Corked: no"))
            // The host's environment is restored after the open.
            #expect(String(cString: getenv("PULSE_PROP")) == "media.role=music")
            #expect(getenv("PULSE_PROP_OVERRIDE") == nil)
        }
    }
}
