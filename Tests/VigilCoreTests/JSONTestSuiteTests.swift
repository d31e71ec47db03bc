import Foundation
import Testing
import VigilCore
import VigilTestSupport

/// JSONTestSuite's parsing cases (Fixtures/JSONTestSuite, MIT) through the strict JSON parser.
@Suite struct JSONTestSuiteTests {
    static func cases(_ prefix: String) -> [String] { JSONTestSuiteFixtures.cases(prefix) }

    /// `y_` cases the parser refuses on purpose, and why.
    static let refusedOnPurpose: [String: String] = [
        "y_object_duplicated_key.json":
            "duplicate keys are refused: two readers of the same signed bytes must see the same document",
        "y_object_duplicated_key_and_value.json": "duplicate keys are refused, even with the same value",
    ]

    /// The `i_` (implementation-defined) cases the parser accepts; every other `i_` case (invalid
    /// UTF-8, lone surrogates, a byte-order mark, nesting past the depth limit) is refused. Numbers
    /// are kept as their text, so a huge or tiny one is syntax only: its range is checked where a
    /// number is read (a version component, an integer setting).
    static let acceptedImplementationDefined: Set<String> = [
        "i_number_double_huge_neg_exp.json", "i_number_huge_exp.json", "i_number_neg_int_huge_exp.json",
        "i_number_pos_double_huge_exp.json", "i_number_real_neg_overflow.json", "i_number_real_pos_overflow.json",
        "i_number_real_underflow.json", "i_number_too_big_neg_int.json", "i_number_too_big_pos_int.json",
        "i_number_very_big_negative_int.json",
    ]

    static func parse(_ file: String) throws(StrictJSON.ParseError) -> JSONValue {
        try StrictJSON.parse(JSONTestSuiteFixtures.bytes(file), maxSize: 1 << 20)
    }

    @Test func theSuiteIsThere() {
        #expect(Self.cases("y_").count == 95)
        #expect(Self.cases("n_").count == 188)
        #expect(Self.cases("i_").count == 35)
    }

    @Test(arguments: cases("y_"))
    func acceptedCasesParse(file: String) {
        if let why = Self.refusedOnPurpose[file] {
            #expect(throws: StrictJSON.ParseError.self, "\(file): \(why)") { try Self.parse(file) }
        } else {
            #expect(throws: Never.self, "\(file)") { try Self.parse(file) }
        }
    }

    @Test(arguments: cases("n_"))
    func rejectedCasesAreRefusedWithAnError(file: String) {
        #expect(throws: StrictJSON.ParseError.self, "\(file)") { try Self.parse(file) }
    }

    @Test(arguments: cases("i_"))
    func implementationDefinedCasesGoTheDocumentedWay(file: String) {
        if Self.acceptedImplementationDefined.contains(file) {
            #expect(throws: Never.self, "\(file)") { try Self.parse(file) }
        } else {
            #expect(throws: StrictJSON.ParseError.self, "\(file)") { try Self.parse(file) }
        }
    }
}
