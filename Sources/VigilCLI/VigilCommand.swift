import ArgumentParser
import FoundationEssentials
import VigilBase
import VigilCheckCommands
import VigilCore
import VigilExecutor

#if canImport(Glibc)
import Glibc
#endif

/// `vigil`: keeps a host application alive and its audio output awake, through signed plugins.
@main
struct VigilCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vigil",
        abstract: "Keep a Linux host application alive and its audio output awake, through signed plugins.",
        // One line break, no blank line: the man page is made from this text, and an empty line is
        // an mdoc warning (`man --warnings`, lintian's groff-message).
        discussion: "`vigil --version --json` prints the version as one JSON document (schema vigil.version/v1).\n"
            + ExitCodes.help,
        version: "vigil " + VigilVersion.description,
        subcommands: [
            PluginCommand.self, CheckCommand.self, Up.self, Run.self, Status.self, Reload.self, Announce.self,
            SoundscapeCommand.self,
        ]
    )

    /// `vigil --version --json`: every key present, `null` for a revision the build did not record.
    static func versionDocument() -> JSONValue {
        .object([
            ("schema", .string("vigil.version/v1")),
            ("version", .string(VigilVersion.version)),
            ("revision", VigilVersion.revision.map(JSONValue.string) ?? .null),
            ("build", .string(VigilVersion.isInstallBuild ? "install" : "development")),
        ])
    }

    /// Takes the process off libdispatch's worker pool (and its once-a-second monitor) before the
    /// first task runs, then parses and runs the command as usual.
    static func main() async {
        CLI.exitUnlessArgumentsReadable()  // without /proc, no command may run as if it had no arguments
        EventLoopExecutor.installAsGlobalExecutor(threads: 1)  // nothing in vigil blocks a task
        TrustCommand.adopt(from: ProcessInfo.processInfo.environment)  // the remedies' trust command
        // `vigil --version [--json]` is answered here: a flag declared on the root command would
        // also take a subcommand's own `--json` (`vigil plugin list --json`) from it.
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.contains("--version"), Set(arguments).isSubset(of: ["--version", "--json"]) {
            if arguments.contains("--json") {
                CLI.printJSON(versionDocument())
            } else {
                CLI.sayLine("vigil \(VigilVersion.description)")
            }
            return
        }
        await main(nil)
    }
}
