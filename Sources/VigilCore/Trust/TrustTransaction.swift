public import VigilCrypto

/// What `vigil plugin trust` shows before asking: the verified plugin, its key, and the notices an
/// operator must not miss (key rotation, downgrade, a first-party name with another key).
public struct TrustReview: Sendable {
    /// A version lower than the one this host accepted before (for any key of the plugin).
    public struct Downgrade: Sendable, Hashable {
        /// The highest version accepted before.
        public let from: SemanticVersion
        /// The version under review.
        public let to: SemanticVersion
    }

    /// The plugin's name.
    public let name: String
    /// The plugin, verified with the key under review (signature, manifest and resources).
    public let plugin: LoadedPlugin
    /// The key under review.
    public let fingerprint: Fingerprint
    /// Its minisign key id (hex), from `plugin.pub` or the signature.
    public let keyID: String
    /// The configuration the key will be recorded in.
    public let configPath: String
    /// The key trusted now, if any.
    public let currentlyTrusted: Fingerprint?
    /// Set when the version is lower than the highest accepted before.
    public let downgrade: Downgrade?
    /// True when the same version was accepted before with other manifest bytes.
    public let changedAtSameVersion: Bool
    /// The published key of the first-party plugin of this name, when the key under review is
    /// not it.
    public let expectedFirstPartyKey: Fingerprint?

    /// True when another key is trusted now.
    public var isRotation: Bool { currentlyTrusted != nil && currentlyTrusted != fingerprint }
}

/// `vigil plugin trust` as one transaction: read the configuration once, verify the plugin with
/// the key it offers (or a pinned one), review, then record the key in `vigil.toml` and the
/// version in the rollback state — both or neither.
public enum TrustTransaction {
    /// Verifies `name` and gathers what the operator must see. Writes nothing.
    ///
    /// - Parameters:
    ///   - pinned: a fingerprint obtained out of band; the plugin's key must be this one.
    ///   - store: the rollback store, read for the downgrade notice.
    public static func review(
        name: String, configuration: HostConfiguration, pinned: Fingerprint?, store: RollbackStore
    ) throws(CoreError) -> TrustReview {
        let loader = PluginLoader(configuration: configuration, rollbackStore: nil)
        let directory = try loader.locate(name)
        let plugin = try PluginLoader.verify(
            directory: directory, name: name, policy: pinned.map(KeyPolicy.pinned) ?? .offered, rollback: nil,
            record: false)
        guard case .trusted(let key) = plugin.trust else {
            throw CoreError(code: .notSigned, plugin: name, message: "it is not signed, so there is no key to trust")
        }
        let files = try PluginLoader.readFiles(directory: plugin.directory, name: name)
        let accepted = try store.entries(plugin: name).values
        let version = plugin.manifest.version
        var downgrade: TrustReview.Downgrade?
        if let highest = accepted.map(\.version).max(), version < highest {
            downgrade = .init(from: highest, to: version)
        }
        let changed = accepted.contains { $0.version == version && $0.manifestSHA256 != plugin.manifestSHA256 }
        return TrustReview(
            name: name, plugin: plugin, fingerprint: key, keyID: keyID(files), configPath: configuration.path,
            currentlyTrusted: configuration.trustedPlugins[name], downgrade: downgrade, changedAtSameVersion: changed,
            expectedFirstPartyKey: FirstPartyKeys.mismatch(name: name, fingerprint: key))
    }

    /// Records the reviewed key and version: checks that the rollback state is writable, writes
    /// `vigil.toml`, then the rollback record (forgetting older entries of the plugin); when the
    /// second write fails, `vigil.toml` is put back as it was.
    public static func commit(_ review: TrustReview, store: RollbackStore) throws(CoreError) -> TrustEditor.Outcome {
        try store.checkWritable()
        return try TrustEditor.trust(
            plugin: review.name, fingerprint: review.fingerprint, configPath: review.configPath
        ) {
            () throws(CoreError) in
            try store.replace(
                plugin: review.name, fingerprint: review.fingerprint, version: review.plugin.manifest.version,
                manifestSHA256: review.plugin.manifestSHA256)
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
