import Foundation
import MetricsTestKit
import Testing
import Vigil
import VigilMetrics
import VigilPlugin
import VigilTestSupport

/// Issue 33.3 in a library host: each operation the kernel refuses a confined shared-library plugin
/// (the confinement tests' AttackPlugin.c linked into a keep-alive plugin, built with gcc) reaches
/// `VigilHost.events` as a typed `denied` event naming the capability that would allow it, and is
/// counted through the host's own metrics factory; the plugin's state does not change for it.
@Suite("Confinement denials as host events", .serialized, .timeLimit(.minutes(2)))
struct DenialEventTests {
    /// The first `denied` event of each of `plugins`, waiting at most `timeout` seconds.
    private func denials(
        _ events: AsyncStream<HostEvent>, of plugins: Set<String>, timeout: Double
    ) async -> [String: HostEvent] {
        await withTaskGroup(of: [String: HostEvent]?.self) { group in
            group.addTask {
                var found: [String: HostEvent] = [:]
                for await event in events where plugins.contains(event.plugin) && found[event.plugin] == nil {
                    if case .denied = event.kind { found[event.plugin] = event }
                    if found.count == plugins.count { break }
                }
                return found
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(timeout))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? [:]
        }
    }

    @Test("read ~/.ssh/id_ed25519, write outside, run /bin/sh: one typed denial event and one count each")
    func deniedOperationsAreHostEvents() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        let key = try f.dir.write(".ssh/id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n", mode: 0o600)
        let outside = f.dir.path + "/outside-the-state-directory"
        let attacks = ["steal-key": "read \(key)", "shell": "exec /bin/sh", "scribble": "write \(outside)"]
        for (name, attack) in attacks {
            try await f.compile(
                .init(who: name, pluginID: name, soname: "libvigiltest-\(name).so", attacks: true),
                output: "\(name).so")
            try f.plugin(
                name, library: "lib\(name).so", files: ["lib\(name).so": "\(name).so"],
                settings: #"{"marker": "\#(f.marker(name))", "attack": "\#(attack)"}"#)
        }
        try f.config(attacks.keys.sorted())
        let metrics = TestMetrics()
        let host = try f.host(metrics: metrics)
        let events = host.events
        let status = await host.keepAlive()
        let found = await denials(events, of: Set(attacks.keys), timeout: 20)
        let after = await host.status()
        await host.stop()

        for name in attacks.keys {
            #expect(status[plugin: name]?.state == .running, "\(name): \(String(describing: status[plugin: name]))")
        }
        let stolen = try #require(found["steal-key"], "no denied event for steal-key: \(found)")
        guard case .denied(let denial) = stolen.kind else { Issue.record("\(stolen)"); return }
        #expect(denial.capability == .fileRead(key), "\(denial)")
        #expect(denial.declaration() == #""files": [{"path": "\#(key)", "access": "read"}]"#)
        #expect(f.markerLines("steal-key").contains("attack read refused"), "\(f.markerLines("steal-key"))")

        let shell = try #require(found["shell"], "no denied event for shell: \(found)")
        guard case .denied(let spawn) = shell.kind else { Issue.record("\(shell)"); return }
        #expect(spawn.operation == "execve", "\(spawn)")
        #expect(spawn.capability == .spawn("/bin/sh"), "\(spawn)")

        let scribble = try #require(found["scribble"], "no denied event for scribble: \(found)")
        guard case .denied(let write) = scribble.kind else { Issue.record("\(scribble)"); return }
        #expect(write.capability == .fileWrite(outside), "\(write)")
        #expect(!FileManager.default.fileExists(atPath: outside), "the write outside was refused")

        // Each denial is counted once, under its plugin and the kind of capability that would allow
        // it; the plugin's other capabilities are there at 0 from its start.
        let counted = ["steal-key": "file_read", "shell": "spawn", "scribble": "file_write"]
        for (name, capability) in counted {
            for label in MetricsCatalog.denialCapabilities {
                let value = try? metrics.expectCounter(
                    MetricsCatalog.pluginDenials.name, [("plugin", name), ("capability", label)]
                ).totalValue
                #expect(value == (label == capability ? 1 : 0), "\(name) \(label): \(String(describing: value))")
            }
        }

        // A denial changes no state: both still run, and status still counts each one.
        for name in attacks.keys {
            #expect(after[plugin: name]?.state == .running, "\(name)")
            #expect(after[plugin: name]?.details["denials"]?.hasPrefix("1, last: ") == true, "\(name)")
        }
    }
}
