import ArgumentParser
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
            guard let path = CLI.configPath(options) else {
                throw CoreError(
                    code: .configNotFound,
                    message: "no vigil.toml was found from the working directory upward — pass --config PATH")
            }
            switch try TrustEditor.untrust(plugin: name, configPath: path) {
            case .removed: print("untrusted \(name) — removed from \(path)")
            default: print("\(name) was not trusted — \(path) unchanged")
            }
        }
    }
}
