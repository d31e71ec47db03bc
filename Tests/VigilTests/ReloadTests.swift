import Foundation
import Synchronization
import Testing
import VigilCore
import VigilPlugin
import VigilTestSupport

@testable import Vigil
@testable import VigilHostCore

/// `VigilHost.reload()` with real components: a private PulseAudio (null sink), the silent
/// engine playing on it and the supervisor running real worker processes, both from signed
/// manifests in a `vigil.toml`. What changed restarts; what did not keeps running — the keep-alive
/// stream never leaves the sink, which stays RUNNING throughout.
@Suite("Reload with real components", .serialized, .timeLimit(.minutes(2)))
struct ReloadTests {
    /// A project with `silent-engine` and `supervisor` signed in place and trusted.
    struct Project {
        let project: HostProject
        let pulse: PulseAudioServer
        let keys: [String: String]

        init(pulse: PulseAudioServer) throws {
            project = try HostProject()
            self.pulse = pulse
            var keys: [String: String] = [:]
            for name in ["silent-engine", "supervisor"] {
                keys[name] = try project.signedPlugin(name, entry: name, settings: "{}")
            }
            self.keys = keys
        }

        func marker(_ name: String) -> String { project.dir.url("\(name).pid") }

        /// A worker that writes its pid and `tag` (its command line's last argument) to `NAME.pid`, then sleeps.
        func worker(_ name: String, tag: String = "v1") -> String {
            #"{ name = "\#(name)", command = "/bin/sh", args = ["-c", "echo $$ $1 > \"$0.tmp\" && mv \"$0.tmp\" \"$0\" && exec sleep 600", "\#(marker(name))", "\#(tag)"] }"#
        }

        /// Writes vigil.toml with `plugins`, the trust list and these workers.
        func configure(
            plugins: [String] = ["silent-engine", "supervisor"], workers: [String], extra: String = "",
            backoffMs: Int = 100
        ) throws {
            let trusted = keys.sorted { $0.key < $1.key }.map { "\"\($0.key)\" = \"\($0.value)\"" }
            try project.config(
                """
                plugins = [\(plugins.map { "\"\($0)\"" }.joined(separator: ", "))]
                \(extra)
                [trusted_plugins]
                \(trusted.joined(separator: "\n"))

                [supervisor]
                backoff_initial_ms = \(backoffMs)
                workers = [
                  \(workers.joined(separator: ",\n  "))
                ]
                """)
        }

        func host() throws -> VigilHost {
            // The sound server is found from the runtime directory; state stays in the project.
            let environment = project.dir.environment([
                "XDG_RUNTIME_DIR": pulse.directory.path, "PATH": "/usr/bin:/bin",
            ])
            return try VigilHost(
                configPath: project.configPath,
                options: VigilHost.Options(publishStatus: false, environment: environment),
                logger: TestPlugins.quietLogger)
        }

        /// What the worker wrote: its pid and its tag.
        func written(_ worker: String) -> (pid: Int32, tag: String)? {
            let fields = ((try? TextFile.read(marker(worker))) ?? "").split(whereSeparator: \.isWhitespace)
            guard fields.count == 2, let pid = Int32(fields[0]) else { return nil }
            return (pid, String(fields[1]))
        }

        func pid(_ worker: String) -> Int32? { written(worker)?.pid }

        func alive(_ worker: String) -> Bool { pid(worker).map { kill($0, 0) == 0 } ?? false }
    }

    /// Samples the null sink's state and records PulseAudio's sink-input events while `body` runs.
    /// Returns what `body` returned, every state seen, and the sink-input events (`new`, `remove`).
    static func watchingSink<T>(_ pulse: PulseAudioServer, _ body: () async throws -> T) async throws
        -> (T, states: [String], events: [String])
    {
        let log = pulse.directory.appendingPathComponent("subscribe-\(UUID().uuidString.prefix(6)).log").path
        // Line-buffered, so each event is in the file as it happens.
        let subscriber = try ChildProcess(
            "/usr/bin/stdbuf", ["-oL", "/usr/bin/pactl", "subscribe"], environment: pulse.environment, stdout: log)
        defer {
            subscriber.signal(SIGTERM)
            subscriber.wait()
        }
        // pactl subscribes once connected: a first event it must see proves it listens.
        var volume = 90
        #expect(
            await RuntimeFixtures.waitUntil(timeout: 5) {
                // A change each time (setting the volume it has is no event).
                volume = volume == 90 ? 100 : 90
                _ = try? pulse.pactl(["set-sink-volume", pulse.sinkName, "\(volume)%"])
                return ((try? TextFile.read(log)) ?? "").contains("on sink #")
            }, "pactl subscribe saw no event: \((try? TextFile.read(log)) ?? "")")
        let sampler = SinkSampler(pulse)
        let result: T
        do {
            result = try await body()
        } catch {
            await sampler.finish()
            throw error
        }
        // A last sample after the body: the state it left the sink in.
        try? await Task.sleep(for: .milliseconds(100))
        let states = await sampler.finish()
        let events = ((try? TextFile.read(log)) ?? "").split(separator: "\n").map(String.init).filter {
            $0.contains("sink-input")
        }
        return (result, states, events)
    }

    /// Runs `body` with a private PulseAudio, a project and its host up (``startedHost(_:)``);
    /// stops the host and removes everything afterwards.
    static func withHost(_ body: (Project, VigilHost) async throws -> Void) async throws {
        try await PulseAudioServer.with { pulse in
            let p = try Project(pulse: pulse)
            defer { p.project.remove() }
            let host = try await startedHost(p)
            try await body(p, host)
            await host.stop()
        }
    }

    /// A host of `p` with one worker, `alpha`, up: both plugins running, the sink RUNNING.
    static func startedHost(_ p: Project) async throws -> VigilHost {
        try p.configure(workers: [p.worker("alpha")])
        let host = try p.host()
        let status = await host.keepAlive()
        #expect(status[plugin: "silent-engine"]?.state == .running, "\(status)")
        #expect(status[plugin: "supervisor"]?.state == .running, "\(status)")
        #expect(await p.pulse.waitForSink(state: "RUNNING", timeout: 10))
        #expect(await RuntimeFixtures.waitUntil(timeout: 10) { p.alive("alpha") })
        return host
    }

    static func expectUnbroken(_ states: [String], _ events: [String], _ comment: Comment) {
        #expect(states.count >= 2, "a sample at least before and after: \(states)")
        #expect(states.allSatisfy { $0 == "RUNNING" }, "\(comment): the sink left RUNNING: \(states)")
        #expect(
            !events.contains { $0.contains("'remove'") || $0.contains("'new'") },
            "\(comment): the keep-alive stream was dropped or replaced: \(events)")
    }

    @Test(
        "a worker added, changed or removed restarts only that worker; the silent engine's stream never leaves RUNNING")
    func workersChangeStreamStays() async throws {
        try await Self.withHost { p, host in
            let pulse = p.pulse
            let status = await host.status()
            let engineSince = status[plugin: "silent-engine"]?.since
            let supervisorSince = status[plugin: "supervisor"]?.since
            let alpha = try #require(p.pid("alpha"))

            // Added: beta starts, alpha keeps its process.
            try p.configure(workers: [p.worker("alpha"), p.worker("beta")])
            let (report, states, events) = try await Self.watchingSink(pulse) {
                let report = try await host.reload()
                #expect(await RuntimeFixtures.waitUntil(timeout: 10) { p.alive("beta") })
                return report
            }
            #expect(report.reconfigured == ["supervisor"], "\(report)")
            #expect(report.restarted.isEmpty && report.added.isEmpty && report.removed.isEmpty, "\(report)")
            #expect(report.kept == ["silent-engine"])
            Self.expectUnbroken(states, events, "adding a worker")
            #expect(p.pid("alpha") == alpha && p.alive("alpha"), "the unchanged worker kept its process")
            let beta = try #require(p.written("beta"))

            // Changed: beta restarts with its new command line; alpha still runs its first process.
            try p.configure(workers: [p.worker("alpha"), p.worker("beta", tag: "v2")])
            let (changed, states2, events2) = try await Self.watchingSink(pulse) {
                let report = try await host.reload()
                #expect(await RuntimeFixtures.waitUntil(timeout: 10) { p.written("beta")?.tag == "v2" })
                return report
            }
            #expect(changed.reconfigured == ["supervisor"] && changed.restarted.isEmpty, "\(changed)")
            Self.expectUnbroken(states2, events2, "changing a worker")
            let beta2 = try #require(p.written("beta"))
            #expect(beta2.pid != beta.pid && p.alive("beta"), "beta runs its new entry in a new process")
            #expect(await RuntimeFixtures.waitUntil(timeout: 10) { kill(beta.pid, 0) != 0 }, "beta's old process went")
            #expect(p.pid("alpha") == alpha && p.alive("alpha"), "the unchanged worker kept its process")

            // Removed: beta stops, alpha runs on.
            try p.configure(workers: [p.worker("alpha")])
            let (removed, states3, events3) = try await Self.watchingSink(pulse) {
                let report = try await host.reload()
                #expect(await RuntimeFixtures.waitUntil(timeout: 10) { kill(beta2.pid, 0) != 0 })
                return report
            }
            #expect(removed.reconfigured == ["supervisor"], "\(removed)")
            Self.expectUnbroken(states3, events3, "removing a worker")
            #expect(p.pid("alpha") == alpha && p.alive("alpha"))
            let after = await host.status()
            #expect(after[plugin: "silent-engine"]?.since == engineSince, "the engine was not restarted")
            #expect(after[plugin: "supervisor"]?.state == .running)
            #expect(after[plugin: "supervisor"]?.details["workers"] == "alpha", "\(after)")
            #expect(after[plugin: "supervisor"]?.since == supervisorSince, "the supervisor plugin was not restarted")
        }
    }

    @Test("a [supervisor] setting other than the workers restarts the supervisor with every worker; the stream stays")
    func supervisorSettingRestartsIt() async throws {
        try await Self.withHost { p, host in
            let alpha = try #require(p.pid("alpha"))
            try p.configure(workers: [p.worker("alpha")], backoffMs: 200)
            let (report, states, events) = try await Self.watchingSink(p.pulse) {
                let report = try await host.reload()
                #expect(await RuntimeFixtures.waitUntil(timeout: 10) { p.pid("alpha") != alpha && p.alive("alpha") })
                return report
            }
            #expect(report.restarted == ["supervisor"] && report.reconfigured.isEmpty, "\(report)")
            #expect(report.kept == ["silent-engine"])
            Self.expectUnbroken(states, events, "changing backoff_initial_ms")
            #expect(!(kill(alpha, 0) == 0), "the old worker went with the old supervisor")
        }
    }

    @Test("a configuration that does not check is refused; the old plugins and workers keep running")
    func badConfigurationRefused() async throws {
        try await Self.withHost { p, host in
            let pulse = p.pulse
            let alpha = p.pid("alpha")
            let before = await host.status()

            // A plugin that is not signed and trusted, then a file that is not TOML, then a [host] change.
            let cases: [(String, () throws -> Void, String, VigilError.Code)] = [
                (
                    "an untrusted plugin",
                    {
                        try p.configure(plugins: ["silent-engine", "supervisor", "ghost"], workers: [p.worker("beta")])
                    },
                    "ghost", .reloadRefused
                ),
                (
                    "broken TOML", { try p.project.config("plugins = [\"silent-engine\"\n") }, "vigil.toml",
                    .reloadRefused
                ),
                (
                    "a [host] change",
                    { try p.configure(workers: [p.worker("beta")], extra: "[host]\nname = \"renamed\"\n") },
                    "  [host] name: ", .reloadNeedsRestart
                ),
                (
                    "a [metrics] change",
                    {
                        try p.configure(
                            workers: [p.worker("beta")],
                            extra: "[metrics]\ntextfile = \"\(p.project.dir.url("v.prom"))\"\n")
                    },
                    "  [metrics] textfile: ", .reloadNeedsRestart
                ),
            ]
            for (label, write, mentioned, code) in cases {
                try write()
                let (outcome, states, events) = try await Self.watchingSink(pulse) {
                    do throws(VigilError) {
                        return Result<ReloadReport, VigilError>.success(try await host.reload())
                    } catch {
                        return .failure(error)
                    }
                }
                guard case .failure(let error) = outcome else {
                    Issue.record("\(label): the reload was not refused")
                    continue
                }
                #expect(error.code == code, "\(label): \(error.code)")
                #expect(error.message.contains(mentioned), "\(label): \(error.message)")
                #expect(error.message.contains("keeps running its previous configuration"), "\(label)")
                Self.expectUnbroken(states, events, "\(label)")
                let now = await host.status()
                #expect(now.plugins.map(\.name) == before.plugins.map(\.name), "\(label)")
                #expect(now.plugins.map(\.since) == before.plugins.map(\.since), "\(label): nothing restarted")
                #expect(p.pid("alpha") == alpha && p.alive("alpha"), "\(label): the old worker runs")
                #expect(p.pid("beta") == nil, "\(label): the refused worker never started")
            }
        }
    }

    @Test("a changed manifest restarts only that plugin; a removed plugin stops and an added one starts")
    func changedManifestRestartsOnlyIt() async throws {
        try await Self.withHost { p, host in
            let pulse = p.pulse
            let alpha = p.pid("alpha")
            let before = await host.status()

            // The same plugin in a new version, signed with a new key (and the trust list updated).
            var keys = p.keys
            keys["silent-engine"] = try p.project.resign("silent-engine", version: "1.2.4")
            let resigned = Project(project: p.project, pulse: pulse, keys: keys)
            try resigned.configure(workers: [p.worker("alpha")])
            let report = try await host.reload()
            #expect(report.restarted == ["silent-engine"])
            #expect(report.kept == ["supervisor"])
            let after = await host.status()
            #expect(after[plugin: "silent-engine"]?.state == .running)
            #expect(after[plugin: "silent-engine"]?.since != before[plugin: "silent-engine"]?.since)
            #expect(after[plugin: "supervisor"]?.since == before[plugin: "supervisor"]?.since)
            #expect(p.pid("alpha") == alpha && p.alive("alpha"), "the supervisor's worker was not restarted")

            // Removed and added: the engine goes, and comes back.
            try resigned.configure(plugins: ["supervisor"], workers: [p.worker("alpha")])
            let removed = try await host.reload()
            #expect(removed.removed == ["silent-engine"] && removed.kept == ["supervisor"])
            #expect((await host.status()).plugins.map(\.name) == ["supervisor"])
            #expect(await pulse.waitForSink(state: "SUSPENDED", timeout: 10), "the stream went with the plugin")
            try resigned.configure(plugins: ["supervisor", "silent-engine"], workers: [p.worker("alpha")])
            let added = try await host.reload()
            #expect(added.added == ["silent-engine"] && added.kept == ["supervisor"])
            #expect(await pulse.waitForSink(state: "RUNNING", timeout: 10))
            #expect(p.pid("alpha") == alpha && p.alive("alpha"))
        }
    }
}

extension ReloadTests.Project {
    init(project: HostProject, pulse: PulseAudioServer, keys: [String: String]) {
        self.project = project
        self.pulse = pulse
        self.keys = keys
    }
}

/// Samples a sink's state every 20 ms on a thread of its own until ``finish()``.
final class SinkSampler: Sendable {
    private let states = Mutex<[String]>([])
    private let done = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)

    init(_ pulse: PulseAudioServer) {
        // The first sample before anything happens.
        states.withLock { $0.append((try? pulse.sinkState()) ?? "none") }
        let thread = Thread { [self] in
            while !done.load(ordering: .acquiring) {
                let state = (try? pulse.sinkState()) ?? "none"
                states.withLock { $0.append(state) }
                usleep(20_000)
            }
            finished.store(true, ordering: .releasing)
        }
        thread.start()
    }

    /// Stops sampling and returns every state seen.
    @discardableResult
    func finish() async -> [String] {
        done.store(true, ordering: .releasing)
        while !finished.load(ordering: .acquiring) { try? await Task.sleep(for: .milliseconds(10)) }
        return states.withLock { $0 }
    }
}

/// What a reload refuses because only a restart applies it: each key by name, and only those.
@Suite("Reload: the keys only a restart applies")
struct ReloadRestartOnlyTests {
    typealias Tables = [String: [String: SettingValue]]

    static func changes(
        _ old: HostDeclarations, _ new: HostDeclarations, tables: (Tables, Tables) = ([:], [:]),
        unsafe: ([String], [String]) = ([], [])
    ) -> [String] {
        VigilHost.restartOnlyChanges(from: (old, tables.0, unsafe.0), to: (new, tables.1, unsafe.1)).map(\.key)
    }

    @Test("each changed key is named: [host]'s, a part table's, acknowledge_unsafe_plugins")
    func eachKeyNamed() {
        let host = HostDeclarations(name: "kiosk", backgroundModes: ["audio"], services: ["supervisor"])
        #expect(Self.changes(host, host).isEmpty)
        var renamed = host
        renamed.name = "lobby"
        #expect(Self.changes(host, renamed) == ["[host] name"])
        var declared = host
        declared.backgroundModes = []
        declared.inhibitSleep = true
        #expect(Self.changes(host, declared) == ["[host] background_modes", "[host] inhibit_sleep"])
        let before: Tables = ["announce": ["duck_level": .double(0.3)], "metrics": [:]]
        let after: Tables = [
            "announce": ["duck_level": .double(0.5)], "metrics": ["listen": .string("127.0.0.1:9100")],
        ]
        #expect(Self.changes(host, host, tables: (before, after)) == ["[announce] duck_level", "[metrics] listen"])
        #expect(Self.changes(host, host, unsafe: ([], ["heartbeat"])) == ["acknowledge_unsafe_plugins"])
    }

    @Test("foreign_tables (read by vigil check and the build only) and an empty table added are no restart")
    func whatAReloadTakes() {
        let host = HostDeclarations(name: "kiosk")
        var foreign = host
        foreign.foreignTables = ["myapp"]
        #expect(Self.changes(host, foreign).isEmpty)
        #expect(Self.changes(host, host, tables: ([:], ["metrics": [:]])).isEmpty)
    }
}
