import Foundation
import Testing
import VigilTestSupport

/// `vigil plugin install|update|outdated` on the real `vigil`, against python-tuf repositories on
/// the shared loopback server: every refusal's exit status and code, `--json` documents, and a
/// running host that picks an update up on `vigil reload` and keeps running through a stale one.
@Suite("vigil plugin install / update / outdated", .serialized, .timeLimit(.minutes(2)))
struct RepositoryCommandTests {
    typealias Project = HostCommandTests.Project

    /// The statuses of docs/exit-codes.md (ExitCodes, which ExitCodeTableTests keeps it equal to).
    enum ExitCodes {
        static let failure: Int32 = 1
        static let repositoryNotConfigured: Int32 = 5
        static let repositoryUnreachable: Int32 = 6
        static let repositoryStale: Int32 = 7
        static let repositoryKeyMismatch: Int32 = 8
        static let repositoryRollback: Int32 = 9
        static let repositoryUnknownPlugin: Int32 = 10
    }

    /// A project whose `vigil.toml` names `repo`; plugins are authored under `src/` and keyed in `keys/`.
    struct Setup {
        let project: Project
        let repo: TUFRepositoryFixture.Repository

        init() throws {
            project = try Project()
            repo = try TUFRepositoryFixture.makeRepository()
            try FileManager.default.copyItem(
                atPath: repo.path + "/metadata/1.root.json", toPath: project.dir.path + "/root.json")
        }

        func remove() {
            project.dir.remove()
            repo.remove()
        }

        func vigil(_ arguments: String...) async throws -> RuntimeFixtures.Output {
            try await RuntimeFixtures.run(
                VigilExecutable.path, arguments + ["--config", project.config], environment: project.environment,
                timeout: 30)
        }

        func run(_ arguments: String...) async throws -> RuntimeFixtures.Output {
            try await RuntimeFixtures.run(
                VigilExecutable.path, arguments, environment: project.environment, timeout: 30)
        }

        /// Signs `src/NAME-VERSION/NAME` (a supervisor plugin running `/bin/sleep`) with `keys/KEY.key`
        /// (made on first use) and publishes it.
        func publish(_ name: String, _ version: String, key: String? = nil) async throws {
            let key = key ?? name
            if !FileManager.default.fileExists(atPath: project.dir.path + "/keys/\(key).key") {
                let r = try await run("plugin", "keygen", "--name", key, "--dir", project.dir.path + "/keys")
                #expect(r.status == 0, "\(r.stderr)")
            }
            let directory = project.dir.path + "/src/\(name)-\(version)-\(key)/\(name)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try """
            {"schema": "vigil.plugin-manifest/v1", "name": "\(name)", "version": "\(version)", "entry": "supervisor",
             "settings": {"notification": false, "workers": [{"name": "w", "command": "/bin/sleep", "args": ["300"]}]}}
            """.write(toFile: directory + "/plugin.json", atomically: true, encoding: .utf8)
            let r = try await run("plugin", "sign", directory, "--key", project.dir.path + "/keys/\(key).key")
            #expect(r.status == 0, "\(r.stderr)")
            try repo.publish([directory], keys: [name: project.dir.path + "/keys/\(key).key"])
        }

        /// Points `[repository]` of the vigil.toml at `path` at `mirror`, keeping everything else
        /// (the trust `install` recorded).
        static func setMirror(_ mirror: String, in path: String) throws {
            let text = try TextFile.read(path)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map {
                $0.hasPrefix("mirrors = ") ? "mirrors = [\"\(mirror)\"]" : String($0)
            }
            try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        }

        /// Starts the host `vigil ARGUMENTS` (its output in up.out and up.err).
        func up(_ arguments: [String]) throws -> ChildProcess {
            try ChildProcess(
                VigilExecutable.path, arguments, environment: project.environment,
                stdout: project.dir.path + "/up.out", stderr: project.dir.path + "/up.err")
        }

        /// Whether the host `pid` runs plugin `name` at `version` within `timeout` seconds.
        func runs(_ name: String, _ version: String, pid: Int32, timeout: Double = 20) async throws -> Bool {
            try await project.pluginStatus(name, pid: pid, timeout: timeout) {
                $0["state"] as? String == "running" && $0["version"] as? String == version
            } != nil
        }

        /// Writes the vigil.toml at `path` (default: the project's).
        func writeConfig(plugins: [String], repository: String? = nil, at path: String? = nil) throws {
            let list = plugins.map { "\"\($0)\"" }.joined(separator: ", ")
            try """
            plugins = [\(list)]

            [host]
            services = ["supervisor"]

            [repository]
            \(repository ?? "root = \"root.json\"\nmirrors = [\"\(repo.mirror)\"]")

            """.write(toFile: path ?? project.config, atomically: true, encoding: .utf8)
        }

        func json(_ text: String) -> [String: Any]? {
            try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        }

        func errorCode(_ text: String) -> String? {
            (json(text)?["error"] as? [String: Any])?["code"] as? String
        }

        /// The one JSON document `r` printed on standard output (nothing before or after it), and
        /// its error's exit status, which must be `r`'s.
        func document(_ r: RuntimeFixtures.Output, schema: String) -> [String: Any]? {
            guard let document = json(r.stdout), document["schema"] as? String == schema else { return nil }
            let error = document["error"] as? [String: Any]
            let status = (error?["exit_status"] as? NSNumber)?.int32Value ?? 0
            return status == r.status ? document : nil
        }
    }

    @Test("each refusal has its exit status and code; --json prints one document whatever happens")
    func refusals() async throws {
        let s = try Setup()
        defer { s.remove() }
        // 5: no [repository].
        try "plugins = []\n".write(toFile: s.project.config, atomically: true, encoding: .utf8)
        var r = try await s.vigil("plugin", "outdated", "--json")
        #expect(r.status == ExitCodes.repositoryNotConfigured && s.errorCode(r.stdout) == "repository-not-configured")
        r = try await s.vigil("plugin", "install", "sup")
        #expect(r.status == ExitCodes.repositoryNotConfigured, "\(r.stderr)")
        #expect(r.stderr.contains("repository-not-configured") && r.stderr.contains("has no [repository]"))
        // vigil check locates a misspelt key with a did-you-mean.
        try "plugins = []\n[repository]\nroot = \"root.json\"\nmirror = [\"x\"]\n".write(
            toFile: s.project.config, atomically: true, encoding: .utf8)
        r = try await s.vigil("check")
        #expect(r.status == ExitCodes.failure && r.stderr.contains("did you mean `mirrors`?"), "\(r.stderr)")
        #expect(r.stderr.contains("(repository-invalid)"))
        try "plugins = []\n[repository]\nroot = \"missing.json\"\nmirrors = [\"file:///srv/repo/\"]\n".write(
            toFile: s.project.config, atomically: true, encoding: .utf8)
        r = try await s.vigil("check")
        #expect(r.status == ExitCodes.failure && r.stderr.contains("missing.json does not exist"), "\(r.stderr)")

        try await s.publish("sup", "1.0.0")
        // 10: unknown plugin; 1: no terminal and no --yes: nothing trusted, nothing placed.
        try s.writeConfig(plugins: ["sup"])
        r = try await s.vigil("plugin", "install", "nope")
        #expect(r.status == ExitCodes.repositoryUnknownPlugin && r.stderr.contains("repository-unknown-plugin"))
        r = try await s.vigil("plugin", "install", "sup")
        #expect(r.status == ExitCodes.failure && r.stderr.contains("trust-declined"), "\(r.stderr)")
        #expect(r.stdout.contains("Review sup:"), "the trust review is shown: \(r.stdout)")
        #expect(!FileManager.default.fileExists(atPath: s.project.dir.path + "/manifests/sup"))
        r = try await s.vigil("plugin", "install", "sup", "--yes")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try TextFile.read(s.project.config).contains("sup = \"ed25519:"))
        r = try await s.vigil("plugin", "outdated", "--json")
        let rows = s.json(r.stdout)?["plugins"] as? [[String: Any]]
        #expect(r.status == 0 && rows?.first?["state"] as? String == "up-to-date", "\(r.stdout)")

        // 9: an older version; 8: the repository re-delegates sup to another key.
        try await s.publish("sup", "0.9.0")
        r = try await s.vigil("plugin", "update", "--json")
        #expect(r.status == ExitCodes.repositoryRollback && s.errorCode(r.stdout) == "repository-rollback")
        try await s.publish("sup", "1.1.0", key: "other")
        r = try await s.vigil("plugin", "update", "sup")
        #expect(r.status == ExitCodes.repositoryKeyMismatch && r.stderr.contains("repository-key-mismatch"))
        // 7: stale; the document names the role and when it expired.
        try s.repo.run("expire", ["snapshot"])
        r = try await s.vigil("plugin", "outdated", "--json")
        #expect(r.status == ExitCodes.repositoryStale && s.errorCode(r.stdout) == "repository-stale", "\(r.stdout)")
        #expect(r.stdout.contains("snapshot") && r.stdout.contains("expired at"))
        // 6: no mirror answers; each mirror's reason.
        try s.writeConfig(plugins: ["sup"], repository: "root = \"root.json\"\nmirrors = [\"http://127.0.0.1:9/\"]")
        r = try await s.vigil("plugin", "update", "--json")
        #expect(r.status == ExitCodes.repositoryUnreachable && s.errorCode(r.stdout) == "repository-unreachable")
        #expect(r.stdout.contains("http://127.0.0.1:9/"))
        #expect(try TextFile.read(s.project.dir.path + "/manifests/sup/plugin.json").contains("\"1.0.0\""))
    }

    @Test("install --json: one vigil.install/v1 document whatever happens; nothing asked, --yes decides")
    func installJSON() async throws {
        let s = try Setup()
        defer { s.remove() }
        let placed = s.project.dir.path + "/manifests/sup"
        // 5: no [repository].
        try "plugins = []\n".write(toFile: s.project.config, atomically: true, encoding: .utf8)
        var r = try await s.vigil("plugin", "install", "sup", "--json")
        var d = s.document(r, schema: "vigil.install/v1")
        #expect(r.status == ExitCodes.repositoryNotConfigured && s.errorCode(r.stdout) == "repository-not-configured")
        #expect(d?["installed"] as? Bool == false && d?["name"] as? String == "sup", "\(r.stdout)")

        try await s.publish("sup", "1.0.0")
        try s.writeConfig(plugins: ["sup"])
        // 10: an unknown plugin.
        r = try await s.vigil("plugin", "install", "nope", "--json")
        d = s.document(r, schema: "vigil.install/v1")
        #expect(r.status == ExitCodes.repositoryUnknownPlugin && s.errorCode(r.stdout) == "repository-unknown-plugin")
        #expect(d?["version"] is NSNull && d?["review"] is NSNull && d?["installed"] as? Bool == false, "\(r.stdout)")

        // Not trusted yet and no --yes: the review in the document, nothing asked, trusted or placed.
        r = try await s.vigil("plugin", "install", "sup", "--json")
        d = s.document(r, schema: "vigil.install/v1")
        #expect(r.status == ExitCodes.failure && s.errorCode(r.stdout) == "repository-refused", "\(r.stdout)")
        let message = (d?["error"] as? [String: Any])?["message"] as? String ?? ""
        #expect(message.contains("trust-declined") && message.contains("--json --yes"), "\(message)")
        #expect(d?["trust"] as? String == "declined" && d?["installed"] as? Bool == false)
        #expect(d?["version"] as? String == "1.0.0" && (d?["keys"] as? [String])?.count == 1, "\(r.stdout)")
        let review = d?["review"] as? [String: Any]
        let fingerprint = try #require(review?["fingerprint"] as? String, "\(r.stdout)")
        #expect(fingerprint.hasPrefix("ed25519:") && (d?["keys"] as? [String]) == [fingerprint])
        #expect(review?["name"] as? String == "sup" && review?["trusted"] as? Bool == false)
        #expect((d?["capabilities"] as? [String: Any]) != nil && (review?["capabilities"] as? [String: Any]) != nil)
        #expect(!FileManager.default.fileExists(atPath: placed))
        #expect(!(try TextFile.read(s.project.config).contains("sup = \"ed25519:")))

        // --yes: reviewed, trusted and placed; the document says so.
        r = try await s.vigil("plugin", "install", "sup", "--json", "--yes")
        d = s.document(r, schema: "vigil.install/v1")
        #expect(r.status == 0 && d?["error"] is NSNull, "\(r.stdout)\(r.stderr)")
        #expect(d?["installed"] as? Bool == true && d?["trust"] as? String == "accepted")
        #expect((d?["review"] as? [String: Any])?["outcome"] as? String == "added")
        #expect(d?["destination"] as? String == placed && FileManager.default.fileExists(atPath: placed))
        #expect(try TextFile.read(s.project.config).contains("sup = \"\(fingerprint)\""))
        // Installed already: the install state refusal, still one document.
        r = try await s.vigil("plugin", "install", "sup", "--json")
        #expect(r.status == ExitCodes.failure && s.errorCode(r.stdout) == "repository-install-state", "\(r.stdout)")
        #expect(s.document(r, schema: "vigil.install/v1") != nil)

        // A plugin the host trusts already needs no --yes: verified with that key, no review.
        try FileManager.default.removeItem(atPath: placed)
        r = try await s.vigil("plugin", "install", "sup", "--json")
        d = s.document(r, schema: "vigil.install/v1")
        #expect(r.status == 0 && d?["trust"] as? String == "already-trusted" && d?["review"] is NSNull, "\(r.stdout)")
        #expect(d?["installed"] as? Bool == true && FileManager.default.fileExists(atPath: placed))

        // 6: no mirror answers.
        try FileManager.default.removeItem(atPath: placed)
        try s.writeConfig(plugins: ["sup"], repository: "root = \"root.json\"\nmirrors = [\"http://127.0.0.1:9/\"]")
        r = try await s.vigil("plugin", "install", "sup", "--json", "--yes")
        d = s.document(r, schema: "vigil.install/v1")
        #expect(r.status == ExitCodes.repositoryUnreachable && s.errorCode(r.stdout) == "repository-unreachable")
        #expect(d?["installed"] as? Bool == false && r.stdout.contains("http://127.0.0.1:9/"), "\(r.stdout)")
        #expect(!FileManager.default.fileExists(atPath: placed))
    }

    @Test("vigil check reads ca_file as the TLS library will: no certificate, or a private key, is refused")
    func caFileContents() async throws {
        let s = try Setup()
        defer { s.remove() }
        let made = try TestDirectory("repository-ca-check")
        defer { made.remove() }
        let ca = try await TestCertificateAuthority.make(in: made)
        let der = try await RuntimeFixtures.run(
            "/usr/bin/openssl", ["x509", "-in", ca.caFile, "-outform", "der", "-out", made.url("ca.der")], timeout: 30)
        #expect(der.status == 0, "\(der.stderr)")
        let good = try made.read("ca.pem")
        let key = try made.read("ca.key")
        // One base64 line in the middle of the certificate replaced: a CERTIFICATE block that does not parse.
        var lines = String(decoding: good, as: UTF8.self).split(separator: "\n").map(String.init)
        lines[lines.count / 2] = String(repeating: "A", count: lines[lines.count / 2].count)
        let corrupt = Array((lines.joined(separator: "\n") + "\n").utf8)
        let refused: [(file: String, bytes: [UInt8], reason: String)] = [
            ("empty.pem", [], "is empty"),
            ("blank.pem", Array(" \n\n".utf8), "is empty"),
            ("garbage.pem", Array("this is not a certificate\n".utf8), "holds no PEM certificate"),
            ("der.pem", try made.read("ca.der"), "holds no PEM certificate"),
            ("key.pem", key, "holds a private key"),
            ("with-key.pem", good + key, "holds a private key"),
            ("corrupt.pem", corrupt, "holds a certificate that does not parse"),
        ]
        func configure(_ file: String) throws -> Int {
            let table = "root = \"root.json\"\nmirrors = [\"\(s.repo.mirror)\"]\nca_file = \"\(file)\""
            try s.writeConfig(plugins: [], repository: table)
            let text = try TextFile.read(s.project.config).split(separator: "\n", omittingEmptySubsequences: false)
            return (text.firstIndex { $0.hasPrefix("ca_file") } ?? -1) + 1
        }
        for (file, bytes, reason) in refused + [("good.pem", good, "")] {
            let path = try s.project.dir.write(file, bytes)
            chmod(path, 0o644)
            let line = try configure(file)
            var r = try await s.vigil("check")
            if reason.isEmpty {
                #expect(r.status == 0 && !r.stderr.contains("repository-ca-invalid"), "\(file): \(r.stderr)")
            } else {
                #expect(r.status == ExitCodes.failure, "\(file): \(r.stderr)")
                #expect(
                    r.stderr.contains(":\(line):") && r.stderr.contains("ca_file: \(path) \(reason)"), "\(r.stderr)")
                #expect(
                    r.stderr.contains("(repository-ca-invalid)") && r.stderr.contains("openssl x509"), "\(r.stderr)")
            }
            r = try await s.vigil("check", "--json")
            let document = s.json(r.stdout)
            let diagnostics = (document?["diagnostics"] as? [[String: Any]] ?? []).filter {
                ($0["message"] as? String)?.contains("repository-ca-invalid") == true
            }
            if reason.isEmpty {
                #expect(r.status == 0 && document?["errors"] as? Int == 0 && diagnostics.isEmpty, "\(r.stdout)")
                continue
            }
            #expect(r.status == ExitCodes.failure && diagnostics.count == 1, "\(file): \(r.stdout)")
            #expect(diagnostics.first?["line"] as? Int == line && diagnostics.first?["severity"] as? String == "error")
            #expect((diagnostics.first?["message"] as? String)?.contains(reason) == true)
            // The repository commands refuse it before fetching, as they refuse a missing ca_file.
            r = try await s.vigil("plugin", "update", "--json")
            #expect(
                r.status == ExitCodes.repositoryNotConfigured && s.errorCode(r.stdout) == "repository-not-configured")
            #expect(r.stdout.contains("repository-ca-invalid") && r.stdout.contains(reason), "\(file): \(r.stdout)")
        }
    }

    @Test("a running host keeps its plugin through a stale repository, and runs the update after `vigil reload`")
    func reloadPicksUpTheUpdate() async throws {
        let s = try Setup()
        defer { s.remove() }
        try await s.publish("sup", "1.0.0")
        try s.writeConfig(plugins: ["sup"])
        #expect(try await s.vigil("plugin", "install", "sup", "--yes").status == 0)
        let host = try s.up(["up", "--config", s.project.config])
        defer { host.terminate(grace: 5) }
        #expect(
            try await s.runs("sup", "1.0.0", pid: host.pid),
            "\((try? TextFile.read(s.project.dir.path + "/up.err")) ?? "")")

        try await s.publish("sup", "1.1.0")
        try s.repo.run("expire", ["timestamp"])
        let stale = try await s.vigil("plugin", "update")
        #expect(stale.status == ExitCodes.repositoryStale, "\(stale.stderr)")
        #expect(stale.stderr.contains("timestamp") && stale.stderr.contains("expired at"))
        #expect(try await s.runs("sup", "1.0.0", pid: host.pid, timeout: 2), "the running plugin is untouched")

        try s.repo.run("expire", ["timestamp", "--seconds", "3600"])  // the repository is fresh again
        let update = try await s.vigil("plugin", "update", "--json")
        #expect(update.status == 0, "\(update.stdout)\(update.stderr)")
        let items = s.json(update.stdout)?["plugins"] as? [[String: Any]]
        #expect(items?.first?["outcome"] as? String == "updated" && items?.first?["to"] as? String == "1.1.0")
        let reload = try await s.vigil("reload", "--json")
        #expect(reload.status == 0, "\(reload.stdout)\(reload.stderr)")
        #expect(try await s.runs("sup", "1.1.0", pid: host.pid), "\(reload.stdout)")
    }

    @Test(
        "the shipped update unit's command lines, run as systemd would: 6 and 7 leave the host running; ExecReload= applies an update"
    )
    func updateUnitCommandLines() async throws {
        // Examples/systemd: vigil.service runs the host; vigil-plugin-update.service updates its
        // vigil.toml, then (ExecStartPost=, systemctl) runs vigil.service's ExecReload=.
        func lines(_ name: String) throws -> [Substring] {
            try TextFile.read(VigilExecutable.packageRoot + "/Examples/systemd/" + name).split(separator: "\n")
        }
        func value(_ key: String, _ lines: [Substring]) throws -> String {
            try #require(lines.first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) })
        }
        let host = try lines("vigil.service")
        let unit = try lines("vigil-plugin-update.service")
        let update = try value("ExecStart", unit)
        #expect(try value("ExecStartPost", unit) == "/usr/bin/systemctl --user try-reload-or-restart vigil.service")

        // %E is $XDG_CONFIG_HOME; /usr/bin/vigil is this build's. The mirror is a file:// one.
        let s = try Setup()
        defer { s.remove() }
        let configHome = s.project.dir.path + "/config"
        let config = configHome + "/vigil/vigil.toml"
        try FileManager.default.createDirectory(atPath: configHome + "/vigil", withIntermediateDirectories: true)
        try FileManager.default.moveItem(
            atPath: s.project.dir.path + "/root.json", toPath: configHome + "/vigil/root.json")
        // A command line of /usr/bin/vigil, as systemd expands it: its arguments.
        func arguments(_ line: String) -> [String] {
            let words = line.replacingOccurrences(of: "%E", with: configHome).split(separator: " ").map(String.init)
            #expect(words.first == "/usr/bin/vigil", "\(line)")
            return Array(words.dropFirst())
        }
        func run(_ line: String) async throws -> RuntimeFixtures.Output {
            try await RuntimeFixtures.run(
                VigilExecutable.path, arguments(line), environment: s.project.environment, timeout: 30)
        }
        try await s.publish("sup", "1.0.0")
        let mirror = "file://\(s.repo.path)/"
        try s.writeConfig(plugins: ["sup"], repository: "root = \"root.json\"\nmirrors = [\"\(mirror)\"]", at: config)
        var r = try await s.run("plugin", "install", "sup", "--yes", "--config", config)
        #expect(r.status == 0, "\(r.stderr)")
        let up = try s.up(arguments(try value("ExecStart", host)))
        defer { up.terminate(grace: 5) }
        #expect(
            try await s.runs("sup", "1.0.0", pid: up.pid),
            "\((try? TextFile.read(s.project.dir.path + "/up.err")) ?? "")")

        // Unreachable, then stale: ExecStart= fails with 6, then 7, so systemd runs no
        // ExecStartPost=; the host runs on.
        try await s.publish("sup", "1.1.0")
        try Setup.setMirror("file://\(s.project.dir.path)/no-such-mirror/", in: config)
        r = try await run(update)
        #expect(
            r.status == ExitCodes.repositoryUnreachable && r.stderr.contains("repository-unreachable"), "\(r.stderr)")
        try Setup.setMirror(mirror, in: config)
        try s.repo.run("expire", ["timestamp"])
        r = try await run(update)
        #expect(r.status == ExitCodes.repositoryStale && r.stderr.contains("repository-stale"), "\(r.stderr)")
        #expect(try await s.runs("sup", "1.0.0", pid: up.pid, timeout: 2), "the running plugin is untouched")

        // Fresh again: the update succeeds, and the host's ExecReload= starts the new version.
        try s.repo.run("expire", ["timestamp", "--seconds", "3600"])
        r = try await run(update)
        #expect(r.status == 0 && r.stdout.contains("updated sup: 1.0.0 -> 1.1.0"), "\(r.stdout)\(r.stderr)")
        r = try await run(try value("ExecReload", host))
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(try await s.runs("sup", "1.1.0", pid: up.pid), "\(r.stdout)")
    }

    @Test("https:// mirror with ca_file: install, update; another CA is exit 6; check refuses a bad ca_file")
    func httpsMirror() async throws {
        let s = try Setup()
        defer { s.remove() }
        let certificates = try TestDirectory("repository-tls")
        defer { certificates.remove() }
        let ca = try await TestCertificateAuthority.make(in: certificates)
        let server = try await TUFMirrorServer(publications: ["new": s.repo.path], tls: (ca.certificate, ca.key))
        defer { server.stop() }
        let mirror = server.url("good")
        for (from, to) in [(ca.caFile, "ca.pem"), (ca.wrongCAFile, "wrong-ca.pem")] {
            try FileManager.default.copyItem(atPath: from, toPath: s.project.dir.path + "/" + to)
        }
        func configure(caFile: String) throws {
            let table = "root = \"root.json\"\nmirrors = [\"\(mirror)\"]\nca_file = \"\(caFile)\""
            try s.writeConfig(plugins: ["sup"], repository: table)
        }
        func installedVersion() throws -> String? {
            let text = try TextFile.read(s.project.dir.path + "/manifests/sup/plugin.json")
            return (s.json(text)?["version"] as? String)
        }
        try await s.publish("sup", "1.0.0")
        try configure(caFile: "ca.pem")
        var r = try await s.vigil("plugin", "install", "sup", "--yes")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try installedVersion() == "1.0.0")
        r = try await s.vigil("check")
        #expect(r.status == 0, "\(r.stderr)")
        try await s.publish("sup", "1.1.0")
        r = try await s.vigil("plugin", "update", "--json")
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(try installedVersion() == "1.1.0")

        // A CA that did not sign the server's certificate: no mirror reachable, naming it and why.
        try await s.publish("sup", "1.2.0")
        try configure(caFile: "wrong-ca.pem")
        r = try await s.vigil("plugin", "update", "--json")
        #expect(r.status == ExitCodes.repositoryUnreachable && s.errorCode(r.stdout) == "repository-unreachable")
        #expect(r.stdout.contains(mirror) && r.stdout.contains("TLS handshake failed"), "\(r.stdout)")
        #expect(try installedVersion() == "1.1.0")

        // A missing or unsafe ca_file: vigil check refuses it at its key, and the commands do not start.
        let refusals = [
            ("missing.pem", "missing.pem does not exist", "(file-not-found)"),
            ("ca.pem", "writable by group or others", "(config-unsafe)"),
        ]
        for (file, reason, code) in refusals {
            try configure(caFile: file)
            r = try await s.vigil("check")
            #expect(
                r.status == ExitCodes.failure && r.stderr.contains(reason) && r.stderr.contains(code), "\(r.stderr)")
            r = try await s.vigil("plugin", "update", "--json")
            #expect(r.status == ExitCodes.repositoryNotConfigured, "\(r.stdout)")
            #expect(s.errorCode(r.stdout) == "repository-not-configured" && r.stdout.contains("ca_file"))
            chmod(s.project.dir.path + "/ca.pem", 0o666)
        }
    }
}
