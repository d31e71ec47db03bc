import ArgumentParser

/// `vigil`: keeps a host application alive and its audio output awake, through signed plugins.
@main
struct VigilCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vigil",
        abstract: "Keep a Linux host application alive and its audio output awake, through signed plugins.",
        subcommands: [PluginCommand.self, Check.self, Up.self, Run.self, Status.self, SoundscapeCommand.self]
    )
}
