import ArgumentParser
import Foundation
import Vigil
import VigilCore

/// `vigil check`: every problem with vigil.toml and its plugins, as compiler-style diagnostics.
struct Check: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check vigil.toml and its plugins; print each problem as a compiler-style diagnostic.",
        discussion: """
            Errors (exit 1): a missing or invalid vigil.toml, a plugin that does not verify or is not \
            trusted, a manifest entry this Vigil does not provide. Warnings (exit 0): declarations a \
            plugin requires that [host] lacks, environment requirements not met on this machine (the \
            plugin waits for them at start), unsigned plugins admitted under acknowledge_unsafe_plugins.
            """)

    @OptionGroup var options: ConfigOption

    @Flag(name: .long, help: "Print the diagnostics as JSON (schema vigil.check/v1) on standard output.")
    var json = false

    @Flag(
        name: .long,
        help: "Check declarations only; skip probing this machine for audio output, executables and D-Bus (for builds).")
    var declarationsOnly = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The build-tool plugin's list of the build's inputs; an error when the check reads a file not in it.",
            valueName: "FILE", visibility: .hidden))
    var buildInputs: String?

    func run() async throws {
        var report = HostCheck(probeEnvironment: !declarationsOnly).run(configPath: options.config)
        if let buildInputs { report = report.checkingBuildInputs(listPath: buildInputs) }
        if let banner = report.banner { CLI.printError(banner) }
        if json {
            print(String(decoding: CheckJSON.encode(report), as: UTF8.self))
        } else {
            for diagnostic in report.diagnostics { CLI.printError(diagnostic.description) }
            let errors = report.diagnostics.filter { $0.severity == .error }.count
            let warnings = report.diagnostics.count - errors
            if let path = report.configPath {
                print(
                    "\(path): \(report.plugins.count) plugin\(report.plugins.count == 1 ? "" : "s") activated, "
                        + CheckSummary.plugins(report) + "; "
                        + "\(errors) error\(errors == 1 ? "" : "s"), \(warnings) warning\(warnings == 1 ? "" : "s")")
            }
        }
        if report.hasErrors { throw ExitCode.failure }
    }
}

/// `vigil check --json`: `{"schema": "vigil.check/v1", "config": …, "diagnostics": [...], …}`.
enum CheckJSON {
    struct Document: Encodable {
        struct Item: Encodable {
            var severity: String
            var file: String?
            var line: Int?
            var column: Int?
            var plugin: String?
            var message: String
            var text: String
        }
        struct Plugin: Encodable {
            var name: String
            var ready: Bool
        }
        var schema = "vigil.check/v1"
        var config: String?
        var errors: Int
        var warnings: Int
        var diagnostics: [Item]
        var plugins: [Plugin]
        var unsafe_plugins: [String]
    }

    static func encode(_ report: HostCheck.Report) -> Data {
        let errors = report.diagnostics.filter { $0.severity == .error }.count
        let document = Document(
            config: report.configPath, errors: errors, warnings: report.diagnostics.count - errors,
            diagnostics: report.diagnostics.map {
                .init(
                    severity: $0.severity.rawValue, file: $0.location?.path, line: $0.location?.line,
                    column: $0.location?.column, plugin: $0.plugin, message: $0.message, text: $0.description)
            },
            plugins: report.plugins.map { .init(name: $0.name, ready: $0.ready) },
            unsafe_plugins: report.unsafePlugins)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return (try? encoder.encode(document)) ?? Data()
    }
}
