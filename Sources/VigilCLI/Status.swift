import ArgumentParser

// Placeholder: replaced by the real `vigil status` command.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status")
    @OptionGroup var options: ConfigOption
    func run() async throws { throw ExitCode(70) }
}
