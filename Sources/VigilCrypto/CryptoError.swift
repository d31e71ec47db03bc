@_exported public import VigilBase

/// An error from VigilCrypto: a malformed key, signature or fingerprint, or a signature that does
/// not verify. The message states the cause and the remedy.
public typealias CryptoError = CodedError<CryptoErrorCode>

/// The kind of a ``CryptoError``, stable for scripts and tests.
public enum CryptoErrorCode: String, ErrorCode {
    /// A raw key or seed does not have the length Ed25519 requires (32 bytes).
    case invalidKeyLength = "invalid-key-length"
    /// A raw Ed25519 signature is not exactly 64 bytes.
    case invalidSignatureLength = "invalid-signature-length"
    /// A public key (minisign `.pub` file or base64 line) cannot be read.
    case malformedPublicKey = "malformed-public-key"
    /// A secret key file cannot be read, or its checksum or key pair is inconsistent.
    case malformedSecretKey = "malformed-secret-key"
    /// A signature file does not have minisign's four-line layout or field sizes.
    case malformedSignature = "malformed-signature"
    /// The signature uses an algorithm other than prehashed Ed25519 (`ED`), e.g. legacy `Ed`.
    case unsupportedAlgorithm = "unsupported-algorithm"
    /// The signature does not verify and was made by a key with a different key id.
    case keyIDMismatch = "key-id-mismatch"
    /// The signature does not verify: the signed file or the signature was changed, or the key is wrong.
    case invalidSignature = "invalid-signature"
    /// The signature over the trusted comment does not verify: the trusted comment was changed.
    case invalidGlobalSignature = "invalid-global-signature"
    /// A comment to be signed contains a line break or control character, or is too long.
    case invalidComment = "invalid-comment"
    /// A fingerprint is not `ed25519:` followed by 44 characters of base64 for 32 bytes.
    case malformedFingerprint = "malformed-fingerprint"
    /// A fingerprint's base64 decodes, but is not the canonical spelling of its bytes.
    case nonCanonicalFingerprint = "non-canonical-fingerprint"
    /// The secret key is password-protected and no password was given.
    case encryptedKeyNeedsPassword = "encrypted-key-needs-password"
    /// The password does not decrypt the secret key (its checksum does not match).
    case wrongPassword = "wrong-password"
    /// libsodium reported a failure that input validation cannot explain (e.g. out of memory).
    case libraryFailure = "library-failure"
}

// MARK: - The messages, in one place

extension CryptoError {
    static func invalidKeyLength(what: String, expected: Int, actual: Int) -> CryptoError {
        CryptoError(
            code: .invalidKeyLength,
            message: "\(what) must be exactly \(expected) bytes, got \(actual) — pass the raw key bytes, "
                + "not a hex, base64 or minisign encoding of them")
    }

    static func invalidSignatureLength(actual: Int) -> CryptoError {
        CryptoError(
            code: .invalidSignatureLength,
            message: "an Ed25519 signature must be exactly 64 bytes, got \(actual) — the signature is "
                + "truncated or has trailing data; obtain the original signature again")
    }

    static func malformedPublicKey(_ reason: String) -> CryptoError {
        CryptoError(
            code: .malformedPublicKey,
            message: "not a minisign public key: \(reason) — use the publisher's `.pub` file as written by "
                + "`minisign -G` or `vigil plugin keygen` (two lines: an `untrusted comment:` line and the "
                + "base64 key starting with \"RW\")")
    }

    static func malformedSecretKey(_ reason: String) -> CryptoError {
        CryptoError(
            code: .malformedSecretKey,
            message: "not a usable minisign secret key: \(reason) — use the key file exactly as written by "
                + "`minisign -G` or `vigil plugin keygen`; if it was damaged, restore it from a backup")
    }

    static func malformedSignature(_ reason: String) -> CryptoError {
        CryptoError(
            code: .malformedSignature,
            message: "not a minisign signature file: \(reason) — re-create it with `vigil plugin sign` or "
                + "`minisign -S`, and do not edit it by hand")
    }

    static func legacyAlgorithm() -> CryptoError {
        CryptoError(
            code: .unsupportedAlgorithm,
            message: "the signature uses minisign's legacy algorithm \"Ed\" (Ed25519 over the raw file), which "
                + "Vigil refuses: the algorithm id is not signed, so accepting \"Ed\" lets anyone turn a "
                + "prehashed signature into a forgery over a different file by flipping one letter — re-sign "
                + "with a current minisign (0.8+, without -l) or `vigil plugin sign` to get a prehashed \"ED\" "
                + "signature")
    }

    static func unknownAlgorithm(_ algorithm: [UInt8]) -> CryptoError {
        CryptoError(
            code: .unsupportedAlgorithm,
            message: "the signature's algorithm id is 0x\(Digest.hex(algorithm)), not \"ED\" (prehashed "
                + "Ed25519), the only one Vigil accepts — re-sign with `vigil plugin sign` or `minisign -S`")
    }

    static func keyIDMismatch(signatureKeyID: String, publicKeyID: String) -> CryptoError {
        CryptoError(
            code: .keyIDMismatch,
            message: "the signature does not verify: it was made by the key with id \(signatureKeyID), but the "
                + "key it was checked with has id \(publicKeyID) — the file was signed by a different key "
                + "(a key rotation, or the wrong key); check which key the publisher uses before trusting it")
    }

    static func invalidSignature(signatureKeyID: String) -> CryptoError {
        CryptoError(
            code: .invalidSignature,
            message: "the signature does not verify (signature key id \(signatureKeyID)): the signed file or "
                + "its signature was changed after signing, or it was signed with another key — do not use "
                + "the file; obtain it again from the publisher")
    }

    static func invalidGlobalSignature() -> CryptoError {
        CryptoError(
            code: .invalidGlobalSignature,
            message: "the trusted comment's signature does not verify: the `trusted comment:` line was changed "
                + "after signing — do not use the file; obtain it again from the publisher")
    }

    static func invalidComment(_ which: String, _ reason: String) -> CryptoError {
        CryptoError(
            code: .invalidComment,
            message: "cannot sign with this \(which): \(reason) — use a single line of printable text "
                + "(tabs are allowed)")
    }

    static func malformedFingerprint(_ reason: String) -> CryptoError {
        CryptoError(
            code: .malformedFingerprint,
            message: "not a Vigil key fingerprint: \(reason) — a fingerprint is \"ed25519:\" followed by the "
                + "44-character standard base64 of the 32-byte public key, as `vigil plugin trust` prints it")
    }

    static func nonCanonicalFingerprint(given: String, canonical: String) -> CryptoError {
        CryptoError(
            code: .nonCanonicalFingerprint,
            message: "the fingerprint \(given) is not in canonical form (its last base64 character carries "
                + "bits that do not belong to the key); the canonical form of the same key is \(canonical) — "
                + "copy the fingerprint exactly as `vigil plugin trust` prints it")
    }

    static func encryptedKeyNeedsPassword() -> CryptoError {
        CryptoError(
            code: .encryptedKeyNeedsPassword,
            message: "the secret key is password-protected and no password was given — supply the key's "
                + "password (or remove it with `minisign -C -W`)")
    }

    static func wrongPassword() -> CryptoError {
        CryptoError(
            code: .wrongPassword,
            message: "the password does not decrypt the secret key (the checksum does not match) — check the "
                + "password; if it is right, the key file is damaged: restore it from a backup")
    }

    static func libraryFailure(_ what: String) -> CryptoError {
        CryptoError(
            code: .libraryFailure,
            message: "libsodium failed to \(what) — this usually means the system is out of memory; free "
                + "memory and try again")
    }
}
