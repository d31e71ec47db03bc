import Foundation
import Testing
import VigilTestSupport

/// `vigil plugin verify` and `vigil check` on shared-library plugins (the built `vigil` binary).
@Suite("vigil commands on shared-library plugins", .serialized, .timeLimit(.minutes(2)))
struct SharedLibraryCommandTests {
    @Test("plugin verify accepts the signed example and names its library and ABI")
    func verifyExample() async throws {
        let dir = try TestDirectory("vigil-native-cli")
        defer { dir.remove() }
        let r = try await VigilExecutable.run(
            [
                "plugin", "verify", ExamplePluginTests.directory + "/heartbeat-example", "--fingerprint",
                ExamplePluginTests.fingerprint,
            ],
            in: dir.path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("shared library libVigilHeartbeatExample.so loadable (plugin ABI 1.0)"))
    }

    @Test("plugin trust shows the operator that the example is native code, then records its key")
    func trustExample() async throws {
        let dir = try TestDirectory("vigil-native-trust")
        defer { dir.remove() }
        try dir.write(
            "vigil.toml", "plugins = [\"heartbeat-example\"]\nplugin_paths = [\"\(ExamplePluginTests.directory)\"]\n")
        let r = try await VigilExecutable.run(
            ["plugin", "trust", "heartbeat-example", "--config", dir.path + "/vigil.toml", "--yes"], in: dir.path,
            environment: ["XDG_STATE_HOME": dir.path + "/state"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("shared library libVigilHeartbeatExample.so (plugin ABI 1) — native code"))
        // What it may do, from its signed manifest, in plain words.
        #expect(r.stdout.contains("  may:\n    - read and write heartbeat in its state directory\n"), "\(r.stdout)")
        // The build tool's trust command (what `swift package vigil-trust` runs) shows the same review.
        let tool = try await VigilExecutable.run(
            executable: VigilExecutable.pluginToolPath,
            ["plugin", "trust", "heartbeat-example", "--config", dir.path + "/vigil.toml", "--yes"], in: dir.path,
            environment: ["XDG_STATE_HOME": dir.path + "/state"])
        #expect(tool.status == 0, "\(tool.stderr)")
        #expect(
            tool.stdout.contains("  may:\n    - read and write heartbeat in its state directory\n"), "\(tool.stdout)")
        // The example rotated from the examples key to 2 of {examples-next, examples-cosigner}.
        #expect(
            try TextFile.read(dir.path + "/vigil.toml").contains(
                "heartbeat-example = { keys = [\"ed25519:QOrI7WAhblHeS1SlvhKdfN+RFij+HpbW9emtKjpi3bc=\", "
                    + "\"ed25519:bCnW+qFsrMBYR/JRlFK0ETJwZ4I9gm+QEGBSDHN9StI=\"], threshold = 2 }"))

        // plugin list and check show the same, in text and JSON; the trusted example loads.
        let environment: [String: String?] = ["XDG_STATE_HOME": dir.path + "/state", "HOME": dir.path]
        let config = ["--config", dir.path + "/vigil.toml"]
        let list = try await VigilExecutable.run(["plugin", "list"] + config, in: dir.path, environment: environment)
        #expect(
            list.stdout.contains("    may:         read and write heartbeat in its state directory"), "\(list.stdout)")
        let check = try await VigilExecutable.run(
            ["check", "--declarations-only"] + config, in: dir.path, environment: environment)
        #expect(check.status == 0, "\(check.stderr)")
        #expect(check.stdout.contains("    may: read and write heartbeat in its state directory"), "\(check.stdout)")
        for arguments in [["plugin", "list", "--json"], ["check", "--declarations-only", "--json"]] {
            let r = try await VigilExecutable.run(arguments + config, in: dir.path, environment: environment)
            let document = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
            let plugin = try #require(
                (document["plugins"] as? [[String: Any]])?.first { $0["name"] as? String == "heartbeat-example" })
            let capabilities = try #require(plugin["capabilities"] as? [String: Any], "\(arguments)")
            #expect(capabilities["plain_words"] as? [String] == ["read and write heartbeat in its state directory"])
            #expect(capabilities["in_host_process"] as? Bool == false)
            #expect(
                (capabilities["declared"] as? [String: Any])?["files"] as? [[String: String]]
                    == [["path": "heartbeat", "access": "read-write"]])
        }
    }

    @Test("a dependency's name from a signed library is one escaped line in verify's and check's errors")
    func dependencyNamesAreEscaped() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        // A helper whose SONAME (so alpha's DT_NEEDED) clears the screen, forges an error line of
        // its own and reverses the text after it; alpha needs it but does not list it.
        let hostile = "libx\u{1B}[2J.so\nerror: [alpha] forged\u{202E}os.x\u{2028}"
        try await f.compile(
            .init(who: "helper", pluginID: "-", soname: hostile, isHelper: true), output: "libhelper.so")
        try await f.compile(
            .init(who: "alpha", pluginID: "alpha", soname: "libvigiltest-alpha.so", helper: "libhelper.so"),
            output: "alpha.so")
        try f.plugin("alpha", library: "libalpha.so", files: ["libalpha.so": "alpha.so"])
        try f.config(["alpha"])
        let environment: [String: String?] = ["XDG_STATE_HOME": f.dir.path + "/state", "HOME": f.dir.path]
        let check = ["check", "--declarations-only", "--config", f.configPath]
        let runs = [
            try await VigilExecutable.run(
                ["plugin", "verify", f.pluginsDirectory + "/alpha", "--fingerprint", f.fingerprint], in: f.dir.path,
                environment: environment),
            try await VigilExecutable.run(check, in: f.dir.path, environment: environment),
            // The tool the build plugin runs: SwiftPM reads each `error:` line of it as a diagnostic.
            try await VigilExecutable.run(
                executable: VigilExecutable.pluginToolPath, check, in: f.dir.path, environment: environment),
        ]
        for r in runs {
            #expect(r.status == 1, "\(r.stderr)")
            let lines = r.stderr.split(separator: "\n").map(String.init)
            let errors = lines.filter { $0.contains("error: [alpha]") }
            #expect(errors.count == 1, "\(lines)")
            #expect(
                errors.first?.contains("libalpha.so needs libx?[2J.so?error: [alpha] forged?os.x?, which is") == true,
                "\(lines)")
            #expect(!lines.contains { $0.hasPrefix("error: [alpha] forged") }, "\(lines)")
            let unsafe = (r.stdout + r.stderr).unicodeScalars.filter {
                ($0.value < 0x20 && $0 != "\n") || [0x202E, 0x2028].contains($0.value)
            }
            #expect(unsafe.isEmpty, "\(r.stderr.debugDescription)")
        }
        let json = try await VigilExecutable.run(check + ["--json"], in: f.dir.path, environment: environment)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let messages = (document["diagnostics"] as? [[String: Any]] ?? []).compactMap { $0["message"] as? String }
        #expect(
            messages.contains { $0.contains("needs \(hostile), which is") }, "JSON keeps the exact text: \(messages)")
    }

    @Test("plugin verify and check refuse a library for a newer ABI minor, and check runs none of its code")
    func verifyAndCheckRefuse() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        try await f.simplePlugin("alpha", abiMinor: 7)
        try f.config(["alpha"])
        let environment: [String: String?] = ["XDG_STATE_HOME": f.dir.path + "/state", "HOME": f.dir.path]
        let verify = try await VigilExecutable.run(
            ["plugin", "verify", f.pluginsDirectory + "/alpha", "--fingerprint", f.fingerprint], in: f.dir.path,
            environment: environment)
        #expect(verify.status == 1)
        #expect(verify.stderr.contains("error: [alpha]") && verify.stderr.contains("ABI 1.7"))
        let check = try await VigilExecutable.run(
            ["check", "--config", f.configPath], in: f.dir.path, environment: environment)
        #expect(check.status == 1)
        #expect(check.stdout.contains("error: [alpha]") || check.stderr.contains("error: [alpha]"))
        #expect((check.stdout + check.stderr).contains("newer than this Vigil's 1.0"))
        let json = try await VigilExecutable.run(
            ["check", "--config", f.configPath, "--json"], in: f.dir.path, environment: environment)
        #expect(json.status == 1)
        #expect(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) is [String: Any])
        #expect(!f.exists(f.sentinel("alpha")))
    }

    @Test(
        "vm.memfd_noexec=2 in the host's pid namespace: refused with its own error and remedy, no code runs; =1: loads with MFD_EXEC",
        .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare")))
    func memfdNoexecPolicy() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        try await f.compile(
            .init(who: "alpha", pluginID: "alpha", soname: "libvigiltest-alpha.so", sentinel: f.sentinel("alpha")),
            output: "alpha.so")
        try f.plugin("alpha", library: "libalpha.so", files: ["libalpha.so": "alpha.so"])
        try f.config(["alpha"])
        let environment: [String: String?] = [
            "XDG_STATE_HOME": f.dir.path + "/state", "XDG_RUNTIME_DIR": f.dir.path + "/run", "HOME": f.dir.path,
        ]
        // The sysctl is per pid namespace: set it in a new one, for `vigil run` only. It gets its
        // own /proc, as a container has: LeakSanitizer stops the other threads by the ids it reads
        // from /proc, and the host's /proc names none of this namespace's threads, so without it a
        // sanitized `vigil` reports memory held on their stacks as leaked.
        func run(policy: Int, _ command: String) async throws -> VigilExecutable.Output {
            try await VigilExecutable.run(
                executable: "/usr/bin/unshare",
                [
                    "--pid", "--fork", "--mount-proc", "/bin/sh", "-c",
                    "echo \(policy) > /proc/sys/vm/memfd_noexec && exec \"$0\" run --config \"$1\" -- /bin/sh -c \"$2\"",
                    VigilExecutable.path, f.configPath, command,
                ],
                in: f.dir.path, environment: environment)
        }
        let refused = try await run(policy: 2, "true")
        #expect(refused.stderr.contains("[alpha] failed"), "\(refused.stderr)")
        #expect(refused.stderr.contains("vm.memfd_noexec is 2") && refused.stderr.contains("sysctl vm.memfd_noexec=1"))
        #expect(!f.exists(f.sentinel("alpha")))
        #expect(f.markerLines("alpha").isEmpty)

        // The command waits for the plugin's start line: the positive signal, bounded by the run's timeout.
        let loaded = try await run(policy: 1, "until grep -q 'start alpha' '\(f.marker("alpha"))'; do sleep 0.05; done")
        #expect(loaded.status == 0, "\(loaded.stderr)")
        #expect(f.markerLines("alpha") == ["start alpha", "stop alpha"])
        #expect(f.exists(f.sentinel("alpha")))
    }

    @Test(
        "vigil status (text and JSON) shows a plugin's helper PID and confinement; the helper dies with a killed host")
    func statusShowsHelperAndItDiesWithTheHost() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        try await f.simplePlugin("alpha")
        try f.config(["alpha"])
        let (host, optional) = try f.up()
        var hostRuns = true
        defer { if hostRuns { host.signal(SIGKILL) } }

        // Wait (bounded) until the status names the helper.
        var helper: Int32?
        var last = ""
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, helper == nil, host.isRunning {
            let status = try await VigilExecutable.run(["status", "--json"], in: f.dir.path, environment: optional)
            last = status.stdout + status.stderr
            let hosts = try? JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [[String: Any]]
            let plugin = (hosts?.first?["plugins"] as? [[String: Any]])?.first { $0["name"] as? String == "alpha" }
            let details = plugin?["details"] as? [String: Any]
            // The status document writes a number as a number.
            if let pid = (details?["helper-pid"] as? Int).map({ Int32($0) }) {
                helper = pid
                #expect((details?["confinement"] as? String)?.isEmpty == false)
            } else {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        let pid = try #require(
            helper, "no helper-pid in status: \(last); stderr: \((try? TextFile.read(f.dir.path + "/up.err")) ?? "")")
        let text = try await VigilExecutable.run(["status"], in: f.dir.path, environment: optional)
        #expect(text.stdout.contains("helper-pid=\(pid)"), "\(text.stdout)")
        #expect(text.stdout.contains("confinement="), "\(text.stdout)")
        // Alive: /proc/PID exists and is no zombie (an orphan's zombie waits for whoever reaps it here).
        func alive() -> Bool {
            guard let stat = try? TextFile.read("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else {
                return false
            }
            return !stat[close...].hasPrefix(") Z")
        }
        #expect(alive(), "the helper runs")

        // SIGKILL: the host runs no code; the kernel ends the helper (PR_SET_PDEATHSIG, and end-of-file on its socket).
        host.signal(SIGKILL)
        _ = host.wait()
        hostRuns = false
        let gone = await RuntimeFixtures.waitUntil(timeout: 10) { !alive() }
        #expect(gone, "the helper \(pid) outlived its host")
        #expect(f.markerLines("alpha") == ["start alpha"], "killed, not stopped")
    }
}
