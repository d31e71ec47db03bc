import ArgumentParser

// Placeholder: replaced by the real `vigil plugin` command.
struct PluginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "plugin")
    @OptionGroup var options: ConfigOption
    func run() async throws { throw ExitCode(70) }
}
