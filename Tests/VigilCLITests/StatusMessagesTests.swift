import Foundation
import Testing
import VigilTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The runtime review's state and message points on the real binary: a status file that cannot be
/// written (a real full tmpfs), `vigil status` with 200 workers, and `vigil up`'s plain lines.
@Suite("vigil status and up: unwritten status, worker tables, state lines", .serialized, .timeLimit(.minutes(2)))
struct StatusMessagesTests {
    typealias Project = HostCommandTests.Project

    static func json(_ text: String) -> Any? { try? JSONSerialization.jsonObject(with: Data(text.utf8)) }

    @Test(
        "a full runtime directory: up warns, status names the running host (exit 2), the file returns by itself",
        .enabled(if: FullDisk.isAvailable, "mounting a tmpfs needs root"))
    func statusUnwrittenOnAFullRuntimeDirectory() async throws {
        let disk = try FullDisk(kilobytes: 64)
        defer { disk.unmount() }
        let project = try Project()
        defer { project.dir.remove() }
        try project.dir.write("vigil.toml", "plugins = []\n")
        var environment = project.environment
        environment["XDG_RUNTIME_DIR"] = disk.path
        try FileManager.default.createDirectory(
            atPath: disk.path + "/vigil", withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        try disk.fill()
        let (host, output) = try project.up(environment: environment)
        defer { host.terminate(grace: 5) }
        func status(_ arguments: String...) async throws -> RuntimeFixtures.Output {
            try await RuntimeFixtures.run(VigilExecutable.path, ["status"] + arguments, environment: environment)
        }

        // 1. Up says it, once, without --verbose.
        let warned = await RuntimeFixtures.waitUntil(timeout: 20) {
            ((try? TextFile.read(output)) ?? "").contains("cannot write the status file")
        }
        #expect(
            warned, "\((try? TextFile.read(output)) ?? "") \(project.upErrors)")

        // 2. Status names the host from its lock: plain and JSON, exit 2.
        let plain = try await status()
        #expect(plain.status == 2, "\(plain.status) \(plain.stdout) \(plain.stderr)")
        #expect(plain.stdout.contains("a host runs (pid \(host.pid)"), "\(plain.stdout)")
        #expect(plain.stdout.contains("unwritten"), "\(plain.stdout)")
        let json = try await status("--json")
        #expect(json.status == 2)
        let entry = try #require((Self.json(json.stdout) as? [[String: Any]])?.first, "\(json.stdout)")
        #expect(entry["pid"] as? Int == Int(host.pid))
        #expect(entry["status"] as? String == "unwritten")
        #expect(entry["host"] is NSNull)

        // 3. Space returns: with no plugin (so no event at all), the file is written again.
        disk.free()
        var back: [String: Any]?
        let deadline = ContinuousClock.now.advanced(by: .seconds(40))
        while back == nil, ContinuousClock.now < deadline {
            let r = try await status("--json")
            if r.status == 0, let first = (Self.json(r.stdout) as? [[String: Any]])?.first, first["plugins"] is [Any] {
                back = first
            } else {
                try await Task.sleep(for: .milliseconds(200))
            }
        }
        let returned = back != nil
        #expect(returned, "the status file did not come back after space returned")
        #expect(back?["pid"] as? Int == Int(host.pid))
        let said = await RuntimeFixtures.waitUntil(timeout: 10) {
            ((try? TextFile.read(output)) ?? "").contains("written again")
        }
        #expect(said)
        let text = (try? TextFile.read(output)) ?? ""
        #expect(text.components(separatedBy: "cannot write the status file").count == 2, "warned once: \(text)")

        // 4. Variant: a status file that cannot be read is shown as such, from the lock too.
        try Data("{".utf8).write(to: URL(fileURLWithPath: disk.path + "/vigil/host-\(host.pid).json"))
        let unreadable = try await status()
        #expect(unreadable.status == 2, "\(unreadable.stdout) \(unreadable.stderr)")
        #expect(unreadable.stdout.contains("unreadable"), "\(unreadable.stdout)")

        host.signal(SIGTERM)
        let exit = await host.waitForExit(timeout: 20)
        #expect(exit.map(ChildProcess.exitCode(fromWaitStatus:)) == 0)
    }

    @Test(
        "the runtime directory fills while a host runs: the stale file goes, status says so, the file returns by itself",
        .enabled(if: FullDisk.isAvailable, "mounting a tmpfs needs root"))
    func statusGoesStaleWhileRunning() async throws {
        let disk = try FullDisk(kilobytes: 256)
        defer { disk.unmount() }
        let project = try await SupervisorRuntimeTests.project(workers: [SupervisorRuntimeTests.sleeper])
        defer { project.dir.remove() }
        var environment = project.environment
        environment["XDG_RUNTIME_DIR"] = disk.path
        let (host, output) = try project.up(environment: environment)
        defer { host.terminate(grace: 5) }
        /// The worker's pid and restarts in `vigil status --json`, once its status is readable.
        func worker() async throws -> (status: Int32, pid: Int?, restarts: Int?) {
            let r = try await RuntimeFixtures.run(VigilExecutable.path, ["status", "--json"], environment: environment)
            let plugin = ((Self.json(r.stdout) as? [[String: Any]])?.first?["plugins"] as? [[String: Any]])?.first
            let details = SupervisorRuntimeTests.details(plugin)
            return (
                r.status, SupervisorRuntimeTests.int(details["worker.w.pid"]),
                SupervisorRuntimeTests.int(details["worker.w.restarts"])
            )
        }
        var first: Int?
        let deadline = ContinuousClock.now.advanced(by: .seconds(20))
        while first == nil, ContinuousClock.now < deadline {
            first = try await worker().pid
            if first == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        let pid = try #require(first, "\(project.upErrors)")

        // Full, then an event (the worker restarts): the write fails, the old file must not stay.
        try disk.fill()
        kill(Int32(pid), SIGKILL)
        let warned = await RuntimeFixtures.waitUntil(timeout: 20) {
            ((try? TextFile.read(output)) ?? "").contains("cannot write the status file")
        }
        #expect(warned, "\((try? TextFile.read(output)) ?? "")")
        let stale = try await RuntimeFixtures.run(VigilExecutable.path, ["status"], environment: environment)
        #expect(stale.status == 2, "\(stale.stdout) \(stale.stderr)")
        #expect(stale.stdout.contains("a host runs (pid \(host.pid)"), "\(stale.stdout)")

        // Room again, and no event: the writer's retry brings the current status back.
        disk.free()
        var back: (status: Int32, pid: Int?, restarts: Int?) = (1, nil, nil)
        let until = ContinuousClock.now.advanced(by: .seconds(40))
        while back.restarts != 1, ContinuousClock.now < until {
            back = try await worker()
            if back.restarts != 1 { try await Task.sleep(for: .milliseconds(200)) }
        }
        #expect(back.status == 0 && back.restarts == 1 && back.pid != pid, "\(back)")
    }

    @Test("plain status shows 200 workers as a table, one worker a line, untrusted names escaped")
    func workersTable() async throws {
        let project = try Project()
        defer { project.dir.remove() }
        let hostile = "evil\u{1B}[2J\nforged\u{202E}"
        let names = (0..<199).map { "worker-\($0)" } + [hostile]
        var details: [String: Any] = [
            "state": "running", "channels": "vigil status", "workers": names.joined(separator: ", "),
        ]
        for (index, name) in names.enumerated() {
            details["worker.\(name).state"] = index == 7 ? "backing-off" : "running"
            details["worker.\(name).pid"] = 1000 + index
            details["worker.\(name).restarts"] = index == 7 ? 3 : 0
            if index == 7 { details["worker.\(name).reason"] = "exited with status 1" }
        }
        let document: [String: Any] = [
            "schema": "vigil.status/v2", "pid": Int(getpid()), "host": "many", "config": project.config,
            "plugins": [
                ["name": "supervisor", "state": "running", "since": "2026-11-23T18:00:00Z", "details": details]
            ],
        ]
        let directory = project.runtimeDirectory + "/vigil"
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try JSONSerialization.data(withJSONObject: document).write(
            to: URL(fileURLWithPath: directory + "/host-\(getpid()).json"))

        let r = try await project.vigil("status")
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count >= 203, "\(lines.count) lines")
        #expect((lines.map(\.count).max() ?? 0) < 120, "a line of \(lines.map(\.count).max() ?? 0) characters")
        #expect(lines.contains { $0.hasPrefix("    worker ") && $0.contains("state") && $0.contains("restarts") })
        #expect(lines.filter { $0.contains("worker-") }.count == 199)
        let seventh = try #require(lines.first { $0.hasPrefix("    worker-7 ") })
        #expect(seventh.contains("backing-off") && seventh.contains("1007") && seventh.contains("exited with status 1"))
        // The order is the supervisor's (its `workers` list), which the table replaces.
        #expect(
            lines.firstIndex { $0.hasPrefix("    worker-10 ") }! > lines.firstIndex { $0.hasPrefix("    worker-9 ") }!)
        #expect(!r.stdout.contains("workers="), "\(lines.prefix(3))")
        #expect(lines.contains { $0.hasPrefix("    evil?[2J?forged? ") }, "\(lines.suffix(2))")
        #expect(!lines.contains { $0.hasPrefix("forged") })
        let unsafe = r.stdout.unicodeScalars.filter { ($0.value < 0x20 && $0 != "\n") || $0.value == 0x202E }
        #expect(unsafe.isEmpty)
    }

    @Test("plain up output: a state line when the state changes, never a bare `interrupted`")
    func stateLinesOnlyOnChange() async throws {
        let project = try await SupervisorRuntimeTests.project(
            workers: [
                SupervisorRuntimeTests.sleeper,
                // Two crash loops out of step: one restarts while the other still waits, so the
                // plugin's details change while it stays interrupted.
                #"{ name = "loop", command = "/bin/sh", args = ["-c", "exit 3"], restart = "always" }"#,
                #"{ name = "slow", command = "/bin/sh", args = ["-c", "sleep 0.2; exit 4"], restart = "always" }"#,
            ],
            extra: "backoff_initial_ms = 100\nbackoff_max_ms = 100\nstart_limit_burst = 0")
        defer { project.dir.remove() }
        let output = project.dir.path + "/up.out"
        let host = try SupervisorRuntimeTests.up(project, stdout: output)
        defer { host.terminate(grace: 5) }
        // Many restarts: each changes the details (restart counts, pids) and says why.
        let looped = await RuntimeFixtures.waitUntil(timeout: 30) {
            ((try? TextFile.read(output)) ?? "").components(separatedBy: "worker loop").count > 6
        }
        #expect(looped, "\((try? TextFile.read(output)) ?? "")")
        host.signal(SIGTERM)
        _ = await host.waitForExit(timeout: 20)
        let lines = ((try? TextFile.read(output)) ?? "").split(separator: "\n").map(String.init)
        #expect(!lines.contains("supervisor: interrupted"), "bare: \(lines.filter { $0.hasSuffix("interrupted") })")
        #expect(
            lines.filter { $0 == "supervisor: running" }.count <= 1, "a details change repeated the state: \(lines)")
    }

    @Test("plain up output: volume and track changes of a running soundscape print no state line")
    func soundscapeChangesPrintNoStateLine() async throws {
        try await PulseAudioServer.with { server in
            let (project, environment) = try await Project.soundscape(on: server)
            defer { project.dir.remove() }
            let (host, output) = try project.up(environment: environment)
            defer { host.terminate(grace: 2) }
            let started = try await project.pluginStatus("soundscape") {
                $0["state"] as? String == "running" && ($0["details"] as? [String: Any])?["control_socket"] != nil
            }
            #expect(started != nil, "\(project.upErrors)")
            for volume in ["0.4", "0.5", "0.6"] {
                #expect(try await project.vigil("soundscape", "volume", volume).status == 0)
            }
            for command in ["next", "previous"] {
                #expect(try await project.vigil("soundscape", command).status == 0)
            }
            // Each change is reported (the status file follows it), and printed nowhere.
            let last = try await project.pluginStatus("soundscape", timeout: 10) {
                ($0["details"] as? [String: Any])?["volume"] as? String == "0.60"
            }
            #expect(last != nil)
            host.signal(SIGTERM)
            _ = await host.waitForExit(timeout: 20)
            let lines = ((try? TextFile.read(output)) ?? "").split(separator: "\n").map(String.init)
            #expect(lines.filter { $0 == "soundscape: running" }.count == 1, "\(lines)")
        }
    }
}

extension HostCommandTests.Project {
    /// Starts `vigil up` for this project in `environment`, output to `up.out` (returned) and `up.err`.
    func up(environment: [String: String]) throws -> (host: ChildProcess, output: String) {
        let output = dir.path + "/up.out"
        let host = try ChildProcess(
            VigilExecutable.path, ["up", "--config", config], environment: environment, stdout: output,
            stderr: dir.path + "/up.err")
        return (host, output)
    }

    /// A project whose `vigil.toml` plays the trusted soundscape (without MPRIS) on `server`, and
    /// the environment that points it there.
    static func soundscape(on server: PulseAudioServer) async throws -> (Self, [String: String]) {
        let project = try Self()
        try project.dir.write(
            "vigil.toml",
            "plugins = [\"soundscape\"]\n\n[host]\nbackground_modes = [\"audio\"]\n\n[soundscape]\nmpris = false\n")
        try await project.trust("soundscape")
        var environment = project.environment
        environment["PULSE_SERVER"] = server.address
        return (project, environment)
    }

    /// What `vigil up` wrote on standard error.
    var upErrors: String { (try? TextFile.read(dir.path + "/up.err")) ?? "" }
}
