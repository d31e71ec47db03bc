@_exported public import VigilBase

/// An error from the TUF client: what was refused, why, and what to do about it.
public typealias TUFError = CodedError<TUFErrorCode>

/// The kind of a ``TUFError``, stable for scripts and tests.
public enum TUFErrorCode: String, ErrorCode {
    /// The bytes are not strict JSON (duplicate keys, floats, invalid UTF-8, trailing data…).
    case invalidJSON = "tuf-invalid-json"
    /// The JSON is well formed but is not valid TUF metadata of the expected role.
    case malformedMetadata = "tuf-malformed-metadata"
    /// The metadata's `_type` is not the role that was asked for.
    case wrongType = "tuf-wrong-type"
    /// Fewer distinct keys than the role's threshold signed the metadata.
    case thresholdNotMet = "tuf-threshold-not-met"
    /// The version is not the one the trusted metadata requires (rollback, or a version mismatch).
    case badVersion = "tuf-bad-version"
    /// The metadata expired before the update started (freeze attack, or an unmaintained repository).
    case expired = "tuf-expired"
    /// The bytes do not have the length or hashes the trusted metadata lists.
    case lengthOrHashMismatch = "tuf-length-or-hash-mismatch"
    /// A snapshot or targets file is not the version, length or hashes its trusted parent (the
    /// timestamp, the snapshot) names: files of different publications served together (mix-and-match).
    case mixedMetadata = "tuf-mixed-metadata"
    /// A role listed before is missing from the new snapshot, or a delegated role is not in the snapshot.
    case missingRole = "tuf-missing-role"
    /// No trusted targets metadata describes the target path.
    case targetNotFound = "tuf-target-not-found"
    /// A download would exceed its cap (endless-data attack) or its declared length.
    case tooLarge = "tuf-too-large"
    /// The server answered with an HTTP status other than 200 (404 is ``notFound``).
    case httpStatus = "tuf-http-status"
    /// The server has no such file (HTTP 404 or 403).
    case notFound = "tuf-not-found"
    /// The server could not be reached.
    case transport = "tuf-transport"
    /// The server closed or reset the connection before the whole file arrived.
    case connectionDropped = "tuf-connection-dropped"
    /// A transfer sent nothing for too long, fell below the minimum rate or missed its deadline
    /// (slow-retrieval attack).
    case tooSlow = "tuf-too-slow"
    /// The TLS handshake failed: the server's certificate is not trusted (wrong CA, wrong host name,
    /// expired) or the server does not speak TLS.
    case tlsUntrusted = "tuf-tls-untrusted"
    /// Every mirror failed, with different errors (each is in the message).
    case mirrorsFailed = "tuf-mirrors-failed"
    /// A URL is not of a supported form (`http://HOST[:PORT]/PATH`).
    case invalidURL = "tuf-invalid-url"
    /// Local metadata or target storage could not be read or written.
    case storage = "tuf-storage"
    /// The client has no trusted root (run `init` first).
    case noTrustedRoot = "tuf-no-trusted-root"
}

extension TUFError {
    static func invalidJSON(_ what: String, _ reason: String) -> TUFError {
        TUFError(
            code: .invalidJSON,
            message: "\(what) is not strict JSON: \(reason) — TUF metadata must be UTF-8 JSON without duplicate "
                + "keys or non-integer numbers; the repository or the mirror serves damaged or hostile data")
    }

    static func malformed(_ what: String, _ reason: String) -> TUFError {
        TUFError(
            code: .malformedMetadata,
            message: "\(what) is not valid TUF metadata: \(reason) — ask the repository's maintainers to "
                + "publish spec-conformant metadata (python-tuf's Metadata API writes it)")
    }

    static func thresholdNotMet(role: String, valid: Int, threshold: Int, by delegator: String) -> TUFError {
        TUFError(
            code: .thresholdNotMet,
            message: "\(role) is signed by \(valid) of the \(threshold) distinct keys \(delegator) requires — "
                + "the metadata was altered or signed with the wrong keys; nothing was trusted or stored")
    }

    static func badVersion(_ what: String, _ reason: String) -> TUFError {
        TUFError(
            code: .badVersion,
            message: "\(what): \(reason) — a rollback or mix-and-match attempt, or a repository publishing error; "
                + "the trusted metadata was kept")
    }

    static func expired(_ what: String, expires: String) -> TUFError {
        TUFError(
            code: .expired,
            message: "\(what) expired at \(expires) — the repository must publish fresh metadata (a mirror that "
                + "replays old files cannot), or the system clock is wrong")
    }

    static func mismatch(_ what: String, _ reason: String) -> TUFError {
        TUFError(
            code: .lengthOrHashMismatch,
            message: "\(what) \(reason) — the mirror serves different bytes than the signed metadata describes; "
                + "nothing was stored")
    }

    /// A metadata file that is not the one its trusted parent names.
    static func mixed(_ what: String, _ reason: String) -> TUFError {
        TUFError(
            code: .mixedMetadata,
            message: "\(what) \(reason) — the mirror serves files of different publications together "
                + "(mix-and-match) or damaged files; nothing of them was acted on or stored; use another mirror "
                + "or wait until the mirror has synchronised")
    }

    /// A local file could not be read or written.
    public static func storage(_ what: String, _ cause: SystemCallError) -> TUFError {
        TUFError(
            code: .storage,
            message: "cannot \(what): \(cause) — check the directory exists and is writable by this user",
            cause: ErrorCause(cause))
    }
}
