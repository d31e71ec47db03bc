import ArgumentParser
import VigilCheckCommands
import VigilCore

/// `vigil plugin untrust NAME`.
struct PluginUntrust: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "untrust",
        abstract: "Remove a plugin's key from [trusted_plugins] in vigil.toml.")

    @OptionGroup var options: ConfigOption

    @Argument(help: "The plugin's name.")
    var name: String

    func validate() throws {
        try CLI.validateName(name)
    }

    func run() throws {
        try CLI.run {
            guard let path = try CLI.configPath(options) else {
                throw CoreError(
                    code: .configNotFound,
                    message: "no vigil.toml was found from the working directory upward — pass --config PATH")
            }
            switch try TrustEditor.untrust(plugin: name, configPath: CLI.absolute(path)) {
            case .removed: CLI.sayLine("untrusted \(name) — removed from \(path)")
            default: CLI.sayLine("\(name) was not trusted — \(path) unchanged")
            }
        }
    }
}
