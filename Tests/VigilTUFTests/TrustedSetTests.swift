import Testing
import VigilTUF

/// The decision logic alone: bytes in, trust or a refusal out, no I/O, a fixed clock.
@Suite("TUF trusted set")
struct TrustedSetTests {
    let k = (0..<6).map { _ in TestKey.ed25519() }

    func root(_ version: Int, root: [TestKey], threshold: Int = 1, expires: String = Meta.future) -> JSONValue {
        Meta.root(
            version: version, root: root, rootThreshold: threshold, timestamp: [k[3]], snapshot: [k[4]],
            targets: [k[5]], expires: expires)
    }

    func trusted(_ rootKeys: [TestKey] = []) throws -> TrustedSet {
        let keys = rootKeys.isEmpty ? [k[0]] : rootKeys
        return try TrustedSet(rootBytes: Meta.sign(root(1, root: keys), keys), now: Meta.now)
    }

    @Test func initialRootMustBeSelfSigned() {
        #expect(
            tufErrorCode { _ = try TrustedSet(rootBytes: Meta.sign(root(1, root: [k[0]]), [k[1]]), now: Meta.now) }
                == .thresholdNotMet)
        #expect(tufErrorCode { _ = try TrustedSet(rootBytes: Array("{}".utf8), now: Meta.now) } == .malformedMetadata)
    }

    /// 5.3.4: N+1 needs a threshold of N's root keys AND of its own.
    @Test func rootRotationNeedsBothThresholds() throws {
        var set = try trusted()
        let next = root(2, root: [k[1]])
        #expect(tufErrorCode { try set.updateRoot(Meta.sign(next, [k[1]])) } == .thresholdNotMet)  // new key only
        #expect(tufErrorCode { try set.updateRoot(Meta.sign(next, [k[0]])) } == .thresholdNotMet)  // old key only
        #expect(set.root.common.version == 1)
        try set.updateRoot(Meta.sign(next, [k[0], k[1]]))
        #expect(set.root.common.version == 2)
    }

    /// 5.3.5: the version must be exactly N+1, even when everything else is valid.
    @Test func rootVersionMustBeNextOne() throws {
        var set = try trusted()
        #expect(tufErrorCode { try set.updateRoot(Meta.sign(root(3, root: [k[0]]), [k[0]])) } == .badVersion)
        #expect(tufErrorCode { try set.updateRoot(Meta.sign(root(1, root: [k[0]]), [k[0]])) } == .badVersion)
    }

    /// One key under two key ids, or one signature twice, counts once (GHSA-3633-5h82-39pq).
    @Test func aKeyCountsOnceWhateverItsIDs() throws {
        let alias = k[0].withID(String(repeating: "ab", count: 32))
        var set = try trusted()
        let doubled = root(2, root: [k[0], alias], threshold: 2)
        #expect(tufErrorCode { try set.updateRoot(Meta.sign(doubled, [k[0], alias])) } == .thresholdNotMet)
        // The same key id signing twice is refused outright (spec: each key id appears once).
        let twice = Meta.sign(root(2, root: [k[0]]), [k[0], k[0]])
        #expect(tufErrorCode { try set.updateRoot(twice) } == .malformedMetadata)
    }

    @Test func finalRootMustNotBeExpired() throws {
        var set = try trusted()
        try set.updateRoot(Meta.sign(root(2, root: [k[0]], expires: Meta.past), [k[0]]))
        #expect(tufErrorCode { try set.checkFinalRoot() } == .expired)
    }

    func timestamp(_ version: Int, snapshot: Int, expires: String = Meta.future) -> [UInt8] {
        Meta.sign(
            Meta.timestamp(version: version, snapshot: Meta.metaFile(version: snapshot), expires: expires), [k[3]])
    }

    @Test func timestampRollbackIsRefusedAndAnExpiredOneStillGuards() throws {
        var set = try trusted()
        // An expired timestamp is refused as final but stays trusted for the rollback check.
        #expect(tufErrorCode { _ = try set.updateTimestamp(timestamp(5, snapshot: 5, expires: Meta.past)) } == .expired)
        #expect(tufErrorCode { _ = try set.updateTimestamp(timestamp(4, snapshot: 5)) } == .badVersion)
        #expect(tufErrorCode { _ = try set.updateTimestamp(timestamp(6, snapshot: 4)) } == .badVersion)
        #expect(try set.updateTimestamp(timestamp(6, snapshot: 5)) == .updated)
        #expect(try set.updateTimestamp(timestamp(6, snapshot: 9)) == .unchanged)
        #expect(set.timestamp?.snapshotMeta.version == 5)
    }

    @Test func timestampSignedByAnotherRoleIsRefused() throws {
        var set = try trusted()
        let bytes = Meta.sign(Meta.timestamp(version: 2, snapshot: Meta.metaFile(version: 1)), [k[4]])
        #expect(tufErrorCode { _ = try set.updateTimestamp(bytes) } == .thresholdNotMet)
        // Correctly signed bytes of the wrong type.
        let snapshot = Meta.sign(Meta.snapshot(version: 1, meta: [:]), [k[3]])
        #expect(tufErrorCode { _ = try set.updateTimestamp(snapshot) } == .wrongType)
    }

    /// 5.5.2: hashes from the timestamp are checked before the bytes are even parsed.
    @Test func snapshotHashIsCheckedBeforeParsing() throws {
        var set = try trusted()
        let good = Meta.sign(Meta.snapshot(version: 1, meta: ["targets.json": Meta.metaFile(version: 1)]), [k[4]])
        let ts = Meta.sign(Meta.timestamp(version: 1, snapshot: Meta.metaFile(version: 1, bytes: good)), [k[3]])
        #expect(try set.updateTimestamp(ts) == .updated)
        let garbage = Array(repeating: UInt8(ascii: "{"), count: good.count)
        #expect(tufErrorCode { try set.updateSnapshot(garbage) } == .mixedMetadata)
        try set.updateSnapshot(good)
        #expect(set.snapshot?.common.version == 1)
    }

    @Test func snapshotMayNotDropOrRollBackARole() throws {
        var set = try trusted()
        _ = try set.updateTimestamp(timestamp(2, snapshot: 2))
        func snapshot(_ version: Int, _ roles: [String: Int]) -> [UInt8] {
            Meta.sign(Meta.snapshot(version: version, meta: roles.mapValues { Meta.metaFile(version: $0) }), [k[4]])
        }
        // The local v1 becomes trusted (for the checks below) but is not the final snapshot.
        #expect(
            tufErrorCode {
                try set.updateSnapshot(snapshot(1, ["targets.json": 3, "a.json": 2]), alreadyVerified: true)
            }
                == .mixedMetadata)
        #expect(set.snapshot?.common.version == 1)
        #expect(tufErrorCode { try set.updateSnapshot(snapshot(2, ["targets.json": 3])) } == .missingRole)
        #expect(tufErrorCode { try set.updateSnapshot(snapshot(2, ["targets.json": 2, "a.json": 2])) } == .badVersion)
        #expect(set.snapshot?.common.version == 1)
        try set.updateSnapshot(snapshot(2, ["targets.json": 3, "a.json": 2, "b.json": 1]))
        #expect(set.snapshot?.common.version == 2)
    }

    /// A role reached through a second delegator must carry that delegator's signatures as well.
    @Test func cachedRoleIsVerifiedAgainstEachDelegator() throws {
        var set = try trusted()
        _ = try set.updateTimestamp(timestamp(1, snapshot: 1))
        let a = TestKey.ed25519()
        let b = TestKey.ed25519()
        let releaseA = TestKey.ed25519()
        let releaseB = TestKey.ed25519()
        let top = Meta.sign(
            Meta.targets(version: 1, delegations: [.init(name: "A", keys: [a]), .init(name: "B", keys: [b])]), [k[5]])
        let parentA = Meta.sign(Meta.targets(version: 1, delegations: [.init(name: "release", keys: [releaseA])]), [a])
        let parentB = Meta.sign(Meta.targets(version: 1, delegations: [.init(name: "release", keys: [releaseB])]), [b])
        let release = Meta.sign(Meta.targets(version: 1), [releaseA])
        let meta = ["targets.json", "A.json", "B.json", "release.json"].reduce(into: [String: JSONValue]()) {
            $0[$1] = Meta.metaFile(version: 1)
        }
        try set.updateSnapshot(Meta.sign(Meta.snapshot(version: 1, meta: meta), [k[4]]), alreadyVerified: true)
        try set.updateTargets(top, role: "targets", delegator: "root")
        try set.updateTargets(parentA, role: "A", delegator: "targets")
        try set.updateTargets(parentB, role: "B", delegator: "targets")
        try set.updateTargets(release, role: "release", delegator: "A")
        #expect(tufErrorCode { try set.reverify(role: "release", delegator: "A") } == nil)
        #expect(tufErrorCode { try set.reverify(role: "release", delegator: "B") } == .thresholdNotMet)
        // A refused pair is not remembered as checked: refused again.
        #expect(tufErrorCode { try set.reverify(role: "release", delegator: "B") } == .thresholdNotMet)
        // Checked pairs are remembered, but a delegator loaded anew is checked anew: A now delegates
        // release to releaseB's key, which did not sign it.
        #expect(tufErrorCode { try set.reverify(role: "release", delegator: "A") } == nil)
        let parentA2 = Meta.sign(Meta.targets(version: 1, delegations: [.init(name: "release", keys: [releaseB])]), [a])
        try set.updateTargets(parentA2, role: "A", delegator: "targets")
        #expect(tufErrorCode { try set.reverify(role: "release", delegator: "A") } == .thresholdNotMet)
    }

    /// ECDSA P-256 (the suite's and tuf-on-ci's default key type) through swift-crypto.
    @Test func ecdsaP256Keys() throws {
        let p = TestKey.p256()
        let q = TestKey.p256()
        var set = try TrustedSet(rootBytes: Meta.sign(root(1, root: [p]), [p]), now: Meta.now)
        #expect(tufErrorCode { try set.updateRoot(Meta.sign(root(2, root: [q]), [q])) } == .thresholdNotMet)
        try set.updateRoot(Meta.sign(root(2, root: [q]), [p, q]))
        #expect(set.root.common.version == 2)
    }

    @Test func rotatedOnlineKeysAreDetected() throws {
        var set = try trusted()
        let first = set.root
        try set.updateRoot(Meta.sign(root(2, root: [k[0]]), [k[0]]))
        #expect(!set.rotatedOnlineKeys(since: first))
        let rotated = Meta.root(
            version: 3, root: [k[0]], timestamp: [k[1]], snapshot: [k[4]], targets: [k[5]])
        try set.updateRoot(Meta.sign(rotated, [k[0]]))
        #expect(set.rotatedOnlineKeys(since: first))
    }
}
