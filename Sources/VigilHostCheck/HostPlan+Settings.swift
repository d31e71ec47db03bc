package import VigilCore
package import VigilPlugin

#if canImport(Glibc)
import Glibc
#endif

extension HostPlan {
    /// Where a settings problem is written in `vigil.toml`: the key itself when the locator finds
    /// it (array indices left out), else the nearest enclosing key, else `nil`.
    package static func location(
        of problem: SettingsSchema.Problem, plugin: String, configuration: HostConfiguration
    ) -> SourceLocation? {
        var path = [plugin] + problem.path.filter { !$0.allSatisfy(\.isNumber) }
        while !path.isEmpty {
            if let location = configuration.location(of: path) { return location }
            path.removeLast()
        }
        return nil
    }

    /// The refusal of a plugin whose table its schema refuses: every problem, each located
    /// (`vigil.toml:7:1: setting `volume`: …`), in one `invalid-setting` error.
    static func settingsRefusal(
        plugin: String, _ problems: [SettingsSchema.Problem], configuration: HostConfiguration
    ) -> PluginError {
        let lines = problems.map { problem in
            let location = location(of: problem, plugin: plugin, configuration: configuration)
            return (location.map { "\($0): " } ?? "") + problem.description
        }
        let count = problems.count == 1 ? "a setting" : "\(problems.count) settings"
        return PluginError(
            code: .invalidSetting, plugin: plugin,
            message: "its manifest's settings schema refuses \(count) of [\(plugin)] in vigil.toml: "
                + lines.joined(separator: "; ") + " — fix the [\(plugin)] table (`vigil check` lists each problem)")
    }

    /// A table of `vigil.toml` that configures nothing: not an activated plugin's, not one the
    /// host reads (``HostConfiguration/hostTables``) and not listed in `[host] foreign_tables`.
    package struct StrayTable: Sendable, Hashable {
        /// The table's name.
        package var name: String
        /// True when a plugin of that name exists in the plugin paths but is not activated.
        package var pluginExists: Bool
        /// A near table name (`host` for `hots`), if any.
        package var suggestion: String?

        /// What is wrong and how to fix it.
        package var message: String {
            if pluginExists {
                return "[\(name)] configures the plugin \(name), which is not activated: its settings are not used — "
                    + "add \"\(name)\" to plugins, remove the table, or list it in [host] foreign_tables"
            }
            var text = "unknown table [\(name)]: no activated plugin or host table has this name, so nothing reads it"
            if let suggestion { text += "; did you mean [\(suggestion)]?" }
            return text + " — rename or remove it, or list it in [host] foreign_tables if another program reads it"
        }
    }

    /// Every table of the configuration that configures nothing, in name order.
    package var strayTables: [StrayTable] {
        let activated = Set(configuration.plugins)
        let foreign = Set(configuration.host.foreignTables)
        let known = HostConfiguration.reservedTables.union(HostConfiguration.hostTables).union(activated)
        return configuration.pluginSettings.keys.sorted().compactMap { name in
            guard !known.contains(name), !foreign.contains(name) else { return nil }
            let exists = configuration.pluginPaths.contains { directory in
                var st = stat()
                return stat("\(directory)/\(name)/plugin.json", &st) == 0
            }
            return StrayTable(
                name: name, pluginExists: exists, suggestion: NearName.closest(to: name, among: known))
        }
    }
}

extension HostCheck {
    /// One error per problem the plugin's settings schema found in its table, located at the key.
    func settingDiagnostics(_ item: HostPlan.Item, configuration: HostConfiguration, display: String) -> [Diagnostic] {
        item.settingProblems.map { problem in
            let location = HostPlan.location(of: problem, plugin: item.name, configuration: configuration).map {
                SourceLocation(path: display, line: $0.line, column: $0.column)
            }
            return Diagnostic(
                severity: .error, location: location, plugin: item.name,
                message: "\(problem.description) — fix it in the [\(item.name)] table (the plugin would not start)")
        }
    }
}
