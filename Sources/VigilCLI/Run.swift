import ArgumentParser

// Placeholder: replaced by the real `vigil run` command.
struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "run")
    @OptionGroup var options: ConfigOption
    func run() async throws { throw ExitCode(70) }
}
