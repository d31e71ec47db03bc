import Foundation
import Testing
import VigilTestSupport

/// `vigil run -- CMD` on the real binary: CMD runs while the host keeps its plugins alive.
@Suite("vigil run", .timeLimit(.minutes(1)))
struct RunCommandTests {
    @Test("CMD runs while the configured host is up: it can see the host in `vigil status`; its exit status is vigil's")
    func runKeepsTheHostAliveAroundTheCommand() async throws {
        let project = try HostCommandTests.Project()
        defer { project.dir.remove() }
        try """
        plugins = ["supervisor"]

        [host]
        name = "run-test"
        services = ["supervisor"]

        """.write(toFile: project.config, atomically: true, encoding: .utf8)
        try await project.trust("supervisor")

        // The supervised command asks for the host's status, then exits 7.
        let script = "\"$0\" status --json > \"$1\"; exit 7"
        let statusFile = project.dir.path + "/status.json"
        let r = try await project.vigil(
            "run", "--config", project.config, "--", "/bin/sh", "-c", script, VigilExecutable.path, statusFile)
        #expect(!r.timedOut)
        #expect(r.status == 7, "\(r.stderr)")

        let documents = try #require(
            try HostCommandTests.json(TextFile.read(statusFile)) as? [[String: Any]])
        let document = try #require(documents.first { $0["host"] as? String == "run-test" }, "\(documents)")
        let plugins = try #require(document["plugins"] as? [[String: Any]])
        #expect(plugins.first?["name"] as? String == "supervisor")
        #expect(plugins.first?["state"] as? String == "running", "\(plugins)")

        // After vigil exits, the host is gone.
        let after = try await project.vigil("status", "--config", project.config)
        #expect(after.status == 1)
    }

    @Test("usage errors exit 64 and say what to fix; nothing is started")
    func usageErrors() async throws {
        let project = try HostCommandTests.Project()
        defer { project.dir.remove() }
        let marker = project.dir.path + "/ran"
        let cases: [([String], String)] = [
            (["run"], "Give the command to run after `--`"),
            (["run", "--restart-delay-ms=-1", "--", "/bin/touch", marker], "--restart-delay-ms must be from 0"),
            (
                ["run", "--restart-delay-ms", "500", "--max-restart-delay-ms", "100", "--", "/bin/touch", marker],
                "--max-restart-delay-ms must be at least --restart-delay-ms"
            ),
            (["run", "--start-limit-burst=-2", "--", "/bin/touch", marker], "--start-limit-burst must be 0 or more"),
            (["run", "--stop-grace", "7200", "--", "/bin/touch", marker], "--stop-grace must be from 0 to 3600"),
            (["run", "--restart", "sometimes", "--", "/bin/touch", marker], "sometimes"),
        ]
        for (arguments, message) in cases {
            let r = try await RuntimeFixtures.run(VigilExecutable.path, arguments, environment: project.environment)
            #expect(r.status == 64, "\(arguments): \(r.stderr)")
            #expect(r.stderr.contains(message), "\(arguments): \(r.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: marker), "a refused invocation ran its command")
    }

    @Test("a --config that does not parse, or is missing, is refused with its location, exit 78, and CMD never runs")
    func brokenConfigIsRefused() async throws {
        let project = try HostCommandTests.Project()
        defer { project.dir.remove() }
        try "plugins = [\"supervisor\"\n[host\n".write(toFile: project.config, atomically: true, encoding: .utf8)
        let marker = project.dir.path + "/ran"
        let r = try await project.vigil("run", "--config", project.config, "--", "/bin/touch", marker)
        #expect(r.status == 78, "\(r.stderr)")
        #expect(r.stderr.contains(project.config), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: marker))

        let missing = try await project.vigil(
            "run", "--config", project.dir.path + "/nowhere/vigil.toml", "--", "/bin/touch", marker)
        #expect(missing.status == 78, "\(missing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: marker))
    }
}
