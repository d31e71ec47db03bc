import Glibc
public import VigilCore
import VigilCrypto

/// `vigil plugin install|update|outdated` without the terminal: each step verifies the plugin
/// exactly as `vigil plugin verify` and `vigil plugin trust` do (signature with the trusted key,
/// resources, rollback and freshness against the host's state), and changes the plugin directory
/// only once everything verified.
///
/// Plugins go to the *install directory*: the first of `plugin_paths` (default `manifests/` beside
/// `vigil.toml`). An update builds the directory's next state beside it
/// (`.NAME.vigil-next`: unchanged plugins hard-linked, changed ones downloaded and verified) and
/// swaps the two in one `renameat2(RENAME_EXCHANGE)`: a host starting or reloading at any moment
/// sees every plugin of the old state or every plugin of the new one, never a mix; a crash leaves
/// the old or the new state and a leftover directory no host reads, removed by the next run.
public struct PluginInstaller {
    /// The host's configuration.
    public let configuration: HostConfiguration
    /// The repository.
    public internal(set) var client: RepositoryClient
    /// The rollback state, read (never written) for the rollback checks.
    public let store: RollbackStore
    /// Called after each plugin of an update is staged and verified, and once more (plugin `""`)
    /// before the switch: tests inject failures here.
    package var afterStaging: ((String) throws(RepositoryError) -> Void)?

    public init(configuration: HostConfiguration, client: RepositoryClient, store: RollbackStore) {
        self.configuration = configuration
        self.client = client
        self.store = store
    }

    /// The directory plugins are installed into: the first plugin path.
    public var installDirectory: String { configuration.pluginPaths[0] }

    /// The install directory with symbolic links resolved: what an update swaps (a link to it stays).
    var liveDirectory: String {
        guard let resolved = realpath(installDirectory, nil) else { return installDirectory }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Where an update builds the install directory's next state: beside it, on the same file system.
    var nextDirectory: String {
        let live = liveDirectory
        return Path.join(Path.directory(of: live), "." + Path.lastComponent(of: live) + ".vigil-next")
    }

    /// The lock every change of the install directory holds (beside it): an update from its copy
    /// of the directory to its switch, an install while it places its plugin.
    var lockPath: String {
        let live = liveDirectory
        return Path.join(Path.directory(of: live), "." + Path.lastComponent(of: live) + ".vigil-lock")
    }

    /// Takes the install directory's lock without waiting; it is held until the descriptor closes.
    func lock() throws(RepositoryError) -> OwnedDescriptor {
        let path = lockPath
        let file: OwnedDescriptor
        do throws(SystemCallError) {
            file = try OwnedDescriptor("open") { open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600) }
        } catch {
            throw storage("open the lock \(path)", errno: error.number, plugin: nil)
        }
        guard flock(file.rawValue, LOCK_EX | LOCK_NB) == 0 else {
            let e = errno
            if e == EWOULDBLOCK {
                throw RepositoryError(
                    code: .installState,
                    message: "another `vigil plugin install` or `update` is changing \(installDirectory) (it holds "
                        + "\(path)) — wait for it to finish, then run this again; nothing was changed")
            }
            throw storage("lock \(path)", errno: e, plugin: nil)
        }
        return file
    }

    // MARK: - install

    /// A plugin downloaded and verified, not yet in the install directory.
    public struct StagedInstall {
        /// The plugin as the repository offers it.
        public let offer: RepositoryPlugin
        /// The verified plugin (in its staging directory).
        public let plugin: LoadedPlugin
        /// The review `vigil plugin trust` shows, when the host does not trust the plugin yet.
        public let review: TrustReview?
        /// Where it is placed by ``commit(_:)``.
        public let destination: String
        let staging: String
    }

    /// Refreshes, downloads `name` through its delegation and verifies it: with the key the host
    /// trusts for it (which must be the key the repository delegates to, or reached from it by
    /// the plugin's signed rotations), else with the delegated key, for a trust review.
    public func stageInstall(_ name: String) async throws(RepositoryError) -> StagedInstall {
        if let existing = try core({ () throws(CoreError) in
            try PluginLoader.locate(name, in: configuration.pluginPaths)
        }) {
            throw RepositoryError(
                code: .installState, plugin: name,
                message: "\(name) is installed already (\(existing)) — `vigil plugin update \(name)` brings it up to "
                    + "date")
        }
        try prepareInstallDirectory()
        let session = try await client.refresh()
        let offer = try await session.plugin(name)
        let staging = try makeStaging(prefix: ".\(name).vigil-install")
        do throws(RepositoryError) {
            let directory = Path.join(staging, name)
            try await session.download(offer, into: directory)
            let destination = Path.join(installDirectory, name)
            if let trusted = configuration.trustedKeys[name] {
                let plugin = try verify(offer, in: directory, trusted: trusted, installed: nil)
                return StagedInstall(
                    offer: offer, plugin: plugin, review: nil, destination: destination, staging: staging)
            }
            let review = try core(offer) { () throws(CoreError) in
                try TrustTransaction.review(
                    name: name, configuration: configuration.searching(pluginPaths: [staging]), pinned: offer.keys.keys,
                    threshold: offer.keys.threshold, store: store, now: client.now)
            }
            return StagedInstall(
                offer: offer, plugin: review.plugin, review: review, destination: destination, staging: staging)
        } catch {
            DirectoryTree.remove(staging)
            throw error
        }
    }

    /// Places a staged plugin in the install directory (never over an existing one), and records
    /// the reviewed key when there was a review: both, or the directory is taken back out.
    /// - Returns: what recording the reviewed key changed in `vigil.toml`; nil without a review.
    @discardableResult
    public func commit(_ staged: StagedInstall) throws(RepositoryError) -> TrustEditor.Outcome? {
        defer { DirectoryTree.remove(staged.staging) }
        let held = try lock()
        defer { withExtendedLifetime(held) {} }
        let name = staged.offer.name
        guard SystemCall.fileType(staged.destination) == nil else {
            throw RepositoryError(
                code: .installState, plugin: name,
                message: "\(staged.destination) appeared meanwhile; nothing was changed")
        }
        guard rename(staged.plugin.directory, staged.destination) == 0 else {
            throw storage("place \(name) at \(staged.destination)", errno: errno, plugin: name)
        }
        guard let review = staged.review else { return nil }
        do throws(CoreError) {
            return try TrustTransaction.commit(review, store: store, now: client.now)
        } catch {
            DirectoryTree.remove(staged.destination)
            throw RepositoryError(code: .refused, plugin: name, message: error.message, cause: ErrorCause(error))
        }
    }

    /// Removes a staged plugin that will not be installed.
    public func discard(_ staged: StagedInstall) { DirectoryTree.remove(staged.staging) }

    // MARK: - update

    /// What an update did, or would do, for one plugin.
    public struct UpdateItem: Sendable {
        /// What happened to the plugin.
        public enum Outcome: String, Sendable {
            /// A newer version was installed.
            case updated
            /// The repository offers what is installed.
            case upToDate = "up-to-date"
            /// The plugin is not in the install directory (first-party, or elsewhere in plugin_paths).
            case notManaged = "not-managed"
            /// The repository has no such plugin.
            case notInRepository = "not-in-repository"
        }

        /// The plugin's name.
        public let name: String
        /// What happened.
        public let outcome: Outcome
        /// The version installed before.
        public let from: String?
        /// The version installed now (or offered).
        public let to: String?
    }

    /// Updates `names` (default: every activated plugin) from one refresh: each changed plugin is
    /// downloaded and verified into the next state of the install directory, then all are
    /// switched in at once. Any refusal changes nothing.
    ///
    /// - Parameter names: plugins named explicitly must be installed and in the repository.
    public func update(_ names: [String]? = nil) async throws(RepositoryError) -> [UpdateItem] {
        let explicit = names != nil
        let held = try lock()
        defer { withExtendedLifetime(held) {} }
        let session = try await client.refresh()
        DirectoryTree.remove(nextDirectory)  // a crashed run's leftover, which no host reads
        var items: [UpdateItem] = []
        var changed: [(name: String, offer: RepositoryPlugin, installed: LoadedPlugin?)] = []
        for name in names ?? configuration.plugins {
            let located = try core({ () throws(CoreError) in
                try PluginLoader.locate(name, in: configuration.pluginPaths)
            })
            guard let directory = located, Path.directory(of: directory) == installDirectory else {
                if explicit {
                    throw RepositoryError(
                        code: .installState, plugin: name,
                        message: located.map { "\(name) is in \($0), not in the install directory \(installDirectory)" }
                            ?? "\(name) is not installed in \(installDirectory) — `vigil plugin install \(name)` first")
                }
                items.append(UpdateItem(name: name, outcome: .notManaged, from: nil, to: nil))
                continue
            }
            let offer: RepositoryPlugin
            do {
                offer = try await session.plugin(name)
            } catch  where error.code == .unknownPlugin && !explicit {
                items.append(UpdateItem(name: name, outcome: .notInRepository, from: nil, to: nil))
                continue
            }
            let installed = try? PluginLoader.verify(
                directory: directory, name: name,
                policy: .configured(trusted: configuration.trustedKeys[name], acknowledgedUnsigned: false),
                rollback: nil, record: false)
            if let installed, installed.manifestSHA256 == offer.manifestSHA256 {
                let version = "\(installed.manifest.version)"
                items.append(UpdateItem(name: name, outcome: .upToDate, from: version, to: version))
                continue
            }
            changed.append((name, offer, installed))
        }
        if changed.isEmpty { return items }

        let next = nextDirectory
        let live = liveDirectory
        let mode = try installDirectoryMode()
        // Changed plugins are downloaded afresh; an install's staging directory is not carried over.
        let staging = (Directory.names(in: live) ?? []).filter { $0.hasPrefix(".") && $0.contains(".vigil-install-") }
        do throws(SystemCallError) {
            try DirectoryTree.linkCopy(
                from: live, to: next, mode: mode, skipping: Set(changed.map(\.name) + staging))
        } catch {
            DirectoryTree.remove(next)
            throw storage("prepare \(next)", errno: error.number, plugin: nil)
        }
        do throws(RepositoryError) {
            for entry in changed {
                let directory = Path.join(next, entry.name)
                try await session.download(entry.offer, into: directory)
                guard let trusted = configuration.trustedKeys[entry.name] else {
                    throw RepositoryError(
                        code: .keyMismatch, plugin: entry.name,
                        message: "no key is trusted for \(entry.name) in \(configuration.path) — review it with "
                            + "`vigil plugin trust \(entry.name)` before updating it")
                }
                let plugin = try verify(entry.offer, in: directory, trusted: trusted, installed: entry.installed)
                items.append(
                    UpdateItem(
                        name: entry.name, outcome: .updated, from: entry.installed.map { "\($0.manifest.version)" },
                        to: "\(plugin.manifest.version)"))
                try afterStaging?(entry.name)
            }
            try afterStaging?("")
            do throws(SystemCallError) {
                try DirectoryTree.exchange(next, live)
            } catch {
                throw storage("switch \(installDirectory) to its next state", errno: error.number, plugin: nil)
            }
        } catch {
            DirectoryTree.remove(next)
            throw error
        }
        DirectoryTree.remove(next)  // the previous state, after the switch
        return items.sorted { $0.name < $1.name }
    }

    // MARK: - outdated

    /// One row of `vigil plugin outdated`.
    public struct OutdatedItem: Sendable {
        /// The plugin's name.
        public let name: String
        /// The version installed (verified), if any.
        public let installed: String?
        /// The version the repository offers (`custom.version`), if it has the plugin.
        public let available: String?
        /// `outdated`, `up-to-date`, `not-installed`, `not-managed`, `not-in-repository`, `invalid`.
        public let state: String
        /// Why, for `invalid`.
        public let reason: String?
    }

    /// Every activated plugin (and every plugin in the install directory) against the repository,
    /// from one refresh and the signed `custom.version` — nothing is downloaded.
    public func outdated() async throws(RepositoryError) -> [OutdatedItem] {
        let session = try await client.refresh()
        var names = configuration.plugins
        for name in (Directory.names(in: installDirectory) ?? []).sorted()
        where !name.hasPrefix(".") && !names.contains(name) && PluginName.isValid(name) {
            names.append(name)
        }
        var items: [OutdatedItem] = []
        for name in names {
            let located = try? PluginLoader.locate(name, in: configuration.pluginPaths)
            let offer: RepositoryPlugin?
            do {
                offer = try await session.plugin(name)
            } catch  where error.code == .unknownPlugin {
                offer = nil
            }
            var installedVersion: String?
            var state: String
            var reason: String?
            if let directory = located ?? nil {
                do throws(CoreError) {
                    let plugin = try PluginLoader.verify(
                        directory: directory, name: name,
                        policy: .configured(trusted: configuration.trustedKeys[name], acknowledgedUnsigned: false),
                        rollback: nil, record: false)
                    installedVersion = "\(plugin.manifest.version)"
                    if Path.directory(of: directory) != installDirectory {
                        state = "not-managed"
                    } else if let offer {
                        state = plugin.manifestSHA256 == offer.manifestSHA256 ? "up-to-date" : "outdated"
                    } else {
                        state = "not-in-repository"
                    }
                } catch {
                    state = "invalid"
                    reason = "\(error.message) (\(error.code))"
                }
            } else {
                state = offer == nil ? "not-in-repository" : "not-installed"
            }
            items.append(
                OutdatedItem(
                    name: name, installed: installedVersion, available: offer?.version, state: state, reason: reason))
        }
        return items
    }

    // MARK: - shared steps

    /// `vigil plugin verify`'s pipeline with the trusted keys, plus the rollback and freshness
    /// checks against the host's state and the installed version; the keys that verified must be
    /// the ones the repository delegates to.
    func verify(_ offer: RepositoryPlugin, in directory: String, trusted: TrustedKeys, installed: LoadedPlugin?)
        throws(RepositoryError) -> LoadedPlugin
    {
        let name = offer.name
        let plugin: LoadedPlugin
        do throws(CoreError) {
            plugin = try PluginLoader.verify(
                directory: directory, name: name, policy: .configured(trusted: trusted, acknowledgedUnsigned: false),
                rollback: store, record: false,
                freshness: Freshness(now: client.now, grace: configuration.freshnessGrace))
        } catch {
            if offer.keys != trusted,
                [
                    .untrustedKey, .keyRotation, .fingerprintMismatch, .invalidSignature,
                    .signatureThreshold,
                ].contains(error.code)
            {
                throw keyMismatch(name, offer: offer.keys, trusted: trusted, cause: error)
            }
            throw mapped(offer, error)
        }
        guard case .trusted(let keys) = plugin.trust, keys == offer.keys else {
            throw keyMismatch(name, offer: offer.keys, trusted: trusted, cause: nil)
        }
        if let installed, plugin.manifest.version < installed.manifest.version {
            throw RepositoryError(
                code: .rollback, plugin: name,
                message: "the repository offers \(name) \(plugin.manifest.version), older than the installed "
                    + "\(installed.manifest.version) — a rollback; nothing was changed (re-publish a newer version, "
                    + "or remove the plugin and install it to accept the older one)")
        }
        return plugin
    }

    func keyMismatch(_ name: String, offer: TrustedKeys, trusted: TrustedKeys, cause: CoreError?) -> RepositoryError {
        RepositoryError(
            code: .keyMismatch, plugin: name,
            message: "the repository delegates \(name) to \(offer), but this host trusts \(trusted) for it "
                + "(\(configuration.path)) and no signed key rotation of the plugin leads there — a key change is "
                + "accepted only through the publisher's signed rotation or a new review (`vigil plugin trust \(name)`); "
                + "nothing was changed",
            cause: cause.map { ErrorCause($0) })
    }

    /// Maps the core's refusal of a repository plugin to the repository's codes.
    func mapped(_ offer: RepositoryPlugin, _ error: CoreError) -> RepositoryError {
        switch error.code {
        case .rollback:
            return RepositoryError(
                code: .rollback, plugin: offer.name, message: error.message, cause: ErrorCause(error))
        case .fingerprintMismatch:
            return RepositoryError(
                code: .keyMismatch, plugin: offer.name,
                message: "\(error.message) (the repository delegates \(offer.name) to \(offer.keys))",
                cause: ErrorCause(error))
        default:
            return RepositoryError(
                code: .refused, plugin: offer.name, message: "\(error.message) (\(error.code))",
                cause: ErrorCause(error))
        }
    }

    func core<T>(_ offer: RepositoryPlugin, _ body: () throws(CoreError) -> T) throws(RepositoryError) -> T {
        do throws(CoreError) { return try body() } catch { throw mapped(offer, error) }
    }

    func core<T>(_ body: () throws(CoreError) -> T) throws(RepositoryError) -> T {
        do throws(CoreError) { return try body() } catch {
            throw RepositoryError(
                code: .refused, plugin: error.plugin, message: error.message, cause: ErrorCause(error))
        }
    }

    func storage(_ what: String, errno code: Int32, plugin: String?) -> RepositoryError {
        let cause = SystemCallError("rename", errno: code)
        return RepositoryError(
            code: .storage, plugin: plugin, message: "cannot \(what): \(cause) — check the directory's permissions",
            cause: ErrorCause(cause))
    }

    func prepareInstallDirectory() throws(RepositoryError) {
        if let failure = Directory.create(installDirectory, mode: 0o755) {
            throw storage("create \(failure.path)", errno: failure.error.number, plugin: nil)
        }
    }

    func installDirectoryMode() throws(RepositoryError) -> mode_t {
        var st = stat()
        guard stat(installDirectory, &st) == 0 else {
            throw storage("inspect \(installDirectory)", errno: errno, plugin: nil)
        }
        return st.st_mode & 0o7777
    }

    func makeStaging(prefix: String) throws(RepositoryError) -> String {
        var template = Array(Path.join(installDirectory, prefix + "-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw storage("create a staging directory in \(installDirectory)", errno: errno, plugin: nil)
        }
        return String(cString: made)
    }
}
