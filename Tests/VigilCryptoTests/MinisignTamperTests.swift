import Foundation
import Testing
import VigilCrypto

/// One change at a time to a valid minisign signature (made by the real minisign), and the exact
/// refusal each one must produce.
@Suite("minisign tamper tests")
struct MinisignTamperTests {
    let publicKey: MinisignPublicKey
    let message: [UInt8]
    let file: [UInt8]
    let lines: SignatureLines

    init() throws {
        publicKey = try Golden.publicKey()
        message = try Golden.message()
        file = try Golden.signatureFile()
        lines = SignatureLines(file)
    }

    /// Parses `lines` and verifies them against the golden message with the golden key, both as a
    /// minisign key and as a bare Ed25519 key.
    func verify(_ lines: SignatureLines, message: [UInt8]? = nil, with key: MinisignPublicKey? = nil) throws {
        let signature = try MinisignSignature(fileContents: lines.file)
        try signature.verify(message ?? self.message, with: key ?? publicKey)
    }

    @Test func untouchedGoldenSignatureVerifies() throws {
        try verify(lines)
        try MinisignSignature(fileContents: file).verify(message, with: publicKey.key)
    }

    @Test func everyFlippedByteOfTheSignatureLineIsCaught() throws {
        #expect(lines.body.count == 74)
        for index in lines.body.indices {
            var tampered = lines
            tampered.body = lines.body.flipping(index)
            switch index {
            case 0..<2:
                expectError(.unsupportedAlgorithm, "algorithm byte \(index)") { try verify(tampered) }
            case 2..<10:
                // The key id is not signed and only names the key: a changed id alone still verifies
                // with the right key. With the key's own id it reads as "made by another key" only
                // when the signature also fails (see wrongKeyNamesBothKeyIDs).
                try verify(tampered)
            default:
                expectError(.invalidSignature, "signature byte \(index)") {
                    try MinisignSignature(fileContents: tampered.file).verify(message, with: publicKey.key)
                }
                expectError(.invalidSignature, "signature byte \(index), minisign key") { try verify(tampered) }
            }
        }
    }

    @Test func everyFlippedByteOfTheGlobalSignatureIsCaught() throws {
        for index in lines.global.indices {
            var tampered = lines
            tampered.global = lines.global.flipping(index)
            expectError(.invalidGlobalSignature, "global signature byte \(index)") { try verify(tampered) }
        }
    }

    @Test func everyChangedByteOfTheTrustedCommentIsCaught() throws {
        let comment = Array(lines.trusted.utf8)
        for index in comment.indices {
            var tampered = lines
            tampered.trusted = String(decoding: comment.flipping(index), as: UTF8.self)
            expectError(.invalidGlobalSignature, "trusted comment byte \(index)") { try verify(tampered) }
        }
        var appended = lines
        appended.trusted += " "
        expectError(.invalidGlobalSignature, "a trailing space") { try verify(appended) }
        var truncated = lines
        truncated.trusted = String(lines.trusted.dropLast())
        expectError(.invalidGlobalSignature, "truncated") { try verify(truncated) }
    }

    @Test func theUntrustedCommentIsNotProtected() throws {
        var changed = lines
        changed.untrusted = "anyone may write here"
        try verify(changed)
    }

    @Test func everyFlippedByteOfTheMessageIsCaught() throws {
        for index in message.indices {
            expectError(.invalidSignature, "message byte \(index)") {
                try verify(lines, message: message.flipping(index))
            }
        }
        expectError(.invalidSignature, "message extended") { try verify(lines, message: message + [0x0a]) }
        expectError(.invalidSignature, "message truncated") { try verify(lines, message: Array(message.dropLast())) }
        expectError(.invalidSignature, "empty message") { try verify(lines, message: []) }
    }

    @Test func everyFlippedByteOfThePublicKeyIsCaught() throws {
        for index in publicKey.key.rawRepresentation.indices {
            let otherKey = try Ed25519PublicKey(rawRepresentation: publicKey.key.rawRepresentation.flipping(index))
            expectError(.invalidSignature, "public key byte \(index)") {
                try verify(lines, with: MinisignPublicKey(keyID: publicKey.keyID, key: otherKey))
            }
        }
    }

    @Test func edFlippedToLegacyIsRefusedEvenThoughItWouldBeAValidLegacySignature() throws {
        var flipped = lines
        flipped.body[1] = UInt8(ascii: "d")  // "ED" -> "Ed"
        let forged = try MinisignSignature(fileContents: flipped.file)
        #expect(forged.algorithm == Array("Ed".utf8))
        // The forgery minisign#104 describes: as a legacy signature, it is a valid Ed25519
        // signature of a different "file" — the 64-byte BLAKE2b hash of the real message.
        let hashFile = Digest.blake2b512(message)
        #expect(publicKey.key.isValidSignature(forged.signature, for: hashFile))
        let error = expectError(.unsupportedAlgorithm) { try forged.verify(hashFile, with: publicKey) }
        #expect(error?.message.contains("legacy") == true)
        #expect(error?.message.contains("flipping") == true)
        expectError(.unsupportedAlgorithm) { try forged.verify(message, with: publicKey.key) }
    }

    @Test func realLegacySignatureFromMinisignIsRefused() throws {
        let legacy = try MinisignSignature(fileContents: Golden.legacySignatureFile())
        #expect(legacy.algorithm == Array("Ed".utf8))
        // It is genuine: pure Ed25519 over the message bytes, which Vigil still refuses.
        #expect(publicKey.key.isValidSignature(legacy.signature, for: message))
        expectError(.unsupportedAlgorithm) { try legacy.verify(message, with: publicKey) }
    }

    @Test(arguments: ["XX", "ed", "\0\0"])
    func unknownAlgorithmsAreRefused(algorithm: String) throws {
        var changed = lines
        changed.body.replaceSubrange(0..<2, with: Array(algorithm.utf8))
        let error = expectError(.unsupportedAlgorithm) { try verify(changed) }
        #expect(error?.message.contains("\"ED\"") == true)
    }

    @Test func wrongKeyNamesBothKeyIDs() throws {
        let other = MinisignSecretKey.generate().publicKey
        let error = expectError(.keyIDMismatch) { try verify(lines, with: other) }
        #expect(error?.message.contains(Golden.keyIDHex) == true)
        #expect(error?.message.contains(other.keyIDHex) == true)
        // As a bare Ed25519 key there is no key id to compare.
        let bare = expectError(.invalidSignature) {
            try MinisignSignature(fileContents: file).verify(message, with: other.key)
        }
        #expect(bare?.message.contains(Golden.keyIDHex) == true)
        // Another key that claims the signer's key id is still just a wrong key.
        expectError(.invalidSignature) {
            try verify(lines, with: MinisignPublicKey(keyID: publicKey.keyID, key: other.key))
        }
    }

    @Test func aSignatureMovedToAnotherFileFails() throws {
        // A vigil signature over another message, re-labelled with the golden trusted comment.
        let key = MinisignSecretKey.generate()
        let signature = try MinisignSignature.sign(Array("other".utf8), with: key, trustedComment: lines.trusted)
        expectError(.invalidSignature) { try signature.verify(message, with: key.publicKey) }
        // And a golden global signature pasted onto a fresh signature does not carry over.
        var mixed = SignatureLines(
            Array(try MinisignSignature.sign(message, with: key, trustedComment: lines.trusted).fileContents().utf8))
        mixed.global = lines.global
        expectError(.invalidGlobalSignature) {
            try MinisignSignature(fileContents: mixed.file).verify(message, with: key.publicKey)
        }
    }
}
