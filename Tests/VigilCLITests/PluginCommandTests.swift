import Foundation
import Testing
import VigilTestSupport

@Suite(.serialized) struct PluginCommandTests {
    @Test func usageErrorsExit64() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        #expect(try await s.vigil("plugin", "trust", "Bad_Name").status == 64)
        #expect(try await s.vigil("plugin", "keygen").status == 64)
        #expect(try await s.vigil("plugin", "verify", "x", "--fingerprint", "ed25519:nope").status == 64)
        #expect(try await s.vigil("plugin", "frobnicate").status == 64)
        let r = try await s.vigil("plugin", "untrust", "host")
        #expect(r.status == 64)
        #expect(r.stderr.contains("reserved"))
    }

    @Test func keygenCreatesAPrivateKeyAndRefusesToOverwriteWithoutForce() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        // Mode 0600 from creation, whatever the umask.
        let r = try await VigilExecutable.run(
            executable: "/bin/sh",
            ["-c", "umask 000; exec \"$0\" plugin keygen --name demo --dir keys", VigilExecutable.path],
            in: s.work, environment: s.environment)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try s.dir.mode("work/keys/demo.key") == 0o600)
        #expect(try s.text("keys/demo.key").hasPrefix("untrusted comment:"))
        #expect(try s.text("keys/demo.pub").contains("minisign public key"))
        #expect(r.stdout.contains(try s.fingerprint(ofKey: "demo")))
        let before = try s.text("keys/demo.key")

        let again = try await s.vigil("plugin", "keygen", "--name", "demo", "--dir", "keys")
        #expect(again.status == 1)
        #expect(again.stderr.contains("KEY ROTATION"))
        #expect(again.stderr.contains("--force"))
        #expect(try s.text("keys/demo.key") == before)

        let forced = try await s.vigil("plugin", "keygen", "--name", "demo", "--dir", "keys", "--force")
        #expect(forced.status == 0)
        #expect(forced.stderr.contains("KEY ROTATION"))
        #expect(try s.text("keys/demo.key") != before)
        #expect(try s.dir.mode("work/keys/demo.key") == 0o600)
        #expect(try s.dir.list("work/keys") == ["demo.key", "demo.pub"])
    }

    @Test func keygenDefaultsToThePrivateConfigDirectory() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        #expect(try await s.vigil("plugin", "keygen", "--name", "demo").status == 0)
        #expect(try s.dir.list("config/vigil/keys") == ["demo.key", "demo.pub"])
        #expect(try s.dir.mode("config/vigil/keys") == 0o700)
    }

    @Test func signThenVerifyAndTamperIsRefused() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        try await s.makePlugin("alpha")
        let fp = try s.fingerprint(ofKey: "alpha")
        // sign filled in the resource digest and wrote plugin.pub.
        let manifest = try s.text("manifests/alpha/plugin.json")
        #expect(manifest.contains("039058c6f2c0cb492c533b0a4d14ef77cc0f78abccced5287d84a1a2011cfb81"))
        #expect(manifest.contains("\"size\": 3"))
        #expect(try s.text("manifests/alpha/plugin.json.minisig").contains("trusted comment: alpha@1.0.0"))
        #expect(try s.text("manifests/alpha/plugin.pub") == (try s.text("keys/alpha.pub")))

        let ok = try await s.vigil("plugin", "verify", "manifests/alpha", "--fingerprint", fp)
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stdout.contains("verified alpha@1.0.0"))

        // No config and no fingerprint: nothing is trusted.
        let untrusted = try await s.vigil("plugin", "verify", "manifests/alpha")
        #expect(untrusted.status == 1)
        #expect(untrusted.stderr.contains("--fingerprint"))

        // Another key pinned.
        #expect(try await s.vigil("plugin", "keygen", "--name", "other", "--dir", "keys").status == 0)
        let wrong = try await s.vigil(
            "plugin", "verify", "manifests/alpha", "--fingerprint", try s.fingerprint(ofKey: "other"))
        #expect(wrong.status == 1)
        #expect(wrong.stderr.contains("is not the expected"))

        // Resource swapped after signing.
        try s.dir.write("work/manifests/alpha/data.bin", [9, 9, 9])
        let swapped = try await s.vigil("plugin", "verify", "manifests/alpha", "--fingerprint", fp)
        #expect(swapped.status == 1)
        #expect(swapped.stderr.contains("[alpha] the resource data.bin has SHA-256"))

        // Manifest byte changed.
        try s.dir.write("work/manifests/alpha/data.bin", [1, 2, 3])
        try s.dir.write("work/manifests/alpha/plugin.json", manifest.replacingOccurrences(of: "1.0.0", with: "1.0.1"))
        let tampered = try await s.vigil("plugin", "verify", "manifests/alpha", "--fingerprint", fp)
        #expect(tampered.status == 1)
        #expect(tampered.stderr.contains("signature does not verify"))
    }

    @Test func signCoSignsAnUnchangedManifestButRefusesAnotherKeyOnAChangedOne() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        try await s.makePlugin("alpha")
        #expect(try await s.vigil("plugin", "keygen", "--name", "other", "--dir", "keys").status == 0)
        let cosign = try await s.vigil("plugin", "sign", "manifests/alpha", "--key", "keys/other.key")
        #expect(cosign.status == 0, "\(cosign.stderr)")
        #expect(cosign.stdout.contains("plugin.json.2.minisig (co-signature)"))
        #expect(try s.text("manifests/alpha/plugin.2.pub") == (try s.text("keys/other.pub")))
        // 2 of 2 pinned out of band verifies; trusting records the key set.
        let both = [try s.fingerprint(ofKey: "alpha"), try s.fingerprint(ofKey: "other")]
        let verify = try await s.vigil(
            "plugin", "verify", "manifests/alpha", "--fingerprint", both[0], "--fingerprint", both[1])
        #expect(verify.status == 0, "\(verify.stderr)")
        let trust = try await s.vigil("plugin", "trust", "alpha", "--yes", "--json")
        #expect(trust.status == 0, "\(trust.stdout)")
        #expect(trust.stdout.contains("\"threshold\": 2"))
        #expect(
            try s.text("vigil.toml").contains(
                "alpha = { keys = [\"\(both[0])\", \"\(both[1])\"], threshold = 2 }"))
        // A changed manifest signed by a key the plugin does not offer: refused, nothing written.
        #expect(try await s.vigil("plugin", "keygen", "--name", "third", "--dir", "keys").status == 0)
        let manifest = try s.text("manifests/alpha/plugin.json")
        try s.dir.write("work/manifests/alpha/plugin.json", manifest.replacingOccurrences(of: "1.0.0", with: "1.0.1"))
        let refused = try await s.vigil("plugin", "sign", "manifests/alpha", "--key", "keys/third.key")
        #expect(refused.status == 1)
        #expect(
            refused.stderr.contains("cannot be a co-signature") && refused.stderr.contains("vigil plugin rotate"),
            "\(refused.stderr)")
        #expect(try s.dir.list("work/manifests/alpha").filter { $0.hasPrefix("plugin.3") }.isEmpty)
    }

    @Test func aHostFollowsASignedRotationWithoutAReview() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        try await s.makePlugin("alpha")
        let old = try s.fingerprint(ofKey: "alpha")
        try s.dir.write("work/vigil.toml", "plugins = [\"alpha\"]\n")
        #expect(try await s.vigil("plugin", "trust", "alpha", "--yes").status == 0)
        #expect(try await s.vigil("plugin", "keygen", "--name", "next", "--dir", "keys").status == 0)
        let new = try s.fingerprint(ofKey: "next")
        // Only the old key signs: incomplete, hosts refuse; the new key co-signs in a second command.
        let rotate = try await s.vigil(
            "plugin", "rotate", "manifests/alpha", "--from", "keys/alpha.key", "--to", "keys/next.pub")
        #expect(rotate.status == 0, "\(rotate.stderr)")
        #expect(rotate.stdout.contains("not complete yet"))
        let manifest = try s.text("manifests/alpha/plugin.json")
        try s.dir.write("work/manifests/alpha/plugin.json", manifest.replacingOccurrences(of: "1.0.0", with: "1.1.0"))
        #expect(try await s.vigil("plugin", "sign", "manifests/alpha", "--key", "keys/next.key").status == 0)
        let incomplete = try await s.vigil("plugin", "verify", "manifests/alpha")
        #expect(
            incomplete.status == 1 && incomplete.stderr.contains("0 of the new keys"), "\(incomplete.stderr)")
        let cosign = try await s.vigil("plugin", "rotate", "manifests/alpha", "--cosign", "keys/next.key")
        #expect(cosign.status == 0 && cosign.stdout.contains("complete: sign the manifest"), "\(cosign.stdout)")
        // verify, list, check and the trust review show it; vigil.toml still names the old key.
        let verify = try await s.vigil("plugin", "verify", "manifests/alpha")
        #expect(verify.status == 0, "\(verify.stderr)")
        let list = try await s.vigil("plugin", "list", "--json")
        #expect(list.stdout.contains("\"rotation\": {") && list.stdout.contains("\"version\": 1,"), "\(list.stdout)")
        #expect(list.stdout.contains(new) && list.stdout.contains("\"status\": \"ok\""))
        let check = try await s.vigil("check", "--declarations-only")
        #expect(
            check.stderr.contains("signed key rotation 1") || check.stdout.contains("signed key rotation 1"),
            "\(check.stdout)\(check.stderr)")
        let review = try await s.vigil("plugin", "trust", "alpha", "--yes")
        #expect(review.status == 0, "\(review.stderr)")
        #expect(review.stdout.contains("signed key rotation 1"), "\(review.stdout)")
        #expect(try s.text("vigil.toml").contains("alpha = \"\(new)\"") && !(try s.text("vigil.toml")).contains(old))
        #expect(try await s.vigil("plugin", "verify", "manifests/alpha").status == 0)
    }

    @Test func trustRequiresATerminalOrYesAndRecordsTheKey() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        try await s.makePlugin("alpha")
        let fp = try s.fingerprint(ofKey: "alpha")
        try s.dir.write("work/vigil.toml", "# host config\nplugins = [\"alpha\"]\n")

        let refused = try await s.vigil("plugin", "trust", "alpha", stdin: "y\n")
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("no terminal"))
        #expect(try s.text("vigil.toml") == "# host config\nplugins = [\"alpha\"]\n")
        // The review was shown, with control characters stripped.
        #expect(refused.stdout.contains("fingerprint:   \(fp)"))
        #expect(refused.stdout.contains("evil?der"))
        #expect(!refused.stdout.contains("\u{202E}"))
        #expect(refused.stdout.contains("background-mode audio"))
        #expect(refused.stdout.contains("data.bin (3 bytes"))

        let trusted = try await s.vigil("plugin", "trust", "alpha", "--yes")
        #expect(trusted.status == 0, "\(trusted.stderr)")
        #expect(
            try s.text("vigil.toml") == "# host config\nplugins = [\"alpha\"]\n\n[trusted_plugins]\nalpha = \"\(fp)\"\n"
        )
        // Now verify uses the trusted key from vigil.toml.
        #expect(try await s.vigil("plugin", "verify", "manifests/alpha").status == 0)
        // Rollback state recorded in the private state home.
        #expect(String(decoding: try s.dir.read("state/vigil/rollback.json"), as: UTF8.self).contains("\"1.0.0\""))

        let untrust = try await s.vigil("plugin", "untrust", "alpha")
        #expect(untrust.status == 0)
        #expect(try s.text("vigil.toml") == "# host config\nplugins = [\"alpha\"]\n\n[trusted_plugins]\n")
    }

    @Test func trustWithPinnedFingerprintRefusesAnotherKey() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        try await s.makePlugin("alpha")
        #expect(try await s.vigil("plugin", "keygen", "--name", "other", "--dir", "keys").status == 0)
        let r = try await s.vigil(
            "plugin", "trust", "alpha", "--yes", "--fingerprint", try s.fingerprint(ofKey: "other"))
        #expect(r.status == 1)
        #expect(r.stderr.contains("is not the expected"))
        #expect(!FileManager.default.fileExists(atPath: s.dir.url("work/vigil.toml")))
        // A matching fingerprint is the confirmation: no --yes and no terminal needed.
        let ok = try await s.vigil("plugin", "trust", "alpha", "--fingerprint", try s.fingerprint(ofKey: "alpha"))
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(try s.text("vigil.toml").contains("alpha = \"\(try s.fingerprint(ofKey: "alpha"))\""))
    }

    @Test func trustRefusesWhatDoesNotVerify() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        try await s.makePlugin("alpha")
        try s.dir.write("work/manifests/alpha/data.bin", [0])
        let r = try await s.vigil("plugin", "trust", "alpha", "--yes")
        #expect(r.status == 1)
        #expect(r.stderr.contains("resource"))
        #expect(!FileManager.default.fileExists(atPath: s.dir.url("work/vigil.toml")))
    }

    @Test func keyRotationIsFlaggedWithBothFingerprintsAndTrustAcceptsADowngrade() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        try await s.makePlugin("alpha", version: "2.0.0")
        let old = try s.fingerprint(ofKey: "alpha")
        #expect(try await s.vigil("plugin", "trust", "alpha", "--yes").status == 0)
        // Downgrade with the same key: list reports the rollback; trust re-accepts it.
        try await s.makePlugin("alpha", version: "1.0.0")
        let list = try await s.vigil("plugin", "list", "--json")
        #expect(list.stdout.contains("\"code\": \"rollback\""))
        #expect(try await s.vigil("plugin", "trust", "alpha", "--yes").status == 0)
        #expect(!(try await s.vigil("plugin", "list", "--json")).stdout.contains("\"code\": \"rollback\""))
        // New key: KEY ROTATION with both fingerprints, in verify and in trust.
        try FileManager.default.removeItem(atPath: s.dir.url("work/manifests/alpha/plugin.pub"))
        try await s.makePlugin("alpha", version: "1.0.1", keyName: "rotated")
        let new = try s.fingerprint(ofKey: "rotated")
        let verify = try await s.vigil("plugin", "verify", "manifests/alpha")
        #expect(verify.status == 1)
        #expect(verify.stderr.contains("does not match the key the plugin offers"), "\(verify.stderr)")
        #expect(verify.stderr.contains("if you typed it, fix it") && !verify.stderr.contains("KEY ROTATION"))
        #expect(verify.stderr.contains(old) && verify.stderr.contains(new))
        let trust = try await s.vigil("plugin", "trust", "alpha", "--yes")
        #expect(trust.status == 0)
        #expect(trust.stdout.contains("vigil.toml trusts another key: \(old)"), "\(trust.stdout)")
        #expect(trust.stdout.contains("fingerprint:   \(new)") && !trust.stdout.contains("KEY ROTATION"))
        #expect(try s.text("vigil.toml").contains("alpha = \"\(new)\""))
    }

    @Test func listJSONShape() async throws {
        let s = try CLISandbox(realFirstParty: true)
        defer { s.remove() }
        try await s.makePlugin("alpha")
        try s.dir.write(
            "work/vigil.toml",
            """
            plugins = ["alpha", "supervisor", "ghost"]
            [host]
            background_modes = ["audio"]
            [trusted_plugins]
            supervisor = "ed25519:ioJy7E9uRlLYcMlKTGdQlzdNRh9asTxdtsoQBInw4sk="

            """)
        let r = try await s.vigil("plugin", "list", "--json")
        #expect(r.status == 0, "\(r.stderr)")
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        #expect(doc["config"] as? String == s.dir.url("work/vigil.toml"))
        let plugins = try #require(doc["plugins"] as? [[String: Any]])
        let byName = Dictionary(uniqueKeysWithValues: plugins.map { ($0["name"] as! String, $0) })
        #expect(Set(byName.keys) == ["alpha", "ghost", "silent-engine", "soundscape", "supervisor"])
        let supervisor = try #require(byName["supervisor"])
        #expect(supervisor["version"] as? String == (try firstPartyVersion("supervisor")))
        #expect(supervisor["signature"] as? String == "valid")
        #expect(supervisor["trust"] as? String == "trusted")
        #expect(supervisor["activated"] as? Bool == true)
        #expect(supervisor["status"] as? String == "ok")
        let req = try #require((supervisor["requirements"] as? [[String: Any]])?.first)
        #expect(req["kind"] as? String == "service" && req["state"] as? String == "undeclared")
        let alpha = try #require(byName["alpha"])
        #expect(alpha["trust"] as? String == "untrusted")
        #expect(alpha["signature"] as? String == "valid-with-offered-key")
        let alphaReqs = try #require(alpha["requirements"] as? [[String: Any]])
        #expect(alphaReqs.map { $0["state"] as? String } == ["declared", "probed-at-start"])
        #expect((alpha["error"] as? [String: Any])?["code"] as? String == "untrusted-key")
        let ghost = try #require(byName["ghost"])
        #expect((ghost["error"] as? [String: Any])?["code"] as? String == "plugin-not-found")
        #expect(byName["silent-engine"]?["version"] as? String == (try firstPartyVersion("silent-engine")))

        let text = try await s.vigil("plugin", "list")
        #expect(text.status == 0)
        #expect(text.stdout.contains("* supervisor \(try firstPartyVersion("supervisor"))"))
    }

    @Test func firstPartyManifestsVerifyWithTheirPublishedFingerprints() async throws {
        let s = try CLISandbox(realFirstParty: true)
        defer { s.remove() }
        let published = [
            "silent-engine": "ed25519:JQZlvvSz54g2JyAymbg4TFDYnSCgJgID8VRXRsRBfX4=",
            "soundscape": "ed25519:QaLGlZoeYW/jvbHckvjgkjV1ImF3vfGrW3ZB/9Ln8sI=",
            "supervisor": "ed25519:ioJy7E9uRlLYcMlKTGdQlzdNRh9asTxdtsoQBInw4sk=",
        ]
        for (name, fp) in published {
            let r = try await s.vigil("plugin", "verify", s.firstParty + "/" + name, "--fingerprint", fp)
            #expect(r.status == 0, "\(name): \(r.stderr)")
        }
    }
}

/// The version in the repository's first-party manifest `name`, read independently of Vigil's parser.
private func firstPartyVersion(_ name: String) throws -> String {
    let data = try Data(
        contentsOf: URL(fileURLWithPath: VigilExecutable.packageRoot + "/manifests/\(name)/plugin.json"))
    let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    return try #require(object["version"] as? String)
}
