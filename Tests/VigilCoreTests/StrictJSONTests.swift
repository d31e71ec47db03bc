import Testing
import VigilCore
import VigilPlugin

@Suite struct StrictJSONTests {
    func parse(_ text: String) throws(StrictJSON.ParseError) -> JSONValue {
        try StrictJSON.parse(Array(text.utf8))
    }

    @Test func parsesEveryValueKindAndKeepsMemberOrder() throws {
        let v = try parse(#" {"b": [1, -2.5e3, "x\u00e9\n", true, false, null], "a": {}} "#)
        guard case .object(let members) = v else { Issue.record("not an object"); return }
        #expect(members.map(\.key) == ["b", "a"])
        #expect(v["b"] == .array([.number("1"), .number("-2.5e3"), .string("xé\n"), .bool(true), .bool(false), .null]))
        #expect(try parse(#""\ud83d\ude00""#) == .string("😀"))
    }

    @Test(arguments: [
        (#"{"a": 1, "a": 2}"#, "$.a"),
        (#"{"x": {"k": 1, "\u006b": 2}}"#, "$.x.k"),
        (#"[{"ok": 1}, {"z": 0, "z": 0}]"#, "$[1].z"),
    ])
    func duplicateKeysAreRejectedWithTheirPath(text: String, path: String) throws {
        #expect(throws: StrictJSON.ParseError.self) { try parse(text) }
        do {
            _ = try parse(text)
        } catch {
            #expect(error.path == path)
            #expect(error.reason.contains("duplicate key"))
        }
    }

    @Test(arguments: [
        "", " ", "{", "[1,]", "{\"a\":1,}", "01", "1.", "-", "+1", ".5", "1e", "NaN", "Infinity", "'a'",
        "{a: 1}", "[1] [2]", "\"\\x\"", "\"\\ud800\"", "\"\\udc00\"", "\"a\u{01}\"", "tru", "nul",
        "\u{FEFF}{}", "\"\\u12G4\"",
    ])
    func invalidDocumentsAreRejected(text: String) {
        #expect(throws: StrictJSON.ParseError.self, "\(text.debugDescription)") { try parse(text) }
    }

    @Test func invalidUTF8IsRejected() {
        for bytes: [UInt8] in [
            [0x22, 0xFF, 0x22], [0x22, 0xC0, 0xAF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xE2, 0x82, 0x22],
        ] {
            #expect(throws: StrictJSON.ParseError.self) { try StrictJSON.parse(bytes) }
        }
        #expect(throws: Never.self) { try StrictJSON.parse([0x22, 0xE2, 0x82, 0xAC, 0x22]) }
    }

    @Test func depthAndSizeAreLimited() throws {
        let deep = String(repeating: "[", count: 33) + String(repeating: "]", count: 33)
        #expect(throws: StrictJSON.ParseError.self) { try parse(deep) }
        let ok = String(repeating: "[", count: 32) + String(repeating: "]", count: 32)
        #expect(throws: Never.self) { try parse(ok) }
        let big = Array("\"\(String(repeating: "a", count: 100))\"".utf8)
        #expect(throws: StrictJSON.ParseError.self) { try StrictJSON.parse(big, maxSize: 50) }
    }

    @Test func errorsCarryLineAndColumn() {
        do {
            _ = try parse("{\n  \"a\": 1,\n  \"b\": x\n}")
            Issue.record("parsed")
        } catch {
            #expect(error.line == 3)
            #expect(error.column == 8)
            #expect(error.path == "$.b")
        }
    }

    @Test func serializationRoundTrips() throws {
        let v = try parse(#"{"s": "q\"\\\u0001", "n": [1.5, {"k": null}], "e": {}, "a": []}"#)
        #expect(try StrictJSON.parse(v.serialized()) == v)
        #expect(try StrictJSON.parse(v.serialized(indent: nil)) == v)
    }
}
