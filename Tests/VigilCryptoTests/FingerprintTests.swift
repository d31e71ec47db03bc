import Testing
import VigilCrypto

@Suite("Fingerprints")
struct FingerprintTests {
    /// The `examples` first-party key (public data, from the workspace's signing README):
    /// its minisign form, fingerprint and key id were computed independently of this code.
    static let examplesKey = "RWS/grCqXsjbwEm/TV9bNW4GBMKaL1LyT44L9lUp/OX3zkD4JLX5d13G"
    static let examplesFingerprint = "ed25519:Sb9NX1s1bgYEwpovUvJPjgv2VSn85ffOQPgktfl3XcY="

    /// A key whose last base64 digit is "A", so "B", "C", "D" are the non-canonical spellings.
    static let zeroKeyFingerprint = "ed25519:" + String(repeating: "A", count: 43) + "="

    @Test func fingerprintOfAMinisignKeyIsTheRawKeyInBase64() throws {
        let key = try MinisignPublicKey(base64: Self.examplesKey)
        #expect(key.fingerprint.description == Self.examplesFingerprint)
        #expect(key.keyIDHex == "C0DBC85EAAB082BF")
        #expect(Self.examplesFingerprint.count == 8 + 44)
    }

    @Test func parsingRoundTrips() throws {
        let parsed = try Fingerprint(parsing: Self.examplesFingerprint)
        #expect(parsed.description == Self.examplesFingerprint)
        #expect(parsed == (try MinisignPublicKey(base64: Self.examplesKey)).fingerprint)
        #expect(parsed.publicKey == (try MinisignPublicKey(base64: Self.examplesKey)).key)

        let generated = Ed25519SecretKey.generate().publicKey
        #expect(try Fingerprint(parsing: Fingerprint(publicKey: generated).description).publicKey == generated)
    }

    @Test(arguments: ["B", "C", "D"])
    func nonCanonicalSpareBitsAreRejected(lastDigit: String) throws {
        #expect(
            try Fingerprint(parsing: Self.zeroKeyFingerprint).publicKey.rawRepresentation
                == [UInt8](repeating: 0, count: 32))
        let text = String(Self.zeroKeyFingerprint.dropLast(2)) + lastDigit + "="
        let error = expectError(.nonCanonicalFingerprint) { try Fingerprint(parsing: text) }
        #expect(error?.message.contains(Self.zeroKeyFingerprint) == true, "names the canonical form")
    }

    @Test func everyNonCanonicalSpellingOfARealKeyIsRejected() throws {
        let canonical = Array(Self.examplesFingerprint.utf8)
        let digits = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        let last = digits.firstIndex(of: canonical[canonical.count - 2])!
        #expect(last & 0b11 == 0)
        for spare in 1...3 {
            var text = canonical
            text[text.count - 2] = digits[last | spare]
            let error = expectError(.nonCanonicalFingerprint) {
                try Fingerprint(parsing: String(decoding: text, as: UTF8.self))
            }
            #expect(error?.message.contains(Self.examplesFingerprint) == true)
        }
    }

    @Test(arguments: [
        "",
        "ed25519",
        "Sb9NX1s1bgYEwpovUvJPjgv2VSn85ffOQPgktfl3XcY=",  // no prefix
        "ED25519:Sb9NX1s1bgYEwpovUvJPjgv2VSn85ffOQPgktfl3XcY=",  // upper-case prefix
        "ed25519 Sb9NX1s1bgYEwpovUvJPjgv2VSn85ffOQPgktfl3XcY=",
        "ssh-ed25519:Sb9NX1s1bgYEwpovUvJPjgv2VSn85ffOQPgktfl3XcY=",
        " ed25519:Sb9NX1s1bgYEwpovUvJPjgv2VSn85ffOQPgktfl3XcY=",
    ])
    func wrongPrefixIsRejected(text: String) {
        let error = expectError(.malformedFingerprint) { try Fingerprint(parsing: text) }
        #expect(error?.message.contains("ed25519:") == true)
    }

    @Test(arguments: [
        "ed25519:",
        "ed25519:Sb9NX1s1bgYEwpovUvJPjgv2VSn85ffOQPgktfl3XcY",  // padding missing (43)
        "ed25519:Sb9NX1s1bgYEwpovUvJPjgv2VSn85ffOQPgktfl3XcY==",  // 45
        "ed25519:Sb9NX1s1bgYEwpovUvJPjgv2VSn85ffOQPgktfl3XcY= ",  // trailing space
        "ed25519:Sb9NX1s1bgYEwpovUvJPjgv2VSn85ffOQPgktfl3XcYSb9NX1s1bgYEwpovUvJPjgv2VSn85ffOQPgktfl3XcY=",
        "ed25519:Sb9NX1s1bgYEwpovUvJPjgv2VSn85ffOQPgktfl3XcYA",  // 44 digits, no "="
        "ed25519:Sb9NX1s1bgYEwpovUvJPjgv2VSn85ffOQPgktfl3XcY-",  // URL-safe alphabet
        "ed25519:Sb9NX1s1bgYEwpovUvJPjgv2VSn85ffOQPgktfl3X_Y=",
        "ed25519:Sb9NX1s1bgYEwpovUvJPjgv2VSn85ffOQPgktfl3X Y=",
        "ed25519:Sb9NX1s1bgYEwpovUvJPjgv2VSn85ffOQPgktfl3X=Y=",
        "ed25519:RWS/grCqXsjbwEm/TV9bNW4GBMKaL1LyT44L9lUp/OX3zkD4JLX5d13G",  // the minisign form
    ])
    func wrongLengthOrAlphabetIsRejected(text: String) {
        expectError(.malformedFingerprint) { try Fingerprint(parsing: text) }
    }

    @Test func controlCharactersAreNotEchoedInTheMessage() {
        let error = expectError(.malformedFingerprint) { try Fingerprint(parsing: "ed25519:\u{1b}[31mred") }
        #expect(error?.message.contains("\u{1b}") == false)
    }
}
