import Foundation
import PackagePlugin

/// `swift package --allow-writing-to-package-directory vigil-trust NAME [--yes] [--fingerprint FP]`:
/// runs `vigil plugin trust` on the package's `vigil.toml` without installing the CLI.
///
/// It shows the plugin (version, fingerprint, requirements, resources) and asks for confirmation on
/// the terminal (`/dev/tty`) when there is one; without a terminal, pass `--yes` after reviewing,
/// or `--fingerprint FP` to pin the key you expect. It writes `[trusted_plugins]` in `vigil.toml`,
/// hence the declared write permission.
@main
struct VigilTrustCommand: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {
        let tool = try context.tool(named: "vigil")
        var arguments = arguments
        if !arguments.contains(where: { $0 == "--config" || $0.hasPrefix("--config=") }) {
            // The nearest vigil.toml, or a new one at the package root.
            let config =
                VigilPluginSupport.findConfig(startingAt: context.package.directoryURL)
                ?? context.package.directoryURL.appendingPathComponent(VigilPluginSupport.configFileName)
            arguments += ["--config", config.path]
        }
        var environment: [String: String] = [:]
        if ProcessInfo.processInfo.environment["VIGIL_FIRST_PARTY_MANIFESTS"] == nil,
            let vigil = VigilPluginSupport.vigilPackageDirectory(in: context.package, product: "VigilTrustCommand")
        {
            environment["VIGIL_FIRST_PARTY_MANIFESTS"] = vigil.appendingPathComponent("manifests").path
        }
        // Without --yes, `vigil plugin trust` asks on the terminal, so give it the terminal if there is one.
        let status = try VigilPluginSupport.run(
            tool.url, ["plugin", "trust"] + arguments, environment: environment, terminal: !arguments.contains("--yes"))
        if status != 0 {
            Diagnostics.error("vigil plugin trust did not trust anything (exit status \(status)) — see the lines above")
        }
    }
}
