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
    /// The keys under review and how many must sign (one key, threshold 1, for most plugins).
    public let keys: TrustedKeys
    /// The first key under review.
    public var fingerprint: Fingerprint { keys.keys[0] }
    /// The minisign key id (hex) of each key, in the order of ``TrustedKeys/keys``, from the key
    /// files or the signatures ("unknown" when neither names it).
    public let keyIDs: [String]
    /// The first key's minisign key id.
    public var keyID: String { keyIDs.first ?? "unknown" }
    /// The configuration the key will be recorded in.
    public let configPath: String
    /// The keys trusted now, if any.
    public let currentlyTrusted: TrustedKeys?
    /// Set when the version is lower than the highest accepted before.
    public let downgrade: Downgrade?
    /// True when the same version was accepted before with other manifest bytes.
    public let changedAtSameVersion: Bool
    /// The published key of the first-party plugin of this name, when the key under review is
    /// not it.
    public let expectedFirstPartyKey: Fingerprint?
    /// The version of the signed key rotation that leads from ``currentlyTrusted`` to ``keys``,
    /// when there is one (hosts follow it without a review).
    public let signedRotation: Int?

    /// The capabilities the operator accepted when they last trusted this plugin, if recorded.
    public var acceptedCapabilities: PluginCapabilities? = nil

    /// What the manifest under review asks for beyond ``acceptedCapabilities`` (everything it
    /// declares when nothing was recorded): the lines a host refuses with `capabilities-grown` until
    /// this review is accepted. Empty when it asks for no more.
    public var addedCapabilities: [String] {
        plugin.manifest.capabilities.added(since: acceptedCapabilities ?? .none)
    }

    /// True when another key is trusted now.
    public var isRotation: Bool { currentlyTrusted != nil && currentlyTrusted != keys }
}

/// `vigil plugin trust` as one transaction: read the configuration once, verify the plugin with
/// the key it offers (or a pinned one), review, then record the key in `vigil.toml` and the
/// version in the rollback state — both or neither.
public enum TrustTransaction {
    /// Verifies `name` and gathers what the operator must see. Writes nothing.
    ///
    /// - Parameters:
    ///   - pinned: keys obtained out of band; every key the plugin offers must be one of them.
    ///   - threshold: how many of the keys (pinned, else offered) must sign; all of them by default.
    ///   - store: the rollback store, read for the downgrade notice.
    public static func review(
        name: String, configuration: HostConfiguration, pinned: [Fingerprint], threshold: Int? = nil,
        store: RollbackStore, now: Int64 = Freshness.systemNow()
    ) throws(CoreError) -> TrustReview {
        let loader = PluginLoader(configuration: configuration, rollbackStore: nil)
        let directory = try loader.locate(name)
        let files = try PluginLoader.readFiles(directory: directory, name: name)
        var policy = KeyPolicy.offered
        let candidates = pinned.isEmpty ? try PluginLoader.offeredKeys(files, name: name).map(\.fingerprint) : pinned
        if !pinned.isEmpty || (threshold != nil && !candidates.isEmpty) {
            do {
                policy = .pinned(try TrustedKeys(keys: candidates, threshold: threshold ?? candidates.count))
            } catch {
                throw CoreError(
                    code: .configInvalid, plugin: name,
                    message: "the keys to trust are not a valid key set: \(error) — fix --fingerprint or --threshold")
            }
        }
        let plugin = try PluginLoader.verify(
            directory: directory, name: name, policy: policy, rollback: nil, record: false)
        guard case .trusted(let keys) = plugin.trust else {
            throw CoreError(code: .notSigned, plugin: name, message: "it is not signed, so there is no key to trust")
        }
        // Trusting is a change: not with an expired manifest or a clock that went back.
        try Freshness(now: now).checkChange(
            plugin: name, version: plugin.manifest.version, expires: plugin.manifest.expires,
            ratchet: try store.latestTime(), what: "trusting it")
        let accepted = try store.entries(plugin: name).values
        let version = plugin.manifest.version
        var downgrade: TrustReview.Downgrade?
        if let highest = accepted.map(\.version).max(), version < highest {
            downgrade = .init(from: highest, to: version)
        }
        var signedRotation: Int?
        if let current = configuration.trustedKeys[name], current != keys,
            let reached = try? PluginLoader.followRotations(
                directory: plugin.directory, name: name, from: current, rollback: store, record: false),
            reached.keys == keys
        {
            signedRotation = reached.version
        }
        let changed = accepted.contains { $0.version == version && $0.manifestSHA256 != plugin.manifestSHA256 }
        var review = TrustReview(
            name: name, plugin: plugin, keys: keys, keyIDs: keys.keys.map { keyID($0, files) },
            configPath: configuration.path, currentlyTrusted: configuration.trustedKeys[name], downgrade: downgrade,
            changedAtSameVersion: changed,
            expectedFirstPartyKey: keys.keys.lazy.compactMap { FirstPartyKeys.mismatch(name: name, fingerprint: $0) }
                .first, signedRotation: signedRotation)
        review.acceptedCapabilities = try store.acceptedCapabilities(plugin: name)
        return review
    }

    /// Records the reviewed key, version and capabilities: checks that the rollback state is writable, writes
    /// `vigil.toml`, then the rollback record (forgetting older entries of the plugin); when the
    /// second write fails, `vigil.toml` is put back as it was.
    public static func commit(
        _ review: TrustReview, store: RollbackStore, now: Int64 = Freshness.systemNow()
    ) throws(CoreError) -> TrustEditor.Outcome {
        try store.checkWritable()
        return try TrustEditor.trust(plugin: review.name, keys: review.keys, configPath: review.configPath) {
            () throws(CoreError) in
            try store.replace(
                plugin: review.name, keys: review.keys, version: review.plugin.manifest.version,
                manifestSHA256: review.plugin.manifestSHA256, time: now,
                capabilities: review.plugin.manifest.capabilities)
        }
    }

    /// The minisign key id of `key`, from the key file holding it, else a signature it made.
    static func keyID(_ key: Fingerprint, _ files: PluginLoader.Files) -> String {
        for file in files.publicKeys {
            if let text = String(validating: file.bytes, as: UTF8.self),
                let offered = try? MinisignPublicKey(fileContents: text), offered.fingerprint == key
            {
                return offered.keyIDHex
            }
        }
        for file in files.signatures {
            if let signature = try? MinisignSignature(fileContents: file.bytes),
                (try? signature.verify(files.manifest, with: key.publicKey)) != nil
            {
                return signature.keyIDHex
            }
        }
        return "unknown"
    }
}
