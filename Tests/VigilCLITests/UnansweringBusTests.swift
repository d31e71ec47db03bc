import Foundation
import Testing
import VigilTestSupport

/// A bus that accepts connections and never answers (``SilentSocket`` where a dbus-daemon would
/// be): no optional channel may delay the keep-alive or a stop, and each says once why it is off.
@Suite("a bus that never answers", .serialized, .timeLimit(.minutes(2)))
struct UnansweringBusTests {
    static func details(_ plugin: [String: Any]?) -> [String: Any] { plugin?["details"] as? [String: Any] ?? [:] }

    static func text(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

    /// Starts `vigil up ARGUMENTS` for `project` with `environment`; output in up.out and up.err.
    static func up(_ project: HostCommandTests.Project, _ environment: [String: String], _ arguments: [String] = [])
        throws -> ChildProcess
    {
        try ChildProcess(
            VigilExecutable.path, ["up", "--config", project.config] + arguments, environment: environment,
            stdout: project.dir.path + "/up.out", stderr: project.dir.path + "/up.err")
    }

    /// Runs `body` while `vigil up` runs `plugin` (trusted, with background audio) on `server`, with a
    /// ``SilentSocket`` at `socket` (a path in the project) named by the bus variable `variable`
    /// (`nil`: named by nothing, found where it lies).
    static func withUp(
        _ plugin: String, on server: PulseAudioServer, socket: String, variable: String?,
        _ body: (HostCommandTests.Project, SilentSocket, ChildProcess) async throws -> Void
    ) async throws {
        let project = try HostCommandTests.Project()
        defer { project.dir.remove() }
        try project.dir.write(
            "vigil.toml", "plugins = [\"\(plugin)\"]\n\n[host]\nbackground_modes = [\"audio\"]\n")
        try await project.trust(plugin)
        let silent = try SilentSocket(path: project.dir.path + "/" + socket)
        defer { silent.stop() }
        var environment = project.environment
        environment["PULSE_SERVER"] = server.address
        if let variable { environment[variable] = silent.address }
        let child = try Self.up(project, environment)
        defer { _ = child.terminate(grace: 2) }
        try await body(project, silent, child)
    }

    @Test("system bus: the plugins run at once, SIGTERM during the bus wait stops vigil up within the grace")
    func systemBusStop() async throws {
        try await PulseAudioServer.with { server in
            try await Self.withUp(
                "silent-engine", on: server, socket: "system_bus_socket", variable: "DBUS_SYSTEM_BUS_ADDRESS"
            ) { project, silent, child in
                let running = try await project.pluginStatus("silent-engine", timeout: 10) {
                    $0["state"] as? String == "running"
                }
                #expect(
                    running != nil, "silent-engine did not run within 10 s: \(Self.text(project.dir.path + "/up.out"))")
                #expect(await RuntimeFixtures.waitUntil(timeout: 10) { silent.connections >= 1 })
                // `vigil status` sees the host while its system bus is still silent.
                let status = try await project.vigil("status")
                #expect(
                    status.status == 0 && status.stdout.contains("silent-engine"), "\(status.stdout)\(status.stderr)")

                child.signal(SIGTERM)
                let exit = await child.waitForExit(timeout: 5)
                #expect(exit == 0, "vigil up did not stop within 5 s of SIGTERM (exit \(String(describing: exit)))")
                #expect(Self.text(project.dir.path + "/up.out").contains("vigil up: stopped"))
            }
        }
    }

    @Test("system bus: after the deadline, sleep handling is off and says why, once, while it retries")
    func systemBusOffSaidOnce() async throws {
        let project = try HostCommandTests.Project()
        defer { project.dir.remove() }
        try project.dir.write("vigil.toml", "plugins = []\n")
        // The default system socket's stand-in: the variable names a socket that never answers.
        let silent = try SilentSocket(path: project.dir.path + "/system_bus_socket")
        defer { silent.stop() }
        var environment = project.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = silent.address
        let child = try Self.up(project, environment, ["--verbose"])
        defer { _ = child.terminate(grace: 2) }

        let host = try await project.hostStatus(timeout: 20) {
            (($0["sleep"] as? [String: Any])?["off"] as? String)?.contains("did not answer") == true
        }
        let off = (host?["sleep"] as? [String: Any])?["off"] as? String ?? ""
        #expect(off.contains(silent.address) && off.contains("dbus-timed-out"), "\(host ?? [:])")
        let text = try await project.vigil("status").stdout
        #expect(text.contains("sleep handling off:") && text.contains("did not answer"), "\(text)")
        // It tries again (a second connection), and says it once.
        #expect(await RuntimeFixtures.waitUntil(timeout: 20) { silent.connections >= 2 })
        child.signal(SIGTERM)
        #expect(await child.waitForExit(timeout: 5) == 0)
        let said = Self.text(project.dir.path + "/up.err").split(separator: "\n").filter {
            $0.contains("sleep handling is off")
        }
        #expect(said.count == 1, "\(said)")
        #expect(said.first?.contains("trying again") == true, "\(said)")
    }

    @Test("session bus ($XDG_RUNTIME_DIR/bus): soundscape runs, its control socket answers, SIGTERM stops")
    func sessionBusSoundscape() async throws {
        try await PulseAudioServer.with { server in
            // No DBUS_SESSION_BUS_ADDRESS: the session bus is found as $XDG_RUNTIME_DIR/bus.
            try await Self.withUp("soundscape", on: server, socket: "run/bus", variable: nil) {
                project, silent, child in
                let running = try await project.pluginStatus("soundscape", timeout: 10) {
                    $0["state"] as? String == "running" && Self.details($0)["control_socket"] != nil
                }
                #expect(
                    running != nil, "soundscape did not run within 10 s: \(Self.text(project.dir.path + "/up.out"))")
                #expect(await RuntimeFixtures.waitUntil(timeout: 10) { silent.connections >= 1 })
                let volume = try await project.vigil("soundscape", "volume", "0.5")
                #expect(volume.status == 0, "\(volume.stdout)\(volume.stderr)")
                // After the deadline the status says why there is no MPRIS player.
                let off = try await project.pluginStatus("soundscape", timeout: 20) {
                    (Self.details($0)["mpris_error"] as? String)?.contains("did not answer") == true
                }
                #expect(off != nil, "\(Self.text(project.dir.path + "/up.out"))")
                #expect(Self.text(project.dir.path + "/up.out").contains("soundscape: mpris_error:"))

                child.signal(SIGTERM)
                let exit = await child.waitForExit(timeout: 5)
                #expect(exit == 0, "vigil up did not stop within 5 s of SIGTERM (exit \(String(describing: exit)))")
            }
        }
    }

    @Test("session bus: SIGTERM while soundscape's MPRIS connection is still pending stops vigil up")
    func sessionBusStopWhilePending() async throws {
        try await PulseAudioServer.with { server in
            try await Self.withUp(
                "soundscape", on: server, socket: "session_bus", variable: "DBUS_SESSION_BUS_ADDRESS"
            ) { _, silent, child in
                #expect(await RuntimeFixtures.waitUntil(timeout: 10) { silent.connections >= 1 })
                child.signal(SIGTERM)
                let exit = await child.waitForExit(timeout: 5)
                #expect(exit == 0, "vigil up did not stop within 5 s of SIGTERM (exit \(String(describing: exit)))")
            }
        }
    }

    @Test("vigil announce --policy pause-spoken --json prints one JSON document within the bus deadline")
    func announcePauseSpoken() async throws {
        try await PulseAudioServer.with { server in
            let sandbox = try CLISandbox()
            defer { sandbox.remove() }
            let silent = try SilentSocket(path: sandbox.dir.url("session_bus"))
            defer { silent.stop() }
            let prompt = sandbox.dir.url("tone.wav")
            _ = try ChildProcess.run(
                "/usr/bin/sox", ["-n", "-r", "48000", "-c", "2", prompt, "synth", "0.3", "sine", "440"])
            var environment = sandbox.environment
            for (key, value) in server.environment { environment[key] = value }
            environment["DBUS_SESSION_BUS_ADDRESS"] = silent.address
            environment["XDG_STATE_HOME"] = sandbox.dir.url("state")
            let started = ContinuousClock.now
            let output = try await VigilExecutable.run(
                ["announce", prompt, "--policy", "pause-spoken", "--json"], in: sandbox.work, environment: environment)
            let elapsed = ContinuousClock.now - started
            #expect(elapsed < .seconds(15), "vigil announce took \(elapsed)")
            #expect(silent.connections >= 1)
            let document = try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any]
            #expect(document != nil, "\(output.status) \(output.stdout) \(output.stderr)")
            // pause-spoken cannot pause anything without the bus: exit 69, saying why.
            #expect(output.status == 69, "\(output.stdout) \(output.stderr)")
            let error = document?["error"] as? [String: Any]
            #expect(error?["code"] as? String == "session-bus", "\(output.stdout)")
            #expect((error?["message"] as? String)?.contains("did not answer") == true, "\(output.stdout)")
        }
    }
}
