import Glibc
import VigilBase
import VigilCrypto
public import VigilPlugin

/// Remembers, per plugin name and signing key, the highest manifest version the host accepted
/// and that manifest's SHA-256, and refuses older versions and changed bytes at the same version.
///
/// State lives in `rollback.json` in ``directory`` (default `$XDG_STATE_HOME/vigil`, else
/// `~/.local/state/vigil`): a 0700 directory owned by the user, a 0600 file replaced atomically
/// under an exclusive `flock` on `rollback.lock`. A corrupt or unsafe state file fails closed.
/// Re-running `vigil plugin trust NAME` (which calls ``reset(plugin:)``) is the reviewed way to
/// accept a downgrade.
public struct RollbackStore: Sendable {
    /// What was accepted for one plugin and key.
    public struct Entry: Sendable, Hashable {
        /// The highest accepted version.
        public let version: SemanticVersion
        /// Lower-case hex SHA-256 of the manifest accepted at that version.
        public let manifestSHA256: String
    }

    /// The state schema tag.
    static let schema = "vigil.rollback-state/v1"

    /// The state directory.
    public let directory: String

    /// The state file's path.
    public var statePath: String { Path.join(directory, "rollback.json") }

    /// Uses `directory` for state.
    public init(directory: String) {
        self.directory = Path.normalized(directory)
    }

    /// The state directory of `environment`: `$XDG_STATE_HOME/vigil`, else
    /// `$HOME/.local/state/vigil` (only absolute values count; ``HostEnvironment/vigilStateDirectory``).
    ///
    /// - Throws: ``CoreError`` `.stateInvalid` when neither is set: without a state directory
    ///   there is no rollback protection, so nothing that needs it may be called ready.
    public static func defaultDirectory(environment: HostEnvironment) throws(CoreError) -> String {
        guard let directory = environment.vigilStateDirectory else {
            throw CoreError(
                code: .stateInvalid,
                message: "neither XDG_STATE_HOME nor HOME is set to an absolute path, so Vigil has no state "
                    + "directory for rollback protection and refuses signed plugins — set one of them")
        }
        return directory
    }

    /// The store in the state directory of `environment` (see ``defaultDirectory(environment:)``).
    public static func standard(environment: HostEnvironment) throws(CoreError) -> RollbackStore {
        RollbackStore(directory: try defaultDirectory(environment: environment))
    }

    /// Every recorded entry for `plugin`, by key fingerprint.
    public func entries(plugin: String) throws(CoreError) -> [String: Entry] {
        try read()[plugin] ?? [:]
    }

    /// Throws when the state cannot be written safely: the directory is created if missing (0700)
    /// and checked, the lock can be taken and the state file reads. Records nothing.
    public func checkWritable() throws(CoreError) {
        try withLock { () throws(CoreError) in _ = try read() }
    }

    /// Forgets every entry for `plugin` and records `version` for `fingerprint`, in one atomic
    /// write under the lock (the reviewed way to accept a downgrade or a new key).
    public func replace(
        plugin: String, fingerprint: Fingerprint, version: SemanticVersion, manifestSHA256: String
    ) throws(CoreError) {
        try withLock { () throws(CoreError) in
            var state = try read()
            state[plugin] = [fingerprint.description: Entry(version: version, manifestSHA256: manifestSHA256)]
            try write(state)
        }
    }

    /// The recorded entry for `plugin` signed by `fingerprint`, if any.
    public func entry(plugin: String, fingerprint: Fingerprint) throws(CoreError) -> Entry? {
        try read()[plugin]?[fingerprint.description]
    }

    /// Throws `.rollback` when `version` is lower than the recorded one, or equal with different
    /// manifest bytes. Records nothing.
    public func check(
        plugin: String, fingerprint: Fingerprint, version: SemanticVersion, manifestSHA256: String
    ) throws(CoreError) {
        guard let entry = try entry(plugin: plugin, fingerprint: fingerprint) else { return }
        try Self.compare(plugin: plugin, entry: entry, version: version, sha: manifestSHA256)
    }

    /// Checks like ``check(plugin:fingerprint:version:manifestSHA256:)`` and, under the lock,
    /// records `version` when it is higher than the recorded one (or the first seen).
    public func record(
        plugin: String, fingerprint: Fingerprint, version: SemanticVersion, manifestSHA256: String
    ) throws(CoreError) {
        try withLock { () throws(CoreError) in
            var state = try read()
            if let entry = state[plugin]?[fingerprint.description] {
                try Self.compare(plugin: plugin, entry: entry, version: version, sha: manifestSHA256)
                if entry.version == version { return }
            }
            state[plugin, default: [:]][fingerprint.description] = Entry(
                version: version, manifestSHA256: manifestSHA256)
            try write(state)
        }
    }

    /// Forgets every entry for `plugin` (all keys). Used by `vigil plugin trust`.
    public func reset(plugin: String) throws(CoreError) {
        guard try !read().isEmpty || SystemCall.fileType(statePath) != nil else { return }
        try withLock { () throws(CoreError) in
            var state = try read()
            guard state.removeValue(forKey: plugin) != nil else { return }
            try write(state)
        }
    }

    private static func compare(plugin: String, entry: Entry, version: SemanticVersion, sha: String) throws(CoreError) {
        if version < entry.version {
            throw CoreError(
                code: .rollback, plugin: plugin,
                message: "its manifest is version \(version), older than version \(entry.version) which this host "
                    + "already accepted with the same key (a rollback to an older release) — install the newer "
                    + "release, or run `\(TrustCommand.display(plugin))` to review and accept the downgrade")
        }
        if version == entry.version && sha != entry.manifestSHA256 {
            throw CoreError(
                code: .rollback, plugin: plugin,
                message: "its manifest claims version \(version), which this host already accepted with different "
                    + "contents (SHA-256 \(entry.manifestSHA256.prefix(16))…, now \(sha.prefix(16))…); a "
                    + "publisher must bump the version for every change — run `\(TrustCommand.display(plugin))` to "
                    + "review and accept it")
        }
    }

    private func corrupt(_ reason: String) -> CoreError {
        CoreError(
            code: .stateInvalid,
            message: "the rollback state \(statePath) is unusable: \(reason). Vigil refuses to load signed plugins "
                + "without it — inspect the file; deleting it forgets which versions were accepted (then run "
                + "`vigil plugin trust NAME` for each plugin to review them again)")
    }

    typealias State = [String: [String: Entry]]

    func read() throws(CoreError) -> State {
        let bytes: [UInt8]
        do {
            guard let read = try StateFile.readIfPresent(statePath, what: "the rollback state") else { return [:] }
            bytes = read
        } catch  where error.code == .stateUnsafe {
            throw CoreError(
                code: .stateUnsafe,
                message: "\(error.message). Vigil refuses to load signed plugins until the rollback state is safe")
        } catch {
            throw corrupt(error.message)
        }
        let json: JSONValue
        do {
            json = try StrictJSON.parse(bytes, maxSize: 4 << 20)
        } catch {
            throw corrupt("\(error)")
        }
        guard case .object(let top) = json, top.count == 2, json["schema"] == .string(Self.schema),
            case .object(let plugins)? = json["plugins"]
        else { throw corrupt("it is not a \(Self.schema) document") }
        var state: State = [:]
        for plugin in plugins {
            guard case .object(let keys) = plugin.value else { throw corrupt("entry \(plugin.key) is not an object") }
            for key in keys {
                guard case .object(let fields) = key.value, fields.count == 2,
                    case .string(let v)? = key.value["version"], let version = SemanticVersion(v),
                    case .string(let sha)? = key.value["manifest_sha256"], sha.utf8.count == 64
                else { throw corrupt("entry \(plugin.key) / \(key.key) is malformed") }
                state[plugin.key, default: [:]][key.key] = Entry(version: version, manifestSHA256: sha)
            }
        }
        return state
    }

    private func write(_ state: State) throws(CoreError) {
        let plugins: [(key: String, value: JSONValue)] = state.keys.sorted().map { name in
            let keys: [(key: String, value: JSONValue)] = state[name]!.keys.sorted().map { fp in
                let e = state[name]![fp]!
                return (
                    fp,
                    .object([
                        ("version", .string(e.version.description)), ("manifest_sha256", .string(e.manifestSHA256)),
                    ])
                )
            }
            return (name, .object(keys))
        }
        let doc = JSONValue.object([("schema", .string(Self.schema)), ("plugins", .object(plugins))])
        try StateFile.write(doc.serialized(), to: statePath, what: "the rollback state")
    }

    /// Creates the directory (0700) if needed, checks it, and runs `body` under an exclusive lock.
    private func withLock<T>(_ body: () throws(CoreError) -> T) throws(CoreError) -> T {
        try ensureDirectory()
        return try SystemCall.withExclusiveLock(
            on: Path.join(directory, "rollback.lock"), flags: O_RDWR | O_CREAT | O_NOFOLLOW, what: "the lock file", body
        )
    }

    private func ensureDirectory() throws(CoreError) {
        try checkDirectory(create: true)
    }

    /// Checks the state directory through ``StateFile`` (the same StrictModes rule as every
    /// other state file), creating it (0700) when `create` is true. Reading and writing both
    /// check it, so `vigil check` refuses exactly what a running host refuses.
    private func checkDirectory(create: Bool) throws(CoreError) {
        if create {
            try StateFile.prepareDirectory(directory, holding: "the rollback state")
        } else {
            try StateFile.checkDirectory(directory, holding: "the rollback state")
        }
    }
}
