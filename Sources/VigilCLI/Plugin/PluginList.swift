import ArgumentParser
import VigilCore
import VigilCrypto

/// `vigil plugin list [--json]`.
struct PluginList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List every known plugin with its version, signature, trust and requirement state.",
        discussion: """
            Lists the plugins in the plugin paths (vigil.toml's plugin_paths, then Vigil's first-party manifests)
            and every activated plugin. Requirement state compares the declarations a plugin needs
            (background-mode, service) with [host]; environment requirements (audio-output, executable,
            dbus-session) are probed when the host starts and are shown as "probed-at-start". A plugin that is not
            trusted is verified with the key it offers only to show its version; it is marked untrusted.
            """)

    @OptionGroup var options: ConfigOption

    @Flag(name: .long, help: "Print JSON instead of a table.")
    var json = false

    func run() throws {
        try CLI.run {
            let loaded = try CLI.loadConfiguration(options)
            let configuration = loaded ?? HostConfiguration(path: HostConfiguration.fileName)
            let store = try? RollbackStore.standard()
            let loader = PluginLoader(configuration: configuration, rollbackStore: store)
            var rows = PluginLoader.discover(in: configuration.pluginPaths).map { Row(name: $0.name, directory: $0.directory) }
            for name in configuration.plugins where !rows.contains(where: { $0.name == name }) {
                rows.append(Row(name: name, directory: nil))
            }
            rows.sort { $0.name < $1.name }
            let reports = rows.map { Self.inspect($0, loader: loader, configuration: configuration) }
            if json {
                let doc = JSONValue.object([
                    ("config", loaded.map { .string($0.path) } ?? .null),
                    ("plugin_paths", .array(configuration.pluginPaths.map(JSONValue.string))),
                    ("plugins", .array(reports.map(\.json))),
                ])
                print(String(decoding: doc.serialized(), as: UTF8.self), terminator: "")
            } else {
                print("config: \(loaded?.path ?? "none (no vigil.toml found)")")
                if reports.isEmpty { print("no plugins found in \(configuration.pluginPaths.joined(separator: ", "))") }
                for r in reports { r.printText() }
            }
        }
    }

    struct Row {
        let name: String
        let directory: String?
    }

    struct Report {
        var name: String
        var directory: String?
        var activated: Bool
        var version: String?
        var signature: String
        var trust: String
        var trustedFingerprint: String?
        var offeredFingerprint: String?
        var requirements: [(kind: String, value: String?, state: String)] = []
        var error: CoreError?

        var json: JSONValue {
            .object([
                ("name", .string(name)),
                ("directory", directory.map(JSONValue.string) ?? .null),
                ("activated", .bool(activated)),
                ("version", version.map(JSONValue.string) ?? .null),
                ("signature", .string(signature)),
                ("trust", .string(trust)),
                ("trusted_fingerprint", trustedFingerprint.map(JSONValue.string) ?? .null),
                ("offered_fingerprint", offeredFingerprint.map(JSONValue.string) ?? .null),
                (
                    "requirements",
                    .array(
                        requirements.map {
                            .object([
                                ("kind", .string($0.kind)), ("value", $0.value.map(JSONValue.string) ?? .null),
                                ("state", .string($0.state)),
                            ])
                        })
                ),
                ("status", .string(error == nil ? "ok" : "error")),
                (
                    "error",
                    error.map { .object([("code", .string($0.code.description)), ("message", .string($0.message))]) }
                        ?? .null
                ),
            ])
        }

        func printText() {
            let mark = activated ? "*" : " "
            print("\(mark) \(name) \(version ?? "?")")
            print("    signature: \(signature)   trust: \(trust)")
            if let directory { print("    directory: \(Sanitizer.display(directory))") }
            if let trustedFingerprint { print("    trusted key: \(trustedFingerprint)") }
            if let offeredFingerprint, offeredFingerprint != trustedFingerprint {
                print("    offered key: \(offeredFingerprint)")
            }
            for r in requirements {
                print("    requires \(r.kind)\(r.value.map { " \(Sanitizer.display($0))" } ?? ""): \(r.state)")
            }
            if let error { print("    error: [\(error.code)] \(Sanitizer.display(error.message))") }
        }
    }

    static func inspect(_ row: Row, loader: PluginLoader, configuration: HostConfiguration) -> Report {
        let name = row.name
        let trusted = configuration.trustedPlugins[name]
        var report = Report(
            name: name, directory: row.directory, activated: configuration.plugins.contains(name), version: nil,
            signature: "unknown", trust: trusted == nil ? "untrusted" : "trusted",
            trustedFingerprint: trusted?.description)
        if let directory = row.directory,
            let files = try? PluginLoader.readFiles(directory: directory, name: name),
            let pub = files.publicKey, let text = String(validating: pub, as: UTF8.self),
            let offered = try? MinisignPublicKey(fileContents: text)
        {
            report.offeredFingerprint = offered.fingerprint.description
        }
        var manifest: PluginManifest?
        do {
            let plugin = try loader.loadOrThrow(name, record: false)
            manifest = plugin.manifest
            switch plugin.trust {
            case .trusted:
                report.signature = "valid"
            case .acknowledgedUnsigned:
                report.signature = "missing"
                report.trust = "acknowledged-unsigned"
            }
        } catch {
            report.error = error
            switch error.code {
            case .notSigned: report.signature = "missing"
            case .invalidSignature: report.signature = "invalid"
            case .unsupportedSignatureAlgorithm: report.signature = "unsupported-algorithm"
            case .keyRotation: report.trust = "key-rotation"
            case .pluginNotFound: report.signature = "unknown"
            case .untrustedKey, .noPublicKey, .keyInvalid, .fileTooLarge, .notRegularFile, .fileNotFound, .ioFailure:
                break
            default:
                // Failures after the signature verified with the trusted key.
                report.signature = "valid"
            }
            // Show what an untrusted plugin is, verified with the key it offers (never trusted by this).
            if let directory = row.directory, [.untrustedKey, .keyRotation].contains(error.code),
                let offered = try? PluginLoader.verify(
                    directory: directory, name: name, policy: .offered, rollback: nil, record: false)
            {
                report.signature = "valid-with-offered-key"
                manifest = offered.manifest
            } else if [.untrustedKey, .keyRotation].contains(error.code) {
                report.signature = "invalid-with-offered-key"
            }
        }
        if let manifest {
            report.version = "\(manifest.version)"
            let checker = RequirementChecker(declarations: configuration.host)
            report.requirements = manifest.hostRequirements.map { r in
                let state =
                    !r.isDeclaration ? "probed-at-start" : checker.check(r) == nil ? "declared" : "undeclared"
                return (r.kindTag, r.value, state)
            }
        }
        return report
    }
}
