import Foundation
import Testing
import VigilTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Issue 30's leftover: `vigil reload` applies a changed `[metrics]` to the real `vigil up`, read
/// over real HTTP and from the textfile. One host goes through every step: turned on (a counter
/// from before is there), moved to another port and file (the old port closed, the old file
/// removed, the counters kept), then moved to a port the test holds (refused with
/// `metrics-listen-failed`, exit 69: the old port serves on and the rest of that reload — a new
/// worker — is not applied), and finally turned off (the port closed, the file removed).
@Suite("metrics: vigil reload applies [metrics]", .serialized, .timeLimit(.minutes(2)))
struct MetricsReloadTests {
    typealias Project = HostCommandTests.Project

    /// `base` with `metrics` appended as its `[metrics]` table (none when empty).
    static func write(_ project: Project, _ base: String, metrics: String) throws {
        try (base + (metrics.isEmpty ? "" : "\n[metrics]\n\(metrics)\n"))
            .write(toFile: project.config, atomically: true, encoding: .utf8)
    }

    @Test("reload turns [metrics] on, moves it, refuses an address in use, turns it off; counters keep their values")
    func reloadMovesMetrics() async throws {
        let ports = try PrometheusServer.freePorts(2)
        let markers = try TestDirectory("vigil-metrics-reload")
        defer { markers.remove() }
        let project = try await SupervisorRuntimeTests.project(workers: [
            MetricsExportTests.crashOnce("crash-exit", "exit 3", marker: markers.url("exit"))
        ])
        defer { project.dir.remove() }
        let base = try TextFile.read(project.config)
        let textfiles = try project.dir.makeDirectory("textfiles")
        let (first, second) = (textfiles + "/first.prom", textfiles + "/second.prom")
        let host = try SupervisorRuntimeTests.up(project)
        defer { _ = host.terminate(grace: 5) }
        func upErr() -> String { (try? TextFile.read(project.dir.path + "/up.err")) ?? "" }
        // The worker ended once and runs again, all before any metrics were exported.
        let restarted = try await SupervisorRuntimeTests.supervisorStatus(project, pid: host.pid) {
            let details = SupervisorRuntimeTests.details($0)
            return SupervisorRuntimeTests.int(details["worker.crash-exit.restarts"]) == 1
                && details["worker.crash-exit.state"] as? String == "running"
        }
        #expect(restarted != nil, "the worker never restarted: \(upErr())")
        let restarts = #"vigil_worker_restarts_total{plugin="supervisor",worker="crash-exit",reason="exit"}"#
        let starts = #"vigil_worker_starts_total{plugin="supervisor",worker="crash-exit"}"#
        func reload() async throws -> (status: Int32, document: [String: Any]) {
            let r = try await project.vigil("reload", "--config", project.config, "--json")
            return (r.status, ReloadCommandTests.json(r.stdout) ?? ["stdout": r.stdout, "stderr": r.stderr])
        }
        func scrape(_ port: Int) async throws -> (status: Int, body: String) {
            try await PrometheusServer.get("http://127.0.0.1:\(port)/metrics")
        }

        // 1. Off → on: the counters since the start are there, over HTTP and in the textfile.
        try Self.write(project, base, metrics: "listen = \"127.0.0.1:\(ports[0])\"\ntextfile = \"\(first)\"")
        let on = try await reload()
        #expect(on.status == 0, "\(on.document)")
        #expect(on.document["kept"] as? [String] == ["supervisor"], "\(on.document)")
        let firstScrape = try await scrape(ports[0])
        #expect(firstScrape.status == 200, "\(firstScrape.body); \(upErr())")
        #expect(PrometheusServer.sample(restarts, in: firstScrape.body) == 1, "\(firstScrape.body)")
        #expect(PrometheusServer.sample(starts, in: firstScrape.body) == 2, "\(firstScrape.body)")
        let firstWritten = await RuntimeFixtures.waitUntil(timeout: 10) {
            (try? TextFile.read(first)).flatMap { PrometheusServer.sample(restarts, in: $0) } == 1
        }
        #expect(firstWritten, "the textfile \(first) was not written")

        // 2. Moved: the new port and file, the same registry (the counters keep their values); the
        // old port closed and the old file removed.
        try Self.write(project, base, metrics: "listen = \"127.0.0.1:\(ports[1])\"\ntextfile = \"\(second)\"")
        let moved = try await reload()
        #expect(moved.status == 0, "\(moved.document)")
        let secondScrape = try await scrape(ports[1])
        #expect(secondScrape.status == 200, "\(secondScrape.body); \(upErr())")
        #expect(PrometheusServer.sample(restarts, in: secondScrape.body) == 1, "\(secondScrape.body)")
        #expect(PrometheusServer.sample(starts, in: secondScrape.body) == 2, "\(secondScrape.body)")
        #expect(try await scrape(ports[0]).status == 0, "the old port still answers")
        let fileMoved = await RuntimeFixtures.waitUntil(timeout: 10) {
            !FileManager.default.fileExists(atPath: first)
                && (try? TextFile.read(second)).flatMap { PrometheusServer.sample(restarts, in: $0) } == 1
        }
        #expect(
            fileMoved,
            "first: \(FileManager.default.fileExists(atPath: first)), second: \(String(describing: try? TextFile.read(second)))"
        )

        // 3. A port in use, with a new worker in the same file: refused with its code and exit 69;
        // the old port serves on, and the new worker was not started.
        let held = try PrometheusServer.loopbackSocket(listening: true)
        defer { close(held.descriptor) }
        try Self.write(
            project,
            base.replacingOccurrences(
                of: "workers = [\n", with: "workers = [\n  \(ReloadCommandTests.worker("late")),\n"),
            metrics: "listen = \"127.0.0.1:\(held.port)\"\ntextfile = \"\(second)\"")
        let refused = try await reload()
        #expect(refused.status == 69, "\(refused.document)")
        #expect(refused.document["ok"] as? Bool == false, "\(refused.document)")
        let error = refused.document["error"] as? [String: Any] ?? [:]
        #expect(error["code"] as? String == "metrics-listen-failed", "\(refused.document)")
        let message = error["message"] as? String ?? ""
        #expect(message.hasPrefix("cannot serve metrics at 127.0.0.1:\(held.port): "), "\(message)")
        #expect(message.contains("free that address or choose another `listen` in [metrics]"), "\(message)")
        let after = try await scrape(ports[1])
        #expect(after.status == 200, "the previous port stopped serving: \(upErr())")
        #expect(PrometheusServer.sample(restarts, in: after.body) == 1, "\(after.body)")
        #expect(!after.body.contains(#"worker="late""#), "the refused reload started its new worker")
        #expect(host.isRunning, "\(upErr())")
        let status = try await SupervisorRuntimeTests.supervisorStatus(project, pid: host.pid)
        #expect(
            SupervisorRuntimeTests.details(status)["workers"] as? String == "crash-exit",
            "\(String(describing: status))")

        // 4. Off again: the port closed and the file removed; the host runs on.
        try Self.write(project, base, metrics: "")
        let off = try await reload()
        #expect(off.status == 0, "\(off.document)")
        #expect(try await scrape(ports[1]).status == 0, "the port still answers with [metrics] gone")
        let removed = await RuntimeFixtures.waitUntil(timeout: 10) { !FileManager.default.fileExists(atPath: second) }
        #expect(removed, "\(second) is still there with [metrics] gone")
        #expect(host.isRunning, "\(upErr())")
    }
}
