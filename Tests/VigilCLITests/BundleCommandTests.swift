import Foundation
import Testing
import VigilTestSupport

/// `vigil plugin bundle create|apply` on the real `vigil`: a bundle made on a box that reaches a
/// python-tuf repository over loopback HTTP updates a second box (its own state and metadata,
/// its mirror unreachable) with the same checks as an update; a tampered or expired bundle is
/// refused and changes nothing.
@Suite("vigil plugin bundle create / apply", .serialized, .timeLimit(.minutes(2)))
struct BundleCommandTests {
    typealias Setup = RepositoryCommandTests.Setup
    typealias ExitCodes = RepositoryCommandTests.ExitCodes

    /// The offline box: its own project and state, `[repository]` with the same root and a mirror
    /// nothing listens on.
    struct OfflineBox {
        let project: HostCommandTests.Project

        init(root: String) throws {
            project = try HostCommandTests.Project()
            try FileManager.default.copyItem(atPath: root, toPath: project.dir.path + "/root.json")
        }

        func writeConfig(mirror: String) throws {
            try """
            plugins = ["sup"]

            [host]
            services = ["supervisor"]

            [repository]
            root = "root.json"
            mirrors = ["\(mirror)"]

            """.write(toFile: project.config, atomically: true, encoding: .utf8)
        }

        func vigil(_ arguments: String...) async throws -> RuntimeFixtures.Output {
            try await RuntimeFixtures.run(
                VigilExecutable.path, arguments + ["--config", project.config], environment: project.environment,
                timeout: 30)
        }

        func installedVersion() throws -> String {
            try TextFile.read(project.dir.path + "/manifests/sup/plugin.json")
        }
    }

    @Test("a bundle updates an offline box; a tampered or expired one is refused")
    func bundleRoundTrip() async throws {
        let s = try Setup()
        defer { s.remove() }
        let box = try OfflineBox(root: s.repo.path + "/metadata/1.root.json")
        defer { box.project.dir.remove() }
        let bundles = s.project.dir.path + "/bundles"
        try FileManager.default.createDirectory(atPath: bundles, withIntermediateDirectories: true)

        try await s.publish("sup", "1.0.0")
        try s.writeConfig(plugins: ["sup"])
        var r = try await s.vigil("plugin", "install", "sup", "--yes")
        #expect(r.status == 0, "\(r.stderr)")
        r = try await s.vigil("plugin", "bundle", "create", bundles + "/one")
        #expect(r.status == 0 && r.stdout.contains("bundled sup 1.0.0"), "\(r.stdout) \(r.stderr)")
        // An existing directory is refused: a bundle appears whole or not at all.
        r = try await s.vigil("plugin", "bundle", "create", bundles + "/one")
        #expect(r.status == ExitCodes.failure && r.stderr.contains("exists"), "\(r.stderr)")
        // --json: one vigil.bundle/v1 document, for the refusal and for a bundle written.
        r = try await s.vigil("plugin", "bundle", "create", bundles + "/one", "--json")
        var d = s.document(r, schema: "vigil.bundle/v1")
        #expect(r.status == ExitCodes.failure && s.errorCode(r.stdout) == "repository-storage", "\(r.stdout)")
        #expect(d?["directory"] is NSNull && (d?["plugins"] as? [Any])?.isEmpty == true, "\(r.stdout)")
        r = try await s.vigil("plugin", "bundle", "create", bundles + "/json", "--json")
        d = s.document(r, schema: "vigil.bundle/v1")
        let rows = d?["plugins"] as? [[String: Any]]
        #expect(
            r.status == 0 && d?["error"] is NSNull && d?["directory"] as? String == bundles + "/json", "\(r.stdout)")
        #expect(
            rows?.count == 1 && rows?.first?["name"] as? String == "sup"
                && rows?.first?["version"] as? String == "1.0.0")
        #expect((d?["expires"] as? String)?.hasSuffix("Z") == true)
        #expect(FileManager.default.fileExists(atPath: bundles + "/json/metadata/timestamp.json"))

        // The offline box installs from the first bundle as a file:// mirror, then loses it.
        try box.writeConfig(mirror: "file://\(bundles)/one/")
        r = try await box.vigil("plugin", "install", "sup", "--yes")
        #expect(r.status == 0, "\(r.stderr)")
        try Setup.setMirror("http://127.0.0.1:9/", in: box.project.config)
        #expect(try TextFile.read(box.project.config).contains("sup = \"ed25519:"))
        r = try await box.vigil("plugin", "update")
        #expect(r.status == ExitCodes.repositoryUnreachable, "offline: \(r.stderr)")

        try await s.publish("sup", "1.1.0")
        r = try await s.vigil("plugin", "bundle", "create", bundles + "/two")
        #expect(r.status == 0, "\(r.stderr)")
        // A copy with one byte of the new manifest flipped, and one whose timestamp is a newer,
        // validly signed, expired one: both refused, nothing changed.
        for name in ["tampered", "expired"] {
            try FileManager.default.copyItem(atPath: bundles + "/two", toPath: bundles + "/" + name)
        }
        let manifests = try FileManager.default.contentsOfDirectory(atPath: bundles + "/tampered/targets/sup")
            .filter { $0.hasSuffix(".plugin.json") }
        var flipped = 0
        for manifest in manifests {
            let path = bundles + "/tampered/targets/sup/" + manifest
            var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
            guard String(decoding: bytes, as: UTF8.self).contains("1.1.0"),
                let i = bytes.firstIndex(of: UInt8(ascii: "1"))
            else { continue }
            bytes[i] = UInt8(ascii: "9")
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            flipped += 1
        }
        #expect(flipped == 1)
        r = try await box.vigil("plugin", "bundle", "apply", bundles + "/tampered", "--json")
        #expect(r.status == ExitCodes.failure && s.errorCode(r.stdout) == "repository-refused", "\(r.stdout)")
        #expect(r.stdout.contains("hash"), "\(r.stdout)")
        #expect(try box.installedVersion().contains("\"1.0.0\""))

        try s.repo.run("expire", ["timestamp"])
        try FileManager.default.removeItem(atPath: bundles + "/expired/metadata/timestamp.json")
        try FileManager.default.copyItem(
            atPath: s.repo.path + "/metadata/timestamp.json", toPath: bundles + "/expired/metadata/timestamp.json")
        r = try await box.vigil("plugin", "bundle", "apply", bundles + "/expired", "--json")
        #expect(r.status == ExitCodes.repositoryStale && s.errorCode(r.stdout) == "repository-stale", "\(r.stdout)")
        #expect(try box.installedVersion().contains("\"1.0.0\""))

        // The intact bundle updates the offline box, which never reached a network mirror; from a
        // directory with a space in its name, as a USB stick's label gives (a path, not a URL).
        try FileManager.default.copyItem(atPath: bundles + "/two", toPath: bundles + "/USB STICK")
        r = try await box.vigil("plugin", "bundle", "apply", bundles + "/USB STICK")
        #expect(r.status == 0 && r.stdout.contains("updated sup: 1.0.0 -> 1.1.0"), "\(r.stdout) \(r.stderr)")
        #expect(try box.installedVersion().contains("\"1.1.0\""))
    }
}
