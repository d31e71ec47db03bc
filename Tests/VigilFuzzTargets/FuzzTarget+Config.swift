import VigilCore
import VigilPlugin

extension FuzzTarget {
    static func config(_ bytes: [UInt8]) {
        // The locator must be safe on text TOMLKit never saw, too (it only sees parsed text in Vigil).
        let locator = TOMLLocator(bytes)
        if let offset = locator.offset(of: ["plugins"]) {
            precondition(offset >= 0 && offset <= bytes.count, "the locator pointed outside the text")
            _ = locator.lineColumn(of: offset)
        }
        guard
            let configuration = try? HostConfiguration.parse(
                bytes, path: "/fuzz/vigil.toml", environment: HostEnvironment(variables: [:]))
        else { return }
        for plugin in configuration.plugins { _ = configuration.location(of: ["plugins", plugin]) }
        for name in configuration.pluginSettings.keys { _ = configuration.location(of: ["plugin", name]) }
    }
}
