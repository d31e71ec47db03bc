import ArgumentParser
import FoundationEssentials
import VigilCheckCommands
import VigilCore

/// The tool Vigil's SwiftPM plugins run: `vigil check` and `vigil plugin trust`, the same
/// commands as the `vigil` CLI's (VigilCheckCommands), in a program that links only the checks —
/// no audio, D-Bus, supervisor engine, speech or swift-nio — so that SwiftPM builds it quickly
/// beside the host's own build.
@main
struct VigilPluginTool: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vigil",
        abstract: "Check vigil.toml and trust plugins for Vigil's SwiftPM plugins.",
        subcommands: [Check.self, PluginGroup.self])

    /// Takes the remedies' trust command from the plugin that started the tool (it sets
    /// `VIGIL_TRUST_COMMAND` to the `swift package … vigil-trust` form), then runs the command.
    static func main() async {
        CLI.exitUnlessArgumentsReadable()  // without /proc, no command may run as if it had no arguments
        TrustCommand.adopt(from: ProcessInfo.processInfo.environment)
        await main(nil)
    }

    /// `vigil plugin trust` (the only `plugin` subcommand the SwiftPM plugins need).
    struct PluginGroup: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "plugin", abstract: "Trust plugin manifests.", subcommands: [PluginTrust.self])
    }
}
