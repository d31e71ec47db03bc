import Foundation
import Logging
import Synchronization
import Testing
import Vigil
import VigilMetrics
import VigilMetricsExport
import VigilPlugin
import VigilTestSupport

/// `/healthz` asks the host each time: `200` while its loop answers and it keeps alive, `503`
/// with why when the loop does not answer within a second (held up by a plugin whose details
/// call does not return, a real way for a host to hang) or once the host was stopped — while
/// the server itself, on its own thread, still answers `/metrics`.
@Suite("metrics: /healthz probes the host", .serialized, .timeLimit(.minutes(1)))
struct HealthEndpointTests {
    /// A plugin that runs until stopped; its `details()` waits while the gate is closed.
    final class GatedPlugin: KeepAlivePlugin, Sendable {
        let context: PluginContext
        let gate: Gate

        init(context: PluginContext, gate: Gate) {
            self.context = context
            self.gate = gate
        }

        func run() async throws {
            try await PluginLifetime.run(reporting: context.reporter, start: {}, stop: {})
        }

        func details() async -> [String: String] {
            await gate.pass()
            return [:]
        }
    }

    /// Closed: `pass()` waits until `open()`.
    final class Gate: Sendable {
        private let state = Mutex<(open: Bool, waiting: [CheckedContinuation<Void, Never>])>((true, []))

        func close() { state.withLock { $0.open = false } }

        func open() {
            let waiting = state.withLock { state in
                defer { state = (true, []) }
                return state.waiting
            }
            for continuation in waiting { continuation.resume() }
        }

        func pass() async {
            await withCheckedContinuation { continuation in
                let open = state.withLock { state in
                    if !state.open { state.waiting.append(continuation) }
                    return state.open
                }
                if open { continuation.resume() }
            }
        }
    }

    static func get(_ path: String, _ socket: String) async throws -> (status: Int, body: String) {
        try await PrometheusServer.get("http://localhost" + path, unixSocket: socket)
    }

    @Test("200 while the host answers; 503 when its loop is held up (the server still answers); 503 once stopped")
    func healthFollowsTheHost() async throws {
        let dir = try TestDirectory("vigil-healthz")
        defer { dir.remove() }
        let gate = Gate()
        let plugin = VigilHost.PreparedPlugin(
            name: "gated", implementation: PluginImplementation(entry: "gated") { GatedPlugin(context: $0, gate: gate) }
        )
        var logger = Logger(label: "healthz-test")
        logger.logLevel = .critical
        let host = try VigilHost(
            preparedPlugins: [plugin], hostName: "health-test",
            options: VigilHost.Options(publishStatus: false, environment: .init(variables: [:])), logger: logger)
        let export = PrometheusExport()
        let socket = dir.url("metrics.sock")
        let server = MetricsServer(address: .unix(path: socket), export: export, host: host, logger: logger)
        #expect(await host.keepAlive()[plugin: "gated"]?.state == .running)

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            defer { group.cancelAll() }
            let up = await RuntimeFixtures.waitUntil(timeout: 10) { FileManager.default.fileExists(atPath: socket) }
            try #require(up, "the server did not bind \(socket)")
            let alive = try await Self.get("/healthz", socket)
            #expect(alive.status == 200 && alive.body == "ok\n", "\(alive)")

            // The host's loop is held up in the plugin's details call: no answer within the deadline.
            gate.close()
            let started = ContinuousClock.now
            let stuck = try await Self.get("/healthz", socket)
            let waited = ContinuousClock.now - started
            #expect(stuck.status == 503, "\(stuck)")
            #expect(stuck.body == "not alive: the host did not answer within 1 s\n", "\(stuck)")
            #expect(waited >= .milliseconds(900) && waited < .seconds(4), "\(waited)")
            #expect(try await Self.get("/metrics", socket).status == 200, "the server itself still answers")
            let again = try await Self.get("/healthz", socket)
            #expect(again.status == 503, "still held up: \(again)")

            // The loop answers again: alive.
            gate.open()
            let recovered = try await Self.get("/healthz", socket)
            #expect(recovered.status == 200 && recovered.body == "ok\n", "\(recovered)")

            // Stopped while the server still runs.
            await host.stop()
            let stopped = try await Self.get("/healthz", socket)
            #expect(stopped.status == 503, "\(stopped)")
            #expect(stopped.body == "not alive: the host is stopped\n", "\(stopped)")
        }
    }
}
