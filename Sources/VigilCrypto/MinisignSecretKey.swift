/// A minisign secret key: a key id and an Ed25519 signing key.
///
/// The file form is two lines, an untrusted comment and the base64 of 158 bytes:
/// `"Ed"` ‖ kdf (`"Sc"` = scrypt, or `00 00` = unencrypted) ‖ `"B2"` ‖ salt (32) ‖ opslimit (LE 64)
/// ‖ memlimit (LE 64) ‖ [key id (8) ‖ libsodium secret key (64) ‖ checksum (32)], where the checksum
/// is BLAKE2b-256 of `"Ed"` ‖ key id ‖ secret key and, for `"Sc"`, the bracketed 104 bytes are
/// XORed with scrypt(password, salt, opslimit, memlimit).
public struct MinisignSecretKey: Sendable {
    /// The key id, 8 bytes as stored.
    public let keyID: [UInt8]
    /// The Ed25519 signing key.
    public let secretKey: Ed25519SecretKey

    /// The comment `fileContents()` writes on the first line.
    static let fileComment = "vigil unencrypted secret key, keep it private"
    static let decodedCount = 158
    private static let signatureAlgorithm: [UInt8] = Array("Ed".utf8)
    private static let scrypt: [UInt8] = Array("Sc".utf8)
    private static let unencrypted: [UInt8] = [0, 0]
    private static let checksumAlgorithm: [UInt8] = Array("B2".utf8)
    /// Limits on the key-derivation cost read from a file; minisign writes at most 1 GiB and
    /// 2^25 operations. Larger values would only let a damaged file exhaust memory.
    private static let maxMemoryLimit: UInt64 = 4 << 30
    private static let maxOperationsLimit = UInt64(UInt32.max)

    /// Pairs a key id (8 bytes) with a signing key.
    public init(keyID: [UInt8], secretKey: Ed25519SecretKey) {
        precondition(keyID.count == 8, "a minisign key id is 8 bytes, got \(keyID.count)")
        self.keyID = keyID
        self.secretKey = secretKey
    }

    /// A new key pair with a random key id.
    public static func generate() -> MinisignSecretKey {
        MinisignSecretKey(keyID: Sodium.randomBytes(count: 8), secretKey: .generate())
    }

    /// The public half, with the same key id.
    public var publicKey: MinisignPublicKey {
        MinisignPublicKey(keyID: keyID, key: secretKey.publicKey)
    }

    /// Reads a minisign secret key file: unencrypted (kdf `00 00`, as `minisign -G -W` and
    /// `vigil plugin keygen` write) or password-protected with scrypt (kdf `"Sc"`).
    ///
    /// For an encrypted key the password is required and checked through the key's checksum. For an
    /// unencrypted key the password is ignored; its checksum is verified unless it is all zeros, which
    /// is what minisign 0.11 writes for such keys. In every case the public half of the key must
    /// belong to its secret half.
    ///
    /// - Throws: `CryptoError.malformedSecretKey`, `.encryptedKeyNeedsPassword`, `.wrongPassword`,
    ///   or `.libraryFailure` if the key derivation cannot allocate its memory.
    public init(fileContents: String, password: String? = nil) throws(CryptoError) {
        let lines: [ArraySlice<UInt8>]
        do {
            lines = try MinisignText.lines(Array(fileContents.utf8))
        } catch {
            throw .malformedSecretKey(error.reason)
        }
        guard lines.count == 2 else {
            throw .malformedSecretKey("the file has \(lines.count) lines instead of 2")
        }
        guard MinisignText.text(of: lines[0], after: MinisignText.untrustedCommentPrefix) != nil else {
            throw .malformedSecretKey("the first line does not start with \"\(MinisignText.untrustedCommentPrefix)\"")
        }
        guard var raw = Sodium.base64Decode(String(decoding: lines[1], as: UTF8.self), count: Self.decodedCount)
        else {
            if Sodium.base64Decode(String(decoding: lines[1], as: UTF8.self), count: MinisignPublicKey.decodedCount)
                != nil
            {
                throw .malformedSecretKey("this is a minisign public key; a secret key file is needed to sign")
            }
            throw .malformedSecretKey(
                "the key line is not the canonical base64 of \(Self.decodedCount) bytes; it is truncated or damaged")
        }
        defer { Sodium.wipe(&raw) }
        guard Array(raw[0..<2]) == Self.signatureAlgorithm else {
            throw .malformedSecretKey("its algorithm id is 0x\(Digest.hex(raw[0..<2])) instead of \"Ed\" (Ed25519)")
        }
        guard Array(raw[4..<6]) == Self.checksumAlgorithm else {
            throw .malformedSecretKey(
                "its checksum algorithm is 0x\(Digest.hex(raw[4..<6])) instead of \"B2\" (BLAKE2b)")
        }
        let kdf = Array(raw[2..<4])
        let encrypted: Bool
        switch kdf {
        case Self.scrypt: encrypted = true
        case Self.unencrypted: encrypted = false
        default:
            throw .malformedSecretKey(
                "its key derivation id is 0x\(Digest.hex(kdf)); only \"Sc\" (scrypt) and none are supported")
        }
        if encrypted {
            guard let password else { throw .encryptedKeyNeedsPassword() }
            try Self.decrypt(&raw, password: password)
        }
        let keyID = Array(raw[54..<62])
        var secret = Array(raw[62..<126])
        defer { Sodium.wipe(&secret) }
        let storedChecksum = Array(raw[126..<158])
        let checksum = Self.checksum(keyID: keyID, secret: secret)
        if !Sodium.constantTimeEqual(checksum, storedChecksum) {
            if encrypted { throw .wrongPassword() }
            if storedChecksum.contains(where: { $0 != 0 }) {
                throw .malformedSecretKey("its checksum does not match its contents (the file is damaged)")
            }
        }
        self.init(keyID: keyID, secretKey: try Ed25519SecretKey(libsodiumSecretKey: secret))
    }

    /// The key as an unencrypted minisign secret key file (kdf `00 00`, zero salt and limits, a
    /// correct checksum), which `minisign -S -s FILE` uses without asking for a password.
    /// Store it with mode 0600.
    public func fileContents() -> String {
        var raw = Self.signatureAlgorithm + Self.unencrypted + Self.checksumAlgorithm
        raw += [UInt8](repeating: 0, count: 32 + 8 + 8)  // salt, opslimit, memlimit
        raw += keyID
        secretKey.storage.withUnsafeBytes { raw.append(contentsOf: $0) }
        var secret = Array(raw[62..<126])
        raw += Self.checksum(keyID: keyID, secret: secret)
        Sodium.wipe(&secret)
        let text = Sodium.base64Encode(raw)
        Sodium.wipe(&raw)
        return MinisignText.untrustedCommentPrefix + Self.fileComment + "\n" + text + "\n"
    }

    /// BLAKE2b-256 of `"Ed"` ‖ key id ‖ libsodium secret key.
    private static func checksum(keyID: [UInt8], secret: [UInt8]) -> [UInt8] {
        var input = signatureAlgorithm + keyID + secret
        defer { Sodium.wipe(&input) }
        return Digest.blake2b(input, outputCount: 32)
    }

    /// XORs bytes 54..<158 (key id, secret key, checksum) with the scrypt stream for `password`.
    private static func decrypt(_ raw: inout [UInt8], password: String) throws(CryptoError) {
        let operationsLimit = MinisignText.littleEndianUInt64(raw[38..<46])
        let memoryLimit = MinisignText.littleEndianUInt64(raw[46..<54])
        guard operationsLimit <= maxOperationsLimit, memoryLimit <= maxMemoryLimit else {
            throw .malformedSecretKey(
                "its key derivation asks for \(operationsLimit) operations and \(memoryLimit) bytes of memory, "
                    + "more than minisign ever writes (the file is damaged)")
        }
        let salt = Array(raw[6..<38])
        var stream = [UInt8](repeating: 0, count: 104)
        defer { Sodium.wipe(&stream) }
        var passwordBytes = Array(password.utf8)
        defer { Sodium.wipe(&passwordBytes) }
        let derived = Sodium.scrypt(
            into: &stream, password: passwordBytes, salt: salt, operationsLimit: operationsLimit,
            memoryLimit: memoryLimit)
        guard derived else { throw .libraryFailure("derive the key from the password (scrypt)") }
        for index in 0..<104 {
            raw[54 + index] ^= stream[index]
        }
    }
}
