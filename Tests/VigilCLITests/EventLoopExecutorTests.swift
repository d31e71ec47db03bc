import Foundation
import Testing
import VigilTestSupport

/// `vigil` runs Swift concurrency on one swift-nio event loop thread (VigilExecutor), not on
/// libdispatch's worker pool: immediate jobs and delayed ones (`Task.sleep`) alike.
@Suite("vigil's event loop executor", .serialized, .timeLimit(.minutes(1)))
struct EventLoopExecutorTests {
    /// The names of a process's threads (`/proc/PID/task/*/comm`).
    static func threadNames(of pid: Int32) -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.compactMap { tid in
            (try? TextFile.read("/proc/\(pid)/task/\(tid)/comm"))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    /// A project whose vigil.toml runs silent-engine (trusted) with background audio declared,
    /// and its environment with `PULSE_SERVER` pointing at `server`.
    static func silentEngineProject(server: PulseAudioServer) async throws -> (
        HostCommandTests.Project, [String: String]
    ) {
        let project = try HostCommandTests.Project()
        try project.dir.write("vigil.toml", "plugins = [\"silent-engine\"]\n\n[host]\nbackground_modes = [\"audio\"]\n")
        try await project.trust("silent-engine")
        var environment = project.environment
        environment["PULSE_SERVER"] = server.address
        return (project, environment)
    }

    static func pluginState(_ project: HostCommandTests.Project) async throws -> String? {
        let status = try await project.vigil("status", "--json")
        guard status.status == 0, let hosts = try? HostCommandTests.json(status.stdout) as? [[String: Any]],
            let plugins = hosts.first?["plugins"] as? [[String: Any]]
        else { return nil }
        return plugins.first?["state"] as? String
    }

    @Test(
        "vigil up re-probes on the event loop's timers: the sound server appears late, silent-engine starts; one loop thread"
    )
    func upRunsOnOneEventLoopThread() async throws {
        let server = try PulseAudioServer()
        defer { server.shutDown() }
        // The server is not running yet: silent-engine waits for it.
        let (project, environment) = try await Self.silentEngineProject(server: server)
        defer { project.dir.remove() }
        let child = try ChildProcess(
            VigilExecutable.path, ["up", "--config", project.config, "--retry-interval", "0.3"],
            environment: environment, stdout: project.dir.path + "/up.out", stderr: project.dir.path + "/up.err")
        defer { child.terminate(grace: 2) }

        // Waiting first: the host waits for the server and re-probes after each `Task.sleep`.
        let blocked = try await project.pluginStatus("silent-engine") { $0["state"] as? String == "waiting" }
        #expect(
            blocked != nil,
            "stderr: \((try? TextFile.read(project.dir.path + "/up.err")) ?? "")")

        // A re-probe (a delayed job, run by the event loop's timer) finds the server.
        try await server.start()
        #expect(try await project.pluginStatus("silent-engine") { $0["state"] as? String == "running" } != nil)

        // Exactly one event loop thread: the singleton group, sized to one loop. No worker of a
        // libdispatch global queue ("com.apple.root.default-qos", cut to 15 characters): those are
        // the threads whose first one starts the pool monitor, and the re-probes' sleeps above
        // would have started one if delayed jobs still went to libdispatch.
        let names = Self.threadNames(of: child.pid)
        #expect(names.filter { $0.hasPrefix("NIO-SGLTN-") }.count == 1, "threads: \(names)")
        #expect(!names.contains { $0.hasSuffix("-qos") }, "threads: \(names)")

        child.signal(SIGTERM)
        let exit = await child.waitForExit(timeout: 20)
        #expect(exit.map(ChildProcess.exitCode(fromWaitStatus:)) == 0, "vigil up did not exit 0 after SIGTERM")
    }
}
