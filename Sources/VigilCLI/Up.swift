import ArgumentParser

// Placeholder: replaced by the real `vigil up` command.
struct Up: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "up")
    @OptionGroup var options: ConfigOption
    func run() async throws { throw ExitCode(70) }
}
