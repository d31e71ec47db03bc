import Foundation
import Testing
import VigilCore
import VigilCrypto
import VigilTestSupport

/// The signed revocation list: revoked manifests, a version floor and revoked keys, kept by each
/// host and never going back.
@Suite struct RevocationTests {
    let a = MinisignSecretKey.generate()
    let b = MinisignSecretKey.generate()
    var dir: String { "plugins/alpha" }

    func loaderA(_ f: PluginFixture) -> PluginLoader { f.loader(trusted: ["alpha": a.publicKey.fingerprint]) }

    func state(_ f: PluginFixture) -> [UInt8]? { try? f.root.read("state/vigil/rollback.json") }

    @Test func aRevokedManifestIsRefusedAtTheNextStartEvenAfterTheListIsDeleted() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: a)
        let plugin = try loaderA(f).load("alpha").get()
        try PluginRevoker.revoke(
            directory: f.root.url(dir), keys: [], manifests: [plugin.manifestSHA256], versionFloor: nil, expires: nil,
            signers: [a])
        let error = try #require(CoreError.of(loaderA(f).load("alpha")))
        #expect(error.code == .revoked)
    }

    @Test func theHostKeepsTheListItAppliedWhenTheFileIsDeleted() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: a)
        try PluginSigner.sign(directory: f.root.url(dir), with: b)
        let keys = try TrustedKeys(keys: [a.publicKey.fingerprint, b.publicKey.fingerprint], threshold: 1)
        // b revokes a; the host applies and records the list with a load signed by b.
        try PluginRevoker.revoke(
            directory: f.root.url(dir), keys: [a.publicKey.fingerprint], manifests: [], versionFloor: nil,
            expires: nil, signers: [b])
        #expect(f.errorCode("alpha", f.loader(keySets: ["alpha": keys])) == nil)
        #expect(try f.store.revocations(plugin: "alpha")?.keys == [a.publicKey.fingerprint])
        // The list and b's signature disappear: a alone no longer counts.
        for file in ["revocations.json", "revocations.json.minisig", "plugin.json.2.minisig"] {
            try FileManager.default.removeItem(atPath: f.root.url("\(dir)/\(file)"))
        }
        #expect(f.errorCode("alpha", f.loader(keySets: ["alpha": keys])) == .invalidSignature)
    }

    @Test func aVersionBelowTheFloorIsRevoked() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: a, version: "1.2.0")
        try PluginRevoker.revoke(
            directory: f.root.url(dir), keys: [], manifests: [], versionFloor: SemanticVersion("2.0.0"),
            expires: nil, signers: [a])
        #expect(f.errorCode("alpha", loaderA(f)) == .revoked)
        try f.makeSigned("alpha", key: a, version: "2.0.0")
        #expect(f.errorCode("alpha", loaderA(f)) == nil)
    }

    @Test func aRevokedKeyNoLongerCountsTowardTheThreshold() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: a)
        try PluginSigner.sign(directory: f.root.url(dir), with: b)
        let keys = try TrustedKeys(keys: [a.publicKey.fingerprint, b.publicKey.fingerprint], threshold: 1)
        #expect(f.errorCode("alpha", f.loader(keySets: ["alpha": keys], rollback: false)) == nil)
        // b revokes a (1 of the 2 keys signs the list).
        try PluginRevoker.revoke(
            directory: f.root.url(dir), keys: [a.publicKey.fingerprint], manifests: [], versionFloor: nil,
            expires: nil, signers: [b])
        try FileManager.default.removeItem(atPath: f.root.url("\(dir)/plugin.json.2.minisig"))
        #expect(f.errorCode("alpha", f.loader(keySets: ["alpha": keys], rollback: false)) == .invalidSignature)
        try PluginSigner.sign(directory: f.root.url(dir), with: b)
        #expect(f.errorCode("alpha", f.loader(keySets: ["alpha": keys], rollback: false)) == nil)
        // Revoking both leaves fewer keys than the threshold: revoked.
        try PluginRevoker.revoke(
            directory: f.root.url(dir), keys: [b.publicKey.fingerprint], manifests: [], versionFloor: nil,
            expires: nil, signers: [b])
        #expect(f.errorCode("alpha", f.loader(keySets: ["alpha": keys], rollback: false)) == .revoked)
    }

    @Test func aListOlderThanTheStoredOneIsRefused() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: a)
        try PluginRevoker.revoke(
            directory: f.root.url(dir), keys: [], manifests: [], versionFloor: nil, expires: nil, signers: [a])
        let first = try f.root.read("\(dir)/revocations.json")
        let firstSig = try f.root.read("\(dir)/revocations.json.minisig")
        try PluginRevoker.revoke(
            directory: f.root.url(dir), keys: [], manifests: [], versionFloor: SemanticVersion("0.1.0"),
            expires: nil, signers: [a])
        #expect(f.errorCode("alpha", loaderA(f)) == nil)
        #expect(try f.store.revocations(plugin: "alpha")?.version == 2)
        try f.root.write("\(dir)/revocations.json", first)
        try f.root.write("\(dir)/revocations.json.minisig", firstSig)
        let before = state(f)
        #expect(f.errorCode("alpha", loaderA(f)) == .revocationRollback)
        #expect(state(f) == before)
    }

    @Test func anUnsignedOrMalformedListRefusesThePluginAndPersistsNothing() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: a)
        #expect(f.errorCode("alpha", loaderA(f)) == nil)
        // Signed by a key that is not the plugin's.
        try PluginRevoker.revoke(
            directory: f.root.url(dir), keys: [], manifests: [], versionFloor: nil, expires: nil, signers: [b])
        let before = state(f)
        #expect(f.errorCode("alpha", loaderA(f)) == .revocationInvalid)
        // Signed by the plugin's key but not valid: an unknown field.
        let text = #"{"schema": "vigil.revocations/v1", "plugin": "alpha", "version": 1, "unknown": 1}"#
        try f.root.write("\(dir)/revocations.json", text)
        let sig = try MinisignSignature.sign(Array(text.utf8), with: a, trustedComment: "x")
        try f.root.write("\(dir)/revocations.json.minisig", sig.fileContents())
        #expect(f.errorCode("alpha", loaderA(f)) == .revocationInvalid)
        #expect(state(f) == before)
    }
}
