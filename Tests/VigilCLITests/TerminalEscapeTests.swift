import Foundation
import Testing
import VigilTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Text Vigil does not control reaches the terminal escaped, one line per field: a newline in it
/// cannot forge a line, and control characters, bidirectional overrides and line separators show
/// as `?` (the real binary, fed through the real inputs).
@Suite("untrusted text is escaped, one line per field", .serialized, .timeLimit(.minutes(2)))
struct TerminalEscapeTests {
    typealias Project = HostCommandTests.Project

    /// A program path that clears the screen, forges a line of its own, reverses the text after it
    /// and separates lines the Unicode way, and how the escaped text shows it.
    static let hostile = "/nonexistent/a\u{1B}[2Jb\nforged line\u{202E}x\u{2028}y"
    static let shown = "/nonexistent/a?[2Jb?forged line?x?y"

    /// `text` as a TOML basic string: every scalar outside printable ASCII as a `\uXXXX` escape.
    static func toml(_ text: String) -> String {
        let body = text.unicodeScalars.map { scalar in
            (0x20..<0x7F).contains(scalar.value) && scalar != "\"" && scalar != "\\"
                ? String(scalar) : "\\u" + String(format: "%04X", scalar.value)
        }
        return "\"" + body.joined() + "\""
    }

    /// Expects `text` to show the escaped field `shown` on at least one line, every line that
    /// shows part of it to show all of it (the field stayed on one line), no line to start with
    /// what a newline in it would have started (`forged`), and no control, bidirectional or
    /// separator character but the newlines between lines. Returns the lines.
    @discardableResult
    static func expectEscaped(
        _ text: String, shown: String, _ what: String, forged: String = "forged",
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> [String] {
        let lines = text.split(separator: "\n").map(String.init)
        let showing = lines.filter { $0.contains("forged line") }
        #expect(!showing.isEmpty, "\(what) shows the field: \(lines)", sourceLocation: sourceLocation)
        #expect(showing.allSatisfy { $0.contains(shown) }, "\(what): \(showing)", sourceLocation: sourceLocation)
        #expect(!lines.contains { $0.hasPrefix(forged) }, "\(what): \(lines)", sourceLocation: sourceLocation)
        let unsafe = text.unicodeScalars.filter {
            ($0.value < 0x20 && $0 != "\n") || [0x202E, 0x2028].contains($0.value)
        }
        #expect(unsafe.isEmpty, "\(what): \(text.debugDescription)", sourceLocation: sourceLocation)
        return lines
    }

    @Test("vigil up: a worker's failure and the --verbose log lines quote its command on one escaped line")
    func upAndItsLog() async throws {
        let worker = "{ name = \"w\", command = \(Self.toml(Self.hostile)) }"
        let project = try await SupervisorRuntimeTests.project(workers: [worker])
        defer { project.dir.remove() }
        let output = project.dir.path + "/up.out"
        let host = try ChildProcess(
            VigilExecutable.path, ["up", "--verbose", "--config", project.config], environment: project.environment,
            stdout: output, stderr: project.dir.path + "/up.err")
        defer { host.terminate(grace: 5) }
        let printed = { (try? TextFile.read(output)) ?? "" }
        // Positive signal first: the failure that quotes the command was printed and logged.
        #expect(
            await RuntimeFixtures.waitUntil(timeout: 30) {
                printed().contains("forged line") && SupervisorRuntimeTests.stderr(project).contains("forged line")
            }, "\(printed())\(SupervisorRuntimeTests.stderr(project))")
        host.signal(SIGTERM)
        _ = await host.waitForExit(timeout: 30)

        let stdout = Self.expectEscaped(printed(), shown: Self.shown, "vigil up")
        let cause = "cannot execute \(Self.shown): No such file or directory — check the `command` setting"
        #expect(stdout.contains("supervisor: failed: could not start: worker \"w\": \(cause)"), "\(stdout)")
        let log = Self.expectEscaped(SupervisorRuntimeTests.stderr(project), shown: Self.shown, "vigil up's log")
        #expect(
            log.contains { $0.hasSuffix("worker.reason=\(cause) [VigilSupervisorEngine] worker could not be started") })
        #expect(log.contains { $0.hasSuffix("[supervisor] could not start: worker \"w\": \(cause)") }, "\(log)")
    }

    @Test("vigil run: its error line and its log lines quote the command escaped, one line each")
    func runLines() async throws {
        let project = try Project()
        defer { project.dir.remove() }
        let run = try await SupervisorRuntimeTests.run(project, ["--", Self.hostile])
        #expect(run.status == 127, "\(run.stderr)")
        let lines = Self.expectEscaped(run.stderr, shown: Self.shown, "vigil run")
        let cause = "cannot execute \(Self.shown): No such file or directory — check the `command` setting"
        #expect(lines.last == "vigil run: worker \"a__2Jb_forged_line_x_y\": \(cause)", "\(lines)")
        #expect(
            lines.contains {
                $0.hasSuffix("worker.reason=\(cause) [VigilSupervisorEngine] worker could not be started")
            })
    }

    @Test("plugin keygen, sign, trust, list, verify and check show a hostile directory name escaped, one line each")
    func pluginDirectoryNames() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        // A directory (say, unpacked from someone's archive) whose name forges a line.
        let name = "p\u{1B}[2Jq\nforged line\u{202E}r\u{2028}s"
        let shown = "p?[2Jq?forged line?r?s"
        try await s.makePlugin("demo")
        try s.dir.makeDirectory("work/" + name)
        try FileManager.default.moveItem(
            atPath: s.dir.url("work/manifests/demo"), toPath: s.dir.url("work/\(name)/demo"))
        try s.dir.write("work/vigil.toml", "plugins = [\"demo\"]\nplugin_paths = [\(Self.toml(name))]\n")
        let runs = [
            ("keygen", try await s.vigil("plugin", "keygen", "--name", "other", "--dir", name)),
            ("sign", try await s.vigil("plugin", "sign", name + "/demo", "--key", "keys/demo.key")),
            ("trust", try await s.vigil("plugin", "trust", "demo", "--yes")),
            ("list", try await s.vigil("plugin", "list")),
            // check refuses "demo" (no built-in runs it) and names where it came from.
            ("check", try await s.vigil("check", "--declarations-only")),
            (
                "verify",
                try await s.vigil("plugin", "verify", name + "/missing", "--fingerprint", s.fingerprint(ofKey: "demo"))
            ),
        ]
        let lines = runs.map { command, r in Self.expectEscaped(r.stdout + r.stderr, shown: shown, command) }
        let directory = s.dir.url("work/\(shown)")
        #expect(lines[0].first == "secret key:  \(shown)/other.key  (mode 0600 — keep it private, never commit it)")
        #expect(lines[1].first == "signed demo@1.0.0 in \(directory)/demo", "\(lines[1])")
        #expect(lines[2].contains("  directory:     \(directory)/demo"), "\(lines[2])")
        #expect(lines[3].contains("    directory: \(directory)/demo"), "\(lines[3])")
        #expect(lines[4].contains("  demo: failed, from \(directory)/demo"), "\(lines[4])")
        #expect(lines[5] == ["error: [missing] \(directory)/missing has no plugin.json — is this a plugin directory?"])
        #expect(runs.map(\.1.status) == [0, 0, 0, 0, 1, 1], "\(runs.map(\.1.stderr))")
        let json = try await s.vigil("plugin", "list", "--json")
        let plugins = try #require(try AttackReviewTests.json(json.stdout)["plugins"] as? [[String: Any]])
        #expect(plugins.first?["directory"] as? String == s.dir.url("work/\(name)/demo"), "JSON keeps the exact path")
    }

    @Test("vigil announce: a player's D-Bus error text is one escaped log line")
    func announceLogsAPlayersErrorEscaped() async throws {
        try await PulseAudioServer.with { server in
            let s = try CLISandbox()
            defer { s.remove() }
            let bus = try DBusDaemon()
            defer { bus.stop() }
            var environment = server.environment
            environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
            // A playing player that refuses to pause, with a message that forges a line.
            let player = try ChildProcess(
                "/usr/bin/python3",
                [RuntimeFixtures.fixtureScript("mpris_player.py"), "evil", "Playing", Self.hostile],
                environment: environment)
            defer {
                player.signal(SIGKILL)
                player.wait()
            }
            #expect(await RuntimeFixtures.waitUntil(timeout: 10) { bus.playerStatus("evil") == "Playing" })
            try s.dir.write(
                "work/vigil.toml", "plugins = []\n\n[announce]\npolicy = \"pause-spoken\"\nplayers = [\"evil\"]\n")
            environment["XDG_STATE_HOME"] = s.dir.url("state")
            let r = try await VigilExecutable.run(
                ["announce", "--say", "ready"], in: s.work, environment: environment.mapValues { $0 })
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout.hasPrefix("played "), "\(r.stdout)")
            let log = Self.expectEscaped(r.stderr, shown: Self.shown, "vigil announce's log")
            let line =
                "warning vigil.announce: announce.error=[dbus-call-failed] Pause failed: \(Self.shown) "
                + "(org.mpris.MediaPlayer2.Error.Refused) announce.player=org.mpris.MediaPlayer2.evil [VigilAnnounce] "
                + "Cannot pause an MPRIS player"
            #expect(log.count == 1 && log.first?.hasSuffix(line) == true, "\(log)")
        }
    }

    @Test("a manifest setting's newline cannot forge an error: diagnostic in vigil check or the build plugin's tool")
    func manifestSettingInDiagnostics() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        #expect(try await s.vigil("plugin", "keygen", "--name", "sup", "--dir", "keys").status == 0)
        // A signed third-party manifest for the supervisor whose default worker command forges a
        // diagnostic line (SwiftPM takes every `error:` line of the build plugin's tool as one).
        let command = "/nonexistent/a\u{1B}[2Jb\nerror: forged line\u{202E}x\u{2028}y"
        let shown = "/nonexistent/a?[2Jb?error: forged line?x?y"
        let manifest: [String: Any] = [
            "schema": "vigil.plugin-manifest/v1", "name": "sup", "version": "1.0.0", "entry": "supervisor",
            "settings": ["notification": false, "workers": [["name": "w", "command": command]]],
        ]
        try s.dir.write(
            "work/manifests/sup/plugin.json",
            [UInt8](try JSONSerialization.data(withJSONObject: manifest, options: [.withoutEscapingSlashes])))
        #expect(try await s.vigil("plugin", "sign", "manifests/sup", "--key", "keys/sup.key").status == 0)
        try s.dir.write("work/vigil.toml", "plugins = [\"sup\"]\n[host]\nservices = [\"supervisor\"]\n")
        #expect(try await s.vigil("plugin", "trust", "sup", "--yes").status == 0)

        let cause = "[sup] command \"\(shown)\" does not exist — install the program there, or fix the path in command"
        let check = try await s.vigil("check")
        #expect(check.status == 1, "\(check.stderr)")
        let lines = Self.expectEscaped(check.stderr, shown: shown, "vigil check", forged: "error: forged")
        #expect(lines == ["error: \(cause)"], "\(lines)")
        let arguments = ["check", "--declarations-only", "--config", s.dir.url("work/vigil.toml")]
        let tool = try await VigilExecutable.run(
            executable: VigilExecutable.pluginToolPath, arguments, in: s.work, environment: s.environment)
        #expect(tool.status == 0, "\(tool.stderr)")
        let toolLines = Self.expectEscaped(tool.stderr, shown: shown, "vigil-plugin-tool", forged: "error: forged")
        #expect(toolLines == ["warning: \(cause)"], "\(toolLines)")
    }
}
