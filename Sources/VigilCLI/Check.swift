import ArgumentParser

// Placeholder: replaced by the real `vigil check` command.
struct Check: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "check")
    @OptionGroup var options: ConfigOption
    func run() async throws { throw ExitCode(70) }
}
