import Glibc
import VigilBase
import VigilCrypto
public import VigilPlugin

/// Remembers, per plugin name and signing key (or key set), the highest manifest version the host accepted
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

    /// The newest signed revocation list this host applied for `plugin`, if any.
    public func revocations(plugin: String) throws(CoreError) -> RevocationList? {
        try readDocument().revocations[plugin]
    }

    /// Records `list` as the newest revocation list applied for `plugin`, unless one with the same
    /// or a higher version is recorded already (a list never goes back).
    public func recordRevocations(plugin: String, _ list: RevocationList) throws(CoreError) {
        try withLock { () throws(CoreError) in
            var document = try readDocument()
            guard list.version > document.revocations[plugin]?.version ?? 0 else { return }
            document.revocations[plugin] = list
            try write(document)
        }
    }

    /// The clock ratchet: the latest trustworthy time this host has seen (seconds since the
    /// epoch), recorded with accepted versions; `nil` before the first.
    public func latestTime() throws(CoreError) -> Int64? {
        try readDocument().latestTime
    }

    /// The key rotation state recorded for `plugin`, when it was reached from the key set `base`
    /// (the one `vigil.toml` trusts); `nil` when none was recorded for that base.
    public func rotation(plugin: String, base: TrustedKeys) throws(CoreError) -> RotationState? {
        guard let record = try readDocument().rotations[plugin], record.base == base.recordKey else { return nil }
        return record.state
    }

    /// Records that `plugin`, trusted with `base`, reached `state` by signed rotations, unless a
    /// higher rotation version is recorded already (rotations never go back).
    public func recordRotation(plugin: String, base: TrustedKeys, state: RotationState) throws(CoreError) {
        try withLock { () throws(CoreError) in
            var document = try readDocument()
            guard Self.advances(document.rotations[plugin], base: base, to: state) else { return }
            document.rotations[plugin] = RotationRecord(base: base.recordKey, state: state)
            try write(document)
        }
    }

    /// The capabilities the operator accepted for `plugin` when they last trusted it (`vigil plugin
    /// trust`), or `nil` when it was never trusted by a review since capabilities exist. A manifest
    /// may ask for no more than this (``PluginCapabilities/added(since:)``).
    public func acceptedCapabilities(plugin: String) throws(CoreError) -> PluginCapabilities? {
        try readDocument().capabilities[plugin]
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
        try replace(plugin: plugin, keys: TrustedKeys(fingerprint), version: version, manifestSHA256: manifestSHA256)
    }

    /// Like ``replace(plugin:fingerprint:version:manifestSHA256:)`` for a key set.
    ///
    /// - Parameter capabilities: what the reviewed manifest declares, recorded as what the operator
    ///   accepted (``acceptedCapabilities(plugin:)``); `nil` keeps the record as it is.
    public func replace(
        plugin: String, keys: TrustedKeys, version: SemanticVersion, manifestSHA256: String, time: Int64? = nil,
        capabilities: PluginCapabilities? = nil
    ) throws(CoreError) {
        try withLock { () throws(CoreError) in
            var document = try readDocument()
            if let time { document.latestTime = max(document.latestTime ?? time, time) }
            document.plugins[plugin] = [keys.recordKey: Entry(version: version, manifestSHA256: manifestSHA256)]
            // Nothing accepted is the same as no record, and writes none (an older Vigil reads the file).
            if let capabilities { document.capabilities[plugin] = capabilities.isEmpty ? nil : capabilities }
            document.rotations[plugin] = nil
            try write(document)
        }
    }

    /// The recorded entry for `plugin` signed by `fingerprint`, if any.
    public func entry(plugin: String, fingerprint: Fingerprint) throws(CoreError) -> Entry? {
        try entry(plugin: plugin, keys: TrustedKeys(fingerprint))
    }

    /// The recorded entry for `plugin` signed by the key set `keys`, if any.
    public func entry(plugin: String, keys: TrustedKeys) throws(CoreError) -> Entry? {
        try read()[plugin]?[keys.recordKey]
    }

    /// Throws `.rollback` when `version` is lower than the recorded one, or equal with different
    /// manifest bytes. Records nothing.
    public func check(
        plugin: String, fingerprint: Fingerprint, version: SemanticVersion, manifestSHA256: String
    ) throws(CoreError) {
        try check(plugin: plugin, keys: TrustedKeys(fingerprint), version: version, manifestSHA256: manifestSHA256)
    }

    /// Like ``check(plugin:fingerprint:version:manifestSHA256:)`` for a key set.
    public func check(
        plugin: String, keys: TrustedKeys, version: SemanticVersion, manifestSHA256: String
    ) throws(CoreError) {
        guard let entry = try entry(plugin: plugin, keys: keys) else { return }
        try Self.compare(plugin: plugin, entry: entry, version: version, sha: manifestSHA256)
    }

    /// Checks like ``check(plugin:fingerprint:version:manifestSHA256:)`` and, under the lock,
    /// records `version` when it is higher than the recorded one (or the first seen).
    public func record(
        plugin: String, fingerprint: Fingerprint, version: SemanticVersion, manifestSHA256: String
    ) throws(CoreError) {
        try record(plugin: plugin, keys: TrustedKeys(fingerprint), version: version, manifestSHA256: manifestSHA256)
    }

    /// Like ``record(plugin:fingerprint:version:manifestSHA256:)`` for a key set.
    ///
    /// - Parameter rotation: the key rotation state the plugin's keys were reached by, from the
    ///   configured `base`; recorded in the same write when it is newer than the recorded one.
    public func record(
        plugin: String, keys: TrustedKeys, version: SemanticVersion, manifestSHA256: String,
        rotation: (base: TrustedKeys, state: RotationState)? = nil, time: Int64? = nil,
        revocations: RevocationList? = nil
    ) throws(CoreError) {
        try withLock { () throws(CoreError) in
            var document = try readDocument()
            var changed = false
            if let revocations, revocations.version > document.revocations[plugin]?.version ?? 0 {
                document.revocations[plugin] = revocations
                changed = true
            }
            if let time, time > document.latestTime ?? Int64.min {
                document.latestTime = time
                changed = true
            }
            if let rotation, Self.advances(document.rotations[plugin], base: rotation.base, to: rotation.state) {
                document.rotations[plugin] = RotationRecord(base: rotation.base.recordKey, state: rotation.state)
                changed = true
            }
            let entry = document.plugins[plugin]?[keys.recordKey]
            if let entry {
                try Self.compare(plugin: plugin, entry: entry, version: version, sha: manifestSHA256)
            }
            if entry?.version != version {
                document.plugins[plugin, default: [:]][keys.recordKey] = Entry(
                    version: version, manifestSHA256: manifestSHA256)
                changed = true
            }
            if changed { try write(document) }
        }
    }

    /// True when `state` (reached from `base`) is newer than `record`, or `record` is for another base.
    private static func advances(_ record: RotationRecord?, base: TrustedKeys, to state: RotationState) -> Bool {
        guard let record, record.base == base.recordKey else { return state.version > 0 }
        return state.version > record.state.version
    }

    /// Forgets every entry for `plugin` (all keys). Used by `vigil plugin trust`.
    public func reset(plugin: String) throws(CoreError) {
        guard try !read().isEmpty || SystemCall.fileType(statePath) != nil else { return }
        try withLock { () throws(CoreError) in
            var document = try readDocument()
            var removed = document.plugins.removeValue(forKey: plugin) != nil
            removed = document.capabilities.removeValue(forKey: plugin) != nil || removed
            guard document.rotations.removeValue(forKey: plugin) != nil || removed else { return }
            try write(document)
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

    /// A plugin's rotation state and the configured key set it was reached from.
    struct RotationRecord: Hashable {
        var base: String
        var state: RotationState
    }

    /// The whole state file: accepted versions, and (optional member) rotation records.
    struct Document {
        var plugins: State = [:]
        var rotations: [String: RotationRecord] = [:]
        /// The clock ratchet (seconds since the epoch).
        var latestTime: Int64?
        /// The newest revocation list applied per plugin.
        var revocations: [String: RevocationList] = [:]
        /// What the operator accepted per plugin at its last review (`vigil plugin trust`).
        var capabilities: [String: PluginCapabilities] = [:]
    }

    func read() throws(CoreError) -> State {
        try readDocument().plugins
    }

    func readDocument() throws(CoreError) -> Document {
        let bytes: [UInt8]
        do {
            guard let read = try StateFile.readIfPresent(statePath, what: "the rollback state") else {
                return Document()
            }
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
        let optional =
            (json["rotations"] == nil ? 0 : 1) + (json["latest_time"] == nil ? 0 : 1)
            + (json["revocations"] == nil ? 0 : 1) + (json["accepted_capabilities"] == nil ? 0 : 1)
        guard case .object(let top) = json, top.count == 2 + optional,
            json["schema"] == .string(Self.schema), case .object(let plugins)? = json["plugins"]
        else { throw corrupt("it is not a \(Self.schema) document") }
        var document = Document()
        if let lists = json["revocations"] {
            guard case .object(let members) = lists else { throw corrupt("its revocations member is not an object") }
            for member in members {
                do {
                    document.revocations[member.key] = try RevocationList.decode(
                        member.value.serialized(), plugin: member.key)
                } catch {
                    throw corrupt("revocation list \(member.key) is malformed (\(error.message))")
                }
            }
        }
        if let accepted = json["accepted_capabilities"] {
            guard case .object(let members) = accepted else {
                throw corrupt("its accepted_capabilities member is not an object")
            }
            for member in members {
                do {
                    document.capabilities[member.key] = try ManifestDecoder.capabilities(
                        member.value, plugin: member.key)
                } catch {
                    throw corrupt("the accepted capabilities of \(member.key) are malformed (\(error.message))")
                }
            }
        }
        if let time = json["latest_time"] {
            guard case .number(let text) = time, let seconds = Int64(text) else {
                throw corrupt("its latest_time is not a whole number of seconds")
            }
            document.latestTime = seconds
        }
        if case .object(let rotations)? = json["rotations"] {
            for member in rotations {
                guard case .object(let fields) = member.value, fields.count == 4,
                    case .string(let base)? = member.value["base"],
                    case .number(let v)? = member.value["version"], let version = Int(v), version >= 1,
                    case .array(let list)? = member.value["keys"],
                    case .number(let t)? = member.value["threshold"], let threshold = Int(t)
                else { throw corrupt("rotation record \(member.key) is malformed") }
                guard let keys = TrustedKeys.fingerprints(list) else {
                    throw corrupt("rotation record \(member.key) holds an invalid key")
                }
                let set = keys.isEmpty && threshold == 0 ? nil : try? TrustedKeys(keys: keys, threshold: threshold)
                guard set != nil || (keys.isEmpty && threshold == 0) else {
                    throw corrupt("rotation record \(member.key) holds an invalid key set")
                }
                document.rotations[member.key] = RotationRecord(
                    base: base, state: RotationState(keys: set, version: version))
            }
        } else if json["rotations"] != nil {
            throw corrupt("its rotations member is not an object")
        }
        for plugin in plugins {
            guard case .object(let keys) = plugin.value else { throw corrupt("entry \(plugin.key) is not an object") }
            for key in keys {
                guard case .object(let fields) = key.value, fields.count == 2,
                    case .string(let v)? = key.value["version"], let version = SemanticVersion(v),
                    case .string(let sha)? = key.value["manifest_sha256"], sha.utf8.count == 64
                else { throw corrupt("entry \(plugin.key) / \(key.key) is malformed") }
                document.plugins[plugin.key, default: [:]][key.key] = Entry(version: version, manifestSHA256: sha)
            }
        }
        return document
    }

    private func write(_ document: Document) throws(CoreError) {
        let state = document.plugins
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
        var members: [(key: String, value: JSONValue)] = [
            ("schema", .string(Self.schema)), ("plugins", .object(plugins)),
        ]
        if !document.rotations.isEmpty {
            let rotations: [(key: String, value: JSONValue)] = document.rotations.keys.sorted().map { name in
                let record = document.rotations[name]!
                return (
                    name,
                    .object([
                        ("base", .string(record.base)), ("version", .number(String(record.state.version))),
                        ("keys", .array((record.state.keys?.keys ?? []).map { .string($0.description) })),
                        ("threshold", .number(String(record.state.keys?.threshold ?? 0))),
                    ])
                )
            }
            members.append(("rotations", .object(rotations)))
        }
        if let time = document.latestTime { members.append(("latest_time", .number(String(time)))) }
        if !document.revocations.isEmpty {
            let lists: [(key: String, value: JSONValue)] = document.revocations.keys.sorted().compactMap { name in
                guard let json = try? StrictJSON.parse(document.revocations[name]!.serialized(plugin: name)) else {
                    return nil
                }
                return (name, json)
            }
            members.append(("revocations", .object(lists)))
        }
        if !document.capabilities.isEmpty {
            let accepted: [(key: String, value: JSONValue)] = document.capabilities.keys.sorted().map { name in
                (name, document.capabilities[name]!.jsonValue)
            }
            members.append(("accepted_capabilities", .object(accepted)))
        }
        let doc = JSONValue.object(members)
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
