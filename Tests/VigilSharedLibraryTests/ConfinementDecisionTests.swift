import Foundation
import Logging
import Testing
import VigilConfine
import VigilCore
import VigilLibraryCheck
import VigilPlugin
import VigilTestSupport

@testable import VigilSharedLibrary

/// What the host decides before its helper maps a plugin: on a kernel that cannot enforce all of
/// the plugin's confinement (given here as an older kernel's probe) the plugin does not start and
/// none of its code runs, unless the operator acknowledged it; then it runs, and its status says
/// what is not enforced. The state directory exists (0700) before the helper confines itself.
@Suite("Confinement decided by the host", .serialized, .timeLimit(.minutes(2)))
struct ConfinementDecisionTests {
    /// Linux 6.7's Landlock: no signal or abstract-socket scoping (ABI 6).
    static let olderKernel = ConfinementSupport(
        landlockABI: 4, seccompFilter: true, noNewPrivileges: true, userNamespaces: false)

    private func start(_ f: NativePluginFixture, _ name: String, acknowledged: Bool) async throws -> (
        run: PluginRun, error: (any Error)?
    ) {
        try await f.simplePlugin(name)
        try f.config([name])
        let environment = f.dir.environment()
        let configuration = try HostConfiguration.load(path: f.configPath, environment: environment)
        let loaded = try PluginLoader(configuration: configuration, rollbackStore: nil).loadOrThrow(name, record: false)
        let implementation = try SharedLibraryPlugins.implementation(
            for: loaded,
            confinement: .init(
                capabilities: loaded.manifest.capabilities, acknowledgedUnenforced: acknowledged,
                support: Self.olderKernel))
        let run = PluginRun()
        let context = PluginContext(
            pluginName: name, hostName: "confinement-test",
            settings: PluginSettings(pluginName: name, values: ["marker": .string(f.marker(name))]),
            logger: Logger(label: "confinement-test", factory: { _ in SwiftLogNoOpLogHandler() }),
            reporter: run.reporter, stateDirectory: stateDirectory(f, name), environment: environment)
        run.adopt(try implementation.make(context))
        do {
            try await run.start()
            return (run, nil)
        } catch {
            return (run, error)
        }
    }

    private func stateDirectory(_ f: NativePluginFixture, _ name: String) -> String {
        f.dir.path + "/state/vigil/plugins/\(name)"
    }

    @Test("a kernel that cannot enforce the confinement: refused before any plugin code runs, with the remedy")
    func unenforceableIsRefused() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        let (run, error) = try await start(f, "strict", acknowledged: false)
        await run.stop()
        let failure = try #require(error as? SharedLibraryError, "it started: \(String(describing: error))")
        #expect(failure.code == .confinementFailed)
        #expect(
            failure.message.contains(
                "cannot enforce its declared confinement: it lacks Landlock signal and abstract-socket scoping "
                    + "(ABI 6; this kernel has 4)"), "\(failure.message)")
        #expect(failure.message.contains(#"acknowledge_unenforced = ["strict"] under [confinement]"#))
        #expect(!f.exists(f.sentinel("strict")), "none of the plugin's code ran (not even its constructor)")
        #expect(f.markerLines("strict").isEmpty)
    }

    @Test("acknowledged: it runs with what the kernel enforces, and the status says what is not")
    func acknowledgedRunsAndSaysSo() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        #expect(!f.exists(stateDirectory(f, "lenient")))
        let (run, error) = try await start(f, "lenient", acknowledged: true)
        #expect(error == nil, "\(String(describing: error))")
        let details = await run.details()
        await run.stop()
        #expect(
            details["confinement"]?.hasPrefix(
                "unenforced (acknowledged: this kernel lacks Landlock signal and abstract-socket scoping") == true,
            "\(details)")
        #expect(f.markerLines("lenient") == ["start lenient", "stop lenient"])
        // The host made the state directory, owner-only, before the helper confined itself.
        let attributes = try FileManager.default.attributesOfItem(atPath: stateDirectory(f, "lenient"))
        #expect((attributes[.posixPermissions] as? Int) == 0o700)
    }
}
