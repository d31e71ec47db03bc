import Foundation
import Testing
import VigilTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A host that cannot keep anything alive says so and exits 78 (`vigil up` and a library host),
/// telling systemd why; a host partly up says which plugins are not; one host per `vigil.toml`
/// in library hosts too; README's library snippet (run here as the `LibraryHost` executable)
/// runs until a signal, and its log lines carry the host's name. Real processes throughout.
@Suite("host exit status, STATUS= and the host lock", .timeLimit(.minutes(2)))
struct HostExitTests {
    typealias Project = HostCommandTests.Project

    /// `LibraryHost`, built beside `vigil`.
    static var libraryHost: String { (VigilExecutable.path as NSString).deletingLastPathComponent + "/LibraryHost" }

    /// `vigil up` (or another program) in `project`, with output to files and, when given, a
    /// NOTIFY_SOCKET to play systemd's side.
    static func start(
        _ executable: String, _ arguments: [String], in project: Project, name: String, notify: NotifySocket? = nil,
        environment extra: [String: String] = [:]
    ) throws -> ChildProcess {
        var environment = project.environment
        environment["NOTIFY_SOCKET"] = notify?.path
        environment.merge(extra) { _, new in new }
        // LibraryHost finds vigil.toml from its working directory, as an app does.
        return try ChildProcess(
            "/usr/bin/env", ["-C", project.dir.path, "--", executable] + arguments, environment: environment,
            stdout: project.dir.path + "/\(name).out", stderr: project.dir.path + "/\(name).err")
    }

    static func output(_ project: Project, _ file: String) -> String {
        (try? TextFile.read(project.dir.path + "/" + file)) ?? ""
    }

    /// Every datagram `socket` gets within `timeout` seconds of the first, until `stop` holds.
    static func datagrams(_ socket: NotifySocket, timeout: Double, until stop: (String) -> Bool) -> [String] {
        var all: [String] = []
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline, let next = socket.receive(timeout: deadline.timeIntervalSinceNow) {
            all.append(next)
            if stop(next) { break }
        }
        return all
    }

    /// A vigil.toml that runs the supervisor with one long-sleeping worker (`plugins` first).
    static func supervised(_ plugins: [String] = ["supervisor"], name: String = "exit-test") -> String {
        """
        plugins = [\(plugins.map { "\"\($0)\"" }.joined(separator: ", "))]

        [host]
        name = "\(name)"
        services = ["supervisor"]

        [supervisor]
        notification = false
        workers = [{ name = "napper", command = "sleep", args = ["300"] }]

        """
    }

    @Test(
        "up: no activated plugin can run (untrusted, or blocked by a declaration) → exit 78 at once, STATUS= says why, no READY=1",
        arguments: ["untrusted", "undeclared"])
    func upRefusesWhenNothingCanRun(_ variant: String) async throws {
        let project = try Project()
        defer { project.dir.remove() }
        if variant == "untrusted" {
            try project.dir.write("vigil.toml", Self.supervised())
        } else {
            // Trusted, but `services = ["supervisor"]` is missing: blocked by a declaration.
            try project.dir.write(
                "vigil.toml",
                Self.supervised().replacingOccurrences(of: "services = [\"supervisor\"]\n", with: ""))
            try await project.trust("supervisor")
        }
        let notify = try NotifySocket(path: project.dir.path + "/notify")
        let up = try Self.start(
            VigilExecutable.path, ["up", "--config", project.config], in: project, name: "up", notify: notify)
        defer { up.terminate(grace: 2) }
        let status = await up.waitForExit(timeout: 20)
        let stderr = Self.output(project, "up.err")
        #expect(status.map(ChildProcess.exitCode(fromWaitStatus:)) == 78, "\(stderr)")
        #expect(stderr.contains("no activated plugin can run"), "\(stderr)")
        #expect(stderr.contains("supervisor"), "\(stderr)")
        let sent = Self.datagrams(notify, timeout: 2) { $0.contains("STATUS=") }
        #expect(sent.contains { $0.contains("STATUS=no activated plugin can run") }, "\(sent)")
        #expect(!sent.contains { $0.split(separator: "\n").contains("READY=1") }, "\(sent)")
    }

    @Test("up: a host partly up sends READY=1 with STATUS= naming the plugin that does not run, and keeps running")
    func upPartlyUp() async throws {
        let project = try Project()
        defer { project.dir.remove() }
        // supervisor runs its worker; silent-engine is not trusted, so it fails.
        try project.dir.write("vigil.toml", Self.supervised(["supervisor", "silent-engine"]))
        try await project.trust("supervisor")
        let notify = try NotifySocket(path: project.dir.path + "/notify")
        let up = try Self.start(
            VigilExecutable.path, ["up", "--config", project.config], in: project, name: "up", notify: notify)
        defer { up.terminate(grace: 2) }
        let sent = Self.datagrams(notify, timeout: 20) { $0.contains("of 2 plugins running") }
        let partial = try #require(
            sent.first { $0.contains("of 2 plugins running") }, "\(sent); \(Self.output(project, "up.err"))")
        #expect(partial.split(separator: "\n").contains("READY=1"), "\(partial)")
        #expect(partial.contains("STATUS=exit-test: 1 of 2 plugins running; silent-engine failed: "), "\(partial)")
        #expect(up.isRunning, "a host partly up keeps running: \(Self.output(project, "up.err"))")
        #expect(ChildProcess.exitCode(fromWaitStatus: up.terminate(grace: 5)) == 0)
    }

    @Test(
        "partly up: the warning naming the plugin that does not run is logged once per start, library host and vigil up",
        arguments: ["library", "up"])
    func partlyUpWarnedOnce(_ variant: String) async throws {
        let project = try Project()
        defer { project.dir.remove() }
        try project.dir.write("vigil.toml", Self.supervised(["supervisor", "silent-engine"]))
        try await project.trust("supervisor")
        let notify = try NotifySocket(path: project.dir.path + "/notify")
        // The library host reports its start from keepAlive() and again from run(): both reports
        // reach systemd (READY=1 with STATUS=), the log has the warning once.
        let (executable, arguments, reports) =
            variant == "library"
            ? (Self.libraryHost, [], 2) : (VigilExecutable.path, ["up", "--verbose", "--config", project.config], 1)
        let host = try Self.start(executable, arguments, in: project, name: "host", notify: notify)
        defer { host.terminate(grace: 2) }
        var partial: [String] = []
        let deadline = Date().addingTimeInterval(20)
        while partial.count < reports, Date() < deadline {
            partial += Self.datagrams(notify, timeout: deadline.timeIntervalSinceNow) {
                $0.contains("of 2 plugins running")
            }.filter { $0.contains("of 2 plugins running") }
        }
        #expect(partial.count == reports, "\(partial); \(Self.output(project, "host.err"))")
        #expect(ChildProcess.exitCode(fromWaitStatus: host.terminate(grace: 5)) == 0)
        let lines = Self.output(project, "host.err").split(separator: "\n")
        let warned = lines.filter { $0.contains("exit-test: 1 of 2 plugins running; silent-engine failed: ") }
        #expect(warned.count == 1, "\(lines)")
    }

    @Test("up: no vigil.toml, or one that does not parse, is a configuration that cannot work: 78")
    func upBadConfiguration() async throws {
        let project = try Project()
        defer { project.dir.remove() }
        let missing = try await project.vigil("up", "--config", project.dir.path + "/none.toml")
        #expect(missing.status == 78, "\(missing.stderr)")
        #expect(missing.stderr.hasPrefix("error: "), "\(missing.stderr)")
        try project.dir.write("vigil.toml", "plugins = [\n")
        let broken = try await project.vigil("up", "--config", project.config)
        #expect(broken.status == 78, "\(broken.stderr)")
        #expect(broken.stderr.contains("\(project.config):"), "\(broken.stderr)")
    }

    @Test("library host: a second process on the same vigil.toml fails with config-in-use (75); `vigil up` too")
    func libraryHostLock() async throws {
        let project = try Project()
        defer { project.dir.remove() }
        try project.dir.write("vigil.toml", Self.supervised())
        try await project.trust("supervisor")
        let first = try Self.start(Self.libraryHost, [], in: project, name: "first")
        defer { first.terminate(grace: 5) }
        let running = try await project.pluginStatus("supervisor", pid: first.pid) {
            $0["state"] as? String == "running"
        }
        #expect(running != nil, "\(Self.output(project, "first.err"))")

        let second = try Self.start(Self.libraryHost, [], in: project, name: "second")
        defer { second.terminate(grace: 2) }
        let status = await second.waitForExit(timeout: 20)
        let stderr = Self.output(project, "second.err")
        #expect(status.map(ChildProcess.exitCode(fromWaitStatus:)) == 75, "\(stderr)")
        #expect(stderr.contains("another Vigil host already runs \(project.config) (pid \(first.pid))"), "\(stderr)")
        #expect(!stderr.contains("Current stack trace"), "\(stderr)")

        // The CLI's host meets the same lock, taken by the library host.
        let up = try await project.vigil("up", "--config", project.config)
        #expect(up.status == 75, "\(up.stderr)")
        #expect(up.stderr.contains("(pid \(first.pid))"), "\(up.stderr)")
        #expect(first.isRunning)

        // Once the first is gone, the file is free again.
        #expect(ChildProcess.exitCode(fromWaitStatus: first.terminate(grace: 5)) == 0)
        let third = try Self.start(Self.libraryHost, [], in: project, name: "third")
        defer { third.terminate(grace: 5) }
        #expect(
            try await project.pluginStatus("supervisor", pid: third.pid) { $0["state"] as? String == "running" } != nil)
    }

    @Test("README's library snippet is LibraryHost's main.swift, verbatim: what these tests run is what it shows")
    func readmeSnippetIsTheHost() throws {
        let readme = try TextFile.read(VigilExecutable.packageRoot + "/README.md")
        let host = try TextFile.read(VigilExecutable.packageRoot + "/Tests/Hosts/LibraryHost/main.swift")
        #expect(readme.contains("```swift\n" + host + "```\n"))
    }

    @Test("README's snippet: no vigil.toml → a message and 78, no backtrace; nothing can run → 78 with the reasons")
    func librarySnippetRefusals() async throws {
        let project = try Project()
        defer { project.dir.remove() }
        let none = try Self.start(Self.libraryHost, [], in: project, name: "none")
        defer { none.terminate(grace: 2) }
        let noneStatus = await none.waitForExit(timeout: 20)
        let noneErr = Self.output(project, "none.err")
        #expect(noneStatus.map(ChildProcess.exitCode(fromWaitStatus:)) == 78, "\(noneErr)")
        #expect(noneErr.hasPrefix("my-app: "), "\(noneErr)")
        #expect(noneErr.contains("vigil.toml"), "\(noneErr)")
        #expect(!noneErr.contains("Current stack trace") && !noneErr.contains("Fatal error"), "\(noneErr)")

        try project.dir.write("vigil.toml", Self.supervised(name: "kiosk"))  // supervisor not trusted
        let notify = try NotifySocket(path: project.dir.path + "/notify")
        let refused = try Self.start(Self.libraryHost, [], in: project, name: "refused", notify: notify)
        defer { refused.terminate(grace: 2) }
        let refusedStatus = await refused.waitForExit(timeout: 20)
        let refusedErr = Self.output(project, "refused.err")
        #expect(refusedStatus.map(ChildProcess.exitCode(fromWaitStatus:)) == 78, "\(refusedErr)")
        #expect(refusedErr.contains("no activated plugin can run, so kiosk keeps nothing alive"), "\(refusedErr)")
        let sent = Self.datagrams(notify, timeout: 2) { $0.contains("STATUS=") }
        #expect(sent.contains { $0.contains("STATUS=no activated plugin can run") }, "\(sent)")
        // The library host's log lines carry the host's name ([host] name), not `vigil`.
        let log = Self.output(project, "refused.out") + refusedErr
        // swift-log's default handler writes `TIMESTAMP LEVEL LABEL: …`.
        #expect(log.contains(" error kiosk: plugin.name=supervisor "), "\(log)")
        #expect(log.contains(" critical kiosk: "), "\(log)")
        #expect(!log.contains(" vigil: "), "\(log)")
    }

    @Test("README's snippet runs until SIGTERM (it does not return at once), then stops its plugins and exits 0")
    func librarySnippetRunsUntilSignal() async throws {
        let project = try Project()
        defer { project.dir.remove() }
        try project.dir.write("vigil.toml", Self.supervised())
        try await project.trust("supervisor")
        let host = try Self.start(Self.libraryHost, [], in: project, name: "host")
        defer { host.terminate(grace: 5) }
        let running = try await project.pluginStatus("supervisor", pid: host.pid) {
            ($0["details"] as? [String: Any])?["worker.napper.state"] as? String == "running"
        }
        #expect(running != nil, "\(Self.output(project, "host.err"))")
        #expect(host.isRunning)
        #expect(
            ChildProcess.exitCode(fromWaitStatus: host.terminate(grace: 5)) == 0, "\(Self.output(project, "host.err"))")
    }

    @Test(
        "vigil run -- CMD: `vigil status` shows CMD's state, pid, restarts, readiness and STATUS= text (text and --json)",
        arguments: [false, true])
    func runShowsCommand(_ withConfig: Bool) async throws {
        let project = try Project()
        defer { project.dir.remove() }
        if withConfig {
            try project.dir.write("vigil.toml", "plugins = []\n")
        }
        // CMD says READY=1 and a STATUS= text from its own pid, then sleeps.
        let script =
            "import os,socket,time\ns=socket.socket(socket.AF_UNIX,socket.SOCK_DGRAM)\n"
            + "s.sendto(b'READY=1\\nSTATUS=serving 3 keys', os.environ['NOTIFY_SOCKET'])\ntime.sleep(300)\n"
        let run = try Self.start(
            VigilExecutable.path, ["run", "--", "/usr/bin/python3", "-c", script], in: project, name: "run")
        defer { run.terminate(grace: 5) }
        let plugin = try await project.pluginStatus("run", pid: run.pid) {
            ($0["details"] as? [String: Any])?["worker.python3.status"] as? String == "serving 3 keys"
        }
        let details = try #require(
            plugin?["details"] as? [String: Any], "\(Self.output(project, "run.err"))")
        #expect(details["worker.python3.state"] as? String == "ready", "\(details)")
        // `vigil status --json` gives a plain decimal detail (pid, restarts) as a JSON number.
        #expect(details["worker.python3.restarts"] as? Int == 0, "\(details)")
        let pid = try #require((details["worker.python3.pid"] as? Int).map { Int32($0) }, "\(details)")
        #expect(pid > 0 && kill(pid, 0) == 0)
        #expect(plugin?["state"] as? String == "running")
        let text = try await project.vigil("status")
        #expect(text.status == 0, "\(text.stderr)")
        let row = text.stdout.split(separator: "\n").first { $0.contains("python3") && $0.contains("ready") }
        #expect(row?.contains("\(pid)") == true, "\(text.stdout)")
        #expect(row?.contains("serving 3 keys") == true, "\(text.stdout)")
    }
}
