import Foundation
import Testing
import VigilCrypto

/// One case of C2SP/wycheproof `testvectors_v1/ed25519_test.json`.
struct WycheproofCase: Sendable, CustomTestStringConvertible {
    let tcId: Int
    let comment: String
    let publicKey: String
    let message: String
    let signature: String
    let valid: Bool

    var testDescription: String { "tcId \(tcId)\(comment.isEmpty ? "" : ": \(comment)")" }
}

/// The shared vectors, at `../shared/testvectors/` relative to the package root. They are not part
/// of the repository, so a clone outside the Vigil workspace does not have them.
enum Wycheproof {
    static let file = TestPaths.packageRoot
        .appendingPathComponent("../shared/testvectors/wycheproof-ed25519_test.json").standardizedFileURL
    static let isPresent = FileManager.default.fileExists(atPath: file.path)

    struct File: Decodable {
        struct Group: Decodable {
            struct Key: Decodable { let pk: String }
            struct Test: Decodable {
                let tcId: Int
                let comment: String
                let msg: String
                let sig: String
                let result: String
            }
            let publicKey: Key
            let tests: [Test]
        }
        let numberOfTests: Int
        let testGroups: [Group]
    }

    static func load() throws -> (declared: Int, cases: [WycheproofCase]) {
        let file = try JSONDecoder().decode(File.self, from: Data(contentsOf: file))
        let cases = file.testGroups.flatMap { group in
            group.tests.map { test in
                WycheproofCase(
                    tcId: test.tcId, comment: test.comment, publicKey: group.publicKey.pk, message: test.msg,
                    signature: test.sig, valid: test.result == "valid")
            }
        }
        return (file.numberOfTests, cases)
    }

    /// Empty when the file is absent or unreadable (`fileIsCompleteAndReadable` reports the latter).
    static let cases: [WycheproofCase] = (try? load().cases) ?? []
}

@Suite(
    "Wycheproof Ed25519 vectors",
    .enabled(
        if: Wycheproof.isPresent,
        "../shared/testvectors/wycheproof-ed25519_test.json is absent (a clone outside the Vigil workspace): the 151 Wycheproof cases did not run"
    ))
struct WycheproofTests {
    @Test func fileIsCompleteAndReadable() throws {
        let (declared, cases) = try Wycheproof.load()
        #expect(declared == 151)
        #expect(cases.count == declared)
        #expect(cases.filter(\.valid).count == 88)
        #expect(Set(cases.map(\.tcId)).count == cases.count, "tcIds are unique")
    }

    @Test(arguments: Wycheproof.cases)
    func verdictMatches(_ test: WycheproofCase) {
        let verdict: Bool
        do {
            let key = try Ed25519PublicKey(rawRepresentation: bytes(hex: test.publicKey))
            verdict = key.isValidSignature(bytes(hex: test.signature), for: bytes(hex: test.message))
        } catch {
            verdict = false
        }
        #expect(
            verdict == test.valid,
            "Wycheproof tcId \(test.tcId) (\(test.comment)): expected \(test.valid ? "valid" : "invalid")")
    }
}
