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

    /// A free TCP port on 127.0.0.1 (bound to port 0, then released).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        try #require(bound, "no free port: errno \(errno)")
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// GET `url` with curl: the status and the body (status 0 when nothing answered).
    static func get(_ url: String, unixSocket: String? = nil, query: String? = nil) async throws -> (
        status: Int, body: String
    ) {
        var arguments = ["-sS", "--max-time", "5", "-w", "\n%{http_code}"]
        if let unixSocket { arguments += ["--unix-socket", unixSocket] }
        if let query { arguments += ["-G", "--data-urlencode", "query=" + query] }
        let result = try await RuntimeFixtures.run("/usr/bin/curl", arguments + [url], timeout: 10)
        guard result.status == 0, let newline = result.stdout.lastIndex(of: "\n") else { return (0, result.stderr) }
        return (Int(result.stdout[result.stdout.index(after: newline)...]) ?? 0, String(result.stdout[..<newline]))
    }

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

    /// One sample's value in an exposition (`name{labels}` exactly as rendered).
    static func sample(_ series: String, in text: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
    }

    /// The values of a Prometheus instant query by job (`vigil`: scraped from /metrics, `node`:
    /// through node_exporter's textfile collector).
    static func query(_ expression: String, port: Int) async throws -> [String: Double] {
        let answer = try await get("http://127.0.0.1:\(port)/api/v1/query", query: expression)
        guard answer.status == 200,
            let document = try? JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any],
            let data = document["data"] as? [String: Any], let results = data["result"] as? [[String: Any]]
        else { return [:] }
        var values: [String: Double] = [:]
        for result in results {
            guard let labels = result["metric"] as? [String: String], let job = labels["job"],
                let value = result["value"] as? [Any], value.count == 2, let text = value[1] as? String
            else { continue }
            values[job] = Double(text)
        }
        return values
    }

    @Test("a worker restart the test caused reaches Prometheus through /metrics and through the textfile")
    func restartReachesPrometheus() async throws {
        var ports: [Int] = []
        while ports.count < 3 {
            let port = try Self.freePort()
            if !ports.contains(port) { ports.append(port) }
        }
        let (vigilPort, nodePort, prometheusPort) = (ports[0], ports[1], ports[2])
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
            let (status, body) = try await Self.get(url)
            let ready = (try? await Self.get("http://127.0.0.1:\(vigilPort)/readyz"))?.status == 200
            return status == 200 && ready && Self.sample(restarted, in: body) == 1 && Self.sample(killed, in: body) == 1
                && body.contains(#"vigil_worker_state{plugin="supervisor",worker="crash-signal",state="running"} 1.0"#)
                ? body : nil
        }
        let up = (try? String(contentsOfFile: project.dir.path + "/up.err", encoding: .utf8)) ?? ""
        let metrics = try #require(body, "no restarts on /metrics; vigil up said: \(up)")

        // What the test caused, exactly: one restart each, for its reason; the exit statuses.
        #expect(Self.sample(#"vigil_worker_starts_total{plugin="supervisor",worker="crash-exit"}"#, in: metrics) == 2)
        #expect(
            Self.sample(
                #"vigil_worker_restarts_total{plugin="supervisor",worker="crash-exit",reason="signal"}"#, in: metrics)
                == 0)
        #expect(Self.sample(#"vigil_worker_last_exit_code{plugin="supervisor",worker="crash-exit"}"#, in: metrics) == 3)
        #expect(
            Self.sample(#"vigil_worker_last_exit_code{plugin="supervisor",worker="crash-signal"}"#, in: metrics) == 137)
        #expect(Self.sample(#"vigil_plugin_state{plugin="supervisor",state="running"}"#, in: metrics) == 1)
        #expect(Self.sample(#"vigil_plugin_state{plugin="supervisor",state="failed"}"#, in: metrics) == 0)
        var types: [String: String] = [:]
        for line in metrics.split(separator: "\n") where line.hasPrefix("# TYPE ") {
            let parts = line.split(separator: " ")
            types[String(parts[2])] = String(parts[3])
        }
        // Every metric on /metrics is in the catalog (docs/metrics.md's table) with its type; every
        // catalog metric of the host and the supervisor is registered (this host runs no audio).
        for (name, type) in types {
            #expect(MetricsCatalog.description(named: name)?.kind.rawValue == type, "\(name) \(type)")
        }
        let audio = [MetricsCatalog.streamUp, MetricsCatalog.streamInterruptions].map(\.name)
        #expect(Set(MetricsCatalog.all.map(\.name)).subtracting(audio) == Set(types.keys), "\(types.keys.sorted())")

        // promtool's lint accepts the exposition and the textfile.
        let lint = try await Self.promtool(metrics, in: project.dir)
        #expect(lint.status == 0, "promtool check metrics: \(lint.output)")
        let textfile = try #require(
            await Self.waitFor(10) { () -> String? in
                let text = try? String(contentsOfFile: textfiles + "/vigil.prom", encoding: .utf8)
                return text.flatMap { Self.sample(restarted, in: $0) == 1 ? $0 : nil }
            }, "the textfile never showed the restart")
        let textLint = try await Self.promtool(textfile, in: project.dir)
        #expect(textLint.status == 0, "promtool check metrics (textfile): \(textLint.output)")
        #expect(try await Self.get("http://127.0.0.1:\(vigilPort)/healthz").status == 200)

        // node_exporter with its textfile collector only, and Prometheus scraping both each second.
        let nodeExporter = try ChildProcess(
            "/usr/bin/prometheus-node-exporter",
            [
                "--web.listen-address=127.0.0.1:\(nodePort)", "--collector.disable-defaults", "--collector.textfile",
                "--collector.textfile.directory=\(textfiles)",
            ], stdout: project.dir.path + "/node.log", stderr: project.dir.path + "/node.log")
        defer { _ = nodeExporter.terminate(grace: 5) }
        let prometheusConfig = try project.dir.write(
            "prometheus.yml",
            """
            global:
              scrape_interval: 1s
              evaluation_interval: 1s
            scrape_configs:
              - job_name: vigil
                static_configs: [{targets: ["127.0.0.1:\(vigilPort)"]}]
              - job_name: node
                static_configs: [{targets: ["127.0.0.1:\(nodePort)"]}]

            """)
        let prometheus = try ChildProcess(
            "/usr/bin/prometheus",
            [
                "--config.file=\(prometheusConfig)", "--storage.tsdb.path=\(project.dir.path)/tsdb",
                "--web.listen-address=127.0.0.1:\(prometheusPort)", "--log.level=warn",
            ], stdout: project.dir.path + "/prometheus.log", stderr: project.dir.path + "/prometheus.log")
        defer { _ = prometheus.terminate(grace: 5) }

        let expression = #"vigil_worker_restarts_total{worker="crash-exit",reason="exit"}"#
        let seen = try await Self.waitFor(30) { () async throws -> [String: Double]? in
            let values = try await Self.query(expression, port: prometheusPort)
            return values.count == 2 ? values : nil
        }
        let log = (try? String(contentsOfFile: project.dir.path + "/prometheus.log", encoding: .utf8)) ?? ""
        #expect(seen == ["vigil": 1, "node": 1], "Prometheus: \(log)")
        let signalled = try await Self.query(
            #"vigil_worker_restarts_total{reason="signal",worker="crash-signal"}"#, port: prometheusPort)
        #expect(signalled == ["vigil": 1, "node": 1])
        // node_exporter read the textfile without an error.
        #expect(try await Self.query("node_textfile_scrape_error", port: prometheusPort) == ["node": 0])
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
            let answer = try await Self.get("http://localhost/readyz", unixSocket: socket)
            return answer.status == 503 && !answer.body.contains("supervisor") ? answer.body : nil
        }
        let last = try await Self.get("http://localhost/readyz", unixSocket: socket)
        #expect(notReady?.contains("\nsilent-engine: ") == true, "last /readyz: \(last)")
        #expect(try await Self.get("http://localhost/healthz", unixSocket: socket).status == 200)
        let metrics = try await Self.get("http://localhost/metrics", unixSocket: socket)
        #expect(
            metrics.status == 200
                && metrics.body.contains(#"vigil_plugin_state{plugin="supervisor",state="running"} 1.0"#))
        #expect(try await Self.get("http://localhost/nothing", unixSocket: socket).status == 404)
    }
}
