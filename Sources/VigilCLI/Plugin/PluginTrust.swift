import ArgumentParser
import VigilCore
import VigilCrypto

/// `vigil plugin trust NAME [--fingerprint FP] [--yes]`.
struct PluginTrust: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trust",
        abstract: "Review a plugin and record its signing key in vigil.toml.",
        discussion: """
            Finds the plugin in the plugin paths, verifies its signature with the key it offers (plugin.pub) —
            or with --fingerprint, which must match it — and its resources, shows what it is and what it
            needs, and asks for confirmation on a terminal (--yes for scripts; without a terminal and without
            --yes nothing is trusted). It then records `NAME = "ed25519:…"` under [trusted_plugins] (creating
            vigil.toml in the working directory if none is found) and resets the plugin's rollback record to
            this version: re-running trust is how a reviewed downgrade is accepted.
            """)

    @OptionGroup var options: ConfigOption

    @Argument(help: "The plugin's name.")
    var name: String

    @Option(name: .long, help: "The key you expect, \"ed25519:…\", obtained from the publisher out of band.")
    var fingerprint: String?

    @Flag(name: .long, help: "Trust without asking (after reviewing the plugin some other way).")
    var yes = false

    func validate() throws {
        try CLI.validateName(name)
        if let fingerprint { _ = try CLI.parseFingerprint(fingerprint) }
    }

    func run() throws {
        try CLI.run {
            // --config, else the nearest vigil.toml, else a new ./vigil.toml.
            let configPath = CLI.configPath(options) ?? HostConfiguration.fileName
            let configuration: HostConfiguration
            do {
                configuration = try HostConfiguration.load(path: configPath)
            } catch let error as CoreError where error.code == .configNotFound {
                configuration = HostConfiguration(path: configPath)
            }
            let loader = PluginLoader(configuration: configuration, rollbackStore: nil)
            let directory = try loader.locate(name)
            let policy: KeyPolicy = try fingerprint.map { .pinned(try CLI.parseFingerprint($0)) } ?? .offered
            let plugin = try PluginLoader.verify(
                directory: directory, name: name, policy: policy, rollback: nil, record: false)
            guard case .trusted(let key) = plugin.trust else { return }
            let files = try PluginLoader.readFiles(directory: directory, name: name)
            let keyID = Self.keyID(files)
            let current = configuration.trustedPlugins[name]
            let rotation = current != nil && current != key

            let m = plugin.manifest
            print("Review \(m.name):")
            print("  version:       \(m.version)")
            if !m.description.isEmpty { print("  description:   \(Sanitizer.display(m.description))") }
            print("  directory:     \(Sanitizer.display(directory))")
            print("  fingerprint:   \(key)")
            print("  minisign key:  \(keyID)")
            if let library = m.sharedLibrary {
                print("  entry:         shared library \(Sanitizer.display(library.path)) (plugin ABI \(library.abi)) — native code that runs with this program's rights")
            } else {
                print("  entry:         \(Sanitizer.display(m.entry))")
            }
            if m.hostRequirements.isEmpty {
                print("  requirements:  none")
            } else {
                print("  requirements:")
                for r in m.hostRequirements {
                    let value = r.value.map { " \(Sanitizer.display($0))" } ?? ""
                    let why = r.why.map { " — \(Sanitizer.display($0))" } ?? ""
                    print("    - \(r.kindTag)\(value)\(why)")
                }
            }
            if m.resources.isEmpty {
                print("  resources:     none")
            } else {
                print("  resources:")
                for r in m.resources {
                    print("    - \(Sanitizer.display(r.path)) (\(r.size) bytes, sha256 \(r.sha256))")
                }
            }
            if current != nil, !rotation {
                print("  trust state:   already trusted with this key")
            } else if let current {
                // A typo in vigil.toml looks the same as a publisher's new key: say both.
                print("  trust state:   vigil.toml trusts another key: \(current)")
                print("                 (a typo there, or the publisher rotated keys — check with them)")
            } else {
                print("  trust state:   not trusted yet")
            }

            // A matching --fingerprint is the confirmation: the key was obtained out of band and the
            // signature verified with it.
            if !yes && fingerprint == nil {
                guard TerminalPrompt.isAvailable else {
                    throw CoreError(
                        code: .trustDeclined, plugin: name,
                        message: "there is no terminal to confirm on, so nothing was trusted — review the plugin above, "
                            + "then run `\(TrustCommand.display(name, "--yes"))`, or pin the key you got from the "
                            + "publisher with `\(TrustCommand.display(name, "--fingerprint ed25519:…"))`")
                }
                let question =
                    rotation
                    ? "This replaces the key vigil.toml trusts for it. Trust the key it offers?"
                    : "Trust this plugin?"
                switch TerminalPrompt.confirm(question) {
                case true?: break
                case false?:
                    throw CoreError(
                        code: .trustDeclined, plugin: name, message: "not trusted — \(configuration.path) unchanged")
                case nil:
                    throw CoreError(
                        code: .trustDeclined, plugin: name,
                        message: "no answer could be read from the terminal, so nothing was trusted — "
                            + "\(configuration.path) unchanged; re-run it, or pass --yes after reviewing")
                }
            }

            let store = try RollbackStore.standard()
            let outcome = try TrustEditor.trust(plugin: name, fingerprint: key, configPath: configuration.path)
            try store.reset(plugin: name)
            try store.record(plugin: name, fingerprint: key, version: m.version, manifestSHA256: plugin.manifestSHA256)
            switch outcome {
            case .unchanged: print("trusted \(name) (\(key)) — already recorded in \(configuration.path)")
            default: print("trusted \(name) (\(key)) — recorded in \(configuration.path)")
            }
        }
    }

    /// The minisign key id of the plugin's key, from plugin.pub or else the signature.
    static func keyID(_ files: PluginLoader.Files) -> String {
        if let pub = files.publicKey, let text = String(validating: pub, as: UTF8.self),
            let key = try? MinisignPublicKey(fileContents: text)
        {
            return key.keyIDHex
        }
        if let sig = files.signature, let signature = try? MinisignSignature(fileContents: sig) {
            return signature.keyIDHex
        }
        return "unknown"
    }
}
