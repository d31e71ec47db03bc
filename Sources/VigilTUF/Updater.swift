import VigilBase

/// Fetches bytes by URL with a cap. Implementations: `HTTPFetcher` (VigilTUFHTTP), test doubles.
public protocol TUFFetcher: Sendable {
    /// The body of `url`, at most `maxLength` bytes: a longer body is ``TUFErrorCode/tooLarge``
    /// (and the transfer is cut there), a missing file ``TUFErrorCode/notFound``.
    func fetch(_ url: String, maxLength: Int) async throws(TUFError) -> [UInt8]
}

/// The caps and limits of an update: python-tuf's `UpdaterConfig` defaults.
public struct UpdaterConfig: Sendable {
    public var maxRootRotations = 256
    public var maxDelegations = 32
    public var rootMaxLength = 512_000
    public var timestampMaxLength = 16_384
    public var snapshotMaxLength = 2_000_000
    public var targetsMaxLength = 5_000_000

    public init() {}
}

/// The TUF client workflow (spec §5) over a ``TUFFetcher`` and a ``FileStore``: the decisions are
/// ``TrustedSet``'s; this type fetches, persists what was accepted, and walks delegations.
public final class Updater {
    let store: FileStore
    let metadataURL: String
    let fetcher: any TUFFetcher
    let config: UpdaterConfig
    let now: Int64
    public private(set) var trusted: TrustedSet?

    /// - Parameters:
    ///   - metadataDirectory: holds `root.json` (put there out of band) and the trusted metadata.
    ///   - metadataURL: the repository's metadata base URL (a `/` is added when missing).
    ///   - now: the update's start time in seconds since 1970 (spec 5.1).
    public init(
        metadataDirectory: String, metadataURL: String, fetcher: any TUFFetcher, config: UpdaterConfig = .init(),
        now: Int64
    ) {
        store = FileStore(directory: metadataDirectory)
        self.metadataURL = metadataURL.hasSuffix("/") ? metadataURL : metadataURL + "/"
        self.fetcher = fetcher
        self.config = config
        self.now = now
    }

    /// Updates root, timestamp, snapshot and top-level targets, in that order.
    public func refresh() async throws(TUFError) {
        guard let rootBytes = try store.read("root.json", limit: config.rootMaxLength) else {
            throw TUFError(
                code: .noTrustedRoot,
                message: "\(store.directory)/root.json does not exist — install the repository's root "
                    + "(`init ROOT.json`) before refreshing")
        }
        var set = try TrustedSet(rootBytes: rootBytes, now: now)
        trusted = set
        defer { trusted = set }
        let initialRoot = set.root
        var rootFailure: TUFError?
        do { try await updateRoot(&set) } catch { rootFailure = error }
        if set.rotatedOnlineKeys(since: initialRoot) {
            // 5.3.11: metadata signed by the old online keys may carry fast-forwarded versions. Also
            // when a later root failed: the roots accepted before it are persisted already.
            try store.remove("timestamp.json")
            try store.remove("snapshot.json")
        }
        if let rootFailure { throw rootFailure }
        try set.checkFinalRoot()
        try await updateTimestamp(&set)
        try await updateSnapshot(&set)
        try await loadTargets(&set, role: "targets", delegator: "root")
    }

    private func updateRoot(_ set: inout TrustedSet) async throws(TUFError) {
        for _ in 0..<config.maxRootRotations {
            let next = set.root.common.version + 1
            let bytes: [UInt8]
            do {
                bytes = try await fetcher.fetch(metadataURL + "\(next).root.json", maxLength: config.rootMaxLength)
            } catch  where error.code == .notFound {
                return
            }
            try set.updateRoot(bytes)
            try store.write("root.json", bytes)
        }
    }

    private func updateTimestamp(_ set: inout TrustedSet) async throws(TUFError) {
        if let local = try? store.read("timestamp.json", limit: config.timestampMaxLength) {
            // Trusted for rollback protection even if expired; errors mean "fetch a new one".
            _ = try? set.updateTimestamp(local)
        }
        let bytes = try await fetcher.fetch(metadataURL + "timestamp.json", maxLength: config.timestampMaxLength)
        if try set.updateTimestamp(bytes) == .updated {
            try store.write("timestamp.json", bytes)
        }
    }

    private func updateSnapshot(_ set: inout TrustedSet) async throws(TUFError) {
        if let local = try? store.read("snapshot.json", limit: config.snapshotMaxLength) {
            do {
                try set.updateSnapshot(local, alreadyVerified: true)
                return
            } catch {
                // Not valid as the final snapshot: fetch the one the timestamp names.
            }
        }
        guard let meta = set.timestamp?.snapshotMeta else { return }
        let name = set.root.consistentSnapshot ? "\(meta.version).snapshot.json" : "snapshot.json"
        let bytes = try await fetcher.fetch(metadataURL + name, maxLength: cap(meta.length, config.snapshotMaxLength))
        try set.updateSnapshot(bytes)
        try store.write("snapshot.json", bytes)
    }

    private func cap(_ length: Int64?, _ fallback: Int) -> Int {
        guard let length else { return fallback }
        return Int(clamping: length)
    }

    /// Loads `role` (local copy first, else from the repository) and verifies it against `delegator`.
    @discardableResult
    private func loadTargets(_ set: inout TrustedSet, role: String, delegator: String) async throws(TUFError)
        -> Targets
    {
        if let targets = set.targets(role) {
            try set.reverify(role: role, delegator: delegator)
            return targets
        }
        let file = FileStore.fileName(role: role)
        if let local = try? store.read(file, limit: config.targetsMaxLength),
            let targets = try? set.updateTargets(local, role: role, delegator: delegator)
        {
            return targets
        }
        guard let meta = set.snapshot?.meta["\(role).json"] else {
            throw TUFError(
                code: .missingRole,
                message: "role \(JSONValue.string(role).canonicalText) is delegated but not listed in the "
                    + "snapshot — the repository must list every targets role in its snapshot")
        }
        let quoted = FileStore.percentEncode(role)
        let name = set.root.consistentSnapshot ? "\(meta.version).\(quoted).json" : "\(quoted).json"
        let bytes = try await fetcher.fetch(metadataURL + name, maxLength: cap(meta.length, config.targetsMaxLength))
        let targets = try set.updateTargets(bytes, role: role, delegator: delegator)
        try store.write(file, bytes)
        return targets
    }

    /// 5.6.7: the target's trusted length and hashes, found by a pre-order depth-first search of the
    /// delegations (listed order is priority; visited roles are skipped, so cycles end; at most
    /// `maxDelegations` roles; a terminating delegation ends the search below it).
    /// Refreshes first if this updater has not.
    public func targetInfo(_ path: String) async throws(TUFError) -> TargetFile {
        if trusted?.targets("targets") == nil { try await refresh() }
        guard var set = trusted else { throw TUFError(code: .noTrustedRoot, message: "no trusted metadata") }
        defer { trusted = set }
        var stack: [(role: String, delegator: String)] = [("targets", "root")]
        var visited = Set<String>()
        while !stack.isEmpty, visited.count <= config.maxDelegations {
            let (role, delegator) = stack.removeLast()
            if visited.contains(role) { continue }
            let targets = try await loadTargets(&set, role: role, delegator: delegator)
            if let found = targets.targets[path] { return found }
            visited.insert(role)
            var children: [(String, String)] = []
            for child in targets.delegations where child.covers(path) {
                children.append((child.name, role))
                if child.terminating {
                    stack.removeAll()
                    break
                }
            }
            stack.append(contentsOf: children.reversed())
        }
        throw TUFError(
            code: .targetNotFound,
            message: "no trusted targets metadata lists \(JSONValue.string(path).canonicalText) — check the "
                + "name, or that the repository published it")
    }

    /// The path under `directory` a target is stored at: its percent-encoded target path.
    public static func localPath(of target: TargetFile, in directory: String) -> String {
        directory + "/" + FileStore.percentEncode(target.path)
    }

    /// Whether `directory` already holds `target` with its trusted length and hashes.
    public func isCached(_ target: TargetFile, in directory: String) -> Bool {
        let store = FileStore(directory: directory)
        guard let bytes = try? store.read(FileStore.percentEncode(target.path), limit: Int(clamping: target.length))
        else { return false }
        return (try? Hashing.verify(bytes, length: target.length, hashes: target.hashes, what: "")) != nil
    }

    /// 5.7: fetches at most the target's length, checks length and every hash, then stores it
    /// atomically in `directory`. With consistent snapshots the URL is `DIR/HASH.NAME`.
    @discardableResult
    public func download(_ target: TargetFile, into directory: String, baseURL: String) async throws(TUFError)
        -> String
    {
        let bytes = try await fetchTarget(target, baseURL: baseURL)
        let name = FileStore.percentEncode(target.path)
        try FileStore(directory: directory).write(name, bytes)
        return directory + "/" + name
    }

    /// 5.7 without storing: fetches at most the target's length and returns its bytes once the
    /// length and every hash matched.
    public func fetchTarget(_ target: TargetFile, baseURL: String) async throws(TUFError) -> [UInt8] {
        let base = baseURL.hasSuffix("/") ? baseURL : baseURL + "/"
        var urlPath = FileStore.percentEncode(target.path, keeping: [UInt8(ascii: "/")])
        if trusted?.root.consistentSnapshot == true,
            let hash = target.hashes.sorted(by: { $0.key < $1.key }).first?.value
        {
            let (dir, _, name) = Self.splitLast(urlPath)
            urlPath = dir + FileStore.percentEncode(hash) + "." + name
        }
        let bytes = try await fetcher.fetch(base + urlPath, maxLength: Int(clamping: target.length))
        try Hashing.verify(
            bytes, length: target.length, hashes: target.hashes,
            what: "target \(JSONValue.string(target.path).canonicalText)")
        return bytes
    }

    static func splitLast(_ path: String) -> (String, String, String) {
        guard let slash = path.lastIndex(of: "/") else { return ("", "", path) }
        return (String(path[...slash]), "/", String(path[path.index(after: slash)...]))
    }
}
