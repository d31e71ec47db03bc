import Testing
import VigilTUF

@Suite("TUF canonical JSON")
struct CanonicalJSONTests {
    func refuses(_ text: String, _ reason: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(
            throws: JSONParseError.self, "\(text) should be refused",
            sourceLocation: sourceLocation
        ) { try JSONValue.parse(Array(text.utf8)) }
        do {
            _ = try JSONValue.parse(Array(text.utf8))
        } catch {
            #expect(error.reason.contains(reason), "\(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func refusesWhatTwoReadersCouldReadDifferently() {
        refuses(#"{"a":1,"a":2}"#, "duplicate key")
        // Canonically equivalent spellings of one name: Swift would merge them, Python would not.
        refuses("{\"\u{E9}\":1,\"e\u{301}\":2}", "duplicate key")
        refuses(#"{"version":1.0}"#, "fraction or exponent")
        refuses(#"{"version":1e3}"#, "fraction or exponent")
        refuses(#"{"version":-0}"#, "-0")
        refuses(#"{"version":01}"#, "leading zero")
        refuses(#"{"version":99999999999999999999}"#, "outside 64 bits")
        refuses(#"{"a":"\ud800"}"#, "lone high surrogate")
        refuses(#"{"a":"\udc00"}"#, "lone low surrogate")
        refuses("{} {}", "unexpected data")
        refuses("\u{FEFF}{}", "unexpected byte")
        refuses("{\"a\":\"\u{01}\"}", "control character")
        refuses(String(repeating: "[", count: 70) + String(repeating: "]", count: 70), "nesting")
    }

    @Test func refusesInvalidUTF8() {
        for bytes: [UInt8] in [
            [0x22, 0xC0, 0xAF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xF5, 0x80, 0x80, 0x80, 0x22],
        ] {
            #expect(throws: JSONParseError.self) { try JSONValue.parse(bytes) }
        }
    }

    /// securesystemslib's `encode_canonical` output for the same value (computed with it:
    /// `encode_canonical({"b": 1, "a": [True, None, 'x"\\'], "é": "\n", "Z": -5})`).
    @Test func canonicalFormMatchesSecuresystemslib() throws {
        let value = try JSONValue.parse(Array(#"{ "b": 1, "a": [true, null, "x\"\\"], "é": "\n", "Z": -5 }"#.utf8))
        let expected = "{\"Z\":-5,\"a\":[true,null,\"x\\\"\\\\\"],\"b\":1,\"é\":\"\n\"}"
        #expect(value.canonicalBytes == Array(expected.utf8))
    }

    /// Keys sort by code point (UTF-8 byte order), not by Swift's String ordering, which
    /// normalizes first: U+212B ANGSTROM SIGN compares as U+00C5, before U+00C6, in Swift.
    @Test func keysSortByCodePoint() throws {
        let value = try JSONValue.parse(Array("{\"\u{212B}\":1,\"\u{C6}\":2,\"z\":3}".utf8))
        #expect("\u{212B}" < "\u{C6}")  // Swift's own order differs from the one TUF signs
        #expect(String(decoding: value.canonicalBytes, as: UTF8.self) == "{\"z\":3,\"\u{C6}\":2,\"\u{212B}\":1}")
    }
}

@Suite("TUF path patterns")
struct PathPatternTests {
    @Test func fnmatchPerSegment() {
        #expect(PathPattern.matches("README.md", pattern: "*.md"))
        #expect(!PathPattern.matches("releases/README.md", pattern: "*.md"))
        #expect(PathPattern.matches("releases/x/x_v1", pattern: "releases/*/*"))
        #expect(PathPattern.matches("foo-1.tgz", pattern: "foo-?.tgz"))
        #expect(!PathPattern.matches("foo-alpha.tgz", pattern: "foo-?.tgz"))
        #expect(!PathPattern.matches("README.MD", pattern: "*.md"))
        #expect(PathPattern.matches("a1", pattern: "a[0-9]"))
        #expect(!PathPattern.matches("a1", pattern: "a[!0-9]"))
        #expect(PathPattern.matches("vigil/x", pattern: "vigil/*"))
        #expect(!PathPattern.matches("vigil/x/y", pattern: "vigil/*"))
        #expect(PathPattern.matches("abcabd", pattern: "*abd"))
        #expect(PathPattern.matches("", pattern: "*"))
    }
}
