import ArgumentParser
import VigilCheckCommands
import VigilCore
import VigilCrypto

/// `vigil plugin list [--json]`.
struct PluginList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List every known plugin with its version, signature, trust and requirement state.",
        discussion: """
            Lists the plugins in the plugin paths (vigil.toml's plugin_paths, then Vigil's first-party manifests) \
            and every activated plugin. Requirement state compares the declarations a plugin needs \
            (background-mode, service) with [host]; environment requirements (audio-output, executable, \
            dbus-session) are probed when the host starts and are shown as "probed-at-start". A plugin that is not \
            trusted is verified with the key it offers only to show its version; it is marked untrusted.
            """)

    @OptionGroup var options: ConfigOption

    @Flag(name: .long, help: "Print JSON instead of a table.")
    var json = false

    func run() throws {
        var loaded: HostConfiguration?
        let configuration: HostConfiguration
        do {
            loaded = try CLI.loadConfiguration(options)
            configuration = loaded ?? HostConfiguration(path: HostConfiguration.fileName, environment: CLI.environment)
        } catch {
            if json {
                CLI.printJSON(Self.document(config: nil, configuration: nil, reports: [], error: error))
                throw ExitCode.failure
            }
            throw CLI.fail(error)
        }
        let store = Result { () throws(CoreError) in try RollbackStore.standard(environment: CLI.environment) }
        let reports = PluginInspection.inspectAll(configuration: configuration, store: store)
        if json {
            CLI.printJSON(
                Self.document(config: loaded?.path, configuration: configuration, reports: reports, error: nil))
            return
        }
        let firstParty = HostConfiguration.firstPartyManifests(environment: CLI.environment)
        CLI.sayLine("config: \(loaded?.path ?? "none (no vigil.toml found)")")
        CLI.sayLine("first-party manifests: \(firstParty.path) (\(firstParty.origin.rawValue))")
        if reports.isEmpty { CLI.sayLine("no plugins found in \(configuration.pluginPaths.joined(separator: ", "))") }
        for r in reports { Self.printText(r) }
    }

    /// One `vigil.plugin-list/v1` document; every key is present (`null` when unknown).
    static func document(
        config: String?, configuration: HostConfiguration?, reports: [PluginInspection], error: CoreError?
    ) -> JSONValue {
        let firstParty = HostConfiguration.firstPartyManifests(environment: CLI.environment)
        return .object([
            ("schema", .string("vigil.plugin-list/v1")),
            ("config", config.map(JSONValue.string) ?? .null),
            ("plugin_paths", configuration.map { .array($0.pluginPaths.map(JSONValue.string)) } ?? .null),
            (
                "first_party_manifests",
                .object([("path", .string(firstParty.path)), ("origin", .string(firstParty.origin.rawValue))])
            ),
            ("plugins", .array(reports.map(json))),
            ("error", CLI.json(error)),
        ])
    }

    static func json(_ r: PluginInspection) -> JSONValue {
        let trustedKeys: JSONValue = r.trustedKeys.map { .array($0.keys.map { .string($0.description) }) } ?? .null
        let threshold: JSONValue = r.trustedKeys.map { .number(String($0.threshold)) } ?? .null
        var rotation = JSONValue.null
        if let state = r.rotation {
            let keys: [JSONValue] = (state.keys?.keys ?? []).map { .string($0.description) }
            rotation = .object([
                ("version", .number(String(state.version))), ("keys", .array(keys)),
                ("threshold", .number(String(state.keys?.threshold ?? 0))),
            ])
        }
        return .object([
            ("name", .string(r.name)),
            ("directory", r.directory.map(JSONValue.string) ?? .null),
            ("activated", .bool(r.activated)),
            ("version", r.version.map(JSONValue.string) ?? .null),
            ("signature", .string(r.signature.rawValue)),
            ("trust", .string(r.trust.rawValue)),
            ("trusted_fingerprint", r.trustedFingerprint.map { .string($0.description) } ?? .null),
            ("offered_fingerprint", r.offeredFingerprint.map { .string($0.description) } ?? .null),
            ("trusted_keys", trustedKeys),
            ("threshold", threshold),
            ("rotation", rotation),
            ("expires", r.expires.map { .string(Freshness.formatRFC3339($0)) } ?? .null),
            (
                "requirements",
                .array(
                    r.requirements.map {
                        .object([
                            ("kind", .string($0.kind)), ("value", $0.value.map(JSONValue.string) ?? .null),
                            ("state", .string($0.state)),
                        ])
                    })
            ),
            ("capabilities", r.manifest?.capabilitiesJSON ?? .null),
            ("status", .string(r.error == nil ? "ok" : "error")),
            ("error", CLI.json(r.error)),
        ])
    }

    /// A plugin as text, one line per field, each escaped whole (``CLI/sayLine(_:)``).
    static func printText(_ r: PluginInspection) {
        var lines = ["\(r.activated ? "*" : " ") \(r.name) \(r.version ?? "?")"]
        lines.append("    signature: \(r.signature.rawValue)   trust: \(r.trust.rawValue)")
        if let directory = r.directory { lines.append("    directory: \(directory)") }
        if let trusted = r.trustedKeys {
            lines.append(trusted.isSingleKey ? "    trusted key: \(trusted)" : "    trusted keys: \(trusted)")
        }
        if let expires = r.expires {
            let left = expires - Freshness.systemNow()
            lines.append(
                left > 0
                    ? "    fresh for:   \(Freshness.formatDuration(left)) (until \(Freshness.formatRFC3339(expires)))"
                    : "    expired:     \(Freshness.formatRFC3339(expires)) (runs if accepted; no updates)")
        }
        if let rotation = r.rotation, let keys = rotation.keys {
            lines.append("    rotated to:  \(keys) by signed key rotation \(rotation.version)")
        }
        if let offered = r.offeredFingerprint, r.trustedKeys?.contains(offered) != true, r.rotation == nil {
            lines.append("    offered key: \(offered)")
        }
        for q in r.requirements { lines.append("    requires \(q.kind)\(q.value.map { " \($0)" } ?? ""): \(q.state)") }
        if let manifest = r.manifest {
            for (i, line) in manifest.capabilityLines.enumerated() {
                lines.append((i == 0 ? "    may:         " : "                 ") + line)
            }
        }
        if let error = r.error { lines.append("    error: [\(error.code)] \(error.message)") }
        for line in lines { CLI.sayLine(line) }
    }
}
