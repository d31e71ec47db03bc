import Foundation
import Testing
import VigilCrypto

/// Interoperability with the real `minisign` 0.11 (installed by scripts/install-deps.sh), run as a
/// process in a private temporary directory.
@Suite("Interop with the real minisign")
struct MinisignInteropTests {
    @Test func goldenFilesMadeByMinisignVerify() async throws {
        let signature = try MinisignSignature(fileContents: Golden.signatureFile())
        try signature.verify(Golden.message(), with: Golden.publicKey())
        try signature.verify(Golden.message(), with: Golden.publicKey().key)
        #expect(try Golden.publicKey().keyIDHex == Golden.keyIDHex)

        // The committed fixtures are still what minisign itself accepts.
        let minisign = try Minisign.required()
        let result = try await minisign.run(
            ["-V", "-H", "-p", "golden.pub", "-m", "golden-message.txt", "-x", "golden-message.txt.minisig"],
            in: TestPaths.fixtures)
        #expect(result.status == 0, "\(result.output)")
    }

    @Test func goldenLegacySignatureIsRefused() async throws {
        let legacy = try MinisignSignature(fileContents: Golden.legacySignatureFile())
        let error = expectError(.unsupportedAlgorithm) { try legacy.verify(Golden.message(), with: Golden.publicKey()) }
        #expect(error?.message.contains("re-sign") == true)
    }

    @Test func minisignAcceptsWhatVigilSignsAndRejectsTampering() async throws {
        let minisign = try Minisign.required()
        try await withTemporaryDirectory { directory in
            let key = MinisignSecretKey.generate()
            let message = Array("{\"schema\": \"vigil.plugin-manifest/v1\", \"name\": \"interop\"}\n".utf8)
            let trustedComment = "interop@1.0.0\tsigned by vigil"
            let signature = try MinisignSignature.sign(message, with: key, trustedComment: trustedComment)
            try write(key.publicKey.fileContents(), to: directory.appendingPathComponent("key.pub"))
            try write(message, to: directory.appendingPathComponent("plugin.json"))
            try write(signature.fileContents(), to: directory.appendingPathComponent("plugin.json.minisig"))

            let accepted = try await minisign.run(["-V", "-H", "-p", "key.pub", "-m", "plugin.json"], in: directory)
            #expect(accepted.status == 0, "\(accepted.output)")
            #expect(accepted.output.contains("Trusted comment: \(trustedComment)"))
            // minisign also takes the key as the base64 line.
            let inline = try await minisign.run(
                ["-V", "-H", "-P", key.publicKey.base64, "-m", "plugin.json"], in: directory)
            #expect(inline.status == 0, "\(inline.output)")

            // One byte of the file changed.
            try FileManager.default.removeItem(at: directory.appendingPathComponent("plugin.json"))
            try write(message.flipping(3), to: directory.appendingPathComponent("plugin.json"))
            let tamperedFile = try await minisign.run(
                ["-V", "-H", "-p", "key.pub", "-m", "plugin.json"], in: directory)
            #expect(tamperedFile.status != 0, "\(tamperedFile.output)")
            #expect(tamperedFile.output.contains("Signature verification failed"))

            // The original file with an edited trusted comment.
            try FileManager.default.removeItem(at: directory.appendingPathComponent("plugin.json"))
            try write(message, to: directory.appendingPathComponent("plugin.json"))
            var lines = SignatureLines(Array(signature.fileContents().utf8))
            lines.trusted = "interop@9.9.9\tsigned by vigil"
            try FileManager.default.removeItem(at: directory.appendingPathComponent("plugin.json.minisig"))
            try write(lines.file, to: directory.appendingPathComponent("plugin.json.minisig"))
            let tamperedComment = try await minisign.run(
                ["-V", "-H", "-p", "key.pub", "-m", "plugin.json"], in: directory)
            #expect(tamperedComment.status != 0, "\(tamperedComment.output)")
            #expect(tamperedComment.output.contains("Comment signature verification failed"))
        }
    }

    @Test func minisignSignsWithAKeyFileVigilWrote() async throws {
        let minisign = try Minisign.required()
        try await withTemporaryDirectory { directory in
            let key = MinisignSecretKey.generate()
            try write(key.fileContents(), to: directory.appendingPathComponent("vigil.key"))
            try write(key.publicKey.fileContents(), to: directory.appendingPathComponent("vigil.pub"))
            let message = Array("signed by minisign with a key made by vigil\n".utf8)
            try write(message, to: directory.appendingPathComponent("message.txt"))

            // No password is asked for a key with kdf 00 00 (stdin is empty and closed).
            let signed = try await minisign.run(
                ["-S", "-s", "vigil.key", "-p", "vigil.pub", "-m", "message.txt", "-t", "made by minisign"],
                in: directory)
            #expect(signed.status == 0, "\(signed.output)")
            let file = try Data(contentsOf: directory.appendingPathComponent("message.txt.minisig"))
            let signature = try MinisignSignature(fileContents: file)
            #expect(signature.algorithm == Array("ED".utf8))
            #expect(signature.keyID == key.keyID)
            #expect(signature.trustedComment == "made by minisign")
            try signature.verify(message, with: key.publicKey)
            expectError(.invalidSignature) { try signature.verify(message + [0], with: key.publicKey) }

            // minisign derives the same public key file from vigil's secret key.
            let recreated = try await minisign.run(["-R", "-s", "vigil.key", "-p", "recreated.pub"], in: directory)
            #expect(recreated.status == 0, "\(recreated.output)")
            let recreatedText = try String(
                contentsOf: directory.appendingPathComponent("recreated.pub"), encoding: .utf8)
            #expect(recreatedText == key.publicKey.fileContents())
        }
    }

    @Test func vigilSignsWithAnUnencryptedKeyMadeByMinisign() async throws {
        let minisign = try Minisign.required()
        try await withTemporaryDirectory { directory in
            let generated = try await minisign.run(["-G", "-W", "-p", "m.pub", "-s", "m.key"], in: directory)
            #expect(generated.status == 0, "\(generated.output)")
            let publicText = try String(contentsOf: directory.appendingPathComponent("m.pub"), encoding: .utf8)
            let secretText = try String(contentsOf: directory.appendingPathComponent("m.key"), encoding: .utf8)
            let key = try MinisignSecretKey(fileContents: secretText)
            #expect(key.publicKey == (try MinisignPublicKey(fileContents: publicText)))

            let message = Array("signed by vigil with a key made by minisign -W\n".utf8)
            try write(message, to: directory.appendingPathComponent("message.txt"))
            try write(
                try MinisignSignature.sign(message, with: key, trustedComment: "vigil").fileContents(),
                to: directory.appendingPathComponent("message.txt.minisig"))
            let verified = try await minisign.run(["-V", "-H", "-p", "m.pub", "-m", "message.txt"], in: directory)
            #expect(verified.status == 0, "\(verified.output)")
        }
    }

    /// minisign protects keys with scrypt at 1 GiB by default and halves the cost while the
    /// allocation fails; `ulimit -v` makes it settle at 128 MiB so the test stays fast. Vigil reads
    /// the cost parameters from the file either way.
    @Test func passwordProtectedKeyMadeByMinisign() async throws {
        let minisign = try Minisign.required()
        try await withTemporaryDirectory { directory in
            let password = "correct horse battery staple ✓"
            let generated = try await minisign.run(
                ["-G", "-p", "enc.pub", "-s", "enc.key"], in: directory, input: "\(password)\n\(password)\n",
                memoryLimitKiB: 200_000)
            #expect(generated.status == 0, "\(generated.output)")
            let publicKey = try MinisignPublicKey(
                fileContents: String(contentsOf: directory.appendingPathComponent("enc.pub"), encoding: .utf8))
            let secretText = try String(contentsOf: directory.appendingPathComponent("enc.key"), encoding: .utf8)
            #expect(try MinisignSecretKeyTests.blob(secretText)[2..<4].elementsEqual("Sc".utf8))

            let key = try MinisignSecretKey(fileContents: secretText, password: password)
            #expect(key.publicKey == publicKey)
            let message = Array("signed with a decrypted minisign key\n".utf8)
            try MinisignSignature.sign(message, with: key, trustedComment: "decrypted").verify(message, with: publicKey)

            let missing = expectError(.encryptedKeyNeedsPassword) { try MinisignSecretKey(fileContents: secretText) }
            #expect(missing?.message.contains("password") == true)
            let wrong = expectError(.wrongPassword) {
                try MinisignSecretKey(fileContents: secretText, password: "correct horse battery staple")
            }
            #expect(wrong?.message.contains("password") == true)
        }
    }
}
