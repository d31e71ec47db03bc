import Foundation
import PackagePlugin

/// Runs `vigil check` on the host's `vigil.toml` during `swift build`.
///
/// Apply it to the host's executable target. It finds `vigil.toml` at the package root (or in a
/// parent directory) and adds a build command that runs
/// `vigil check --declarations-only --config <path>`. The command's
/// inputs are `vigil.toml` and every file of the configured plugin directories and of Vigil's
/// first-party manifests, so SwiftPM re-runs it — and prints its `vigil.toml:LINE:COL: warning: …`
/// lines — whenever one of them changes. An error (a plugin that fails verification or trust, a
/// broken configuration) makes `vigil check` exit non-zero, which fails the build.
@main
struct VigilBuildCheck: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) async throws -> [Command] {
        guard let config = VigilPluginSupport.findConfig(startingAt: context.package.directoryURL) else {
            Diagnostics.warning(
                "VigilBuildCheck: no vigil.toml in \(context.package.directoryURL.path) or a parent directory, so "
                    + "nothing is checked — create one at the package root (see Vigil's docs/host-guide.md), or "
                    + "remove the plugin from target '\(target.name)'")
            return []
        }
        let tool = try context.tool(named: "vigil")
        return [
            Self.command(
                tool: tool.url, config: config,
                firstParty: VigilPluginSupport.vigilPackageDirectory(in: context.package, product: "VigilBuildCheck")?
                    .appendingPathComponent("manifests"))
        ]
    }

    /// The build command for `config`, independent of `PluginContext`.
    static func command(tool: URL, config: URL, firstParty: URL?) -> Command {
        let text = (try? String(contentsOf: config, encoding: .utf8)) ?? ""
        let configDirectory = config.deletingLastPathComponent()
        var directories = VigilPluginSupport.pluginPaths(inConfig: text).map { path in
            path.hasPrefix("/") ? URL(fileURLWithPath: path) : configDirectory.appendingPathComponent(path)
        }
        var environment: [String: String] = [:]
        if let firstParty {
            directories.append(firstParty)
            environment["VIGIL_FIRST_PARTY_MANIFESTS"] = firstParty.path
        }
        return .buildCommand(
            displayName: "Checking \(config.path) with vigil check",
            executable: tool,
            // Declarations, signatures and trust only: probing this machine's audio output or D-Bus at
            // build time would describe the build machine, and SwiftPM would not re-run the check
            // when the environment changes anyway (`vigil check` and `vigil up` probe at run time).
            arguments: ["check", "--declarations-only", "--config", config.path],
            environment: environment,
            inputFiles: [config] + VigilPluginSupport.manifestFiles(in: directories),
            // No outputs: a declared output file would become a resource of the target (and a
            // resource bundle); without outputs the command still re-runs when an input changes.
            outputFiles: [])
    }
}
