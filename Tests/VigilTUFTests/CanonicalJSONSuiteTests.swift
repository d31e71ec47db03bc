import Testing
import VigilTUF
import VigilTestSupport

/// The TUF reader parses with the core's strict grammar (one parser, VigilBase's
/// `StrictJSONParser`): JSONTestSuite's cases, the fixtures the core's parser is tested on, go
/// the way they go there, except numbers TUF metadata never holds (fractions, exponents, `-0`,
/// integers past 64 bits), which it refuses.
@Suite("TUF canonical JSON: the core's grammar, JSONTestSuite")
struct CanonicalJSONSuiteTests {
    static func cases(_ prefix: String) -> [String] { JSONTestSuiteFixtures.cases(prefix) }

    static func parse(_ file: String) throws(JSONParseError) -> JSONValue {
        try JSONValue.parse(JSONTestSuiteFixtures.bytes(file))
    }

    /// What the TUF reader refuses beyond the core's grammar, and the core's refusal of duplicate keys.
    static let tufRefusals = ["fraction or exponent", "-0", "outside 64 bits", "duplicate key"]

    /// The core's tests count the cases; here, only that they are read at all.
    @Test func theSuiteIsThere() { #expect(!Self.cases("n_").isEmpty) }

    @Test(arguments: cases("y_"))
    func acceptedCasesParseUnlessTheirNumbersAreNotTUFs(file: String) {
        do {
            _ = try Self.parse(file)
        } catch {
            #expect(Self.tufRefusals.contains { error.reason.contains($0) }, "\(file): \(error)")
        }
    }

    @Test(arguments: cases("n_") + cases("i_"))
    func rejectedAndImplementationDefinedCasesAreRefused(file: String) {
        #expect(throws: JSONParseError.self, "\(file)") { try Self.parse(file) }
    }

    /// One depth rule for both readers: at most `maxDepth` arrays and objects, however the
    /// innermost one ends (an empty one one level deeper was accepted before).
    @Test func nestingStopsAtTheLimitWhetherTheInnermostIsEmptyOrNot() throws {
        let depth = JSONValue.maxDepth
        let deepest = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        _ = try JSONValue.parse(Array(deepest.utf8))
        for inner in ["", "1"] {
            let text = String(repeating: "[", count: depth + 1) + inner + String(repeating: "]", count: depth + 1)
            #expect(throws: JSONParseError.self, "\(depth + 1) levels around \"\(inner)\"") {
                try JSONValue.parse(Array(text.utf8))
            }
        }
    }

    /// A refused number is reported where it starts, as before the parsers were one.
    @Test func aRefusedNumberIsReportedAtItsStart() {
        do {
            _ = try JSONValue.parse(Array(#"{"version": 1.5}"#.utf8))
            Issue.record("a fraction was accepted")
        } catch {
            #expect(error.offset == 12)
            #expect(error.reason.contains("fraction or exponent"))
        }
    }
}
