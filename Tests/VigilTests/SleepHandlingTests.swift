import Foundation
import Logging
import Testing
import VigilCore
import VigilDBus
import VigilPlugin
import VigilSoundscape
import VigilTestSupport

@testable import Vigil
@testable import VigilHostCore

/// Sleep and resume through systemd-logind, with a real `dbus-daemon` as a private "system" bus
/// and a logind STAND-IN on it (``LogindStandIn``; logind itself cannot run here).
@Suite("Sleep and resume (logind stand-in)", .serialized, .timeLimit(.minutes(2)))
struct SleepHandlingTests {
    static let logger = TestPlugins.quietLogger

    /// The inhibitors the stand-in lists through `ListInhibitors`, as (what, who, mode).
    static func listInhibitors(_ bus: DBusDaemon) async throws -> [(what: String, who: String, mode: String)] {
        try await listInhibitors(address: bus.address)
    }

    /// The inhibitors the stand-in on the bus at `address` lists.
    static func listInhibitors(address: String) async throws -> [(what: String, who: String, mode: String)] {
        let connection = try await DBusConnection.connect(to: .address(address), logger: logger)
        defer { Task { await connection.close() } }
        let reply = try await connection.call(
            destination: "org.freedesktop.login1", path: "/org/freedesktop/login1",
            interface: "org.freedesktop.login1.Manager", member: "ListInhibitors")
        return (reply.first?.array ?? []).compactMap { entry in
            guard case .structure(let fields) = entry, fields.count == 6 else { return nil }
            return (fields[0].string ?? "", fields[1].string ?? "", fields[3].string ?? "")
        }
    }

    /// Asks the stand-in to emit `PrepareForSleep(false)` and waits for `plugin`'s `resumed` event;
    /// false when the events end first.
    static func wakeUp(_ bus: DBusDaemon, until plugin: String, resumesIn events: AsyncStream<HostEvent>)
        async throws -> Bool
    {
        try await emitPrepareForSleep(bus, false)
        for await event in events where event.plugin == plugin && event.kind == .resumed { return true }
        return false
    }

    /// Asks the stand-in to emit `PrepareForSleep(start)`.
    static func emitPrepareForSleep(_ bus: DBusDaemon, _ start: Bool) async throws {
        let connection = try await DBusConnection.connect(to: .address(bus.address), logger: logger)
        _ = try await connection.call(
            destination: "org.freedesktop.login1", path: "/org/freedesktop/login1",
            interface: "org.vigil.test.LogindStandIn", member: "EmitPrepareForSleep", arguments: [.bool(start)])
        await connection.close()
    }

    static func options(_ variables: [String: String]) -> VigilHost.Options {
        VigilHost.Options(publishStatus: false, environment: RequirementChecker.Environment(variables: variables))
    }

    static func silentEngine(_ pulse: PulseAudioServer) throws -> VigilHost.PreparedPlugin {
        let implementation = try #require(PluginRegistry.builtin.implementation(for: "silent-engine"))
        return VigilHost.PreparedPlugin(
            name: "silent-engine", version: "1.0.0", requirements: [HostRequirement(kind: .audioOutput)],
            settings: PluginSettings(
                pluginName: "silent-engine",
                values: ["pulse_server": .string(pulse.address), "retry_max_ms": .integer(1000)]),
            implementation: implementation)
    }

    /// Runs `body` with a temporary directory, a PulseAudio server, a private system bus and the
    /// logind stand-in on it (which tells how many of the server's streams are left at sleep).
    private func withSleepingSession(
        _ body: (TestDirectory, PulseAudioServer, DBusDaemon, LogindStandIn) async throws -> Void
    ) async throws {
        try await RuntimeFixtures.withTempDirectory { directory in
            try await PulseAudioServer.with { pulse in
                try await LogindStandIn.withSystemBus(directory: directory.path, pulseServer: pulse.address) {
                    bus, logind in try await body(directory, pulse, bus, logind)
                }
            }
        }
    }

    @Test("a host on the host core alone takes no sleep lock; the same host through Vigil's initialiser does")
    func hostCoreHasNoSleepHandling() async throws {
        try await withSleepingSession { _, pulse, bus, _ in
            let variables = ["DBUS_SYSTEM_BUS_ADDRESS": bus.address, "PULSE_SERVER": pulse.address]
            let plugins = [TestPlugins.prepared("worker", ledger: InstanceLedger())]
            let core = try VigilHost(
                preparedPlugins: plugins, hostName: "core-host", options: Self.options(variables), logger: Self.logger)
            let status = await core.keepAlive()
            #expect(status[plugin: "worker"]?.state == .running)
            #expect(status.sleep == nil)
            #expect(try await Self.listInhibitors(bus).isEmpty)
            await core.stop()
            let umbrella = try VigilHost(
                plugins: plugins, hostName: "umbrella-host", options: Self.options(variables), logger: Self.logger)
            #expect(await umbrella.keepAlive().sleep == SleepStatus(locks: ["delay"]))
            #expect(try await Self.listInhibitors(bus).map(\.who) == ["umbrella-host"])
            await umbrella.stop()
        }
    }

    @Test(
        "delay lock after keepAlive(); PrepareForSleep(true) stops the stream before the lock is released; false brings it back"
    )
    func sleepAndResume() async throws {
        try await withSleepingSession { directory, pulse, bus, logind in
            let ledger = InstanceLedger()
            // An audio plugin whose stop() takes 1 s, stopped before silent-engine: had the host
            // released the lock before its plugins were stopped, the stand-in would count the
            // silent-engine stream still there.
            let slow = TestPlugins.prepared(
                "slow-audio", ledger: InstanceLedger(), requirements: [HostRequirement(kind: .audioOutput)],
                delay: .seconds(1))
            let host = try VigilHost(
                plugins: [slow, try Self.silentEngine(pulse), TestPlugins.prepared("other", ledger: ledger)],
                hostName: "sleep-test",
                options: Self.options(["DBUS_SYSTEM_BUS_ADDRESS": bus.address, "PULSE_SERVER": pulse.address]),
                logger: Self.logger)
            let events = host.events

            let status = await host.keepAlive()
            #expect(status[plugin: "silent-engine"]?.state == .running)
            #expect(status.sleep == SleepStatus(locks: ["delay"]))
            let held = try await Self.listInhibitors(bus)
            #expect(held.count == 1)
            #expect(held.first?.what == "sleep" && held.first?.who == "sleep-test" && held.first?.mode == "delay")
            _ = try await pulse.waitForSinkInput { $0.applicationName == "sleep-test (Vigil keep-alive)" }

            try await Self.emitPrepareForSleep(bus, true)
            let released = await RuntimeFixtures.waitUntil(timeout: 20) {
                !logind.steps("released", mode: "delay").isEmpty
            }
            #expect(released, "the delay lock was not released after PrepareForSleep(true)")
            // The stand-in counted the sink inputs the moment the lock's descriptor closed.
            #expect(logind.steps("released", mode: "delay").first?["sink_inputs"] as? Int == 0)
            #expect(logind.steps("prepare-for-sleep").first?["sink_inputs"] as? Int == 1)
            #expect(await pulse.waitForSink(state: "SUSPENDED", timeout: 20))
            let asleep = await host.status()
            guard case .interrupted = asleep[plugin: "silent-engine"]?.state else {
                Issue.record("silent-engine is \(String(describing: asleep[plugin: "silent-engine"]?.state))")
                return
            }
            guard case .interrupted = asleep[plugin: "slow-audio"]?.state else {
                Issue.record("slow-audio is \(String(describing: asleep[plugin: "slow-audio"]?.state))")
                return
            }
            #expect(asleep[plugin: "other"]?.state == .running)  // not an audio plugin: untouched
            #expect(ledger.snapshot.stopCalls == 0)
            #expect(asleep.sleep == SleepStatus(locks: []))

            #expect(try await Self.wakeUp(bus, until: "silent-engine", resumesIn: events))
            _ = try await pulse.waitForSinkInput { $0.applicationName == "sleep-test (Vigil keep-alive)" }
            #expect(await host.status()[plugin: "silent-engine"]?.state == .running)
            let again = await RuntimeFixtures.waitUntil(timeout: 20) {
                logind.steps("inhibit", mode: "delay").count == 2
            }
            #expect(again, "the delay lock was not taken again after PrepareForSleep(false)")
            #expect(try await Self.listInhibitors(bus).map(\.mode) == ["delay"])
            #expect(await host.status().sleep == SleepStatus(locks: ["delay"]))

            await host.stop()
            #expect(try await Self.listInhibitors(bus).isEmpty)
        }
    }

    @Test("soundscape: stopped before the lock is released, its preferences saved, back after the wake-up with them")
    func soundscapeKeepsPreferences() async throws {
        try await withSleepingSession { directory, pulse, bus, logind in
            let implementation = try #require(PluginRegistry.builtin.implementation(for: "soundscape"))
            let soundscape = VigilHost.PreparedPlugin(
                name: "soundscape", version: "1.0.0", requirements: [HostRequirement(kind: .audioOutput)],
                settings: PluginSettings(
                    pluginName: "soundscape",
                    values: [
                        "pulse_server": .string(pulse.address), "mpris": .bool(false),
                        "control_socket": .bool(false),
                    ]),
                implementation: implementation)
            let host = try VigilHost(
                plugins: [soundscape], hostName: "sleep-soundscape",
                options: Self.options([
                    "DBUS_SYSTEM_BUS_ADDRESS": bus.address, "PULSE_SERVER": pulse.address,
                    "XDG_STATE_HOME": directory.path + "/state",
                ]),
                logger: Self.logger)
            let events = host.events
            #expect(await host.keepAlive()[plugin: "soundscape"]?.state == .running)
            let controller = try #require(SoundscapeController.running)
            try controller.select("rain")
            try controller.setVolume(0.2)

            try await Self.emitPrepareForSleep(bus, true)
            #expect(
                await RuntimeFixtures.waitUntil(timeout: 20) { !logind.steps("released", mode: "delay").isEmpty })
            #expect(logind.steps("prepare-for-sleep").first?["sink_inputs"] as? Int == 1)
            #expect(logind.steps("released", mode: "delay").first?["sink_inputs"] as? Int == 0)
            #expect(await pulse.waitForSink(state: "SUSPENDED", timeout: 20))

            #expect(try await Self.wakeUp(bus, until: "soundscape", resumesIn: events))
            // A fresh instance, started from the preferences the stopped one saved.
            let details = await host.status()[plugin: "soundscape"]?.details ?? [:]
            #expect(details["soundscape"] == "rain", "\(details)")
            #expect(details["volume"] == "0.20", "\(details)")
            #expect(await pulse.waitForSink(state: "RUNNING", timeout: 20))
            await host.stop()
        }
    }

    @Test("the block lock is held only with [host] inhibit_sleep = true")
    func blockLockOnlyWhenConfigured() async throws {
        try await RuntimeFixtures.withTempDirectory { directory in
            try await LogindStandIn.withSystemBus(directory: directory.path) { bus, logind in
                for inhibit in [false, true] {
                    let host = try VigilHost(
                        plugins: [TestPlugins.prepared("other", ledger: InstanceLedger())],
                        declarations: HostDeclarations(inhibitSleep: inhibit), hostName: "block-\(inhibit)",
                        options: Self.options(["DBUS_SYSTEM_BUS_ADDRESS": bus.address]), logger: Self.logger)
                    let status = await host.keepAlive()
                    let expected = inhibit ? ["delay", "block"] : ["delay"]
                    #expect(status.sleep == SleepStatus(locks: expected))
                    #expect(try await Self.listInhibitors(bus).map(\.mode).sorted() == expected.sorted())
                    await host.stop()
                    #expect(try await Self.listInhibitors(bus).isEmpty)
                }
                #expect(logind.steps("inhibit", mode: "block").map { $0["who"] as? String } == ["block-true"])
            }
        }
    }

    @Test("without logind on the bus, or without a system bus, the host runs and says sleep handling is off")
    func noLogind() async throws {
        let bus = try DBusDaemon()
        defer { bus.stop() }
        let cases = [
            (bus.address, "systemd-logind (org.freedesktop.login1) is not on the system bus"),
            ("unix:path=/nonexistent/vigil-system-bus", "cannot connect to the system bus"),
        ]
        for (address, reason) in cases {
            let ledger = InstanceLedger()
            let handler = RecordingLogHandler(minimumLevel: .notice)
            let host = try VigilHost(
                plugins: [TestPlugins.prepared("other", ledger: ledger)],
                declarations: HostDeclarations(inhibitSleep: true),
                options: Self.options(["DBUS_SYSTEM_BUS_ADDRESS": address]),
                logger: Logger(label: "sleep-test") { _ in handler })
            let status = await host.keepAlive()
            #expect(status[plugin: "other"]?.state == .running)
            #expect(status.sleep?.locks == [])
            #expect(status.sleep?.off?.contains(reason) == true, "\(String(describing: status.sleep))")
            await host.stop()
            #expect(await host.status().sleep == nil)
            // A second bring-up tries again but does not say it again.
            #expect(await host.keepAlive().sleep?.off?.contains(reason) == true)
            await host.stop()
            let said = handler.warnings.filter { $0.hasPrefix("sleep handling is off: ") }
            #expect(said.count == 1, "\(handler.warnings)")
            #expect(said.first?.contains(reason) == true && said.first?.contains("inhibit_sleep has no effect") == true)
        }
    }

    @Test("the system bus restarts: the host says sleep handling is off, then reconnects and takes the lock again")
    func systemBusRestart() async throws {
        try await RuntimeFixtures.withTempDirectory { directory in
            let bus = try await blockingCall { Result { try DBusDaemon() } }.get()
            defer { bus.stop() }
            let first = try await LogindStandIn.start(bus: bus, directory: directory.path, pulseServer: nil)
            defer { first.stop() }
            let handler = RecordingLogHandler(minimumLevel: .notice)
            var options = Self.options(["DBUS_SYSTEM_BUS_ADDRESS": bus.socketAddress])
            // Virtual backoff is the state machine's (DBusLinkStateTests); here, a short real one.
            options.systemBus.state = DBusLinkState(initialDelay: .milliseconds(200), maximumDelay: .seconds(1))
            let host = try VigilHost(
                plugins: [TestPlugins.prepared("other", ledger: InstanceLedger())], hostName: "restart-test",
                options: options, logger: Logger(label: "sleep-test") { _ in handler })
            #expect(await host.keepAlive().sleep == SleepStatus(locks: ["delay"]))

            bus.kill()
            first.stop()
            // The truth meanwhile: no lock, and why; the keep-alive goes on.
            var off: HostStatus?
            for _ in 0..<200 {
                let status = await host.status()
                if status.sleep?.off != nil {
                    off = status
                    break
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(off?.sleep?.locks == [], "\(String(describing: off?.sleep))")
            #expect(off?.sleep?.off?.contains("closed the connection") == true, "\(String(describing: off?.sleep))")
            #expect(off?[plugin: "other"]?.state == .running)
            let said = handler.warnings.filter { $0.hasPrefix("sleep handling is off: ") }
            #expect(said.count == 1 && said.first?.contains("trying again") == true, "\(handler.warnings)")

            try await blockingCall { Result { try bus.restart() } }.get()
            let second = try await LogindStandIn.start(bus: bus, directory: directory.path, pulseServer: nil)
            defer { second.stop() }
            var back: SleepStatus?
            for _ in 0..<400 {
                back = await host.status().sleep
                if back == SleepStatus(locks: ["delay"]) { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(back == SleepStatus(locks: ["delay"]), "\(String(describing: back))")
            let held = try await Self.listInhibitors(address: bus.socketAddress)
            #expect(held.map(\.mode) == ["delay"] && held.first?.who == "restart-test", "\(held)")
            #expect(handler.warnings.contains { $0.hasPrefix("sleep handling back on") }, "\(handler.warnings)")
            await host.stop()
            #expect(try await Self.listInhibitors(address: bus.socketAddress).isEmpty)
        }
    }

    @Test("[host] inhibit_sleep is a boolean, off by default")
    func inhibitSleepSetting() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let base = "plugins = []\n[host]\nname = \"h\"\n"
        #expect(
            try HostConfiguration.load(path: dir.write("a.toml", base), environment: dir.environment()).host
                .inhibitSleep == false)
        #expect(
            try HostConfiguration.load(
                path: dir.write("b.toml", base + "inhibit_sleep = true\n"), environment: dir.environment()
            ).host.inhibitSleep)
        let bad = try dir.write("c.toml", base + "inhibit_sleep = \"yes\"\n")
        do {
            _ = try HostConfiguration.load(path: bad, environment: dir.environment())
            Issue.record("inhibit_sleep = \"yes\" was accepted")
        } catch {
            #expect(error.code == .configInvalid)
            #expect(error.description.hasPrefix(bad + ":4:"))
            #expect(error.description.contains("expected true or false"))
        }
    }

    @Test("status documents carry the sleep locks, and read back")
    func statusDocument() throws {
        let status = HostStatus(
            pid: 1, hostName: "h", configPath: nil, plugins: [], sleep: SleepStatus(locks: ["delay", "block"]))
        let text = String(decoding: status.jsonData(), as: UTF8.self)
        #expect(text.contains(#""sleep":{"locks":["delay","block"]}"#))
        #expect(try HostStatus(jsonData: status.jsonData()).sleep == status.sleep)
        let off = HostStatus(
            pid: 1, hostName: "h", configPath: nil, plugins: [], sleep: SleepStatus(locks: [], off: "no bus"))
        #expect(try HostStatus(jsonData: off.jsonData()).sleep?.off == "no bus")
    }
}
