import ArgumentParser
import VigilBase
import VigilCore
import VigilHostCheck

/// `vigil check`: every problem with vigil.toml and its plugins, as compiler-style diagnostics.
package struct Check: AsyncParsableCommand {
    /// Creates the command with its defaults (the parser fills in the arguments).
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check vigil.toml and its plugins; print each problem as a compiler-style diagnostic.",
        discussion: """
            Errors (exit 1): a missing or invalid vigil.toml, a plugin that does not verify or is not \
            trusted, a manifest entry this Vigil does not provide, a declaration a plugin requires that \
            [host] lacks (the plugin would be blocked). Warnings (exit 0): environment requirements not \
            met on this machine (the plugin would be waiting for them at start), unsigned plugins \
            admitted under acknowledge_unsafe_plugins. Each plugin is verified, waiting, blocked or \
            failed, the words `vigil up` and `vigil status` use (docs/states.md).
            """)

    @OptionGroup var options: ConfigOption

    @Flag(name: .long, help: "Print the diagnostics as JSON (schema vigil.check/v2) on standard output.")
    var json = false

    @Flag(
        name: .long,
        help: "Check declarations only; skip probing this machine for audio output, executables and D-Bus (for builds)."
    )
    var declarationsOnly = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The build-tool plugin's list of the build's inputs; an error when the check reads a file not in it.",
            valueName: "FILE", visibility: .hidden))
    var buildInputs: String?

    package func run() async throws { try await perform(caFileCheck: nil) }

    /// Runs the check; `caFileCheck` judges `[repository] ca_file`'s certificates (``HostCheck/caFileCheck``),
    /// given by `vigil`, which links the TLS library the mirrors are fetched with.
    package func perform(caFileCheck: (@Sendable ([UInt8]) -> String?)?) async throws {
        var checker = HostCheck(environment: CLI.environment, probeEnvironment: !declarationsOnly)
        checker.caFileCheck = caFileCheck
        var report = checker.run(configPath: options.config)
        if let buildInputs {
            report = report.checkingBuildInputs(listPath: buildInputs, environment: CLI.environment)
        }
        if let banner = report.banner { CLI.printError(banner) }
        if json {
            CLI.printJSON(CheckJSON.encode(report))
        } else {
            for diagnostic in report.diagnostics { CLI.printErrorLine(diagnostic.description) }
            let errors = report.diagnostics.filter { $0.severity == .error }.count
            let warnings = report.diagnostics.count - errors
            if let path = report.configPath {
                CLI.sayLine(
                    "\(path): \(report.plugins.count) plugin\(report.plugins.count == 1 ? "" : "s") activated, "
                        + CheckSummary.plugins(report) + "; "
                        + "\(errors) error\(errors == 1 ? "" : "s"), \(warnings) warning\(warnings == 1 ? "" : "s")")
                for plugin in report.plugins {
                    CLI.sayLine(CheckSummary.pluginLine(plugin, report))
                    for line in report.manifests[plugin.name]?.capabilityLines ?? [] { CLI.sayLine("    may: " + line) }
                }
            }
        }
        if let buildInputs, !report.hasErrors, !report.diagnostics.isEmpty {
            do throws(SystemCallError) {
                try BuildInputs.runAgain(listPath: buildInputs)
            } catch {
                CLI.printErrorLine(
                    "warning: the warnings above are not repeated on the next no-op build: \(buildInputs) cannot be "
                        + "touched (\(error)) — run `swift package clean`, then build")
            }
        }
        if report.hasErrors { throw ExitCode.failure }
    }
}

/// `vigil check --json`: `{"schema": "vigil.check/v2", "config": …, "diagnostics": [...], …}`;
/// every key is always present (`null` when unknown). v2 gives each plugin its `state` (`verified`,
/// `waiting`, `blocked`, `failed`), `summary` and `reason` where v1 had `"ready"`, which meant
/// "verified", not "will start".
enum CheckJSON {
    static func encode(_ report: HostCheck.Report) -> JSONValue {
        let errors = report.diagnostics.filter { $0.severity == .error }.count
        func string(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }
        func int(_ i: Int?) -> JSONValue { i.map { .number(String($0)) } ?? .null }
        return .object([
            ("schema", .string("vigil.check/v2")),
            ("config", string(report.configPath)),
            ("errors", int(errors)),
            ("warnings", int(report.diagnostics.count - errors)),
            (
                "diagnostics",
                .array(
                    report.diagnostics.map { d in
                        .object([
                            ("severity", .string(d.severity.rawValue)),
                            ("file", string(d.location?.path)),
                            ("line", int(d.location?.line)),
                            ("column", int(d.location?.column)),
                            ("plugin", string(d.plugin)),
                            ("message", .string(d.message)),
                            ("text", .string(d.description)),
                        ])
                    })
            ),
            (
                "plugins",
                .array(
                    report.plugins.map { p in
                        .object(
                            [
                                ("name", .string(p.name)), ("state", .string(p.state.rawValue)),
                                ("summary", .string(p.phrase)), ("reason", string(p.reason)),
                                ("directory", string(p.directory)),
                                ("capabilities", report.manifests[p.name]?.capabilitiesJSON ?? .null),
                            ] + signature(report.signatures[p.name], now: report.checkedAt))
                    })
            ),
            ("unsafe_plugins", .array(report.unsafePlugins.map(JSONValue.string))),
        ])
    }

    /// A plugin's signature freshness: `expires` (RFC 3339), `fresh_for_seconds` and `freshness`
    /// (`fresh`, `expiring` within `[freshness] grace`, `expired`); `null` without a signed expiry.
    static func signature(_ freshness: SignatureFreshness?, now: Int64) -> [(key: String, value: JSONValue)] {
        guard let freshness else { return [("expires", .null), ("fresh_for_seconds", .null), ("freshness", .null)] }
        return [
            ("expires", .string(Freshness.formatRFC3339(freshness.expires))),
            ("fresh_for_seconds", .number(String(freshness.remaining(now: now)))),
            ("freshness", .string(freshness.stage(now: now).rawValue)),
        ]
    }
}
