import ArgumentParser
import FoundationEssentials
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

    /// Takes the process off libdispatch's worker pool (and its once-a-second monitor) before the
    /// first task runs, then parses and runs the command as usual.
    static func main() async {
        CLI.exitUnlessArgumentsReadable()  // without /proc, no command may run as if it had no arguments
        EventLoopExecutor.installAsGlobalExecutor(threads: 1)  // nothing in vigil blocks a task
        TrustCommand.adopt(from: ProcessInfo.processInfo.environment)  // the remedies' trust command
        await main(nil)
    }
}
