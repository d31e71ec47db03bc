import Foundation
import NIOCore
import Testing
import VigilTUF
import VigilTUFHTTP
import VigilTestSupport

/// Two publications of one repository (non-consistent snapshots, versions only in the timestamp
/// and snapshot, as python-tuf writes by default) and one loopback mirror server serving them,
/// honestly or hostile, made once for the suite.
actor MirrorFixture {
    static let shared = MirrorFixture()

    struct Made: Sendable {
        let directory: TestDirectory
        let server: TUFMirrorServer
        let root: [UInt8]
        /// `plugin-a/plugin.json` in the new publication, and `plugin-b/plugin.json` (new only).
        let pluginA2: [UInt8]
        let pluginB: [UInt8]
        /// The old publication's snapshot and top-level targets.
        let oldSnapshot: [UInt8]
        let oldTargets: [UInt8]
    }

    /// One making, however many tests ask at once (the actor is re-entered while it awaits).
    private var making: Task<Made, any Error>?

    func get() async throws -> Made {
        if making == nil { making = Task { try await Self.make() } }
        return try await making!.value
    }

    private static func make() async throws -> Made {
        let directory = try TestDirectory("tuf-mirrors")
        let rootKey = TestKey.ed25519()
        let online = TestKey.ed25519()
        let targetsKey = TestKey.ed25519()
        let root = Meta.sign(
            Meta.root(
                version: 1, root: [rootKey], timestamp: [online], snapshot: [online], targets: [targetsKey],
                consistent: false),
            [rootKey])
        let a1 = Array("plugin a, release 1".utf8)
        let a2 = Array("plugin a, release 2".utf8)
        let b = Array("plugin b, release 1".utf8)
        var published: [String: (snapshot: [UInt8], targets: [UInt8])] = [:]
        for (name, version, files) in [
            ("old", 1, ["plugin-a/plugin.json": a1]),
            ("new", 2, ["plugin-a/plugin.json": a2, "plugin-b/plugin.json": b]),
        ] {
            let targets = Meta.sign(
                Meta.targets(version: version, targets: files.mapValues(Meta.target)), [targetsKey])
            let snapshot = Meta.sign(
                Meta.snapshot(version: version, meta: ["targets.json": Meta.metaFile(version: version)]), [online])
            let timestamp = Meta.sign(
                Meta.timestamp(version: version, snapshot: Meta.metaFile(version: version)), [online])
            try directory.write("\(name)/metadata/1.root.json", root)
            try directory.write("\(name)/metadata/root.json", root)
            try directory.write("\(name)/metadata/targets.json", targets)
            try directory.write("\(name)/metadata/snapshot.json", snapshot)
            try directory.write("\(name)/metadata/timestamp.json", timestamp)
            for (path, content) in files { try directory.write("\(name)/targets/\(path)", content) }
            published[name] = (snapshot, targets)
        }
        let server = try await TUFMirrorServer(publications: [
            "old": directory.url("old"), "new": directory.url("new"),
        ])
        return Made(
            directory: directory, server: server, root: root, pluginA2: a2, pluginB: b,
            oldSnapshot: published["old"]?.snapshot ?? [], oldTargets: published["old"]?.targets ?? [])
    }
}

extension MirrorFixture.Made {
    func mirror(_ mode: String) -> Mirror {
        Mirror(metadataURL: server.url(mode) + "metadata/", targetsURL: server.url(mode) + "targets/")
    }

    /// A client directory trusting the root, and an updater over `mirrors`.
    func client(_ dir: TestDirectory, _ mirrors: [String], fetcher: HTTPFetcher = .forTests) throws -> Updater {
        if (try? dir.read("metadata/root.json")) == nil { try dir.write("metadata/root.json", root) }
        return Updater(
            metadataDirectory: dir.url("metadata"), mirrors: mirrors.map(mirror), fetcher: fetcher,
            now: Int64(Date().timeIntervalSince1970))
    }
}

extension HTTPFetcher {
    /// Limits small enough for a test to see each one act in about a second.
    static let forTests = HTTPFetcher(
        stallTimeout: .seconds(2), deadline: .seconds(15), minimumRate: 200, rateWindow: .seconds(1))
}

/// What `body` throws, as a TUFError (nil when it returns).
func tufError(_ body: () async throws -> Void) async -> TUFError? {
    do {
        try await body()
        return nil
    } catch let error as TUFError {
        return error
    } catch {
        Issue.record("not a TUFError: \(error)")
        return nil
    }
}

@Suite("TUF hostile mirrors (loopback server)")
struct MirrorTests {
    /// Mix-and-match: a mirror serving the new timestamp with the old snapshot (or the new
    /// snapshot with the old targets) is refused, nothing of the mix is stored or acted on, and
    /// with a second mirror the update goes on from it.
    @Test func mixedPublicationsAreRefusedAndTheNextMirrorServes() async throws {
        let fixture = try await MirrorFixture.shared.get()
        let dir = try TestDirectory("tuf-mix")
        defer { dir.remove() }
        try await fixture.client(dir, ["old"]).refresh()
        #expect(try dir.read("metadata/snapshot.json") == fixture.oldSnapshot)

        for mode in ["mix", "mix-targets"] {
            let updater = try fixture.client(dir, [mode])
            let error = await tufError { try await updater.refresh() }
            #expect(error?.code == .mixedMetadata, "\(mode): \(String(describing: error))")
            #expect(error?.message.contains(fixture.server.url(mode)) == true, "the message names the mirror")
            #expect(try dir.read("metadata/targets.json") == fixture.oldTargets, "\(mode): the old targets stay")
            #expect(
                await tufErrorCode { _ = try await updater.targetInfo("plugin-b/plugin.json") } == .mixedMetadata,
                "\(mode): no target of the mix is looked up")
        }

        let updater = try fixture.client(dir, ["mix", "good"])
        try await updater.refresh()
        #expect(updater.mirrorFailures.map(\.code) == [.mixedMetadata])
        #expect(updater.mirrorFailures.first?.message.hasPrefix("mirror \(fixture.server.url("mix"))") == true)
        let target = try await updater.targetInfo("plugin-b/plugin.json")
        _ = try dir.makeDirectory("targets")
        try await updater.download(target, into: dir.url("targets"))
        #expect(try dir.read("targets/plugin-b%2Fplugin.json") == fixture.pluginB)
    }

    /// Endless data: the cap stops the transfer while it streams (an endless body never ends, so a
    /// check after the end would wait for the deadline instead), and the server could send only a
    /// bounded amount before the client hung up.
    @Test func endlessDataIsCutAtTheCapWhileStreaming() async throws {
        let fixture = try await MirrorFixture.shared.get()
        let dir = try TestDirectory("tuf-endless")
        defer { dir.remove() }
        let before = try await fixture.server.bytesSent()["endless"] ?? 0
        let clock = ContinuousClock()
        let start = clock.now
        let error = await tufError {
            _ = try await HTTPFetcher.forTests.fetch(
                fixture.server.url("endless") + "metadata/timestamp.json", maxLength: 16_384)
        }
        #expect(error?.code == .tooLarge)
        #expect(error?.message.contains(fixture.server.url("endless")) == true)
        #expect(clock.now - start < .seconds(10), "ended by the cap, not by the 15 s deadline")
        // The server stops writing once the client has closed; what it wrote is what the kernel's
        // socket buffers took (a few MB on loopback), not an unbounded stream.
        var sent = -1
        var previous = -2
        let settled = clock.now.advanced(by: .seconds(10))
        while sent != previous, clock.now < settled {
            previous = sent
            try await Task.sleep(for: .milliseconds(200))
            sent = try await fixture.server.bytesSent()["endless"] ?? 0
        }
        #expect(sent == previous, "the server stopped sending once the client hung up")
        #expect(sent - before < 64 << 20, "the server could send \(sent - before) bytes")

        // Through the updater: the timestamp, then a target, from an endless mirror; the next one serves.
        let updater = try fixture.client(dir, ["endless", "good"])
        try await updater.refresh()
        #expect(updater.mirrorFailures.map(\.code) == [.tooLarge])
        let target = try await updater.targetInfo("plugin-a/plugin.json")
        _ = try dir.makeDirectory("targets")
        let both = Updater(
            metadataDirectory: dir.url("metadata"),
            mirrors: [
                Mirror(
                    metadataURL: fixture.server.url("good") + "metadata/",
                    targetsURL: fixture.server.url("endless") + "targets/"),
                fixture.mirror("good"),
            ],
            fetcher: HTTPFetcher.forTests, now: Int64(Date().timeIntervalSince1970))
        try await both.refresh()
        try await both.download(target, into: dir.url("targets"))
        #expect(both.mirrorFailures.map(\.code) == [.tooLarge])
        #expect(both.mirrorFailures.first?.message.contains(fixture.server.url("endless") + "targets/") == true)
        #expect(try dir.read("targets/plugin-a%2Fplugin.json") == fixture.pluginA2)
    }

    /// Slow retrieval: a trickle is cut by the minimum rate, a silent server by the stall timeout,
    /// and with no minimum rate the deadline ends it; then the next mirror is tried.
    @Test func slowMirrorsAreCutAndTheNextMirrorServes() async throws {
        let fixture = try await MirrorFixture.shared.get()
        let dir = try TestDirectory("tuf-slow")
        defer { dir.remove() }
        let clock = ContinuousClock()
        let file = "metadata/timestamp.json"

        var start = clock.now
        let trickle = await tufError {
            _ = try await HTTPFetcher.forTests.fetch(fixture.server.url("slow") + file, maxLength: 16_384)
        }
        #expect(trickle?.code == .tooSlow)
        #expect(trickle?.message.contains("bytes/s") == true, "\(String(describing: trickle))")
        #expect(clock.now - start < .seconds(10))

        // Headers, then silence: the rate check ends it after its first window; without a minimum
        // rate, the stall timeout does.
        start = clock.now
        let silent = await tufError {
            _ = try await HTTPFetcher.forTests.fetch(fixture.server.url("stall") + file, maxLength: 16_384)
        }
        #expect(silent?.code == .tooSlow)
        #expect(silent?.message.contains("sent 0 bytes in 1 s") == true, "\(String(describing: silent))")
        let noMinimum = HTTPFetcher(stallTimeout: .seconds(1), deadline: .seconds(15), minimumRate: 0)
        let stalled = await tufError {
            _ = try await noMinimum.fetch(fixture.server.url("stall") + file, maxLength: 16_384)
        }
        #expect(stalled?.code == .tooSlow)
        #expect(stalled?.message.contains("sent nothing for 1 s") == true, "\(String(describing: stalled))")
        #expect(clock.now - start < .seconds(10))

        start = clock.now
        let deadlineOnly = HTTPFetcher(stallTimeout: .seconds(10), deadline: .milliseconds(1500), minimumRate: 0)
        let late = await tufError {
            _ = try await deadlineOnly.fetch(fixture.server.url("slow") + file, maxLength: 16_384)
        }
        #expect(late?.code == .tooSlow)
        #expect(late?.message.contains("did not finish within 1.5 s") == true, "\(String(describing: late))")
        #expect(clock.now - start < .seconds(8))

        let updater = try fixture.client(dir, ["slow", "stall", "good"])
        try await updater.refresh()
        #expect(updater.mirrorFailures.map(\.code) == [.tooSlow, .tooSlow])
        #expect(updater.mirrorFailures.last?.message.contains(fixture.server.url("stall")) == true)
    }

    /// A connection closed in the middle of a file, or reset before any answer, is its own error;
    /// every mirror failing differently is reported as such, naming each.
    @Test func droppedConnectionsAndEveryMirrorFailing() async throws {
        let fixture = try await MirrorFixture.shared.get()
        let dir = try TestDirectory("tuf-drop")
        defer { dir.remove() }
        for mode in ["drop", "reset"] {
            let error = await tufError {
                _ = try await HTTPFetcher.forTests.fetch(
                    fixture.server.url(mode) + "metadata/timestamp.json", maxLength: 16_384)
            }
            #expect(error?.code == .connectionDropped, "\(mode): \(String(describing: error))")
            #expect(error?.message.contains(fixture.server.url(mode)) == true)
        }
        let updater = try fixture.client(dir, ["drop", "good"])
        try await updater.refresh()
        #expect(updater.mirrorFailures.map(\.code) == [.connectionDropped])

        // A client that has nothing yet (the one above has the new metadata, which "mix" cannot undo).
        let fresh = try TestDirectory("tuf-drop-fresh")
        defer { fresh.remove() }
        let failing = try fixture.client(fresh, ["reset", "mix"])
        let error = await tufError { try await failing.refresh() }
        #expect(error?.code == .mirrorsFailed)
        for mode in ["reset", "mix"] { #expect(error?.message.contains(fixture.server.url(mode)) == true) }
        #expect(error?.message.contains("[tuf-connection-dropped]") == true)
        #expect(error?.message.contains("[tuf-mixed-metadata]") == true)
    }
}

/// A throwaway CA and a server certificate for 127.0.0.1 made by `openssl` at test time, a second
/// CA that signed nothing, and an HTTPS mirror server using the first.
actor TLSMirrorFixture {
    static let shared = TLSMirrorFixture()

    struct Made: Sendable {
        let directory: TestDirectory
        let server: TUFMirrorServer
        let caFile: String
        let wrongCAFile: String
    }

    private var making: Task<Made, any Error>?

    func get() async throws -> Made {
        if making == nil { making = Task { try await Self.make() } }
        return try await making!.value
    }

    private static func make() async throws -> Made {
        let plain = try await MirrorFixture.shared.get()
        let dir = try TestDirectory("tuf-tls")
        let ca = try await TestCertificateAuthority.make(in: dir)
        let server = try await TUFMirrorServer(
            publications: ["old": plain.directory.url("old"), "new": plain.directory.url("new")],
            tls: (ca.certificate, ca.key))
        return Made(directory: dir, server: server, caFile: ca.caFile, wrongCAFile: ca.wrongCAFile)
    }
}

@Suite("TUF HTTPS mirrors (loopback server, throwaway CA)")
struct TLSMirrorTests {
    @Test func privateCAIsTrustedOthersAreRefused() async throws {
        let plain = try await MirrorFixture.shared.get()
        let tls = try await TLSMirrorFixture.shared.get()
        let file = tls.server.url("good") + "metadata/timestamp.json"
        let expected = try plain.directory.read("new/metadata/timestamp.json")
        let trusting = HTTPFetcher(caFile: tls.caFile)
        #expect(try await trusting.fetch(file, maxLength: 16_384) == expected)

        for fetcher in [HTTPFetcher(caFile: tls.wrongCAFile), HTTPFetcher()] {  // another CA; the system's store
            let error = await tufError { _ = try await fetcher.fetch(file, maxLength: 16_384) }
            #expect(error?.code == .tlsUntrusted, "\(String(describing: error))")
            #expect(error?.message.contains(tls.server.url("good")) == true)
        }
        // An https:// URL on a server that speaks plain HTTP fails the handshake the same way.
        let plainAsTLS = plain.server.url("good").replacingOccurrences(of: "http://", with: "https://")
        #expect(
            await tufErrorCode { _ = try await trusting.fetch(plainAsTLS + "metadata/timestamp.json", maxLength: 100) }
                == .tlsUntrusted)
        #expect(
            await tufErrorCode {
                _ = try await HTTPFetcher(caFile: tls.directory.url("none.pem")).fetch(file, maxLength: 1)
            }
                == .storage)
        // `vigil check` judges ca_file with the reader the fetcher loads it with: a file it refuses
        // for holding no certificate (here the CA's key alone) no fetch can load either.
        #expect(CACertificates.problem(try tls.directory.read("ca.pem")) == nil)
        #expect(CACertificates.problem(try tls.directory.read("ca.key"))?.contains("private key") == true)
        #expect(CACertificates.problem(Array("not PEM".utf8))?.contains("no PEM certificate") == true)
        for bytes in [[], Array("not PEM".utf8)] as [[UInt8]] {
            let path = try tls.directory.write("bad-ca-\(bytes.count).pem", bytes)
            #expect(
                await tufErrorCode { _ = try await HTTPFetcher(caFile: path).fetch(file, maxLength: 1) } == .storage)
        }

        // The whole workflow over HTTPS, and the hostile behaviours there too.
        let dir = try TestDirectory("tuf-tls-client")
        defer { dir.remove() }
        try dir.write("metadata/root.json", plain.root)
        let updater = Updater(
            metadataDirectory: dir.url("metadata"),
            mirrors: ["drop", "good"].map {
                Mirror(metadataURL: tls.server.url($0) + "metadata/", targetsURL: tls.server.url($0) + "targets/")
            },
            fetcher: HTTPFetcher(
                stallTimeout: .seconds(2), deadline: .seconds(15), minimumRate: 200, rateWindow: .seconds(1),
                caFile: tls.caFile),
            now: Int64(Date().timeIntervalSince1970))
        let target = try await updater.targetInfo("plugin-b/plugin.json")
        #expect(updater.mirrorFailures.map(\.code) == [.connectionDropped])
        _ = try dir.makeDirectory("targets")
        try await updater.download(target, into: dir.url("targets"))
        #expect(try dir.read("targets/plugin-b%2Fplugin.json") == plain.pluginB)
    }
}

@Suite("vigil-tuf-client with several mirrors")
struct TUFClientMirrorTests {
    /// The tool built beside `vigil`.
    static let path = URL(fileURLWithPath: VigilExecutable.path).deletingLastPathComponent().path + "/vigil-tuf-client"

    @Test func warnsAboutEachSkippedMirrorAndDownloadsFromTheNext() async throws {
        let fixture = try await MirrorFixture.shared.get()
        let tls = try await TLSMirrorFixture.shared.get()
        let dir = try TestDirectory("tuf-client-mirrors")
        defer { dir.remove() }
        try dir.write("root.json", fixture.root)
        _ = try dir.makeDirectory("metadata")
        _ = try dir.makeDirectory("targets")
        var r = try await RuntimeFixtures.run(
            Self.path, ["--metadata-dir", dir.url("metadata"), "init", dir.url("root.json")])
        #expect(r.status == 0, "\(r.stderr)")
        var arguments = ["--metadata-dir", dir.url("metadata"), "--ca-file", tls.caFile]
        for base in [fixture.server.url("mix"), tls.server.url("good")] {
            arguments += ["--metadata-url", base + "metadata/", "--target-base-url", base + "targets/"]
        }
        arguments += ["--target-name", "plugin-b/plugin.json", "--target-dir", dir.url("targets"), "download"]
        r = try await RuntimeFixtures.run(Self.path, arguments)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(
            r.stderr.contains("warning [tuf-mixed-metadata]: mirror \(fixture.server.url("mix"))"), "\(r.stderr)")
        #expect(try dir.read("targets/plugin-b%2Fplugin.json") == fixture.pluginB)
        // One --target-base-url per --metadata-url, or a usage error.
        r = try await RuntimeFixtures.run(
            Self.path,
            [
                "--metadata-dir", dir.url("metadata"), "--metadata-url", fixture.server.url("good") + "metadata/",
                "--metadata-url", fixture.server.url("old") + "metadata/", "--target-base-url",
                fixture.server.url("good") + "targets/", "--target-name", "plugin-b/plugin.json", "--target-dir",
                dir.url("targets"), "download",
            ])
        #expect(r.status == 64 && r.stderr.contains("one --target-base-url for each --metadata-url"), "\(r.stderr)")
    }
}
