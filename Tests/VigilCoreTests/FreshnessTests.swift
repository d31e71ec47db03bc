import Foundation
import Testing
import VigilCore
import VigilCrypto
import VigilTestSupport

/// Signed `expires` and the clock ratchet: they block changes (accepting, updating, rotating,
/// trusting), never an accepted version.
@Suite struct FreshnessTests {
    let a = MinisignSecretKey.generate()
    let b = MinisignSecretKey.generate()
    static let t0 = Freshness.parseRFC3339("2030-01-01T00:00:00Z")!
    static let day: Int64 = 86400

    func manifest(_ version: String, expires: String?) -> String {
        PluginFixture.manifestText(
            name: "alpha", version: version, extra: expires.map { "\n  \"expires\": \"\($0)\"," } ?? "")
    }

    func sign(_ f: PluginFixture, _ version: String, expires: String?, key: MinisignSecretKey? = nil) throws {
        try f.root.makeDirectory("plugins/alpha")
        try f.root.write("plugins/alpha/plugin.json", manifest(version, expires: expires))
        try PluginSigner.sign(directory: f.root.url("plugins/alpha"), with: key ?? a)
    }

    func loader(_ f: PluginFixture, at now: Int64) -> PluginLoader {
        var loader = f.loader(trusted: ["alpha": a.publicKey.fingerprint])
        loader.now = { now }
        return loader
    }

    func state(_ f: PluginFixture) -> [UInt8]? { try? f.root.read("state/vigil/rollback.json") }

    @Test func rfc3339IsParsedStrictly() {
        #expect(Freshness.parseRFC3339("1970-01-01T00:00:00Z") == 0)
        #expect(Freshness.parseRFC3339("2030-01-01T00:00:00Z") == 1_893_456_000)
        #expect(Freshness.parseRFC3339("2030-01-01T02:00:00.123+02:00") == 1_893_456_000)
        #expect(Freshness.parseRFC3339("2029-12-31t19:00:00-05:00") == 1_893_456_000)
        #expect(Freshness.parseRFC3339("2028-02-29T00:00:00Z") != nil)
        for bad in [
            "2030-01-01", "2030-01-01T00:00:00", "2029-02-29T00:00:00Z", "2030-13-01T00:00:00Z",
            "2030-01-01T24:00:00Z", "2030-01-01T00:00:00+2:00", "2030-01-01T00:00:00Z ", "2030-01-01 00:00:00Z",
            "２030-01-01T00:00:00Z", "2030-01-01T00:00:00.Z",
        ] {
            #expect(Freshness.parseRFC3339(bad) == nil, "\(bad)")
        }
        #expect(Freshness.formatRFC3339(1_893_456_000) == "2030-01-01T00:00:00Z")
        #expect(Freshness.formatRFC3339(-1) == "1969-12-31T23:59:59Z")
        #expect(Freshness.parseDuration("7d") == 7 * Self.day && Freshness.parseDuration("90s") == 90)
        #expect(Freshness.parseDuration("7") == nil && Freshness.parseDuration("-1d") == nil)
    }

    @Test func anExpiredManifestIsNotAcceptedAsAChangeAndPersistsNothing() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try sign(f, "1.0.0", expires: "2030-01-01T00:00:00Z")
        let error = try #require(CoreError.of(loader(f, at: Self.t0).load("alpha")))
        #expect(error.code == .expired)
        #expect(error.message.contains("2030-01-01T00:00:00Z"))
        #expect(state(f) == nil)
        // One second earlier it is fresh, and accepted.
        #expect(f.errorCode("alpha", loader(f, at: Self.t0 - 1)) == nil)
    }

    @Test func expiryNeverStopsAnAcceptedVersionButBlocksAnUpdate() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try sign(f, "1.0.0", expires: "2030-01-01T00:00:00Z")
        #expect(f.errorCode("alpha", loader(f, at: Self.t0 - Self.day)) == nil)
        // A year later the accepted version still loads (an offline box keeps its keep-alive)…
        #expect(f.errorCode("alpha", loader(f, at: Self.t0 + 365 * Self.day)) == nil)
        // …but an update that expired is refused, and nothing is recorded.
        try sign(f, "1.1.0", expires: "2030-06-01T00:00:00Z")
        let before = state(f)
        #expect(f.errorCode("alpha", loader(f, at: Self.t0 + 365 * Self.day)) == .expired)
        #expect(state(f) == before)
        // A manifest without expires never expires.
        try sign(f, "1.2.0", expires: nil)
        #expect(f.errorCode("alpha", loader(f, at: Self.t0 + 365 * Self.day)) == nil)
    }

    @Test func aClockMovedBackCannotReviveAnExpiredManifest() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try sign(f, "1.0.0", expires: nil)
        // Accepted at t0: the ratchet records t0.
        #expect(f.errorCode("alpha", loader(f, at: Self.t0)) == nil)
        #expect(try f.store.latestTime() == Self.t0)
        try sign(f, "1.1.0", expires: "2029-12-01T00:00:00Z")
        // The clock set back before the expiry: refused, with its own code.
        let back = try #require(CoreError.of(loader(f, at: Self.t0 - 40 * Self.day).load("alpha")))
        #expect(back.code == .clockRolledBack)
        #expect(back.message.contains("fix the clock"))
        // Within the tolerance the ratchet's time still counts: expired.
        #expect(f.errorCode("alpha", loader(f, at: Self.t0 - Freshness.clockTolerance)) == .expired)
        // And the accepted 1.0.0 is never stopped by a wrong clock.
        try sign(f, "1.0.0", expires: nil)
        #expect(f.errorCode("alpha", loader(f, at: Self.t0 - 400 * Self.day)) == nil)
    }

    @Test func aRotationIsAChangeTheClockMustAllow() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try sign(f, "1.0.0", expires: nil)
        #expect(f.errorCode("alpha", loader(f, at: Self.t0)) == nil)
        try PluginRotator.rotate(
            directory: f.root.url("plugins/alpha"), to: [b.publicKey], threshold: nil, signers: [a, b])
        try f.root.write("plugins/alpha/plugin.json", manifest("1.0.0", expires: nil))
        try PluginSigner.sign(directory: f.root.url("plugins/alpha"), with: b)
        // Same version, same bytes, but a new key rotation: the clock went back, so it is refused.
        #expect(f.errorCode("alpha", loader(f, at: Self.t0 - 10 * Self.day)) == .clockRolledBack)
        #expect(f.errorCode("alpha", loader(f, at: Self.t0 + 1)) == nil)
    }

    @Test func trustingAnExpiredManifestIsRefused() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try sign(f, "1.0.0", expires: "2030-01-01T00:00:00Z")
        let config = f.configuration()
        #expect(throws: CoreError.self) {
            try TrustTransaction.review(name: "alpha", configuration: config, pinned: [], store: f.store, now: Self.t0)
        }
        let review = try TrustTransaction.review(
            name: "alpha", configuration: config, pinned: [], store: f.store, now: Self.t0 - 10)
        #expect(review.plugin.manifest.expires == Self.t0)
    }

    @Test func manifestAndConfigValuesAreValidated() throws {
        #expect(throws: CoreError.self) {
            try ManifestDecoder.decode(Array(manifest("1.0.0", expires: "tomorrow").utf8), plugin: "alpha")
        }
        // [freshness] is a table of its own, so no plugin may be called that.
        #expect(PluginName.problem("freshness") != nil)
        let dir = try TestDirectory()
        defer { dir.remove() }
        let good = try dir.write("vigil.toml", "[freshness]\ngrace = \"3d\"\n")
        #expect(try HostConfiguration.load(path: good, environment: dir.environment()).freshnessGrace == 3 * Self.day)
        for bad in ["[freshness]\ngrace = \"soon\"\n", "[freshness]\nwindow = \"3d\"\n", "freshness = 3\n"] {
            let path = try dir.write("vigil.toml", bad)
            let error = try #require(throws: CoreError.self) {
                try HostConfiguration.load(path: path, environment: dir.environment())
            }
            #expect(error.code == .configInvalid, "\(bad)")
        }
    }
}
