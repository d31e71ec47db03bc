/// A minisign public key: an 8-byte key id and an Ed25519 key.
///
/// The file form is two lines, `untrusted comment: minisign public key <KEYID>` and the base64 of
/// 42 bytes: `"Ed"` ‖ key id (8) ‖ public key (32). The key id is chosen at random when the key is
/// generated; it only helps find the right key and is not protected by any signature.
public struct MinisignPublicKey: Sendable, Hashable {
    /// The algorithm bytes every minisign public key starts with.
    static let algorithm: [UInt8] = Array("Ed".utf8)
    static let decodedCount = 42

    /// The key id, 8 bytes in the order they are stored in the files.
    public let keyID: [UInt8]
    /// The Ed25519 key.
    public let key: Ed25519PublicKey

    /// Pairs a key id with a key. `keyID` must be 8 bytes.
    public init(keyID: [UInt8], key: Ed25519PublicKey) {
        precondition(keyID.count == 8, "a minisign key id is 8 bytes, got \(keyID.count)")
        self.keyID = keyID
        self.key = key
    }

    /// Reads a `.pub` file: an `untrusted comment:` line and the base64 line. The base64 line alone
    /// (`RW…`, as `minisign -P` takes it) is accepted too.
    ///
    /// - Throws: `CryptoError.malformedPublicKey` if the text is neither.
    public init(fileContents: String) throws(CryptoError) {
        let lines: [ArraySlice<UInt8>]
        do {
            lines = try MinisignText.lines(Array(fileContents.utf8))
        } catch {
            throw .malformedPublicKey(error.reason)
        }
        switch lines.count {
        case 1:
            try self.init(base64: String(decoding: lines[0], as: UTF8.self))
        case 2:
            guard MinisignText.text(of: lines[0], after: MinisignText.untrustedCommentPrefix) != nil else {
                throw .malformedPublicKey(
                    "the first line does not start with \"\(MinisignText.untrustedCommentPrefix)\"")
            }
            try self.init(base64: String(decoding: lines[1], as: UTF8.self))
        default:
            throw .malformedPublicKey("the file has \(lines.count) lines instead of 2")
        }
    }

    /// Reads the base64 form (`RW…`): 42 bytes, `"Ed"` ‖ key id ‖ key.
    ///
    /// - Throws: `CryptoError.malformedPublicKey` for anything else, including non-canonical base64.
    public init(base64: String) throws(CryptoError) {
        guard let bytes = Sodium.base64Decode(base64, count: Self.decodedCount) else {
            if Sodium.base64Decode(base64, count: MinisignSecretKey.decodedCount) != nil {
                throw .malformedPublicKey(
                    "this is a minisign SECRET key, not a public key; keep it private and use the `.pub` file")
            }
            throw .malformedPublicKey(
                "the key line is not the canonical base64 of \(Self.decodedCount) bytes (56 characters); "
                    + "it is truncated, extended or damaged")
        }
        guard Array(bytes.prefix(2)) == Self.algorithm else {
            throw .malformedPublicKey(
                "its algorithm id is 0x\(Digest.hex(bytes.prefix(2))) instead of \"Ed\" (Ed25519)")
        }
        self.init(keyID: Array(bytes[2..<10]), key: Ed25519PublicKey(checkedBytes: Array(bytes[10...])))
    }

    /// The base64 line (`RW…`), as `minisign -P` takes it.
    public var base64: String {
        Sodium.base64Encode(Self.algorithm + keyID + key.rawRepresentation)
    }

    /// The key id as minisign displays it: 16 upper-case hex digits of the little-endian value.
    public var keyIDHex: String {
        MinisignText.keyIDHex(keyID)
    }

    /// The `.pub` file, byte for byte as `minisign -G` writes it.
    public func fileContents() -> String {
        MinisignText.untrustedCommentPrefix + "minisign public key " + MinisignText.keyIDHex(keyID, padded: false)
            + "\n" + base64 + "\n"
    }

    /// The fingerprint Vigil records when the key is trusted.
    public var fingerprint: Fingerprint {
        Fingerprint(publicKey: key)
    }
}
