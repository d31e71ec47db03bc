import Glibc
import VigilBase
public import VigilCrypto
public import VigilPlugin

/// How a loaded plugin was admitted.
public enum PluginTrust: Sendable, Hashable {
    /// Its manifest verified with this key from `[trusted_plugins]`.
    case trusted(Fingerprint)
    /// It has no signature and is listed in `acknowledge_unsafe_plugins` (development only).
    case acknowledgedUnsigned
}

/// A plugin whose manifest and resources passed every check.
public struct LoadedPlugin: Sendable {
    /// The parsed manifest (parsed only after its signature verified).
    public let manifest: PluginManifest
    /// The plugin directory (absolute).
    public let directory: String
    /// How it was admitted.
    public let trust: PluginTrust
    /// Lower-case hex SHA-256 of the exact `plugin.json` bytes.
    public let manifestSHA256: String
    /// The verified bytes of every resource, by manifest path. Use these bytes rather than
    /// reading the files again, so what runs is what was checked.
    public let resourceContents: [String: [UInt8]]
}

/// Which key a verification uses.
public enum KeyPolicy: Sendable, Hashable {
    /// The loader's rules: the `[trusted_plugins]` key (if any) and the acknowledgement list.
    case configured(trusted: Fingerprint?, acknowledgedUnsigned: Bool)
    /// A fingerprint given out of band (`--fingerprint`): the plugin's key must be this one.
    case pinned(Fingerprint)
    /// The key the plugin offers in `plugin.pub` (used only to review a plugin before trusting it).
    case offered
}

/// Finds, verifies and loads plugins in a fixed order: locate the directory → read the files with
/// caps → check trust → verify the signature over the exact bytes → only then parse → check the
/// name → check rollback → verify every resource.
///
/// Nothing from a plugin is parsed before its signature verified with the trusted key; the key a
/// plugin offers in `plugin.pub` is only compared, to report a key rotation.
public struct PluginLoader: Sendable {
    /// The largest `plugin.json.minisig` accepted.
    public static let maxSignatureSize = 10 * 1024
    /// The largest `plugin.pub` accepted.
    public static let maxPublicKeySize = 1024

    /// The host configuration.
    public let configuration: HostConfiguration
    /// The rollback store; `nil` disables rollback protection (tests and one-off verification).
    public let rollbackStore: RollbackStore?

    /// Creates a loader.
    public init(configuration: HostConfiguration, rollbackStore: RollbackStore?) {
        self.configuration = configuration
        self.rollbackStore = rollbackStore
    }

    /// Creates a loader using the rollback store of `environment` (`$XDG_STATE_HOME/vigil`, else
    /// `$HOME/.local/state/vigil`; an error when neither is set).
    public init(configuration: HostConfiguration, environment: HostEnvironment) throws(CoreError) {
        self.init(configuration: configuration, rollbackStore: try RollbackStore.standard(environment: environment))
    }

    /// Loads every plugin in `configuration.plugins`, in order.
    public func loadActivated() -> [(name: String, result: Result<LoadedPlugin, CoreError>)] {
        configuration.plugins.map { ($0, load($0)) }
    }

    /// Loads one plugin by name; on success its version is recorded in the rollback store.
    public func load(_ name: String) -> Result<LoadedPlugin, CoreError> {
        Result { () throws(CoreError) in try loadOrThrow(name, record: true) }
    }

    /// Loads like ``load(_:)``; with `record: false` the rollback store is only checked.
    public func loadOrThrow(_ name: String, record: Bool = true) throws(CoreError) -> LoadedPlugin {
        if let problem = PluginName.problem(name) {
            throw CoreError(code: .pluginNotFound, plugin: name, message: problem)
        }
        let directory = try locate(name)
        let trusted = configuration.trustedPlugins[name]
        let acknowledged = configuration.acknowledgedUnsafePlugins.contains(name)
        return try Self.verify(
            directory: directory, name: name,
            policy: .configured(trusted: trusted, acknowledgedUnsigned: acknowledged),
            rollback: rollbackStore, record: record)
    }

    /// The directory of `name`: the first plugin path holding `NAME/plugin.json`.
    public func locate(_ name: String) throws(CoreError) -> String {
        if let directory = try Self.locate(name, in: configuration.pluginPaths) { return directory }
        throw CoreError(
            code: .pluginNotFound, plugin: name,
            message: "no plugin directory \(name)/plugin.json in the plugin paths ("
                + configuration.pluginPaths.joined(separator: ", ")
                + ") — check the name in vigil.toml, add the directory that holds it to plugin_paths, or set "
                + "VIGIL_FIRST_PARTY_MANIFESTS for Vigil's own plugins")
    }

    /// The first `path/NAME` in `paths` that exists, or `nil` when none does.
    ///
    /// The first one that exists is the plugin's directory: when it is broken (no `plugin.json`,
    /// not a directory, a symbolic link) that is an error, never a reason to use a copy in a later
    /// path such as Vigil's first-party manifests.
    ///
    /// - Throws: `.notRegularFile` when `path/NAME` is a symbolic link or not a directory;
    ///   `.pluginNotFound` when it is a directory without `plugin.json`.
    public static func locate(_ name: String, in paths: [String]) throws(CoreError) -> String? {
        for base in paths {
            let candidate = Path.join(base, name)
            guard let type = SystemCall.fileType(candidate) else { continue }
            if type == S_IFLNK {
                throw CoreError(
                    code: .notRegularFile, plugin: name,
                    message: "the plugin directory \(candidate) is a symbolic link; Vigil follows no links to plugin "
                        + "directories — move the directory there, or add its real parent to plugin_paths")
            }
            guard type == S_IFDIR else {
                throw CoreError(
                    code: .notRegularFile, plugin: name,
                    message: "the plugin directory \(candidate) is a \(SafeFile.fileKind(type)), not a directory — "
                        + "remove it or put the plugin's directory there")
            }
            guard SystemCall.fileType(Path.join(candidate, "plugin.json")) != nil else {
                throw CoreError(
                    code: .pluginNotFound, plugin: name,
                    message: "\(candidate) has no plugin.json; Vigil does not look for \(name) in later plugin paths "
                        + "while this directory is there — restore the plugin's files (reinstall it), or remove the "
                        + "directory to use another copy")
            }
            return candidate
        }
        return nil
    }

    /// Every plugin directory in `paths` (a directory or link with a valid plugin name), first
    /// occurrence of each name, sorted by name. A broken first occurrence is listed too, so that
    /// loading it reports why instead of a later copy being shown.
    public static func discover(in paths: [String]) -> [(name: String, directory: String)] {
        var found: [String: String] = [:]
        for base in paths {
            for name in Directory.names(in: base) ?? [] {
                guard PluginName.isValid(name), found[name] == nil else { continue }
                let candidate = Path.join(base, name)
                if let type = SystemCall.fileType(candidate), type == S_IFDIR || type == S_IFLNK {
                    found[name] = candidate
                }
            }
        }
        return found.keys.sorted().map { ($0, found[$0]!) }
    }

    /// The plugin name a directory stands for: the last component of its path. Give an absolute
    /// path (resolve a relative one against ``HostEnvironment/workingDirectory``): `.` names nothing.
    public static func name(ofDirectory directory: String) -> String {
        Path.lastComponent(of: Path.normalized(directory))
    }

    /// The raw files of a plugin directory, read with caps.
    public struct Files: Sendable {
        /// The exact bytes of `plugin.json`.
        public let manifest: [UInt8]
        /// The bytes of `plugin.json.minisig`, if present.
        public let signature: [UInt8]?
        /// The bytes of `plugin.pub`, if present.
        public let publicKey: [UInt8]?
    }

    /// Reads `plugin.json` (≤ 64 KiB), `plugin.json.minisig` (≤ 10 KiB) and `plugin.pub` (≤ 1 KiB):
    /// regular files only, no symbolic links, each read once.
    public static func readFiles(directory: String, name: String) throws(CoreError) -> Files {
        guard
            let manifest = try SafeFile.readIfPresent(
                relativePath: "plugin.json", inside: directory, cap: ManifestDecoder.maxManifestSize,
                what: "manifest", plugin: name)
        else {
            throw CoreError(
                code: .pluginNotFound, plugin: name,
                message: "\(directory) has no plugin.json — is this a plugin directory?")
        }
        let signature = try SafeFile.readIfPresent(
            relativePath: "plugin.json.minisig", inside: directory, cap: maxSignatureSize, what: "signature",
            plugin: name)
        let publicKey = try SafeFile.readIfPresent(
            relativePath: "plugin.pub", inside: directory, cap: maxPublicKeySize, what: "public key", plugin: name)
        return Files(manifest: manifest, signature: signature, publicKey: publicKey)
    }

    /// The full pipeline for one directory. `name` is the plugin's name (the lookup name or the
    /// directory's name) that the manifest must carry.
    public static func verify(
        directory: String, name: String, policy: KeyPolicy, rollback: RollbackStore?, record: Bool
    ) throws(CoreError) -> LoadedPlugin {
        let directory = Path.normalized(directory)
        // 1. Read with caps.
        let files = try readFiles(directory: directory, name: name)

        // 2. Trust, decided before anything from the plugin is parsed.
        let key: Fingerprint?
        switch policy {
        case .configured(let trusted, let acknowledged):
            key = try trustDecision(
                files: files, name: name, directory: directory, trusted: trusted, acknowledged: acknowledged)
        case .pinned(let pinned):
            guard files.signature != nil else {
                throw notSigned(name: name, directory: directory, acknowledgeable: false)
            }
            if let offered = try offeredKey(files, name: name), offered.fingerprint != pinned {
                throw CoreError(
                    code: .fingerprintMismatch, plugin: name,
                    message: "its key \(offered.fingerprint) is not the expected \(pinned) — do not trust it; "
                        + "check the fingerprint with the plugin's publisher")
            }
            key = pinned
        case .offered:
            guard files.signature != nil else {
                throw notSigned(name: name, directory: directory, acknowledgeable: false)
            }
            guard let offered = try offeredKey(files, name: name) else {
                throw CoreError(
                    code: .noPublicKey, plugin: name,
                    message: "it is signed but ships no plugin.pub, so there is no key to review — ask the publisher "
                        + "for plugin.pub, or pin the key you got from them with `--fingerprint ed25519:…`")
            }
            key = offered.fingerprint
        }

        // 3. Verify the signature over the exact bytes.
        // When plugin.pub holds the same key, the signature's key id must match its key id too.
        if let key, let signatureBytes = files.signature {
            let offered = try offeredKey(files, name: name)
            try verifySignature(
                signatureBytes, over: files.manifest, with: key, name: name,
                keyID: offered?.fingerprint == key ? offered?.keyID : nil)
        }

        // 4. Only now parse.
        let manifest = try ManifestDecoder.decode(files.manifest, plugin: name)

        // 5. The name must match the directory and the trust entry.
        let directoryName = Path.lastComponent(of: directory)
        guard manifest.name == name, directoryName == name else {
            throw CoreError(
                code: .nameMismatch, plugin: name,
                message:
                    "its manifest is for \"\(Sanitizer.display(manifest.name))\" but it was found as \"\(name)\" in "
                    + "\(directory) — a manifest copied into another plugin's directory is refused; install each "
                    + "plugin in a directory named after it")
        }

        // 6. Rollback.
        let sha = Digest.hex(Digest.sha256(files.manifest))
        if let key, let rollback {
            try rollback.check(plugin: name, fingerprint: key, version: manifest.version, manifestSHA256: sha)
        }

        // 7. Resources.
        var contents: [String: [UInt8]] = [:]
        for resource in manifest.resources {
            contents[resource.path] = try readResource(resource, directory: directory, name: name)
        }

        if let key, let rollback, record {
            try rollback.record(plugin: name, fingerprint: key, version: manifest.version, manifestSHA256: sha)
        }
        return LoadedPlugin(
            manifest: manifest, directory: directory, trust: key.map(PluginTrust.trusted) ?? .acknowledgedUnsigned,
            manifestSHA256: sha, resourceContents: contents)
    }

    /// The key to verify with under the loader's rules, or `nil` for an acknowledged unsigned plugin.
    static func trustDecision(
        files: Files, name: String, directory: String, trusted: Fingerprint?, acknowledged: Bool
    ) throws(CoreError) -> Fingerprint? {
        guard files.signature != nil else {
            if acknowledged && trusted == nil { return nil }
            if trusted != nil {
                throw CoreError(
                    code: .notSigned, plugin: name,
                    message: "it has no signature (\(directory)/plugin.json.minisig is missing) although a key is "
                        + "trusted for it in [trusted_plugins] — a stripped signature is refused even when "
                        + "acknowledged; restore the signed release, or remove the trust entry "
                        + "(`vigil plugin untrust \(name)`) to develop it unsigned")
            }
            throw notSigned(name: name, directory: directory, acknowledgeable: true)
        }
        let offered = try offeredKey(files, name: name)
        guard let trusted else {
            let ack = acknowledged ? " (acknowledge_unsafe_plugins only admits plugins with no signature at all)" : ""
            guard let offered else {
                throw CoreError(
                    code: .noPublicKey, plugin: name,
                    message: "it is signed but ships no plugin.pub and no key is trusted for it\(ack) — ask the "
                        + "publisher for plugin.pub, or pin the key you got from them with "
                        + "`\(TrustCommand.display(name, "--fingerprint ed25519:…"))`")
            }
            throw CoreError(
                code: .untrustedKey, plugin: name,
                message: "it is signed with key \(offered.fingerprint), which is not trusted\(ack) — review it and "
                    + "run `\(TrustCommand.display(name))`")
        }
        if let offered, offered.fingerprint != trusted {
            throw CoreError(
                code: .keyRotation, plugin: name,
                message: "the trusted key \(trusted) does not match the key the plugin offers, "
                    + "\(offered.fingerprint) — if you typed it, fix it under [trusted_plugins]; if the publisher "
                    + "rotated keys, confirm the new fingerprint with them, review and trust again "
                    + "(`\(TrustCommand.display(name))`); otherwise the plugin was replaced")
        }
        return trusted
    }

    static func notSigned(name: String, directory: String, acknowledgeable: Bool) -> CoreError {
        CoreError(
            code: .notSigned, plugin: name,
            message: "it is not signed (\(directory)/plugin.json.minisig is missing) — ask the publisher for a signed "
                + "release, or sign it yourself with `vigil plugin sign`"
                + (acknowledgeable
                    ? "; during development only, list it in acknowledge_unsafe_plugins in vigil.toml" : ""))
    }

    /// Parses `plugin.pub` if present.
    static func offeredKey(_ files: Files, name: String) throws(CoreError) -> MinisignPublicKey? {
        guard let bytes = files.publicKey else { return nil }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw CoreError(
                code: .keyInvalid, plugin: name,
                message: "its plugin.pub is not UTF-8 text — ask the publisher for a correct plugin.pub")
        }
        do {
            return try MinisignPublicKey(fileContents: text)
        } catch {
            throw CoreError(
                code: .keyInvalid, plugin: name,
                message: "its plugin.pub is not a valid minisign public key (\(error)) — ask the publisher for a "
                    + "correct plugin.pub", cause: cryptoCause(error))
        }
    }

    /// Verifies a minisign signature file over `message` with `fingerprint`'s key, mapping crypto
    /// errors to the core's kinds.
    ///
    /// - Parameter keyID: The minisign key id the signature must carry (from a `plugin.pub` holding
    ///   the same key), or `nil` when only the raw key is known.
    public static func verifySignature(
        _ signatureBytes: [UInt8], over message: [UInt8], with fingerprint: Fingerprint, name: String,
        keyID: [UInt8]? = nil
    ) throws(CoreError) {
        let tamper =
            " — the manifest or its signature was changed after signing, or it was signed with another "
            + "key; reinstall the plugin from its publisher"
        let signature: MinisignSignature
        do {
            signature = try MinisignSignature(fileContents: signatureBytes)
        } catch {
            throw signatureRefusal(error, name, "its signature file plugin.json.minisig is malformed", tamper)
        }
        if let keyID, signature.keyID != keyID {
            throw CoreError(
                code: .invalidSignature, plugin: name,
                message: "its signature names key id \(signature.keyIDHex) but plugin.pub is key id "
                    + "\(MinisignPublicKey(keyID: keyID, key: fingerprint.publicKey).keyIDHex)" + tamper)
        }
        do {
            if let keyID {
                try signature.verify(message, with: MinisignPublicKey(keyID: keyID, key: fingerprint.publicKey))
            } else {
                try signature.verify(message, with: fingerprint.publicKey)
            }
        } catch {
            throw signatureRefusal(error, name, "its signature does not verify with the key \(fingerprint)", tamper)
        }
    }

    /// The refusal of plugin `name` for the crypto `error` of reading or checking its signature:
    /// ``CoreError/Code/unsupportedSignatureAlgorithm`` for an algorithm Vigil does not accept, else
    /// ``CoreError/Code/invalidSignature`` saying `what` happened, the error and the `remedy`.
    private static func signatureRefusal(
        _ error: any Error, _ name: String, _ what: String, _ remedy: String
    ) -> CoreError {
        if (error as? CryptoError)?.code == .unsupportedAlgorithm {
            // The crypto error already says what the algorithm is, why it is refused and how to re-sign.
            return CoreError(
                code: .unsupportedSignatureAlgorithm, plugin: name, message: "plugin.json.minisig: \(error)",
                cause: cryptoCause(error))
        }
        return CoreError(
            code: .invalidSignature, plugin: name, message: "\(what) (\(error))" + remedy, cause: cryptoCause(error))
    }

    /// The crypto error underneath a refusal, kept typed.
    private static func cryptoCause(_ error: any Error) -> ErrorCause? {
        (error as? CryptoError).map(ErrorCause.init)
    }

    static func readResource(
        _ resource: PluginManifest.Resource, directory: String, name: String
    ) throws(CoreError) -> [UInt8] {
        let remedy = " — the plugin's files differ from what was signed; reinstall the plugin from its publisher"
        let bytes: [UInt8]?
        do {
            bytes = try SafeFile.readIfPresent(
                relativePath: resource.path, inside: directory, cap: resource.size, what: "resource", plugin: name)
        } catch  where error.code == .fileTooLarge {
            throw CoreError(
                code: .resourceMismatch, plugin: name,
                message: "the resource \(resource.path) is larger than the signed size of \(resource.size) bytes"
                    + remedy)
        }
        guard let bytes else {
            throw CoreError(
                code: .resourceMismatch, plugin: name, message: "the resource \(resource.path) is missing" + remedy)
        }
        guard bytes.count == resource.size else {
            throw CoreError(
                code: .resourceMismatch, plugin: name,
                message: "the resource \(resource.path) is \(bytes.count) bytes, not the signed \(resource.size)"
                    + remedy)
        }
        let sha = Digest.hex(Digest.sha256(bytes))
        guard sha == resource.sha256 else {
            throw CoreError(
                code: .resourceMismatch, plugin: name,
                message: "the resource \(resource.path) has SHA-256 \(sha), not the signed \(resource.sha256)" + remedy)
        }
        return bytes
    }
}

/// Loud text for callers to print.
public enum CoreBanner {
    /// The banner printed on every run and build while unsigned plugins are acknowledged.
    public static func unsafePlugins(_ names: [String]) -> String {
        let list = names.sorted().joined(separator: ", ")
        return """
            ⚠️  VIGIL: UNSIGNED PLUGINS ENABLED: \(list)
            ⚠️  These plugins are NOT cryptographically verified (acknowledge_unsafe_plugins in vigil.toml).
            ⚠️  Use this only during development; sign them and remove the acknowledgement before production.
            """
    }
}
