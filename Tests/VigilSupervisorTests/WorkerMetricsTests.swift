import MetricsTestKit
import Testing
import VigilMetrics
import VigilPlugin
import VigilTestSupport

@testable import VigilSupervisor

/// The supervisor plugin's metrics through its context's factory (swift-metrics' test backend):
/// a worker killed for its watchdog is a `watchdog` restart (not the `signal` that killed it), and
/// the pings to systemd are counted. (`MetricsExportTests` covers `exit` and `signal` end to end.)
@Suite("supervisor metrics")
struct WorkerMetricsTests {
    @Test("a missed watchdog deadline is a watchdog restart; starts, readiness and systemd pings counted")
    func watchdogRestart() async throws {
        let dir = try TestDirectory("vigil-sup-metrics")
        defer { dir.remove() }
        let (systemd, environment) = try PluginTests.systemd(in: dir, ["WATCHDOG_USEC": "200000"])
        let marker = dir.url("ran")
        // The first run says READY=1 and never pings (killed after 1 s); the second pings.
        let script = """
            if [ -e \(marker) ]; then systemd-notify --ready; while :; do systemd-notify WATCHDOG=1; sleep 0.2; done; fi; \
            : > \(marker); systemd-notify --ready; exec sleep 300
            """
        let metrics = TestMetrics()
        let plugin = try makePlugin(
            [
                "backoff_initial_ms": .integer(20),
                "workers": .array([
                    worker("wd", script, extra: ["type": .string("notify"), "watchdog_sec": .integer(1)])
                ]),
            ], environment: environment, metrics: metrics)
        try await plugin.start()
        let labels = [("plugin", "supervisor"), ("worker", "wd")]
        func restarts(_ reason: String) -> Int64? {
            try? metrics.expectCounter(MetricsCatalog.workerRestarts.name, labels + [("reason", reason)]).totalValue
        }
        let ready = await eventually(timeout: 15) {
            restarts("watchdog") == 1
                && (try? metrics.expectGauge(MetricsCatalog.workerReady.name, labels).lastValue) == 1
        }
        // Killed by SIGKILL for its watchdog: 128 + 9, as a shell says it.
        let lastExit = try? metrics.expectGauge(MetricsCatalog.workerLastExitCode.name, labels).lastValue
        await plugin.stop()
        withExtendedLifetime(systemd) {}
        #expect(ready, "restarts: \(metrics.counters.map { ($0.dimensions, $0.totalValue) })")
        #expect(restarts("signal") == 0 && restarts("exit") == 0 && restarts("start_failure") == 0)
        #expect(try metrics.expectCounter(MetricsCatalog.workerStarts.name, labels).totalValue == 2)
        #expect(lastExit == 137)
        let pings = try metrics.expectCounter(MetricsCatalog.watchdogPings.name, [("plugin", "supervisor")])
        #expect(pings.totalValue >= 1)
        // After the stop: one state series is 1, and it is `stopped`.
        let states = WorkerMetrics.stateNames.map { name in
            (name, try? metrics.expectGauge(MetricsCatalog.workerState.name, labels + [("state", name)]).lastValue)
        }
        #expect(states.filter { $0.1 == 1 }.map(\.0) == ["stopped"], "\(states)")
    }
}
