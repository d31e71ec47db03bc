import Foundation
import Logging
import Synchronization
import Testing
import VigilCore
import VigilPlugin
import VigilTestSupport

@testable import Vigil

/// Issue 28, point 1, at the host's start: the validator `vigil check` runs refuses a plugin
/// whose table its signed schema refuses, before it gets an instance, with a located
/// `invalid-setting`; a table nothing reads is logged with a near name.
@Suite("Plugin settings at the host's start", .timeLimit(.minutes(1)))
struct SettingsStartTests {
    static let firstParty = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../manifests").standardized.path

    /// A host of `text` with the built-in plugins and the shipped manifests, and its warnings.
    static func host(
        _ text: String, configurationWarnings: RecordingLogHandler? = nil
    ) throws -> (VigilHost, RecordingLogHandler, HostProject) {
        let project = try HostProject()
        try project.config(text)
        let handler = RecordingLogHandler()
        let logger = Logger(label: "settings-start") { _ in handler }
        let environment = project.dir.environment(["VIGIL_FIRST_PARTY_MANIFESTS": firstParty, "PATH": "/usr/bin:/bin"])
        var options = VigilHost.Options(publishStatus: false, environment: environment)
        if let configurationWarnings {
            options.configurationWarning = { warning in configurationWarnings.messages.withLock { $0.append(warning) } }
        }
        let host = try VigilHost(configPath: project.configPath, registry: .builtin, options: options, logger: logger)
        return (host, handler, project)
    }

    struct Case: CustomStringConvertible, Sendable {
        var plugin: String
        var table: String
        var lineText: String
        var says: String
        var description: String { table }
    }

    static let cases: [Case] = [
        Case(
            plugin: "supervisor",
            table: #"[supervisor]\#nworkers = [{ name = "signer", command = "/bin/true", argz = ["x"] }]"#,
            lineText: "argz", says: "setting `workers[0].argz`: unknown setting; did you mean `args`?"),
        Case(
            plugin: "supervisor",
            table: #"[supervisor]\#nworkers = [{ name = "signer", command = "/bin/true", restart = "on-fail" }]"#,
            lineText: "restart", says: #"did you mean "on-failure"?"#),
        Case(
            plugin: "soundscape", table: "[soundscape]\nvolume = \"high\"", lineText: "volume",
            says: #"setting `volume`: expected a number from -1 to 1, found string "high""#),
        Case(
            plugin: "soundscape", table: "[soundscape]\npresett = \"high\"", lineText: "presett",
            says: "setting `presett`: unknown setting; did you mean `preset`?"),
        Case(
            plugin: "soundscape", table: "[soundscape]\nsleep_timer_min = 99999", lineText: "sleep_timer_min",
            says: "setting `sleep_timer_min`: 99999 is out of range; use a number from 0 to 1440"),
        Case(
            plugin: "soundscape", table: "[soundscape]\nmpris = \"yes\"", lineText: "mpris",
            says: #"setting `mpris`: expected true or false, found string "yes""#),
    ]

    @Test(
        "a plugin whose table its schema refuses is failed with a located invalid-setting, never instantiated",
        arguments: cases)
    func refusedAtStart(_ example: Case) async throws {
        let text = FirstPartyConfig.text(plugins: [example.plugin], example.table)
        let (host, _, project) = try Self.host(text)
        defer { project.remove() }
        let status = await host.status()
        guard case .failed(let failure) = status[plugin: example.plugin]?.state else {
            Issue.record(
                "expected \(example.plugin) to be failed, got \(String(describing: status[plugin: example.plugin]))")
            return
        }
        #expect(failure.code == .plugin(.invalidSetting))
        #expect(failure.message.contains(example.says), "\(failure.message)")
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let line = try #require(lines.firstIndex { $0.contains(example.lineText) }) + 1
        #expect(failure.message.contains("\(project.configPath):\(line):"), "\(failure.message)")
    }

    @Test("the other plugins start; a refused one stays failed through keepAlive")
    func othersStart() async throws {
        let (host, _, project) = try Self.host(
            FirstPartyConfig.text(
                plugins: ["supervisor", "soundscape"],
                "[supervisor]\nnotification = false\n\n[soundscape]\npresett = \"high\""))
        defer { project.remove() }
        let status = await host.keepAlive()
        #expect(status[plugin: "supervisor"]?.state == .running)
        #expect(status[plugin: "soundscape"]?.state.name == "failed")
        await host.stop()
    }

    @Test(
        "a table nothing reads is logged at start with the table it may mean",
        arguments: [
            ("[hots]\nname = \"x\"", "unknown table [hots]", "did you mean [host]?"),
            ("[supervisr]\nworkers = []", "unknown table [supervisr]", "did you mean [supervisor]?"),
        ])
    func strayTableLogged(_ example: (String, String, String)) async throws {
        let text = FirstPartyConfig.text(plugins: ["supervisor"], "[supervisor]\nnotification = false\n\n" + example.0)
        let shown = RecordingLogHandler()
        let (_, handler, project) = try Self.host(text, configurationWarnings: shown)
        defer { project.remove() }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let header = String(example.0.prefix { $0 != "\n" })
        let line = try #require(lines.firstIndex { $0 == header }) + 1
        let warning = try #require(handler.warnings.first { $0.contains(example.1) }, "\(handler.warnings)")
        #expect(warning.contains(example.2), "\(warning)")
        #expect(warning.hasPrefix("\(project.configPath):\(line):1: "), "\(warning)")
        // And to the host's configuration-warning hook (what `vigil up` prints on standard error).
        #expect(shown.warnings.count == 1, "\(shown.warnings)")
        #expect(shown.warnings.first.map { warning.hasPrefix($0) && $0.contains(example.2) } == true)
    }
}
