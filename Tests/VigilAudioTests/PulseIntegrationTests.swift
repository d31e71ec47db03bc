import Foundation
import Logging
import Testing
import VigilTestSupport

@testable import VigilAudio

/// The playback layer against a real, private PulseAudio server with a null sink.
@Suite("Playback through PulseAudio", .serialized)
struct PulseIntegrationTests {
    static func configuration(_ server: PulseAudioServer, buffer: Int = 1000) -> PlaybackConfiguration {
        PlaybackConfiguration(
            device: "pulse", pulseServer: server.address, bufferMilliseconds: buffer, healthCheckSeconds: 30,
            retryInitialMilliseconds: 100, retryMaxMilliseconds: 1000, applicationName: "vigil-tests (Vigil keep-alive)"
        )
    }

    /// Starts a zero-mode stream that records its events, and expects the server's sink to run.
    static func startRecording(
        _ configuration: PlaybackConfiguration, on server: PulseAudioServer, logger: Logger = quietLogger,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> (PlaybackStream, EventRecorder<PlaybackStream.Event>) {
        let events = EventRecorder<PlaybackStream.Event>()
        let stream = PlaybackStream(
            configuration: configuration, source: ZeroSource(), logger: logger, onEvent: events.record)
        try await stream.start()
        #expect(await server.waitForSink(state: "RUNNING", timeout: 2), sourceLocation: sourceLocation)
        return (stream, events)
    }

    @Test("the sink runs while the stream plays and suspends after stop()")
    func runningThenSuspended() async throws {
        try await PulseAudioServer.with { server in
            #expect(await server.waitForSink(state: "SUSPENDED", timeout: 5))
            let stream = PlaybackStream(
                configuration: Self.configuration(server), source: ZeroSource(), logger: quietLogger)
            try await stream.start()
            #expect(stream.status.state == .running)
            #expect(stream.status.backend == .pulseAudio)
            // The server took the buffer asked for: 1000 ms, with a minimum request of a sixteenth
            // (PulseDriver.requestSizes).
            #expect(stream.status.bufferMilliseconds == 1000)
            #expect(stream.status.periodFrames == stream.status.bufferFrames / 16)
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
            let stream = PlaybackStream(
                configuration: Self.configuration(server), source: ZeroSource(), logger: quietLogger)
            try await stream.start()
            let inputs = try server.sinkInputs()
            await stream.stop()
            #expect(inputs.contains("application.name = \"vigil-tests (Vigil keep-alive)\""), "\(inputs)")
            #expect(!inputs.contains("media.role"), "\(inputs)")
            #expect(inputs.contains("Corked: no"))
            #expect(inputs.contains("media.name = \"keep-alive\""), "\(inputs)")
            // The host's environment is restored after the open.
            #expect(String(cString: getenv("PULSE_PROP")) == "media.role=music")
            #expect(getenv("PULSE_PROP_OVERRIDE") == nil)
        }
    }

    @Test("in zero mode the sink's monitor carries digital silence")
    func zeroModeCapture() async throws {
        try await PulseAudioServer.with { server in
            let stream = PlaybackStream(
                configuration: Self.configuration(server), source: ZeroSource(), logger: quietLogger)
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
                "/usr/bin/sox",
                [
                    "-n", "-r", "48000", "-c", "2", "-b", "16", "-e", "signed", tone, "synth", "4", "sine", "440",
                    "vol", "0.25",
                ])
            let stream = PlaybackStream(
                configuration: Self.configuration(server), source: ZeroSource(), logger: quietLogger)
            try await stream.start()
            let aplay = try server.launch("/usr/bin/aplay", ["-q", "-D", "pulse", tone])
            defer {
                aplay.signal(SIGTERM)
                aplay.wait()
            }
            // Captured once aplay's stream is on the server and playing, however long aplay took to start.
            _ = try await server.waitForSinkInput {
                $0.properties["application.process.binary"] == "aplay" && !$0.corked
            }
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
            let (stream, events) = try await Self.startRecording(Self.configuration(server), on: server)
            server.kill()
            #expect(await events.wait(timeout: 3) { $0.contains { if case .interrupted = $0 { true } else { false } } })
            #expect(stream.status.state == .recovering)
            try await server.start()
            let back = Date()
            #expect(
                await server.waitForSink(state: "RUNNING", timeout: 2),
                "sink not RUNNING within 2 s of the server's return")
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
            let (stream, events) = try await Self.startRecording(Self.configuration(server), on: server)
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
            let (stream, events) = try await Self.startRecording(Self.configuration(server), on: server)
            #expect(try server.sinkState("second") != "RUNNING")
            try server.pactl(["set-default-sink", "second"])
            #expect(await server.waitForSink("second", state: "RUNNING", timeout: 2))
            #expect(await server.waitForSink(state: "SUSPENDED", timeout: 4))
            #expect(stream.status.state == .running)
            #expect(events.all.isEmpty)
            await stream.stop()
        }
    }

    @Test("pulse:SINK plays to that sink and leaves the default sink alone")
    func namedSink() async throws {
        try await PulseAudioServer.with { server in
            try server.pactl(["load-module", "module-null-sink", "sink_name=second", "rate=48000", "channels=2"])
            var configuration = Self.configuration(server)
            configuration.device = "pulse:second"
            let stream = PlaybackStream(configuration: configuration, source: ZeroSource(), logger: quietLogger)
            try await stream.start()
            #expect(stream.status.device == "pulse:second")
            #expect(await server.waitForSink("second", state: "RUNNING", timeout: 2))
            #expect(try server.sinkState() != "RUNNING")
            await stream.stop()
            #expect(await server.waitForSink("second", state: "SUSPENDED", timeout: 4))
        }
    }

    @Test("pulse:SINK naming no sink fails start() with ENOENT and says how to list sinks")
    func unknownSink() async throws {
        try await PulseAudioServer.with { server in
            var configuration = Self.configuration(server)
            configuration.device = "pulse:nowhere"
            let stream = PlaybackStream(configuration: configuration, source: ZeroSource(), logger: quietLogger)
            let error = await #expect(throws: AudioError.self) { try await stream.start() }
            #expect(error?.code == .openFailed)
            #expect(error?.errno == ENOENT)
            #expect(error?.message.contains("no sink named \"nowhere\"") == true, "\(String(describing: error))")
            #expect(error?.message.contains("pactl list short sinks") == true)
            #expect(stream.status.state == .stopped)
            let inputs = try server.sinkInputs()
            #expect(inputs.isEmpty, "\(inputs)")
        }
    }

    @Test(
        "a sink suspended by hand: interrupted at once, the stream stays connected through health checks, resumed when released"
    )
    func suspendedSink() async throws {
        try await PulseAudioServer.with { server in
            var configuration = Self.configuration(server)
            configuration.healthCheckSeconds = 1
            let log = RecordingLogHandler()
            let (stream, events) = try await Self.startRecording(
                configuration, on: server, logger: Logger(label: "test.suspend") { _ in log })
            // A baseline and two healthy checks first: nothing to report.
            try await Task.sleep(nanoseconds: 3_300_000_000)
            #expect(events.all.isEmpty, "\(events.all)")
            let input = try server.pactl(["list", "short", "sink-inputs"])
            try server.pactl(["suspend-sink", "vigil_null", "1"])
            #expect(await events.wait(timeout: 2) { !$0.isEmpty })
            if case .interrupted(let error)? = events.all.first {
                #expect(error.code == .notRunning, "\(error)")
                #expect(error.message.contains("was suspended by another program"), "\(error)")
            } else {
                Issue.record("events: \(events.all)")
            }
            #expect(stream.status.state == .recovering)
            // Logged once as the operator event (the journal's MESSAGE_ID, docs/logs.md), with the sink.
            let suspended = log.warnings.filter { $0.contains("suspended by someone else") }
            #expect(suspended.count == 1, "\(log.warnings)")
            #expect(suspended.first?.contains(#""vigil.event": sink-suspended"#) == true, "\(suspended)")
            #expect(suspended.first?.contains(#""audio.sink": vigil_null"#) == true, "\(suspended)")
            // Health checks keep running while it is suspended, and do not reopen the stream.
            try await Task.sleep(nanoseconds: 2_500_000_000)
            #expect(events.all.count == 1, "\(events.all)")
            #expect(try server.pactl(["list", "short", "sink-inputs"]) == input, "the stream was reopened")
            try server.pactl(["suspend-sink", "vigil_null", "0"])
            #expect(await events.wait(timeout: 2) { $0.last == .resumed }, "\(events.all)")
            #expect(await server.waitForSink(state: "RUNNING", timeout: 2))
            #expect(stream.status.state == .running)
            #expect(stream.status.interruptions == 1)
            #expect(try server.pactl(["list", "short", "sink-inputs"]) == input, "the stream was reopened")
            await stream.stop()
        }
    }

    @Test("a stream the server keeps asking for audio gets no health-check round trip; a suspended one does")
    func healthCheckOnlyWhenRequestsStop() async throws {
        try await PulseAudioServer.with { server in
            var configuration = Self.configuration(server)
            // A 1 s buffer brings a request about every 0.9 s, well inside the 3 s interval.
            configuration.healthCheckSeconds = 3
            let (stream, events) = try await Self.startRecording(configuration, on: server)
            let written = stream.status.framesWritten
            // Two whole intervals: checking on a plain timer would have asked twice by now.
            try await Task.sleep(nanoseconds: 7_000_000_000)
            #expect(stream.status.framesWritten > written, "the server stopped asking for audio")
            #expect(stream.status.healthCheckRoundTrips == 0)
            #expect(events.all.isEmpty, "\(events.all)")
            // A suspended sink asks for nothing: the checks are due again and keep it in recovery.
            try server.pactl(["suspend-sink", "vigil_null", "1"])
            #expect(await events.wait(timeout: 2) { !$0.isEmpty })
            #expect(await RuntimeFixtures.waitUntil(timeout: 8) { stream.status.healthCheckRoundTrips >= 1 })
            #expect(stream.status.state == .recovering)
            await stream.stop()
        }
    }
}

@Suite("PulseAudio request sizes")
struct PulseRequestSizeTests {
    @Test("on PulseAudio: up to 2.25 s a sixteenth of the buffer; above, whatever leaves 2 s of sink latency")
    func requestSizes() {
        let bytesPerMillisecond = UInt32(48 * 4)
        let expected: [(buffer: Int, minimumBytes: UInt32)] = [
            (100, 1200), (1000, 12_000), (2000, 24_000), (2250, 27_000), (4000, 192_000), (10_000, 768_000),
        ]
        for (buffer, minimumBytes) in expected {
            let sizes = PulseDriver.requestSizes(bufferMilliseconds: buffer, server: .pulseAudio)
            #expect(sizes.target == UInt32(buffer) * bytesPerMillisecond, "buffer \(buffer) ms")
            #expect(sizes.minimum == minimumBytes, "buffer \(buffer) ms")
            #expect(sizes.minimum % 4 == 0)
            // The sink latency the server derives (target − 2·minimum) never falls below 1.75 s
            // for buffers of 2 s and more, nor above 2 s for longer ones.
            let sinkMilliseconds = Int(sizes.target - 2 * sizes.minimum) / Int(bytesPerMillisecond)
            if buffer >= 2000 {
                #expect((1750...2000).contains(sinkMilliseconds), "buffer \(buffer) ms: sink \(sinkMilliseconds) ms")
            }
        }
    }

    @Test("on pipewire-pulse: half the buffer less 100 ms, never below a sixteenth")
    func pipeWireRequestSizes() {
        let expected: [(buffer: Int, minimumBytes: UInt32)] = [
            (100, 1200), (1000, 76_800), (2000, 172_800), (10_000, 940_800),
        ]
        for (buffer, minimumBytes) in expected {
            let sizes = PulseDriver.requestSizes(bufferMilliseconds: buffer, server: .pipeWire)
            #expect(sizes.target == UInt32(buffer * 192), "buffer \(buffer) ms")
            #expect(sizes.minimum == minimumBytes, "buffer \(buffer) ms")
            // pipewire-pulse keeps the target length only if it exceeds two minimum requests.
            #expect(sizes.target > 2 * sizes.minimum)
        }
    }
}
