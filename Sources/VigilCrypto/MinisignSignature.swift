/// A minisign signature file (`.minisig`), prehashed form only when verifying.
///
/// Four lines:
/// ```
/// untrusted comment: <text, not protected>
/// base64( algorithm (2) ‖ key id (8) ‖ Ed25519 signature (64) )
/// trusted comment: <text>
/// base64( global signature (64) )
/// ```
/// For algorithm `"ED"` the signature is pure Ed25519 over BLAKE2b-512 of the file; the global
/// signature is Ed25519 over signature ‖ trusted comment, so the trusted comment cannot be changed.
/// The algorithm id and key id are not signed.
public struct MinisignSignature: Sendable, Hashable {
    /// The only algorithm Vigil verifies: Ed25519 over BLAKE2b-512 of the file.
    static let prehashed: [UInt8] = Array("ED".utf8)
    /// minisign's legacy algorithm: Ed25519 over the raw file. Refused (see `verify`).
    static let legacy: [UInt8] = Array("Ed".utf8)
    /// What `sign` writes on the first line unless told otherwise.
    public static let defaultUntrustedComment = "signature from a vigil signing key"

    /// The algorithm id, 2 bytes (`"ED"` for prehashed, `"Ed"` for legacy).
    public let algorithm: [UInt8]
    /// The signer's key id, 8 bytes as stored. A hint only: it is not signed.
    public let keyID: [UInt8]
    /// The Ed25519 signature, 64 bytes.
    public let signature: [UInt8]
    /// The first line's text after `untrusted comment: `, raw. Anyone can change it.
    public let untrustedComment: String
    /// The third line's text after `trusted comment: `, raw (sanitise it before display).
    public let trustedComment: String
    /// Ed25519 over `signature ‖ trustedComment`, 64 bytes.
    public let globalSignature: [UInt8]

    init(
        algorithm: [UInt8], keyID: [UInt8], signature: [UInt8], untrustedComment: String, trustedComment: String,
        globalSignature: [UInt8]
    ) {
        self.algorithm = algorithm
        self.keyID = keyID
        self.signature = signature
        self.untrustedComment = untrustedComment
        self.trustedComment = trustedComment
        self.globalSignature = globalSignature
    }

    /// Parses a signature file without verifying it.
    ///
    /// The file must be UTF-8 and have exactly four lines (CR LF line ends and one final line break
    /// are accepted; a carriage return inside a line is not), the two comment prefixes, and base64
    /// lines that decode to exactly 74 and 64 bytes. Comments are kept as they are. Cap the file's
    /// size before reading it (minisign's own limit is about 9 KiB).
    ///
    /// - Throws: `CryptoError.malformedSignature` saying which rule the file breaks.
    public init(fileContents: some Collection<UInt8>) throws(CryptoError) {
        let bytes = Array(fileContents)
        guard String(validating: bytes, as: UTF8.self) != nil else {
            throw .malformedSignature("it is not UTF-8 text")
        }
        let lines: [ArraySlice<UInt8>]
        do {
            lines = try MinisignText.lines(bytes)
        } catch {
            throw .malformedSignature(error.reason)
        }
        guard lines.count == 4 else {
            throw .malformedSignature("it has \(lines.count) lines instead of 4")
        }
        guard let untrusted = MinisignText.text(of: lines[0], after: MinisignText.untrustedCommentPrefix) else {
            throw .malformedSignature("line 1 does not start with \"\(MinisignText.untrustedCommentPrefix)\"")
        }
        guard let trusted = MinisignText.text(of: lines[2], after: MinisignText.trustedCommentPrefix) else {
            throw .malformedSignature("line 3 does not start with \"\(MinisignText.trustedCommentPrefix)\"")
        }
        guard let body = Sodium.base64Decode(String(decoding: lines[1], as: UTF8.self), count: 74) else {
            throw .malformedSignature(
                "line 2 is not the canonical base64 of 74 bytes; it is truncated, extended or damaged")
        }
        guard let global = Sodium.base64Decode(String(decoding: lines[3], as: UTF8.self), count: 64) else {
            throw .malformedSignature(
                "line 4 is not the canonical base64 of 64 bytes; it is truncated, extended or damaged")
        }
        self.init(
            algorithm: Array(body[0..<2]), keyID: Array(body[2..<10]), signature: Array(body[10..<74]),
            untrustedComment: String(decoding: untrusted, as: UTF8.self),
            trustedComment: String(decoding: trusted, as: UTF8.self), globalSignature: global)
    }

    /// Signs `message` the way `minisign -S` does by default: algorithm `"ED"`, Ed25519 over
    /// BLAKE2b-512 of the message, and a global signature over the trusted comment.
    ///
    /// - Throws: `CryptoError.invalidComment` if a comment contains a control character other than
    ///   tab (a line break would corrupt the file) or is longer than minisign can read back
    ///   (8173 bytes for the trusted comment, 1003 for the untrusted one).
    public static func sign(
        _ message: some Collection<UInt8>, with key: MinisignSecretKey, trustedComment: String,
        untrustedComment: String = defaultUntrustedComment
    ) throws(CryptoError) -> MinisignSignature {
        try MinisignText.checkComment(
            trustedComment, which: "trusted comment", maxBytes: MinisignText.maxTrustedCommentBytes)
        try MinisignText.checkComment(
            untrustedComment, which: "untrusted comment", maxBytes: MinisignText.maxUntrustedCommentBytes)
        let signature = key.secretKey.signature(for: Digest.blake2b512(message))
        let global = key.secretKey.signature(for: signature + Array(trustedComment.utf8))
        return MinisignSignature(
            algorithm: prehashed, keyID: key.keyID, signature: signature, untrustedComment: untrustedComment,
            trustedComment: trustedComment, globalSignature: global)
    }

    /// The signature file, laid out as minisign writes it.
    public func fileContents() -> String {
        MinisignText.untrustedCommentPrefix + untrustedComment + "\n"
            + Sodium.base64Encode(algorithm + keyID + signature) + "\n"
            + MinisignText.trustedCommentPrefix + trustedComment + "\n"
            + Sodium.base64Encode(globalSignature) + "\n"
    }

    /// The signer's key id as minisign displays it (16 upper-case hex digits).
    public var keyIDHex: String {
        MinisignText.keyIDHex(keyID)
    }

    /// Verifies the signature of `message` with `key`, in this order:
    /// 1. the algorithm must be `"ED"`: legacy `"Ed"` is refused, because the algorithm id is not
    ///    signed and flipping `ED` to `Ed` turns a valid signature into a forgery over another file;
    /// 2. the signature must verify over BLAKE2b-512 of the exact bytes of `message`;
    /// 3. the global signature must verify over the signature and the trusted comment.
    ///
    /// - Throws: `CryptoError.unsupportedAlgorithm`, `.invalidSignature` or `.invalidGlobalSignature`.
    public func verify(_ message: some Collection<UInt8>, with key: Ed25519PublicKey) throws(CryptoError) {
        try verify(message, with: key, expectedKeyID: nil)
    }

    /// Like `verify(_:with:)` for an Ed25519 key, and when the signature does not verify and was made
    /// by a key with another key id, reports `CryptoError.keyIDMismatch` naming both key ids. The key
    /// id never decides acceptance: it is not signed.
    public func verify(_ message: some Collection<UInt8>, with key: MinisignPublicKey) throws(CryptoError) {
        try verify(message, with: key.key, expectedKeyID: key.keyID)
    }

    private func verify(
        _ message: some Collection<UInt8>, with key: Ed25519PublicKey, expectedKeyID: [UInt8]?
    ) throws(CryptoError) {
        guard algorithm == Self.prehashed else {
            throw algorithm == Self.legacy ? .legacyAlgorithm() : .unknownAlgorithm(algorithm)
        }
        guard key.isValidSignature(signature, for: Digest.blake2b512(message)) else {
            if let expectedKeyID, expectedKeyID != keyID {
                throw .keyIDMismatch(signatureKeyID: keyIDHex, publicKeyID: MinisignText.keyIDHex(expectedKeyID))
            }
            throw .invalidSignature(signatureKeyID: keyIDHex)
        }
        guard key.isValidSignature(globalSignature, for: signature + Array(trustedComment.utf8)) else {
            throw .invalidGlobalSignature()
        }
    }
}
