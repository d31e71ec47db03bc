/// Hash functions (through libsodium) and hex encoding.
public enum Digest {
    /// BLAKE2b with a 64-byte output and no key (`crypto_generichash`), the hash minisign signs.
    public static func blake2b512(_ bytes: some Collection<UInt8>) -> [UInt8] {
        blake2b(bytes, outputCount: 64)
    }

    /// SHA-256 (`crypto_hash_sha256`), used for manifest resource digests.
    public static func sha256(_ bytes: some Collection<UInt8>) -> [UInt8] {
        Sodium.sha256(bytes)
    }

    /// Lower-case hexadecimal, two digits per byte.
    public static func hex(_ bytes: some Collection<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// BLAKE2b without a key, with an output length libsodium supports (16…64 bytes).
    static func blake2b(_ bytes: some Collection<UInt8>, outputCount: Int) -> [UInt8] {
        Sodium.blake2b(bytes, outputCount: outputCount)
    }
}
