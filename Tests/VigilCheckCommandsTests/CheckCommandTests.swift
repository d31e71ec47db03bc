import ArgumentParser
import Foundation
import Testing
import VigilCore
import VigilTestSupport

@testable import VigilCheckCommands
@testable import VigilHostCheck

/// `vigil check` and `vigil plugin trust` as the `vigil` CLI and the plugins' tool share them:
/// argument parsing and validation (usage errors exit 64), the JSON documents and the summary line.
@Suite("Check commands: parsing, JSON documents, summary")
struct CheckCommandTests {
    /// `value` serialized and read back by Foundation's parser: proof that it is one JSON document.
    static func document(_ value: JSONValue) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(value.serialized()))
        return try #require(object as? [String: Any])
    }

    @Test("check --json on a broken vigil.toml: one located error, every key present")
    func checkJSONOfABrokenConfig() throws {
        let project = try HostProject()
        defer { project.remove() }
        try project.config("plugins = [\"a\"]\n[host]\nbackground_modes = \"audio\"\n")
        let report = HostCheck(entries: [], environment: project.environment).run(configPath: project.configPath)
        let json = try Self.document(CheckJSON.encode(report))
        #expect(json["schema"] as? String == "vigil.check/v2")
        #expect(json["config"] as? String == project.configPath)
        #expect(json["errors"] as? Int == 1 && json["warnings"] as? Int == 0)
        let diagnostics = try #require(json["diagnostics"] as? [[String: Any]])
        let diagnostic = try #require(diagnostics.first)
        #expect(diagnostic["severity"] as? String == "error")
        #expect(diagnostic["file"] as? String == project.configPath && diagnostic["line"] as? Int == 3)
        #expect(diagnostic["plugin"] is NSNull, "an absent plugin is null, not a missing key")
        #expect((diagnostic["text"] as? String)?.hasPrefix("\(project.configPath):3:") == true)
        #expect((json["plugins"] as? [Any])?.isEmpty == true && (json["unsafe_plugins"] as? [Any])?.isEmpty == true)
    }

    @Test("check --json without any vigil.toml: the error, and null for what is unknown")
    func checkJSONWithoutConfig() throws {
        let project = try HostProject()
        defer { project.remove() }
        let report = HostCheck(entries: [], environment: project.environment).run(configPath: nil)
        let json = try Self.document(CheckJSON.encode(report))
        #expect(json["config"] is NSNull)
        #expect(json["errors"] as? Int == 1)
        let diagnostic = try #require((json["diagnostics"] as? [[String: Any]])?.first)
        #expect(diagnostic["file"] is NSNull && diagnostic["line"] is NSNull && diagnostic["column"] is NSNull)
    }

    @Test("the summary counts each plugin once, in the words of every output: verified, waiting for …, blocked, failed")
    func summaryLine() {
        func plugin(_ name: String, _ state: PluginStateName, _ phrase: String? = nil) -> HostCheck.Plugin {
            HostCheck.Plugin(name: name, state: state, phrase: phrase ?? state.rawValue, reason: nil, directory: nil)
        }
        var report = HostCheck.Report(
            configPath: "vigil.toml", diagnostics: [], unsafePlugins: [],
            plugins: ["a", "b", "d", "e", "f"].map { plugin($0, .verified) } + [plugin("c", .failed)])
        #expect(CheckSummary.plugins(report) == "5 verified, 1 failed")
        report.plugins[1] = plugin("b", .waiting, "waiting for D-Bus")
        report.plugins[2] = plugin("d", .blocked, "blocked by a missing declaration")
        report.plugins[3] = plugin("e", .waiting, "waiting for an audio output")
        report.plugins[4] = plugin("f", .waiting, "waiting for an audio output")
        #expect(
            CheckSummary.plugins(report)
                == "1 verified, 1 waiting for D-Bus, 2 waiting for an audio output, 1 blocked by a missing declaration, "
                + "1 failed")
    }

    @Test("check --json v2: each plugin's state, summary and reason; no \"ready\"")
    func checkJSONStates() throws {
        let report = HostCheck.Report(
            configPath: "vigil.toml", diagnostics: [], unsafePlugins: [],
            plugins: [
                HostCheck.Plugin(
                    name: "a", state: .waiting, phrase: "waiting for an audio output", reason: "no sound server",
                    directory: "/m/a"),
                HostCheck.Plugin(name: "b", state: .verified, phrase: "verified", reason: nil, directory: nil),
            ])
        let plugins = try #require(try Self.document(CheckJSON.encode(report))["plugins"] as? [[String: Any]])
        #expect(plugins.map { $0["state"] as? String } == ["waiting", "verified"])
        #expect(plugins[0]["summary"] as? String == "waiting for an audio output")
        #expect(plugins[0]["reason"] as? String == "no sound server" && plugins[1]["reason"] is NSNull)
        #expect(plugins.allSatisfy { Set($0.keys) == ["name", "state", "summary", "reason", "directory"] })
    }

    @Test("arguments: bad names, fingerprints and thresholds are usage errors (exit 64) saying which argument")
    func usageErrors() throws {
        _ = try Check.parse(["--json", "--declarations-only", "--config", "x.toml"])
        _ = try PluginTrust.parse(["engine", "--yes", "--threshold", "1"])
        for (arguments, fragment) in [
            (["../engine"], "NAME: "), (["engine", "--fingerprint", "ed25519:nope"], "--fingerprint: "),
            (["engine", "--threshold", "0"], "--threshold must be between 1"), (["host"], "NAME: "),
        ] {
            do {
                _ = try PluginTrust.parse(arguments)
                Issue.record("\(arguments) was accepted")
            } catch {
                #expect(PluginTrust.exitCode(for: error).rawValue == 64, "\(arguments)")
                #expect(
                    PluginTrust.message(for: error).contains(fragment),
                    "\(arguments): \(PluginTrust.message(for: error))")
            }
        }
        #expect(throws: (any Error).self) { _ = try Check.parse(["--no-such-flag"]) }
    }

    @Test("trust --json when nothing could be reviewed: the error with its code and location, the rest null")
    func trustJSONOfAnError() throws {
        let project = try HostProject()
        defer { project.remove() }
        try project.config("plugins = [\"a\"]\n[host]\nbackground_modes = \"audio\"\n")
        let error = try #require(
            #expect(throws: CoreError.self) {
                _ = try HostConfiguration.load(path: project.configPath, environment: project.environment)
            })
        let json = try Self.document(PluginTrust.json(review: nil, outcome: nil, error: error))
        #expect(json["schema"] as? String == "vigil.trust/v1")
        #expect(json["trusted"] as? Bool == false)
        for key in ["name", "version", "fingerprint", "keys", "threshold", "outcome", "downgrade"] {
            #expect(json[key] is NSNull, "\(key)")
        }
        let reported = try #require(json["error"] as? [String: Any])
        #expect(reported["code"] as? String == error.code.description)
        #expect(reported["message"] as? String == error.message)
        let location = try #require(reported["location"] as? [String: Any])
        #expect(location["file"] as? String == project.configPath)
        #expect(location["line"] as? Int == 3)
    }
}
