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

/// One place a repository is served from: its metadata URL and, for downloads, its targets URL.
public struct Mirror: Sendable, Equatable {
    /// The metadata base URL, ending in `/`.
    public let metadataURL: String
    /// The targets base URL, ending in `/`; nil for a mirror that serves metadata only.
    public let targetsURL: String?

    public init(metadataURL: String, targetsURL: String? = nil) {
        self.metadataURL = Self.directory(metadataURL)
        self.targetsURL = targetsURL.map(Self.directory)
    }

    static func directory(_ url: String) -> String { url.hasSuffix("/") ? url : url + "/" }
}

extension TUFErrorCode {
    /// Whether another mirror may succeed where one failed with this code: everything a mirror
    /// serves or fails to serve, not the local store or a missing trusted root.
    var isMirrorFault: Bool { self != .storage && self != .noTrustedRoot }
}

/// The TUF client workflow (spec §5) over a ``TUFFetcher`` and a ``FileStore``: the decisions are
/// ``TrustedSet``'s; this type fetches, persists what was accepted, and walks delegations.
///
/// With several mirrors, a refresh runs against the first; any failure a mirror can cause (a
/// transfer that is cut, slow or dropped, metadata that is stale, mixed or badly signed) makes it
/// start again from the trusted files against the next mirror. Only verified files are ever stored,
/// so nothing a failed mirror served is acted on. Later files (delegated roles, targets) come from
/// the mirror that refreshed, then from the others in order.
public final class Updater {
    let store: FileStore
    public let mirrors: [Mirror]
    let fetcher: any TUFFetcher
    let config: UpdaterConfig
    let now: Int64
    public private(set) var trusted: TrustedSet?
    /// The mirrors skipped by the last refresh, download or lookup, each error's message naming its
    /// mirror (for warnings: an operator should learn that a mirror is stale or hostile).
    public private(set) var mirrorFailures: [TUFError] = []
    /// ``mirrorFailures``, which are then forgotten (to warn about each once).
    public func takeMirrorFailures() -> [TUFError] {
        defer { mirrorFailures = [] }
        return mirrorFailures
    }

    /// The index in ``mirrors`` of the mirror that last served the refresh.
    var current = 0

    /// - Parameters:
    ///   - metadataDirectory: holds `root.json` (put there out of band) and the trusted metadata.
    ///   - mirrors: where the repository is served, in the order they are tried (at least one).
    ///   - now: the update's start time in seconds since 1970 (spec 5.1).
    public init(
        metadataDirectory: String, mirrors: [Mirror], fetcher: any TUFFetcher, config: UpdaterConfig = .init(),
        now: Int64
    ) {
        precondition(!mirrors.isEmpty, "an updater needs at least one mirror")
        store = FileStore(directory: metadataDirectory)
        self.mirrors = mirrors
        self.fetcher = fetcher
        self.config = config
        self.now = now
    }

    /// One mirror serving metadata from `metadataURL` (a `/` is added when missing).
    public convenience init(
        metadataDirectory: String, metadataURL: String, fetcher: any TUFFetcher, config: UpdaterConfig = .init(),
        now: Int64
    ) {
        self.init(
            metadataDirectory: metadataDirectory, mirrors: [Mirror(metadataURL: metadataURL)], fetcher: fetcher,
            config: config, now: now)
    }

    /// Updates root, timestamp, snapshot and top-level targets, in that order, from the first mirror
    /// that serves a valid repository.
    public func refresh() async throws(TUFError) {
        var failures: [TUFError] = []
        defer { mirrorFailures = failures }
        for (index, mirror) in mirrors.enumerated() {
            do {
                try await refresh(from: mirror)
                current = index
                return
            } catch  where error.code.isMirrorFault {
                failures.append(Self.naming(mirror.metadataURL, error))
            }
        }
        throw Self.combined(failures)
    }

    /// `error` with its message prefixed by the mirror it came from.
    static func naming(_ mirror: String, _ error: TUFError) -> TUFError {
        let prefix = "mirror \(mirror): "
        if error.message.hasPrefix(prefix) { return error }
        return TUFError(code: error.code, plugin: error.plugin, message: prefix + error.message, cause: error.cause)
    }

    /// The one error of a single mirror; for several, their common code or ``TUFErrorCode/mirrorsFailed``,
    /// with every mirror's error in the message.
    static func combined(_ failures: [TUFError]) -> TUFError {
        guard failures.count > 1, let first = failures.first else {
            return failures.first ?? TUFError(code: .mirrorsFailed, message: "no mirror was tried")
        }
        let codes = Set(failures.map(\.code))
        let code = codes.count == 1 ? first.code : .mirrorsFailed
        let each = failures.map { "[\($0.code.rawValue)] \($0.message)" }.joined(separator: "; ")
        return TUFError(code: code, message: "every mirror failed: \(each)")
    }

    /// The mirrors in the order later files are fetched: the one that refreshed first.
    var preferredMirrors: [Mirror] {
        [mirrors[current]] + mirrors.enumerated().filter { $0.offset != current }.map(\.element)
    }

    private func refresh(from mirror: Mirror) async throws(TUFError) {
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
        do { try await updateRoot(&set, from: mirror) } catch { rootFailure = error }
        if set.rotatedOnlineKeys(since: initialRoot) {
            // 5.3.11: metadata signed by the old online keys may carry fast-forwarded versions. Also
            // when a later root failed: the roots accepted before it are persisted already.
            try store.remove("timestamp.json")
            try store.remove("snapshot.json")
        }
        if let rootFailure { throw rootFailure }
        try set.checkFinalRoot()
        try await updateTimestamp(&set, from: mirror)
        try await updateSnapshot(&set, from: mirror)
        try await loadTargets(&set, role: "targets", delegator: "root", from: [mirror])
    }

    private func updateRoot(_ set: inout TrustedSet, from mirror: Mirror) async throws(TUFError) {
        for _ in 0..<config.maxRootRotations {
            let next = set.root.common.version + 1
            let bytes: [UInt8]
            do {
                bytes = try await fetcher.fetch(
                    mirror.metadataURL + "\(next).root.json", maxLength: config.rootMaxLength)
            } catch  where error.code == .notFound {
                return
            }
            try set.updateRoot(bytes)
            try store.write("root.json", bytes)
        }
    }

    private func updateTimestamp(_ set: inout TrustedSet, from mirror: Mirror) async throws(TUFError) {
        if let local = try? store.read("timestamp.json", limit: config.timestampMaxLength) {
            // Trusted for rollback protection even if expired; errors mean "fetch a new one".
            _ = try? set.updateTimestamp(local)
        }
        let bytes = try await fetcher.fetch(mirror.metadataURL + "timestamp.json", maxLength: config.timestampMaxLength)
        if try set.updateTimestamp(bytes) == .updated {
            try store.write("timestamp.json", bytes)
        }
    }

    private func updateSnapshot(_ set: inout TrustedSet, from mirror: Mirror) async throws(TUFError) {
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
        let bytes = try await fetcher.fetch(
            mirror.metadataURL + name, maxLength: cap(meta.length, config.snapshotMaxLength))
        try set.updateSnapshot(bytes)
        try store.write("snapshot.json", bytes)
    }

    private func cap(_ length: Int64?, _ fallback: Int) -> Int {
        guard let length else { return fallback }
        return Int(clamping: length)
    }

    /// Loads `role` (local copy first, else from the first of `mirrors` that serves it valid) and
    /// verifies it against `delegator`.
    @discardableResult
    private func loadTargets(
        _ set: inout TrustedSet, role: String, delegator: String, from mirrors: [Mirror]
    ) async throws(TUFError) -> Targets {
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
        var failures: [TUFError] = []
        for mirror in mirrors {
            do {
                let bytes = try await fetcher.fetch(
                    mirror.metadataURL + name, maxLength: cap(meta.length, config.targetsMaxLength))
                let targets = try set.updateTargets(bytes, role: role, delegator: delegator)
                try store.write(file, bytes)
                mirrorFailures += failures
                return targets
            } catch  where error.code.isMirrorFault {
                failures.append(Self.naming(mirror.metadataURL, error))
            }
        }
        throw Self.combined(failures)
    }

    /// 5.6.7: the target's trusted length and hashes, found by a pre-order depth-first search of the
    /// delegations (listed order is priority; visited roles are skipped, so cycles end; at most
    /// `maxDelegations` roles; a terminating delegation ends the search below it).
    /// Refreshes first if this updater has not.
    public func targetInfo(_ path: String) async throws(TUFError) -> TargetFile {
        if trusted?.targets("targets") == nil { try await refresh() }
        guard var set = trusted else { throw TUFError(code: .noTrustedRoot, message: "no trusted metadata") }
        // Held by `set` alone while roles are added: with `trusted` still sharing it, the first new
        // role would copy every loaded one (copy-on-write), so N lookups cost N² copies.
        trusted = nil
        defer { trusted = set }
        var stack: [(role: String, delegator: String)] = [("targets", "root")]
        var visited = Set<String>()
        while !stack.isEmpty, visited.count <= config.maxDelegations {
            let (role, delegator) = stack.removeLast()
            if visited.contains(role) { continue }
            let targets = try await loadTargets(&set, role: role, delegator: delegator, from: preferredMirrors)
            if let found = targets.targets[path] { return found }
            visited.insert(role)
            var children: [(String, String)] = []
            for child in targets.delegations(covering: path) {
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

    /// ``download(_:into:baseURL:)`` from the first mirror (the one that refreshed first) whose
    /// targets URL serves the target's exact bytes.
    @discardableResult
    public func download(_ target: TargetFile, into directory: String) async throws(TUFError) -> String {
        var failures: [TUFError] = []
        let candidates = preferredMirrors.compactMap(\.targetsURL)
        guard !candidates.isEmpty else {
            throw TUFError(
                code: .invalidURL,
                message: "no mirror has a targets URL to download \(JSONValue.string(target.path).canonicalText) from")
        }
        for base in candidates {
            do {
                let path = try await download(target, into: directory, baseURL: base)
                mirrorFailures += failures
                return path
            } catch  where error.code.isMirrorFault {
                failures.append(Self.naming(base, error))
            }
        }
        mirrorFailures += failures
        throw Self.combined(failures)
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
