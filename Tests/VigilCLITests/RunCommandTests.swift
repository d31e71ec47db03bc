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
            try HostCommandTests.json(String(contentsOfFile: statusFile, encoding: .utf8)) as? [[String: Any]])
        let document = try #require(documents.first { $0["host"] as? String == "run-test" }, "\(documents)")
        let plugins = try #require(document["plugins"] as? [[String: Any]])
        #expect(plugins.first?["name"] as? String == "supervisor")
        #expect(plugins.first?["state"] as? String == "running", "\(plugins)")

        // After vigil exits, the host is gone.
        let after = try await project.vigil("status", "--config", project.config)
        #expect(after.status == 1)
    }
}
