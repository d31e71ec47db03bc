import Foundation
import PackagePlugin

/// `swift package vigil-check [--config PATH] [--json]`: runs `vigil check` on the package's
/// `vigil.toml` without installing the CLI, and fails when the check finds errors.
@main
struct VigilCheckCommand: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {
        let tool = try VigilPluginSupport.builtTool(context: context, packageManager: packageManager)
        var arguments = arguments
        if !arguments.contains(where: { $0 == "--config" || $0.hasPrefix("--config=") }) {
            guard let config = VigilPluginSupport.findConfig(startingAt: context.package.directoryURL) else {
                Diagnostics.error(
                    "no vigil.toml in \(context.package.directoryURL.path) or a parent directory — create one at "
                        + "the package root, or pass --config PATH")
                return
            }
            arguments = ["--config", config.path] + arguments
        }
        var environment: [String: String] = [:]
        if ProcessInfo.processInfo.environment["VIGIL_FIRST_PARTY_MANIFESTS"] == nil,
            let vigil = VigilPluginSupport.vigilPackageDirectory(in: context.package, product: "Vigil")
        {
            environment["VIGIL_FIRST_PARTY_MANIFESTS"] = vigil.appendingPathComponent("manifests").path
        }
        // The tool's lines and this summary reach SwiftPM's standard error in order (see `run`).
        let status = try VigilPluginSupport.run(
            tool, ["check"] + arguments, environment: environment, jsonOnStdout: arguments.contains("--json"))
        if status != 0 {
            Diagnostics.error("vigil check found errors (exit status \(status)) — see the lines above")
        }
    }
}
