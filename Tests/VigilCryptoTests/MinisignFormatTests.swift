import Foundation
import Testing
import VigilCrypto

@Suite("minisign public keys")
struct MinisignPublicKeyTests {
    @Test func goldenPublicKeyIsReadAndWrittenBackByteForByte() throws {
        let text = try Golden.publicKeyText()
        let key = try MinisignPublicKey(fileContents: text)
        #expect(key.keyIDHex == Golden.keyIDHex)
        #expect(key.fileContents() == text)
        #expect(key.base64 == String(text.split(separator: "\n")[1]))
        #expect(try MinisignPublicKey(base64: key.base64) == key)
        #expect(try MinisignPublicKey(fileContents: key.base64) == key, "the RW… line alone")
        #expect(try MinisignPublicKey(fileContents: key.base64 + "\n") == key)
        #expect(try MinisignPublicKey(fileContents: text.replacingOccurrences(of: "\n", with: "\r\n")) == key)
    }

    @Test func keyIDIsDisplayedAsMinisignDoes() throws {
        // Stored bytes are the little-endian value: minisign shows them reversed.
        let key = MinisignPublicKey(
            keyID: [0x16, 0x90, 0x23, 0xd4, 0x16, 0x02, 0x5f, 0x39], key: Ed25519SecretKey.generate().publicKey)
        #expect(key.keyIDHex == "395F0216D4239016")
        let small = MinisignPublicKey(keyID: [1, 0, 0, 0, 0, 0, 0, 0], key: key.key)
        #expect(small.keyIDHex == "0000000000000001")
        // The .pub comment, like minisign's printf("%" PRIX64), has no leading zeros.
        #expect(small.fileContents().hasPrefix("untrusted comment: minisign public key 1\n"))
    }

    @Test(arguments: [
        ("", "0 lines"),
        ("untrusted comment: x\nRWTUoeS8I3sdSuZuYakHH1IfFj+70a330FTc7q+iefSqE1RoWPIm7s/K\nextra\n", "3 lines"),
        ("comment: x\nRWTUoeS8I3sdSuZuYakHH1IfFj+70a330FTc7q+iefSqE1RoWPIm7s/K\n", "untrusted comment"),
        ("RWTUoeS8I3sdSuZuYakHH1IfFj+70a330FTc7q+iefSqE1RoWPIm7s/", "base64"),  // truncated
        ("RWTUoeS8I3sdSuZuYakHH1IfFj+70a330FTc7q+iefSqE1RoWPIm7s/KAAAA", "base64"),  // extended
        ("RWTUoeS8I3sdSuZuYakHH1IfFj+70a330FTc7q+iefSqE1RoWPIm7s/K ", "base64"),
        ("untrusted comment: x\rRWTUoeS8I3sdSuZuYakHH1IfFj+70a330FTc7q+iefSqE1RoWPIm7s/K\n", "carriage return"),
        ("WFjUoeS8I3sdSuZuYakHH1IfFj+70a330FTc7q+iefSqE1RoWPIm7s/K", "algorithm"),  // "XX" instead of "Ed"
        ("RWTUoeS8I3sdSuZuYakHH1IfFj+70a330FTc7q+iefSqE1RoWPIm7s/K\n\n", "untrusted comment"),  // 2 lines
    ])
    func malformedPublicKeysAreRefused(text: String, reason: String) {
        let error = expectError(.malformedPublicKey) { try MinisignPublicKey(fileContents: text) }
        #expect(error?.message.contains(reason) == true, "\(error?.message ?? "")")
    }

    @Test func everyByteOfThePublicKeyBlobMatters() throws {
        let golden = try Golden.publicKey()
        let blob = Array(try #require(Data(base64Encoded: golden.base64)))
        #expect(blob.count == 42)
        for index in blob.indices {
            let text = Data(blob.flipping(index)).base64EncodedString()
            switch index {
            case 0..<2:
                expectError(.malformedPublicKey, "algorithm byte \(index)") { try MinisignPublicKey(base64: text) }
            case 2..<10:
                #expect(try MinisignPublicKey(base64: text).keyID != golden.keyID)
            default:
                #expect(try MinisignPublicKey(base64: text).key != golden.key)
            }
        }
    }
}

@Suite("minisign signature files")
struct MinisignSignatureFormatTests {
    @Test func goldenSignatureIsParsedAndWrittenBackByteForByte() throws {
        let file = try Golden.signatureFile()
        let signature = try MinisignSignature(fileContents: file)
        #expect(signature.algorithm == Array("ED".utf8))
        #expect(signature.keyIDHex == Golden.keyIDHex)
        #expect(signature.keyID == (try Golden.publicKey()).keyID)
        #expect(signature.signature.count == 64)
        #expect(signature.globalSignature.count == 64)
        #expect(signature.untrustedComment == "vigil golden fixture: prehashed signature made by minisign 0.11")
        #expect(signature.trustedComment == "golden@1.0.0\tfile:golden-message.txt")
        #expect(Array(signature.fileContents().utf8) == file)
    }

    @Test func lineEndingVariantsParseToTheSameSignature() throws {
        let file = try Golden.signatureFile()
        let expected = try MinisignSignature(fileContents: file)
        let text = String(decoding: file, as: UTF8.self)
        let crlf = text.replacingOccurrences(of: "\n", with: "\r\n")
        #expect(try MinisignSignature(fileContents: Array(crlf.utf8)) == expected)
        #expect(try MinisignSignature(fileContents: Array(text.dropLast().utf8)) == expected, "no final line break")
        #expect(try MinisignSignature(fileContents: Array(crlf.dropLast().utf8)) == expected, "CR LF, no final LF")
    }

    static func goldenLines() throws -> [String] {
        String(decoding: try Golden.signatureFile(), as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// The lines joined into a file with a final line break.
    static func file(_ lines: [String]) -> [UInt8] {
        Array((lines.joined(separator: "\n") + "\n").utf8)
    }

    /// Expects `lines` with line `index` changed by `change` to be refused as malformed, with a
    /// message naming that line.
    static func expectLineRefused(
        _ lines: [String], _ index: Int, _ comment: String = "", sourceLocation: SourceLocation = #_sourceLocation,
        change: (inout String) -> Void
    ) {
        var changed = lines
        change(&changed[index])
        let error = expectError(.malformedSignature, "line \(index + 1)\(comment)", sourceLocation: sourceLocation) {
            try MinisignSignature(fileContents: file(changed))
        }
        #expect(error?.message.contains("line \(index + 1)") == true, sourceLocation: sourceLocation)
    }

    @Test func wrongNumberOfLinesIsRefused() throws {
        let lines = try Self.goldenLines()
        let variants: [(String, String)] = [
            ("", "0 lines"),
            (lines.prefix(3).joined(separator: "\n") + "\n", "3 lines"),
            (lines.joined(separator: "\n") + "\n\n", "5 lines"),
            (lines.joined(separator: "\n") + "\nextra line\n", "5 lines"),
            ((lines + lines).joined(separator: "\n") + "\n", "8 lines"),
            ("\n" + lines.joined(separator: "\n") + "\n", "5 lines"),
        ]
        for (text, reason) in variants {
            let error = expectError(.malformedSignature, "\(reason)") {
                try MinisignSignature(fileContents: Array(text.utf8))
            }
            #expect(error?.message.contains(reason) == true, "\(error?.message ?? "")")
        }
    }

    @Test func missingPrefixesAreRefused() throws {
        let lines = try Self.goldenLines()
        for (index, replacement) in [
            (0, "untrusted: x"), (0, "Untrusted comment: x"), (2, "trusted comment:x"), (2, lines[0]),
        ] {
            Self.expectLineRefused(lines, index) { $0 = replacement }
        }
    }

    @Test func bareCarriageReturnInsideALineIsRefused() throws {
        let lines = try Self.goldenLines()
        for index in lines.indices {
            Self.expectLineRefused(lines, index) { $0.insert("\r", at: $0.index($0.startIndex, offsetBy: 3)) }
        }
    }

    @Test func invalidUTF8IsRefused() throws {
        var file = try Golden.signatureFile()
        let trustedStart = try #require(file.firstRange(of: Array("golden@".utf8))).lowerBound
        file[trustedStart] = 0xff
        let error = expectError(.malformedSignature) { try MinisignSignature(fileContents: file) }
        #expect(error?.message.contains("UTF-8") == true)
    }

    @Test func truncatedExtendedOrNonCanonicalBase64IsRefused() throws {
        let lines = try Self.goldenLines()
        for index in [1, 3] {
            let line = lines[index]
            let withoutPadding = String(line.prefix { $0 != "=" })
            let padding = String(line.dropFirst(withoutPadding.count))
            #expect(!padding.isEmpty)
            let lastDigit = try #require(withoutPadding.last)
            // The final digit before "=" carries spare bits; changing only those gives the same bytes.
            let digits = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
            let value = try #require(digits.firstIndex(of: lastDigit))
            let nonCanonical = String(withoutPadding.dropLast()) + String(digits[value ^ 1]) + padding
            #expect(Data(base64Encoded: nonCanonical) == Data(base64Encoded: line), "Foundation accepts it")
            for variant in [
                String(line.dropLast(4)), line + "AAAA", String(line.dropLast()), line + "=", " " + line, line + " ",
                nonCanonical, String(line.dropFirst(4)), "",
            ] {
                Self.expectLineRefused(lines, index, ": \(variant)") { $0 = variant }
            }
        }
    }

    @Test func signRoundTripsThroughTheFileFormat() throws {
        let key = MinisignSecretKey.generate()
        let message = Array("hello\n".utf8)
        let signature = try MinisignSignature.sign(message, with: key, trustedComment: "demo@1.2.3\tfile:x")
        #expect(signature.algorithm == Array("ED".utf8))
        #expect(signature.keyID == key.keyID)
        #expect(signature.untrustedComment == MinisignSignature.defaultUntrustedComment)
        let parsed = try MinisignSignature(fileContents: Array(signature.fileContents().utf8))
        #expect(parsed == signature)
        try parsed.verify(message, with: key.publicKey)
        try parsed.verify(message, with: key.publicKey.key)
        // Ed25519 is deterministic: the same key, message and comment give the same file.
        #expect(try MinisignSignature.sign(message, with: key, trustedComment: "demo@1.2.3\tfile:x") == signature)
    }

    @Test func emptyMessageAndEmptyTrustedCommentAreFine() throws {
        let key = MinisignSecretKey.generate()
        let signature = try MinisignSignature.sign([UInt8](), with: key, trustedComment: "", untrustedComment: "")
        let parsed = try MinisignSignature(fileContents: Array(signature.fileContents().utf8))
        #expect(parsed.trustedComment.isEmpty)
        try parsed.verify([UInt8](), with: key.publicKey)
        expectError(.invalidSignature) { try parsed.verify([0], with: key.publicKey) }
    }

    @Test(arguments: [
        "line\nbreak", "carriage\rreturn", "bell\u{07}", "nul\u{00}", "escape\u{1b}[31m", "delete\u{7f}", "c1\u{85}",
    ])
    func controlCharactersInCommentsAreRefusedWhenSigning(comment: String) {
        let key = MinisignSecretKey.generate()
        let trusted = expectError(.invalidComment) {
            try MinisignSignature.sign([1, 2, 3], with: key, trustedComment: comment)
        }
        #expect(trusted?.message.contains("trusted comment") == true)
        #expect(trusted?.message.contains("U+") == true)
        expectError(.invalidComment) {
            try MinisignSignature.sign([1, 2, 3], with: key, trustedComment: "ok", untrustedComment: comment)
        }
    }

    @Test func commentsLongerThanMinisignCanReadAreRefused() throws {
        let key = MinisignSecretKey.generate()
        let longest = String(repeating: "x", count: 8173)
        let signature = try MinisignSignature.sign([1], with: key, trustedComment: longest)
        #expect(try MinisignSignature(fileContents: Array(signature.fileContents().utf8)).trustedComment == longest)
        expectError(.invalidComment) { try MinisignSignature.sign([1], with: key, trustedComment: longest + "x") }
        _ = try MinisignSignature.sign(
            [1], with: key, trustedComment: "", untrustedComment: String(repeating: "u", count: 1003))
        expectError(.invalidComment) {
            try MinisignSignature.sign(
                [1], with: key, trustedComment: "", untrustedComment: String(repeating: "u", count: 1004))
        }
    }

    @Test func parsingKeepsCommentTextRaw() throws {
        // Display sanitising is the caller's job; parsing must not alter what was signed.
        let key = MinisignSecretKey.generate()
        let signature = try MinisignSignature.sign([1], with: key, trustedComment: "tab\there ünïcödé ✓")
        var lines = SignatureLines(Array(signature.fileContents().utf8))
        lines.untrusted = "anything \u{1b}[2J goes here"
        let parsed = try MinisignSignature(fileContents: lines.file)
        #expect(parsed.untrustedComment == "anything \u{1b}[2J goes here")
        #expect(parsed.trustedComment == "tab\there ünïcödé ✓")
        try parsed.verify([1], with: key.publicKey)
    }
}
