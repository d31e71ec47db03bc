import ArgumentParser
import VigilCheckCommands
import VigilCore
import VigilCrypto
import VigilLibraryCheck
import VigilSharedLibrary

/// `vigil plugin verify PLUGIN_DIR [--fingerprint FP]`.
struct PluginVerify: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Verify a plugin directory's signature, manifest and resources.",
        discussion: """
            Uses the key given with --fingerprint, else the key trusted for the plugin (the directory's name) in \
            vigil.toml. For a shared-library plugin it also checks, without loading it, the library's ELF shape, \
            SONAME, dependencies and plugin ABI. Exits 0 when everything verifies, 1 with the specific error \
            otherwise. The rollback store is not consulted.
            """)

    @OptionGroup var options: ConfigOption

    @Argument(help: "The plugin directory.", completion: .directory)
    var pluginDirectory: String

    @Option(
        name: .long,
        help: "The expected key, \"ed25519:…\" (out-of-band pinning); repeat it for a key set, all of which must sign.")
    var fingerprint: [String] = []

    func validate() throws {
        if pluginDirectory.isEmpty { throw ValidationError("PLUGIN_DIR must not be empty") }
        for fingerprint in fingerprint { _ = try CLI.parseFingerprint(fingerprint) }
    }

    func run() throws {
        try CLI.run {
            let name = PluginLoader.name(ofDirectory: CLI.absolute(pluginDirectory))
            let policy: KeyPolicy
            if !fingerprint.isEmpty {
                let keys = try fingerprint.map { try CLI.parseFingerprint($0) }
                do {
                    policy = .pinned(try TrustedKeys(keys: keys, threshold: keys.count))
                } catch {
                    throw ValidationError("--fingerprint: \(error)")
                }
            } else {
                guard let configuration = try CLI.loadConfiguration(options) else {
                    throw CoreError(
                        code: .untrustedKey, plugin: name,
                        message: "no vigil.toml was found, so no key is trusted for it — pass --fingerprint ed25519:… "
                            + "or --config PATH")
                }
                guard let trusted = configuration.trustedKeys[name] else {
                    throw CoreError(
                        code: .untrustedKey, plugin: name,
                        message: "no key is trusted for it in \(configuration.path) — pass --fingerprint ed25519:… or "
                            + "run `vigil plugin trust \(name)`")
                }
                policy = .configured(trusted: trusted, acknowledgedUnsigned: false)
            }
            let plugin = try PluginLoader.verify(
                directory: CLI.absolute(pluginDirectory), name: name, policy: policy, rollback: nil, record: false)
            guard case .trusted(let keys) = plugin.trust else { return }
            var library = ""
            if let entry = plugin.manifest.sharedLibrary {
                // The checks that need no mapping: ELF, SONAME, dependencies, descriptor ABI.
                do throws(SharedLibraryError) {
                    try SharedLibraryPlugins.check(plugin)
                } catch {
                    CLI.printErrorLine("error: \(error.description)")
                    throw ExitCode.failure
                }
                library = ", shared library \(entry.path) loadable (plugin ABI \(SharedLibraryPlugins.abiVersion))"
            }
            CLI.sayLine(
                "verified \(plugin.manifest.name)@\(plugin.manifest.version): signature valid with \(keys), "
                    + "\(plugin.manifest.resources.count) resource(s) match" + library)
        }
    }
}
