import CoreMetrics
import Foundation
import Testing
import VigilPlugin
import VigilTestSupport

@testable import VigilSilentEngine

/// The plugin end to end against a private PulseAudio server.
@Suite("silent-engine plugin", .serialized)
struct SilentEnginePluginTests {
    static func make(
        _ server: PulseAudioServer, _ overrides: [String: SettingValue], events: EventRecorder<PluginEvent>,
        metrics: any MetricsFactory = NOOPMetricsHandler.instance
    ) throws -> PluginRun {
        var values = overrides
        values["pulse_server"] = .string(server.address)
        values["retry_max_ms"] = values["retry_max_ms"] ?? .integer(1000)
        let run = PluginRun(reportingTo: events.record)
        let context = PluginContext(
            pluginName: "silent-engine", hostName: "plugin-tests",
            settings: PluginSettings(
                pluginName: "silent-engine", defaults: SilentEngineSettings.defaults, overrides: values),
            logger: quietLogger, reporter: run.reporter, stateDirectory: server.directory.path,
            environment: HostEnvironment(variables: [:]), metrics: metrics)
        return run.adopt(try SilentEnginePlugin.implementation.make(context))
    }

    @Test("sine mode: the monitor carries the configured frequency and level")
    func sineCapture() async throws {
        try await PulseAudioServer.with { server in
            let events = EventRecorder<PluginEvent>()
            let plugin = try Self.make(
                server, ["mode": .string("sine"), "sine_frequency_hz": .integer(30), "sine_amplitude": .double(0.01)],
                events: events)
            try await plugin.start()
            #expect(await server.waitForSink(state: "RUNNING", timeout: 2))
            let samples = try await server.captureMonitor(seconds: 2.5)
            await plugin.stop()
            let analysis = AudioAnalysis(interleaved: samples, trimSeconds: 0.3)
            #expect(abs(analysis.zeroCrossingFrequency - 30) < 0.5, "\(analysis.zeroCrossingFrequency) Hz")
            #expect(abs(analysis.rms - 0.01 / 2.0.squareRoot()) < 0.0007, "RMS \(analysis.rms)")
            #expect(analysis.peak <= 330)
        }
    }

    @Test("details, events on a server restart, and stop() twice")
    func detailsAndEvents() async throws {
        try await PulseAudioServer.with { server in
            let events = EventRecorder<PluginEvent>()
            let plugin = try Self.make(server, ["mode": .string("fluctuate")], events: events)
            try await plugin.start()
            var details = await plugin.details()
            #expect(details["state"] == "running")
            #expect(details["device"] == "pulse")
            #expect(details["backend"] == "pulseaudio")
            #expect(details["mode"] == "fluctuate")
            #expect(details["buffer_ms"] == "2000")
            #expect(details["interruptions"] == "0")
            #expect(Int(details["frames_written"] ?? "") ?? 0 >= 96_000)
            #expect(try server.sinkInputs().contains("application.name = \"plugin-tests (Vigil keep-alive)\""))

            try await server.restart()
            #expect(await events.wait(timeout: 4) { $0.count >= 2 })
            guard case .interrupted(let reason)? = events.all.first else {
                Issue.record("events: \(events.all)")
                return
            }
            #expect(reason.contains("Connection terminated"), "\(reason)")
            #expect(reason.contains("the sound server went away"), "\(reason)")
            #expect(events.all.dropFirst().first == .resumed)
            #expect(await server.waitForSink(state: "RUNNING", timeout: 2))
            details = await plugin.details()
            #expect(details["interruptions"] == "1")
            await plugin.stop()
            await plugin.stop()
            #expect(await plugin.details()["state"] == "stopped")
        }
    }

    @Test("start() throws start-failed with the reason when no server answers")
    func startFails() async throws {
        let server = try PulseAudioServer()
        defer { server.shutDown() }
        let plugin = try Self.make(server, [:], events: EventRecorder<PluginEvent>())
        let error = await #expect(throws: PluginError.self) { try await plugin.start() }
        #expect(error?.code == .startFailed)
        #expect(error?.message.contains("Connection refused") == true, "\(String(describing: error))")
        #expect(
            error?.message.contains("no sound server answers at \(server.address)") == true,
            "\(String(describing: error))")
        await plugin.stop()
    }

    @Test("a retry budget that runs out reports resumeFailed")
    func retryBudget() async throws {
        try await PulseAudioServer.with { server in
            let events = EventRecorder<PluginEvent>()
            let plugin = try Self.make(
                server, ["retry_budget": .integer(3), "retry_initial_ms": .integer(50), "retry_max_ms": .integer(100)],
                events: events)
            try await plugin.start()
            server.kill()
            #expect(await events.wait(timeout: 5) { $0.count >= 2 })
            guard case .resumeFailed(let reason)? = events.all.last else {
                Issue.record("events: \(events.all)")
                return
            }
            #expect(reason.contains("after 3 attempts"))
            #expect(await plugin.details()["state"] == "failed")
            await plugin.stop()
        }
    }
}

/// A sound server that accepts the connection and drops it at once (a server starting up or
/// shutting down, or a broken proxy) is a server loss like any other: silent-engine keeps
/// retrying with backoff and plays once a real server answers.
@Suite("silent-engine: a server that accepts and drops", .serialized)
struct DroppingServerTests {
    @Test("start() rides out a server that drops every connection, retries with backoff, resumes on a real server")
    func acceptThenDrop() async throws {
        let python = try #require(RuntimeFixtures.which("python3"))
        try await PulseAudioServer.with(directory: "vigil-drop") { server, dir in
            let socket = dir.url("native")
            let accepts = dir.url("accepts")
            // Accepts every connection and closes it at once; counts them.
            let dropper = try ChildProcess(
                python,
                [
                    "-c",
                    """
                    import socket, sys
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    s.bind(sys.argv[1]); s.listen(16)
                    n = 0
                    while True:
                        c, _ = s.accept(); c.close(); n += 1
                        open(sys.argv[2], "w").write(str(n))
                    """,
                    socket, accepts,
                ])
            defer { dropper.terminate(grace: 1) }
            #expect(await RuntimeFixtures.waitUntil(timeout: 5) { FileManager.default.fileExists(atPath: socket) })

            let events = EventRecorder<PluginEvent>()
            let run = PluginRun(reportingTo: events.record)
            let context = PluginContext(
                pluginName: "silent-engine", hostName: "drop-tests",
                settings: PluginSettings(
                    pluginName: "silent-engine", defaults: SilentEngineSettings.defaults,
                    overrides: [
                        "pulse_server": .string("unix:" + socket), "retry_initial_ms": .integer(50),
                        "retry_max_ms": .integer(400),
                    ]),
                logger: quietLogger, reporter: run.reporter, stateDirectory: dir.path,
                environment: HostEnvironment(variables: [:]))
            let plugin = run.adopt(try SilentEnginePlugin.implementation.make(context))
            try await plugin.start()  // no throw: the loss is ridden out like any other
            #expect(
                await events.wait(timeout: 5) {
                    $0.first.map { if case .interrupted = $0 { true } else { false } } ?? false
                })
            // It keeps trying, with backoff: several more connections, not a tight loop.
            #expect(
                await RuntimeFixtures.waitUntil(timeout: 10) {
                    (Int((try? TextFile.read(accepts)) ?? "") ?? 0) >= 4
                })
            let details = await plugin.details()
            #expect(details["state"] == "recovering", "\(details)")
            let tried = Int((try? TextFile.read(accepts)) ?? "") ?? 0
            #expect(tried < 60, "\(tried) connections: no backoff")

            // The real server takes the address over.
            dropper.terminate(grace: 1)
            unlink(socket)
            #expect(symlink(server.socketPath, socket) == 0)
            #expect(await events.wait(timeout: 10) { $0.contains(.resumed) }, "\(events.all)")
            #expect(await server.waitForSink(state: "RUNNING", timeout: 5))
            #expect(await plugin.details()["state"] == "running")
            await plugin.stop()
        }
    }
}
