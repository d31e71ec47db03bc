import ArgumentParser
import Glibc
import VigilBase
import VigilCheckCommands
import VigilCore
import VigilCrypto
import VigilPlugin

/// `vigil plugin keygen --name NAME [--dir DIR] [--force]`.
struct PluginKeygen: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Create a signing key pair for a plugin.",
        discussion: """
            Writes DIR/NAME.key (an unencrypted minisign secret key, created with mode 0600 and O_EXCL) and \
            DIR/NAME.pub (the minisign public key; `vigil plugin sign` copies it into the plugin directory as \
            plugin.pub). DIR defaults to $XDG_CONFIG_HOME/vigil/keys (~/.config/vigil/keys), outside any \
            project, so a secret key is not committed by accident. An existing key is never overwritten \
            without --force: replacing it is a key rotation every host must review again. A DIR owned by \
            another user (not root) or writable by group or others (without the sticky bit) is refused \
            with key-unsafe and exit 77, as vigil.toml's directory is.
            """)

    @Option(name: .long, help: "The plugin's name (the key files are NAME.key and NAME.pub).")
    var name: String

    @Option(name: .long, help: "Where to write the keys. Default: $XDG_CONFIG_HOME/vigil/keys.", completion: .directory)
    var dir: String?

    @Flag(name: .long, help: "Replace an existing key pair (a key rotation).")
    var force = false

    func validate() throws {
        try CLI.validateName(name, what: "--name")
        if let dir, dir.isEmpty { throw ValidationError("--dir must not be empty") }
    }

    func run() throws {
        try KeyStrictModes.run {
            let directory = try dir ?? Self.defaultDirectory()
            try Self.makeDirectory(directory)
            try KeyStrictModes.checkDirectory(directory)
            let keyPath = directory + "/" + name + ".key"
            let pubPath = directory + "/" + name + ".pub"
            let exists = access(keyPath, F_OK) == 0 || access(pubPath, F_OK) == 0
            let rotation =
                "KEY ROTATION: a new key for \(name) means every host that trusts the old key refuses the plugin "
                + "until it reviews and re-runs `vigil plugin trust \(name)`"
            if exists && !force {
                throw CoreError(
                    code: .ioFailure, plugin: name,
                    message:
                        "a key already exists at \(keyPath) or \(pubPath); Vigil does not overwrite it. \(rotation). "
                        + "If that is what you want, run again with --force")
            }
            let secret = MinisignSecretKey.generate()
            let secretBytes = Array(secret.fileContents().utf8)
            if exists {
                CLI.printErrorLine("warning: \(rotation).")
                try AtomicFile.write(secretBytes, to: keyPath, mode: 0o600)
            } else {
                try AtomicFile.create(secretBytes, at: keyPath, mode: 0o600)
            }
            try AtomicFile.write(Array(secret.publicKey.fileContents().utf8), to: pubPath, mode: 0o644)
            CLI.sayLine("secret key:  \(keyPath)  (mode 0600 — keep it private, never commit it)")
            CLI.sayLine("public key:  \(pubPath)")
            CLI.sayLine("fingerprint: \(secret.publicKey.fingerprint)")
            CLI.sayLine("key id:      \(secret.publicKey.keyIDHex)")
            CLI.sayLine("next: vigil plugin sign PLUGIN_DIR --key \(keyPath)")
        }
    }

    static func defaultDirectory() throws(CoreError) -> String {
        guard let config = CLI.environment.configHome else {
            throw CoreError(
                code: .ioFailure, message: "neither XDG_CONFIG_HOME nor HOME is an absolute path; pass --dir")
        }
        return config + "/vigil/keys"
    }

    /// mkdir -p with 0700 for the directories it creates.
    static func makeDirectory(_ path: String) throws(CoreError) {
        if let failure = Directory.create(path, mode: 0o700) {
            throw CoreError(
                code: .ioFailure, message: "cannot create \(failure.path): \(failure.error.reason)",
                cause: ErrorCause(failure.error))
        }
    }
}
