@_exported public import VigilBase

/// An error of `vigil plugin install|update|outdated`: what was refused, why, and what to do.
public typealias RepositoryError = CodedError<RepositoryErrorCode>

/// The kind of a ``RepositoryError``; the CLI gives each its own exit status.
public enum RepositoryErrorCode: String, ErrorCode {
    /// `vigil.toml` has no `[repository]`, or it is refused.
    case notConfigured = "repository-not-configured"
    /// No mirror could be reached or served the files (each mirror's reason is in the message).
    case unreachable = "repository-unreachable"
    /// The repository's metadata expired (the message names the role and since when).
    case stale = "repository-stale"
    /// The repository delegates the plugin to a key other than the one the host trusts for it.
    case keyMismatch = "repository-key-mismatch"
    /// The repository offers an older version than the one installed or accepted (or older
    /// metadata than the client has seen).
    case rollback = "repository-rollback"
    /// The repository has no such plugin (no delegation `NAME/*` to a role named after it).
    case unknownPlugin = "repository-unknown-plugin"
    /// The root of trust does not match `root_sha256`.
    case rootMismatch = "repository-root-mismatch"
    /// The metadata or the plugin failed verification (signatures, hashes, the plugin's own checks).
    case refused = "repository-refused"
    /// `install`: the plugin is installed already; `update NAME`: it is not installed.
    case installState = "repository-install-state"
    /// A local file could not be read or written.
    case storage = "repository-storage"
}
