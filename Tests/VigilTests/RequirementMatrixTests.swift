import Foundation
import ServiceLifecycleTestKit
import Testing
import VigilCore
import VigilPlugin
import VigilTestSupport

@testable import Vigil
@testable import VigilHostCore

/// Each requirement kind, met and unmet, through a real host: met → the plugin runs;
/// unmet → it is blocked, nothing of it is created, and the status says which requirement and the fix.
@Suite("Host requirements: each kind met and unmet", .timeLimit(.minutes(1)))
struct RequirementMatrixTests {
    private func run(
        _ requirement: HostRequirement, declarations: HostDeclarations = HostDeclarations(),
        environment: [String: String], soundDirectory: String = "/nonexistent-vigil-snd"
    ) async throws -> (PluginState, InstanceLedger) {
        let ledger = InstanceLedger()
        let options = VigilHost.Options(
            publishStatus: false,
            environment: RequirementChecker.Environment(variables: environment, soundDeviceDirectory: soundDirectory))
        let host = try VigilHost(
            plugins: [TestPlugins.prepared("req", ledger: ledger, requirements: [requirement])],
            declarations: declarations, options: options, logger: TestPlugins.quietLogger)
        let state = try #require(await host.keepAlive()[plugin: "req"]?.state)
        await host.stop()
        return (state, ledger)
    }

    private func expectBlocked(
        _ state: PluginState, _ ledger: InstanceLedger, problem: String, remedy: String,
        sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) {
        guard case .blocked(let unmet) = state else {
            Issue.record("expected blocked, got \(state)", sourceLocation: sourceLocation)
            return
        }
        #expect(unmet.count == 1, sourceLocation: sourceLocation)
        #expect(unmet.first?.problem == problem, sourceLocation: sourceLocation)
        #expect(unmet.first?.remedy == remedy, sourceLocation: sourceLocation)
        #expect(ledger.snapshot.made == 0, "a blocked plugin must not be instantiated", sourceLocation: sourceLocation)
    }

    @Test func backgroundModeMet() async throws {
        let (state, ledger) = try await run(
            HostRequirement(kind: .backgroundMode("audio")), declarations: HostDeclarations(backgroundModes: ["audio"]),
            environment: [:])
        #expect(state == .running)
        #expect(ledger.snapshot.made == 1)
    }

    @Test func backgroundModeUnmet() async throws {
        let (state, ledger) = try await run(
            HostRequirement(kind: .backgroundMode("audio"), why: "keeps the sink awake"),
            declarations: HostDeclarations(backgroundModes: ["location"]), environment: [:])
        expectBlocked(
            state, ledger, problem: "requires background_modes to include \"audio\"",
            remedy: "add it under [host] in vigil.toml: background_modes = [\"location\", \"audio\"]")
        #expect(state.description.hasSuffix("(why: keeps the sink awake)"))
    }

    @Test func serviceMet() async throws {
        let (state, _) = try await run(
            HostRequirement(kind: .service("supervisor")), declarations: HostDeclarations(services: ["supervisor"]),
            environment: [:])
        #expect(state == .running)
    }

    @Test func serviceUnmet() async throws {
        let (state, ledger) = try await run(HostRequirement(kind: .service("supervisor")), environment: [:])
        expectBlocked(
            state, ledger, problem: "requires services to include \"supervisor\"",
            remedy: "add it under [host] in vigil.toml: services = [\"supervisor\"]")
    }

    @Test("audio-output met by a real private PulseAudio server (XDG_RUNTIME_DIR and PULSE_SERVER)")
    func audioOutputMetByPulseAudio() async throws {
        try await PulseAudioServer.with { pulse in
            let (viaRuntimeDir, _) = try await run(
                HostRequirement(kind: .audioOutput), environment: ["XDG_RUNTIME_DIR": pulse.directory.path])
            #expect(viaRuntimeDir == .running)
            let (viaPulseServer, _) = try await run(
                HostRequirement(kind: .audioOutput), environment: ["PULSE_SERVER": pulse.address])
            #expect(viaPulseServer == .running)
        }
    }

    @Test("audio-output unmet: a dead socket, no runtime dir, no ALSA device")
    func audioOutputUnmet() async throws {
        try await RuntimeFixtures.withTempDirectory { dir in
            // A socket file nobody listens on any more: a real server killed as a crash would,
            // which leaves its socket behind, refusing connections.
            try await PulseAudioServer.with { pulse in
                let socket = pulse.socketPath
                pulse.kill()
                #expect(FileManager.default.fileExists(atPath: socket))
                let (state, ledger) = try await run(
                    HostRequirement(kind: .audioOutput), environment: ["PULSE_SERVER": "unix:" + socket],
                    soundDirectory: dir.path)
                expectBlocked(
                    state, ledger,
                    problem:
                        "needs an audio output, but none is reachable: tried \(socket) (PULSE_SERVER), "
                        + "$XDG_RUNTIME_DIR/pulse/native (XDG_RUNTIME_DIR is not set), ALSA playback devices in \(dir.path) (none)",
                    remedy:
                        "start the user's sound server (PulseAudio or PipeWire), point PULSE_SERVER at one, or attach a sound card"
                )
            }
        }
    }

    @Test("audio-output met by an ALSA playback device node name in the device directory")
    func audioOutputMetByALSADevice() async throws {
        // No sound card exists on CI machines; the probe only lists the directory for pcmC*D*p
        // entries, so a directory holding such a name exercises exactly that logic.
        try await RuntimeFixtures.withTempDirectory { dir in
            try dir.write("pcmC0D0c", "")  // capture only: not enough
            let (captureOnly, _) = try await run(
                HostRequirement(kind: .audioOutput), environment: [:], soundDirectory: dir.path)
            #expect(captureOnly.name == "waiting")
            try dir.write("pcmC0D0p", "")
            let (playback, _) = try await run(
                HostRequirement(kind: .audioOutput), environment: [:], soundDirectory: dir.path)
            #expect(playback == .running)
        }
    }

    @Test func executableMetAndUnmet() async throws {
        try await RuntimeFixtures.withTempDirectory { dir in
            try dir.write("bin/vigil-probe-tool", "#!/bin/sh\nexit 0\n", mode: 0o755)
            try dir.write("bin/not-executable", "data", mode: 0o644)
            let env = ["PATH": "/nonexistent:\(dir.path)/bin"]
            let (met, _) = try await run(HostRequirement(kind: .executable("vigil-probe-tool")), environment: env)
            #expect(met == .running)
            let (plainFile, ledger1) = try await run(
                HostRequirement(kind: .executable("not-executable")), environment: env)
            expectBlocked(
                plainFile, ledger1, problem: "needs the executable \"not-executable\" on PATH, but it is not there",
                remedy: "install the package that provides not-executable, or add its directory to PATH")
            let (missing, ledger2) = try await run(HostRequirement(kind: .executable("pactl")), environment: [:])
            expectBlocked(
                missing, ledger2,
                problem: "needs the executable \"pactl\" on PATH, but it is not there (PATH is empty)",
                remedy: "install the package that provides pactl, or add its directory to PATH")
        }
    }

    @Test("dbus-session met by a real private dbus-daemon")
    func dbusSessionMet() async throws {
        let bus = try await blockingCall { Result { try DBusDaemon() } }.get()
        defer { bus.stop() }
        let (state, _) = try await run(
            HostRequirement(kind: .dbusSession), environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address + ",guid=0"])
        #expect(state == .running)
    }

    @Test func dbusSessionUnmet() async throws {
        let (unset, ledger1) = try await run(HostRequirement(kind: .dbusSession), environment: [:])
        expectBlocked(
            unset, ledger1, problem: "needs a D-Bus session bus, but DBUS_SESSION_BUS_ADDRESS is not set",
            remedy: "run inside a user session (systemd --user starts one), or wrap the host in `dbus-run-session --`")
        let address = "unix:path=/nonexistent/vigil-bus"
        let (dead, ledger2) = try await run(
            HostRequirement(kind: .dbusSession), environment: ["DBUS_SESSION_BUS_ADDRESS": address])
        expectBlocked(
            dead, ledger2,
            problem:
                "needs a D-Bus session bus, but nothing accepts a connection at DBUS_SESSION_BUS_ADDRESS=\(address)",
            remedy: "start the session bus (systemctl --user start dbus) or fix DBUS_SESSION_BUS_ADDRESS")
    }

    /// A host with one plugin, "late", that needs the executable `late-tool` on a PATH of
    /// `dir/bin` (empty until the test writes the tool).
    private static func hostWaitingForLateTool(
        in dir: TestDirectory, ledger: InstanceLedger, retryInterval: Duration
    ) throws -> VigilHost {
        let options = VigilHost.Options(
            publishStatus: false,
            environment: RequirementChecker.Environment(variables: ["PATH": dir.path + "/bin"]),
            retryInterval: retryInterval)
        return try VigilHost(
            plugins: [
                TestPlugins.prepared("late", ledger: ledger, requirements: [.init(kind: .executable("late-tool"))])
            ],
            options: options, logger: TestPlugins.quietLogger)
    }

    @Test("a blocked plugin starts once its environment appears (re-probed by the next keepAlive)")
    func blockedPluginStartsWhenEnvironmentAppears() async throws {
        try await RuntimeFixtures.withTempDirectory { dir in
            let ledger = InstanceLedger()
            let host = try Self.hostWaitingForLateTool(in: dir, ledger: ledger, retryInterval: .seconds(5))
            #expect(await host.keepAlive()[plugin: "late"]?.state.name == "waiting")
            try dir.write("bin/late-tool", "#!/bin/sh\n", mode: 0o755)
            #expect(await host.keepAlive()[plugin: "late"]?.state == .running)
            await host.stop()
        }
    }

    @Test(
        "as a Service: run() re-probes a plugin blocked by its environment and starts it once the environment appears")
    func serviceRetriesEnvironmentBlocked() async throws {
        try await RuntimeFixtures.withTempDirectory { dir in
            let ledger = InstanceLedger()
            let host = try Self.hostWaitingForLateTool(in: dir, ledger: ledger, retryInterval: .milliseconds(100))
            let events = host.events
            try await testGracefulShutdown { trigger in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await host.run() }
                    var iterator = events.makeAsyncIterator()
                    #expect(await iterator.next()?.state.name == "waiting")
                    // Several retry intervals pass with the tool still missing: nothing starts.
                    try await Task.sleep(for: .milliseconds(350))
                    #expect(ledger.snapshot.made == 0)
                    try dir.write("bin/late-tool", "#!/bin/sh\n", mode: 0o755)
                    // No keepAlive() call: the service's own re-probe starts it.
                    var started = false
                    while let event = await iterator.next() {
                        if event.kind == .started {
                            started = true
                            break
                        }
                    }
                    #expect(started)
                    #expect(await host.status()[plugin: "late"]?.state == .running)
                    trigger.triggerGracefulShutdown()
                    try await group.waitForAll()
                }
            }
            #expect(ledger.snapshot.live == 0)
        }
    }

    @Test("declarations-only checking skips environment probes (what a build can know)")
    func declarationsOnly() {
        let checker = RequirementChecker(
            declarations: HostDeclarations(), environment: .init(variables: [:], soundDeviceDirectory: "/nonexistent"))
        let requirements: [HostRequirement] = [
            .init(kind: .audioOutput), .init(kind: .backgroundMode("audio")), .init(kind: .dbusSession),
        ]
        #expect(checker.unmet(requirements, probeEnvironment: false).map(\.requirement.kindTag) == ["background-mode"])
        #expect(
            checker.unmet(requirements).map(\.requirement.kindTag) == [
                "audio-output", "background-mode", "dbus-session",
            ])
    }
}
