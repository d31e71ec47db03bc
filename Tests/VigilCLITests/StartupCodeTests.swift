import Foundation
import Testing
import VigilTestSupport

/// `vigil up` drops its mappings of the executable's start-up code once every plugin settled
/// (issue 16, memory): the code stays correct (it is mapped again when it runs) and what the
/// process keeps mapped of it falls to what the running host uses.
@Suite("vigil up releases its start-up code", .serialized, .timeLimit(.minutes(1)))
struct StartupCodeTests {
    /// Size and resident size (kB) of `pid`'s executable mapping of `binary` (`/proc/PID/smaps`).
    static func codeMapping(of pid: Int32, binary: String) throws -> (size: Int, rss: Int)? {
        // Read to the end: Foundation's `String(contentsOfFile:)` stops after about 4 KB of a
        // /proc file (size 0), which holds the executable's mapping only while it comes first
        // (under ThreadSanitizer some 480 mappings come before it).
        let smaps = try TextFile.read("/proc/\(pid)/smaps")
        var inCode = false
        var size = 0
        for line in smaps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if let first = fields.first, first.contains("-"), fields.count >= 6, first.first?.isHexDigit == true {
                inCode = fields[1] == "r-xp" && fields.last.map(String.init) == binary
            } else if inCode, fields.first == "Size:" {
                size = Int(fields[1]) ?? 0
            } else if inCode, fields.first == "Rss:" {
                return (size, Int(fields[1]) ?? 0)
            }
        }
        return nil
    }

    @Test(
        "after silent-engine runs, the executable's code is mapped again only as far as it runs; the host keeps working"
    )
    func releasesStartupCode() async throws {
        let server = try PulseAudioServer()
        defer { server.shutDown() }
        try await server.start()
        let (project, environment) = try await EventLoopExecutorTests.silentEngineProject(server: server)
        defer { project.dir.remove() }
        let errors = project.dir.path + "/up.err"
        let child = try ChildProcess(
            VigilExecutable.path, ["up", "--config", project.config, "--verbose"],
            environment: environment, stdout: project.dir.path + "/up.out", stderr: errors)
        defer { child.terminate(grace: 2) }
        let binary = URL(fileURLWithPath: VigilExecutable.path).resolvingSymlinksInPath().path

        // The positive signal: the host says it released the mappings once silent-engine ran.
        var log = ""
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, child.isRunning, !log.contains("of start-up code") {
            try await Task.sleep(for: .milliseconds(100))
            log = (try? TextFile.read(errors)) ?? ""
        }
        #expect(log.contains("released the mappings of"), "stderr: \(log)")
        #expect(try await EventLoopExecutorTests.pluginState(project) == "running")

        // The audio keeps flowing on code mapped again on demand: a fraction of the executable.
        try await Task.sleep(for: .seconds(2))
        let code = try #require(try Self.codeMapping(of: child.pid, binary: binary), "no mapping of \(binary)")
        // The whole code mapping was released (the log says how much), and what was mapped again
        // since is a fraction of it (a debug build runs more of its code than a release build).
        let released = log.split(separator: "released the mappings of ").last?.split(separator: " ").first
        let releasedKiB = try #require(released.flatMap { Int($0) }, "stderr: \(log)")
        #expect(releasedKiB * 10 >= code.size * 9, "released \(releasedKiB) KiB of a \(code.size) kB mapping")
        #expect(code.rss * 2 < code.size, "\(code.rss) kB of the \(code.size) kB code mapping resident")
        #expect(try await EventLoopExecutorTests.pluginState(project) == "running")
        #expect(try await project.vigil("status").status == 0)

        child.signal(SIGTERM)
        let exit = await child.waitForExit(timeout: 20)
        #expect(exit.map(ChildProcess.exitCode(fromWaitStatus:)) == 0, "vigil up did not exit 0 after SIGTERM")
    }
}
