import VigilCore

/// A `vigil.toml` for tests of Vigil's own plugins: `plugins`, a `[host]` declaring what the
/// first-party plugins require, every first-party key trusted, then `extra` (the tables under test).
public enum FirstPartyConfig {
    public static func text(plugins: [String], _ extra: String) -> String {
        let trusted = FirstPartyKeys.fingerprints.sorted { $0.key < $1.key }.map { "\($0.key) = \"\($0.value)\"" }
        return """
            plugins = [\(plugins.map { "\"\($0)\"" }.joined(separator: ", "))]

            [host]
            name = "settings-test"
            background_modes = ["audio"]
            services = ["supervisor"]

            [trusted_plugins]
            \(trusted.joined(separator: "\n"))

            \(extra)
            """
    }
}
