import Foundation
import Synchronization
import Testing
import VigilAnnounce
import VigilAudio
import VigilCore
import VigilDBus
import VigilHostCheck
import VigilPlugin
import VigilTestSupport

@testable import Vigil
@testable import VigilHostCore

/// One environment per host: what a host is given reaches the requirement checker, the rollback
/// store, the configuration's first-party path and every plugin, and nothing of the test
/// process's own environment leaks in.
@Suite("Injected host environment", .timeLimit(.minutes(1)))
struct HostEnvironmentTests {
    final class Seen: Sendable {
        let contexts = Mutex<[PluginContext]>([])
    }

    @Test func anInjectedEnvironmentReachesEveryPluginAndStore() async throws {
        let project = try HostProject()
        defer { project.remove() }
        // An executable only the injected PATH has: the checker must look there.
        try project.dir.write("bin/only-injected-tool", "#!/bin/sh\n", mode: 0o755)
        try project.dir.makeDirectory("first-party")
        let fp = try project.signedPlugin(
            "alpha", entry: "probe", requirements: #"[{"kind": "executable", "value": "only-injected-tool"}]"#)
        try project.config("plugins = [\"alpha\"]\n[trusted_plugins]\nalpha = \"\(fp)\"\n")
        let variables = [
            "XDG_STATE_HOME": project.dir.path + "/injected-state", "PATH": project.dir.path + "/bin",
            "VIGIL_FIRST_PARTY_MANIFESTS": project.dir.path + "/first-party", "VIGIL_TEST_MARKER": "injected",
        ]
        #expect(ProcessInfo.processInfo.environment["VIGIL_TEST_MARKER"] == nil)
        // The injected working directory is the project's, this process's is elsewhere: the host
        // and the check find vigil.toml from the injected one.
        #expect(FileManager.default.currentDirectoryPath != project.dir.path)
        let environment = HostEnvironment(
            variables: variables, soundDeviceDirectory: "/nonexistent-vigil-snd", workingDirectory: project.dir.path)
        let seen = Seen()
        let probe = PluginImplementation(entry: "probe") { context in
            seen.contexts.withLock { $0.append(context) }
            return LedgerPlugin(context: context, ledger: InstanceLedger(), delay: .zero, failStart: false)
        }
        let host = try VigilHost(
            configPath: nil, registry: PluginRegistry([probe]),
            options: VigilHost.Options(publishStatus: false, environment: environment), logger: TestPlugins.quietLogger)
        #expect(host.configPath == project.configPath)
        let status = try #require(await host.keepAlive()[plugin: "alpha"])
        #expect(status.state == .running, "the executable was found through the injected PATH: \(status.state)")
        let context = try #require(seen.contexts.withLock { $0.first })
        #expect(context.environment.variables == variables, "exactly the injected variables, nothing else")
        #expect(context.stateDirectory == project.dir.path + "/injected-state/vigil/plugins/alpha")
        #expect(FileManager.default.fileExists(atPath: project.dir.path + "/injected-state/vigil/rollback.json"))
        await host.stop()

        // The configuration's first-party path and the check use it too.
        let configuration = try HostConfiguration.load(path: project.configPath, environment: environment)
        #expect(configuration.pluginPaths.last == project.dir.path + "/first-party")
        let report = HostCheck(registry: PluginRegistry([probe]), environment: environment).run(configPath: nil)
        #expect(report.configPath == "vigil.toml", "found from, and shown relative to, the injected directory")
        #expect(report.plugins.map(\.directory) == [project.dir.path + "/manifests/alpha"])
        #expect(!report.hasErrors, "\(report.diagnostics)")

        // Without a state directory in the injected environment the host refuses, whatever the
        // test process's own HOME says.
        let noState = HostEnvironment(variables: ["PATH": project.dir.path + "/bin"])
        #expect(throws: VigilError.self) {
            try VigilHost(
                configPath: project.configPath, registry: PluginRegistry([probe]),
                options: VigilHost.Options(publishStatus: false, environment: noState), logger: TestPlugins.quietLogger)
        }
    }

    /// The built-in plugins and the announcer, in a host whose injected environment names a sound
    /// server and a session bus of the test's own while this process's variables name neither:
    /// each reaches the injected ones (the silent engine and the soundscape play on that server,
    /// the soundscape's MPRIS player and pause-spoken use that bus, supervised workers inherit
    /// exactly those variables). Code reading the process environment would find no server and
    /// no bus (or other ones) and fail here.
    @Test func builtinPluginsReachTheInjectedSoundServerAndSessionBus() async throws {
        try await RuntimeFixtures.withTempDirectory { directory in
            try await PulseAudioServer.with { pulse in
                let bus = try DBusDaemon()
                defer { bus.stop() }
                let own = ProcessInfo.processInfo.environment
                #expect(own["PULSE_SERVER"] != pulse.address && own["XDG_RUNTIME_DIR"] != pulse.directory.path)
                #expect(own["DBUS_SESSION_BUS_ADDRESS"] != bus.address)
                // Only the runtime directory names the server: the plugins must derive its socket.
                let variables = [
                    "XDG_RUNTIME_DIR": pulse.directory.path, "DBUS_SESSION_BUS_ADDRESS": bus.address,
                    "XDG_STATE_HOME": directory.path + "/state", "HOME": directory.path, "PATH": "/usr/bin:/bin",
                ]
                let seen = directory.path + "/worker-environment"
                let workers = SettingValue.array([
                    .table([
                        "name": .string("recorder"), "command": .string("/bin/sh"),
                        "args": .array([
                            .string("-c"),
                            .string(
                                #"printf '%s|%s' "$XDG_RUNTIME_DIR" "$DBUS_SESSION_BUS_ADDRESS" > "$0.tmp" && mv "$0.tmp" "$0"; exec sleep 600"#
                            ),
                            .string(seen),
                        ]),
                    ])
                ])
                func builtin(_ name: String, _ values: [String: SettingValue]) throws -> VigilHost.PreparedPlugin {
                    VigilHost.PreparedPlugin(
                        name: name, version: "1.0.0", requirements: [],
                        settings: PluginSettings(pluginName: name, values: values),
                        implementation: try #require(PluginRegistry.builtin.implementation(for: name)))
                }
                let host = try VigilHost(
                    plugins: [
                        try builtin("silent-engine", [:]),
                        try builtin("soundscape", ["mpris": .bool(true), "control_socket": .bool(false)]),
                        try builtin("supervisor", ["workers": workers]),
                    ],
                    hostName: "injected",
                    options: VigilHost.Options(
                        publishStatus: false, environment: HostEnvironment(variables: variables),
                        announce: AnnounceSettings(policy: .pauseSpoken)),
                    logger: TestPlugins.quietLogger)
                let status = await host.keepAlive()
                for name in ["silent-engine", "soundscape", "supervisor"] {
                    #expect(
                        status[plugin: name]?.state == .running, "\(name): \(String(describing: status[plugin: name]))")
                }
                _ = try await pulse.waitForSinkInput { $0.applicationName == "injected (Vigil keep-alive)" }
                _ = try await pulse.waitForSinkInput { $0.applicationName == "injected (Vigil soundscape)" }

                let client = try await DBusConnection.connect(
                    to: .address(bus.address), logger: TestPlugins.quietLogger)
                let names = try await client.call(
                    destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                    interface: "org.freedesktop.DBus", member: "ListNames")
                await client.close()
                let players = (names.first?.array ?? []).compactMap(\.string).filter {
                    $0.hasPrefix("org.mpris.MediaPlayer2.vigil.")
                }
                #expect(players.count == 1, "the soundscape's MPRIS player on the injected bus: \(players)")

                // pause-spoken connects to the injected bus, the prompt plays on the injected server.
                let report = try await host.announce(.play(.silence(seconds: 0.2)))
                #expect(report.policy == .pauseSpoken)

                #expect(await RuntimeFixtures.waitUntil(timeout: 10) { FileManager.default.fileExists(atPath: seen) })
                let inherited = try String(contentsOfFile: seen, encoding: .utf8)
                #expect(inherited == pulse.directory.path + "|" + bus.address)
                await host.stop()
            }
        }
    }

    @Test func derivedDirectoriesAndPathLookup() throws {
        let env = HostEnvironment(variables: [
            "HOME": "/home/a", "XDG_RUNTIME_DIR": "/run/user/1", "PATH": "/usr/bin:/bin",
        ])
        #expect(env.stateHome == "/home/a/.local/state")
        #expect(env.configHome == "/home/a/.config")
        #expect(env.vigilStateDirectory == "/home/a/.local/state/vigil")
        #expect(env.soundServerAddresses == ["unix:/run/user/1/pulse/native"])
        #expect(
            env.temporaryDirectory == "/tmp", "no TMPDIR in the injected variables: /tmp, whatever this process has")
        #expect(env.executablePath(named: "sh") != nil)
        #expect(env.executablePath(named: "no-such-vigil-tool") == nil)
        let relative = HostEnvironment(variables: ["XDG_STATE_HOME": "relative", "HOME": ""])
        #expect(relative.stateHome == nil, "only absolute paths count")
        #expect(HostEnvironment(variables: [:]).executablePath(named: "sh") == nil, "no PATH, no lookup")
    }
}
