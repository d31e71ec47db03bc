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

    @Test("in zero mode the sink's monitor carries digital silence")
    func zeroModeCapture() async throws {
        try await PulseAudioServer.with { server in
            let stream = PlaybackStream(configuration: Self.configuration(server), source: ZeroSource(), logger: quietLogger)
            try await stream.start()
            #expect(await server.waitForSink(state: "RUNNING", timeout: 2))
            let samples = try await server.captureMonitor(seconds: 1.5)
            await stream.stop()
            #expect(samples.count >= 48_000 * 2, "captured only \(samples.count) samples")
            #expect(samples.allSatisfy { $0 == 0 })
        }
    }

    @Test("another client plays at the same time and reaches the monitor unchanged")
    func mixing() async throws {
        try await PulseAudioServer.with { server in
            let tone = server.directory.appendingPathComponent("tone.wav").path
            try ChildProcess.run(
                "/usr/bin/sox", ["-n", "-r", "48000", "-c", "2", "-b", "16", "-e", "signed", tone, "synth", "4", "sine", "440", "vol", "0.25"])
            let stream = PlaybackStream(configuration: Self.configuration(server), source: ZeroSource(), logger: quietLogger)
            try await stream.start()
            let aplay = try server.launch("/usr/bin/aplay", ["-q", "-D", "pulse", tone])
            defer {
                aplay.signal(SIGTERM)
                aplay.wait()
            }
            try await Task.sleep(nanoseconds: 500_000_000)
            let samples = try await server.captureMonitor(seconds: 2)
            let analysis = AudioAnalysis(interleaved: samples, trimSeconds: 0.3)
            #expect(abs(analysis.zeroCrossingFrequency - 440) < 2, "tone at \(analysis.zeroCrossingFrequency) Hz")
            #expect(abs(analysis.rms - 0.25 / 2.0.squareRoot()) < 0.005, "tone RMS \(analysis.rms)")
            #expect(stream.status.state == .running)
            #expect(stream.status.underruns == 0)
            await stream.stop()
        }
    }

    @Test("killing and restarting the server: interrupted, then resumed with the sink RUNNING within 2 s")
    func serverRestart() async throws {
        try await PulseAudioServer.with { server in
            let events = EventRecorder<PlaybackStream.Event>()
            let stream = PlaybackStream(
                configuration: Self.configuration(server), source: ZeroSource(), logger: quietLogger, onEvent: events.record)
            try await stream.start()
            #expect(await server.waitForSink(state: "RUNNING", timeout: 2))
            server.kill()
            #expect(await events.wait(timeout: 3) { $0.contains { if case .interrupted = $0 { true } else { false } } })
            #expect(stream.status.state == .recovering)
            try await server.start()
            let back = Date()
            #expect(await server.waitForSink(state: "RUNNING", timeout: 2), "sink not RUNNING within 2 s of the server's return")
            #expect(Date().timeIntervalSince(back) < 2)
            #expect(await events.wait(timeout: 2) { $0.last == .resumed })
            #expect(stream.status.state == .running)
            #expect(stream.status.interruptions == 1)
            if case .interrupted(let error) = events.all.first {
                #expect(error.code == .streamFailed)
                #expect(error.errno == EIO, "\(error)")
            } else {
                Issue.record("first event was \(String(describing: events.all.first))")
            }
            await stream.stop()
        }
    }

    @Test("unloading the sink and loading a new one: interrupted, then resumed on the new sink")
    func sinkReplaced() async throws {
        try await PulseAudioServer.with { server in
            let events = EventRecorder<PlaybackStream.Event>()
            let stream = PlaybackStream(
                configuration: Self.configuration(server), source: ZeroSource(), logger: quietLogger, onEvent: events.record)
            try await stream.start()
            #expect(await server.waitForSink(state: "RUNNING", timeout: 2))
            try server.pactl(["unload-module", "module-null-sink"])
            #expect(await events.wait(timeout: 3) { $0.contains { if case .interrupted = $0 { true } else { false } } })
            try server.pactl(["load-module", "module-null-sink", "sink_name=replacement", "rate=48000", "channels=2"])
            #expect(await server.waitForSink("replacement", state: "RUNNING", timeout: 2))
            #expect(await events.wait(timeout: 2) { $0.last == .resumed })
            await stream.stop()
        }
    }

    @Test("after set-default-sink the stream follows to the new default sink")
    func followsDefaultSink() async throws {
        try await PulseAudioServer.with { server in
            try server.pactl(["load-module", "module-null-sink", "sink_name=second", "rate=48000", "channels=2"])
            let events = EventRecorder<PlaybackStream.Event>()
            let stream = PlaybackStream(
                configuration: Self.configuration(server), source: ZeroSource(), logger: quietLogger, onEvent: events.record)
            try await stream.start()
            #expect(await server.waitForSink(state: "RUNNING", timeout: 2))
            #expect(try server.sinkState("second") != "RUNNING")
            try server.pactl(["set-default-sink", "second"])
            #expect(await server.waitForSink("second", state: "RUNNING", timeout: 2))
            #expect(await server.waitForSink(state: "SUSPENDED", timeout: 4))
            #expect(stream.status.state == .running)
            #expect(events.all.isEmpty)
            await stream.stop()
        }
    }
}
