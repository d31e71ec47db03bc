import Foundation
import Testing
import VigilTestSupport

/// The tool Vigil's SwiftPM plugins run (`vigil-plugin-tool`): the `vigil check` and
/// `vigil plugin trust` of the CLI without the runtime, so that a host package's build compiles
/// and links little for it (issue 13, point 4).
@Suite("The SwiftPM plugins' tool")
struct PluginToolTests {
    /// The built tool, beside the built `vigil`.
    static var toolPath: String { VigilExecutable.pluginToolPath }

    @Test("links libsodium for the checks, but none of the runtime's audio, D-Bus or speech libraries")
    func linksOnlyTheChecks() async throws {
        let runtimeLibraries = ["libasound", "libpulse", "libsystemd", "libespeak-ng", "libsndfile"]
        // The CLI links them (the comparison can see them), the tool does not.
        let cli = try await ELFLinkage.neededLibraries(VigilExecutable.path)
        for library in runtimeLibraries {
            #expect(cli.contains { $0.hasPrefix(library + ".") }, "vigil does not link \(library): \(cli)")
        }
        let tool = try await ELFLinkage.neededLibraries(Self.toolPath)
        #expect(tool.contains { $0.hasPrefix("libsodium.") }, "\(tool)")
        for library in runtimeLibraries {
            #expect(!tool.contains { $0.hasPrefix(library + ".") }, "vigil-plugin-tool links \(library): \(tool)")
        }
    }

    @Test("runs vigil check like the CLI: the same diagnostics, summary and exit status")
    func checksLikeTheCLI() async throws {
        let dir = try TestDirectory("vigil-plugin-tool")
        defer { dir.remove() }
        try dir.write(
            "vigil.toml",
            """
            plugins = ["silent-engine"]

            [host]
            name = "tool-test"

            [trusted_plugins]
            silent-engine = "ed25519:QaLGlZoeYW/jvbHckvjgkjV1ImF3vfGrW3ZB/9Ln8sI="

            """)
        let environment: [String: String?] = [
            "XDG_STATE_HOME": dir.url("state"),
            "VIGIL_FIRST_PARTY_MANIFESTS": VigilExecutable.packageRoot + "/manifests",
        ]
        let arguments = ["check", "--declarations-only", "--config", dir.url("vigil.toml")]
        let cli = try await VigilExecutable.run(arguments, in: dir.path, environment: environment)
        let tool = try await VigilExecutable.run(
            executable: Self.toolPath, arguments, in: dir.path, environment: environment)
        #expect(cli.status == 1, "\(cli.stderr)")
        #expect(cli.stderr.contains("error: [silent-engine]"), "\(cli.stderr)")
        #expect(tool.status == cli.status)
        #expect(tool.stdout == cli.stdout)
        #expect(tool.stderr == cli.stderr)
    }
}
