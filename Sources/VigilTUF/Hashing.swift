internal import Crypto
import VigilBase
internal import VigilCrypto

/// SHA-2 digests for TUF's `hashes` fields, through swift-crypto.
package enum Hashing {
    /// The algorithms this client checks; a listed algorithm outside this set fails the check.
    static let supported: Set<String> = ["sha256", "sha384", "sha512"]

    static func sha256(_ bytes: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: bytes)) }

    static func digest(_ algorithm: String, _ bytes: [UInt8]) -> [UInt8]? {
        switch algorithm {
        case "sha256": return Array(SHA256.hash(data: bytes))
        case "sha384": return Array(SHA384.hash(data: bytes))
        case "sha512": return Array(SHA512.hash(data: bytes))
        default: return nil
        }
    }

    static func hex(_ bytes: [UInt8]) -> String { Digest.hex(bytes) }

    package static func unhex(_ text: String) -> [UInt8]? {
        let b = Array(text.utf8)
        guard b.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(b.count / 2)
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: return c - 0x30
            case 0x61...0x66: return c - 0x61 + 10
            case 0x41...0x46: return c - 0x41 + 10
            default: return nil
            }
        }
        var i = 0
        while i < b.count {
            guard let hi = nibble(b[i]), let lo = nibble(b[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    /// Checks `bytes` against a declared length and hashes: every listed hash must be of a supported
    /// algorithm and match (an unknown algorithm is a failure, not a skip). `metadata`: the bytes
    /// are a metadata file its trusted parent names, so a difference is ``TUFErrorCode/mixedMetadata``.
    static func verify(
        _ bytes: [UInt8], length: Int64?, hashes: [String: String]?, what: String, metadata: Bool = false
    ) throws(TUFError) {
        func differs(_ what: String, _ reason: String) -> TUFError {
            metadata ? .mixed(what, reason) : .mismatch(what, reason)
        }
        if let length, Int64(bytes.count) != length {
            throw differs(what, "is \(bytes.count) bytes, the signed metadata says \(length)")
        }
        for (algorithm, expected) in (hashes ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard let actual = digest(algorithm, bytes) else {
                throw .mismatch(
                    what,
                    "is listed with a hash algorithm this client does not support "
                        + "(\(JSONValue.string(algorithm).canonicalText); supported: sha256, sha384, sha512)")
            }
            guard let want = unhex(expected), want == actual else {
                throw differs(what, "does not have the \(algorithm) hash the signed metadata lists")
            }
        }
    }
}
