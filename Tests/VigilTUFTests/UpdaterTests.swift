import Testing
import VigilTUF
import VigilTestSupport

/// The workflow over an in-memory repository: request order, caps, what is persisted.
@Suite("TUF updater")
struct UpdaterTests {
    let rootKey = TestKey.ed25519()
    let online = TestKey.ed25519()
    let targetsKey = TestKey.ed25519()

    /// A consistent-snapshot repository at version 1 with the given targets and delegated roles.
    func repository(
        targets: [String: JSONValue] = [:], delegations: [Meta.Delegation]? = nil,
        roles: [String: [UInt8]] = [:]
    ) -> MemoryRepository {
        let repo = MemoryRepository()
        repo.files["1.root.json"] = rootBytes(1)
        publish(repo, version: 1, targets: targets, delegations: delegations, roles: roles)
        return repo
    }

    func rootBytes(_ version: Int) -> [UInt8] {
        Meta.sign(
            Meta.root(
                version: version, root: [rootKey], timestamp: [online], snapshot: [online], targets: [targetsKey]),
            [rootKey])
    }

    func publish(
        _ repo: MemoryRepository, version: Int, targets: [String: JSONValue] = [:],
        delegations: [Meta.Delegation]? = nil, roles: [String: [UInt8]] = [:]
    ) {
        let top = Meta.sign(Meta.targets(version: version, targets: targets, delegations: delegations), [targetsKey])
        repo.files["\(version).targets.json"] = top
        var meta = ["targets.json": Meta.metaFile(version: version, bytes: top)]
        for (name, bytes) in roles {
            repo.files["1.\(FileStore.percentEncode(name)).json"] = bytes
            meta["\(name).json"] = Meta.metaFile(version: 1)
        }
        let snapshot = Meta.sign(Meta.snapshot(version: version, meta: meta), [online])
        repo.files["\(version).snapshot.json"] = snapshot
        repo.files["timestamp.json"] = Meta.sign(
            Meta.timestamp(version: version, snapshot: Meta.metaFile(version: version, bytes: snapshot)), [online])
    }

    func client(_ repo: MemoryRepository, _ dir: TestDirectory) throws -> Updater {
        _ = try dir.write("metadata/root.json", repo.files["1.root.json"] ?? [])
        return Updater(metadataDirectory: dir.url("metadata"), metadataURL: "mem://repo", fetcher: repo, now: Meta.now)
    }

    @Test func refreshFetchesInSpecOrderWithPythonTUFCaps() async throws {
        let dir = try TestDirectory("tuf-updater")
        defer { dir.remove() }
        let repo = repository()
        let updater = try client(repo, dir)
        try await updater.refresh()
        #expect(repo.requests == ["2.root.json", "timestamp.json", "1.snapshot.json", "1.targets.json"])
        #expect(repo.caps["2.root.json"] == 512_000)
        #expect(repo.caps["timestamp.json"] == 16_384)
        // Snapshot and targets are capped at the length the signed metadata gives.
        #expect(repo.caps["1.snapshot.json"] == repo.files["1.snapshot.json"]?.count)
        #expect(try dir.read("metadata/timestamp.json") == repo.files["timestamp.json"])
        // A second refresh uses the persisted snapshot and targets: only root and timestamp are fetched.
        repo.requests.removeAll()
        try await Updater(
            metadataDirectory: dir.url("metadata"), metadataURL: "mem://repo", fetcher: repo, now: Meta.now
        ).refresh()
        #expect(repo.requests == ["2.root.json", "timestamp.json"])
    }

    /// CVE-2020-15163's class: nothing that failed verification is persisted.
    @Test func nothingUnverifiedIsPersisted() async throws {
        let dir = try TestDirectory("tuf-updater")
        defer { dir.remove() }
        let repo = repository()
        let stranger = TestKey.ed25519()
        repo.files["2.root.json"] = Meta.sign(
            Meta.root(version: 2, root: [stranger], timestamp: [online], snapshot: [online], targets: [targetsKey]),
            [stranger])
        let updater = try client(repo, dir)
        #expect(await tufErrorCode { try await updater.refresh() } == .thresholdNotMet)
        #expect(try dir.read("metadata/root.json") == repo.files["1.root.json"])
        #expect(try dir.list("metadata") == ["root.json"])
        // A snapshot that does not match the timestamp's hash: timestamp is kept, snapshot is not.
        repo.files["2.root.json"] = nil
        repo.override["1.snapshot.json"] = Array((repo.files["1.snapshot.json"] ?? []).reversed())
        #expect(await tufErrorCode { try await updater.refresh() } == .mixedMetadata)
        #expect(try dir.list("metadata").sorted() == ["root.json", "timestamp.json"])
    }

    /// Pre-order depth-first, listed order first, cycles cut, terminating stops backtracking.
    @Test func delegationSearchOrder() async throws {
        let dir = try TestDirectory("tuf-updater")
        defer { dir.remove() }
        let keys = (0..<4).map { _ in TestKey.ed25519() }
        let a = Meta.sign(Meta.targets(version: 1, delegations: [.init(name: "C", keys: [keys[2]])]), [keys[0]])
        let b = Meta.sign(Meta.targets(version: 1, delegations: [.init(name: "A", keys: [keys[0]])]), [keys[1]])
        let c = Meta.sign(
            Meta.targets(
                version: 1, targets: ["found": Meta.target(Array("c".utf8))],
                delegations: [.init(name: "B", keys: [keys[1]])]),
            [keys[2]])
        let repo = repository(
            delegations: [.init(name: "A", keys: [keys[0]]), .init(name: "B", keys: [keys[1]])],
            roles: ["A": a, "B": b, "C": c])
        let updater = try client(repo, dir)
        try await updater.refresh()
        repo.requests.removeAll()
        #expect(await tufErrorCode { _ = try await updater.targetInfo("missing") } == .targetNotFound)
        #expect(repo.requests == ["1.A.json", "1.C.json", "1.B.json"])  // B → A is a cycle: not followed again
        let found = try await updater.targetInfo("found")
        #expect(found.length == 1)
    }

    /// Delegations are found through an index of their literal first segments (N plugins' roles
    /// are not all matched per lookup), merged with the wildcard ones in their listed order.
    @Test func indexedDelegationsKeepTheListedOrder() async throws {
        let dir = try TestDirectory("tuf-updater")
        defer { dir.remove() }
        let keys = (0..<4).map { _ in TestKey.ed25519() }
        let repo = repository(
            delegations: [
                .init(name: "A", keys: [keys[0]], paths: ["p1/*"]),
                .init(name: "B", keys: [keys[1]], paths: ["p?/none"]),
                .init(name: "C", keys: [keys[2]], paths: ["p1/*", "p2/*"]),
                .init(name: "D", keys: [keys[3]], paths: ["p2/*"]),
            ],
            roles: [
                "A": Meta.sign(Meta.targets(version: 1), [keys[0]]),
                "B": Meta.sign(Meta.targets(version: 1), [keys[1]]),
                "C": Meta.sign(Meta.targets(version: 1, targets: ["p2/t": Meta.target([2])]), [keys[2]]),
                "D": Meta.sign(Meta.targets(version: 1, targets: ["p2/t": Meta.target([3, 3])]), [keys[3]]),
            ])
        let updater = try client(repo, dir)
        try await updater.refresh()
        let top = try #require(updater.trusted?.targets("targets"))
        for path in ["p1/x", "p2/t", "p3/none", "p2/none", "p1", "q/x"] {
            #expect(top.delegations(covering: path) == top.delegations.filter { $0.covers(path) }, "\(path)")
        }
        repo.requests.removeAll()
        #expect(try await updater.targetInfo("p2/t").length == 1)  // C is listed before D
        #expect(repo.requests == ["1.C.json"])
    }

    @Test func terminatingDelegationStopsTheSearch() async throws {
        let dir = try TestDirectory("tuf-updater")
        defer { dir.remove() }
        let keys = (0..<2).map { _ in TestKey.ed25519() }
        let repo = repository(
            delegations: [
                .init(name: "A", keys: [keys[0]], paths: ["*"], terminating: true),
                .init(name: "B", keys: [keys[1]]),
            ],
            roles: [
                "A": Meta.sign(Meta.targets(version: 1), [keys[0]]),
                "B": Meta.sign(Meta.targets(version: 1, targets: ["t": Meta.target([1])]), [keys[1]]),
            ])
        let updater = try client(repo, dir)
        try await updater.refresh()
        repo.requests.removeAll()
        #expect(await tufErrorCode { _ = try await updater.targetInfo("t") } == .targetNotFound)
        #expect(repo.requests == ["1.A.json"])
    }

    @Test func targetDownloadChecksLengthAndHashesAndStoresNothingElse() async throws {
        let dir = try TestDirectory("tuf-updater")
        defer { dir.remove() }
        let content = Array("plugin bytes".utf8)
        let repo = repository(targets: ["vigil/plugin.json": Meta.target(content)])
        let updater = try client(repo, dir)
        _ = try dir.makeDirectory("targets")
        let target = try await updater.targetInfo("vigil/plugin.json")
        let hash = TestKey.hex(content.sha256ForTests)
        let url = "vigil/\(hash).plugin.json"
        repo.files[url] = Array("plugin bytez".utf8)  // same length, other bytes
        #expect(
            await tufErrorCode { try await updater.download(target, into: dir.url("targets"), baseURL: "mem://repo") }
                == .lengthOrHashMismatch)
        #expect(try dir.list("targets") == [])
        repo.files[url] = content
        let path = try await updater.download(target, into: dir.url("targets"), baseURL: "mem://repo")
        #expect(path.hasSuffix("/vigil%2Fplugin.json"))
        #expect(try dir.read("targets/vigil%2Fplugin.json") == content)
        #expect(updater.isCached(target, in: dir.url("targets")))
        #expect(repo.caps[url] == content.count)  // never more than the signed length is read
    }

    /// Role names from a repository never become paths: "../x" is stored as "..%2Fx.json".
    @Test func roleNamesAreEncodedForFilesAndURLs() async throws {
        let dir = try TestDirectory("tuf-updater")
        defer { dir.remove() }
        let key = TestKey.ed25519()
        let repo = repository(
            delegations: [.init(name: "../x", keys: [key])], roles: ["../x": Meta.sign(Meta.targets(version: 1), [key])]
        )
        let updater = try client(repo, dir)
        #expect(await tufErrorCode { _ = try await updater.targetInfo("t") } == .targetNotFound)
        #expect(repo.requests.contains("1...%2Fx.json"))
        #expect(try dir.list("metadata").contains("..%2Fx.json"))
    }
}

extension Array where Element == UInt8 {
    var sha256ForTests: [UInt8] {
        // The same digest the suite uses, through swift-crypto.
        CryptoDigest.sha256(self)
    }
}

@Suite("TUF updater, diamond delegations")
struct DiamondDelegationTests {
    /// "release" is delegated by A (for a/*) and by B (for b/*) with different keys and signed only
    /// with A's: found through A it is trusted, reached again through B in the same updater it is not.
    @Test func aRoleReachedThroughAnotherDelegatorIsVerifiedAgain() async throws {
        let dir = try TestDirectory("tuf-diamond")
        defer { dir.remove() }
        let base = UpdaterTests()
        let (a, b, releaseA, releaseB) = (TestKey.ed25519(), TestKey.ed25519(), TestKey.ed25519(), TestKey.ed25519())
        let release = Meta.sign(
            Meta.targets(version: 1, targets: ["a/x": Meta.target([1]), "b/x": Meta.target([2])]), [releaseA])
        let repo = base.repository(
            delegations: [.init(name: "A", keys: [a], paths: ["a/*"]), .init(name: "B", keys: [b], paths: ["b/*"])],
            roles: [
                "A": Meta.sign(
                    Meta.targets(version: 1, delegations: [.init(name: "release", keys: [releaseA], paths: ["a/*"])]),
                    [a]),
                "B": Meta.sign(
                    Meta.targets(version: 1, delegations: [.init(name: "release", keys: [releaseB], paths: ["b/*"])]),
                    [b]),
                "release": release,
            ])
        let updater = try base.client(repo, dir)
        try await updater.refresh()
        #expect(try await updater.targetInfo("a/x").length == 1)
        #expect(await tufErrorCode { _ = try await updater.targetInfo("b/x") } == .thresholdNotMet)
    }
}

@Suite("TUF updater, fast-forward recovery")
struct FastForwardRecoveryTests {
    /// 5.3.11: when the timestamp keys change, the stored timestamp and snapshot are deleted — also
    /// when a later root then fails, since the rotated root is persisted already.
    @Test func rotatedOnlineKeysForgetTimestampAndSnapshotEvenIfALaterRootFails() async throws {
        let dir = try TestDirectory("tuf-fast-forward")
        defer { dir.remove() }
        let base = UpdaterTests()
        let repo = base.repository()
        let updater = try base.client(repo, dir)
        try await updater.refresh()
        #expect(try dir.list("metadata").sorted() == ["root.json", "snapshot.json", "targets.json", "timestamp.json"])
        let newOnline = TestKey.ed25519()
        repo.files["2.root.json"] = Meta.sign(
            Meta.root(
                version: 2, root: [base.rootKey], timestamp: [newOnline], snapshot: [base.online],
                targets: [base.targetsKey]),
            [base.rootKey])
        let stranger = TestKey.ed25519()
        repo.files["3.root.json"] = Meta.sign(
            Meta.root(version: 3, root: [stranger], timestamp: [newOnline], snapshot: [base.online], targets: []),
            [stranger])
        let again = Updater(
            metadataDirectory: dir.url("metadata"), metadataURL: "mem://repo", fetcher: repo, now: Meta.now)
        #expect(await tufErrorCode { try await again.refresh() } == .thresholdNotMet)
        #expect(try dir.read("metadata/root.json") == repo.files["2.root.json"])
        #expect(try dir.list("metadata").sorted() == ["root.json", "targets.json"])
    }
}
