import Foundation
import PackagePlugin

/// Runs `vigil check` on the host's `vigil.toml` during `swift build`.
///
/// Apply it to the host's executable target. It finds `vigil.toml` at the package root (or in a
/// parent directory) and adds a build command that runs
/// `vigil check --declarations-only --config <path> --build-inputs <list>`.
///
/// SwiftPM runs the plugin only when it plans the build (the first build, after `Package.swift`
/// or the target's file list changes, or after a planning error) and re-runs the command only when
/// one of its declared inputs changed. So that the check can never stay silently off:
/// - with no `vigil.toml`, the plugin reports an error: the build fails, and SwiftPM plans again
///   on the next build, when the file may exist;
/// - the inputs are `vigil.toml`, every file and directory of the plugin directories and of Vigil's
///   first-party manifests, and the directories between the package and `vigil.toml` (a directory
///   changes when an entry in it is added, removed or renamed);
/// - the list of those inputs goes to `vigil check`, which fails the build when it reads a file
///   that is not among them (one that appeared after planning), naming the way to re-plan.
/// An error (a plugin that fails verification or trust, a broken configuration, a declaration an
/// activated plugin requires that `[host]` lacks) makes `vigil check` exit non-zero, which fails
/// the build. Warnings are printed on every build while they hold, no-op builds included: the input
/// list is itself an input of the command, and a check that warned touches it, so SwiftPM runs the
/// command (and prints its output) again next time; a clean check leaves it, and a no-op build
/// stays one.
@main
struct VigilBuildCheck: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) async throws -> [Command] {
        // SwiftPM built the tool before it ran this plugin, even if the plan fails below; the
        // command plugins run this copy rather than building one of their own.
        let tool = try context.tool(named: VigilPluginSupport.toolName)
        VigilPluginSupport.recordTool(tool.url, in: context.pluginWorkDirectoryURL)
        guard let config = VigilPluginSupport.findConfig(startingAt: context.package.directoryURL) else {
            // An error, not a warning: SwiftPM re-plans after a planning error, so the check starts
            // with the first build after vigil.toml appears. A warning would plan no check and stay so.
            Diagnostics.error(
                "VigilBuildCheck: no vigil.toml in \(context.package.directoryURL.path) or a parent directory, so "
                    + "the build cannot check the plugins it activates — create vigil.toml at the package root (step 3 "
                    + "of Vigil's docs/host-guide.md), or remove the plugin from target '\(target.name)'")
            return []
        }
        let command = Self.command(
            tool: tool.url, config: config, package: context.package.directoryURL,
            firstParty: VigilPluginSupport.vigilPackageDirectory(in: context.package, product: "Vigil")?
                .appendingPathComponent("manifests"),
            workDirectory: context.pluginWorkDirectoryURL)
        return [command]
    }

    /// The build command for `config`, independent of `PluginContext`. Writes the list of inputs
    /// to `workDirectory/build-inputs.txt` for `vigil check --build-inputs`.
    static func command(tool: URL, config: URL, package: URL, firstParty: URL?, workDirectory: URL) -> Command {
        let text = (try? String(contentsOf: config, encoding: .utf8)) ?? ""
        let configDirectory = config.deletingLastPathComponent()
        var directories = VigilPluginSupport.pluginPaths(inConfig: text).map { path in
            path.hasPrefix("/") ? URL(fileURLWithPath: path) : configDirectory.appendingPathComponent(path)
        }
        var environment: [String: String] = [
            VigilPluginSupport.trustCommandVariable: VigilPluginSupport.trustCommand
        ]
        if let firstParty {
            directories.append(firstParty)
            environment["VIGIL_FIRST_PARTY_MANIFESTS"] = firstParty.path
        }
        let inputs =
            [config] + VigilPluginSupport.searchDirectories(from: package, to: configDirectory)
            + VigilPluginSupport.watchedEntries(in: directories)
        let list = workDirectory.appendingPathComponent("build-inputs.txt")
        var arguments = ["check", "--declarations-only", "--config", config.path]
        var inputFiles = inputs
        do {
            try FileManager.default.createDirectory(at: workDirectory, withIntermediateDirectories: true)
            try Data(inputs.map { $0.standardizedFileURL.path + "\n" }.joined().utf8).write(to: list, options: .atomic)
            arguments += ["--build-inputs", list.path]
            // A check that warned touches the list, so the next build runs it (and shows them) again.
            inputFiles.append(list)
        } catch {
            Diagnostics.warning(
                "VigilBuildCheck: could not write \(list.path) (\(error)); files that appear in the plugin "
                    + "directories after this build was planned will not be noticed")
        }
        return .buildCommand(
            displayName: "Checking \(config.path) with vigil check",
            executable: tool,
            // Declarations, signatures and trust only: probing this machine's audio output or D-Bus at
            // build time would describe the build machine, and SwiftPM would not re-run the check
            // when the environment changes anyway (`vigil check` and `vigil up` probe at run time).
            arguments: arguments,
            environment: environment,
            inputFiles: inputFiles,
            // No outputs: a declared output file would become a resource of the target (and a
            // resource bundle); without outputs the command still re-runs when an input changes.
            outputFiles: [])
    }
}
