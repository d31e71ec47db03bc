import Foundation
import Testing
import VigilTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The supervisor at its limits, on the real binary: descriptor limits set with `prlimit`, one
/// worker's cgroup going wrong among many, a command stopped by its terminal (a real pty), and
/// what `vigil run` says when its command ends.
@Suite("vigil up / run at the supervisor's limits", .serialized, .timeLimit(.minutes(3)))
struct SupervisorLimitTests {
    typealias Project = HostCommandTests.Project
    typealias Runtime = SupervisorRuntimeTests

    /// `count` workers named `w0`… that sleep for 300 s.
    static func sleepers(_ count: Int) -> [String] {
        (0..<count).map { #"{ name = "w\#($0)", command = "/bin/sleep", args = ["300"] }"# }
    }

    /// `vigil up` for `project` under `prlimit --nofile=SOFT:HARD`, started with descriptors 0–2
    /// only (the test runner's own must not count against the limit), then `inherited` more open
    /// on /dev/null, as a parent that leaks its descriptors would leave them.
    static func up(_ project: Project, nofile: String, inherited: Int = 0) throws -> ChildProcess {
        try ChildProcess(
            RuntimeFixtures.which("python3") ?? "python3",
            try limited(nofile: nofile, inherited: inherited, ["up", "--config", project.config]),
            environment: project.environment, stdout: project.dir.path + "/up.out",
            stderr: project.dir.path + "/up.err")
    }

    /// The arguments after `python3` that run `vigil ARGUMENTS` under `prlimit --nofile=NOFILE`
    /// with descriptors 0–2 and `inherited` more open.
    static func limited(nofile: String, inherited: Int = 0, _ arguments: [String]) throws -> [String] {
        let prlimit = try #require(RuntimeFixtures.which("prlimit"), "prlimit (util-linux) is needed")
        _ = try #require(RuntimeFixtures.which("python3"))
        let closing = """
            import os, sys
            os.closerange(3, 1 << 20)
            for _ in range(int(sys.argv[1])): os.set_inheritable(os.open("/dev/null", os.O_RDONLY), True)
            os.execv(sys.argv[2], sys.argv[2:])
            """
        return ["-c", closing, String(inherited), prlimit, "--nofile=" + nofile, "--", VigilExecutable.path]
            + arguments
    }

    /// What `vigil` says when it starts without the descriptors it needs (exit 72).
    static let outOfDescriptors = "vigil is out of file descriptors"

    static func output(_ project: Project) -> String {
        ((try? TextFile.read(project.dir.path + "/up.out")) ?? "")
            + ((try? TextFile.read(project.dir.path + "/up.err")) ?? "")
    }

    /// The workers `w0`…`w(count-1)` all running, with their pids and restart counts.
    static func allRunning(_ plugin: [String: Any], _ count: Int) -> Bool {
        let details = Runtime.details(plugin)
        return (0..<count).allSatisfy {
            details["worker.w\($0).state"] as? String == "running" && details["worker.w\($0).pid"] != nil
        }
    }

    /// The cgroup v2 path of `pid` (the `0::` line of /proc/PID/cgroup), or "".
    static func cgroup(of pid: Int) -> String {
        let text = (try? TextFile.read("/proc/\(pid)/cgroup")) ?? ""
        return text.split(separator: "\n").first { $0.hasPrefix("0::") }.map { String($0.dropFirst(3)) } ?? ""
    }

    /// Where the cgroup v2 file system is mounted.
    static func cgroup2Mount() -> String? {
        let text = (try? TextFile.read("/proc/self/mountinfo")) ?? ""
        for line in text.split(separator: "\n") {
            let halves = line.components(separatedBy: " - ")
            guard halves.count == 2, halves[1].hasPrefix("cgroup2 ") else { continue }
            let fields = halves[0].split(separator: " ")
            if fields.count >= 5 { return String(fields[4]) }
        }
        return nil
    }

    @Test("under prlimit --nofile=64:64, vigil up with 12 workers keeps running: every worker runs, no crash")
    func twelveWorkersUnderSixtyFour() async throws {
        let project = try await Runtime.project(workers: Self.sleepers(12))
        defer { project.dir.remove() }
        let host = try Self.up(project, nofile: "64:64")
        defer { host.terminate(grace: 5) }
        let status = try await Runtime.supervisorStatus(project, pid: host.pid, timeout: 30) {
            Self.allRunning($0, 12)
        }
        #expect(status != nil, "\(Self.output(project))")
        #expect(host.isRunning, "vigil up died: \(Self.output(project))")
        let descriptors = Runtime.details(status)["descriptors"] as? String ?? ""
        #expect(descriptors.contains("descriptor limit 64"), "\(descriptors)")
        #expect(descriptors.contains("12 configured"), "\(descriptors)")
        host.signal(SIGTERM)
        let exit = await host.waitForExit(timeout: 20)
        #expect(exit.map(ChildProcess.exitCode(fromWaitStatus:)) == 0, "\(Self.output(project))")
    }

    @Test(
        "under each descriptor limit from 19 to 48 (and 56, 64), vigil up with 12 workers never crashes and says what is wrong"
    )
    func everyLowLimit() async throws {
        let project = try await Runtime.project(workers: Self.sleepers(12))
        defer { project.dir.remove() }
        var outcomes: [String] = []
        var sentinelWarnings = 0
        // Every limit up to where all 12 run: the sentinel's start needs 3 free descriptors, so
        // about three consecutive limits hit it. Below 19 (16 free), vigil refuses to start at all
        // (`startUpUnderEveryLimit`).
        for limit in Array(19...48) + [56, 64] {
            unlink(project.dir.path + "/up.out")
            unlink(project.dir.path + "/up.err")
            let host = try Self.up(project, nofile: "\(limit):\(limit)")
            // Settled: every worker runs, or the plugin is no longer starting (failed or degraded).
            var status: [String: Any]?
            let deadline = Date().addingTimeInterval(20)
            while host.isRunning, Date() < deadline {
                status = try await Runtime.supervisorStatus(project, pid: host.pid, timeout: 0.5) { plugin in
                    Self.allRunning(plugin, 12)
                        || !["starting", "stopped"].contains(plugin["state"] as? String ?? "stopped")
                }
                if status != nil { break }
            }
            let alive = host.isRunning
            host.signal(SIGTERM)
            let exit = await host.waitForExit(timeout: 20) ?? host.terminate(grace: 1)
            let code = ChildProcess.exitCode(fromWaitStatus: exit)
            let text = Self.output(project)
            if text.contains("cannot start the sentinel") { sentinelWarnings += 1 }
            #expect(alive, "limit \(limit): vigil up died (exit \(code)): \(text)")
            #expect(code == 0, "limit \(limit): exit \(code): \(text)")
            guard let status else {
                outcomes.append("\(limit): no status")
                continue
            }
            if Self.allRunning(status, 12) {
                outcomes.append("\(limit): all running")
            } else {
                // The workers that could not start, or the supervisor itself, say why and how to fix it.
                #expect(text.contains("descriptor limit"), "limit \(limit): \(text)")
                outcomes.append("\(limit): \(status["state"] as? String ?? "?")")
            }
        }
        #expect(outcomes.contains { $0.hasSuffix("all running") }, "\(outcomes)")
        #expect(outcomes.contains { $0.hasSuffix("failed") }, "\(outcomes)")
        #expect(sentinelWarnings > 0, "no limit hit the sentinel's start: \(outcomes)")
    }

    @Test(
        "under every descriptor limit from 3 to 40, with and without inherited descriptors, vigil up says what is wrong or runs, and SIGTERM always stops it: never a trap, never a hang"
    )
    func startUpUnderEveryLimit() async throws {
        let project = try await Runtime.project(workers: Self.sleepers(3))
        defer { project.dir.remove() }
        var outcomes: [String] = []
        for inherited in [0, 8] {
            for limit in 3...40 {
                unlink(project.dir.path + "/up.out")
                unlink(project.dir.path + "/up.err")
                let host = try Self.up(project, nofile: "\(limit):\(limit)", inherited: inherited)
                // Settled: vigil up exited, or it shows the supervisor's first state (the plugin
                // line comes after the header).
                let settled = await RuntimeFixtures.waitUntil(timeout: 10) {
                    !host.isRunning || Self.output(project).contains("supervisor: ")
                }
                let exitedAtOnce = !host.isRunning
                host.signal(SIGTERM)
                let exit = await host.waitForExit(timeout: 10)
                let code = ChildProcess.exitCode(fromWaitStatus: exit ?? host.terminate(grace: 0.5))
                let text = Self.output(project)
                let label = "limit \(limit), \(inherited) inherited"
                #expect(settled, "\(label): vigil up neither ran nor exited in 10 s: \(text)")
                #expect(exit != nil, "\(label): SIGTERM did not stop vigil up within 10 s: \(text)")
                #expect(code < 128 || code == 143, "\(label): vigil up died (exit \(code)): \(text)")
                if exitedAtOnce, text.contains("error while loading shared libraries") {
                    // The dynamic loader itself cannot open the libraries: nothing of vigil ran.
                    #expect(code == 127, "\(label): \(text)")
                    outcomes.append("\(limit)/\(inherited): loader")
                } else if exitedAtOnce {
                    #expect(code == 72, "\(label): exit \(code): \(text)")
                    #expect(text.contains(Self.outOfDescriptors), "\(label): \(text)")
                    #expect(text.contains("ulimit -n") && text.contains("LimitNOFILE="), "\(label): \(text)")
                    outcomes.append("\(limit)/\(inherited): refused")
                } else {
                    #expect(code == 0, "\(label): exit \(code) after SIGTERM: \(text)")
                    #expect(text.contains("vigil up: stopped"), "\(label): \(text)")
                    outcomes.append("\(limit)/\(inherited): ran")
                }
            }
        }
        // Both ends of the sweep were reached: the refusal below the need, a running host above it.
        #expect(outcomes.contains("20/0: ran"), "\(outcomes)")
        #expect(outcomes.contains("10/0: refused"), "\(outcomes)")
        #expect(outcomes.contains("20/8: refused"), "\(outcomes)")
        #expect(outcomes.contains("26/8: refused"), "\(outcomes)")
        #expect(outcomes.contains("40/8: ran"), "\(outcomes)")
    }

    @Test("vigil status --json under too few descriptors prints one JSON document with the error, exit 72")
    func statusJSONUnderLowLimits() async throws {
        let project = try Project()
        defer { project.dir.remove() }
        let python = try #require(RuntimeFixtures.which("python3"))
        for limit in [4, 8, 12, 16] {
            let r = try await RuntimeFixtures.run(
                python, try Self.limited(nofile: "\(limit):\(limit)", ["status", "--json"]),
                environment: project.environment, timeout: 20)
            #expect(r.status == 72, "limit \(limit): exit \(r.status): \(r.stdout) \(r.stderr)")
            let document = try? HostCommandTests.json(r.stdout) as? [String: Any]
            let error = document?["error"] as? [String: Any]
            #expect(document?["ok"] as? Bool == false, "limit \(limit): \(r.stdout)")
            #expect(error?["code"] as? String == "out-of-descriptors", "limit \(limit): \(r.stdout)")
            #expect((error?["message"] as? String)?.contains("ulimit -n") == true, "limit \(limit): \(r.stdout)")
        }
        // With enough, the command runs as usual: no host runs here (exit 1), the document an array.
        let r = try await RuntimeFixtures.run(
            python, try Self.limited(nofile: "64:64", ["status", "--json"]), environment: project.environment,
            timeout: 20)
        #expect(r.status == 1, "\(r.stdout) \(r.stderr)")
        #expect((try? HostCommandTests.json(r.stdout)) is [Any], "\(r.stdout)")
    }

    @Test(
        "vigil up raises its soft descriptor limit to the hard one and says how many workers it allows; workers keep the original"
    )
    func softLimitRaised() async throws {
        let project = try await Runtime.project(workers: [
            #"{ name = "w", command = "/bin/sh", args = ["-c", "ulimit -n > soft; exec sleep 300"], working_directory = "WD" }"#
        ])
        defer { project.dir.remove() }
        let config = try TextFile.read(project.config).replacing("\"WD\"", with: "\"\(project.dir.path)\"")
        try config.write(toFile: project.config, atomically: true, encoding: .utf8)
        let host = try Self.up(project, nofile: "1000:4000")
        defer { host.terminate(grace: 5) }
        let status = try #require(
            try await Runtime.supervisorStatus(project, pid: host.pid, timeout: 30) {
                Runtime.details($0)["worker.w.pid"] != nil
            }, "\(Self.output(project))")
        let descriptors = Runtime.details(status)["descriptors"] as? String ?? ""
        #expect(descriptors.contains("descriptor limit 4000 (raised from 1000): room for about"), "\(descriptors)")
        let limits = (try? TextFile.read("/proc/\(host.pid)/limits")) ?? ""
        let openFiles = limits.split(separator: "\n").first { $0.hasPrefix("Max open files") } ?? ""
        #expect(openFiles.split(separator: " ").dropFirst(3).first == "4000", "\(openFiles)")
        let soft = project.dir.path + "/soft"
        #expect(await RuntimeFixtures.waitUntil(timeout: 10) { FileManager.default.fileExists(atPath: soft) })
        #expect((try? TextFile.read(soft))?.trimmingCharacters(in: .whitespacesAndNewlines) == "1000")
    }

    @Test("[slow: 205 workers] under prlimit --nofile=1024, every worker runs in its own cgroup; none is killed")
    func slow205WorkersUnder1024() async throws {
        let count = 205
        let project = try await Runtime.project(workers: Self.sleepers(count))
        defer { project.dir.remove() }
        let host = try Self.up(project, nofile: "1024")
        defer { host.terminate(grace: 10) }
        let status = try #require(
            try await Runtime.supervisorStatus(project, pid: host.pid, timeout: 60) { Self.allRunning($0, count) },
            "\(Self.output(project))")
        let details = Runtime.details(status)
        let restarted = (0..<count).filter { Runtime.int(details["worker.w\($0).restarts"]) != 0 }
        #expect(restarted.isEmpty, "workers restarted (killed): \(restarted)")
        let outside = (0..<count).filter { index in
            let pid = Runtime.int(details["worker.w\(index).pid"]) ?? 0
            return !Self.cgroup(of: pid).hasSuffix("/w\(index)")
        }
        #expect(outside.isEmpty, "workers outside their cgroup: \(outside)")
        #expect(details["cgroup_error"] == nil, "\(details["cgroup_error"] ?? "")")
        #expect(!Self.output(project).contains("cgroup_error"), "\(Self.output(project))")
    }

    @Test("one worker whose cgroup is gone runs without it, reported once; the others keep theirs and are not killed")
    func oneWorkersCgroupFails() async throws {
        let mount = try #require(Self.cgroup2Mount(), "no cgroup v2 mount")
        let project = try await Runtime.project(
            workers: Self.sleepers(4) + [
                // Fails once, then runs: its backoff is the window in which its cgroup is removed.
                #"{ name = "flaky", command = "/bin/sh", args = ["-c", "[ -e ran ] && exec sleep 300; touch ran; exit 1"], working_directory = "WD" }"#
            ], extra: "backoff_initial_ms = 3000")
        defer { project.dir.remove() }
        // The worker's marker file lives in the project directory.
        let config = try TextFile.read(project.config).replacing("\"WD\"", with: "\"\(project.dir.path)\"")
        try config.write(toFile: project.config, atomically: true, encoding: .utf8)
        let host = try Runtime.up(project)
        defer { host.terminate(grace: 5) }
        let first = try #require(
            try await Runtime.supervisorStatus(project, pid: host.pid, timeout: 30) {
                Self.allRunning($0, 4) && Runtime.details($0)["worker.flaky.state"] as? String == "backing-off"
            }, "\(Runtime.stderr(project))")
        let pids = (0..<4).map { Runtime.int(Runtime.details(first)["worker.w\($0).pid"]) ?? 0 }
        let tree = Self.cgroup(of: pids[0]).split(separator: "/").dropLast().joined(separator: "/")
        #expect(tree.contains("vigil-supervisor."), "\(tree)")
        // flaky is worker 4: its cgroup is empty during the backoff, and goes.
        let flakyCgroup = mount + "/" + tree + "/w4"
        let removed = await RuntimeFixtures.waitUntil(timeout: 10) { rmdir(flakyCgroup) == 0 || errno == ENOENT }
        #expect(removed, "cannot remove \(flakyCgroup): \(String(cString: strerror(errno)))")

        let after = try #require(
            try await Runtime.supervisorStatus(project, pid: host.pid, timeout: 30) {
                Runtime.details($0)["worker.flaky.state"] as? String == "running"
            }, "\(Runtime.stderr(project))")
        let details = Runtime.details(after)
        #expect(
            (details["worker.flaky.cgroup_error"] as? String)?.contains("runs without its cgroup") == true, "\(details)"
        )
        for index in 0..<4 {
            #expect(Runtime.int(details["worker.w\(index).pid"]) == pids[index], "w\(index) was killed: \(details)")
            #expect(Runtime.int(details["worker.w\(index).restarts"]) == 0)
            #expect(Self.cgroup(of: pids[index]).hasSuffix("/w\(index)"), "w\(index) left its cgroup")
        }
        #expect(details["cgroup_error"] == nil)
        // Said once, plainly, without --verbose.
        _ = await RuntimeFixtures.waitUntil(timeout: 5) { Self.output(project).contains("worker.flaky.cgroup_error") }
        let lines = Self.output(project).split(separator: "\n").filter { $0.contains("cgroup_error") }
        #expect(lines.count == 1, "\(Self.output(project))")
    }

    /// Runs `vigil run ARGS` as the session leader of a new pseudo-terminal (python3's pty),
    /// collects what it prints until `expected` appears (or 30 s pass), then closes the terminal and
    /// reports whether vigil exited within 15 s. Prints the output, then `FOUND`/`MISSING` and
    /// `EXIT n`/`HANG`.
    static let ptyHarness = #"""
        import os, pty, select, sys, time
        expected = sys.argv[1].encode()
        workdir = sys.argv[2]
        pid, fd = pty.fork()
        if pid == 0:
            os.chdir(workdir)
            os.execv(sys.argv[3], sys.argv[3:])
        out = b""
        deadline = time.time() + 30
        while time.time() < deadline and expected not in out:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                try:
                    data = os.read(fd, 4096)
                except OSError:
                    break
                if not data:
                    break
                out += data
        sys.stdout.write(out.decode(errors="replace"))
        print("\nFOUND" if expected in out else "\nMISSING")
        os.close(fd)  # the terminal goes away: vigil gets SIGHUP
        deadline = time.time() + 15
        while time.time() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                print("EXIT %d" % os.waitstatus_to_exitcode(status))
                sys.exit(0)
            time.sleep(0.05)
        print("HANG")
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        """#

    @Test(
        "vigil run on a terminal: a command stopped by the terminal is reported with what to do; closing the terminal ends both",
        arguments: [
            (["sh", "-c", "read x"], "SIGTTIN"),
            (["stty", "-echo"], "SIGTTOU"),
        ])
    func stoppedByTheTerminal(command: [String], signal: String) async throws {
        let python = try #require(RuntimeFixtures.which("python3"))
        let project = try Project()
        defer { project.dir.remove() }
        let r = try await RuntimeFixtures.run(
            python,
            ["-c", Self.ptyHarness, "Ctrl-C or SIGTERM stops it", project.dir.path, VigilExecutable.path, "run", "--"]
                + command,
            environment: project.environment, timeout: 60)
        #expect(r.stdout.contains("FOUND"), "no word about the stop: \(r.stdout) \(r.stderr)")
        #expect(r.stdout.contains("is stopped by \(signal)"), "\(r.stdout)")
        #expect(r.stdout.contains("redirect"), "no remedy: \(r.stdout)")
        #expect(r.stdout.contains("EXIT"), "vigil run outlived its terminal: \(r.stdout)")
    }

    @Test(
        "vigil up on a terminal: a worker stopped by reading it is named once, with the remedy; the hang-up stops all")
    func upWorkerStoppedByTheTerminal() async throws {
        let python = try #require(RuntimeFixtures.which("python3"))
        let project = try await Runtime.project(workers: [
            Runtime.sleeper, #"{ name = "reader", command = "/bin/sh", args = ["-c", "read x"] }"#,
        ])
        defer { project.dir.remove() }
        let r = try await RuntimeFixtures.run(
            python,
            [
                "-c", Self.ptyHarness, "Ctrl-C or SIGTERM stops it", project.dir.path, VigilExecutable.path, "up",
                "--config",
                project.config,
            ], environment: project.environment, timeout: 60)
        #expect(r.stdout.contains("FOUND"), "no word about the stop: \(r.stdout) \(r.stderr)")
        #expect(r.stdout.contains("worker.reader.stopped_error: reader is stopped by SIGTTIN"), "\(r.stdout)")
        #expect(r.stdout.contains("redirect its standard input"), "\(r.stdout)")
        #expect(r.stdout.contains("EXIT 0"), "vigil up did not stop cleanly on the hang-up: \(r.stdout)")
    }

    @Test(
        "vigil run words the end of its command by restart policy: an exit under --restart never is not a start limit")
    func runExitWording() async throws {
        let project = try Project()
        defer { project.dir.remove() }
        func run(_ arguments: [String]) async throws -> RuntimeFixtures.Output {
            try await RuntimeFixtures.run(
                VigilExecutable.path, ["run"] + arguments, environment: project.environment, timeout: 30)
        }
        let exited = try await run(["--", "/bin/sh", "-c", "exit 3"])
        #expect(exited.status == 3)
        #expect(exited.stderr.contains("sh exited with status 3; not restarted (--restart never"), "\(exited.stderr)")
        #expect(!exited.stderr.contains("failed"), "\(exited.stderr)")
        #expect(!exited.stderr.contains("--start-limit-burst"), "\(exited.stderr)")

        let killed = try await run(["--", "/bin/sh", "-c", "kill -9 $$"])
        #expect(killed.status == 137)
        #expect(killed.stderr.contains("sh killed by signal 9 (SIGKILL); not restarted"), "\(killed.stderr)")
        #expect(!killed.stderr.contains("--start-limit-burst"), "\(killed.stderr)")

        // Restarts that keep failing hit the start limit: that is where the limit's options help.
        let limited = try await run([
            "--restart", "on-failure", "--restart-delay-ms", "0", "--start-limit-burst", "2", "--", "/bin/sh", "-c",
            "exit 1",
        ])
        #expect(limited.status == 1)
        #expect(limited.stderr.contains("start limit hit"), "\(limited.stderr)")
        #expect(limited.stderr.contains("--start-limit-burst"), "\(limited.stderr)")
    }
}
