import Foundation
import Testing
import VigilMetrics
import VigilTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// `[metrics]` on the real `vigil up`, read by the real tools a fleet runs: `promtool check metrics`
/// on the exposition and the textfile, Prometheus (Debian's `prometheus`, on loopback, scraping
/// every second) scraping `/metrics`, and node_exporter (`prometheus-node-exporter`, its textfile
/// collector only) reading the textfile; a query returns the worker restarts the test caused.
@Suite("metrics: vigil up with promtool, Prometheus and node_exporter", .serialized, .timeLimit(.minutes(2)))
struct MetricsExportTests {
    typealias Project = HostCommandTests.Project

    /// `promtool check metrics` on `text` (its lint: help text, names, types, format): status and output.
    static func promtool(_ text: String, in dir: TestDirectory) async throws -> (status: Int32, output: String) {
        let input = try dir.write("promtool.in", text)
        let output = dir.url("promtool.out")
        unlink(output)
        let child = try ChildProcess(
            "/usr/bin/promtool", ["check", "metrics"], stdout: output, stderr: output, stdin: input)
        let status = child.wait()
        return (status, (try? String(contentsOfFile: output, encoding: .utf8)) ?? "")
    }

    /// Polls `probe` every 100 ms until it returns a value, for at most `seconds`.
    static func waitFor<T>(_ seconds: Double, _ probe: () async throws -> T?) async rethrows -> T? {
        let deadline = ContinuousClock.now.advanced(by: .milliseconds(Int(seconds * 1000)))
        while ContinuousClock.now < deadline {
            if let value = try await probe() { return value }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return try await probe()
    }

    /// A worker that ends once, the first time (`how`: `exit 3` or `kill -KILL $$`), then sleeps.
    static func crashOnce(_ name: String, _ how: String, marker: String) -> String {
        #"{ name = "\#(name)", command = "/bin/sh", args = ["-c", "test -e \#(marker) && exec /bin/sleep 300; : > \#(marker); \#(how)"] }"#
    }

    @Test("a worker restart the test caused reaches Prometheus through /metrics and through the textfile")
    func restartReachesPrometheus() async throws {
        let ports = try PrometheusServer.freePorts(2)
        let (vigilPort, nodePort) = (ports[0], ports[1])
        let markers = try TestDirectory("vigil-metrics-markers")
        defer { markers.remove() }
        let project = try await SupervisorRuntimeTests.project(workers: [
            Self.crashOnce("crash-exit", "exit 3", marker: markers.url("exit")),
            Self.crashOnce("crash-signal", "kill -KILL $$", marker: markers.url("signal")),
        ])
        defer { project.dir.remove() }
        let textfiles = try project.dir.makeDirectory("textfiles")
        let config = try String(contentsOfFile: project.config, encoding: .utf8)
        try (config + "\n[metrics]\ntextfile = \"\(textfiles)/vigil.prom\"\nlisten = \"127.0.0.1:\(vigilPort)\"\n")
            .write(toFile: project.config, atomically: true, encoding: .utf8)

        let host = try SupervisorRuntimeTests.up(project)
        defer { _ = host.terminate(grace: 5) }
        let url = "http://127.0.0.1:\(vigilPort)/metrics"
        let restarted = #"vigil_worker_restarts_total{plugin="supervisor",worker="crash-exit",reason="exit"}"#
        let killed = #"vigil_worker_restarts_total{plugin="supervisor",worker="crash-signal",reason="signal"}"#
        let body = try await Self.waitFor(20) { () async throws -> String? in
            let (status, body) = try await PrometheusServer.get(url)
            let ready = (try? await PrometheusServer.get("http://127.0.0.1:\(vigilPort)/readyz"))?.status == 200
            return status == 200 && ready && PrometheusServer.sample(restarted, in: body) == 1
                && PrometheusServer.sample(killed, in: body) == 1
                && body.contains(#"vigil_worker_state{plugin="supervisor",worker="crash-signal",state="running"} 1.0"#)
                ? body : nil
        }
        let up = (try? String(contentsOfFile: project.dir.path + "/up.err", encoding: .utf8)) ?? ""
        let metrics = try #require(body, "no restarts on /metrics; vigil up said: \(up)")

        // What the test caused, exactly: one restart each, for its reason; the exit statuses.
        #expect(
            PrometheusServer.sample(#"vigil_worker_starts_total{plugin="supervisor",worker="crash-exit"}"#, in: metrics)
                == 2)
        #expect(
            PrometheusServer.sample(
                #"vigil_worker_restarts_total{plugin="supervisor",worker="crash-exit",reason="signal"}"#, in: metrics)
                == 0)
        #expect(
            PrometheusServer.sample(
                #"vigil_worker_last_exit_code{plugin="supervisor",worker="crash-exit"}"#, in: metrics) == 3)
        #expect(
            PrometheusServer.sample(
                #"vigil_worker_last_exit_code{plugin="supervisor",worker="crash-signal"}"#, in: metrics) == 137)
        #expect(PrometheusServer.sample(#"vigil_plugin_state{plugin="supervisor",state="running"}"#, in: metrics) == 1)
        #expect(PrometheusServer.sample(#"vigil_plugin_state{plugin="supervisor",state="failed"}"#, in: metrics) == 0)
        var types: [String: String] = [:]
        for line in metrics.split(separator: "\n") where line.hasPrefix("# TYPE ") {
            let parts = line.split(separator: " ")
            types[String(parts[2])] = String(parts[3])
        }
        // Every metric on /metrics is in the catalog (docs/metrics.md's table) with its type; every
        // catalog metric of the host and the supervisor is registered (this host runs no audio; the
        // announcer's appear once the host made it).
        for (name, type) in types {
            #expect(MetricsCatalog.description(named: name)?.kind.rawValue == type, "\(name) \(type)")
        }
        let hostAndSupervisor = [
            MetricsCatalog.buildInfo, MetricsCatalog.pluginState, MetricsCatalog.workerState,
            MetricsCatalog.workerStarts, MetricsCatalog.workerRestarts, MetricsCatalog.workerLastExitCode,
            MetricsCatalog.workerBackoff, MetricsCatalog.workerReady, MetricsCatalog.watchdogPings,
            MetricsCatalog.sleepLocks, MetricsCatalog.sleepEvents,
        ].map(\.name)
        #expect(Set(types.keys).isSuperset(of: hostAndSupervisor), "\(types.keys.sorted())")

        // promtool's lint accepts the exposition and the textfile.
        let lint = try await Self.promtool(metrics, in: project.dir)
        #expect(lint.status == 0, "promtool check metrics: \(lint.output)")
        let textfile = try #require(
            await Self.waitFor(10) { () -> String? in
                let text = try? String(contentsOfFile: textfiles + "/vigil.prom", encoding: .utf8)
                return text.flatMap { PrometheusServer.sample(restarted, in: $0) == 1 ? $0 : nil }
            }, "the textfile never showed the restart")
        let textLint = try await Self.promtool(textfile, in: project.dir)
        #expect(textLint.status == 0, "promtool check metrics (textfile): \(textLint.output)")
        #expect(try await PrometheusServer.get("http://127.0.0.1:\(vigilPort)/healthz").status == 200)

        // node_exporter with its textfile collector only, and Prometheus scraping both each second.
        let nodeExporter = try ChildProcess(
            "/usr/bin/prometheus-node-exporter",
            [
                "--web.listen-address=127.0.0.1:\(nodePort)", "--collector.disable-defaults", "--collector.textfile",
                "--collector.textfile.directory=\(textfiles)",
            ], stdout: project.dir.path + "/node.log", stderr: project.dir.path + "/node.log")
        defer { _ = nodeExporter.terminate(grace: 5) }
        let prometheus = try PrometheusServer(
            targets: ["vigil": "127.0.0.1:\(vigilPort)", "node": "127.0.0.1:\(nodePort)"], in: project.dir)

        let expression = #"vigil_worker_restarts_total{worker="crash-exit",reason="exit"}"#
        let seen = try await prometheus.waitForQuery(expression, toBe: ["vigil": 1, "node": 1])
        #expect(seen == ["vigil": 1, "node": 1], "Prometheus: \(prometheus.output)")
        let signalled = try await prometheus.query(
            #"vigil_worker_restarts_total{reason="signal",worker="crash-signal"}"#)
        #expect(signalled == ["vigil": 1, "node": 1])
        // node_exporter read the textfile without an error.
        #expect(try await prometheus.query("node_textfile_scrape_error") == ["node": 0])
    }

    @Test("listen on an address the test holds: metrics-listen-failed, its remedy, exit 69; the host does not run on")
    func listenFailed() async throws {
        // A socket of the test's own, listening on a port of 127.0.0.1.
        let (held, port) = try PrometheusServer.loopbackSocket(listening: true)
        defer { close(held) }
        let project = try await SupervisorRuntimeTests.project(workers: [SupervisorRuntimeTests.sleeper])
        defer { project.dir.remove() }
        let config = try String(contentsOfFile: project.config, encoding: .utf8)
        try (config + "\n[metrics]\nlisten = \"127.0.0.1:\(port)\"\n")
            .write(toFile: project.config, atomically: true, encoding: .utf8)
        let up = try SupervisorRuntimeTests.up(project)
        defer { _ = up.terminate(grace: 5) }
        let status = await up.waitForExit(timeout: 20).map(ChildProcess.exitCode(fromWaitStatus:))
        let stderr = (try? TextFile.read(project.dir.path + "/up.err")) ?? ""
        #expect(status == 69, "\(stderr)")
        let line = stderr.split(separator: "\n").first { $0.hasPrefix("error: ") } ?? ""
        #expect(
            line.hasPrefix("error: metrics-listen-failed: cannot serve metrics at 127.0.0.1:\(port): "), "\(stderr)")
        #expect(line.hasSuffix("free that address or choose another `listen` in [metrics] of vigil.toml"), "\(line)")
        // Nothing runs on: no host is left in `vigil status`.
        let left = try await project.vigil("status", "--json")
        #expect(left.status == 1, "\(left.stdout)")
    }

    @Test("a host stalled longer than its stream's buffer (SIGSTOP, SIGCONT): the underrun on /metrics")
    func underrunCounted() async throws {
        try await PulseAudioServer.with { server in
            let project = try Project()
            defer { project.dir.remove() }
            let port = try PrometheusServer.freePort()
            try project.dir.write(
                "vigil.toml",
                """
                plugins = ["silent-engine"]

                [host]
                background_modes = ["audio"]

                [silent-engine]
                buffer_ms = 200

                [metrics]
                listen = "127.0.0.1:\(port)"

                """)
            try await project.trust("silent-engine")
            var environment = project.environment
            environment["PULSE_SERVER"] = server.address
            let host = try ChildProcess(
                VigilExecutable.path, ["up", "--config", project.config], environment: environment,
                stdout: project.dir.path + "/up.out", stderr: project.dir.path + "/up.err")
            defer { _ = host.terminate(grace: 5) }
            let url = "http://127.0.0.1:\(port)/metrics"
            let underruns = #"vigil_audio_underruns_total{plugin="silent-engine"}"#
            let running = try await Self.waitFor(20) { () async throws -> Double? in
                let body = try await PrometheusServer.get(url).body
                let sink = PrometheusServer.sample(
                    #"vigil_audio_sink_state{plugin="silent-engine",state="running"}"#, in: body)
                return sink == 1 ? PrometheusServer.sample(underruns, in: body) : nil
            }
            let before = try #require(running, "silent-engine never played: \(project.dir.path)")
            // The whole host stalls (as a swapped-out or frozen process does) for longer than the
            // audio the server holds for the stream (1.5 s was not enough here): the stream runs dry.
            #expect(kill(host.pid, SIGSTOP) == 0)
            try await Task.sleep(for: .milliseconds(4000))
            #expect(kill(host.pid, SIGCONT) == 0)
            let after = try await Self.waitFor(10) { () async throws -> Double? in
                let value = PrometheusServer.sample(underruns, in: try await PrometheusServer.get(url).body)
                return value.map { $0 > before } == true ? value : nil
            }
            #expect(after != nil, "no underrun counted after the stall (before: \(before))")
        }
    }

    @Test("/readyz names the plugin that is not running; /healthz and /metrics over a Unix socket")
    func readinessOverUnixSocket() async throws {
        let project = try Project()
        defer { project.dir.remove() }
        let socket = project.dir.path + "/metrics.sock"
        try """
        plugins = ["supervisor", "silent-engine"]

        [host]
        services = ["supervisor"]
        background_modes = ["audio"]

        [supervisor]
        notification = false
        workers = [{ name = "w", command = "/bin/sleep", args = ["300"] }]

        [metrics]
        listen = "unix:\(socket)"

        """.write(toFile: project.config, atomically: true, encoding: .utf8)
        try await project.trust("supervisor", "silent-engine")
        let host = try SupervisorRuntimeTests.up(project)
        defer { _ = host.terminate(grace: 5) }
        // silent-engine waits for a sound server that is not there: once the supervisor runs, the
        // host is healthy but not ready, and /readyz names silent-engine alone.
        let notReady = try await Self.waitFor(20) { () async throws -> String? in
            let answer = try await PrometheusServer.get("http://localhost/readyz", unixSocket: socket)
            return answer.status == 503 && !answer.body.contains("supervisor") ? answer.body : nil
        }
        let last = try await PrometheusServer.get("http://localhost/readyz", unixSocket: socket)
        #expect(notReady?.contains("\nsilent-engine: ") == true, "last /readyz: \(last)")
        #expect(try await PrometheusServer.get("http://localhost/healthz", unixSocket: socket).status == 200)
        let metrics = try await PrometheusServer.get("http://localhost/metrics", unixSocket: socket)
        #expect(
            metrics.status == 200
                && metrics.body.contains(#"vigil_plugin_state{plugin="supervisor",state="running"} 1.0"#))
        #expect(try await PrometheusServer.get("http://localhost/nothing", unixSocket: socket).status == 404)
        // A host whose /healthz was asked stops at SIGTERM as any other: the probe ends with the server.
        #expect(ChildProcess.exitCode(fromWaitStatus: host.terminate(grace: 10)) == 0, "\(project.dir.path)")
    }
}
