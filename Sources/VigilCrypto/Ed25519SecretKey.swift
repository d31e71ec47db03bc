/// An Ed25519 signing key. Its secret bytes live in one heap buffer that is wiped
/// (`sodium_memzero`) when the last copy of the key is released.
public struct Ed25519SecretKey: Sendable {
    /// The size of a seed in bytes.
    public static let seedByteCount = 32

    /// libsodium's 64-byte secret key: seed ‖ public key.
    let storage: SecretBytes
    /// The matching public key.
    public let publicKey: Ed25519PublicKey

    /// A new random key pair (`crypto_sign_keypair`).
    public static func generate() -> Ed25519SecretKey {
        var publicBytes: [UInt8] = []
        let storage = SecretBytes(count: Sodium.ed25519SecretKeyByteCount) { secret in
            publicBytes = Sodium.ed25519Keypair(into: secret)
        }
        return Ed25519SecretKey(storage: storage, publicKey: Ed25519PublicKey(checkedBytes: publicBytes))
    }

    /// The key pair for a 32-byte seed (`crypto_sign_seed_keypair`), as in RFC 8032's test vectors.
    ///
    /// - Throws: `CryptoError.invalidKeyLength` unless the seed is exactly 32 bytes.
    public init(seed: some Collection<UInt8>) throws(CryptoError) {
        var seedBytes = Array(seed)
        defer { Sodium.wipe(&seedBytes) }
        guard seedBytes.count == Self.seedByteCount else {
            throw .invalidKeyLength(what: "an Ed25519 seed", expected: Self.seedByteCount, actual: seedBytes.count)
        }
        self = Self.derive(fromSeed: seedBytes)
    }

    /// Restores a key from libsodium's 64-byte form (seed ‖ public key), as stored in minisign key
    /// files, and checks that the public half really belongs to the seed.
    init(libsodiumSecretKey bytes: [UInt8]) throws(CryptoError) {
        guard bytes.count == Sodium.ed25519SecretKeyByteCount else {
            throw .malformedSecretKey("the Ed25519 secret key is \(bytes.count) bytes instead of 64")
        }
        var seed = Array(bytes.prefix(Self.seedByteCount))
        defer { Sodium.wipe(&seed) }
        let derived = Self.derive(fromSeed: seed)
        guard derived.publicKey.rawRepresentation == Array(bytes.suffix(Ed25519PublicKey.byteCount)) else {
            throw .malformedSecretKey("its public half does not belong to its secret half (the file is damaged)")
        }
        self = derived
    }

    private init(storage: SecretBytes, publicKey: Ed25519PublicKey) {
        self.storage = storage
        self.publicKey = publicKey
    }

    private static func derive(fromSeed seed: [UInt8]) -> Ed25519SecretKey {
        precondition(seed.count == seedByteCount)
        var publicBytes: [UInt8] = []
        let storage = SecretBytes(count: Sodium.ed25519SecretKeyByteCount) { secret in
            publicBytes = Sodium.ed25519Keypair(seed: seed, into: secret)
        }
        return Ed25519SecretKey(storage: storage, publicKey: Ed25519PublicKey(checkedBytes: publicBytes))
    }

    /// The Ed25519 signature (64 bytes) of `message` (`crypto_sign_detached`; deterministic).
    public func signature(for message: some Collection<UInt8>) -> [UInt8] {
        storage.withUnsafeBytes { secret in Sodium.ed25519Sign(message, secret: secret) }
    }
}

/// A fixed-size heap buffer for secret bytes, written once at creation and wiped with
/// `sodium_memzero` before it is freed. Immutable after `init`, hence safe to share across threads.
final class SecretBytes: @unchecked Sendable {
    private let buffer: UnsafeMutableBufferPointer<UInt8>

    init(count: Int, initialize: (UnsafeMutableBufferPointer<UInt8>) -> Void) {
        buffer = .allocate(capacity: count)
        buffer.initialize(repeating: 0)
        initialize(buffer)
    }

    var count: Int { buffer.count }

    func withUnsafeBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        body(UnsafeBufferPointer(buffer))
    }

    deinit {
        Sodium.wipe(UnsafeMutableRawBufferPointer(buffer))
        buffer.deallocate()
    }
}
