import Foundation
import Testing
import VigilCore
import VigilCrypto
import VigilTestSupport

/// An update may ask for no more than the operator accepted at their last review: real signed
/// manifests (a throwaway key), the real rollback state, the loader a host runs.
@Suite struct CapabilityUpdateTests {
    let key = MinisignSecretKey.generate()

    static let heartbeat = #"{"files": [{"path": "heartbeat", "access": "read-write"}]}"#
    static let grown =
        #"{"files": [{"path": "heartbeat", "access": "read-write"}, {"path": "/home/op/.ssh/", "access": "read"}], "#
        + #""network": {"tcp_connect": [443]}}"#

    func sign(_ f: PluginFixture, version: String, capabilities: String?) throws {
        let extra = capabilities.map { "\n  \"capabilities\": \($0)," } ?? ""
        try f.makeSigned(
            "alpha", key: key, version: version,
            manifest: PluginFixture.manifestText(name: "alpha", version: version, extra: extra))
    }

    /// Trusts alpha as `vigil plugin trust` does (review, then commit), and returns the review.
    @discardableResult
    func trust(_ f: PluginFixture) throws -> TrustReview {
        let config = try HostConfiguration.load(path: f.root.url("vigil.toml"), environment: f.root.environment())
        let review = try TrustTransaction.review(name: "alpha", configuration: config, pinned: [], store: f.store)
        _ = try TrustTransaction.commit(review, store: f.store)
        return review
    }

    func loader(_ f: PluginFixture) throws -> PluginLoader {
        let config = try HostConfiguration.load(path: f.root.url("vigil.toml"), environment: f.root.environment())
        return PluginLoader(configuration: config, rollbackStore: f.store)
    }

    func fixture() throws -> PluginFixture {
        let f = try PluginFixture()
        try f.root.write("vigil.toml", "plugins = [\"alpha\"]\nplugin_paths = [\"plugins\"]\n")
        return f
    }

    @Test func anUpdateThatAsksForMoreIsRefusedUntilReviewed() throws {
        let f = try fixture()
        defer { f.remove() }
        try sign(f, version: "1.0.0", capabilities: Self.heartbeat)
        let first = try trust(f)
        #expect(first.acceptedCapabilities == nil)
        #expect(
            try f.store.acceptedCapabilities(plugin: "alpha")?.plainWords == [
                "read and write heartbeat in its state directory"
            ])
        _ = try loader(f).loadOrThrow("alpha")

        try sign(f, version: "1.1.0", capabilities: Self.grown)
        let error = try #require(CoreError.of(try loader(f).load("alpha")))
        #expect(error.code == .capabilitiesGrown)
        #expect(error.plugin == "alpha")
        #expect(
            error.message.hasPrefix(
                "version 1.1.0 asks to read /home/op/.ssh/ and everything in it; connect to TCP port 443 — that is "
                    + "more than you accepted when you last trusted it"), "\(error.message)")
        #expect(error.message.contains("`vigil plugin trust alpha`"))
        // Refused before anything is recorded: the accepted version stays 1.0.0.
        #expect(try f.store.entries(plugin: "alpha").values.map(\.version) == [SemanticVersion("1.0.0")!])

        // The review shows exactly the difference; accepting it lets the update load.
        let review = try trust(f)
        #expect(review.addedCapabilities == ["read /home/op/.ssh/ and everything in it", "connect to TCP port 443"])
        #expect(review.acceptedCapabilities?.plainWords == ["read and write heartbeat in its state directory"])
        let loaded = try loader(f).loadOrThrow("alpha")
        #expect(loaded.manifest.version == SemanticVersion("1.1.0"))
    }

    @Test func fewerOrEqualCapabilitiesPass() throws {
        let f = try fixture()
        defer { f.remove() }
        try sign(f, version: "1.0.0", capabilities: Self.grown)
        try trust(f)
        try sign(f, version: "1.0.1", capabilities: Self.grown)
        _ = try loader(f).loadOrThrow("alpha")
        try sign(f, version: "1.0.2", capabilities: #"{"files": [{"path": "heartbeat", "access": "read"}]}"#)
        _ = try loader(f).loadOrThrow("alpha")
        try sign(f, version: "1.0.3", capabilities: nil)
        _ = try loader(f).loadOrThrow("alpha")
        // What was accepted is what the operator reviewed, not what the last update asked for: going
        // back up to it needs no review, going beyond it does.
        try sign(f, version: "1.0.4", capabilities: Self.grown)
        _ = try loader(f).loadOrThrow("alpha")
        try sign(f, version: "1.0.5", capabilities: #"{"spawn": ["/bin/sh"]}"#)
        #expect(CoreError.of(try loader(f).load("alpha"))?.code == .capabilitiesGrown)
    }

    /// Trusted before capabilities were recorded (or pinned by hand): a manifest that declares
    /// capabilities fails closed; one that asks for nothing runs as before.
    @Test func noRecordFailsClosedForADeclaringPlugin() throws {
        let f = try fixture()
        defer { f.remove() }
        try sign(f, version: "1.0.0", capabilities: nil)
        try f.root.write(
            "vigil.toml",
            "plugins = [\"alpha\"]\nplugin_paths = [\"plugins\"]\n[trusted_plugins]\n"
                + "alpha = \"\(key.publicKey.fingerprint)\"\n")
        _ = try loader(f).loadOrThrow("alpha")
        #expect(try f.store.acceptedCapabilities(plugin: "alpha") == nil)

        try sign(f, version: "1.1.0", capabilities: Self.heartbeat)
        let error = try #require(CoreError.of(try loader(f).load("alpha")))
        #expect(error.code == .capabilitiesGrown)
        #expect(
            error.message.contains("asks to read and write heartbeat in its state directory — no review on this host"))
        let review = try trust(f)
        #expect(review.addedCapabilities == ["read and write heartbeat in its state directory"])
        _ = try loader(f).loadOrThrow("alpha")
    }

    /// The record is part of the rollback state, protected and checked like it: a malformed one
    /// fails closed.
    @Test func aCorruptRecordFailsClosed() throws {
        let f = try fixture()
        defer { f.remove() }
        try sign(f, version: "1.0.0", capabilities: Self.heartbeat)
        try trust(f)
        let path = f.store.statePath
        let text = try TextFile.read(path)
        #expect(text.contains("\"accepted_capabilities\"") && text.contains("\"read-write\""), "\(text)")
        try f.root.write(
            "state/vigil/rollback.json", text.replacingOccurrences(of: "\"read-write\"", with: "\"write\""), mode: 0o600
        )
        let error = try #require(CoreError.of(try loader(f).load("alpha")))
        #expect(error.code == .stateInvalid)
        #expect(error.message.contains("the accepted capabilities of alpha are malformed"), "\(error.message)")
    }
}
