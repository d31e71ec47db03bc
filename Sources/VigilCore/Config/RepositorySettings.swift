import Glibc
import VigilBase
public import VigilPlugin

/// A ``RepositorySettingsError``'s kind: each refusal of `[repository]` has its own code.
public enum RepositorySettingsCode: String, ErrorCode {
    /// An unknown key, or a value of the wrong type.
    case invalid = "repository-invalid"
    /// Neither `root` nor `root_sha256`: the client would have no root of trust.
    case noRoot = "repository-no-root"
    /// `root_sha256` is not 64 hexadecimal digits.
    case rootHashInvalid = "repository-root-sha256-invalid"
    /// No mirror, or one that is not an absolute `http://`, `https://` or `file://` URL.
    case mirrorInvalid = "repository-mirror-invalid"
    /// An `http://` mirror on a host other than loopback without `allow_remote_http = true`.
    case mirrorNotLoopback = "repository-mirror-not-loopback"
    /// `ca_file` holds no certificate the TLS library reads (empty, not PEM, a certificate that does
    /// not parse) or holds a private key: `vigil check`, and the repository commands before fetching.
    case caInvalid = "repository-ca-invalid"
}

/// A refusal of `[repository]`.
public typealias RepositorySettingsError = CodedError<RepositorySettingsCode>

/// A mirror of a plugin repository: its metadata is under `URL/metadata/`, its targets under
/// `URL/targets/` (docs/signing.md, "Plugin repositories").
public struct RepositoryMirror: Sendable, Hashable, CustomStringConvertible {
    /// How the mirror is reached.
    public enum Scheme: String, Sendable, Hashable {
        /// Plain HTTP/1.1: the transport carries no trust, every byte is verified by TUF.
        case http
        /// HTTP/1.1 over TLS, verified against the system's trust store or `ca_file`: TUF still
        /// verifies every byte; TLS hides which plugins are fetched.
        case https
        /// A local directory (a USB stick, an NFS mount), read with the same caps.
        case file
    }

    /// The URL as written, with a final `/`.
    public let url: String
    /// How it is reached.
    public let scheme: Scheme
    /// The host (`http`, `https`), lowercased without brackets; empty for `file`.
    public let host: String

    /// The metadata base URL (`URL/metadata/`).
    public var metadataURL: String { url + "metadata/" }
    /// The targets base URL (`URL/targets/`).
    public var targetsURL: String { url + "targets/" }
    /// The directory of a `file://` mirror.
    public var path: String? { scheme == .file ? String(url.dropFirst("file://".count)) : nil }

    public var description: String { url }

    /// True for `localhost`, `127.0.0.0/8` and `::1`.
    public var isLoopback: Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.") && host.split(separator: ".").count == 4
    }

    /// The local directory `path` (absolute, no `..`) as a `file://` mirror: a path, not a URL, so
    /// it may hold spaces (a USB stick's label); `nil` for a relative path, `..` or a NUL.
    public static func directory(_ path: String) -> RepositoryMirror? {
        guard path.hasPrefix("/"), !path.contains("\0"), !path.split(separator: "/").contains("..") else {
            return nil
        }
        return RepositoryMirror(url: "file://" + (path.hasSuffix("/") ? path : path + "/"), scheme: .file, host: "")
    }

    /// Parses `http://HOST[:PORT]/PATH`, `https://HOST[:PORT]/PATH` or `file:///ABSOLUTE/PATH`; `nil`
    /// for anything else.
    public static func parse(_ text: String) -> RepositoryMirror? {
        guard !text.contains("\0"), !text.contains(where: { $0.isWhitespace }) else { return nil }
        let url = text.hasSuffix("/") ? text : text + "/"
        if url.hasPrefix("file:///") {
            guard !url.split(separator: "/").contains("..") else { return nil }
            return RepositoryMirror(url: url, scheme: .file, host: "")
        }
        guard let scheme = [Scheme.http, .https].first(where: { url.hasPrefix($0.rawValue + "://") }) else {
            return nil
        }
        let rest = url.dropFirst(scheme.rawValue.count + "://".count)
        guard let slash = rest.firstIndex(of: "/") else { return nil }
        var authority = String(rest[..<slash]).lowercased()
        guard !authority.isEmpty, !authority.contains("@") else { return nil }
        var host: String
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            authority = String(authority[authority.index(after: close)...])
        } else {
            let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2 else { return nil }
            host = String(parts[0])
            authority = parts.count == 2 ? ":" + parts[1] : ""
        }
        if !authority.isEmpty {
            guard authority.hasPrefix(":"), let port = Int(authority.dropFirst()), (1...65535).contains(port) else {
                return nil
            }
        }
        guard !host.isEmpty else { return nil }
        return RepositoryMirror(url: url, scheme: scheme, host: host)
    }
}

/// `[repository]` of `vigil.toml`: where `vigil plugin install|update|outdated` get plugins from.
///
/// ```toml
/// [repository]
/// root = "repository-root.json"            # the repository's root metadata, shipped with the host
/// root_sha256 = "…"                         # and/or a pin of the first 1.root.json fetched
/// mirrors = ["https://plugins.example/", "http://127.0.0.1:8080/", "file:///media/usb/vigil-repository/"]
/// ca_file = "repository-ca.pem"             # PEM CAs trusted for https:// mirrors instead of the system's
/// metadata_dir = "/var/lib/vigil/repository"  # default: the state directory's repository/
/// allow_remote_http = false                 # plain HTTP beyond loopback (TUF verifies every byte)
/// ```
public struct RepositorySettings: Sendable, Hashable {
    /// The largest root metadata read: python-tuf's cap for `root.json`.
    public static let rootCap = 512_000
    /// The keys `[repository]` accepts.
    public static let keys = ["root", "root_sha256", "mirrors", "metadata_dir", "allow_remote_http", "ca_file"]
    /// The largest `ca_file` read (a whole system bundle is about 220 kB).
    public static let caFileCap = 1_048_576

    /// The shipped root metadata (absolute; relative paths are relative to `vigil.toml`).
    public var root: String?
    /// The SHA-256 (lowercase hex) the root of trust must have: the `root` file, or without one the
    /// first `1.root.json` a mirror serves.
    public var rootSHA256: String?
    /// The mirrors, tried in order.
    public var mirrors: [RepositoryMirror]
    /// Where the client keeps the metadata it trusts (absolute), or `nil` for the default:
    /// `repository/` in Vigil's state directory.
    public var metadataDirectory: String?
    /// The operator's opt-in to `http://` mirrors beyond loopback.
    public var allowRemoteHTTP: Bool
    /// PEM certificates that alone are trusted for `https://` mirrors (absolute), or `nil` for the
    /// system's trust store.
    public var caFile: String?

    /// Reads a `[repository]` table; `configDirectory` resolves relative paths.
    /// - Throws: a ``RepositorySettingsError`` naming the key, what is wrong and how to fix it.
    public init(table: [String: SettingValue], configDirectory: String) throws(RepositorySettingsError) {
        for key in table.keys.sorted() where !Self.keys.contains(key) {
            var message = "[repository] has an unknown key `\(Sanitizer.display(key))`"
            if let near = NearName.closest(to: key, among: Self.keys) { message += "; did you mean `\(near)`?" }
            throw RepositorySettingsError(
                code: .invalid, message: message + " Known: \(Self.keys.joined(separator: ", "))")
        }
        func string(_ key: String) throws(RepositorySettingsError) -> String? {
            guard let value = table[key] else { return nil }
            guard case .string(let s) = value, !s.isEmpty, !s.contains("\0") else {
                throw RepositorySettingsError(
                    code: .invalid, message: "[repository] \(key) = \(value): expected a non-empty string")
            }
            return s
        }
        root = try string("root").map { Path.absolute($0, relativeTo: configDirectory) }
        metadataDirectory = try string("metadata_dir").map { Path.absolute($0, relativeTo: configDirectory) }
        caFile = try string("ca_file").map { Path.absolute($0, relativeTo: configDirectory) }
        if let hash = try string("root_sha256") {
            guard hash.utf8.count == 64, hash.utf8.allSatisfy({ Self.isHex($0) }) else {
                throw RepositorySettingsError(
                    code: .rootHashInvalid,
                    message: "[repository] root_sha256 = \"\(Sanitizer.display(hash))\" is not a SHA-256: expected 64 "
                        + "hexadecimal digits, such as the output of `sha256sum 1.root.json`")
            }
            rootSHA256 = hash.lowercased()
        }
        switch table["allow_remote_http"] {
        case nil: allowRemoteHTTP = false
        case .bool(let b)?: allowRemoteHTTP = b
        case let value?:
            throw RepositorySettingsError(
                code: .invalid, message: "[repository] allow_remote_http = \(value): expected true or false")
        }
        guard root != nil || rootSHA256 != nil else {
            throw RepositorySettingsError(
                code: .noRoot,
                message: "[repository] names no root of trust — set root = \"PATH/root.json\" (the repository's root "
                    + "metadata, obtained out of band) or root_sha256 = \"…\" (the SHA-256 of its 1.root.json)")
        }
        guard case .array(let list)? = table["mirrors"], !list.isEmpty else {
            throw RepositorySettingsError(
                code: .mirrorInvalid,
                message: "[repository] needs mirrors = [\"https://HOST/\", \"file:///DIR/\"] (one or more, tried in "
                    + "order)")
        }
        var mirrors: [RepositoryMirror] = []
        for value in list {
            guard case .string(let text) = value, let mirror = RepositoryMirror.parse(text) else {
                throw RepositorySettingsError(
                    code: .mirrorInvalid,
                    message: "[repository] mirrors: \(Sanitizer.display(value.description)) is not a mirror URL — "
                        + "use https://HOST[:PORT]/PATH, http://HOST[:PORT]/PATH or file:///ABSOLUTE/PATH")
            }
            if mirror.scheme == .http, !mirror.isLoopback, !allowRemoteHTTP {
                throw RepositorySettingsError(
                    code: .mirrorNotLoopback,
                    message: "[repository] mirror \(Sanitizer.display(mirror.url)) is plain HTTP beyond this machine: "
                        + "TUF verifies every byte, but anyone on the path sees which plugins are fetched and can "
                        + "withhold updates — use a loopback or file:// mirror, or set allow_remote_http = true")
            }
            mirrors.append(mirror)
        }
        self.mirrors = mirrors
    }

    /// Where the client keeps its trusted metadata: ``metadataDirectory``, else `repository/` in
    /// the state directory of `environment`.
    public func resolvedMetadataDirectory(environment: HostEnvironment) throws(CoreError) -> String {
        if let metadataDirectory { return metadataDirectory }
        return Path.join(try RollbackStore.defaultDirectory(environment: environment), "repository")
    }

    /// Reads the shipped root file, protected like `vigil.toml` (a regular file, not a link, owned by
    /// this user or root and not writable by others, in a directory no one else can write).
    public static func readRoot(_ path: String, cap: Int) throws(CoreError) -> [UInt8] {
        try readProtected(path, cap: cap, what: "repository root", holding: "the repository's root")
    }

    /// Reads `ca_file`, protected like the root (``readRoot(_:cap:)``): whoever can replace it can
    /// impersonate every `https://` mirror.
    public static func readCAFile(_ path: String) throws(CoreError) -> [UInt8] {
        try readProtected(path, cap: caFileCap, what: "repository CA file", holding: "the repository's CA file")
    }

    private static func readProtected(_ path: String, cap: Int, what: String, holding: String) throws(CoreError)
        -> [UInt8]
    {
        var st = stat()
        if lstat(path, &st) == 0 {
            try HostConfiguration.checkOwnership(st, of: path, isDirectory: false)
            try HostConfiguration.checkDirectory(of: path, holding: holding)
        }
        return try SafeFile.read(path, cap: cap, what: what)
    }

    private static func isHex(_ b: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(b)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(b)
    }
}

extension HostConfiguration {
    /// `[repository]`, or `nil` when the file has none.
    /// - Throws: its refusal (``RepositorySettings/init(table:configDirectory:)``).
    public func repository() throws(RepositorySettingsError) -> RepositorySettings? {
        guard let table = pluginSettings["repository"] else { return nil }
        return try RepositorySettings(table: table, configDirectory: Path.directory(of: path))
    }
}
