import Foundation
import Testing
import VigilCrypto

@Suite("Digests")
struct DigestTests {
    // FIPS 180-2 and RFC 7693 Appendix A / the BLAKE2 reference test vectors.
    @Test func sha256KnownAnswers() {
        #expect(
            Digest.hex(Digest.sha256("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            Digest.hex(Digest.sha256([UInt8]())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func blake2b512KnownAnswers() {
        #expect(
            Digest.hex(Digest.blake2b512("abc".utf8))
                == "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1"
                + "7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923")
        #expect(
            Digest.hex(Digest.blake2b512([UInt8]()))
                == "786a02f742015903c6c6fd852552d272912f4740e15847618a86e217f71f5419"
                + "d25e1031afee585313896444934eb04b903a685b1448b755d56f701afe9be2ce")
    }

    @Test func nonContiguousInputHashesLikeAnArray() {
        let message = Array("a longer message that is not stored contiguously".utf8)
        let lazy = (0..<message.count).lazy.map { message[$0] }
        #expect(Digest.sha256(lazy) == Digest.sha256(message))
        #expect(Digest.blake2b512(lazy) == Digest.blake2b512(message))
        #expect(Digest.sha256(message.dropFirst()) == Digest.sha256(Array(message.dropFirst())))
    }

    @Test func hexIsLowerCaseTwoDigitsPerByte() {
        #expect(Digest.hex([0x00, 0x0f, 0xab, 0xff]) == "000fabff")
        #expect(Digest.hex([UInt8]()) == "")
    }
}

/// The wrapper rule: only Sodium.swift imports the C module, so no other file can call libsodium
/// (or leak one of its types) directly.
@Suite struct SodiumBoundaryTests {
    @Test func onlySodiumSwiftImportsCSodium() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/VigilCrypto")
        let files = try FileManager.default.contentsOfDirectory(atPath: sources.path).filter { $0.hasSuffix(".swift") }
        #expect(files.contains("Sodium.swift"))
        for file in files {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            #expect(text.contains("import CSodium") == (file == "Sodium.swift"), "\(file)")
        }
    }
}
