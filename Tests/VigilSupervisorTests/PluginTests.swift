import CoreMetrics
import Foundation
import Logging
import Testing
import VigilBase
import VigilPlugin
import VigilSupervisorDesktop
import VigilSupervisorSettings
import VigilTestSupport

@testable import VigilSupervisor
@testable import VigilSupervisorEngine

/// The manifest defaults the signed `supervisor` manifest carries.
let manifestDefaults: [String: SettingValue] = [
    "backoff_initial_ms": .integer(100), "backoff_max_ms": .integer(30000), "stable_after_s": .integer(10),
    "start_limit_burst": .integer(5), "start_limit_interval_s": .integer(10), "stop_grace_s": .integer(5),
]

func makePlugin(
    _ overrides: [String: SettingValue], environment: [String: String],
    events: EventRecorder<PluginEvent> = EventRecorder<PluginEvent>(),
    metrics: any MetricsFactory = NOOPMetricsHandler.instance
) throws -> PluginRun {
    let run = PluginRun(reportingTo: events.record)
    let context = PluginContext(
        pluginName: "supervisor", hostName: "test-host",
        settings: PluginSettings(pluginName: "supervisor", defaults: manifestDefaults, overrides: overrides),
        logger: testLogger(), reporter: run.reporter, stateDirectory: "/nonexistent",
        environment: HostEnvironment(variables: environment), metrics: metrics)
    return run.adopt(try SupervisorPlugin.implementation(notifier: DesktopNotifier()).make(context))
}

/// The test environment without any session bus or systemd (tests pass what they need explicitly).
var isolatedEnvironment: [String: String] {
    var env = testEnvironment
    for key in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"] {
        env[key] = nil
    }
    return env
}

func worker(_ name: String, _ script: String, extra: [String: SettingValue] = [:]) -> SettingValue {
    var table: [String: SettingValue] = [
        "name": .string(name), "command": .string("/bin/sh"), "args": .array([.string("-c"), .string(script)]),
    ]
    table.merge(extra) { _, new in new }
    return .table(table)
}

@Suite("supervisor plugin: settings, systemd channel, details, events")
struct PluginTests {
    /// A stand-in for systemd's notify socket in `dir`, and the isolated environment naming it in
    /// `NOTIFY_SOCKET`, plus `variables`.
    static func systemd(
        in dir: TestDirectory, _ variables: [String: String] = [:]
    ) throws -> (NotifySocket, [String: String]) {
        let socket = try NotifySocket(path: dir.url("systemd.notify"))
        var environment = isolatedEnvironment.merging(variables) { _, new in new }
        environment["NOTIFY_SOCKET"] = socket.path
        return (socket, environment)
    }

    @Test("the checks read the workers with the plugin's own reader: the same specs; entries that do not read skipped")
    func readableWorkers() throws {
        let first = worker("a", "/bin/a")
        let third = worker(
            "c", "c", extra: ["env": .table(["PATH": .string("/opt/bin")]), "working_directory": .string("/srv")])
        let settings = PluginSettings(
            pluginName: "supervisor", defaults: manifestDefaults,
            overrides: [
                "workers": .array([
                    first, .table(["name": .string("b")]), third,
                    worker("d", "d", extra: ["restart": .string("sometimes")]),
                ])
            ])
        let readable = SupervisorSettings.readableWorkers(in: settings)
        #expect(readable.map(\.index) == [0, 2])
        // What the plugin runs for the entries that read, field for field.
        let plugin = try SupervisorSettings(
            PluginSettings(
                pluginName: "supervisor", defaults: manifestDefaults, overrides: ["workers": .array([first, third])]))
        #expect(readable.map(\.worker) == plugin.workers)
        #expect(readable.last?.worker.environment["PATH"] == "/opt/bin")
        #expect(readable.last?.worker.workingDirectory == "/srv")
        #expect(SupervisorSettings.readableWorkers(in: PluginSettings(pluginName: "supervisor", values: [:])).isEmpty)
    }

    @Test("settings from vigil.toml become worker specs; mistakes get clear errors")
    func settings() throws {
        let ok = try SupervisorSettings(
            PluginSettings(
                pluginName: "supervisor", defaults: manifestDefaults,
                overrides: [
                    "backoff_max_ms": .integer(5000),
                    "workers": .array([
                        .table([
                            "name": .string("signer"), "command": .string("/usr/bin/signerd"),
                            "args": .array([.string("--port"), .string("7000")]),
                            "env": .table(["RUST_LOG": .string("info")]), "working_directory": .string("/srv"),
                            "restart": .string("always"), "type": .string("notify"), "watchdog_sec": .integer(30),
                            "oom_score_adj": .integer(200),
                        ])
                    ]),
                ]))
        #expect(ok.configuration.backoffMax == .seconds(5))
        #expect(ok.configuration.startLimitBurst == 5)
        #expect(
            ok.workers == [
                WorkerSpec(
                    name: "signer", command: "/usr/bin/signerd", arguments: ["--port", "7000"],
                    environment: ["RUST_LOG": "info"], workingDirectory: "/srv", restart: .always, readiness: .notify,
                    watchdogSeconds: 30, oomScoreAdjust: 200)
            ])

        func message(_ overrides: [String: SettingValue]) -> String? {
            do {
                _ = try SupervisorSettings(
                    PluginSettings(pluginName: "supervisor", defaults: manifestDefaults, overrides: overrides))
                return nil
            } catch let error as PluginError {
                #expect(error.code == .invalidSetting)
                return error.message
            } catch { return "\(error)" }
        }
        #expect(message(["workers": .array([.table(["name": .string("a")])])])?.contains("workers[0].command") == true)
        #expect(
            message(["workers": .array([worker("a", "x", extra: ["restart": .string("sometimes")])])])?
                .contains("workers[0].restart") == true)
        #expect(
            message(["workers": .array([worker("a", "x", extra: ["comand": .string("x")])])])?
                .contains("unknown worker key") == true)
        #expect(
            message(["workers": .array([worker("a", "x"), worker("a", "y")])])?.contains("used by two workers") == true)
        #expect(message(["backoff_max_ms": .integer(10)])?.contains("backoff_max_ms") == true)
        #expect(message(["start_limit_bust": .integer(1)])?.contains("unknown setting") == true)
        #expect(
            message(["workers": .array([worker("a", "x", extra: ["args": .string("--x")])])])?
                .contains("workers[0].args") == true)
        #expect(
            message(["workers": .array([worker("a", "x", extra: ["oom_score_adj": .integer(-5000)])])])?
                .contains("oom_score_adj") == true)
    }

    @Test("the host's READY=1, STATUS=, watchdog pings and STOPPING=1 reach systemd's socket")
    func hostNotifyAndWatchdog() async throws {
        let dir = try TestDirectory("vigil-sup")
        defer { dir.remove() }
        let (systemd, environment) = try Self.systemd(in: dir, ["WATCHDOG_USEC": "200000"])  // ping every 100 ms
        let events = EventRecorder<PluginEvent>()
        let plugin = try makePlugin(
            ["workers": .array([worker("idle", "exec sleep 300")])], environment: environment, events: events)
        try await plugin.start()

        let first = try #require(await systemd.next(timeout: 5))
        #expect(first.split(separator: "\n").contains("READY=1"))
        #expect(first.split(separator: "\n").contains("STATUS=test-host — running in background"))
        // Four pings, spaced like a 100 ms timer rather than a burst: three periods are 0.3 s, and a
        // burst (pings queued while the reader was descheduled) arrives within a few ms. The first
        // ping may be read late on a loaded machine, so the bound leaves one period of slack.
        var pingTimes: [Double] = []
        let until = MonotonicClock.seconds() + 5
        while pingTimes.count < 4, MonotonicClock.seconds() < until, let message = await systemd.next(timeout: 1) {
            if message == "WATCHDOG=1" { pingTimes.append(MonotonicClock.seconds()) }
        }
        #expect(pingTimes.count == 4, "\(pingTimes.count) pings in 5 s at a 100 ms period; first: \(first)")
        if pingTimes.count == 4 {
            #expect(pingTimes[3] - pingTimes[0] >= 0.2, "pings came as a burst: \(pingTimes)")
        }
        let details = await plugin.details()
        #expect(details["channels"] == "systemd, vigil status")
        #expect(details["watchdog"] == "pinging systemd")
        #expect(details["worker.idle.state"] == "running")
        #expect(details["worker.idle.pid"] != nil)

        await plugin.stop()
        let after = await systemd.drained(quietFor: 0.4)
        #expect(after.contains { $0.split(separator: "\n").contains("STOPPING=1") })
        // No ping after STOPPING=1.
        if let stopping = after.firstIndex(where: { $0.contains("STOPPING=1") }) {
            #expect(!after[stopping...].contains("WATCHDOG=1"))
        }
        let late = await systemd.next(timeout: 0.3)
        #expect(late == nil)
        #expect(await plugin.details()["state"] == "stopped")
        await plugin.stop()  // idempotent
    }

    @Test("worker crashes, recovery and failure are reported to the host and shown in STATUS=")
    func eventsAndStatus() async throws {
        let dir = try TestDirectory("vigil-sup")
        defer { dir.remove() }
        let (systemd, environment) = try Self.systemd(in: dir)
        let events = EventRecorder<PluginEvent>()
        let marker = dir.url("ran-once")
        // Crashes once, then stays up; a second worker crash-loops into its start limit.
        let plugin = try makePlugin(
            [
                "backoff_initial_ms": .integer(20), "start_limit_burst": .integer(3),
                "workers": .array([
                    worker("flaky", "[ -e \(marker) ] && exec sleep 300; touch \(marker); exit 1"),
                    worker("broken", "exit 2"),
                ]),
            ], environment: environment, events: events)
        try await plugin.start()
        // The broken worker's failure is its own: the plugin is degraded (interrupted), not failed.
        #expect(
            await eventually {
                events.all.contains {
                    if case .interrupted(let r) = $0 { r.contains("worker broken failed") } else { false }
                }
            })
        #expect(!events.all.contains { if case .resumeFailed = $0 { true } else { false } })
        let details = await plugin.details()
        #expect(details["worker.flaky.state"] == "running")
        #expect(details["worker.flaky.restarts"] == "1")
        #expect(details["worker.broken.state"] == "failed")
        #expect(details["worker.broken.last_exit"] == "exited with status 2")
        #expect(details["worker.broken.reason"]?.contains("start limit") == true)
        #expect(
            events.all.contains {
                if case .interrupted(let r) = $0 { r.contains("flaky exited with status 1") } else { false }
            })
        let statuses = (await systemd.drained(quietFor: 0.3)).flatMap { $0.split(separator: "\n") }.filter {
            $0.hasPrefix("STATUS=")
        }
        #expect(statuses.last == "STATUS=test-host — running in background (broken failed)")
        await plugin.stop()
    }

    @Test("without systemd or a session bus, only `vigil status` is live and nothing fails")
    func noChannels() async throws {
        let plugin = try makePlugin([:], environment: isolatedEnvironment)
        try await plugin.start()
        let details = await plugin.details()
        #expect(details["channels"] == "vigil status")
        #expect(details["state"] == "running")
        #expect(details["workers"] == "")
        await plugin.stop()
    }

    @Test("a missing worker program fails start() with a startFailed error naming it")
    func startFailure() async throws {
        let plugin = try makePlugin(
            ["workers": .array([.table(["name": .string("x"), "command": .string("/nonexistent/prog")])])],
            environment: isolatedEnvironment)
        let error = await #expect(throws: PluginError.self) { try await plugin.start() }
        #expect(error?.code == .startFailed)
        #expect(error?.message.contains("/nonexistent/prog") == true)
        await plugin.stop()
    }
}
