import Foundation
import PackagePlugin

/// `swift package --allow-writing-to-package-directory vigil-trust NAME [--yes] [--fingerprint FP]`:
/// runs `vigil plugin trust` on the package's `vigil.toml` without installing the CLI.
///
/// It shows the plugin (version, fingerprint, requirements, resources) and asks for confirmation on
/// the terminal (`/dev/tty`) when there is one; `--fingerprint FP` matching the plugin's key is the
/// confirmation itself (no question), and without a terminal `--yes` trusts after you reviewed. It writes `[trusted_plugins]` in `vigil.toml`,
/// hence the declared write permission.
@main
struct VigilTrustCommand: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {
        let tool = try VigilPluginSupport.builtTool(context: context, packageManager: packageManager)
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
            let vigil = VigilPluginSupport.vigilPackageDirectory(in: context.package, product: "Vigil")
        {
            environment["VIGIL_FIRST_PARTY_MANIFESTS"] = vigil.appendingPathComponent("manifests").path
        }
        // Without --yes or --fingerprint, `vigil plugin trust` shows the review and asks on the
        // terminal, so give it the terminal if there is one. Otherwise its lines and the summary below
        // reach SwiftPM's standard error in order (see `run`).
        let asks =
            !arguments.contains("--yes")
            && !arguments.contains(where: { $0 == "--fingerprint" || $0.hasPrefix("--fingerprint=") })
        let status = try VigilPluginSupport.run(
            tool, ["plugin", "trust"] + arguments, environment: environment, terminal: asks)
        if status != 0 {
            Diagnostics.error("vigil plugin trust did not trust anything (exit status \(status)) — see the lines above")
        }
    }
}
