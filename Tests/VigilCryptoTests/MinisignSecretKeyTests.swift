import Foundation
import Testing
import VigilCrypto

@Suite("minisign secret keys")
struct MinisignSecretKeyTests {
    /// The decoded 158 bytes of a secret key file.
    static func blob(_ text: String) throws -> [UInt8] {
        let line = text.split(separator: "\n")[1]
        return Array(try #require(Data(base64Encoded: String(line))))
    }

    static func file(comment: String = "test", _ blob: [UInt8]) -> String {
        "untrusted comment: \(comment)\n\(Data(blob).base64EncodedString())\n"
    }

    @Test func unencryptedKeyFileRoundTrips() throws {
        let key = MinisignSecretKey.generate()
        let text = key.fileContents()
        let restored = try MinisignSecretKey(fileContents: text)
        #expect(restored.publicKey == key.publicKey)
        #expect(restored.keyID == key.keyID)
        let message = Array("same key, same signature".utf8)
        #expect(restored.secretKey.signature(for: message) == key.secretKey.signature(for: message))
        // A password is irrelevant for an unencrypted key.
        #expect(try MinisignSecretKey(fileContents: text, password: "ignored").publicKey == key.publicKey)
    }

    @Test func fileLayoutIsMinisignsUnencryptedFormat() throws {
        let key = MinisignSecretKey.generate()
        let text = key.fileContents()
        #expect(text.hasPrefix("untrusted comment: "))
        #expect(text.hasSuffix("\n"))
        #expect(text.split(separator: "\n").count == 2)
        let blob = try Self.blob(text)
        #expect(blob.count == 158)
        #expect(Array(blob[0..<6]) == Array("Ed".utf8) + [0, 0] + Array("B2".utf8))
        #expect(blob[6..<54].allSatisfy { $0 == 0 }, "no salt or KDF limits for an unencrypted key")
        #expect(Array(blob[54..<62]) == key.keyID)
        #expect(Array(blob[94..<126]) == key.publicKey.key.rawRepresentation, "libsodium layout: seed ‖ public key")
        #expect(blob[126..<158].contains { $0 != 0 }, "a real checksum")
    }

    @Test func everyFlippedByteOfTheKeyMaterialIsDetected() throws {
        let key = MinisignSecretKey.generate()
        let blob = try Self.blob(key.fileContents())
        for index in 54..<158 {
            expectError(.malformedSecretKey, "byte \(index)") {
                try MinisignSecretKey(fileContents: Self.file(blob.flipping(index)))
            }
        }
    }

    @Test func allZeroChecksumAsWrittenByMinisign011IsAccepted() throws {
        let key = MinisignSecretKey.generate()
        var blob = try Self.blob(key.fileContents())
        blob.replaceSubrange(126..<158, with: [UInt8](repeating: 0, count: 32))
        #expect(try MinisignSecretKey(fileContents: Self.file(blob)).publicKey == key.publicKey)
        // …but then the key pair itself must still be consistent.
        expectError(.malformedSecretKey) { try MinisignSecretKey(fileContents: Self.file(blob.flipping(100))) }
    }

    @Test func headerFieldsAreChecked() throws {
        let blob = try Self.blob(MinisignSecretKey.generate().fileContents())
        for (range, replacement, reason) in [
            (0..<2, "ED", "algorithm"), (4..<6, "B3", "checksum algorithm"), (2..<4, "Ar", "key derivation"),
        ] {
            var changed = blob
            changed.replaceSubrange(range, with: Array(replacement.utf8))
            let error = expectError(.malformedSecretKey, "\(reason)") {
                try MinisignSecretKey(fileContents: Self.file(changed))
            }
            #expect(error?.message.contains(reason) == true)
        }
    }

    @Test func encryptedKeyWithoutPasswordAsksForOne() throws {
        var blob = try Self.blob(MinisignSecretKey.generate().fileContents())
        blob.replaceSubrange(2..<4, with: Array("Sc".utf8))
        expectError(.encryptedKeyNeedsPassword) { try MinisignSecretKey(fileContents: Self.file(blob)) }
    }

    @Test func absurdKeyDerivationLimitsAreRefusedBeforeDeriving() throws {
        var blob = try Self.blob(MinisignSecretKey.generate().fileContents())
        blob.replaceSubrange(2..<4, with: Array("Sc".utf8))
        blob.replaceSubrange(46..<54, with: [0, 0, 0, 0, 0, 1, 0, 0])  // 2^40 bytes of memory
        let error = expectError(.malformedSecretKey) {
            try MinisignSecretKey(fileContents: Self.file(blob), password: "x")
        }
        #expect(error?.message.contains("memory") == true)
    }

    @Test func malformedFilesAreRefused() throws {
        let text = MinisignSecretKey.generate().fileContents()
        let line = String(text.split(separator: "\n")[1])
        for variant in [
            "", line, line + "\n", "untrusted comment: x\n" + line + "\nextra\n", "comment: x\n" + line + "\n",
            "untrusted comment: x\n" + line.dropLast(4) + "\n", "untrusted comment: x\n" + line + "AAAA\n",
            "untrusted comment: x\n" + Data(Array(repeating: 0, count: 42)).base64EncodedString() + "\n",
        ] {
            expectError(.malformedSecretKey, "\(variant.prefix(30))") { try MinisignSecretKey(fileContents: variant) }
        }
    }

    @Test func publicAndSecretKeyFilesAreNotConfused() throws {
        let key = MinisignSecretKey.generate()
        let asPublic = expectError(.malformedPublicKey) { try MinisignPublicKey(fileContents: key.fileContents()) }
        #expect(asPublic?.message.contains("SECRET") == true)
        let asSecret = expectError(.malformedSecretKey) {
            try MinisignSecretKey(fileContents: key.publicKey.fileContents())
        }
        #expect(asSecret?.message.contains("public key") == true)
    }

    @Test func crlfKeyFileIsAccepted() throws {
        let key = MinisignSecretKey.generate()
        let crlf = key.fileContents().replacingOccurrences(of: "\n", with: "\r\n")
        #expect(try MinisignSecretKey(fileContents: crlf).publicKey == key.publicKey)
    }

    @Test func generatedKeysDiffer() {
        let first = MinisignSecretKey.generate()
        let second = MinisignSecretKey.generate()
        #expect(first.keyID != second.keyID)
        #expect(first.publicKey.key != second.publicKey.key)
    }
}
