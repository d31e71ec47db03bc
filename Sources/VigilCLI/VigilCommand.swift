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
        subcommands: [
            PluginCommand.self, Check.self, Up.self, Run.self, Status.self, Announce.self, SoundscapeCommand.self,
        ]
    )

    @Flag(name: .long, help: "Print the version and the git revision this vigil was built from, then exit.")
    var version = false

    @Flag(name: .long, help: "With --version: print one JSON document (schema vigil.version/v1).")
    var json = false

    func validate() throws {
        if json && !version { throw ValidationError("--json goes with --version here (or after a subcommand)") }
    }

    func run() async throws {
        guard version else { throw CleanExit.helpRequest(self) }
        if json {
            CLI.printJSON(Self.versionDocument())
        } else {
            CLI.sayLine("vigil \(VigilVersion.description)")
        }
    }

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
        EventLoopExecutor.installAsGlobalExecutor(threads: 1)  // nothing in vigil blocks a task
        TrustCommand.adopt(from: ProcessInfo.processInfo.environment)  // the remedies' trust command
        await main(nil)
    }
}
