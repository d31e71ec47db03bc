import Glibc
public import VigilCore
import VigilCrypto
public import VigilPlugin
public import VigilTUF
import VigilTUFHTTP

/// A ``TUFFetcher`` for `file://` mirrors: a regular file read up to the cap, like an HTTP body.
struct FileFetcher: TUFFetcher {
    func fetch(_ url: String, maxLength: Int) async throws(TUFError) -> [UInt8] {
        guard url.hasPrefix("file://") else {
            throw TUFError(code: .invalidURL, message: "\(JSONValue.string(url).canonicalText) is not a file:// URL")
        }
        let path = String(url.dropFirst("file://".count))
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let e = errno
            if e == ENOENT { throw TUFError(code: .notFound, message: "\(path) does not exist") }
            throw .storage("open \(path)", SystemCallError("open", errno: e))
        }
        let file = OwnedDescriptor(adopting: fd)
        var st = stat()
        guard fstat(file.rawValue, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            throw TUFError(code: .transport, message: "\(path) is not a regular file")
        }
        let bytes: [UInt8]
        do { bytes = try FileIO.read(file.rawValue, limit: maxLength + 1) } catch {
            throw .storage("read \(path)", error)
        }
        guard bytes.count <= maxLength else {
            throw TUFError(code: .tooLarge, message: "\(path) is more than \(maxLength) bytes, the cap for it")
        }
        return bytes
    }
}

/// A plugin as the repository offers it: verified TUF metadata, nothing downloaded yet.
public struct RepositoryPlugin: Sendable {
    /// The plugin's name (its delegated role).
    public let name: String
    /// `custom.version` of `NAME/plugin.json`, when the repository gives it.
    public let version: String?
    /// The keys the repository delegates `NAME/*` to, and how many must sign.
    public let keys: TrustedKeys
    /// Every target of the plugin (`NAME/…`), signed by its role.
    public let targets: [TargetFile]
    /// `NAME/plugin.json`'s SHA-256 (hex), to compare with what is installed without a download.
    public let manifestSHA256: String?
}

/// The client side of `[repository]`: the trusted metadata directory, the mirrors and the TUF
/// workflow over them (VigilTUF), with HTTP through VigilTUFHTTP. Only the repository commands
/// create one; `vigil up` never does.
public struct RepositoryClient: Sendable {
    /// `[repository]`.
    public internal(set) var settings: RepositorySettings
    /// Where the trusted metadata lives.
    public let metadataDirectory: String
    /// The update's start time (seconds since 1970; TUF spec 5.1).
    public let now: Int64
    let fetcher: @Sendable (RepositoryMirror) -> any TUFFetcher

    /// - Throws: `.notConfigured` when `vigil.toml` has no usable `[repository]`, `.storage` when
    ///   the metadata directory cannot be created or is unsafe.
    public init(configuration: HostConfiguration, environment: HostEnvironment, now: Int64) throws(RepositoryError) {
        let settings: RepositorySettings?
        do throws(RepositorySettingsError) {
            settings = try configuration.repository()
        } catch {
            throw RepositoryError(
                code: .notConfigured, message: "\(configuration.path): \(error.message) (\(error.code))",
                cause: ErrorCause(error))
        }
        guard let settings else {
            throw RepositoryError(
                code: .notConfigured,
                message: "\(configuration.path) has no [repository] table, so there is nowhere to get plugins from "
                    + "— add one with root (or root_sha256) and mirrors (docs/signing.md, \"Plugin repositories\")")
        }
        self.settings = settings
        self.now = now
        do throws(CoreError) {
            metadataDirectory = try settings.resolvedMetadataDirectory(environment: environment)
            try StateFile.prepareDirectory(metadataDirectory, holding: "the repository's trusted metadata")
        } catch {
            throw RepositoryError(code: .storage, message: error.message, cause: ErrorCause(error))
        }
        if let caFile = settings.caFile {
            let pem: [UInt8]
            do throws(CoreError) {
                pem = try RepositorySettings.readCAFile(caFile)
            } catch {
                throw RepositoryError(
                    code: .notConfigured,
                    message: "\(configuration.path): [repository] ca_file: \(error.message) (\(error.code))",
                    cause: ErrorCause(error))
            }
            if let problem = Self.caFileProblem(pem) {
                throw RepositoryError(
                    code: .notConfigured,
                    message: "\(configuration.path): [repository] ca_file: \(caFile) \(problem) "
                        + "(\(RepositorySettingsCode.caInvalid.rawValue))")
            }
        }
        let http = HTTPFetcher(caFile: settings.caFile)
        fetcher = { mirror -> any TUFFetcher in
            if mirror.scheme == .file { return FileFetcher() }
            return http
        }
    }

    /// What is wrong with the bytes of a `ca_file` and how to fix it, or nil when the fetcher's TLS
    /// library reads at least one certificate from them (and no private key is among them): what
    /// `vigil check` asks of `ca_file`.
    public static func caFileProblem(_ pem: [UInt8]) -> String? { CACertificates.problem(pem) }

    /// A refreshed view of the repository: root, timestamp, snapshot and top-level targets from the
    /// first mirror that gives a verified, unexpired set.
    ///
    /// - Throws: `.stale` when a mirror's metadata expired (and no other mirror had fresh
    ///   metadata), `.unreachable` when every mirror failed to serve, `.rollback` for older
    ///   metadata than trusted, `.refused` for other verification failures — each mirror's reason
    ///   in the message.
    public func refresh() async throws(RepositoryError) -> RepositorySession {
        try await installRoot()
        var failures: [(RepositoryMirror, TUFError)] = []
        for mirror in settings.mirrors {
            let updater = Updater(
                metadataDirectory: metadataDirectory, metadataURL: mirror.metadataURL, fetcher: fetcher(mirror),
                now: now)
            do {
                try await updater.refresh()
                return RepositorySession(updater: updater, mirror: mirror)
            } catch {
                failures.append((mirror, error))
            }
        }
        throw Self.combine(failures)
    }

    /// One error for every mirror's failure: stale when any mirror's metadata expired, unreachable
    /// when all failed to serve, else the first verification failure's kind.
    static func combine(_ failures: [(RepositoryMirror, TUFError)]) -> RepositoryError {
        let transport: Set<TUFErrorCode> = [
            .transport, .notFound, .httpStatus, .invalidURL, .tooSlow, .connectionDropped, .tlsUntrusted,
        ]
        let reasons = failures.map { "\($0.0.url): \($0.1.message) (\($0.1.code))" }.joined(separator: "; ")
        let code: RepositoryErrorCode
        let remedy: String
        if failures.contains(where: { $0.1.code == .expired }) {
            code = .stale
            remedy =
                "the repository must publish fresh metadata (or the clock is wrong); installed plugins keep "
                + "running, nothing was changed"
        } else if failures.allSatisfy({ transport.contains($0.1.code) }) {
            code = .unreachable
            remedy = "check the mirrors in [repository] and the network; nothing was changed"
        } else if failures.contains(where: { $0.1.code == .badVersion }) {
            code = .rollback
            remedy = "a mirror serves older metadata than this host trusts; nothing was changed"
        } else {
            code = .refused
            remedy = "the repository's metadata did not verify; nothing was changed"
        }
        return RepositoryError(
            code: code, message: "no mirror gave a verified view of the repository — \(reasons) — \(remedy)",
            cause: failures.first.map { ErrorCause($0.1) })
    }

    /// Puts the root of trust into the metadata directory the first time: the shipped `root` file,
    /// else the first mirror's `1.root.json`; either must match `root_sha256` when it is set.
    func installRoot() async throws(RepositoryError) {
        let store = FileStore(directory: metadataDirectory)
        do {
            if try store.read("root.json", limit: RepositorySettings.rootCap) != nil { return }
        } catch {
            throw RepositoryError(code: .storage, message: error.message, cause: ErrorCause(error))
        }
        var bytes: [UInt8]
        var source: String
        if let root = settings.root {
            do throws(CoreError) {
                bytes = try RepositorySettings.readRoot(root, cap: RepositorySettings.rootCap)
            } catch {
                throw RepositoryError(code: .storage, message: error.message, cause: ErrorCause(error))
            }
            source = root
        } else {
            var failures: [(RepositoryMirror, TUFError)] = []
            var found: ([UInt8], String)?
            for mirror in settings.mirrors {
                do {
                    let url = mirror.metadataURL + "1.root.json"
                    found = (try await fetcher(mirror).fetch(url, maxLength: RepositorySettings.rootCap), url)
                    break
                } catch {
                    failures.append((mirror, error))
                }
            }
            guard let found else { throw Self.combine(failures) }
            (bytes, source) = found
        }
        if let pin = settings.rootSHA256 {
            let actual = Digest.hex(Digest.sha256(bytes))
            guard actual == pin else {
                throw RepositoryError(
                    code: .rootMismatch,
                    message: "the root of trust \(source) has SHA-256 \(actual), not the root_sha256 = \"\(pin)\" "
                        + "vigil.toml pins — it is not the repository you meant; get its root.json out of band "
                        + "and check the pin")
            }
        }
        do {
            _ = try TrustedSet(rootBytes: bytes, now: Int64.min)
            try store.write("root.json", bytes)
        } catch {
            throw RepositoryError(
                code: .refused, message: "the root of trust \(source) is refused: \(error.message)",
                cause: ErrorCause(error))
        }
    }
}

/// One refreshed view of the repository: look plugins up and fetch their files.
public final class RepositorySession {
    let updater: Updater
    /// The mirror the view came from.
    public let mirror: RepositoryMirror

    init(updater: Updater, mirror: RepositoryMirror) {
        self.updater = updater
        self.mirror = mirror
    }

    /// `name` as the repository offers it: its delegation (which must be a role named `name`
    /// covering `NAME/*`), its keys and every target its role signs.
    ///
    /// - Throws: `.unknownPlugin` without such a delegation or without `NAME/plugin.json`;
    ///   `.stale`, `.rollback`, `.refused` when the role's metadata does not verify.
    public func plugin(_ name: String) async throws(RepositoryError) -> RepositoryPlugin {
        let manifestPath = name + "/plugin.json"
        let unknown = RepositoryError(
            code: .unknownPlugin, plugin: name,
            message: "the repository (\(mirror.url)) has no plugin \(name): its targets delegate no role \(name) "
                + "for \(name)/* that lists \(manifestPath) — check the name, or ask the repository's maintainers "
                + "to publish it")
        guard let top = updater.trusted?.targets("targets"),
            let delegation = top.delegations.first(where: { $0.name == name }), delegation.covers(manifestPath)
        else { throw unknown }
        do {
            _ = try await updater.targetInfo(manifestPath)
        } catch  where error.code == .targetNotFound {
            throw unknown
        } catch {
            throw RepositoryClient.combine([(mirror, error)])
        }
        // Only the role named after the plugin, reached by the top-level delegation, counts: a
        // target the top-level role lists itself was not signed by the plugin's author.
        guard let role = updater.trusted?.targets(name), let manifest = role.targets[manifestPath] else {
            throw unknown
        }
        var keys: [Fingerprint] = []
        for id in delegation.keys.keyIDs {
            guard let key = top.delegationKeys[id], key.keyType == "ed25519", let raw = Hashing.unhex(key.publicValue),
                let publicKey = try? Ed25519PublicKey(rawRepresentation: raw)
            else {
                throw RepositoryError(
                    code: .refused, plugin: name,
                    message: "the repository delegates \(name) to a key that is not a plain Ed25519 key (key id "
                        + "\(Sanitizer.display(id))) — plugin roles must use the plugin's own minisign key")
            }
            keys.append(Fingerprint(publicKey: publicKey))
        }
        let trusted: TrustedKeys
        do {
            trusted = try TrustedKeys(keys: keys, threshold: delegation.keys.threshold)
        } catch {
            throw RepositoryError(
                code: .refused, plugin: name,
                message: "the repository's delegation of \(name) is not a valid key set: \(error)"
            )
        }
        var version: String?
        if case .string(let v)? = manifest.custom?["version"] { version = v }
        let targets = role.targets.values.filter { $0.path.hasPrefix(name + "/") }.sorted { $0.path < $1.path }
        return RepositoryPlugin(
            name: name, version: version, keys: trusted, targets: targets, manifestSHA256: manifest.hashes["sha256"])
    }

    /// Fetches every target of `plugin` into `directory` (created; its files named by the path
    /// after `NAME/`), each checked against its signed length and hashes before it is written.
    public func download(_ plugin: RepositoryPlugin, into directory: String) async throws(RepositoryError) {
        for target in plugin.targets {
            let relative = String(target.path.dropFirst(plugin.name.count + 1))
            let parts = relative.split(separator: "/", omittingEmptySubsequences: false)
            guard !relative.isEmpty, !parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }),
                !relative.contains("\0")
            else {
                throw RepositoryError(
                    code: .refused, plugin: plugin.name,
                    message: "the repository lists a target \(Sanitizer.display(target.path)) that is not a plain "
                        + "relative path inside the plugin's directory")
            }
            let bytes: [UInt8]
            do {
                bytes = try await updater.fetchTarget(target, baseURL: mirror.targetsURL)
            } catch {
                throw RepositoryClient.combine([(mirror, error)])
            }
            let path = Path.join(directory, relative)
            do throws(CoreError) {
                if let failure = Directory.create(Path.directory(of: path), mode: 0o755) {
                    throw CoreError.io("create", path: failure.path, errno: failure.error.number, call: "mkdir")
                }
                try AtomicFile.write(bytes, to: path, mode: 0o644)
            } catch {
                throw RepositoryError(
                    code: .storage, plugin: plugin.name, message: error.message, cause: ErrorCause(error))
            }
        }
    }
}
