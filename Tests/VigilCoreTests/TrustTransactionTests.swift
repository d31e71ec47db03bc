import Foundation
import Testing
import VigilCore
import VigilCrypto
import VigilTestSupport

@Suite struct TrustTransactionTests {
    let key = MinisignSecretKey.generate()
    var fp: Fingerprint { key.publicKey.fingerprint }

    /// When the step after the vigil.toml edit fails, the file is put back byte for byte (or
    /// removed when the edit created it).
    @Test func aFailedSecondWritePutsTheConfigBack() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let original = "# keep\nplugins = [\"a\"]\n"
        let path = try dir.write("vigil.toml", original, mode: 0o640)
        #expect(throws: CoreError.self) {
            try TrustEditor.trust(plugin: "a", fingerprint: fp, configPath: path) { () throws(CoreError) in
                throw CoreError(code: .stateInvalid, message: "state write failed")
            }
        }
        #expect(String(decoding: try dir.read("vigil.toml"), as: UTF8.self) == original)
        #expect(try dir.mode("vigil.toml") == 0o640)
        #expect(throws: CoreError.self) {
            try TrustEditor.trust(plugin: "a", fingerprint: fp, configPath: dir.url("other.toml")) {
                () throws(CoreError) in throw CoreError(code: .stateInvalid, message: "state write failed")
            }
        }
        #expect(try dir.list() == ["vigil.toml"], "the file this edit created is gone, no temporary file left")
    }

    /// A review reads the rollback state for the downgrade notice, and the commit replaces the
    /// plugin's record in one write, so the downgrade loads afterwards.
    @Test func reviewFlagsADowngradeAndCommitAcceptsIt() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        let store = RollbackStore(directory: f.root.url("state/vigil"))
        let configPath = f.root.url("vigil.toml")
        try f.root.write("vigil.toml", "plugins = [\"alpha\"]\nplugin_paths = [\"plugins\"]\n")
        try f.makeSigned("alpha", key: key, version: "2.0.0")
        var config = try HostConfiguration.load(path: configPath, environment: f.root.environment())
        let first = try TrustTransaction.review(name: "alpha", configuration: config, pinned: [], store: store)
        #expect(first.downgrade == nil && first.currentlyTrusted == nil && first.expectedFirstPartyKey == nil)
        #expect(try TrustTransaction.commit(first, store: store) == .added)
        try f.makeSigned("alpha", key: key, version: "2.0.0-0")
        config = try HostConfiguration.load(path: configPath, environment: f.root.environment())
        let loader = PluginLoader(configuration: config, rollbackStore: store)
        #expect(f.errorCode("alpha", loader) == .rollback)
        let review = try TrustTransaction.review(name: "alpha", configuration: config, pinned: [], store: store)
        #expect(
            review.downgrade?.from == SemanticVersion("2.0.0") && review.downgrade?.to == SemanticVersion("2.0.0-0"))
        #expect(try TrustTransaction.commit(review, store: store) == .unchanged)
        _ = try loader.loadOrThrow("alpha")
    }

    @Test func theFirstPartyKeysAreTheShippedOnes() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
        for (name, fingerprint) in FirstPartyKeys.fingerprints {
            let text = try TextFile.read("\(root)/manifests/\(name)/plugin.pub")
            #expect(try MinisignPublicKey(fileContents: text).fingerprint == fingerprint, "\(name)")
            #expect(FirstPartyKeys.mismatch(name: name, fingerprint: fingerprint) == nil)
            #expect(FirstPartyKeys.mismatch(name: name, fingerprint: fp) == fingerprint)
        }
        #expect(FirstPartyKeys.mismatch(name: "my-plugin", fingerprint: fp) == nil)
    }

    /// `plugin list`'s signature column says "valid" only for refusals after the signature
    /// verified with the trusted key; every code is placed by an exhaustive switch.
    @Test func noRefusalBeforeOrDuringVerificationShowsAValidSignature() {
        let afterVerification: Set<CoreError.Code.Kind> = [
            .malformedManifest, .nameMismatch, .rollback, .resourceMismatch, .stateInvalid, .stateUnsafe, .expired,
            .clockRolledBack, .revocationExpired, .capabilitiesGrown,
        ]
        for kind in CoreError.Code.Kind.allCases {
            let column = PluginInspection.signature(after: CoreError.Code(kind))
            #expect((column == .valid) == afterVerification.contains(kind), "\(kind)")
        }
    }
}
