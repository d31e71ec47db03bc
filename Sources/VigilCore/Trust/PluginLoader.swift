import Glibc
import VigilBase
import VigilCrypto
public import VigilPlugin

/// How a loaded plugin was admitted.
public enum PluginTrust: Sendable, Hashable {
    /// Its manifest verified with a threshold of this key set from `[trusted_plugins]`.
    case trusted(TrustedKeys)
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
    /// The signed key rotations by which the keys that signed it were reached from the keys
    /// `vigil.toml` trusts (`nil` when none was applied).
    public var rotation: RotationState? = nil
    /// The distinct trusted keys whose signatures over the manifest counted toward the threshold
    /// (empty for an unsigned plugin).
    public var signers: [Fingerprint] = []
    /// When the revocation list that applied stops being fresh (seconds since the epoch), if it says.
    public var revocationsExpire: Int64? = nil
}

/// Which key a verification uses.
public enum KeyPolicy: Sendable, Hashable {
    /// The loader's rules: the `[trusted_plugins]` key (if any) and the acknowledgement list.
    case configured(trusted: TrustedKeys?, acknowledgedUnsigned: Bool)
    /// Keys given out of band (`--fingerprint`): every key the plugin offers must be one of them,
    /// and a threshold of them must sign.
    case pinned(TrustedKeys)
    /// The keys the plugin offers in `plugin.pub`, `plugin.2.pub`, … (used only to review a plugin
    /// before trusting it): every one of them must sign.
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
    /// The clock (seconds since the epoch) that signed expiry and the clock ratchet are checked
    /// against; the system clock unless a test injects another.
    public var now: @Sendable () -> Int64 = Freshness.systemNow

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
        let trusted = configuration.trustedKeys[name]
        let acknowledged = configuration.acknowledgedUnsafePlugins.contains(name)
        return try Self.verify(
            directory: directory, name: name,
            policy: .configured(trusted: trusted, acknowledgedUnsigned: acknowledged),
            rollback: rollbackStore, record: record,
            freshness: Freshness(now: now(), grace: configuration.freshnessGrace))
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
        /// The signature files present, by number: 1 is `plugin.json.minisig`, N > 1
        /// `plugin.json.N.minisig`.
        public let signatures: [(number: Int, bytes: [UInt8])]
        /// The public key files present, by number: 1 is `plugin.pub`, N > 1 `plugin.N.pub`.
        public let publicKeys: [(number: Int, bytes: [UInt8])]

        /// The bytes of `plugin.json.minisig`, if present.
        public var signature: [UInt8]? { signatures.first { $0.number == 1 }?.bytes }
        /// The bytes of `plugin.pub`, if present.
        public var publicKey: [UInt8]? { publicKeys.first { $0.number == 1 }?.bytes }
        /// True when at least one signature file is present.
        public var isSigned: Bool { !signatures.isEmpty }
    }

    /// The name of signature file `number`: `plugin.json.minisig` for 1, else `plugin.json.N.minisig`.
    public static func signatureFileName(_ number: Int) -> String {
        number == 1 ? "plugin.json.minisig" : "plugin.json.\(number).minisig"
    }

    /// The name of public key file `number`: `plugin.pub` for 1, else `plugin.N.pub`.
    public static func publicKeyFileName(_ number: Int) -> String {
        number == 1 ? "plugin.pub" : "plugin.\(number).pub"
    }

    /// Reads `plugin.json` (≤ 64 KiB), the signature files `plugin.json.minisig` and
    /// `plugin.json.2.minisig` … `plugin.json.16.minisig` (≤ 10 KiB each) and the key files
    /// `plugin.pub` and `plugin.2.pub` … `plugin.16.pub` (≤ 1 KiB each): regular files only, no
    /// symbolic links, each read once.
    public static func readFiles(directory: String, name: String) throws(CoreError) -> Files {
        // Opened once for the up to 33 files probed below.
        guard let opened = try SafeFile.OpenedDirectory(directory, plugin: name),
            let manifest = try opened.readIfPresent(
                relativePath: "plugin.json", cap: ManifestDecoder.maxManifestSize, what: "manifest", plugin: name)
        else {
            throw CoreError(
                code: .pluginNotFound, plugin: name,
                message: "\(directory) has no plugin.json — is this a plugin directory?")
        }
        var signatures: [(number: Int, bytes: [UInt8])] = []
        var publicKeys: [(number: Int, bytes: [UInt8])] = []
        // Listed once so that the absent files of the 32 probed below are not opened one by one
        // (a file made after the listing is missed as one made after the read would be).
        let present = opened.entryNames()
        for number in 1...TrustedKeys.maxKeys {
            let signatureFile = signatureFileName(number)
            if present?.contains(signatureFile) != false,
                let bytes = try opened.readIfPresent(
                    relativePath: signatureFile, cap: maxSignatureSize, what: "signature", plugin: name)
            {
                signatures.append((number, bytes))
            }
            let publicKeyFile = publicKeyFileName(number)
            if present?.contains(publicKeyFile) != false,
                let bytes = try opened.readIfPresent(
                    relativePath: publicKeyFile, cap: maxPublicKeySize, what: "public key", plugin: name)
            {
                publicKeys.append((number, bytes))
            }
        }
        return Files(manifest: manifest, signatures: signatures, publicKeys: publicKeys)
    }

    /// The full pipeline for one directory. `name` is the plugin's name (the lookup name or the
    /// directory's name) that the manifest must carry.
    ///
    /// - Parameter freshness: when given (with a rollback store), a *change* — a version or key
    ///   rotation this host has not accepted yet — is refused when the manifest's signed `expires`
    ///   passed or the clock went back; an accepted version is never refused for it. The clock
    ///   reading is recorded with the version (the ratchet).
    public static func verify(
        directory: String, name: String, policy: KeyPolicy, rollback: RollbackStore?, record: Bool,
        freshness: Freshness? = nil
    ) throws(CoreError) -> LoadedPlugin {
        let directory = Path.normalized(directory)
        // 1. Read with caps.
        let files = try readFiles(directory: directory, name: name)

        // 2. Trust, decided before anything from the plugin is parsed.
        let offered = try offeredKeys(files, name: name)
        let keys: TrustedKeys?
        var rotation: (base: TrustedKeys, state: RotationState)?
        switch policy {
        case .configured(let trusted, let acknowledged):
            // Signed rotations lead from the configured keys to the ones that sign now.
            var current = trusted
            if let trusted, files.isSigned {
                let reached = try followRotations(
                    directory: directory, name: name, from: trusted, rollback: rollback, record: record)
                if reached.version > 0 {
                    rotation = (trusted, RotationState(keys: reached.keys, version: reached.version))
                }
                current = reached.keys
            }
            keys = try trustDecision(
                files: files, offered: offered, name: name, directory: directory, trusted: current,
                acknowledged: acknowledged)
        case .pinned(let pinned):
            guard files.isSigned else {
                throw notSigned(name: name, directory: directory, acknowledgeable: false)
            }
            // Keys pinned out of band follow signed rotations like configured ones (nothing is recorded).
            let reached = try followRotations(
                directory: directory, name: name, from: pinned, rollback: nil, record: false)
            if reached.version > 0 { rotation = (pinned, RotationState(keys: reached.keys, version: reached.version)) }
            let current = reached.keys
            if let other = offered.first(where: { !current.contains($0.fingerprint) }) {
                throw CoreError(
                    code: .fingerprintMismatch, plugin: name,
                    message: "its key \(other.fingerprint) is not the expected \(current) — do not trust it; "
                        + "check the fingerprint with the plugin's publisher")
            }
            keys = current
        case .offered:
            guard files.isSigned else {
                throw notSigned(name: name, directory: directory, acknowledgeable: false)
            }
            guard !offered.isEmpty else {
                throw CoreError(
                    code: .noPublicKey, plugin: name,
                    message: "it is signed but ships no plugin.pub, so there is no key to review — ask the publisher "
                        + "for plugin.pub, or pin the key you got from them with `--fingerprint ed25519:…`")
            }
            do {
                keys = try TrustedKeys(keys: offered.map(\.fingerprint), threshold: offered.count)
            } catch {
                throw CoreError(
                    code: .keyInvalid, plugin: name, message: "the keys it offers are not a valid key set: \(error)")
            }
        }

        // 2b. The signed revocation list: the newest of the plugin's and the one this host kept.
        var revocations: RevocationList?
        var newRevocations = false
        if let keys {
            (revocations, newRevocations) = try currentRevocations(
                directory: directory, name: name, keys: keys, rollback: rollback)
        }

        // 3. Verify a threshold of signatures over the exact bytes (revoked keys count for nothing).
        var signers: [Fingerprint] = []
        if var keys {
            if let revoked = revocations?.keys, keys.keys.contains(where: revoked.contains) {
                let remaining = keys.keys.filter { !revoked.contains($0) }
                guard let kept = try? TrustedKeys(keys: remaining, threshold: keys.threshold) else {
                    throw CoreError(
                        code: .revoked, plugin: name,
                        message: "its revocation list revokes its keys so that fewer than \(keys.threshold) remain — "
                            + "the publisher must rotate to new keys (`vigil plugin rotate`) and re-sign")
                }
                keys = kept
            }
            signers = try verifyThreshold(files, keys: keys, offered: offered, name: name)
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
        if let keys, let rollback {
            try rollback.check(plugin: name, keys: keys, version: manifest.version, manifestSHA256: sha)
        }

        // 6b. Freshness: a change needs an unexpired manifest and a clock that did not go back.
        if let freshness, let keys, let rollback {
            let entry = try rollback.entry(plugin: name, keys: keys)
            var rotated = false
            if let rotation {
                rotated = try rollback.rotation(plugin: name, base: rotation.base) != rotation.state
            }
            if entry?.version != manifest.version || entry?.manifestSHA256 != sha || rotated {
                let ratchet = try rollback.latestTime()
                let what =
                    rotated
                    ? "following its key rotation"
                    : entry == nil ? "accepting it" : "updating it to version \(manifest.version)"
                try freshness.checkChange(
                    plugin: name, version: manifest.version, expires: manifest.expires, ratchet: ratchet, what: what)
                try freshness.checkRevocations(plugin: name, list: revocations, ratchet: ratchet, what: what)
            }
        }

        // 6c. Capabilities: no more than the operator accepted at their last review.
        if case .configured = policy, keys != nil, let rollback {
            try checkCapabilities(manifest, name: name, rollback: rollback)
        }

        if let revocations {
            try revocations.check(
                plugin: name, version: manifest.version, sha: sha, signers: signers, threshold: keys?.threshold ?? 1)
        }

        // 7. Resources.
        var contents: [String: [UInt8]] = [:]
        for resource in manifest.resources {
            contents[resource.path] = try readResource(resource, directory: directory, name: name)
        }

        if let keys, let rollback, record {
            try rollback.record(
                plugin: name, keys: keys, version: manifest.version, manifestSHA256: sha, rotation: rotation,
                time: freshness?.now, revocations: newRevocations ? revocations : nil)
        }
        return LoadedPlugin(
            manifest: manifest, directory: directory, trust: keys.map(PluginTrust.trusted) ?? .acknowledgedUnsigned,
            manifestSHA256: sha, resourceContents: contents, rotation: rotation?.state, signers: signers,
            revocationsExpire: revocations?.expires)
    }

    /// Refuses (`capabilities-grown`) a manifest that asks for more than the capabilities the
    /// operator accepted when they last trusted the plugin, with exactly the added lines; with no
    /// record (trusted before capabilities were recorded, or a key written into `vigil.toml` by
    /// hand) every capability it declares is new. A manifest that asks for nothing always passes.
    static func checkCapabilities(_ manifest: PluginManifest, name: String, rollback: RollbackStore) throws(CoreError) {
        guard !manifest.capabilities.isEmpty else { return }
        let accepted = try rollback.acceptedCapabilities(plugin: name)
        let added = manifest.capabilities.added(since: accepted ?? .none)
        guard !added.isEmpty else { return }
        let context =
            accepted == nil
            ? "no review on this host accepted what it may do (it was trusted before Vigil recorded capabilities, "
                + "or its key was written into vigil.toml by hand)"
            : "that is more than you accepted when you last trusted it"
        throw CoreError(
            code: .capabilitiesGrown, plugin: name,
            message: "version \(manifest.version) asks to " + added.joined(separator: "; ") + " — \(context); "
                + "review the difference and accept it with `\(TrustCommand.display(name))`, or keep the version "
                + "you trusted")
    }

    /// The revocation list that applies to a plugin with `keys` in `directory`: the one it ships
    /// (verified by a threshold of `keys` before it is parsed) or, when that is absent, the newest
    /// this host recorded; and whether the shipped one is newer than the recorded one.
    ///
    /// - Throws: ``CoreError`` `.revocationInvalid` (not signed, malformed), `.revocationRollback`
    ///   (older than the recorded one), and the rollback store's errors.
    static func currentRevocations(
        directory: String, name: String, keys: TrustedKeys, rollback: RollbackStore?
    ) throws(CoreError) -> (list: RevocationList?, new: Bool) {
        let stored = try rollback?.revocations(plugin: name)
        let shipped = try RevocationList.read(directory: directory, name: name, keys: keys)
        if let shipped, let stored, shipped.version < stored.version {
            throw CoreError(
                code: .revocationRollback, plugin: name,
                message: "its revocation list is version \(shipped.version), older than version "
                    + "\(stored.version) which this host already applied (a list going back could un-revoke a "
                    + "key) — install the plugin's current release with its current revocations.json")
        }
        return (shipped ?? stored, shipped != nil && shipped?.version != stored?.version)
    }

    /// Checks a plugin that was loaded (and may be running) against its revocation list as it is
    /// now, for a host that learns of a new list: the list is read and verified exactly as at load,
    /// and a newer one is recorded in `rollback` (so deleting it later revokes nothing back).
    ///
    /// - Returns: the `revoked` refusal when the list now revokes the manifest's digest, its
    ///   version (below the floor) or so many of the keys that signed it that fewer than the
    ///   threshold remain; `nil` when it does not (or the plugin is unsigned).
    /// - Throws: the list's own problems (`revocation-invalid`, `revocation-rollback`) and the
    ///   rollback store's: a list that does not verify revokes nothing, so the caller keeps the
    ///   plugin running and reports the problem.
    public static func revocation(of plugin: LoadedPlugin, rollback: RollbackStore?) throws(CoreError) -> CoreError? {
        guard case .trusted(let keys) = plugin.trust else { return nil }
        let name = plugin.manifest.name
        let (list, new) = try currentRevocations(
            directory: plugin.directory, name: name, keys: keys, rollback: rollback)
        guard let list else { return nil }
        if new, let rollback { try rollback.recordRevocations(plugin: name, list) }
        do throws(CoreError) {
            try list.check(
                plugin: name, version: plugin.manifest.version, sha: plugin.manifestSHA256, signers: plugin.signers,
                threshold: keys.threshold)
        } catch {
            return error
        }
        return nil
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
