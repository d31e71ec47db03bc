internal import Crypto
import VigilBase
internal import VigilCrypto
internal import _CryptoExtras

/// A metadata file as received: the exact bytes, the parsed tree, its canonical `signed` bytes
/// and its signatures (by key id).
public struct Envelope: Sendable {
    public let bytes: [UInt8]
    public let signed: JSONValue
    let canonicalSigned: [UInt8]
    let signatures: [String: String]

    /// Parses `bytes` strictly; refuses a key id that signs twice (spec: each key id appears once).
    public init(bytes: [UInt8], what: String) throws(TUFError) {
        let root: JSONValue
        do { root = try JSONValue.parse(bytes) } catch { throw .invalidJSON(what, error.description) }
        let f = try Fields(root, path: "$", what: what)
        signed = try f.value("signed")
        guard case .object = signed else { throw f.fail("signed", "is not an object") }
        guard case .array(let sigs) = try f.value("signatures") else { throw f.fail("signatures", "is not an array") }
        var signatures: [String: String] = [:]
        for (n, sig) in sigs.enumerated() {
            let s = try Fields(sig, path: "$.signatures[\(n)]", what: what)
            let id = try s.string("keyid")
            guard signatures[id] == nil else { throw s.fail("keyid", "signs twice (each key id may sign once)") }
            signatures[id] = try s.string("sig")
        }
        self.bytes = bytes
        self.signatures = signatures
        canonicalSigned = signed.canonicalBytes
    }

    /// Counts the distinct keys among `role.keyIDs` whose signature verifies, and throws unless
    /// they reach the threshold. Keys are told apart by their public value, not their id, so one
    /// key listed under several ids counts once.
    func verify(role: RoleKeys, keys: [String: Key], name: String, by delegator: String) throws(TUFError) {
        var counted = Set<Key>()
        for id in role.keyIDs {
            guard let key = keys[id], let sig = signatures[id], !counted.contains(key) else { continue }
            if SignatureCheck.isValid(signature: sig, key: key, message: canonicalSigned) { counted.insert(key) }
        }
        guard counted.count >= role.threshold else {
            throw .thresholdNotMet(role: name, valid: counted.count, threshold: role.threshold, by: delegator)
        }
    }
}

/// One signature check per key type and scheme the suite's repositories use. An unknown type,
/// an unreadable key or signature is simply not a valid signature.
enum SignatureCheck {
    static func isValid(signature hex: String, key: Key, message: [UInt8]) -> Bool {
        guard let sig = Hashing.unhex(hex), !sig.isEmpty else { return false }
        switch (key.keyType, key.scheme) {
        case ("ed25519", "ed25519"):
            guard let raw = Hashing.unhex(key.publicValue),
                let pub = try? Ed25519PublicKey(rawRepresentation: raw)
            else { return false }
            return pub.isValidSignature(sig, for: message)
        case ("ecdsa", "ecdsa-sha2-nistp256"), ("ecdsa-sha2-nistp256", "ecdsa-sha2-nistp256"):
            guard let pub = try? P256.Signing.PublicKey(pemRepresentation: key.publicValue),
                let s = try? P256.Signing.ECDSASignature(derRepresentation: sig)
            else { return false }
            return pub.isValidSignature(s, for: SHA256.hash(data: message))
        case ("ecdsa", "ecdsa-sha2-nistp384"), ("ecdsa-sha2-nistp384", "ecdsa-sha2-nistp384"):
            guard let pub = try? P384.Signing.PublicKey(pemRepresentation: key.publicValue),
                let s = try? P384.Signing.ECDSASignature(derRepresentation: sig)
            else { return false }
            return pub.isValidSignature(s, for: SHA384.hash(data: message))
        case ("rsa", "rsassa-pss-sha256"), ("rsa", "rsa-pkcs1v15-sha256"):
            guard let pub = try? _RSA.Signing.PublicKey(pemRepresentation: key.publicValue) else { return false }
            let s = _RSA.Signing.RSASignature(rawRepresentation: sig)
            let padding: _RSA.Signing.Padding = key.scheme == "rsassa-pss-sha256" ? .PSS : .insecurePKCS1v1_5
            return pub.isValidSignature(s, for: SHA256.hash(data: message), padding: padding)
        default:
            return false
        }
    }
}
