import Foundation
import Testing
import VigilPlugin
import VigilTestSupport
@testable import VigilSilentEngine

/// The plugin end to end against a private PulseAudio server.
@Suite("silent-engine plugin", .serialized)
struct SilentEnginePluginTests {
    static func make(
        _ server: PulseAudioServer, _ overrides: [String: SettingValue], events: EventRecorder<PluginEvent>
    ) throws -> any KeepAlivePlugin {
        var values = overrides
        values["pulse_server"] = .string(server.address)
        values["retry_max_ms"] = values["retry_max_ms"] ?? .integer(1000)
        let context = PluginContext(
            pluginName: "silent-engine", hostName: "plugin-tests",
            settings: PluginSettings(
                pluginName: "silent-engine", defaults: SilentEngineSettingsTests.manifestDefaults, overrides: values),
            logger: quietLogger, reporter: PluginReporter(events.record), stateDirectory: server.directory.path)
        return try SilentEnginePlugin.implementation.make(context)
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
        #expect(error?.message.contains("no sound server answers at \(server.address)") == true, "\(String(describing: error))")
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
