import Foundation
import Testing
import VigilTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// `vigil up`, `vigil run` and `vigil status` under faults, on the real binary: a stopped host,
/// signals, unread and closed output, closed descriptors, planted runtime files, a second host.
@Suite("vigil up / run / status under faults", .serialized, .timeLimit(.minutes(2)))
struct SupervisorRuntimeTests {
    typealias Project = HostCommandTests.Project

    /// A worker `w` that sleeps for 300 s.
    static let sleeper = #"{ name = "w", command = "/bin/sleep", args = ["300"] }"#

    /// Runs `body` with a ``project(workers:extra:)`` and its `vigil up`, which is terminated (and
    /// the project removed) afterwards.
    static func withHost(
        workers: [String], extra: String = "", _ body: (Project, ChildProcess) async throws -> Void
    ) async throws {
        let project = try await project(workers: workers, extra: extra)
        defer { project.dir.remove() }
        let host = try up(project)
        defer { host.terminate(grace: 5) }
        try await body(project, host)
    }

    /// A project whose `vigil.toml` runs the supervisor with `workers` (TOML inline tables).
    static func project(workers: [String], extra: String = "") async throws -> Project {
        let project = try Project()
        try """
        plugins = ["supervisor"]

        [host]
        name = "fault-test"
        services = ["supervisor"]

        [supervisor]
        notification = false
        \(extra.isEmpty ? "backoff_initial_ms = 20" : extra)
        workers = [
        \(workers.map { "  " + $0 }.joined(separator: ",\n"))
        ]

        """.write(toFile: project.config, atomically: true, encoding: .utf8)
        try await project.trust("supervisor")
        return project
    }

    /// `vigil up` for `project`, stdout to `stdout` (a file by default).
    static func up(_ project: Project, stdout: String? = nil) throws -> ChildProcess {
        try ChildProcess(
            VigilExecutable.path, ["up", "--config", project.config], environment: project.environment,
            stdout: stdout ?? project.dir.path + "/up.out", stderr: project.dir.path + "/up.err")
    }

    /// The supervisor plugin's entry of the host `pid` in `vigil status --json`, once `match` holds.
    static func supervisorStatus(
        _ project: Project, pid: Int32, timeout: Double = 20, where match: ([String: Any]) -> Bool = { _ in true }
    ) async throws -> [String: Any]? {
        try await project.pluginStatus("supervisor", pid: pid, timeout: timeout, where: match)
    }

    static func details(_ plugin: [String: Any]?) -> [String: Any] { plugin?["details"] as? [String: Any] ?? [:] }

    /// A detail as an integer, whether the document has it as a number or as text (only
    /// `statusFollowsRestarts` checks the JSON type itself).
    static func int(_ value: Any?) -> Int? {
        if let number = value as? Int { return number }
        return (value as? String).flatMap { Int($0) }
    }

    /// `F_SETPIPE_SZ` (fcntl.h, Linux; behind `_GNU_SOURCE`, so not in Swift's Glibc module).
    static let setPipeSize: Int32 = 1031

    /// Whether the output thread (`vigil-output`) of `vigil up` (`pid`) waits in the kernel to
    /// write to a full pipe (its `wchan` is the kernel's pipe write).
    static func outputBlocked(pid: Int32) -> Bool {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.contains { tid in
            let task = "/proc/\(pid)/task/\(tid)/"
            return (try? TextFile.read(task + "comm"))?.hasPrefix("vigil-output") == true
                && (try? TextFile.read(task + "wchan"))?.hasSuffix("pipe_write") == true
        }
    }

    static func stderr(_ project: Project) -> String {
        (try? TextFile.read(project.dir.path + "/up.err")) ?? ""
    }

    @Test("status follows a restart at once: new pid, restarts = 1; since is RFC 3339, numbers are numbers")
    func statusFollowsRestarts() async throws {
        try await Self.withHost(workers: [
            #"{ name = "w", command = "/bin/sleep", args = ["300"], restart = "always" }"#
        ]) { project, host in
            let first = try #require(
                try await Self.supervisorStatus(project, pid: host.pid) { Self.details($0)["worker.w.pid"] != nil },
                "\(Self.stderr(project))")
            // Numbers are JSON numbers; `since` is RFC 3339.
            let pid = try #require(Self.int(Self.details(first)["worker.w.pid"]), "\(first)")
            #expect(Self.details(first)["worker.w.pid"] is Int, "pid is not a JSON number: \(first)")
            #expect(Self.details(first)["worker.w.restarts"] as? Int == 0, "restarts is not the number 0: \(first)")
            #expect(Self.details(first)["worker.w.state"] as? String == "running")
            let parser = ISO8601DateFormatter()
            parser.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let since = (first["since"] as? String).flatMap { parser.date(from: $0) }
            #expect(
                since.map { abs($0.timeIntervalSinceNow) < 60 } == true,
                "since is not RFC 3339: \(String(describing: first["since"]))")

            kill(Int32(pid), SIGKILL)
            let after = try await Self.supervisorStatus(project, pid: host.pid, timeout: 5) {
                Self.int(Self.details($0)["worker.w.restarts"]) == 1
                    && Self.int(Self.details($0)["worker.w.pid"]) != pid
                    && Self.details($0)["worker.w.state"] as? String == "running"
            }
            let stale = after == nil ? try await Self.supervisorStatus(project, pid: host.pid, timeout: 1) : nil
            #expect(after != nil, "status still shows the dead worker: \(String(describing: stale))")
            // The human form reads the same document: a table, one worker a line.
            let human = try await project.vigil("status")
            let lines = human.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
            let header = lines.first { $0.first == "worker" } ?? []
            let row = lines.first { $0.first == "w" } ?? []
            let restarts = header.firstIndex(of: "restarts").flatMap { row.indices.contains($0) ? row[$0] : nil }
            #expect(restarts == "1", "\(human.stdout)")
        }
    }

    @Test("a host stopped (SIGSTOP) longer than a worker's watchdog does not kill the worker when it resumes")
    func hostStallIsNotAWatchdogMiss() async throws {
        let python = try #require(RuntimeFixtures.which("python3"))
        let pinger =
            #"import os,socket,time\ns=socket.socket(socket.AF_UNIX,socket.SOCK_DGRAM)\nwhile True:\n    s.sendto(b'WATCHDOG=1\\nSTATUS=tick %f' % time.time(), os.environ['NOTIFY_SOCKET'])\n    time.sleep(0.2)\n"#
        let project = try await Self.project(
            workers: ["{ name = \"p\", command = \"\(python)\", args = [\"-c\", \"\(pinger)\"], watchdog_sec = 1 }"])
        defer { project.dir.remove() }
        let host = try Self.up(project)
        defer { host.terminate(grace: 5) }
        let running = try #require(
            try await Self.supervisorStatus(project, pid: host.pid, timeout: 60) {
                (Self.details($0)["worker.p.status"] as? String)?.hasPrefix("tick") == true
            }, "\(Self.stderr(project))")
        let pid = try #require(Self.int(Self.details(running)["worker.p.pid"]))

        host.signal(SIGSTOP)
        try await Task.sleep(for: .milliseconds(2500))  // the stall itself: 2.5 × the watchdog
        host.signal(SIGCONT)
        let resumed = Date().timeIntervalSince1970
        // Positive signal first: a ping sent after the host resumed has been taken. The deadline is
        // generous: a sanitized host on a loaded machine takes seconds to catch up after SIGCONT.
        let later = try await Self.supervisorStatus(project, pid: host.pid, timeout: 60) {
            guard let text = Self.details($0)["worker.p.status"] as? String, let t = Double(text.dropFirst(5)) else {
                return false
            }
            return t > resumed + 0.5
        }
        #expect(later != nil)
        #expect(Self.int(Self.details(later)["worker.p.pid"]) == pid, "\(String(describing: later))")
        #expect(Self.int(Self.details(later)["worker.p.restarts"]) == 0, "\(String(describing: later))")
    }

    @Test("SIGHUP stops vigil up gracefully: exit 0, workers gone, status file removed")
    func sighupIsGraceful() async throws {
        try await Self.withHost(workers: [Self.sleeper]) { project, host in
            let status = try #require(
                try await Self.supervisorStatus(project, pid: host.pid) { Self.details($0)["worker.w.pid"] != nil },
                "\(Self.stderr(project))")
            let worker = try #require(Self.int(Self.details(status)["worker.w.pid"]))
            host.signal(SIGHUP)
            let exit = await host.waitForExit(timeout: 20)
            #expect(exit.map(ChildProcess.exitCode(fromWaitStatus:)) == 0, "\(Self.stderr(project))")
            #expect(kill(Int32(worker), 0) != 0)
            #expect(!FileManager.default.fileExists(atPath: project.runtimeDirectory + "/vigil/host-\(host.pid).json"))
        }
    }

    @Test("output nobody reads (a full pipe) or nobody wants (a closed pipe) never holds up or kills vigil up")
    func outputNeverBlocksShutdown() async throws {
        // A crash-looping worker makes a line of output per event: plenty to fill a pipe.
        let project = try await Self.project(
            workers: [#"{ name = "loop", command = "/bin/sh", args = ["-c", "exit 1"], restart = "always" }"#],
            extra: "backoff_initial_ms = 0\nbackoff_max_ms = 0\nstart_limit_burst = 0")
        defer { project.dir.remove() }
        let fifo = project.dir.path + "/out.fifo"
        #expect(mkfifo(fifo, 0o600) == 0)

        // 1. Full: the reader is open and never reads. The pipe is shrunk to one page, so it fills
        // after a few dozen lines however slowly the host runs (under a sanitizer, on a loaded
        // machine); it is full when vigil up's output thread waits in the kernel to write.
        var reader = open(fifo, O_RDONLY | O_NONBLOCK)
        #expect(reader >= 0)
        #expect(fcntl(reader, Self.setPipeSize, 4096) == 4096, "\(String(cString: strerror(errno)))")
        var host = try Self.up(project, stdout: fifo)
        defer { host.terminate(grace: 5) }
        let filled = await RuntimeFixtures.waitUntil(timeout: 60) { Self.outputBlocked(pid: host.pid) }
        #expect(filled, "the pipe never filled: \(Self.stderr(project))")
        host.signal(SIGTERM)
        let full = await host.waitForExit(timeout: 15)
        #expect(full.map(ChildProcess.exitCode(fromWaitStatus:)) == 0, "vigil up did not exit with a full stdout pipe")
        close(reader)

        // 2. Closed: the reader goes away while vigil up runs.
        reader = open(fifo, O_RDONLY | O_NONBLOCK)
        host = try Self.up(project, stdout: fifo)
        let up = try await Self.supervisorStatus(project, pid: host.pid) { _ in true }
        #expect(up != nil)
        close(reader)
        // It keeps running: its status still changes after the reader left.
        let firstRestarts =
            Self.int(Self.details(try await Self.supervisorStatus(project, pid: host.pid))["worker.loop.restarts"]) ?? 0
        let moving = try await Self.supervisorStatus(project, pid: host.pid, timeout: 10) {
            (Self.int(Self.details($0)["worker.loop.restarts"]) ?? 0) > firstRestarts + 10
        }
        #expect(moving != nil, "vigil up stopped working after its reader left")
        #expect(host.isRunning, "vigil up died when its output pipe closed")
        host.signal(SIGTERM)
        let closed = await host.waitForExit(timeout: 15)
        #expect(closed.map(ChildProcess.exitCode(fromWaitStatus:)) == 0)
        #expect(!FileManager.default.fileExists(atPath: project.runtimeDirectory + "/vigil/host-\(host.pid).json"))
    }

    @Test("a second vigil up of the same vigil.toml refuses and names the pid that holds it")
    func oneHostPerConfig() async throws {
        try await Self.withHost(workers: [Self.sleeper]) { project, host in
            let up = try await Self.supervisorStatus(project, pid: host.pid)
            #expect(up != nil, "\(Self.stderr(project))")
            let second = try await project.vigil("up", "--config", project.config)
            #expect(second.status == 75, "\(second.stderr)")
            #expect(second.stderr.contains("already runs \(project.config) (pid \(host.pid))"), "\(second.stderr)")
            let run = try await project.vigil("run", "--config", project.config, "--", "/bin/true")
            #expect(run.status == 75, "\(run.stderr)")
        }
    }

    @Test("vigil status does not read a planted huge status file; it says why")
    func statusReadsAreCapped() async throws {
        let project = try Project()
        defer { project.dir.remove() }
        let directory = project.runtimeDirectory + "/vigil"
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // Named after a live process (this one), 300 MB, sparse: nothing is really written.
        let planted = directory + "/host-\(getpid()).json"
        let fd = open(planted, O_WRONLY | O_CREAT, 0o600)
        #expect(ftruncate(fd, 300 << 20) == 0)
        close(fd)
        let r = try await project.vigil("status", "--json")
        #expect(r.status == 1)
        #expect(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
        #expect(r.stderr.contains("is 314572800 bytes, larger than its limit (1048576 bytes)"), "\(r.stderr)")
    }

    @Test("vigil run: stale socket directories are removed; an unsafe runtime directory is refused")
    func runRuntimeDirectory() async throws {
        let project = try Project()
        defer { project.dir.remove() }
        let base = project.runtimeDirectory + "/vigil"
        // A host killed with SIGKILL left this (pid 2^22 + 1 is above any pid_max default).
        let stale = base + "/supervisor.4194305.AbCdEf"
        try FileManager.default.createDirectory(
            atPath: stale, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        chmod(base, 0o700)
        _ = FileManager.default.createFile(atPath: stale + "/0.notify", contents: nil)
        let ok = try await Self.run(project, ["--", "/bin/true"])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(!FileManager.default.fileExists(atPath: stale), "the stale socket directory is still there")

        chmod(base, 0o755)
        // 73 (EX_CANTCREAT): the runtime directory, where `vigil run` publishes its status, cannot be used.
        let open = try await Self.run(project, ["--", "/bin/true"])
        #expect(open.status == 73, "\(open.stderr)")
        #expect(open.stderr.contains("chmod 700 \(base)"), "\(open.stderr)")
        chmod(base, 0o700)
        chown(base, 65534, 65534)
        let foreign = try await Self.run(project, ["--", "/bin/true"])
        #expect(foreign.status == 73, "\(foreign.stderr)")
        #expect(foreign.stderr.contains("belongs to uid 65534"), "\(foreign.stderr)")
        chown(base, getuid(), getgid())
    }

    @Test("vigil run -- ./bin/tool: a relative command is the file under the directory vigil run starts in")
    func runRelativeCommand() async throws {
        let project = try Project()
        defer { project.dir.remove() }
        try project.dir.write("bin/tool", "#!/bin/sh\nexit 7\n", mode: 0o755)
        let run = try await Self.run(project, ["--restart", "never", "--", "./bin/tool"])
        #expect(run.status == 7, "\(run.stderr)")
        let missing = try await Self.run(project, ["--", "./bin/absent"])
        #expect(missing.status == 127, "\(missing.stderr)")
        #expect(missing.stderr.contains("cannot execute \(project.dir.path)/./bin/absent"), "\(missing.stderr)")
    }

    @Test(
        "vigil run: closed stderr, CLI advice after a failure with a non-zero exit, a directory, a relative XDG_RUNTIME_DIR"
    )
    func runMessagesAndExits() async throws {
        let project = try Project()
        defer { project.dir.remove() }
        let closed = try await RuntimeFixtures.run(
            "/bin/sh",
            ["-c", "cd \"$1\" && exec \"$0\" run -- /bin/true 2>&-", VigilExecutable.path, project.dir.path],
            environment: project.environment)
        #expect(closed.status == 0, "vigil run with stderr closed exited \(closed.status)")

        let looping = try await Self.run(project, ["--restart", "always", "--", "/bin/true"])
        #expect(looping.status != 0, "\(looping.stderr)")
        #expect(looping.stderr.contains("start limit hit"), "\(looping.stderr)")
        #expect(looping.stderr.contains("--start-limit-burst"), "\(looping.stderr)")
        #expect(!looping.stderr.contains("keepAlive()"), "\(looping.stderr)")

        let directory = try await Self.run(project, ["--", project.dir.path])
        #expect(directory.status == 127, "\(directory.stderr)")
        #expect(directory.stderr.contains("is a directory, not a program"), "\(directory.stderr)")
        #expect(!directory.stderr.contains("Permission denied"), "\(directory.stderr)")

        var environment = project.environment
        environment["XDG_RUNTIME_DIR"] = "relative/run"
        let relative = try await RuntimeFixtures.run(
            "/bin/sh", ["-c", "cd \"$1\" && exec \"$0\" run -- /bin/true", VigilExecutable.path, project.dir.path],
            environment: environment)
        #expect(relative.status == 0, "\(relative.stderr)")
        #expect(
            relative.stderr.contains("XDG_RUNTIME_DIR=\"relative/run\" is not an absolute path"), "\(relative.stderr)")
    }

    @Test("a worker flooding STATUS= costs a few status-file writes a second, and the last state is written")
    func statusFloodIsRateLimited() async throws {
        let python = try #require(RuntimeFixtures.which("python3"))
        let flood =
            #"import os,socket,time\ns=socket.socket(socket.AF_UNIX,socket.SOCK_DGRAM)\nend=time.monotonic()+3\ni=0\nwhile time.monotonic()<end:\n    i+=1\n    s.sendto(b'STATUS=n %d' % i, os.environ['NOTIFY_SOCKET'])\ns.sendto(b'STATUS=final', os.environ['NOTIFY_SOCKET'])\ntime.sleep(300)\n"#
        let worker = "{ name = \"f\", command = \"\(python)\", args = [\"-c\", \"\(flood)\"] }"
        try await Self.withHost(workers: [worker]) { project, host in
            let file = project.runtimeDirectory + "/vigil/host-\(host.pid).json"
            let up = try await Self.supervisorStatus(project, pid: host.pid) { _ in true }
            #expect(up != nil, "\(Self.stderr(project))")
            // Every rewrite is a new file (rename) with its own modification time: count the distinct
            // (inode, mtime) pairs seen during two seconds of the flood.
            var versions = Set<[Int]>()
            let until = Date().addingTimeInterval(2)
            while Date() < until {
                var info = stat()
                if stat(file, &info) == 0 {
                    versions.insert([Int(info.st_ino), info.st_mtim.tv_sec, info.st_mtim.tv_nsec])
                }
                try await Task.sleep(for: .milliseconds(1))
            }
            #expect(versions.count <= 20, "\(versions.count) status-file writes in 2 s")
            let last = try await Self.supervisorStatus(project, pid: host.pid, timeout: 10) {
                Self.details($0)["worker.f.status"] as? String == "final"
            }
            #expect(last != nil, "the last STATUS= never reached the status file")
        }
    }

    @Test("on a terminal, Ctrl-C's echoed ^C does not shift the redrawn status block (no overlapping lines)")
    func liveBlockAfterControlC() async throws {
        let python = try #require(RuntimeFixtures.which("python3"))
        let project = try await Self.project(workers: [Self.sleeper])
        defer { project.dir.remove() }
        // vigil up on a pseudo-terminal; once its block shows `running`, Ctrl-C is typed (the
        // terminal echoes ^C and sends SIGINT); everything it printed is saved.
        let transcript = project.dir.path + "/tty.out"
        let driver = """
            import os, pty, select, sys, time
            pid, fd = pty.fork()
            if pid == 0:
                os.execv(sys.argv[1], ["vigil", "up", "--config", sys.argv[2]])
            out = b""
            def pump(seconds, until=None):
                global out
                end = time.time() + seconds
                while time.time() < end and not (until and until in out):
                    r, _, _ = select.select([fd], [], [], 0.05)
                    if r:
                        try:
                            data = os.read(fd, 65536)
                        except OSError:
                            return
                        if not data:
                            return
                        out += data
            pump(20, b"running")
            os.write(fd, b"\\x03")
            pump(20, b"vigil up: stopped")
            os.waitpid(pid, 0)
            open(sys.argv[3], "wb").write(out)
            """
        let r = try await RuntimeFixtures.run(
            python, ["-c", driver, VigilExecutable.path, project.config, transcript], environment: project.environment,
            timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        let text = try String(decoding: Data(contentsOf: URL(fileURLWithPath: transcript)), as: UTF8.self)
        #expect(text.contains("vigil up: stopped"), "\(text)")
        #expect(text.contains("^C"), "the terminal did not echo ^C: \(text.debugDescription)")
        // After the echo the cursor is two columns in: every redraw returns to column 0 first.
        #expect(!text.contains("^C\u{1B}["), "redrawn from the ^C column: \(text.debugDescription)")
        #expect(text.contains("^C\r\u{1B}["), "\(text.debugDescription)")
    }

    /// `vigil run ARGS` from the project's directory (no vigil.toml there).
    static func run(_ project: Project, _ arguments: [String]) async throws -> RuntimeFixtures.Output {
        try await RuntimeFixtures.run(
            "/bin/sh",
            ["-c", "cd \"$1\" && shift && exec \"$0\" run \"$@\"", VigilExecutable.path, project.dir.path] + arguments,
            environment: project.environment)
    }
}
