import Foundation
import Testing
import VigilCrypto

/// One RFC 8032 §7.1 test vector, read from Fixtures/rfc8032-ed25519.json.
struct RFC8032Vector: Decodable, Sendable, CustomTestStringConvertible {
    let name: String
    let secretKey: String
    let publicKey: String
    let message: String
    let signature: String

    var testDescription: String { name }

    static func load() throws -> [RFC8032Vector] {
        struct File: Decodable { let vectors: [RFC8032Vector] }
        return try JSONDecoder().decode(File.self, from: Data(TestPaths.fixture("rfc8032-ed25519.json"))).vectors
    }

    /// Empty if the file cannot be read; `allFiveVectorsArePresent` then fails with the reason.
    static let all: [RFC8032Vector] = (try? load()) ?? []
}

@Suite("RFC 8032 §7.1 Ed25519 vectors")
struct RFC8032Tests {
    @Test func allFiveVectorsArePresent() throws {
        #expect(try RFC8032Vector.load().map(\.name) == ["TEST 1", "TEST 2", "TEST 3", "TEST 1024", "TEST SHA(abc)"])
        #expect(RFC8032Vector.all.first { $0.name == "TEST 1024" }.map { bytes(hex: $0.message).count } == 1023)
    }

    @Test(arguments: RFC8032Vector.all)
    func seedGivesThePublicKeyAndTheSignature(_ vector: RFC8032Vector) throws {
        let key = try Ed25519SecretKey(seed: bytes(hex: vector.secretKey))
        #expect(Digest.hex(key.publicKey.rawRepresentation) == vector.publicKey)
        #expect(Digest.hex(key.signature(for: bytes(hex: vector.message))) == vector.signature)
    }

    @Test(arguments: RFC8032Vector.all)
    func publishedSignatureVerifiesAndEveryFlippedBitFails(_ vector: RFC8032Vector) throws {
        let publicKey = try Ed25519PublicKey(rawRepresentation: bytes(hex: vector.publicKey))
        let message = bytes(hex: vector.message)
        let signature = bytes(hex: vector.signature)
        #expect(publicKey.isValidSignature(signature, for: message))
        try publicKey.verify(signature: signature, for: message)

        for bit in 0..<(signature.count * 8) {
            let tampered = signature.flipping(bit / 8, mask: 1 << UInt8(bit % 8))
            #expect(!publicKey.isValidSignature(tampered, for: message), "signature bit \(bit) flipped")
        }
        for index in message.indices {
            #expect(!publicKey.isValidSignature(signature, for: message.flipping(index)), "message byte \(index)")
        }
        #expect(!publicKey.isValidSignature(signature, for: message + [0]), "message extended")
        for index in publicKey.rawRepresentation.indices {
            let otherKey = try Ed25519PublicKey(rawRepresentation: publicKey.rawRepresentation.flipping(index))
            #expect(!otherKey.isValidSignature(signature, for: message), "public key byte \(index)")
        }
    }
}

@Suite("Ed25519 keys and lengths")
struct Ed25519KeyTests {
    @Test func signatureOfAnyOtherLengthIsRejectedBeforeLibsodium() throws {
        let vector = try #require(RFC8032Vector.all.first { $0.name == "TEST 3" })
        let publicKey = try Ed25519PublicKey(rawRepresentation: bytes(hex: vector.publicKey))
        let message = bytes(hex: vector.message)
        let signature = bytes(hex: vector.signature)
        // libsodium reads exactly 64 bytes, so a valid signature with trailing data would pass if
        // the length were not checked first.
        #expect(!publicKey.isValidSignature(signature + [0], for: message))
        #expect(!publicKey.isValidSignature(signature.dropLast(), for: message))
        #expect(!publicKey.isValidSignature([], for: message))
        expectError(.invalidSignatureLength) { try publicKey.verify(signature: signature + [0], for: message) }
        expectError(.invalidSignature) { try publicKey.verify(signature: signature.flipping(0), for: message) }
    }

    @Test(arguments: [0, 31, 33, 64])
    func keysAndSeedsMustBe32Bytes(count: Int) {
        let input = [UInt8](repeating: 7, count: count)
        let error = expectError(.invalidKeyLength) { try Ed25519PublicKey(rawRepresentation: input) }
        #expect(error?.message.contains("got \(count)") == true)
        expectError(.invalidKeyLength) { try Ed25519SecretKey(seed: input) }
    }

    @Test func generatedKeysAreDistinctAndSignVerifiably() {
        let first = Ed25519SecretKey.generate()
        let second = Ed25519SecretKey.generate()
        #expect(first.publicKey != second.publicKey)
        let message = Array("a message".utf8)
        let signature = first.signature(for: message)
        #expect(first.publicKey.isValidSignature(signature, for: message))
        #expect(!second.publicKey.isValidSignature(signature, for: message))
    }

    @Test func acceptsAnyCollectionOfBytes() throws {
        let vector = try #require(RFC8032Vector.all.first { $0.name == "TEST 3" })
        let key = try Ed25519SecretKey(seed: bytes(hex: vector.secretKey)[...])
        let message = bytes(hex: vector.message)
        // A lazily mapped range is not contiguous; the API must copy it, not misread it.
        let lazyMessage = (0..<message.count).lazy.map { message[$0] }
        #expect(Digest.hex(key.signature(for: lazyMessage)) == vector.signature)
        #expect(key.publicKey.isValidSignature(bytes(hex: vector.signature)[...], for: lazyMessage))
    }
}
