internal import CSodium

/// The one place VigilCrypto talks to libsodium (the only file that imports `CSodium`):
/// initialisation, hashes, Ed25519, scrypt, base64, wiping and constant-time comparison. Every
/// function here initialises libsodium first.
enum Sodium {
    /// `sodium_init()` runs exactly once, lazily and thread-safely (Swift initialises a static `let`
    /// under `swift_once`). It returns 0 (done), 1 (already done) or -1 (libsodium cannot work here,
    /// e.g. no entropy source), which is fatal: no key can be generated or checked safely.
    private static let initialized: Bool = {
        let status = sodium_init()
        guard status >= 0 else {
            fatalError("VigilCrypto: sodium_init() failed (\(status)); libsodium cannot run on this system")
        }
        return true
    }()

    /// Makes sure libsodium is initialised before any other call into it.
    @inline(__always)
    static func ensureInitialized() {
        precondition(initialized)
    }

    // MARK: Hashes

    /// The size of a SHA-256 digest.
    static let sha256ByteCount = Int(crypto_hash_sha256_BYTES)
    /// The output lengths BLAKE2b (`crypto_generichash`) supports.
    static let blake2bByteCounts = Int(crypto_generichash_BYTES_MIN)...Int(crypto_generichash_BYTES_MAX)

    /// SHA-256 (`crypto_hash_sha256`).
    static func sha256(_ bytes: some Collection<UInt8>) -> [UInt8] {
        ensureInitialized()
        var output = [UInt8](repeating: 0, count: sha256ByteCount)
        withContiguousBytes(bytes) { input in
            output.withUnsafeMutableBufferPointer { out in
                _ = crypto_hash_sha256(out.baseAddress!, input.baseAddress!, UInt64(input.count))
            }
        }
        return output
    }

    /// BLAKE2b without a key (`crypto_generichash`), `outputCount` in ``blake2bByteCounts``.
    static func blake2b(_ bytes: some Collection<UInt8>, outputCount: Int) -> [UInt8] {
        precondition(blake2bByteCounts.contains(outputCount))
        ensureInitialized()
        var output = [UInt8](repeating: 0, count: outputCount)
        withContiguousBytes(bytes) { input in
            output.withUnsafeMutableBufferPointer { out in
                // Returns -1 only for out-of-range lengths, excluded above.
                _ = crypto_generichash(out.baseAddress!, outputCount, input.baseAddress, UInt64(input.count), nil, 0)
            }
        }
        return output
    }

    // MARK: Ed25519

    /// The size of libsodium's Ed25519 secret key (seed ‖ public key).
    static let ed25519SecretKeyByteCount = Int(crypto_sign_SECRETKEYBYTES)

    /// A new random key pair (`crypto_sign_keypair`): the secret key is written into `secret`
    /// (``ed25519SecretKeyByteCount`` bytes), the public key returned.
    static func ed25519Keypair(into secret: UnsafeMutableBufferPointer<UInt8>) -> [UInt8] {
        precondition(secret.count == ed25519SecretKeyByteCount)
        ensureInitialized()
        var publicBytes = [UInt8](repeating: 0, count: Int(crypto_sign_PUBLICKEYBYTES))
        publicBytes.withUnsafeMutableBufferPointer { pk in
            _ = crypto_sign_keypair(pk.baseAddress!, secret.baseAddress!)
        }
        return publicBytes
    }

    /// The key pair of a 32-byte seed (`crypto_sign_seed_keypair`), written like ``ed25519Keypair(into:)``.
    static func ed25519Keypair(seed: [UInt8], into secret: UnsafeMutableBufferPointer<UInt8>) -> [UInt8] {
        precondition(secret.count == ed25519SecretKeyByteCount && seed.count == Int(crypto_sign_SEEDBYTES))
        ensureInitialized()
        var publicBytes = [UInt8](repeating: 0, count: Int(crypto_sign_PUBLICKEYBYTES))
        publicBytes.withUnsafeMutableBufferPointer { pk in
            seed.withUnsafeBufferPointer { seed in
                _ = crypto_sign_seed_keypair(pk.baseAddress!, secret.baseAddress!, seed.baseAddress!)
            }
        }
        return publicBytes
    }

    /// The detached Ed25519 signature of `message` (`crypto_sign_detached`; deterministic).
    static func ed25519Sign(_ message: some Collection<UInt8>, secret: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        precondition(secret.count == ed25519SecretKeyByteCount)
        ensureInitialized()
        var signature = [UInt8](repeating: 0, count: Int(crypto_sign_BYTES))
        withContiguousBytes(message) { message in
            signature.withUnsafeMutableBufferPointer { sig in
                _ = crypto_sign_detached(
                    sig.baseAddress!, nil, message.baseAddress, UInt64(message.count), secret.baseAddress!)
            }
        }
        return signature
    }

    /// Strict verification (`crypto_sign_verify_detached`) of a 64-byte signature by a 32-byte key.
    static func ed25519Verify(signature: [UInt8], message: some Collection<UInt8>, publicKey: [UInt8]) -> Bool {
        precondition(signature.count == Int(crypto_sign_BYTES) && publicKey.count == Int(crypto_sign_PUBLICKEYBYTES))
        ensureInitialized()
        return withContiguousBytes(message) { message in
            signature.withUnsafeBufferPointer { sig in
                publicKey.withUnsafeBufferPointer { key in
                    crypto_sign_verify_detached(
                        sig.baseAddress!, message.baseAddress, UInt64(message.count), key.baseAddress!)
                        == 0
                }
            }
        }
    }

    // MARK: Key derivation

    /// scrypt (`crypto_pwhash_scryptsalsa208sha256`) into `output`; false when libsodium fails.
    static func scrypt(
        into output: inout [UInt8], password: [UInt8], salt: [UInt8], operationsLimit: UInt64, memoryLimit: UInt64
    ) -> Bool {
        ensureInitialized()
        let status = output.withUnsafeMutableBufferPointer { out in
            withContiguousBytes(password) { pw in
                pw.withMemoryRebound(to: CChar.self) { pw in
                    salt.withUnsafeBufferPointer { salt in
                        crypto_pwhash_scryptsalsa208sha256(
                            out.baseAddress!, UInt64(out.count), pw.baseAddress!, UInt64(pw.count), salt.baseAddress!,
                            operationsLimit, Int(memoryLimit))
                    }
                }
            }
        }
        return status == 0
    }

    // MARK: Base64 (standard alphabet, padded: the encoding minisign and our fingerprints use)

    /// Encodes bytes as standard, padded base64 (`sodium_bin2base64`, original variant).
    static func base64Encode(_ bytes: some Collection<UInt8>) -> String {
        ensureInitialized()
        return withContiguousBytes(bytes) { input in
            let variant = Int32(sodium_base64_VARIANT_ORIGINAL)
            // Includes the terminating NUL.
            let capacity = sodium_base64_encoded_len(input.count, variant)
            var output = [CChar](repeating: 0, count: capacity)
            output.withUnsafeMutableBufferPointer { out in
                _ = sodium_bin2base64(out.baseAddress!, capacity, input.baseAddress!, input.count, variant)
            }
            return String(decoding: output.prefix(capacity - 1).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// Decodes standard, padded base64 that must yield exactly `count` bytes.
    ///
    /// `sodium_base642bin` is strict: no whitespace, padding required, no trailing characters and
    /// no non-zero leftover bits. The result is also re-encoded and compared with the input, so only
    /// the one canonical spelling of the bytes is accepted. Returns `nil` on any deviation.
    static func base64Decode(_ text: some StringProtocol, count: Int) -> [UInt8]? {
        ensureInitialized()
        let input = Array(text.utf8)
        // A canonical encoding of `count` bytes has exactly this many characters; checking it first
        // also bounds the work on hostile input.
        guard input.count == (count + 2) / 3 * 4, count > 0 else { return nil }
        var output = [UInt8](repeating: 0, count: count)
        var decodedCount = 0
        let status = input.withUnsafeBufferPointer { inPtr in
            inPtr.withMemoryRebound(to: CChar.self) { chars in
                output.withUnsafeMutableBufferPointer { out in
                    sodium_base642bin(
                        out.baseAddress!, count, chars.baseAddress!, chars.count, nil, &decodedCount, nil,
                        Int32(sodium_base64_VARIANT_ORIGINAL))
                }
            }
        }
        guard status == 0, decodedCount == count, base64Encode(output).utf8.elementsEqual(input) else {
            return nil
        }
        return output
    }

    // MARK: Memory

    /// Overwrites `buffer` with zeros in a way the compiler may not optimise away (`sodium_memzero`).
    static func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        sodium_memzero(base, buffer.count)
    }

    /// Wipes an array that held secret bytes.
    static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { wipe($0) }
    }

    /// Constant-time equality of two byte strings of the same length (`sodium_memcmp`).
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBytes { pa in
            b.withUnsafeBytes { pb in sodium_memcmp(pa.baseAddress, pb.baseAddress, a.count) == 0 }
        }
    }

    /// Random bytes from libsodium's CSPRNG (`randombytes_buf`, which cannot fail once initialised).
    static func randomBytes(count: Int) -> [UInt8] {
        ensureInitialized()
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, count) }
        return bytes
    }
}

/// Calls `body` with the bytes of `collection` in contiguous memory, with a non-nil base address
/// even when the collection is empty (C functions get a valid pointer with a length of 0).
func withContiguousBytes<R>(
    _ collection: some Collection<UInt8>, _ body: (UnsafeBufferPointer<UInt8>) -> R
) -> R {
    if collection.isEmpty {
        var placeholder: UInt8 = 0
        return withUnsafePointer(to: &placeholder) { body(UnsafeBufferPointer(start: $0, count: 0)) }
    }
    if let result = collection.withContiguousStorageIfAvailable(body) {
        return result
    }
    return Array(collection).withUnsafeBufferPointer(body)
}
