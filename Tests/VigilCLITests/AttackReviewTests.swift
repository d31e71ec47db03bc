import Foundation
import Testing
import VigilTestSupport

/// The attack review's cases, run on the real binary: each would pass (wrongly) or crash on the
/// code before the fixes.
@Suite(.serialized) struct AttackReviewTests {
    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    /// A trusted plugin `name` activated in work/vigil.toml.
    func trustedProject(_ s: CLISandbox, _ name: String = "demo", version: String = "1.0.0") async throws {
        try await s.makePlugin(name, version: version)
        try s.dir.write("work/vigil.toml", "plugins = [\"\(name)\"]\n[host]\nbackground_modes = [\"audio\"]\n")
        let r = try await s.vigil("plugin", "trust", name, "--yes")
        #expect(r.status == 0, "\(r.stderr)")
    }

    @Test func aConfigOthersCanWriteIsRefusedByEveryCommand() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        try await trustedProject(s)
        #expect(try await s.vigil("plugin", "list").status == 0)
        #expect(chmod(s.dir.url("work/vigil.toml"), 0o666) == 0)
        for args in [
            ["check"], ["plugin", "list"], ["plugin", "untrust", "demo"], ["plugin", "trust", "demo", "--yes"],
        ] {
            let r = try await VigilExecutable.run(args, in: s.work, environment: s.environment)
            #expect(r.status == 1, "\(args): \(r.stdout) \(r.stderr)")
            #expect(r.stderr.contains("chmod go-w \(s.dir.url("work/vigil.toml"))"), "\(args): \(r.stderr)")
        }
        #expect(try s.dir.mode("work/vigil.toml") == 0o666, "trust never rewrote it")
        #expect(try s.text("vigil.toml").contains("demo = "), "untrust never edited it")
    }

    /// 5,000 `[` or 300,000 `{b=` and a NUL crashed every command that reads vigil.toml.
    @Test(arguments: [
        "a = " + String(repeating: "[", count: 5_000) + "\u{0}",
        "a = " + String(repeating: "{b=", count: 300_000) + "\u{0}",
        "a = " + String(repeating: "{b=", count: 300_000),
    ])
    func deeplyNestedConfigsAreErrorsNotCrashes(text: String) async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        try s.dir.write("work/vigil.toml", text)
        for args in [
            ["check"], ["plugin", "list"], ["plugin", "trust", "demo", "--yes"], ["plugin", "untrust", "demo"],
            ["plugin", "verify", "manifests/demo"], ["check", "--json"], ["plugin", "list", "--json"],
        ] {
            let r = try await VigilExecutable.run(args, in: s.work, environment: s.environment)
            #expect(r.status == 1, "\(args) exited \(r.status): \(r.stderr.prefix(300))")
            let expected = text.hasSuffix("\u{0}") ? "NUL byte" : "vigil.toml:1:"
            if args.contains("--json") {
                // One document; the location is a field (check's "text" renders it too).
                let doc = try Self.json(r.stdout)
                let located =
                    (doc["diagnostics"] as? [[String: Any]])?.first?["line"] as? Int
                    ?? ((doc["error"] as? [String: Any])?["location"] as? [String: Any])?["line"] as? Int
                #expect(located == 1, "\(args): \(r.stdout.prefix(300))")
            } else {
                #expect((r.stderr + r.stdout).contains(expected), "\(args): \(r.stderr.prefix(300))")
            }
        }
    }

    @Test func aNonRegularVigilTomlStopsTheSearchInsteadOfEditingTheParent() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        try await s.makePlugin("demo")
        try s.dir.write("work/vigil.toml", "plugins = []\n")
        try s.dir.makeDirectory("work/sub")
        #expect(symlink(s.dir.url("work/nothing"), s.dir.url("work/sub/vigil.toml")) == 0)
        let r = try await VigilExecutable.run(
            ["plugin", "trust", "demo", "--yes", "--fingerprint", try s.fingerprint(ofKey: "demo")],
            in: s.dir.url("work/sub"), environment: s.environment)
        #expect(r.status == 1)
        #expect(r.stderr.contains("\(s.dir.url("work/sub/vigil.toml")) is a symbolic link to nothing"), "\(r.stderr)")
        #expect(try s.text("vigil.toml") == "plugins = []\n", "the parent's file is untouched")
    }

    /// check, list and up decide readiness by the same path: no state directory, or an unsafe
    /// one, is an error for all three (check and list used to call the plugin ready).
    @Test func checkListAndUpAgreeWhenTheStateIsUnusable() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        try await trustedProject(s)
        var noState = s.environment
        noState["XDG_STATE_HOME"] = .some(nil)
        noState["HOME"] = .some(nil)
        let check = try await VigilExecutable.run(["check", "--json"], in: s.work, environment: noState)
        #expect(check.status == 1)
        let doc = try Self.json(check.stdout)
        #expect((doc["plugins"] as? [[String: Any]])?.first?["state"] as? String == "failed")
        #expect(check.stdout.contains("neither XDG_STATE_HOME nor HOME"))
        let list = try await VigilExecutable.run(["plugin", "list", "--json"], in: s.work, environment: noState)
        let row = try #require((try Self.json(list.stdout)["plugins"] as? [[String: Any]])?.first)
        #expect(row["status"] as? String == "error", "\(list.stdout)")
        let up = try await VigilExecutable.run(["up"], in: s.work, environment: noState)
        #expect(up.status == 78, "\(up.stderr)")  // EX_CONFIG: the host cannot work so
        #expect(up.stderr.contains("neither XDG_STATE_HOME nor HOME"))

        // A state directory others can write: check refuses what up refuses.
        try s.dir.makeDirectory("state/vigil")
        #expect(chmod(s.dir.url("state/vigil"), 0o777) == 0)
        let unsafe = try await s.vigil("check")
        #expect(unsafe.status == 1)
        #expect(unsafe.stderr.contains("writable by group or others"), "\(unsafe.stderr)")
        #expect(unsafe.stdout.contains("0 verified, 1 failed"), "\(unsafe.stdout)")
    }

    /// vigil.toml must not hold the new key when the rollback state cannot be written.
    @Test func trustIsAllOrNothing() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        try await s.makePlugin("demo")
        try s.dir.write("work/vigil.toml", "plugins = [\"demo\"]\n")
        try s.dir.makeDirectory("state/vigil")
        try s.dir.write("state/vigil/rollback.json", "{}", mode: 0o600)
        let r = try await s.vigil("plugin", "trust", "demo", "--yes")
        #expect(r.status == 1)
        #expect(r.stderr.contains("rollback state"), "\(r.stderr)")
        #expect(try s.text("vigil.toml") == "plugins = [\"demo\"]\n")
    }

    @Test func theReviewShowsADowngradeAndAForeignKeyForAFirstPartyName() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        try await trustedProject(s, "demo", version: "2.0.0")
        try await s.makePlugin("demo", version: "2.0.0-rc.1")
        let text = try await s.vigil("plugin", "trust", "demo", "--yes")
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("DOWNGRADE from 2.0.0 to 2.0.0-rc.1"), "\(text.stdout)")
        try await s.makePlugin("demo", version: "1.0.0")
        let json = try await s.vigil("plugin", "trust", "demo", "--json")
        #expect(json.status == 1, "no --yes: reviewed, not trusted")
        let doc = try Self.json(json.stdout)
        let downgrade = try #require(doc["downgrade"] as? [String: Any])
        #expect(downgrade["from"] as? String == "2.0.0-rc.1" && downgrade["to"] as? String == "1.0.0")
        #expect((doc["error"] as? [String: Any])?["code"] as? String == "trust-declined")
        let declined = (doc["error"] as? [String: Any])?["message"] as? String ?? ""
        #expect(declined.contains("--json asks nothing") && declined.contains("--yes"), "\(declined)")
        #expect(doc["trusted"] as? Bool == false)
        #expect(doc.keys.contains("expected_first_party_key") && doc["expected_first_party_key"] is NSNull)

        try await s.makePlugin("silent-engine", keyName: "impostor")
        let impostor = try await s.vigil("plugin", "trust", "silent-engine", "--json")
        let idoc = try Self.json(impostor.stdout)
        #expect(idoc["expected_first_party_key"] as? String == "ed25519:JQZlvvSz54g2JyAymbg4TFDYnSCgJgID8VRXRsRBfX4=")
        let itext = try await s.vigil("plugin", "trust", "silent-engine", "--yes")
        #expect(itext.stdout.contains("this is not the first-party key for silent-engine (expected ed25519:JQZlvv"))
    }

    /// C1 controls and bidi overrides from a signed manifest never reach the terminal, in any
    /// command; JSON keeps the exact text.
    @Test func untrustedTextIsEscapedWhenRendered() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        try await s.makePlugin("demo")
        try s.dir.write(
            "work/manifests/demo/plugin.json",
            """
            {"schema": "vigil.plugin-manifest/v1", "name": "demo", "version": "1.0.0", "entry": "demo\\u009b2J",
             "description": "evil\\u202eder\\u009b31m",
             "host_requirements": [{"kind": "executable", "value": "no-such-tool\\u009b2J", "why": "because\\u202e"}],
             "resources": [{"path": "data.bin"}]}
            """)
        #expect(try await s.vigil("plugin", "sign", "manifests/demo", "--key", "keys/demo.key").status == 0)
        try s.dir.write("work/vigil.toml", "plugins = [\"demo\"]\n")
        let outputs = [
            try await s.vigil("plugin", "trust", "demo", "--yes"), try await s.vigil("check"),
            try await s.vigil("plugin", "list"), try await s.vigil("plugin", "verify", "manifests/demo"),
        ]
        for r in outputs {
            let all = r.stdout + r.stderr
            #expect(!all.unicodeScalars.contains { $0.value == 0x9B || $0.value == 0x202E }, "\(all)")
        }
        #expect(outputs[1].stderr.contains("no-such-tool?2J"), "\(outputs[1].stderr)")
        let json = try await s.vigil("check", "--json")
        #expect(!json.stdout.unicodeScalars.contains { $0.value == 0x9B || $0.value == 0x202E }, "escaped as \\u")
        let messages = ((try Self.json(json.stdout))["diagnostics"] as? [[String: Any]] ?? []).compactMap {
            $0["message"] as? String
        }
        #expect(messages.contains { $0.contains("no-such-tool\u{9B}2J") }, "JSON keeps the exact text: \(messages)")
    }

    /// A broken host-local plugin directory is an error, never a reason to use the first-party
    /// copy; check names the directory each plugin came from.
    @Test func aBrokenLocalPluginIsAnErrorAndCheckSaysWherePluginsCameFrom() async throws {
        let s = try CLISandbox(realFirstParty: true)
        defer { s.remove() }
        try s.dir.write("work/vigil.toml", "plugins = [\"supervisor\"]\n[host]\nservices = [\"supervisor\"]\n")
        #expect(try await s.vigil("plugin", "trust", "supervisor", "--yes").status == 0)
        let ok = try await s.vigil("check")
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stdout.contains("supervisor: verified, from \(s.firstParty)/supervisor"), "\(ok.stdout)")
        try s.dir.makeDirectory("work/manifests/supervisor")
        let broken = try await s.vigil("check", "--json")
        #expect(broken.status == 1)
        let doc = try Self.json(broken.stdout)
        let plugin = try #require((doc["plugins"] as? [[String: Any]])?.first)
        #expect(plugin["state"] as? String == "failed")
        #expect(broken.stdout.contains("has no plugin.json"), "\(broken.stdout)")
    }

    @Test func everyJSONCommandPrintsOneDocumentWithNullsEvenOnErrors() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        try s.dir.write("work/vigil.toml", "plugins = [\"Bad\"]\n")
        let list = try await s.vigil("plugin", "list", "--json")
        #expect(list.status == 1)
        let listDoc = try Self.json(list.stdout)
        #expect((listDoc["error"] as? [String: Any])?["code"] as? String == "config-invalid")
        #expect(listDoc["config"] is NSNull)
        let check = try await s.vigil("check", "--json")
        let checkDoc = try Self.json(check.stdout)
        let diagnostic = try #require((checkDoc["diagnostics"] as? [[String: Any]])?.first)
        #expect(diagnostic.keys.contains("plugin") && diagnostic["plugin"] is NSNull, "null, not a missing key")
        try s.dir.write("work/vigil.toml", "plugins = []\n")
        let trust = try await s.vigil("plugin", "trust", "nothing-here", "--json", "--yes")
        #expect(trust.status == 1)
        let trustDoc = try Self.json(trust.stdout)
        #expect((trustDoc["error"] as? [String: Any])?["code"] as? String == "plugin-not-found")
        #expect(trustDoc["version"] is NSNull)
    }

    /// `vigil` is the runtime directory itself open to all; `parent` is XDG_RUNTIME_DIR open to
    /// all with its vigil/ 0700, which the old check (the runtime directory alone) accepted: the
    /// directories above it go through the StrictModes check every state file gets.
    @Test(arguments: ["vigil", "parent"])
    func statusRefusesAnUnsafeRuntimeDirectoryWithItsOwnExitAndOneDocument(opened: String) async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        try s.dir.makeDirectory("run/vigil")
        #expect(chmod(s.dir.url("run/vigil"), opened == "vigil" ? 0o777 : 0o700) == 0)
        if opened == "parent" { #expect(chmod(s.dir.url("run"), 0o777) == 0) }
        let fix = opened == "vigil" ? "chmod 700" : "chmod go-w \(s.dir.url("run"))"
        var env = s.environment
        env["XDG_RUNTIME_DIR"] = s.dir.url("run")
        let r = try await VigilExecutable.run(["status", "--json"], in: s.work, environment: env)
        // Not "no host is running" (exit 1, `[]`): a refusal, with its own exit code and the error in the document.
        #expect(r.status == 77, "\(r.stdout)\(r.stderr)")
        let document = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        #expect(document?["ok"] as? Bool == false, "\(r.stdout)")
        let error = document?["error"] as? [String: Any]
        #expect(error?["code"] as? String == "runtime-directory")
        #expect((error?["message"] as? String)?.contains(fix) == true, "\(r.stdout)")
        #expect(r.stderr.isEmpty, "\(r.stderr)")
        let text = try await VigilExecutable.run(["status"], in: s.work, environment: env)
        #expect(text.status == 77)
        #expect(text.stdout.isEmpty && text.stderr.contains(fix), "\(text.stdout)\(text.stderr)")
    }

    /// Every refusal kind the CLI can produce, through `plugin list --json`: none that failed
    /// before or during signature verification shows "valid".
    @Test func pluginListNeverShowsAValidSignatureForARefusalBeforeVerification() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        let names = [
            "p-unsigned", "p-flipped", "p-untrusted", "p-rotated", "p-resource", "p-big", "p-link", "p-rollback",
        ]
        for name in names { try await s.makePlugin(name, version: name == "p-rollback" ? "2.0.0" : "1.0.0") }
        try s.dir.write(
            "work/vigil.toml", "plugins = [\(names.map { "\"\($0)\"" }.joined(separator: ", ")), \"p-missing\"]\n")
        for name in names where name != "p-untrusted" {
            #expect(try await s.vigil("plugin", "trust", name, "--yes").status == 0)
        }
        let dir = { (name: String) in s.dir.url("work/manifests/\(name)") }
        try FileManager.default.removeItem(atPath: dir("p-unsigned") + "/plugin.json.minisig")
        let flipped = try s.text("manifests/p-flipped/plugin.json").replacingOccurrences(of: "1.0.0", with: "1.0.1")
        try s.dir.write("work/manifests/p-flipped/plugin.json", flipped)
        try FileManager.default.removeItem(atPath: dir("p-rotated") + "/plugin.pub")
        try await s.makePlugin("p-rotated", keyName: "other")
        try s.dir.write("work/manifests/p-resource/data.bin", [9, 9, 9])
        try s.dir.write("work/manifests/p-big/plugin.json", String(repeating: " ", count: 70_000))
        try FileManager.default.removeItem(atPath: dir("p-link") + "/plugin.json.minisig")
        #expect(symlink(dir("p-unsigned") + "/plugin.json", dir("p-link") + "/plugin.json.minisig") == 0)
        try await s.makePlugin("p-rollback", version: "1.0.0")

        let r = try await s.vigil("plugin", "list", "--json")
        #expect(r.status == 0, "\(r.stderr)")
        let rows = try #require(try Self.json(r.stdout)["plugins"] as? [[String: Any]])
        let beforeOrDuring: Set<String> = [
            "not-signed", "invalid-signature", "unsupported-signature-algorithm", "untrusted-key", "key-rotation",
            "no-public-key", "plugin-not-found", "file-too-large", "not-regular-file", "file-not-found",
            "key-invalid", "fingerprint-mismatch", "io-failure",
        ]
        var seen: [String: String] = [:]
        for row in rows {
            let code = try #require(
                (row["error"] as? [String: Any])?["code"] as? String, "\(row["name"] ?? "?") loaded")
            let signature = try #require(row["signature"] as? String)
            seen[code] = signature
            if beforeOrDuring.contains(code) { #expect(signature != "valid", "\(code) shows \(signature)") }
        }
        #expect(
            Set(seen.keys) == [
                "not-signed", "invalid-signature", "untrusted-key", "key-rotation", "resource-mismatch",
                "file-too-large", "not-regular-file", "rollback", "plugin-not-found",
            ], "\(seen)")
        #expect(seen["resource-mismatch"] == "valid" && seen["rollback"] == "valid", "after verification: \(seen)")
    }

    @Test func signWithThePublicKeySaysSo() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        try await s.makePlugin("demo")
        let r = try await s.vigil("plugin", "sign", "manifests/demo", "--key", "keys/demo.pub")
        #expect(r.status == 1)
        #expect(r.stderr.contains("is a minisign public key; --key needs the secret key"), "\(r.stderr)")
        #expect(!r.stderr.contains("readable by other users"))
    }

    /// With piped output, the review comes before the error that follows it.
    @Test func pipedOutputKeepsItsOrder() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        try await s.makePlugin("demo")
        let merged = try await VigilExecutable.run(
            executable: "/bin/sh", ["-c", "'\(VigilExecutable.path)' plugin trust demo 2>&1"], in: s.work,
            environment: s.environment)
        #expect(merged.status == 1)
        let review = try #require(merged.stdout.range(of: "Review demo:"))
        let error = try #require(merged.stdout.range(of: "error: [demo] there is no terminal"))
        #expect(review.lowerBound < error.lowerBound, "\(merged.stdout)")
    }

    @Test func helpTextsAreParagraphs() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        let r = try await s.vigil("plugin", "trust", "--help")
        // Wrapped by the parser: no line ends in the middle of a sentence of the discussion
        // the way the source's hard wraps did ("(plugin.pub) —" then "or with --fingerprint").
        #expect(!r.stdout.contains("plugin.pub) —\n"), "\(r.stdout)")
    }
}
