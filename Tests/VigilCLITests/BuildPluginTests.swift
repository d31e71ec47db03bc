import Foundation
import Testing
import VigilTestSupport

/// The VigilBuildCheck build-tool plugin, applied by a real host package and run by a real
/// `swift build`: its `vigil check` diagnostics appear in the build output with file and line, and
/// a trust failure fails the build.
///
/// One temporary host package depends on this package by path; it is built once (which compiles
/// Vigil and its dependencies: a minute or two) and rebuilt once, incrementally.
@Suite("VigilBuildCheck plugin")
struct BuildPluginTests {
    static let silentEngineKey = "ed25519:JQZlvvSz54g2JyAymbg4TFDYnSCgJgID8VRXRsRBfX4="
    static let soundscapeKey = "ed25519:QaLGlZoeYW/jvbHckvjgkjV1ImF3vfGrW3ZB/9Ln8sI="

    /// `vigil.toml` for the test host: silent-engine is activated and trusted, but `[host]` does
    /// not declare `background_modes`.
    static func config(trusting key: String) -> String {
        """
        # Test host for the VigilBuildCheck plugin.
        plugins = ["silent-engine"]

        [host]
        name = "build-plugin-test"

        [trusted_plugins]
        silent-engine = "\(key)"

        """
    }

    @Test(
        "swift build prints vigil.toml:LINE:COL warnings; a trust failure fails the rebuild",
        .timeLimit(.minutes(20)))
    func warningsThenTrustFailure() async throws {
        let dir = try TestDirectory("vigil-build-plugin")
        defer { dir.remove() }
        try dir.write(
            "host/Package.swift",
            """
            // swift-tools-version:6.1
            import PackageDescription

            let package = Package(
                name: "TestHost",
                dependencies: [.package(name: "vigil", path: \(literal(VigilExecutable.packageRoot)))],
                targets: [
                    .executableTarget(
                        name: "TestHost",
                        plugins: [.plugin(name: "VigilBuildCheck", package: "vigil")])
                ]
            )

            """)
        try dir.write("host/Sources/TestHost/main.swift", "print(\"test host\")\n")
        let configPath = try dir.write("host/vigil.toml", Self.config(trusting: Self.silentEngineKey))
        let swift = try #require(RuntimeFixtures.which("swift"), "swift is not on PATH")

        func build() async throws -> (status: Int32, output: String) {
            let r = try await VigilExecutable.run(
                executable: swift,
                ["build", "--package-path", dir.url("host"), "--scratch-path", dir.url("scratch")],
                in: dir.path,
                environment: [
                    "XDG_STATE_HOME": dir.url("state"), "XDG_CONFIG_HOME": dir.url("config"),
                    "VIGIL_FIRST_PARTY_MANIFESTS": nil,
                ])
            return (r.status, r.stdout + r.stderr)
        }

        // (a) Only a warning: the build succeeds and shows it where silent-engine is activated.
        let text = Self.config(trusting: Self.silentEngineKey)
        let expectedLine = try #require(lineNumber(of: "plugins", in: text))
        let expectedColumn = try #require(column(of: "\"silent-engine\"", onLine: expectedLine, in: text))
        let first = try await build()
        #expect(first.status == 0, "the build failed:\n\(first.output)")
        #expect(diagnostics(in: first.output, severity: "error", plugin: "silent-engine").isEmpty, "\(first.output)")
        let warning = try #require(
            diagnostics(in: first.output, severity: "warning", plugin: "silent-engine").first {
                $0.path == configPath && $0.text.contains("requires background_modes to include \"audio\"")
            },
            "no located [silent-engine] background_modes warning for \(configPath) in:\n\(first.output)")
        #expect(warning.line == expectedLine)
        #expect(warning.column == expectedColumn)

        // (b) The trusted key no longer matches the manifest's signer: the edit of vigil.toml re-runs
        // the check, which fails, and so does the build.
        try dir.write("host/vigil.toml", Self.config(trusting: Self.soundscapeKey))
        let second = try await build()
        #expect(second.status != 0, "the rebuild succeeded despite the wrong trusted key:\n\(second.output)")
        let error = diagnostics(in: second.output, severity: "error", plugin: "silent-engine").first {
            $0.path == configPath && $0.text.contains(Self.soundscapeKey) && $0.text.contains(Self.silentEngineKey)
        }
        #expect(error != nil, "no located [silent-engine] trust error for \(configPath) in:\n\(second.output)")
        #expect(error?.line == expectedLine)
    }

    struct Diagnostic {
        let path: String
        let line: Int
        let column: Int
        let text: String
    }

    /// Every `PATH:LINE:COL: SEVERITY: [PLUGIN] …` line in `output`.
    func diagnostics(in output: String, severity: String, plugin: String) -> [Diagnostic] {
        output.split(separator: "\n").compactMap { line in
            let marker = ": \(severity): [\(plugin)]"
            guard let range = line.range(of: marker) else { return nil }
            let location = line[..<range.lowerBound].split(separator: ":")
            guard location.count >= 3, let l = Int(location[location.count - 2]), let c = Int(location.last!) else {
                return nil
            }
            let path = location.dropLast(2).joined(separator: ":")
            return Diagnostic(path: path, line: l, column: c, text: String(line[range.upperBound...]))
        }
    }

    /// The 1-based number of the first line of `text` that starts with `prefix`.
    func lineNumber(of prefix: String, in text: String) -> Int? {
        text.split(separator: "\n", omittingEmptySubsequences: false).firstIndex { $0.hasPrefix(prefix) }.map { $0 + 1 }
    }

    /// The 1-based column of `needle` on line `line` of `text`.
    func column(of needle: String, onLine line: Int, in text: String) -> Int? {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard line >= 1, line <= lines.count, let range = lines[line - 1].range(of: needle) else { return nil }
        return lines[line - 1].distance(from: lines[line - 1].startIndex, to: range.lowerBound) + 1
    }

    /// `value` as a Swift string literal.
    func literal(_ value: String) -> String {
        "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}
