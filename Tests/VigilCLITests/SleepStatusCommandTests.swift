import Foundation
import Testing
import VigilTestSupport

/// `vigil up` holding logind sleep locks on a private "system" bus with the logind STAND-IN
/// (``LogindStandIn``), and `vigil status` showing them.
@Suite("vigil status: sleep locks", .serialized, .timeLimit(.minutes(1)))
struct SleepStatusCommandTests {
    /// Runs `vigil up` with `DBUS_SYSTEM_BUS_ADDRESS` = `systemBus` until its status document's `sleep`
    /// object satisfies `settled` (the host publishes `sleep` before it knows the outcome, so a test
    /// waits for the part it checks); returns that document and `vigil status`'s text.
    func upAndStatus(
        _ toml: String, systemBus: String, until settled: ([String: Any]) -> Bool
    ) async throws -> (document: [String: Any], text: String) {
        let project = try HostCommandTests.Project()
        defer { project.dir.remove() }
        try project.dir.write("vigil.toml", toml)
        try await project.trust("silent-engine")
        var environment = project.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = systemBus
        let child = try ChildProcess(
            VigilExecutable.path, ["up", "--config", project.config], environment: environment,
            stdout: project.dir.path + "/up.out", stderr: project.dir.path + "/up.err")
        defer { child.terminate(grace: 2) }
        let found = try #require(
            try await project.hostStatus { ($0["sleep"] as? [String: Any]).map(settled) ?? false },
            "vigil up did not publish the sleep state the test waits for")
        let text = try await project.vigil("status").stdout
        child.signal(SIGTERM)
        _ = await child.waitForExit(timeout: 20)
        return (found, text)
    }

    @Test("inhibit_sleep = true: vigil status shows the delay and block locks, and the stand-in lists them")
    func locksShown() async throws {
        try await RuntimeFixtures.withTempDirectory { directory in
            try await LogindStandIn.withSystemBus(directory: directory.path) { bus, logind in
                let (document, text) = try await upAndStatus(
                    "plugins = [\"silent-engine\"]\n\n[host]\nbackground_modes = [\"audio\"]\ninhibit_sleep = true\n",
                    systemBus: bus.address, until: { ($0["locks"] as? [String])?.count == 2 })
                #expect((document["sleep"] as? [String: Any])?["locks"] as? [String] == ["delay", "block"])
                #expect(text.contains("sleep locks held: delay, block"), "\(text)")
                #expect(logind.steps("inhibit").compactMap { $0["mode"] as? String } == ["delay", "block"])
                // SIGTERM stopped the host: both locks were released.
                #expect(
                    await RuntimeFixtures.waitUntil(timeout: 10) { logind.steps("released").count == 2 },
                    "\(logind.steps)")
            }
        }
    }

    @Test("no logind: vigil up runs and vigil status says why sleep handling is off")
    func offShown() async throws {
        let bus = try DBusDaemon()
        defer { bus.stop() }
        let (document, text) = try await upAndStatus(
            "plugins = [\"silent-engine\"]\n\n[host]\nbackground_modes = [\"audio\"]\n", systemBus: bus.address,
            until: { $0["off"] != nil })
        let off = (document["sleep"] as? [String: Any])?["off"] as? String
        #expect(off?.contains("systemd-logind (org.freedesktop.login1) is not on the system bus") == true)
        #expect(text.contains("sleep handling off: systemd-logind"), "\(text)")
    }
}
