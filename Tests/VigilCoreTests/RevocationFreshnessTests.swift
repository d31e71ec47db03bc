import Foundation
import Testing
import VigilCore
import VigilCrypto
import VigilTestSupport

/// The revocation list's own signed `expires` (fail closed for changes, never stop what runs)
/// and ``PluginLoader/revocation(of:rollback:)``, the check a running host repeats when it learns
/// of a new list.
@Suite struct RevocationFreshnessTests {
    let a = MinisignSecretKey.generate()
    let b = MinisignSecretKey.generate()
    static let t0 = Freshness.parseRFC3339("2030-01-01T00:00:00Z")!
    static let day: Int64 = 86400
    var dir: String { "plugins/alpha" }

    func loader(_ f: PluginFixture, at now: Int64, keys: TrustedKeys? = nil) -> PluginLoader {
        var loader =
            keys.map { f.loader(keySets: ["alpha": $0]) } ?? f.loader(trusted: ["alpha": a.publicKey.fingerprint])
        loader.now = { now }
        return loader
    }

    func state(_ f: PluginFixture) -> [UInt8]? { try? f.root.read("state/vigil/rollback.json") }

    func revoke(
        _ f: PluginFixture, keys: [Fingerprint] = [], manifests: [String] = [], floor: String? = nil,
        expires: Int64? = nil, signers: [MinisignSecretKey]? = nil
    ) throws {
        try PluginRevoker.revoke(
            directory: f.root.url(dir), keys: keys, manifests: manifests,
            versionFloor: floor.flatMap(SemanticVersion.init),
            expires: expires, signers: signers ?? [a])
    }

    @Test func anExpiredRevocationListBlocksChangesButNotTheAcceptedVersion() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: a, version: "1.0.0")
        try revoke(f, expires: Self.t0)
        // Fresh list: the first version is accepted.
        #expect(f.errorCode("alpha", loader(f, at: Self.t0 - Self.day)) == nil)
        // Once the list expired, the accepted version still loads (it keeps running)…
        #expect(f.errorCode("alpha", loader(f, at: Self.t0 + Self.day)) == nil)
        // …but an update is refused with its own code, and nothing is recorded.
        try f.makeSigned("alpha", key: a, version: "1.1.0")
        let before = state(f)
        let error = try #require(CoreError.of(loader(f, at: Self.t0 + Self.day).load("alpha")))
        #expect(error.code == .revocationExpired)
        #expect(error.message.contains("2030-01-01T00:00:00Z") && error.message.contains("vigil plugin revoke"))
        #expect(state(f) == before)
        // The publisher re-signs the list with a later expiry: the update goes through.
        try revoke(f, expires: Self.t0 + 30 * Self.day)
        #expect(f.errorCode("alpha", loader(f, at: Self.t0 + Self.day)) == nil)
    }

    @Test func anExpiredListIsRefusedForAFirstTrustAndAClockSetBackDoesNotReviveIt() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: a, version: "1.0.0")
        try revoke(f, expires: Self.t0)
        #expect(f.errorCode("alpha", loader(f, at: Self.t0)) == .revocationExpired)
        #expect(state(f) == nil)
        // Another plugin's accepted load moves the ratchet past the expiry…
        try f.makeSigned("beta", key: b)
        var other = f.loader(trusted: ["beta": b.publicKey.fingerprint])
        other.now = { Self.t0 + 10 * Self.day }
        #expect(f.errorCode("beta", other) == nil)
        // …so a clock set back to before it is refused (more than the tolerance behind the ratchet).
        #expect(f.errorCode("alpha", loader(f, at: Self.t0 - Self.day)) == .clockRolledBack)
        // Within the tolerance, the ratchet still counts as now: the list is expired.
        #expect(f.errorCode("alpha", loader(f, at: Self.t0 + 10 * Self.day - 60)) == .revocationExpired)
    }

    @Test func anExpiredListStillRevokes() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: a, version: "1.0.0")
        let plugin = try loader(f, at: Self.t0 - Self.day).load("alpha").get()
        try revoke(f, manifests: [plugin.manifestSHA256], expires: Self.t0)
        #expect(f.errorCode("alpha", loader(f, at: Self.t0 + Self.day)) == .revoked)
    }

    @Test func theRunningCheckSeesEachKindOfRevocationAndRecordsTheList() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: a, version: "1.2.0")
        try PluginSigner.sign(directory: f.root.url(dir), with: b)
        let keys = try TrustedKeys(keys: [a.publicKey.fingerprint, b.publicKey.fingerprint], threshold: 1)
        let plugin = try loader(f, at: Self.t0, keys: keys).load("alpha").get()
        #expect(Set(plugin.signers) == [a.publicKey.fingerprint, b.publicKey.fingerprint])
        #expect(try PluginLoader.revocation(of: plugin, rollback: f.store) == nil)
        // One of two signers revoked: one valid signature is left, threshold 1 — still fine.
        try revoke(f, keys: [a.publicKey.fingerprint])
        #expect(try PluginLoader.revocation(of: plugin, rollback: f.store) == nil)
        #expect(try f.store.revocations(plugin: "alpha")?.version == 1, "the newer list is recorded")
        // Both revoked: revoked.
        try revoke(f, keys: [b.publicKey.fingerprint], signers: [b])
        #expect(try PluginLoader.revocation(of: plugin, rollback: f.store)?.code == .revoked)
        // Deleting the list revokes nothing back: the recorded one applies.
        try FileManager.default.removeItem(atPath: f.root.url("\(dir)/revocations.json"))
        #expect(try PluginLoader.revocation(of: plugin, rollback: f.store)?.code == .revoked)
    }

    @Test func theRunningCheckSeesAFloorAndADigest() throws {
        for kind in ["floor", "digest"] {
            let f = try PluginFixture()
            defer { f.remove() }
            try f.makeSigned("alpha", key: a, version: "1.2.0")
            let plugin = try loader(f, at: Self.t0).load("alpha").get()
            try revoke(
                f, manifests: kind == "digest" ? [plugin.manifestSHA256] : [], floor: kind == "floor" ? "1.2.1" : nil)
            let refusal = try #require(try PluginLoader.revocation(of: plugin, rollback: f.store), "\(kind)")
            #expect(refusal.code == .revoked)
            #expect(refusal.message.contains(kind == "floor" ? "floor 1.2.1" : "revocation list"))
        }
    }

    @Test func theRunningCheckThrowsForAListItCannotTrust() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: a)
        let plugin = try loader(f, at: Self.t0).load("alpha").get()
        // Signed by a key that is not the plugin's: not applied, reported.
        try revoke(f, manifests: [plugin.manifestSHA256], signers: [b])
        #expect(throws: CoreError.self) { _ = try PluginLoader.revocation(of: plugin, rollback: f.store) }
        #expect(try f.store.revocations(plugin: "alpha") == nil)
        // A list older than the recorded one: revocation-rollback.
        try FileManager.default.removeItem(atPath: f.root.url("\(dir)/revocations.json"))
        try revoke(f)
        try revoke(f)
        let old = try f.root.read("\(dir)/revocations.json")
        let oldSig = try f.root.read("\(dir)/revocations.json.minisig")
        try revoke(f)
        _ = try PluginLoader.revocation(of: plugin, rollback: f.store)
        try f.root.write("\(dir)/revocations.json", old)
        try f.root.write("\(dir)/revocations.json.minisig", oldSig)
        do throws(CoreError) {
            _ = try PluginLoader.revocation(of: plugin, rollback: f.store)
            Issue.record("an older list was applied")
        } catch {
            #expect(error.code == .revocationRollback)
        }
    }
}

/// The attacks of issue 31 §5 aimed at the revocation list itself (the others are in
/// ThresholdSignatureTests, KeyRotationTests, FreshnessTests and RevocationTests): each is
/// refused before the list is parsed, and persists nothing.
@Suite struct RevocationListAttackTests {
    let a = MinisignSecretKey.generate()
    var dir: String { "plugins/alpha" }

    func state(_ f: PluginFixture) -> [UInt8]? { try? f.root.read("state/vigil/rollback.json") }

    func accepted(_ f: PluginFixture) throws -> PluginLoader {
        try f.makeSigned("alpha", key: a)
        let loader = f.loader(trusted: ["alpha": a.publicKey.fingerprint])
        #expect(f.errorCode("alpha", loader) == nil)
        return loader
    }

    @Test func aListLargerThanItsCapIsRefusedUnread() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        let loader = try accepted(f)
        try f.root.write("\(dir)/revocations.json", [UInt8](repeating: 0x20, count: RevocationList.maxFileSize + 1))
        let before = state(f)
        #expect(f.errorCode("alpha", loader) == .fileTooLarge)
        #expect(state(f) == before)
    }

    @Test func aLegacyEdSignatureOnTheListIsRefused() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        let loader = try accepted(f)
        try PluginRevoker.revoke(
            directory: f.root.url(dir), keys: [], manifests: [], versionFloor: SemanticVersion("0.0.1"), expires: nil,
            signers: [a])
        let path = "\(dir)/revocations.json.minisig"
        let signature = try MinisignSignature(fileContents: try f.root.read(path))
        var lines = String(decoding: try f.root.read(path), as: UTF8.self).components(separatedBy: "\n")
        lines[1] = Data(Array("Ed".utf8) + signature.keyID + signature.signature).base64EncodedString()
        try f.root.write(path, lines.joined(separator: "\n"))
        let before = state(f)
        #expect(f.errorCode("alpha", loader) == .unsupportedSignatureAlgorithm)
        #expect(state(f) == before)
    }

    @Test func aListNamingAnotherPluginOrAPathIsRefusedAndNoPathIsBuiltFromIt() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        let loader = try accepted(f)
        for plugin in ["../beta", "beta", "/etc"] {
            let text = """
                {"schema": "vigil.revocations/v1", "plugin": "\(plugin)", "version": 9, "keys": [], "manifests": [],
                 "version_floor": null}
                """
            try f.root.write("\(dir)/revocations.json", text)
            let sig = try MinisignSignature.sign(Array(text.utf8), with: a, trustedComment: "x")
            try f.root.write("\(dir)/revocations.json.minisig", sig.fileContents())
            let before = state(f)
            let error = try #require(CoreError.of(loader.load("alpha")))
            #expect(error.code == .revocationInvalid, "\(plugin)")
            #expect(state(f) == before)
            #expect(try f.root.list("plugins") == ["alpha"])
        }
    }
}
