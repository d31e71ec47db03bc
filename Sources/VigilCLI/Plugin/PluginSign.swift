import ArgumentParser
import Glibc
import VigilCheckCommands
import VigilCore
import VigilCrypto
import VigilPlugin

/// `vigil plugin sign PLUGIN_DIR --key SECRET_KEY`.
struct PluginSign: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Refresh a manifest's resource digests and sign it.",
        discussion: """
            Checks PLUGIN_DIR/plugin.json strictly, fills in the size and SHA-256 of every file listed in its \
            "resources", writes plugin.json and plugin.json.minisig (trusted comment NAME@VERSION) atomically, \
            and plugin.pub when it is absent. Signing an unchanged, already signed manifest with another key \
            adds a co-signature (plugin.json.N.minisig and plugin.N.pub) for k-of-n trust. A \
            password-protected minisign key is unlocked with VIGIL_KEY_PASSWORD, or by asking on the \
            terminal. A key owned by another user (not root) or writable by group or others, or in a \
            directory that is, is refused with key-unsafe and exit 77 (a key others can read only gets a \
            warning).
            """)

    @Argument(help: "The plugin directory (its name is the plugin's name).", completion: .directory)
    var pluginDirectory: String

    @Option(name: .long, help: "The minisign secret key file.", completion: .file(extensions: ["key"]))
    var key: String

    func validate() throws {
        if pluginDirectory.isEmpty { throw ValidationError("PLUGIN_DIR must not be empty") }
        if key.isEmpty { throw ValidationError("--key must not be empty") }
    }

    func run() throws {
        try KeyStrictModes.run {
            let secret = try Self.readSecretKey(key)
            let signed = try PluginSigner.sign(directory: CLI.absolute(pluginDirectory), with: secret)
            CLI.sayLine("signed \(signed.manifest.name)@\(signed.manifest.version) in \(signed.directory)")
            CLI.sayLine("  resources:   \(signed.manifest.resources.count)")
            CLI.sayLine("  fingerprint: \(secret.publicKey.fingerprint)")
            CLI.sayLine("  key id:      \(secret.publicKey.keyIDHex)")
            CLI.sayLine("  signature:   \(signed.signatureFile)\(signed.cosigned ? " (co-signature)" : "")")
            if signed.wrotePublicKey {
                CLI.sayLine("  wrote \(signed.signatureFile == "plugin.json.minisig" ? "plugin.pub" : "its key file")")
            }
            for removed in signed.removedSignatures {
                CLI.sayLine(
                    "  removed \(removed): it no longer verifies over the new manifest; its signer must sign again")
            }
        }
    }

    /// Reads and unlocks a minisign secret key file.
    static func readSecretKey(_ path: String) throws(CoreError) -> MinisignSecretKey {
        try KeyStrictModes.checkSecretKey(path)
        let bytes = try SafeFile.read(path, cap: 4096, what: "secret key")
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw CoreError(code: .keyInvalid, message: "\(path) is not a minisign secret key (not UTF-8 text)")
        }
        if (try? MinisignPublicKey(fileContents: text)) != nil {
            throw CoreError(
                code: .keyInvalid,
                message: "\(path) is a minisign public key; --key needs the secret key (the .key file made with it "
                    + "by `vigil plugin keygen` or `minisign -G`)")
        }
        var st = stat()
        if stat(path, &st) == 0, st.st_mode & 0o077 != 0 {
            CLI.printErrorLine(
                "warning: the secret key \(path) is readable by other users (mode "
                    + String(st.st_mode & 0o777, radix: 8) + "); chmod 600 it")
        }
        do {
            return try MinisignSecretKey(fileContents: text, password: nil)
        } catch  where error.code == .encryptedKeyNeedsPassword {
            let password: String
            if let env = CLI.environment.variables["VIGIL_KEY_PASSWORD"] {
                password = env
            } else if isatty(0) == 1, let typed = getpass("Password for \(Sanitizer.display(path)): ") {
                password = String(cString: typed)
            } else {
                throw CoreError(
                    code: .keyInvalid,
                    message: "\(path) is password-protected and there is no terminal to ask on — set VIGIL_KEY_PASSWORD"
                )
            }
            do {
                return try MinisignSecretKey(fileContents: text, password: password)
            } catch {
                throw CoreError(code: .keyInvalid, message: "cannot unlock \(path): \(error)")
            }
        } catch {
            throw CoreError(code: .keyInvalid, message: "\(path) is not a usable minisign secret key: \(error)")
        }
    }
}
