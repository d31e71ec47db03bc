import Foundation
import Testing
import VigilTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// `vigil check`, `vigil up` and `vigil status` on the real binary, with private state and
/// runtime directories and Vigil's real first-party manifests. Every run is time-bounded.
@Suite("vigil check / up / status", .timeLimit(.minutes(1)))
struct HostCommandTests {
    /// A temp project: `vigil.toml`, private XDG dirs, the real first-party manifests.
    struct Project {
        let dir: TestDirectory
        init() throws {
            dir = try TestDirectory("vigil-cli-host")
            try FileManager.default.createDirectory(
                atPath: dir.path + "/run", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        var config: String { dir.path + "/vigil.toml" }
        var runtimeDirectory: String { dir.path + "/run" }

        /// The environment of every run: no sound server, no session bus, private dirs.
        var environment: [String: String] { dir.cliEnvironment }

        func vigil(_ arguments: String...) async throws -> RuntimeFixtures.Output {
            try await RuntimeFixtures.run(VigilExecutable.path, arguments, environment: environment, timeout: 30)
        }

        /// Trusts first-party plugins through the real review workflow.
        func trust(_ names: String...) async throws {
            for name in names {
                let r = try await vigil("plugin", "trust", name, "--yes", "--config", config)
                #expect(r.status == 0, "\(r.stderr)")
            }
        }

        /// The host `pid`'s entry (or the first host's) in `vigil status --json`, once `match` holds;
        /// `nil` when it does not within `timeout` seconds.
        func hostStatus(
            pid: Int32? = nil, timeout: Double = 20, where match: ([String: Any]) -> Bool = { _ in true }
        ) async throws -> [String: Any]? {
            let deadline = ContinuousClock.now.advanced(by: .seconds(timeout))
            while ContinuousClock.now < deadline {
                let r = try await vigil("status", "--json")
                if let hosts = try? HostCommandTests.json(r.stdout) as? [[String: Any]],
                    let host = pid.map({ pid in hosts.first { $0["pid"] as? Int == Int(pid) } }) ?? hosts.first,
                    match(host)
                {
                    return host
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            return nil
        }

        /// Plugin `name`'s entry in ``hostStatus(pid:timeout:where:)``, once `match` holds.
        func pluginStatus(
            _ name: String, pid: Int32? = nil, timeout: Double = 20,
            where match: ([String: Any]) -> Bool = { _ in true }
        ) async throws -> [String: Any]? {
            func plugin(_ host: [String: Any]) -> [String: Any]? {
                (host["plugins"] as? [[String: Any]])?.first { $0["name"] as? String == name }
            }
            let host = try await hostStatus(pid: pid, timeout: timeout) { plugin($0).map(match) ?? false }
            return host.flatMap(plugin)
        }
    }

    static func json(_ text: String) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(text.utf8))
    }

    @Test("check: a clean config exits 0; an untrusted plugin is a located error and exits 1")
    func checkExitCodes() async throws {
        let project = try Project()
        defer { project.dir.remove() }
        try project.dir.write("vigil.toml", "plugins = []\n")
        let clean = try await project.vigil("check", "--config", project.config)
        #expect(clean.status == 0, "\(clean.stderr)")
        #expect(clean.stderr.isEmpty)
        #expect(clean.stdout.contains("0 plugins activated, 0 verified; 0 errors, 0 warnings"))

        try project.dir.write("vigil.toml", "plugins = [\"supervisor\"]\n")
        let untrusted = try await project.vigil("check", "--config", project.config)
        #expect(untrusted.status == 1)
        #expect(
            untrusted.stderr.hasPrefix(
                "\(project.config):1:12: error: [supervisor] it is signed with key ed25519:"))
        #expect(untrusted.stderr.contains("run `vigil plugin trust supervisor`"))
    }

    @Test(
        "check: a missing declaration is an error (blocked), a missing audio output a warning (waiting); --json agrees")
    func checkMissingDeclaration() async throws {
        let project = try Project()
        defer { project.dir.remove() }
        try project.dir.write("vigil.toml", "plugins = [\"silent-engine\"]\n\n[host]\nname = \"kiosk\"\n")
        try await project.trust("silent-engine")
        let result = try await project.vigil("check", "--config", project.config)
        let lines = result.stderr.split(separator: "\n").map(String.init)
        #expect(
            lines.contains {
                $0.hasPrefix(
                    "\(project.config):1:12: error: [silent-engine] blocked by a missing declaration (it would not "
                        + "start): requires background_modes to include \"audio\" — add it under [host] in vigil.toml: "
                        + "background_modes = [\"audio\"]")
            }, "\(result.stderr)")
        #expect(
            lines.contains {
                $0.hasPrefix(
                    "\(project.config):1:12: warning: [silent-engine] waiting for an audio output at start: ")
                    && $0.contains("no-such-pulse-socket (PULSE_SERVER)")
            }, "\(result.stderr)")
        #expect(result.status == 1)
        #expect(
            result.stdout.contains(
                "1 plugin activated, 0 verified, 1 blocked by a missing declaration; 1 error, 1 warning"),
            "\(result.stdout)")
        #expect(result.stdout.contains("  silent-engine: blocked by a missing declaration, from "), "\(result.stdout)")

        let json = try await project.vigil("check", "--json", "--config", project.config)
        #expect(json.status == result.status)
        let document = try #require(try Self.json(json.stdout) as? [String: Any])
        #expect(document["schema"] as? String == "vigil.check/v2")
        #expect(document["warnings"] as? Int == 1)
        #expect(document["errors"] as? Int == 1)
        let diagnostics = try #require(document["diagnostics"] as? [[String: Any]])
        #expect(
            diagnostics.contains {
                $0["line"] as? Int == 1 && $0["column"] as? Int == 12 && $0["severity"] as? String == "error"
            })
        let plugin = try #require((document["plugins"] as? [[String: Any]])?.first)
        #expect(plugin["state"] as? String == "blocked" && plugin["ready"] == nil, "\(plugin)")

        // What a build can know: the audio probe is skipped; the missing declaration is still an error.
        let build = try await project.vigil("check", "--declarations-only", "--config", project.config)
        #expect(!build.stderr.contains("waiting for"))
        #expect(build.stderr.contains("error: [silent-engine] blocked by a missing declaration"), "\(build.stderr)")
        #expect(build.status == 1)

        // Declared: the plugin waits for its audio output, a warning; the check passes.
        let trusted = String(decoding: try project.dir.read("vigil.toml"), as: UTF8.self)
        try project.dir.write(
            "vigil.toml",
            trusted.replacingOccurrences(
                of: "name = \"kiosk\"\n", with: "name = \"kiosk\"\nbackground_modes = [\"audio\"]\n"))
        let declared = try await project.vigil("check", "--config", project.config)
        #expect(declared.status == 0, "\(declared.stderr)")
        #expect(
            declared.stdout.contains(
                "1 plugin activated, 0 verified, 1 waiting for an audio output; 0 errors, 1 warning"),
            "\(declared.stdout)")
    }

    @Test("check: a worker command that cannot be started is an error at its line; the summary says who waits for what")
    func checkWorkerCommands() async throws {
        let project = try Project()
        defer { project.dir.remove() }
        try project.dir.makeDirectory("a-directory")
        try project.dir.write("not-executable", "#!/bin/sh\n", mode: 0o644)
        try project.dir.write(
            "vigil.toml",
            """
            plugins = ["silent-engine", "supervisor"]

            [host]
            background_modes = ["audio"]
            services = ["supervisor"]

            [supervisor]
            workers = [
              { name = "absolute", command = "/bin/sh" },
              { name = "bare", command = "sh" },
              { name = "missing", command = "/nonexistent/signerd" },
              { name = "directory", command = "\(project.dir.url("a-directory"))" },
              { name = "plain", command = "\(project.dir.url("not-executable"))" },
              { name = "unknown", command = "no-such-program-for-vigil" },
            ]
            """)
        try await project.trust("silent-engine", "supervisor")
        let result = try await project.vigil("check", "--config", project.config)
        #expect(result.status == 1, "\(result.stderr)")
        let errors = result.stderr.split(separator: "\n").filter { $0.contains(": error: ") }.map(String.init)
        let expected = [
            (11, "command \"/nonexistent/signerd\" does not exist"),
            (12, "is a directory, not a program"),
            (13, "is not executable"),
            (14, "command \"no-such-program-for-vigil\" is not an executable in any PATH directory"),
        ]
        #expect(errors.count == expected.count, "\(result.stderr)")
        for (line, text) in expected {
            #expect(
                errors.contains {
                    $0.hasPrefix("\(project.config):\(line):") && $0.contains("error: [supervisor] command")
                        && $0.contains(text)
                },
                "no error at line \(line) with \"\(text)\" in:\n\(result.stderr)")
        }
        // No sound server and no ALSA device in this environment: silent-engine will wait.
        #expect(
            result.stdout.contains("2 plugins activated, 1 verified, 1 waiting for an audio output; 4 errors"),
            "\(result.stdout)")

        // The build checks declarations only: the same problems are warnings there.
        let build = try await project.vigil("check", "--declarations-only", "--config", project.config)
        #expect(build.status == 0, "\(build.stderr)")
        #expect(
            build.stderr.split(separator: "\n").filter { $0.contains(": warning: [supervisor] command") }.count == 4)
    }

    @Test("usage errors exit 64; status with no running host exits 1 and says so; up on a missing vigil.toml exits 78")
    func usageAndNoHost() async throws {
        let project = try Project()
        defer { project.dir.remove() }
        #expect(try await project.vigil("check", "--no-such-flag").status == 64)
        #expect(try await project.vigil("up", "--retry-interval", "0").status == 64)
        let status = try await project.vigil("status")
        #expect(status.status == 1)
        #expect(status.stderr.contains("no Vigil host is running"))
        let missing = try await project.vigil("up", "--config", project.dir.path + "/missing.toml")
        #expect(missing.status == 78)  // EX_CONFIG: a configuration that cannot work
        #expect(missing.stderr.contains("missing.toml does not exist"))
    }

    @Test("status text shows each of a status file's strings on its own line, control and bidi characters as ?")
    func statusEscapesFileText() async throws {
        let project = try Project()
        defer { project.dir.remove() }
        // A status file for a live process (this one), its strings chosen to forge lines and reorder text.
        let hostile = "a\u{1B}[2Jb\nforged line\u{202E}txt.exe"
        let document: [String: Any] = [
            "schema": "vigil.status/v2", "pid": Int(getpid()), "host": hostile, "config": "/srv/\u{2028}x.toml",
            "plugins": [
                [
                    "name": "silent-engine", "state": "running", "since": "2026-11-23T18:00:00Z",
                    "details": ["sink": hostile, "k\u{202E}ey": 1],
                ]
            ],
            "sleep": ["locks": [hostile]],
        ]
        let directory = project.runtimeDirectory + "/vigil"
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try JSONSerialization.data(withJSONObject: document).write(
            to: URL(fileURLWithPath: directory + "/host-\(getpid()).json"))

        let json = try await project.vigil("status", "--json")
        let hosts = try #require(try HostCommandTests.json(json.stdout) as? [[String: Any]], "\(json.stderr)")
        #expect(hosts.first?["host"] as? String == hostile, "JSON keeps the exact text")

        let text = try await project.vigil("status")
        #expect(text.status == 0, "\(text.stderr)")
        let lines = text.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.first == "a?[2Jb?forged line?txt.exe (pid \(getpid()), config /srv/?x.toml)", "\(lines)")
        #expect(lines.contains("    k?ey=1 sink=a?[2Jb?forged line?txt.exe"), "\(lines)")
        #expect(lines.contains("  sleep locks held: a?[2Jb?forged line?txt.exe"), "\(lines)")
        #expect(!lines.contains { $0.hasPrefix("forged") }, "\(lines)")
        let unsafe = text.stdout.unicodeScalars.filter { ($0.value < 0x20 && $0 != "\n") || $0.value == 0x202E }
        #expect(unsafe.isEmpty, "\(text.stdout.debugDescription)")
    }

    @Test("up end to end: starts, says what each plugin waits for, status shows it, SIGTERM stops it cleanly")
    func upEndToEnd() async throws {
        let project = try Project()
        defer { project.dir.remove() }
        try project.dir.write(
            "vigil.toml", "plugins = [\"silent-engine\", \"supervisor\"]\n\n[host]\nbackground_modes = [\"audio\"]\n")
        try await project.trust("silent-engine", "supervisor")
        let output = project.dir.path + "/up.out"
        let child = try ChildProcess(
            VigilExecutable.path, ["up", "--config", project.config, "--retry-interval", "0.5"],
            environment: project.environment, stdout: output, stderr: project.dir.path + "/up.err")
        defer { child.terminate(grace: 2) }  // never leave it running, whatever fails below

        // Wait (bounded) until it publishes its status.
        var document: [String: Any]?
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, document == nil, child.isRunning {
            let status = try await project.vigil("status", "--json")
            if status.status == 0, let array = try? Self.json(status.stdout) as? [[String: Any]],
                let first = array.first
            {
                document = first
            } else {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        let host = try #require(
            document,
            "vigil up did not publish its status; stderr: \((try? TextFile.read(project.dir.path + "/up.err")) ?? "")"
        )
        #expect(host["schema"] as? String == "vigil.status/v2")
        #expect(host["pid"] as? Int == Int(child.pid))
        #expect(host["config"] as? String == project.config)
        let plugins = try #require(host["plugins"] as? [[String: Any]])
        #expect(plugins.map { $0["name"] as? String } == ["silent-engine", "supervisor"])
        // One vocabulary (docs/states.md): no audio output is `waiting`, a missing declaration `blocked`.
        #expect(plugins.map { $0["state"] as? String } == ["waiting", "blocked"], "\(plugins)")
        // supervisor's [host] services declaration is missing; silent-engine has no audio output.
        let supervisorUnmet = try #require(plugins[1]["unmet"] as? [[String: Any]])
        #expect(
            supervisorUnmet.contains { $0["kind"] as? String == "service" && $0["value"] as? String == "supervisor" })
        let engineUnmet = try #require(plugins[0]["unmet"] as? [[String: Any]])
        #expect(engineUnmet.map { $0["kind"] as? String } == ["audio-output"])
        let human = try await project.vigil("status")
        #expect(human.status == 0)
        #expect(human.stdout.contains("(pid \(child.pid), config \(project.config))"))

        let statusFile = project.runtimeDirectory + "/vigil/host-\(child.pid).json"
        #expect(FileManager.default.fileExists(atPath: statusFile))
        var mode = stat()
        #expect(stat(statusFile, &mode) == 0 && mode.st_mode & 0o777 == 0o600)

        child.signal(SIGTERM)
        let exit = await child.waitForExit(timeout: 20)
        #expect(exit.map(ChildProcess.exitCode(fromWaitStatus:)) == 0, "vigil up did not exit 0 after SIGTERM")
        #expect(!FileManager.default.fileExists(atPath: statusFile))
        #expect(try await project.vigil("status").status == 1)

        let printed = (try? TextFile.read(output)) ?? ""
        #expect(printed.contains("vigil up: host "))
        #expect(printed.contains("vigil up: stopped"))
        // Plain (non-terminal) output says what each plugin waits for or is blocked by, in the words
        // of `vigil check` and `vigil status` (docs/states.md).
        #expect(printed.contains("silent-engine: waiting for an audio output: "), "\(printed)")
        #expect(printed.contains("supervisor: blocked by a missing declaration: requires services"), "\(printed)")
    }
}
