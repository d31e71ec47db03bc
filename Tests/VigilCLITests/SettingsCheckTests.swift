import Foundation
import Testing
import VigilTestSupport

/// Issue 28, point 1: plugin settings are checked wherever plugins are checked. Each example
/// of the issue (and a variant of each kind) through `vigil check --json` and the build check
/// (`vigil-plugin-tool check --declarations-only`, what Plugins/VigilBuildCheck runs), with the
/// real signed first-party manifests.
@Suite("Plugin settings in vigil check and the build check", .timeLimit(.minutes(2)))
struct SettingsCheckTests {
    /// A `vigil.toml` activating the supervisor and the soundscape, then `extra`.
    static func config(_ extra: String) -> String {
        FirstPartyConfig.text(plugins: ["supervisor", "soundscape"], extra)
    }

    /// One bad configuration: the table text, the line (1-based, in the whole file) and the
    /// plugin the error must name, and what its message must say.
    struct Case: CustomStringConvertible, Sendable {
        var table: String
        /// The text on the line the error points at.
        var lineText: String
        var plugin: String?
        var says: [String]
        var description: String { table }
    }

    static let cases: [Case] = [
        // The issue's examples.
        Case(
            table: #"[supervisor]\#nworkers = [{ name = "signer", command = "/bin/true", argz = ["x"] }]"#,
            lineText: "argz", plugin: "supervisor",
            says: ["setting `workers[0].argz`: unknown setting; did you mean `args`?"]),
        Case(
            table: #"[supervisor]\#nworkers = [{ name = "signer", command = "/bin/true", restart = "on-fail" }]"#,
            lineText: "restart", plugin: "supervisor",
            says: [
                #"setting `workers[0].restart`: "on-fail" is not one of "always", "on-failure", "never"; did you mean "on-failure"?"#
            ]),
        Case(
            table: "[soundscape]\nvolume = \"high\"", lineText: "volume", plugin: "soundscape",
            says: [#"setting `volume`: expected a number from -1 to 1, found string "high""#]),
        Case(
            table: "[soundscape]\npresett = \"high\"", lineText: "presett", plugin: "soundscape",
            says: ["setting `presett`: unknown setting; did you mean `preset`?"]),
        Case(
            table: "[soundscape]\nsleep_timer_min = 99999", lineText: "sleep_timer_min", plugin: "soundscape",
            says: ["setting `sleep_timer_min`: 99999 is out of range; use a number from 0 to 1440"]),
        Case(
            table: "[hots]\nname = \"x\"", lineText: "[hots]", plugin: nil,
            says: ["unknown table [hots]", "did you mean [host]?", "foreign_tables"]),
        Case(
            table: "[supervisr]\nworkers = []", lineText: "[supervisr]", plugin: nil,
            says: ["unknown table [supervisr]", "did you mean [supervisor]?"]),
        // Variants of each kind: an array-of-tables worker with a misspelt key, a missing
        // required field, a wrong type in a nested array, a near choice of another plugin's key,
        // a table for a plugin that exists but is not activated.
        Case(
            table: "[[supervisor.workers]]\nname = \"signer\"\ncommand = \"/bin/true\"\nrestrat = \"always\"",
            lineText: "restrat", plugin: "supervisor",
            says: ["setting `workers[0].restrat`: unknown setting; did you mean `restart`?"]),
        Case(
            table: "[supervisor]\nworkers = [{ name = \"signer\" }]", lineText: "workers", plugin: "supervisor",
            says: ["setting `workers[0].command`: missing; this field is required"]),
        Case(
            table: "[supervisor]\nworkers = [{ name = \"signer\", command = \"/bin/true\", args = [1] }]",
            lineText: "args", plugin: "supervisor",
            says: ["setting `workers[0].args[0]`: expected a string, found integer 1"]),
        Case(
            table: "[soundscape]\npreset = \"hihg\"", lineText: "preset", plugin: "soundscape",
            says: [#"did you mean "high"?"#]),
        Case(
            table: "[soundscape]\nsoundscape = \"ocen-waves\"", lineText: "ocen-waves", plugin: "soundscape",
            says: [#"or a name from files; did you mean "ocean-waves"?"#]),
        Case(
            table: "[silent-engine]\nmode = \"sine\"", lineText: "[silent-engine]", plugin: nil,
            says: ["[silent-engine] configures the plugin silent-engine, which is not activated"]),
    ]

    struct Project {
        let dir: TestDirectory
        var configPath: String { dir.url("vigil.toml") }
        var environment: [String: String?] {
            [
                "XDG_STATE_HOME": dir.url("state"), "XDG_RUNTIME_DIR": dir.url("run"),
                "VIGIL_FIRST_PARTY_MANIFESTS": VigilExecutable.packageRoot + "/manifests",
            ]
        }
        init(_ text: String) throws {
            dir = try TestDirectory("vigil-settings-check")
            try dir.write("vigil.toml", text)
        }
        /// The 1-based line of the first line containing `needle`.
        func line(of needle: String) throws -> Int {
            let lines = try String(contentsOfFile: configPath, encoding: .utf8).split(
                separator: "\n", omittingEmptySubsequences: false)
            return try #require(lines.firstIndex { $0.contains(needle) }) + 1
        }
    }

    @Test("vigil check --json: each problem is an error located at its key, with a near name", arguments: cases)
    func checkJSON(_ example: Case) async throws {
        let project = try Project(Self.config(example.table))
        defer { project.dir.remove() }
        let output = try await VigilExecutable.run(
            ["check", "--json", "--declarations-only", "--config", project.configPath], in: project.dir.path,
            environment: project.environment)
        #expect(output.status == 1, "\(output.stdout)\(output.stderr)")
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any], "\(output.stdout)")
        let diagnostics = try #require(document["diagnostics"] as? [[String: Any]])
        let errors = diagnostics.filter { $0["severity"] as? String == "error" }
        #expect(errors.count == 1, "\(diagnostics)")
        let error = try #require(errors.first)
        for text in example.says {
            #expect((error["message"] as? String)?.contains(text) == true, "\(error["message"] ?? "")")
        }
        #expect(error["plugin"] as? String == example.plugin)
        #expect(error["line"] as? Int == (try project.line(of: example.lineText)), "\(error)")
        #expect(error["file"] as? String == project.configPath)
    }

    @Test(
        "the build check (the tool the SwiftPM build plugin runs) fails with the same located error", arguments: cases)
    func buildCheck(_ example: Case) async throws {
        let project = try Project(Self.config(example.table))
        defer { project.dir.remove() }
        let output = try await VigilExecutable.run(
            executable: VigilExecutable.pluginToolPath,
            ["check", "--declarations-only", "--config", project.configPath],
            in: project.dir.path, environment: project.environment)
        #expect(output.status == 1, "\(output.stderr)")
        let line = try project.line(of: example.lineText)
        let errors = output.stderr.split(separator: "\n").filter { $0.contains(": error: ") }
        #expect(errors.count == 1, "\(output.stderr)")
        let text = String(try #require(errors.first))
        #expect(text.hasPrefix("\(project.configPath):\(line):"), "\(text)")
        if let plugin = example.plugin { #expect(text.contains("error: [\(plugin)] "), "\(text)") }
        for expected in example.says { #expect(text.contains(expected), "\(text)") }
    }

    @Test("a valid configuration, and a table marked foreign, pass with no error")
    func validPasses() async throws {
        let project = try Project(
            Self.config(
                """
                [supervisor]
                notification = false
                workers = [{ name = "signer", command = "/bin/true", args = ["x"], restart = "on-failure" }]

                [soundscape]
                preset = "high"
                volume = 0.5
                sleep_timer_min = 90

                [myapp]
                anything = 1
                """
            ).replacingOccurrences(
                of: "services = [\"supervisor\"]", with: "services = [\"supervisor\"]\nforeign_tables = [\"myapp\"]"))
        defer { project.dir.remove() }
        let output = try await VigilExecutable.run(
            ["check", "--json", "--declarations-only", "--config", project.configPath], in: project.dir.path,
            environment: project.environment)
        #expect(output.status == 0, "\(output.stdout)\(output.stderr)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any])
        #expect(document["errors"] as? Int == 0, "\(output.stdout)")
    }

    @Test("the trust review shows the settings the plugin accepts, in text and JSON")
    func trustReviewShowsSettings() async throws {
        let project = try Project("plugins = [\"supervisor\"]\n")
        defer { project.dir.remove() }
        let text = try await VigilExecutable.run(
            ["plugin", "trust", "supervisor", "--yes", "--config", project.configPath], in: project.dir.path,
            environment: project.environment)
        #expect(text.status == 0, "\(text.stderr)")
        let review = text.stdout + text.stderr
        #expect(review.contains("settings (its [supervisor] table):"), "\(review)")
        #expect(review.contains("- backoff_initial_ms: an integer from 0 to 3600000, default 100 — "), "\(review)")
        #expect(
            review.contains(#"- workers[].restart: one of "always", "on-failure", "never" — when to start it again"#),
            "\(review)")
        #expect(review.contains("- workers[].name: a non-empty string (required)"), "\(review)")
        let json = try await VigilExecutable.run(
            ["plugin", "trust", "soundscape", "--yes", "--json", "--config", project.configPath], in: project.dir.path,
            environment: project.environment)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let settings = try #require(document["settings"] as? [[String: Any]], "\(json.stdout)")
        let volume = try #require(settings.first { $0["key"] as? String == "volume" })
        #expect(volume["accepts"] as? String == "a number from -1 to 1")
        #expect(volume["default"] as? String == "-1")
        #expect(volume["type"] as? String == "number")
    }
}
