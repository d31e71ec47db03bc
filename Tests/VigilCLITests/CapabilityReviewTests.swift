import Foundation
import Testing
import VigilTestSupport

/// What a plugin may do, as the operator sees it: the trust review, `plugin list` and `check`
/// (text and `--json`), and an update that asks for more (the built `vigil`, a throwaway key).
@Suite("capabilities in the review, list and check", .serialized)
struct CapabilityReviewTests {
    /// Writes and signs `work/manifests/alpha` at `version`, declaring `capabilities`.
    func sign(_ s: CLISandbox, version: String, capabilities: String) async throws {
        if !FileManager.default.fileExists(atPath: s.dir.url("work/keys/alpha.key")) {
            #expect(try await s.vigil("plugin", "keygen", "--name", "alpha", "--dir", "keys").status == 0)
        }
        try s.dir.write(
            "work/manifests/alpha/plugin.json",
            """
            {"schema": "vigil.plugin-manifest/v2", "name": "alpha", "version": "\(version)", "entry": "silent-engine",
             "capabilities": \(capabilities)}
            """)
        let r = try await s.vigil("plugin", "sign", "manifests/alpha", "--key", "keys/alpha.key")
        #expect(r.status == 0, "\(r.stderr)")
    }

    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test func reviewListAndCheckShowThemAndAnUpdateThatAsksForMoreWaitsForAReview() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        try s.dir.write("work/vigil.toml", "plugins = [\"alpha\"]\nplugin_paths = [\"manifests\"]\n")
        try await sign(
            s, version: "1.0.0", capabilities: #"{"files": [{"path": "heartbeat", "access": "read-write"}]}"#)

        let first = try await s.vigil("plugin", "trust", "alpha", "--yes")
        #expect(first.status == 0, "\(first.stderr)")
        #expect(
            first.stdout.contains(
                "  may:\n    - anything the host process may do (it runs in the host process: not enforced)\n"
                    + "    - declared, not enforced: read and write heartbeat in its state directory\n"),
            "\(first.stdout)")
        #expect(!first.stdout.contains("MORE than"), "a first review has nothing to compare with")

        let list = try json(try await s.vigil("plugin", "list", "--json").stdout)
        let row = try #require((list["plugins"] as? [[String: Any]])?.first { $0["name"] as? String == "alpha" })
        let listed = try #require(row["capabilities"] as? [String: Any])
        #expect(listed["plain_words"] as? [String] == ["read and write heartbeat in its state directory"])
        #expect(listed["in_host_process"] as? Bool == true)
        let files = try #require((listed["declared"] as? [String: Any])?["files"] as? [[String: String]])
        #expect(files == [["path": "heartbeat", "access": "read-write"]])

        // The update asks for the network and a file outside its state directory.
        try await sign(
            s, version: "1.1.0",
            capabilities: #"{"files": [{"path": "heartbeat", "access": "read-write"}, {"path": "/etc/hostname", "#
                + #""access": "read"}], "network": {"tcp_connect": [8080, 443]}}"#)
        let check = try await s.vigil("check", "--declarations-only")
        #expect(check.status == 1)
        #expect(
            check.stderr.contains(
                "error: [alpha] version 1.1.0 asks to read /etc/hostname; connect to TCP ports 443 and 8080 — that is "
                    + "more than you accepted when you last trusted it; review the difference and accept it with "
                    + "`vigil plugin trust alpha`"), "\(check.stderr)")
        let listedAgain = try await s.vigil("plugin", "list")
        #expect(listedAgain.stdout.contains("error: [capabilities-grown] version 1.1.0 asks to read /etc/hostname"))
        let checkJSON = try json(try await s.vigil("check", "--declarations-only", "--json").stdout)
        let diagnostics = try #require(checkJSON["diagnostics"] as? [[String: Any]])
        #expect(diagnostics.contains { ($0["message"] as? String)?.contains("asks to read /etc/hostname") == true })

        // The review shows exactly the difference, then the update loads.
        let review = try await s.vigil("plugin", "trust", "alpha", "--json", "--yes")
        #expect(review.status == 0, "\(review.stderr)")
        let reviewed = try #require(try json(review.stdout)["capabilities"] as? [String: Any])
        #expect(reviewed["added"] as? [String] == ["read /etc/hostname", "connect to TCP ports 443 and 8080"])
        #expect(
            (reviewed["accepted"] as? [String: Any])?["files"] as? [[String: String]]
                == [["path": "heartbeat", "access": "read-write"]])
        let after = try await s.vigil("check", "--declarations-only")
        #expect(!after.stderr.contains("asks to"), "\(after.stderr)")
        #expect(
            after.stdout.contains("    may: declared, not enforced: connect to TCP ports 443 and 8080"),
            "\(after.stdout)")

        // A later update asking for still more shows only the new line in the text review.
        try await sign(
            s, version: "1.2.0",
            capabilities: #"{"files": [{"path": "/etc/hostname", "access": "read"}], "network": "any"}"#)
        let text = try await s.vigil("plugin", "trust", "alpha", "--yes")
        #expect(
            text.stdout.contains(
                "  MORE than you accepted when you last trusted it — new in this version:\n"
                    + "    + connect to any network address\n  no longer asks to:\n"
                    + "    - read and write heartbeat in its state directory\n"), "\(text.stdout)")
    }
}
