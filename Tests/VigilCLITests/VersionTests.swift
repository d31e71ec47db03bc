import Foundation
import Testing
import VigilTestSupport

/// One version in one place: `vigil --version` (text and `--json`) reports the constant in
/// Sources/VigilBase/VigilVersion.swift, CHANGELOG.md's newest release names the same one, and every
/// allowed API break is explained there.
@Suite("vigil --version and the changelog")
struct VersionTests {
    static func file(_ relative: String) throws -> String {
        String(
            decoding: try Data(contentsOf: URL(fileURLWithPath: VigilExecutable.packageRoot + "/" + relative)),
            as: UTF8.self)
    }

    /// The version written in VigilVersion.swift (`public static let version = "X.Y.Z"`).
    static func sourceVersion() throws -> String {
        let text = try file("Sources/VigilBase/VigilVersion.swift")
        let line = try #require(text.split(separator: "\n").first { $0.contains("public static let version = ") })
        return String(try #require(line.split(separator: "\"").dropFirst().first))
    }

    /// The newest release heading of CHANGELOG.md (`## [X.Y.Z] - YYYY-MM-DD`), skipping Unreleased.
    static func changelogVersion() throws -> String? {
        for line in try file("CHANGELOG.md").split(separator: "\n") where line.hasPrefix("## [") {
            let name = line.dropFirst(4).prefix { $0 != "]" }
            if name != "Unreleased" { return String(name) }
        }
        return nil
    }

    @Test("vigil --version prints the version and says the revision was not recorded by swift build")
    func plainText() async throws {
        let version = try Self.sourceVersion()
        let sandbox = try CLISandbox()
        defer { sandbox.remove() }
        let output = try await sandbox.vigil("--version")
        #expect(output.status == 0, "\(output.stderr)")
        // The test build is a plain `swift build`: a development build without a recorded revision.
        #expect(output.stdout == "vigil \(version) (development build, revision not recorded)\n")
        #expect(output.stderr.isEmpty)
    }

    @Test("vigil --version --json prints one vigil.version/v1 document with every key")
    func json() async throws {
        let version = try Self.sourceVersion()
        let sandbox = try CLISandbox()
        defer { sandbox.remove() }
        for arguments in [["--version", "--json"], ["--json", "--version"]] {
            let output = try await VigilExecutable.run(arguments, in: sandbox.work, environment: sandbox.environment)
            #expect(output.status == 0, "\(arguments): \(output.stderr)")
            let document = try #require(
                try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any])
            #expect(Set(document.keys) == ["schema", "version", "revision", "build"])
            #expect(document["schema"] as? String == "vigil.version/v1")
            #expect(document["version"] as? String == version)
            #expect(document["revision"] is NSNull)
            #expect(document["build"] as? String == "development")
        }
    }

    @Test("--json without --version is a usage error (64), and subcommands keep their own --json")
    func jsonAlone() async throws {
        let sandbox = try CLISandbox()
        defer { sandbox.remove() }
        let alone = try await sandbox.vigil("--json")
        #expect(alone.status == 64)
        #expect(alone.stderr.contains("--json"), "\(alone.stderr)")
        // A subcommand's own --json is left to it.
        let list = try await sandbox.vigil("plugin", "list", "--json")
        let document = try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [String: Any]
        #expect(document?["schema"] as? String == "vigil.plugin-list/v1", "\(list.stdout)\(list.stderr)")
        let help = try await sandbox.vigil("--help")
        #expect(help.stdout.contains("--version") && help.stdout.contains("vigil.version/v1"), "\(help.stdout)")
    }

    @Test("CHANGELOG.md's newest release is the version the code reports")
    func changelogNamesTheVersion() throws {
        let version = try Self.sourceVersion()
        #expect(try Self.changelogVersion() == version)
        #expect(try Self.file("CHANGELOG.md").contains("## [Unreleased]"))
    }

    @Test("every allowed API break in .api-breakage-allowlist is quoted in CHANGELOG.md")
    func allowListIsExplained() throws {
        let changelog = try Self.file("CHANGELOG.md")
        let entries = try Self.file(".api-breakage-allowlist").split(separator: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && !$0.hasPrefix("#") }
        for entry in entries {
            #expect(changelog.contains(entry), "CHANGELOG.md does not explain the allowed break: \(entry)")
        }
    }
}
