import Foundation
import Testing
import VigilTestSupport

/// Issue 33 end to end, through the real host path: `vigil up` starts gcc-built attack plugins
/// (the confinement tests' AttackPlugin.c linked into a keep-alive plugin) trusted through the
/// capability review, each confined by its helper process to what its signed manifest declares
/// (its marker directory). Each attack is refused by the kernel, the host survives, and
/// `vigil status --json` shows each denial with the capability that would allow it, `/metrics`
/// counts it once under the plugin and that capability; the heartbeat example, in the same host,
/// keeps writing the one file it declares.
@Suite("Confined shared-library plugins under vigil up", .serialized, .timeLimit(.minutes(2)))
struct ConfinedPluginCommandTests {
    struct Attack {
        let plugin: String
        let attack: String
        /// What the status says would allow it.
        let allowing: String
        /// The `capability` label of its `vigil_plugin_denials_total` series.
        let capability: String
    }

    /// Every `capability` label of `vigil_plugin_denials_total` (docs/metrics.md).
    static let capabilities: Set = [
        "file_read", "file_write", "tcp_connect", "network", "unix_socket", "spawn", "none",
    ]

    /// `plugin`'s `vigil_plugin_denials_total` series in `exposition`: capability → value.
    static func denials(of plugin: String, in exposition: String) -> [String: Double] {
        let prefix = #"vigil_plugin_denials_total{plugin="\#(plugin)",capability=""#
        var series: [String: Double] = [:]
        for line in exposition.split(separator: "\n") where line.hasPrefix(prefix) {
            let rest = line.dropFirst(prefix.count)
            guard let quote = rest.firstIndex(of: "\""), let space = rest.lastIndex(of: " ") else { continue }
            series[String(rest[..<quote])] = Double(rest[rest.index(after: space)...])
        }
        return series
    }

    @Test("attacks through vigil up are refused and shown in status; the declared heartbeat file is written")
    func attacksAreRefusedAndReported() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        let key = try f.dir.write(".ssh/id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n", mode: 0o600)
        let listener = try LoopbackListener()
        defer { listener.close() }
        let attacks = [
            Attack(
                plugin: "steal-key", attack: "read \(key)",
                allowing: #"it would need "files": [{"path": "\#(key)", "access": "read"}]"#, capability: "file_read"),
            Attack(
                plugin: "dial-out", attack: "connect \(listener.port)",
                allowing: #"it would need "network": "any" (or "tcp_connect")"#, capability: "network"),
            Attack(
                plugin: "shell", attack: "exec /bin/sh", allowing: #"it would need "spawn": ["/bin/sh"]"#,
                capability: "spawn"),
            Attack(
                plugin: "signal-host", attack: "kill parent", allowing: "no capability allows it", capability: "none"),
        ]
        for attack in attacks {
            let name = attack.plugin
            try await f.compile(
                .init(who: name, pluginID: name, soname: "libvigiltest-\(name).so", attacks: true),
                output: "\(name).so")
            try f.plugin(
                name, library: "lib\(name).so", files: ["lib\(name).so": "\(name).so"],
                settings: #"{"marker": "\#(f.marker(name))", "attack": "\#(attack.attack)"}"#)
        }
        let port = try PrometheusServer.freePort()
        try f.config(
            attacks.map(\.plugin), others: ["heartbeat-example": ExamplePluginTests.fingerprint],
            otherPaths: [ExamplePluginTests.directory], tables: "[metrics]\nlisten = \"127.0.0.1:\(port)\"")
        let (host, optional) = try f.up()
        defer {
            host.signal(SIGKILL)
            _ = host.wait()
        }
        let beat = f.dir.path + "/state/vigil/plugins/heartbeat-example/heartbeat"

        // Wait (bounded) until every attack plugin reports its denial, the example's status shows its
        // helper and the heartbeat has beaten.
        var plugins: [String: [String: Any]] = [:]
        var last = ""
        let deadline = Date().addingTimeInterval(20)
        func complete() -> Bool {
            attacks.allSatisfy { plugins[$0.plugin]?["denials"] != nil }
                && plugins["heartbeat-example"]?["confinement"] != nil && FileManager.default.fileExists(atPath: beat)
        }
        while Date() < deadline, !complete(), host.isRunning {
            let status = try await VigilExecutable.run(["status", "--json"], in: f.dir.path, environment: optional)
            last = status.stdout + status.stderr
            let hosts = try? JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [[String: Any]]
            for plugin in (hosts?.first?["plugins"] as? [[String: Any]]) ?? [] {
                if let name = plugin["name"] as? String { plugins[name] = plugin["details"] as? [String: Any] ?? [:] }
            }
            if !complete() { try await Task.sleep(for: .milliseconds(100)) }
        }
        let stderr = (try? TextFile.read(f.dir.path + "/up.err")) ?? ""
        #expect(complete(), "status: \(last); stderr: \(stderr)")
        #expect(host.isRunning, "the host survived its plugins: \(stderr)")
        for attack in attacks {
            let details = plugins[attack.plugin] ?? [:]
            let what = attack.attack.prefix { $0 != " " }
            #expect(
                f.markerLines(attack.plugin) == ["start \(attack.plugin)", "attack \(what) refused"],
                "\(attack.plugin): the kernel refused the attack")
            #expect(
                (details["confinement"] as? String)?.hasPrefix("confined (Landlock ABI ") == true,
                "\(attack.plugin): \(details)")
            let denials = details["denials"] as? String ?? ""
            #expect(denials.hasPrefix("1, last: "), "\(attack.plugin): \(denials)")
            #expect(denials.hasSuffix(attack.allowing), "\(attack.plugin): \(denials)")
        }
        // /metrics counts each attack once, under its plugin and the capability that would allow it;
        // every other capability of every confined plugin (the example's included) is there at 0.
        let url = "http://127.0.0.1:\(port)/metrics"
        var exposition = ""
        func counted() -> Bool {
            attacks.allSatisfy { Self.denials(of: $0.plugin, in: exposition)[$0.capability] == 1 }
        }
        let scrapeDeadline = ContinuousClock.now.advanced(by: .seconds(10))
        repeat {
            exposition = (try? await PrometheusServer.get(url).body) ?? ""
            if !counted() { try await Task.sleep(for: .milliseconds(100)) }
        } while !counted() && ContinuousClock.now < scrapeDeadline
        #expect(counted(), "/metrics: \(exposition)")
        for attack in attacks {
            var expected = Dictionary(uniqueKeysWithValues: Self.capabilities.map { ($0, 0.0) })
            expected[attack.capability] = 1
            #expect(Self.denials(of: attack.plugin, in: exposition) == expected, "\(attack.plugin)")
        }
        let none = Dictionary(uniqueKeysWithValues: Self.capabilities.map { ($0, 0.0) })
        #expect(Self.denials(of: "heartbeat-example", in: exposition) == none, "the example was refused nothing")
        #expect(exposition.contains("# TYPE vigil_plugin_denials_total counter"), "\(exposition)")

        // The heartbeat example runs confined beside them and keeps writing its declared file.
        let example = plugins["heartbeat-example"] ?? [:]
        #expect((example["confinement"] as? String)?.hasPrefix("confined (Landlock ABI ") == true, "\(example)")
        #expect(example["denials"] == nil, "the example was refused nothing: \(example)")
        func beats() -> Int {
            guard let text = try? TextFile.read(beat), text.hasPrefix("beat ") else { return 0 }
            return Int(text.dropFirst(5).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        }
        let first = beats()
        let advanced = await RuntimeFixtures.waitUntil(timeout: 10) { beats() > first }
        #expect(advanced, "the heartbeat file advances while the host runs confined plugins")
    }
}
