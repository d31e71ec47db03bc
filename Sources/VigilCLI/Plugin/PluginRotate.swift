import ArgumentParser
import VigilCheckCommands
import VigilCore
import VigilCrypto

/// `vigil plugin rotate PLUGIN_DIR --from OLD.key --to NEW.pub [--to …] [--threshold N] [--cosign NEW.key …]`.
struct PluginRotate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate",
        abstract: "Rotate a plugin's signing keys with a statement signed by the old and the new keys.",
        discussion: """
            With --to (or --revoke), writes PLUGIN_DIR/rotations/N.json (N one more than the last) from the \
            plugin's current keys to the --to keys (all of which must sign manifests, unless --threshold says \
            how many), signs it with every --from (old) and --cosign (new) secret key, replaces plugin.pub with \
            the new keys and removes the manifest signatures by the old ones: sign the manifest again with the \
            new keys afterwards. Without --to, adds the signatures of --from/--cosign keys to the latest \
            rotation (a co-signer who holds a key elsewhere). Hosts follow a rotation without a new review once \
            it is signed by a threshold of the old keys AND of the new keys. --revoke rotates to no keys: every \
            host refuses the plugin from then on.
            """)

    @Argument(help: "The plugin directory (its name is the plugin's name).", completion: .directory)
    var pluginDirectory: String

    @Option(
        name: .long, help: "An old (current) secret key; repeat for a key set.", completion: .file(extensions: ["key"]))
    var from: [String] = []

    @Option(name: .long, help: "A new public key (.pub); repeat for a key set.", completion: .file(extensions: ["pub"]))
    var to: [String] = []

    @Option(name: .long, help: "How many of the new keys must sign (default: all of them).")
    var threshold: Int?

    @Option(
        name: .long, help: "A new secret key that co-signs the rotation; repeat for a key set.",
        completion: .file(extensions: ["key"]))
    var cosign: [String] = []

    @Flag(name: .long, help: "Rotate to no keys: revoke the plugin everywhere (cannot be undone).")
    var revoke = false

    func validate() throws {
        if pluginDirectory.isEmpty { throw ValidationError("PLUGIN_DIR must not be empty") }
        if revoke && !to.isEmpty { throw ValidationError("--revoke rotates to no keys; it takes no --to") }
        if threshold != nil && to.isEmpty { throw ValidationError("--threshold needs --to") }
        if from.isEmpty && cosign.isEmpty { throw ValidationError("give at least one --from or --cosign secret key") }
        if let threshold, threshold < 1 || threshold > to.count {
            throw ValidationError("--threshold must be between 1 and the number of --to keys (\(to.count))")
        }
    }

    func run() throws {
        try CLI.run {
            let signers = try (from + cosign).map { try PluginSign.readSecretKey($0) }
            let directory = CLI.absolute(pluginDirectory)
            let result: PluginRotator.Result
            if !to.isEmpty || revoke {
                let keys = try to.map { try Self.readPublicKey($0) }
                result = try PluginRotator.rotate(
                    directory: directory, to: keys, threshold: threshold, signers: signers)
            } else {
                result = try PluginRotator.cosign(directory: directory, signers: signers)
            }
            let r = result.rotation
            CLI.sayLine(
                "\(result.file): \(r.plugin) rotation \(r.version), from \(r.from) to \(r.to.map { "\($0)" } ?? "no keys (revoked)")"
            )
            for file in result.wroteSignatures { CLI.sayLine("  signed: \(file)") }
            CLI.sayLine("  old keys signed: \(result.oldSigners) of \(r.from.threshold) needed")
            if let to = r.to { CLI.sayLine("  new keys signed: \(result.newSigners) of \(to.threshold) needed") }
            if result.isComplete {
                CLI.sayLine(
                    r.to == nil
                        ? "  complete: hosts refuse the plugin from now on"
                        : "  complete: sign the manifest with the new keys (`vigil plugin sign \(pluginDirectory) --key NEW.key`)"
                )
            } else {
                CLI.sayLine(
                    "  not complete yet: the missing keys sign with `vigil plugin rotate \(pluginDirectory) --cosign KEY`"
                )
            }
        }
    }

    static func readPublicKey(_ path: String) throws(CoreError) -> MinisignPublicKey {
        let bytes = try SafeFile.read(path, cap: PluginLoader.maxPublicKeySize, what: "public key")
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw CoreError(code: .keyInvalid, message: "\(path) is not a minisign public key (not UTF-8 text)")
        }
        do {
            return try MinisignPublicKey(fileContents: text)
        } catch {
            throw CoreError(code: .keyInvalid, message: "\(path) is not a minisign public key: \(error)")
        }
    }
}
