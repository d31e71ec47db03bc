import Foundation
import Testing
import VigilTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// `vigil up` as a systemd service whose output is the journal: a real systemd-journald of the
/// test's own (PrivateJournal: a mount namespace, Debian's journald) receives its logs as native
/// entries, read back with `journalctl --directory`. And `vigil up` whose standard error is not
/// the journal (or whose journal is gone): today's text lines. The fields themselves, the names
/// and the catalog: VigilDBusTests' JournalTests.
@Suite("journald-native logs", .serialized, .timeLimit(.minutes(1)))
struct JournalLogTests {
    // The message ids (docs/logs.md): fixed, so that an alert written today still works.
    static let pluginFailed = "0bc1d68492ac4a90b045c10469cafd80"
    static let workerGaveUp = "b109f69c695540149bdfb8356aae1fd6"
    static let keyRotationRefused = "4ebc1e5a993449c793709cc0b751149f"
    static let sleepHandlingOff = "ef37005d438e4ee38ee5c1f0248057cd"

    /// A host "journal-test": the supervisor with a worker that crashes until its start limit
    /// gives up, a plugin whose manifest is now signed by another key (`p-rotated`) and one
    /// whose key was never trusted (`p-untrusted`).
    static func sandbox() async throws -> (CLISandbox, config: String, environment: [String: String]) {
        let s = try CLISandbox(realFirstParty: true)
        try s.dir.write(
            "work/vigil.toml",
            """
            plugins = ["supervisor", "p-rotated", "p-untrusted"]

            [host]
            name = "journal-test"
            services = ["supervisor"]

            [supervisor]
            notification = false
            backoff_initial_ms = 0
            backoff_max_ms = 0
            start_limit_burst = 2
            workers = [
              { name = "crash", command = "/bin/sh", args = ["-c", "echo crash says bye; exit 3"], restart = "always" },
            ]

            """)
        try await s.makePlugin("p-rotated")
        try await s.makePlugin("p-untrusted")
        for name in ["supervisor", "p-rotated"] {
            let r = try await s.vigil("plugin", "trust", name, "--yes")
            #expect(r.status == 0, "\(r.stderr)")
        }
        try FileManager.default.removeItem(atPath: s.dir.url("work/manifests/p-rotated/plugin.pub"))
        try await s.makePlugin("p-rotated", keyName: "other")
        _ = try s.dir.makeDirectory("run")
        #expect(chmod(s.dir.url("run"), 0o700) == 0)
        var environment = ProcessInfo.processInfo.environment
        for (name, value) in s.environment { environment[name] = value }
        environment["XDG_RUNTIME_DIR"] = s.dir.url("run")
        environment["HOME"] = s.dir.path
        environment["PULSE_SERVER"] = "unix:" + s.dir.url("no-such-pulse-socket")
        return (s, s.dir.url("work/vigil.toml"), PrivateJournal.serviceEnvironment(environment))
    }

    @Test("under journald: native entries with MESSAGE_IDs, fields and the host's name; stdout stays text")
    func nativeEntries() async throws {
        let (s, config, environment) = try await Self.sandbox()
        defer { s.remove() }
        let journal = try PrivateJournal(
            running: [VigilExecutable.path, "up", "--config", config], environment: environment, in: s.dir)
        let gaveUp = try await journal.waitForEntries(["MESSAGE_ID=\(Self.workerGaveUp)"], timeout: 30)
        let sleepOff = try await journal.waitForEntries(["MESSAGE_ID=\(Self.sleepHandlingOff)"], timeout: 10)
        // The supervisor plugin fails once its only worker gave up.
        _ = try await journal.waitForEntries(
            ["MESSAGE_ID=\(Self.pluginFailed)", "VIGIL_PLUGIN_NAME=supervisor"], timeout: 10)
        #expect(await journal.stop() == 0, "\(journal.output)")
        // Logged while the host was made, before the others.
        let rotated = try await journal.entries(["MESSAGE_ID=\(Self.keyRotationRefused)"])
        let failed = try await journal.entries(["MESSAGE_ID=\(Self.pluginFailed)"])
        let native = try await journal.entries(["SYSLOG_IDENTIFIER=journal-test"])
        let stream = try await journal.entries(["_TRANSPORT=stdout"])

        // The worker that gave up: one entry, every field of the issue.
        let worker = try #require(gaveUp.first, "no worker-gave-up entry; journald: \(journal.output); \(stream)")
        #expect(worker["MESSAGE"] == "worker failed: start limit hit")
        #expect(worker["PRIORITY"] == "3")
        #expect(worker["SYSLOG_IDENTIFIER"] == "journal-test")
        #expect(worker["_TRANSPORT"] == "journal")
        #expect(worker["VIGIL_EVENT"] == "worker-gave-up")
        #expect(worker["VIGIL_WORKER_NAME"] == "crash")
        #expect(worker["VIGIL_PLUGIN_NAME"] == "supervisor")
        #expect(worker["VIGIL_WORKER_REASON"]?.hasPrefix("start limit hit: ") == true, "\(worker)")
        #expect(worker["CODE_FILE"] == "VigilSupervisorEngine/SupervisorLoop+Workers.swift")
        #expect(worker["CODE_FUNC"] == "restart(_:now:)")
        #expect(worker["CODE_LINE"].flatMap { Int($0) }.map { $0 > 0 } == true, "\(worker)")
        #expect(gaveUp.count == 1, "\(gaveUp)")

        let sleep = try #require(sleepOff.first, "no sleep-handling-off entry: \(native)")
        #expect(sleep["PRIORITY"] == "5")
        #expect(sleep["VIGIL_SLEEP"] == "off")
        #expect(sleep["MESSAGE"]?.hasPrefix("sleep handling is off: ") == true, "\(sleep)")

        let rotation = try #require(rotated.first, "no key-rotation-refused entry: \(native)")
        #expect(rotation["VIGIL_PLUGIN_NAME"] == "p-rotated")
        #expect(rotation["PRIORITY"] == "3")
        // The host's name, though the entry was logged while the host was being made.
        #expect(rotation["SYSLOG_IDENTIFIER"] == "journal-test")
        #expect(rotation["MESSAGE"]?.contains("p-rotated") == true, "\(rotation)")
        #expect(rotated.count == 1, "\(rotated)")

        // The plugin never trusted, then the supervisor itself once its only worker gave up.
        #expect(failed.map { $0["VIGIL_PLUGIN_NAME"] } == ["p-untrusted", "supervisor"], "\(failed)")
        #expect(failed.allSatisfy { $0["VIGIL_EVENT"] == "plugin-failed" && $0["PRIORITY"] == "3" }, "\(failed)")

        // Every entry of vigil's own is native, under the host's name; notice and above only
        // (no --verbose); none says its event name in the text.
        #expect(native.count >= 4)
        for entry in native {
            #expect(entry["_TRANSPORT"] == "journal", "\(entry)")
            #expect(Int(entry["PRIORITY"] ?? "") ?? 9 <= 5, "\(entry)")
        }
        // Standard output is still the display's plain lines, on the stream; standard error
        // carried no text copy of the log lines.
        let lines = stream.compactMap { $0["MESSAGE"] }
        #expect(lines.contains { $0.hasPrefix("vigil up: host journal-test, pid ") }, "\(lines)")
        #expect(lines.contains("crash says bye"), "\(lines)")
        #expect(
            !lines.contains { $0.contains("start limit hit") && $0.contains("[VigilSupervisorEngine]") }, "\(lines)")
    }

    @Test("vigil run without a vigil.toml under journald: its command giving up is the same entry, as `vigil`")
    func runGivesUp() async throws {
        let (s, _, environment) = try await Self.sandbox()
        defer { s.remove() }
        try FileManager.default.removeItem(atPath: s.dir.url("work/vigil.toml"))
        let journal = try PrivateJournal(
            running: [
                "/usr/bin/env", "-C", s.work, VigilExecutable.path, "run", "--restart", "always",
                "--restart-delay-ms", "1", "--max-restart-delay-ms", "1", "--start-limit-burst", "2", "--",
                "/bin/sh", "-c", "exit 4",
            ], environment: environment, in: s.dir)
        let gaveUp = try await journal.waitForEntries(["MESSAGE_ID=\(Self.workerGaveUp)"], timeout: 30)
        #expect(await journal.stop() == 0, "\(journal.output)")
        let everything = try await journal.entries([]).compactMap { $0["MESSAGE"] }
        let entry = try #require(gaveUp.first, "\(everything)")
        #expect(entry["MESSAGE"] == "worker failed: start limit hit")
        #expect(entry["PRIORITY"] == "3")
        // No host: the executable's name, as systemd would name the unit's lines.
        #expect(entry["SYSLOG_IDENTIFIER"] == "vigil")
        #expect(entry["VIGIL_WORKER_NAME"] == "sh")
        #expect(entry["VIGIL_WORKER_REASON"]?.contains("exited with status 4") == true, "\(entry)")
        #expect(entry["_TRANSPORT"] == "journal")
    }

    @Test("a library host with README's two lines (VigilJournal): native entries under its identifier")
    func libraryHost() async throws {
        let markers = try TestDirectory("vigil-journal-markers")
        defer { markers.remove() }
        let project = try await SupervisorRuntimeTests.project(workers: [
            MetricsExportTests.crashOnce("crash-once", "exit 7", marker: markers.url("exit"))
        ])
        defer { project.dir.remove() }
        let journal = try PrivateJournal(
            running: ["/usr/bin/env", "-C", project.dir.path, "--", HostExitTests.libraryHost],
            environment: PrivateJournal.serviceEnvironment(project.environment), in: project.dir)
        let restarted = try await journal.waitForEntries(["MESSAGE_ID=\(WorkerCrashObservedTests.workerRestarted)"])
        #expect(await journal.stop() == 0, "\(journal.output)")
        let entry = try #require(restarted.first, "no entry; journald: \(journal.output)")
        #expect(entry["SYSLOG_IDENTIFIER"] == "my-app")
        #expect(entry["_TRANSPORT"] == "journal")
        #expect(entry["PRIORITY"] == "4")
        #expect(entry["VIGIL_WORKER_NAME"] == "crash-once")
        #expect(entry["VIGIL_WORKER_EXIT_CODE"] == "7")
        #expect(entry["VIGIL_PLUGIN_NAME"] == "supervisor")
        // Nothing of the library host's own logging went to the stream as text.
        let stream = try await journal.entries(["_TRANSPORT=stdout"]).compactMap { $0["MESSAGE"] }
        #expect(!stream.contains { $0.contains("restarting") }, "\(stream)")
    }

    /// `vigil up --verbose` of the sandbox with standard error to a file and `environment`
    /// (through `wrapper`, an argv prefix); its standard error once it logged the worker's end.
    static func textLines(
        _ s: CLISandbox, config: String, environment: [String: String], wrapper: [String]
    ) async throws -> String {
        let err = s.dir.url("up.err")
        unlink(err)
        let up = try ChildProcess(
            wrapper[0], Array(wrapper.dropFirst()) + [VigilExecutable.path, "up", "--verbose", "--config", config],
            environment: environment, stdout: s.dir.url("up.out"), stderr: err)
        defer { _ = up.terminate(grace: 5) }
        let logged = await RuntimeFixtures.waitUntil(timeout: 30) {
            ((try? TextFile.read(err)) ?? "").contains("worker failed: start limit hit")
        }
        #expect(logged, "\((try? TextFile.read(err)) ?? "")")
        return (try? TextFile.read(err)) ?? ""
    }

    /// The text line of the worker's end, as the terminal handler prints it: its metadata, and
    /// not the event tag (kept for the journal).
    static func expectTodaysLine(_ text: String) {
        let line = text.split(separator: "\n").first { $0.contains("worker failed: start limit hit") } ?? ""
        #expect(line.contains(" error vigil: "), "\(text)")
        #expect(line.contains("worker.name=crash"), "\(line)")
        #expect(line.contains("[VigilSupervisorEngine]"), "\(line)")
        #expect(!line.contains("vigil.event") && !line.contains("worker-gave-up"), "\(line)")
        #expect(!text.contains("vigil.event"), "\(text)")
    }

    @Test("JOURNAL_STREAM that names another file than standard error: today's text lines")
    func inheritedJournalStream() async throws {
        let (s, config, environment) = try await Self.sandbox()
        defer { s.remove() }
        var inherited = environment
        // A JOURNAL_STREAM inherited from a service whose child's standard error went to a file.
        var info = stat()
        #expect(stat(config, &info) == 0)
        inherited["JOURNAL_STREAM"] = "\(info.st_dev):\(info.st_ino)"
        Self.expectTodaysLine(
            try await Self.textLines(s, config: config, environment: inherited, wrapper: ["/usr/bin/env"]))
    }

    @Test("standard error is the journal but no journald takes the entries: the text lines, nothing lost")
    func journalGone() async throws {
        let (s, config, environment) = try await Self.sandbox()
        defer { s.remove() }
        // A namespace whose /run has no journal socket; JOURNAL_STREAM names standard error.
        let script = #"mount -t tmpfs tmpfs /run && JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2) exec "$@""#
        let text = try await Self.textLines(
            s, config: config, environment: environment,
            wrapper: ["/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script, "sh"])
        Self.expectTodaysLine(text)
    }
}
