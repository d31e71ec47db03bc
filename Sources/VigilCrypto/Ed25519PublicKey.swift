/// An Ed25519 public key: the raw 32 bytes of RFC 8032.
public struct Ed25519PublicKey: Sendable, Hashable {
    /// The size of a raw public key in bytes.
    public static let byteCount = 32
    /// The size of an Ed25519 signature in bytes.
    public static let signatureByteCount = 64

    /// The raw 32 bytes of the key.
    public let rawRepresentation: [UInt8]

    /// Wraps the raw 32 bytes of a public key.
    ///
    /// - Throws: `CryptoError.invalidKeyLength` unless there are exactly 32 bytes. Whether the bytes
    ///   are a usable curve point is decided at verification, which rejects non-canonical and
    ///   small-order keys.
    public init(rawRepresentation: some Collection<UInt8>) throws(CryptoError) {
        let bytes = Array(rawRepresentation)
        guard bytes.count == Self.byteCount else {
            throw .invalidKeyLength(what: "an Ed25519 public key", expected: Self.byteCount, actual: bytes.count)
        }
        self.rawRepresentation = bytes
    }

    /// Wraps bytes whose length the caller has already established as 32.
    init(checkedBytes bytes: [UInt8]) {
        precondition(bytes.count == Self.byteCount)
        self.rawRepresentation = bytes
    }

    /// Whether `signature` is a valid Ed25519 signature of `message` by this key
    /// (`crypto_sign_verify_detached`: strict RFC 8032 verification plus libsodium's rejection of
    /// non-canonical and small-order encodings).
    ///
    /// Returns `false` for a signature that is not exactly 64 bytes; the length is checked here,
    /// before libsodium reads a fixed 64 bytes.
    public func isValidSignature(_ signature: some Collection<UInt8>, for message: some Collection<UInt8>) -> Bool {
        let signature = Array(signature)
        guard signature.count == Self.signatureByteCount, rawRepresentation.count == Self.byteCount else {
            return false
        }
        return Sodium.ed25519Verify(signature: signature, message: message, publicKey: rawRepresentation)
    }

    /// Checks that `signature` is a valid Ed25519 signature of `message` by this key.
    ///
    /// - Throws: `CryptoError.invalidSignatureLength` if the signature is not 64 bytes,
    ///   `CryptoError.invalidSignature` if it does not verify.
    public func verify(signature: some Collection<UInt8>, for message: some Collection<UInt8>) throws(CryptoError) {
        let signature = Array(signature)
        guard signature.count == Self.signatureByteCount else {
            throw .invalidSignatureLength(actual: signature.count)
        }
        guard isValidSignature(signature, for: message) else {
            throw CryptoError(
                code: .invalidSignature,
                message: "the Ed25519 signature does not verify with key \(Fingerprint(publicKey: self)): the "
                    + "message or the signature was changed, or another key signed it — do not use the message")
        }
    }
}
