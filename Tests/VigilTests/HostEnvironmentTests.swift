import Foundation
import Synchronization
import Testing
import VigilCore
import VigilHostCheck
import VigilPlugin
import VigilTestSupport

@testable import Vigil

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
        let environment = HostEnvironment(variables: variables, soundDeviceDirectory: "/nonexistent-vigil-snd")
        let seen = Seen()
        let probe = PluginImplementation(entry: "probe") { context in
            seen.contexts.withLock { $0.append(context) }
            return LedgerPlugin(context: context, ledger: InstanceLedger(), delay: .zero, failStart: false)
        }
        let host = try VigilHost(
            configPath: project.configPath, registry: PluginRegistry([probe]),
            options: VigilHost.Options(publishStatus: false, environment: environment), logger: TestPlugins.quietLogger)
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
        let report = HostCheck(registry: PluginRegistry([probe]), environment: environment).run(
            configPath: project.configPath)
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

    @Test func derivedDirectoriesAndPathLookup() throws {
        let env = HostEnvironment(variables: [
            "HOME": "/home/a", "XDG_RUNTIME_DIR": "/run/user/1", "PATH": "/usr/bin:/bin",
        ])
        #expect(env.stateHome == "/home/a/.local/state")
        #expect(env.configHome == "/home/a/.config")
        #expect(env.vigilStateDirectory == "/home/a/.local/state/vigil")
        #expect(env.soundServerAddresses == ["unix:/run/user/1/pulse/native"])
        #expect(env.executablePath(named: "sh") != nil)
        #expect(env.executablePath(named: "no-such-vigil-tool") == nil)
        let relative = HostEnvironment(variables: ["XDG_STATE_HOME": "relative", "HOME": ""])
        #expect(relative.stateHome == nil, "only absolute paths count")
        #expect(HostEnvironment(variables: [:]).executablePath(named: "sh") == nil, "no PATH, no lookup")
    }
}
