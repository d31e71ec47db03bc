import MetricsTestKit
import Testing
import VigilMetrics
import VigilPlugin
import VigilTestSupport

/// silent-engine's metrics through the factory its context gives (swift-metrics' test backend),
/// against a private PulseAudio server that the test restarts.
@Suite("silent-engine metrics", .serialized)
struct SilentEngineMetricsTests {
    @Test("stream up while it plays, an interruption by its cause on a server restart, down after the stop")
    func upAndInterruptions() async throws {
        try await PulseAudioServer.with { server in
            let metrics = TestMetrics()
            let events = EventRecorder<PluginEvent>()
            let plugin = try SilentEnginePluginTests.make(
                server, ["mode": .string("zero")], events: events, metrics: metrics)
            let dimensions = [("plugin", "silent-engine")]
            try await plugin.start()
            #expect(try metrics.expectGauge(MetricsCatalog.streamUp.name, dimensions).lastValue == 1)

            try await server.restart()
            #expect(await events.wait(timeout: 4) { $0.contains(.resumed) })
            let interruptions = metrics.counters.filter { $0.label == MetricsCatalog.streamInterruptions.name }
            #expect(interruptions.map(\.totalValue).reduce(0, +) == 1, "\(interruptions)")
            let reasons = interruptions.compactMap { $0.dimensions.first { $0.0 == "reason" }?.1 }
            #expect(reasons.count == 1 && reasons.allSatisfy { !$0.isEmpty && !$0.contains(" ") }, "\(reasons)")
            let up = try metrics.expectGauge(MetricsCatalog.streamUp.name, dimensions)
            #expect(up.values.contains(0) && up.lastValue == 1, "\(up.values)")

            await plugin.stop()
            #expect(try metrics.expectGauge(MetricsCatalog.streamUp.name, dimensions).lastValue == 0)
        }
    }
}
