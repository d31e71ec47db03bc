import CoreMetrics
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Testing
import VigilMetrics
import VigilMetricsExport
import VigilTestSupport

/// The node_exporter textfile: written atomically, only after a value changed, at most once per
/// interval, without timestamps, and once more with the last values when it stops.
@Suite("metrics textfile")
struct MetricsTextfileTests {
    @Test("rewritten only when a value changed; no timestamps; no temporary file left")
    func writesOnChangeOnly() async throws {
        let dir = try TestDirectory("vigil-textfile")
        defer { dir.remove() }
        let path = dir.url("vigil.prom")
        let export = PrometheusExport()
        let gauge = Gauge(
            label: MetricsCatalog.workerReady.name, dimensions: [("plugin", "supervisor"), ("worker", "w")],
            factory: export)
        gauge.record(1)
        let writes = Mutex(0)
        let service = MetricsTextfile(
            path: path, export: export, minimumInterval: .milliseconds(20), logger: Logger(label: "test"),
            onWrite: { writes.withLock { $0 += 1 } })
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await service.run() }
            #expect(
                await RuntimeFixtures.waitUntil(timeout: 10, interval: .milliseconds(10)) {
                    writes.withLock { $0 } == 1
                })
            let first = try String(contentsOfFile: path, encoding: .utf8)
            #expect(first.contains("# HELP vigil_worker_ready "))
            #expect(first.contains(#"vigil_worker_ready{plugin="supervisor",worker="w"} 1.0"#), "\(first)")
            // The same value again, many times: signalled, but nothing to write.
            for _ in 0..<50 { gauge.record(1) }
            // Then a change, which must be written (once the interval allows).
            let restarts = Counter(
                label: MetricsCatalog.workerRestarts.name,
                dimensions: [("plugin", "supervisor"), ("worker", "w"), ("reason", "exit")], factory: export)
            restarts.increment()
            #expect(
                try await RuntimeFixtures.waitUntil(timeout: 10, interval: .milliseconds(10)) {
                    try String(contentsOfFile: path, encoding: .utf8).contains(
                        #"vigil_worker_restarts_total{plugin="supervisor",worker="w",reason="exit"} 1"#)
                })
            #expect(writes.withLock { $0 } == 2, "the unchanged values were written again")
            group.cancelAll()
        }
        let text = try String(contentsOfFile: path, encoding: .utf8)
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            #expect(line.split(separator: " ").count == 2, "a sample with a timestamp: \(line)")
        }
        #expect(try dir.list() == ["vigil.prom"])
    }

    @Test("a graceful stop during the wait between writes ends it: the last values are written at once")
    func gracefulStopEndsTheWait() async throws {
        let dir = try TestDirectory("vigil-textfile-stop")
        defer { dir.remove() }
        let path = dir.url("vigil.prom")
        let export = PrometheusExport()
        let restarts = Counter(
            label: MetricsCatalog.workerRestarts.name,
            dimensions: [("plugin", "supervisor"), ("worker", "w"), ("reason", "exit")], factory: export)
        // An interval far longer than the test waits: only the shutdown can end it.
        let service = MetricsTextfile(
            path: path, export: export, minimumInterval: .seconds(60), logger: Logger(label: "test"))
        let services = ServiceGroup(
            configuration: .init(services: [service], gracefulShutdownSignals: [], logger: Logger(label: "test")))
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                try? await services.run()
                return true
            }
            // The first change is written, and the writer waits out its interval.
            restarts.increment()
            #expect(
                await RuntimeFixtures.waitUntil(timeout: 10, interval: .milliseconds(10)) {
                    (try? String(contentsOfFile: path, encoding: .utf8))?.contains(#"reason="exit"} 1"#) == true
                })
            restarts.increment()
            await services.triggerGracefulShutdown()
            group.addTask {
                try? await Task.sleep(for: .seconds(3))
                return false
            }
            let stopped = await group.next() ?? false
            #expect(stopped, "the writer still waited out its 60 s interval after the graceful stop")
            group.cancelAll()
        }
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(
            text.contains(#"vigil_worker_restarts_total{plugin="supervisor",worker="w",reason="exit"} 2"#), "\(text)")
    }
}
