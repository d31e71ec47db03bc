/// How a host names a trusted key: `ed25519:` followed by the standard, padded base64 of the raw
/// 32-byte public key (44 characters), e.g. `ed25519:JQZlvvSz54g2JyAymbg4TFDYnSCgJgID8VRXRsRBfX4=`.
///
/// The fingerprint is the key itself, not a hash of it, so a trust record alone is enough to verify.
/// Only the canonical spelling is accepted, so two equal keys always have equal fingerprint strings.
public struct Fingerprint: Sendable, Hashable, CustomStringConvertible {
    /// The text before the base64 key.
    public static let prefix = "ed25519:"

    /// The key this fingerprint names.
    public let publicKey: Ed25519PublicKey

    /// The fingerprint of a key.
    public init(publicKey: Ed25519PublicKey) {
        self.publicKey = publicKey
    }

    /// Parses `ed25519:<base64>`.
    ///
    /// - Throws: `CryptoError.malformedFingerprint` for a wrong prefix, length or alphabet;
    ///   `CryptoError.nonCanonicalFingerprint` when the base64 decodes but is not the canonical
    ///   spelling of its 32 bytes (its final character carries non-zero spare bits).
    public init(parsing text: String) throws(CryptoError) {
        guard text.hasPrefix(Self.prefix) else {
            let hint =
                text.lowercased().hasPrefix(Self.prefix)
                ? "the prefix must be lower-case \"\(Self.prefix)\""
                : "it must start with \"\(Self.prefix)\""
            throw .malformedFingerprint("\"\(Self.shortened(text))\": \(hint)")
        }
        let body = Array(text.utf8.dropFirst(Self.prefix.utf8.count))
        let expectedCount = 44
        guard body.count == expectedCount else {
            throw .malformedFingerprint(
                "\"\(Self.shortened(text))\" has \(body.count) characters after the prefix instead of \(expectedCount)")
        }
        // 32 bytes = 43 base64 digits (the last one with 2 spare bits) and one "=".
        guard body.last == UInt8(ascii: "="), body.dropLast().allSatisfy({ Self.digitValue($0) != nil }) else {
            throw .malformedFingerprint(
                "\"\(Self.shortened(text))\" is not standard base64 (letters, digits, \"+\" and \"/\", "
                    + "ending in one \"=\")")
        }
        if let bytes = Sodium.base64Decode(String(decoding: body, as: UTF8.self), count: Ed25519PublicKey.byteCount) {
            publicKey = Ed25519PublicKey(checkedBytes: bytes)
            return
        }
        // The only way 43 valid digits and "=" fail to decode strictly is non-zero spare bits.
        var canonical = body
        let last = canonical.count - 2
        canonical[last] = Self.digits[Int(Self.digitValue(canonical[last])! & 0b11_1100)]
        let canonicalText = Self.prefix + String(decoding: canonical, as: UTF8.self)
        throw .nonCanonicalFingerprint(given: text, canonical: canonicalText)
    }

    /// `ed25519:` followed by the base64 of the key.
    public var description: String {
        Self.prefix + Sodium.base64Encode(publicKey.rawRepresentation)
    }

    private static let digits = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    private static func digitValue(_ character: UInt8) -> UInt8? {
        digits.firstIndex(of: character).map { UInt8($0) }
    }

    /// Keeps error messages short and printable when someone pastes something odd.
    private static func shortened(_ text: String) -> String {
        let printable = String(
            String.UnicodeScalarView(
                text.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : $0 }))
        return printable.count <= 80 ? printable : String(printable.prefix(77)) + "..."
    }
}
