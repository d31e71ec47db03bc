import Foundation
import Testing
import VigilCore
import VigilCrypto
import VigilPlugin
import VigilRepository
import VigilTestSupport

/// A host project and a python-tuf repository on the shared loopback server: plugin authors' keys
/// (throwaway, made here), their signed plugin directories, and the host's `vigil.toml`.
struct RepositoryProject {
    let dir: TestDirectory
    let repo: TUFRepositoryFixture.Repository
    var keys: [String: MinisignSecretKey] = [:]

    init() throws {
        dir = try TestDirectory("vigil-repository")
        repo = try TUFRepositoryFixture.makeRepository()
        try dir.makeDirectory("host/manifests")
        try dir.makeDirectory("keys")
        try dir.makeDirectory("state")
    }

    func remove() {
        dir.remove()
        repo.remove()
    }

    var environment: HostEnvironment { dir.environment() }
    var config: String { dir.url("host/vigil.toml") }
    var manifests: String { dir.url("host/manifests") }

    /// The author's key for `name` (a new one with `fresh`), saved as `keys/NAME.key` for the generator.
    mutating func key(_ name: String, fresh: Bool = false) throws -> MinisignSecretKey {
        if let key = keys[name], !fresh { return key }
        let key = MinisignSecretKey.generate()
        keys[name] = key
        try dir.write("keys/\(name).key", key.fileContents())
        return key
    }

    /// Signs `src/NAME-VERSION/NAME` with the author's key and publishes it.
    mutating func publish(_ name: String, _ version: String, freshKey: Bool = false) throws {
        let key = try key(name, fresh: freshKey)
        let directory = "src/\(name)-\(version)-\(keys[name]!.publicKey.keyIDHex)/\(name)"
        try dir.write("\(directory)/data.bin", Array("\(name) \(version)".utf8))
        try dir.write(
            "\(directory)/plugin.json",
            """
            {"schema": "vigil.plugin-manifest/v1", "name": "\(name)", "version": "\(version)", "entry": "\(name)",
             "description": "test plugin", "resources": [{"path": "data.bin"}]}
            """)
        try PluginSigner.sign(directory: dir.url(directory), with: key)
        try repo.publish([dir.url(directory)], keys: [name: dir.url("keys/\(name).key")])
    }

    /// Writes `vigil.toml`: the plugins, their trusted keys, and `[repository]` (`repository` is
    /// its body; by default the shipped root and the repository's mirror).
    func writeConfig(plugins: [String], trusted: [String] = [], repository: String? = nil) throws {
        try FileManager.default.copyItem(atPath: repo.path + "/metadata/1.root.json", toPath: dir.url("host/root.json"))
        let trustedLines = trusted.map { "\($0) = \"\(keys[$0]!.publicKey.fingerprint)\"" }.joined(separator: "\n")
        let list = plugins.map { "\"\($0)\"" }.joined(separator: ", ")
        try dir.write(
            "host/vigil.toml",
            """
            plugins = [\(list)]

            [trusted_plugins]
            \(trustedLines)

            [repository]
            \(repository ?? "root = \"root.json\"\nmirrors = [\"\(repo.mirror)\"]")

            """)
    }

    /// A project whose host trusts `name` and has installed `version` of it from the repository.
    static func installed(_ name: String, _ version: String) async throws -> RepositoryProject {
        var p = try RepositoryProject()
        try p.publish(name, version)
        try p.writeConfig(plugins: [name], trusted: [name])
        try await p.install(name)
        return p
    }

    /// Installs `name` from the repository (the host trusts it, or it is trusted on the way).
    func install(_ name: String) async throws {
        let installer = try installer()
        try installer.commit(try await installer.stageInstall(name))
    }

    func installer() throws -> PluginInstaller {
        let configuration = try HostConfiguration.load(path: config, environment: environment)
        let client = try RepositoryClient(
            configuration: configuration, environment: environment, now: Freshness.systemNow())
        return PluginInstaller(
            configuration: configuration, client: client, store: try RollbackStore.standard(environment: environment))
    }

    /// The version of the plugin in the install directory, verified with the trusted key.
    func installedVersion(_ name: String) throws -> String {
        let configuration = try HostConfiguration.load(path: config, environment: environment)
        let plugin = try PluginLoader.verify(
            directory: manifests + "/" + name, name: name,
            policy: .configured(trusted: configuration.trustedKeys[name], acknowledgedUnsigned: false),
            rollback: nil, record: false)
        return "\(plugin.manifest.version)"
    }

    /// Every path under the install directory's parent, with each file's bytes: "nothing changed".
    func snapshot() throws -> [String: Data] {
        var out: [String: Data] = [:]
        let base = dir.url("host")
        let files = FileManager.default.enumerator(atPath: base)
        while let path = files?.nextObject() as? String {
            out[path] = FileManager.default.contents(atPath: base + "/" + path) ?? Data()
        }
        return out
    }

    /// `body`'s refusal (nil when it succeeds; any other error is recorded as an issue).
    func refusal(_ body: () async throws -> Void) async -> RepositoryError? {
        do { try await body() } catch let error as RepositoryError { return error } catch {
            Issue.record("not a RepositoryError: \(error)")
        }
        return nil
    }
}

@Suite("plugin repositories: install, update, outdated against python-tuf over loopback HTTP", .serialized)
struct RepositoryTests {
    @Test("install of an untrusted plugin: the trust review with the delegated key, then placed and trusted")
    func installReviewsAndTrusts() async throws {
        var p = try RepositoryProject()
        defer { p.remove() }
        try p.publish("alpha", "1.0.0")
        try p.writeConfig(plugins: ["alpha"])
        let installer = try p.installer()
        let staged = try await installer.stageInstall("alpha")
        let review = try #require(staged.review)
        #expect(review.keys == TrustedKeys(p.keys["alpha"]!.publicKey.fingerprint))
        #expect(!FileManager.default.fileExists(atPath: p.manifests + "/alpha"), "nothing placed before the commit")
        try installer.commit(staged)
        #expect(try p.installedVersion("alpha") == "1.0.0")
        let configuration = try HostConfiguration.load(path: p.config, environment: p.environment)
        #expect(configuration.trustedKeys["alpha"] == TrustedKeys(p.keys["alpha"]!.publicKey.fingerprint))
        #expect(try FileManager.default.contentsOfDirectory(atPath: p.manifests) == ["alpha"], "no staging left")
        // Installed already: refused, nothing changes.
        let again = await p.refusal { _ = try await installer.stageInstall("alpha") }
        #expect(again?.code == .installState)
    }

    @Test("install of a trusted plugin needs no review; an unknown plugin is refused with its own code")
    func installTrustedAndUnknown() async throws {
        var p = try RepositoryProject()
        defer { p.remove() }
        try p.publish("beta", "2.1.0")
        try p.writeConfig(plugins: ["beta"], trusted: ["beta"])
        let installer = try p.installer()
        let staged = try await installer.stageInstall("beta")
        #expect(staged.review == nil)
        try installer.commit(staged)
        #expect(try p.installedVersion("beta") == "2.1.0")
        let unknown = await p.refusal { _ = try await installer.stageInstall("gamma") }
        #expect(unknown?.code == .unknownPlugin, "\(String(describing: unknown))")
    }

    @Test("update installs a new version, a second update finds nothing new, outdated reads custom.version")
    func updateAndNothingNew() async throws {
        var p = try await RepositoryProject.installed("alpha", "1.0.0")
        defer { p.remove() }
        try p.publish("alpha", "1.1.0")
        let outdated = try await p.installer().outdated()
        #expect(outdated.map(\.state) == ["outdated"] && outdated.first?.available == "1.1.0", "\(outdated)")
        let items = try await p.installer().update()
        #expect(items.map(\.outcome) == [.updated] && items.first?.to == "1.1.0", "\(items)")
        #expect(try p.installedVersion("alpha") == "1.1.0")
        let before = try p.snapshot()
        let again = try await p.installer().update()
        #expect(again.map(\.outcome) == [.upToDate], "\(again)")
        #expect(try p.snapshot() == before, "an update with nothing new changes nothing")
        #expect(try await p.installer().outdated().map(\.state) == ["up-to-date"])
    }

    @Test("update is all or none: a failure staging the second plugin changes nothing; the switch is one step")
    func atomicUpdate() async throws {
        var p = try RepositoryProject()
        defer { p.remove() }
        for name in ["alpha", "beta"] { try p.publish(name, "1.0.0") }
        try p.writeConfig(plugins: ["alpha", "beta"], trusted: ["alpha", "beta"])
        for name in ["alpha", "beta"] { try await p.install(name) }
        for name in ["alpha", "beta"] { try p.publish(name, "2.0.0") }
        let before = try p.snapshot()

        var failing = try p.installer()
        failing.afterStaging = { (name: String) throws(RepositoryError) in
            if name == "beta" {
                throw RepositoryError(code: .storage, message: "injected failure on the second plugin")
            }
        }
        let refused = await p.refusal { _ = try await failing.update() }
        #expect(refused?.message == "injected failure on the second plugin")
        #expect(try p.snapshot() == before, "alpha was staged and verified, yet nothing changed")

        // A crashed run leaves its next state beside the install directory: no host reads it (it
        // is in no plugin path), and the next update removes it.
        try p.dir.write("host/.manifests.vigil-next/alpha/plugin.json", "half-written")
        #expect(try p.installedVersion("alpha") == "1.0.0")
        // Just before the switch every plugin is still the old one, and the next state holds both new ones.
        var watched = try p.installer()
        let manifests = p.manifests
        let next = p.dir.url("host/.manifests.vigil-next")
        let seen = Observed()
        watched.afterStaging = { (name: String) throws(RepositoryError) in
            guard name.isEmpty else { return }
            for plugin in ["alpha", "beta"] {
                let live = (try? String(contentsOfFile: "\(manifests)/\(plugin)/data.bin", encoding: .utf8)) ?? ""
                let staged = (try? String(contentsOfFile: "\(next)/\(plugin)/data.bin", encoding: .utf8)) ?? ""
                seen.append("\(live)|\(staged)")
            }
        }
        // One change of the directory at a time: while another holds its lock, an update is refused.
        let lock = open(p.dir.url("host/.manifests.vigil-lock"), O_RDWR | O_CREAT, 0o600)
        #expect(lock >= 0 && flock(lock, LOCK_EX) == 0)
        let busy = await p.refusal { _ = try await p.installer().update() }
        #expect(busy?.code == .installState && busy?.message.contains("another") == true, "\(String(describing: busy))")
        close(lock)
        let items = try await watched.update()
        #expect(items.map(\.outcome) == [.updated, .updated], "\(items)")
        #expect(seen.values == ["alpha 1.0.0|alpha 2.0.0", "beta 1.0.0|beta 2.0.0"])
        #expect(try p.installedVersion("alpha") == "2.0.0" && p.installedVersion("beta") == "2.0.0")
        #expect(!FileManager.default.fileExists(atPath: next), "no leftover after the switch")
    }

    @Test("the repository's root key and targets key rotate: the client follows and updates")
    func keyRotation() async throws {
        var p = try await RepositoryProject.installed("alpha", "1.0.0")
        defer { p.remove() }
        try p.repo.run("rotate", ["root"])
        try p.repo.run("rotate", ["targets"])
        try p.publish("alpha", "1.2.0")
        let items = try await p.installer().update(["alpha"])
        #expect(items.first?.outcome == .updated, "\(items)")
        #expect(try p.installedVersion("alpha") == "1.2.0")
        let root = try String(contentsOfFile: p.dir.url("state/vigil/repository/root.json"), encoding: .utf8)
        #expect(root.contains("\"version\": 3"), "the client trusts the third root now")
    }

    @Test(
        "expired timestamp, snapshot, targets or the plugin's own role: the stale code names it; nothing changes",
        arguments: [
            "timestamp", "snapshot", "targets", "alpha",
        ])
    func staleRepository(role: String) async throws {
        var p = try await RepositoryProject.installed("alpha", "1.0.0")
        defer { p.remove() }
        try p.publish("alpha", "1.1.0")
        try p.repo.run("expire", [role])
        let before = try p.snapshot()
        let refused = await p.refusal { _ = try await p.installer().update() }
        #expect(refused?.code == .stale, "\(String(describing: refused))")
        #expect(refused?.message.contains(role) == true && refused?.message.contains("expired at") == true)
        #expect(try p.snapshot() == before)
        #expect(try p.installedVersion("alpha") == "1.0.0")
    }

    @Test("a delegation to a key other than the trusted one is refused; so is an older version")
    func keyMismatchAndRollback() async throws {
        var p = try await RepositoryProject.installed("alpha", "1.0.0")
        defer { p.remove() }
        let trusted = p.keys["alpha"]!
        try p.publish("alpha", "1.1.0", freshKey: true)  // the repository re-delegates alpha to another key
        p.keys["alpha"] = trusted
        let before = try p.snapshot()
        let mismatch = await p.refusal { _ = try await p.installer().update() }
        #expect(mismatch?.code == .keyMismatch, "\(String(describing: mismatch))")
        #expect(try p.snapshot() == before)

        var q = try await RepositoryProject.installed("alpha", "2.0.0")
        defer { q.remove() }
        try q.publish("alpha", "1.9.0")
        let rollback = await q.refusal { _ = try await q.installer().update() }
        #expect(rollback?.code == .rollback, "\(String(describing: rollback))")
        #expect(try q.installedVersion("alpha") == "2.0.0")
    }

    @Test("mirrors: an unreachable one is skipped, file:// works, all unreachable is its own code; root_sha256 pins")
    func mirrorsAndPins() async throws {
        var p = try RepositoryProject()
        defer { p.remove() }
        try p.publish("alpha", "1.0.0")
        let dead = "http://127.0.0.1:9/"  // discard: nothing listens
        try p.writeConfig(
            plugins: ["alpha"], trusted: ["alpha"],
            repository: "root_sha256 = \"\(try p.repo.rootSHA256())\"\nmirrors = [\"\(dead)\", \"\(p.repo.mirror)\"]")
        try await p.install("alpha")
        #expect(try p.installedVersion("alpha") == "1.0.0")

        // A file:// mirror (a USB stick, a mount): the same workflow, the same checks.
        var f = try RepositoryProject()
        defer { f.remove() }
        try f.publish("alpha", "1.0.0")
        try f.writeConfig(
            plugins: ["alpha"], trusted: ["alpha"],
            repository: "root = \"root.json\"\nmirrors = [\"\(dead)\", \"file://\(f.repo.path)/\"]")
        try await f.install("alpha")
        #expect(try f.installedVersion("alpha") == "1.0.0")
        try f.publish("alpha", "1.0.1")
        #expect(try await f.installer().update().map(\.outcome) == [.updated])
        #expect(try f.installedVersion("alpha") == "1.0.1")

        var q = try RepositoryProject()
        defer { q.remove() }
        try q.publish("alpha", "1.0.0")
        try q.writeConfig(plugins: ["alpha"], repository: "root = \"root.json\"\nmirrors = [\"\(dead)\"]")
        let unreachable = await q.refusal {
            _ = try await q.installer().stageInstall("alpha")
        }
        #expect(unreachable?.code == .unreachable && unreachable?.message.contains(dead) == true)
        // The pin bootstraps the root of trust: a metadata directory without one.
        try FileManager.default.removeItem(atPath: q.dir.url("state/vigil/repository"))
        try FileManager.default.removeItem(atPath: q.dir.url("host/root.json"))
        try q.writeConfig(
            plugins: ["alpha"],
            repository: "root_sha256 = \"\(String(repeating: "ab", count: 32))\"\nmirrors = [\"\(q.repo.mirror)\"]")
        let pinned = await q.refusal { _ = try await q.installer().stageInstall("alpha") }
        #expect(pinned?.code == .rootMismatch, "\(String(describing: pinned))")
    }

    @Test("[repository] is checked: codes, a did-you-mean for a misspelt key, loopback-only plain HTTP")
    func settings() throws {
        func refusal(_ table: [String: SettingValue]) -> RepositorySettingsError? {
            do throws(RepositorySettingsError) {
                _ = try RepositorySettings(table: table, configDirectory: "/etc/vigil")
            } catch { return error }
            return nil
        }
        let mirrors = SettingValue.array([.string("http://127.0.0.1:8080/")])
        let ok = try RepositorySettings(
            table: ["root": .string("root.json"), "mirrors": mirrors], configDirectory: "/etc/vigil")
        #expect(
            ok.root == "/etc/vigil/root.json" && ok.mirrors.map(\.metadataURL) == ["http://127.0.0.1:8080/metadata/"])
        #expect(refusal(["mirrors": mirrors])?.code == .noRoot)
        let typo = refusal(["root": .string("r.json"), "mirrors": mirrors, "mirror": mirrors])
        #expect(typo?.code == .invalid && typo?.message.contains("did you mean `mirrors`?") == true)
        #expect(
            refusal(["root": .string("r"), "mirrors": .array([.string("http://example.org/")])])?.code
                == .mirrorNotLoopback)
        #expect(
            refusal([
                "root": .string("r"), "mirrors": .array([.string("http://example.org/")]),
                "allow_remote_http": .bool(true),
            ]) == nil)
        #expect(refusal(["root": .string("r"), "mirrors": .array([.string("ftp://x/")])])?.code == .mirrorInvalid)
        #expect(refusal(["root": .string("r"), "mirrors": .array([])])?.code == .mirrorInvalid)
        #expect(refusal(["root_sha256": .string("xyz"), "mirrors": mirrors])?.code == .rootHashInvalid)
        #expect(RepositoryMirror.parse("file:///media/usb/repo")?.path == "/media/usb/repo/")
        // https:// may be anywhere (TLS hides what is fetched); ca_file is resolved like root.
        let tls = try RepositorySettings(
            table: [
                "root": .string("r"), "mirrors": .array([.string("https://Plugins.example:8443/vigil")]),
                "ca_file": .string("ca.pem"),
            ], configDirectory: "/etc/vigil")
        #expect(tls.mirrors.map(\.scheme) == [.https] && tls.mirrors.map(\.host) == ["plugins.example"])
        #expect(tls.mirrors.map(\.targetsURL) == ["https://Plugins.example:8443/vigil/targets/"])
        #expect(tls.caFile == "/etc/vigil/ca.pem" && ok.caFile == nil)
        for bad in ["https:///x/", "https://a@b/", "https://h:0/", "https:/h/"] {
            #expect(
                refusal(["root": .string("r"), "mirrors": .array([.string(bad)])])?.code == .mirrorInvalid, "\(bad)")
        }
        #expect(refusal(["root": .string("r"), "mirrors": mirrors, "ca_file": .bool(true)])?.code == .invalid)
    }
}

/// Values a test's hook records (the hook runs on the update's task).
final class Observed: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String] = []
    func append(_ value: String) { lock.withLock { items.append(value) } }
    var values: [String] { lock.withLock { items } }
}
