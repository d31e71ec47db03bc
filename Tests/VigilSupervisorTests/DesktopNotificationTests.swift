import Foundation
import Testing
import VigilPlugin
import VigilTestSupport

@testable import VigilSupervisor
@testable import VigilSupervisorEngine

@Suite("supervisor plugin: the desktop notification on a real dbus-daemon")
struct DesktopNotificationTests {
    @Test("opened low-urgency and resident, updated in place, closed on stop", arguments: [true, false])
    func notificationLifecycle(persistence: Bool) async throws {
        let dir = try TestDirectory("vigil-sup")
        defer { dir.remove() }
        let bus = try await blockingCall { Result { try DBusDaemon() } }.get()
        defer { bus.stop() }
        let server = try await NotificationServer.start(
            bus: bus, log: dir.url("calls.jsonl"), capabilities: persistence ? ["body", "persistence"] : ["body"])
        defer { server.stop() }

        var environment = isolatedEnvironment
        environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        let go = dir.url("go")
        let script = """
            systemd-notify --ready --status=warming; while [ ! -e \(go) ]; do sleep 0.02; done; \
            systemd-notify --status=serving; exec sleep 300
            """
        let plugin = try makePlugin(
            ["workers": .array([worker("signer", script, extra: ["type": .string("notify")])])],
            environment: environment)
        try await plugin.start()
        // Shown beside the keep-alive: the channel appears once the server answered.
        #expect(await Self.channels(of: plugin, within: 10) { $0 == "notification, vigil status" })

        // Opened: one Notify with replaces_id 0, urgency byte 0, resident only with persistence.
        #expect(await eventually { server.calls("Notify").count >= 1 })
        let opened = try #require(server.calls("Notify").first)
        #expect(opened["app_name"] as? String == "test-host")
        #expect(opened["summary"] as? String == "test-host is running in background")
        #expect(opened["replaces_id"] as? Int == 0)
        #expect(opened["expire_timeout"] as? Int == 0)
        let hints = try #require(opened["hints"] as? [String: Any])
        let hintTypes = try #require(opened["hint_types"] as? [String: String])
        #expect(hints["urgency"] as? Int == 0)
        #expect(hintTypes["urgency"] == "Byte")
        #expect((hints["resident"] as? Bool) == (persistence ? true : nil))
        let id = try #require(opened["id"] as? Int)
        #expect(server.calls("GetCapabilities").count == 1)

        // Updated in place: the worker's STATUS= changes the body, with the same replaces_id.
        _ = FileManager.default.createFile(atPath: go, contents: nil)
        #expect(
            await eventually {
                server.calls("Notify").contains { ($0["body"] as? String)?.contains("serving") == true }
            })
        let updates = server.calls("Notify").dropFirst()
        #expect(!updates.isEmpty)
        #expect(updates.allSatisfy { $0["replaces_id"] as? Int == id && $0["id"] as? Int == id })
        #expect(server.calls("Notify").last?["body"] as? String == "signer: ready — serving")

        // Closed on stop.
        await plugin.stop()
        #expect(server.calls("CloseNotification").map { $0["id"] as? Int } == [id])
        #expect(await plugin.details()["channels"] == "vigil status")
    }

    /// Waits up to `timeout` seconds for the plugin's `channels` detail to satisfy `condition`.
    static func channels(
        of plugin: PluginRun, within timeout: Double, _ condition: (String?) -> Bool
    ) async -> Bool {
        let deadline = ContinuousClock.now.advanced(by: .seconds(timeout))
        while ContinuousClock.now < deadline {
            if condition(await plugin.details()["channels"]) { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    @Test("a session bus that never answers: the workers run and start() returns at once; stop() at once too")
    func silentBus() async throws {
        let dir = try TestDirectory("vigil-sup")
        defer { dir.remove() }
        let silent = try SilentSocket(path: dir.url("bus"))
        defer { silent.stop() }
        var environment = isolatedEnvironment
        environment["DBUS_SESSION_BUS_ADDRESS"] = silent.address
        let plugin = try makePlugin(
            ["workers": .array([worker("idle", "exec sleep 300")])], environment: environment)
        let started = ContinuousClock.now
        try await plugin.start()
        // Well under the bus deadline (5 s): start() did not wait for the bus.
        #expect(ContinuousClock.now - started < .seconds(4), "start() took \(ContinuousClock.now - started)")
        #expect(await plugin.details()["state"] == "running")
        #expect(await eventually { silent.connections >= 1 })
        #expect(await plugin.details()["channels"] == "vigil status")
        let stopping = ContinuousClock.now
        await plugin.stop()
        #expect(ContinuousClock.now - stopping < .seconds(3), "stop() took \(ContinuousClock.now - stopping)")
    }

    @Test("a session bus without a notification server is not an error")
    func busWithoutServer() async throws {
        let bus = try await blockingCall { Result { try DBusDaemon() } }.get()
        defer { bus.stop() }
        var environment = isolatedEnvironment
        environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        let plugin = try makePlugin([:], environment: environment)
        try await plugin.start()
        #expect(await plugin.details()["channels"] == "vigil status")
        await plugin.stop()
    }
}
