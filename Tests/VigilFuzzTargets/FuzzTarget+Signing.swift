import VigilCore
import VigilCrypto

extension FuzzTarget {
    static func minisignKey(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let key = try? MinisignPublicKey(fileContents: text) else { return }
        let printed = key.fileContents()
        guard let again = try? MinisignPublicKey(fileContents: printed) else {
            preconditionFailure("a parsed public key prints as a file that does not parse: \(printed)")
        }
        precondition(again == key, "a public key changed on the round trip")
        _ = Fingerprint(publicKey: key.key).description
    }

    static func minisignSignature(_ bytes: [UInt8]) {
        guard let signature = try? MinisignSignature(fileContents: bytes) else { return }
        let printed = signature.fileContents()
        guard (try? MinisignSignature(fileContents: Array(printed.utf8))) != nil else {
            preconditionFailure("a parsed signature prints as a file that does not parse: \(printed)")
        }
        // Verification with a key that did not sign: must refuse, never trap.
        let key = MinisignSecretKey.fuzzing.publicKey
        precondition((try? signature.verify(bytes, with: key)) == nil, "an unrelated key verified a fuzzed signature")
    }

    static func manifest(_ bytes: [UInt8]) {
        // The bytes reach the decoder as a signed manifest's would: a compromised publisher's key
        // signs anything, so the decoder is the boundary.
        guard let manifest = try? ManifestDecoder.decode(bytes, plugin: "fuzz") else { return }
        for resource in manifest.resources {
            precondition(
                ManifestDecoder.resourcePathProblem(resource.path) == nil, "the decoder let an unsafe path through")
        }
    }
}

extension MinisignSecretKey {
    /// One key for the whole run (generating a key per input would measure libsodium).
    static let fuzzing = MinisignSecretKey.generate()
}
