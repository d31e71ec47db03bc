import Glibc
public import VigilCore
import VigilTUF

/// `vigil plugin bundle create|apply DIR`: a repository for boxes that are never online.
///
/// A bundle is a directory laid out as a `file://` mirror (`metadata/`, `targets/`), holding the
/// repository's current metadata (every root version, the timestamp, the snapshot, the top-level
/// targets and the activated plugins' roles, exactly the bytes this host verified) and the
/// activated plugins' files. Applying it is an update with the bundle as the only mirror: the same
/// TUF workflow, the same checks and the same all-or-nothing switch, so a tampered byte or an
/// expired bundle is refused exactly as from a network mirror.
extension PluginInstaller {
    /// What `createBundle(at:)` wrote.
    public struct BundleSummary: Sendable {
        /// The plugins in the bundle, with their versions.
        public let plugins: [(name: String, version: String?)]
        /// When the bundle's timestamp expires (RFC 3339): it cannot be applied after that.
        public let expires: String
    }

    /// Writes the repository's current metadata and every activated plugin it offers into
    /// `directory` (which must not exist; it appears complete or not at all).
    public func createBundle(at directory: String) async throws(RepositoryError) -> BundleSummary {
        if access(directory, F_OK) == 0 {
            throw RepositoryError(
                code: .storage,
                message:
                    "\(directory) exists — give a new directory for the bundle (it is created complete or not at all)")
        }
        let session = try await client.refresh()
        guard let trusted = session.updater.trusted, let timestamp = trusted.timestamp,
            let snapshot = trusted.snapshot
        else { throw RepositoryError(code: .refused, message: "the refresh left no trusted timestamp and snapshot") }
        var offers: [RepositoryPlugin] = []
        for name in configuration.plugins {
            do {
                offers.append(try await session.plugin(name))
            } catch  where error.code == .unknownPlugin {
                continue  // activated, but not from this repository (a first-party or local plugin)
            }
        }
        var template = Array((directory + ".vigil-bundle-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw storage("create a directory beside \(directory)", errno: errno, plugin: nil)
        }
        let staging = String(cString: made)
        do throws(RepositoryError) {
            let metadata = Path.join(staging, "metadata")
            let consistent = trusted.root.consistentSnapshot
            // Every root, so a box that trusts an older one follows the rotations one by one.
            let mirror = session.mirror
            for version in 1...max(1, trusted.root.common.version) {
                let bytes: [UInt8]
                do {
                    bytes = try await client.fetcher(mirror).fetch(
                        mirror.metadataURL + "\(version).root.json", maxLength: RepositorySettings.rootCap)
                } catch {
                    throw RepositoryClient.combine([(mirror, error)])
                }
                try write(bytes, to: metadata, "\(version).root.json")
            }
            try copyMetadata("timestamp.json", as: "timestamp.json", into: metadata)
            try copyMetadata(
                "snapshot.json", as: consistent ? "\(timestamp.snapshotMeta.version).snapshot.json" : "snapshot.json",
                into: metadata)
            for role in ["targets"] + offers.map(\.name) {
                guard let version = snapshot.meta["\(role).json"]?.version else { continue }
                let quoted = FileStore.percentEncode(role)
                try copyMetadata(
                    FileStore.fileName(role: role), as: consistent ? "\(version).\(quoted).json" : "\(quoted).json",
                    into: metadata)
            }
            for offer in offers {
                for target in offer.targets {
                    let bytes: [UInt8]
                    do {
                        bytes = try await session.updater.fetchTarget(target, baseURL: mirror.targetsURL)
                    } catch {
                        throw RepositoryClient.combine([(mirror, error)])
                    }
                    var path = FileStore.percentEncode(target.path, keeping: [UInt8(ascii: "/")])
                    if consistent, let hash = target.hashes.sorted(by: { $0.key < $1.key }).first?.value {
                        let slash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
                        path = String(path[..<slash]) + FileStore.percentEncode(hash) + "." + String(path[slash...])
                    }
                    let file = Path.join(Path.join(staging, "targets"), path)
                    try write(bytes, to: Path.directory(of: file), Path.lastComponent(of: file))
                }
            }
            if rename(staging, directory) != 0 {
                throw storage("rename \(staging) to \(directory)", errno: errno, plugin: nil)
            }
        } catch {
            DirectoryTree.remove(staging)
            throw error
        }
        return BundleSummary(
            plugins: offers.map { ($0.name, $0.version) }, expires: timestamp.common.expiresText)
    }

    /// An update from the bundle `directory` (an absolute path) alone: ``update(_:)`` with the
    /// bundle as the only mirror.
    public func applyBundle(at directory: String, _ names: [String]? = nil) async throws(RepositoryError)
        -> [UpdateItem]
    {
        guard let mirror = RepositoryMirror.directory(directory) else {
            throw RepositoryError(
                code: .notConfigured,
                message: "\(directory) cannot be read as a bundle directory: give an absolute path without `..`")
        }
        var installer = self
        installer.client = client.with(mirrors: [mirror])
        return try await installer.update(names)
    }

    private func copyMetadata(_ name: String, as target: String, into directory: String) throws(RepositoryError) {
        let bytes: [UInt8]?
        do {
            bytes = try FileStore(directory: client.metadataDirectory).read(name, limit: 5_000_000)
        } catch {
            throw RepositoryError(code: .storage, message: error.message, cause: ErrorCause(error))
        }
        guard let bytes else {
            throw RepositoryError(
                code: .storage, message: "\(client.metadataDirectory)/\(name) is missing after the refresh")
        }
        try write(bytes, to: directory, target)
    }

    private func write(_ bytes: [UInt8], to directory: String, _ name: String) throws(RepositoryError) {
        if let failure = Directory.create(directory, mode: 0o755) {
            throw storage("create \(failure.path)", errno: failure.error.number, plugin: nil)
        }
        do {
            try FileStore(directory: directory).write(name, bytes)
        } catch {
            throw RepositoryError(code: .storage, message: error.message, cause: ErrorCause(error))
        }
    }
}

extension RepositoryClient {
    /// The same repository and trusted metadata, served by `mirrors` only.
    func with(mirrors: [RepositoryMirror]) -> RepositoryClient {
        var copy = self
        copy.settings.mirrors = mirrors
        return copy
    }
}
