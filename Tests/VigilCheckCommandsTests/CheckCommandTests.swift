import ArgumentParser
import Foundation
import Testing
import VigilCore
import VigilCrypto
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

    /// Checks `project` with a vigil.toml activating and trusting `keys` (name → fingerprint, in
    /// that order), expecting no error.
    static func checkTrusting(_ project: HostProject, _ keys: KeyValuePairs<String, String>) throws
        -> HostCheck.Report
    {
        let names = keys.map { "\"\($0.key)\"" }.joined(separator: ", ")
        try project.config(
            "plugins = [\(names)]\n[trusted_plugins]\n" + keys.map { "\($0.key) = \"\($0.value)\"\n" }.joined())
        let report = HostCheck(entries: ["ledger"], environment: project.environment, probeEnvironment: false)
            .run(configPath: project.configPath)
        #expect(!report.hasErrors, "\(report.diagnostics)")
        return report
    }

    @Test("check shows how long each plugin's signature stays fresh (text and --json), with the grace warning")
    func signatureFreshness() throws {
        let project = try HostProject()
        defer { project.remove() }
        let now = Freshness.systemNow()
        let soon = Freshness.formatRFC3339(now + 3 * 86400 - 30)
        let later = Freshness.formatRFC3339(now + 30 * 86400 - 30)
        let soonKey = try project.signedPlugin("soon", extra: #", "expires": "\#(soon)""#)
        let laterKey = try project.signedPlugin("later", extra: #", "expires": "\#(later)""#)
        let neverKey = try project.signedPlugin("never")
        let report = try Self.checkTrusting(project, ["soon": soonKey, "later": laterKey, "never": neverKey])
        // The [freshness] grace warning (default 7 days) for the one expiring soon only.
        let warnings = report.diagnostics.filter { $0.message.contains("stays fresh for") }
        #expect(warnings.map(\.plugin) == ["soon"])
        // Text: one line per plugin with how long its signature stays fresh.
        let lines = report.plugins.map { CheckSummary.pluginLine($0, report) }
        #expect(lines[0].contains("soon: verified") && lines[0].contains("signature fresh for 2d 23h (until \(soon))"))
        #expect(lines[0].contains("within [freshness] grace (7d 0h)"))
        #expect(lines[1].contains("signature fresh for 29d 23h (until \(later))") && !lines[1].contains("warning"))
        #expect(!lines[2].contains("signature"), "a manifest without expires never expires")
        // JSON: every plugin has the keys, null without an expiry.
        let json = try Self.document(CheckJSON.encode(report))
        let plugins = try #require(json["plugins"] as? [[String: Any]])
        #expect(plugins[0]["expires"] as? String == soon && plugins[0]["freshness"] as? String == "expiring")
        let left = try #require(plugins[0]["fresh_for_seconds"] as? Int)
        #expect(left > 3 * 86400 - 600 && left <= 3 * 86400)
        #expect(plugins[1]["freshness"] as? String == "fresh")
        #expect(plugins[2]["expires"] is NSNull && plugins[2]["fresh_for_seconds"] is NSNull)
        #expect(plugins[2]["freshness"] is NSNull)
    }

    @Test("check warns while a plugin's revocation list is within [freshness] grace of its expiry")
    func revocationListFreshness() throws {
        let project = try HostProject()
        defer { project.remove() }
        let key = MinisignSecretKey.generate()
        let other = MinisignSecretKey.generate()
        try project.signedPlugin("alpha", key: key)
        try project.signedPlugin("beta", key: other)
        let now = Freshness.systemNow()
        for (name, signer, days) in [("alpha", key, Int64(2)), ("beta", other, Int64(30))] {
            try PluginRevoker.revoke(
                directory: project.dir.path + "/manifests/\(name)", keys: [], manifests: [], versionFloor: nil,
                expires: now + days * 86400, signers: [signer])
        }
        let report = try Self.checkTrusting(
            project, ["alpha": "\(key.publicKey.fingerprint)", "beta": "\(other.publicKey.fingerprint)"])
        let warnings = report.diagnostics.filter { $0.message.contains("revocation list stays fresh for") }
        #expect(warnings.map(\.plugin) == ["alpha"], "\(report.diagnostics)")
        #expect(warnings.first?.message.contains("revocation-expired") == true)
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
        #expect(
            plugins.allSatisfy {
                Set($0.keys) == [
                    "name", "state", "summary", "reason", "directory", "capabilities", "expires", "fresh_for_seconds",
                    "freshness",
                ]
            })
        #expect(plugins.allSatisfy { $0["capabilities"] is NSNull }, "no verified manifest: null")
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
