import Foundation
import Testing
import VigilCore
import VigilCrypto
import VigilPlugin
import VigilTestSupport

@testable import Vigil

/// A running config-based host and its publisher's signed revocation list: a plugin it revokes —
/// by manifest digest, version floor or key — is stopped with a `revoked` event (the only case
/// where trust data stops a running plugin); a list that does not verify stops nothing.
@Suite("Revocation stops a running plugin", .timeLimit(.minutes(1)))
struct RevocationHostTests {
    let alphaKey = MinisignSecretKey.generate()
    let betaKey = MinisignSecretKey.generate()

    /// A project with two signed plugins, alpha and beta, both trusted.
    func makeProject() throws -> HostProject {
        let project = try HostProject()
        try project.signedPlugin("alpha", key: alphaKey)
        try project.signedPlugin("beta", key: betaKey)
        try project.config(
            """
            plugins = ["alpha", "beta"]
            [trusted_plugins]
            alpha = "\(alphaKey.publicKey.fingerprint)"
            beta = "\(betaKey.publicKey.fingerprint)"
            """)
        return project
    }

    /// The project, a ledger of the test plugin's instances and a host of the project's vigil.toml.
    func setUp() throws -> (HostProject, InstanceLedger, VigilHost) {
        let project = try makeProject()
        let ledger = InstanceLedger()
        do {
            return (project, ledger, try makeHost(project, ledger: ledger))
        } catch {
            project.remove()
            throw error
        }
    }

    func makeHost(_ project: HostProject, ledger: InstanceLedger) throws -> VigilHost {
        try VigilHost(
            configPath: project.configPath, registry: PluginRegistry([TestPlugins.implementation(ledger: ledger)]),
            options: VigilHost.Options(publishStatus: false, environment: project.environment),
            logger: TestPlugins.quietLogger)
    }

    func alphaDirectory(_ project: HostProject) -> String { project.dir.path + "/manifests/alpha" }

    func sha(_ project: HostProject) throws -> String {
        Digest.hex(
            Digest.sha256(Array(try Data(contentsOf: URL(fileURLWithPath: alphaDirectory(project) + "/plugin.json")))))
    }

    /// Publishes a revocation list for alpha's manifest, signed by `key`.
    func revokeAlphasManifest(_ project: HostProject, signedBy key: MinisignSecretKey) throws {
        try PluginRevoker.revoke(
            directory: alphaDirectory(project), keys: [], manifests: [try sha(project)], versionFloor: nil,
            expires: nil, signers: [key])
    }

    /// Records the host's events from now on.
    func record(_ host: VigilHost) -> (EventRecorder<HostEvent>, Task<Void, Never>) {
        let recorder = EventRecorder<HostEvent>()
        let events = host.events
        let task = Task {
            for await event in events { recorder.record(event) }
        }
        return (recorder, task)
    }

    static func isRevoked(_ state: PluginState?) -> Bool {
        if case .failed(let failure) = state { failure.code == .refused(.revoked) } else { false }
    }

    enum Revocation: CaseIterable {
        case manifest, floor, key
    }

    @Test(
        "reevaluateRevocations() stops a running plugin revoked by digest, floor or key, with a revoked event",
        arguments: Revocation.allCases)
    func reevaluateStopsARevokedPlugin(_ revocation: Revocation) async throws {
        let (project, ledger, host) = try setUp()
        defer { project.remove() }
        let (events, task) = record(host)
        defer { task.cancel() }
        let status = await host.keepAlive()
        #expect(status[plugin: "alpha"]?.state == .running && status[plugin: "beta"]?.state == .running)
        #expect(await host.reevaluateRevocations() == [], "no list yet: nothing is revoked")

        try PluginRevoker.revoke(
            directory: alphaDirectory(project), keys: revocation == .key ? [alphaKey.publicKey.fingerprint] : [],
            manifests: revocation == .manifest ? [try sha(project)] : [],
            versionFloor: revocation == .floor ? SemanticVersion("2.0.0") : nil, expires: nil, signers: [alphaKey])
        #expect(await host.reevaluateRevocations() == ["alpha"])
        let stopped = await RuntimeFixtures.waitUntil(timeout: 30) {
            ledger.snapshot.liveByPlugin["alpha", default: 0] == 0
        }
        #expect(stopped, "alpha's instance is released")
        let revoked = await events.wait(timeout: 30) { list in
            list.contains { event in
                if event.plugin == "alpha", case .revoked(let failure) = event.kind {
                    return failure.code == .refused(.revoked)
                }
                return false
            }
        }
        #expect(revoked, "subscribers get a revoked event")
        #expect(!events.all.contains { $0.plugin == "alpha" && $0.kind == .stopped }, "revoked, not an ordinary stop")
        let after = await host.status()
        #expect(Self.isRevoked(after[plugin: "alpha"]?.state))
        #expect(after[plugin: "beta"]?.state == .running, "another plugin keeps running")
        // The status file's words: failed, with the code revoked.
        let json = String(decoding: after.jsonData(), as: UTF8.self)
        #expect(json.contains(#""code":"revoked""#))
        // The next keepAlive() does not start it again; the list was recorded.
        let made = ledger.snapshot.made
        #expect(Self.isRevoked(await host.keepAlive()[plugin: "alpha"]?.state))
        #expect(ledger.snapshot.made == made)
        #expect(try RollbackStore.standard(environment: project.environment).revocations(plugin: "alpha") != nil)
        #expect(ledger.snapshot.violations.isEmpty)
        await host.stop()
    }

    @Test("a list not signed by the plugin's key stops nothing: the plugin keeps running")
    func anUnverifiedListStopsNothing() async throws {
        let (project, ledger, host) = try setUp()
        defer { project.remove() }
        _ = await host.keepAlive()
        // Signed by beta's key, not alpha's.
        try revokeAlphasManifest(project, signedBy: betaKey)
        #expect(await host.reevaluateRevocations() == [])
        #expect(await host.status()[plugin: "alpha"]?.state == .running)
        #expect(ledger.snapshot.liveByPlugin["alpha"] == 1)
        await host.stop()
    }

    @Test("running as a Service, the host sees a new list through inotify and stops the revoked plugin")
    func theWatchStopsARevokedPlugin() async throws {
        let (project, ledger, host) = try setUp()
        defer { project.remove() }
        let (events, task) = record(host)
        defer { task.cancel() }
        let before = Self.watchThreads()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await host.run() }
            // The watch is a child of run() started once keepAlive() settled: wait until it
            // watches (the deadline is generous for a loaded machine) before writing the list.
            var watching = false
            let deadline = ContinuousClock.now.advanced(by: .seconds(30))
            while !watching, ContinuousClock.now < deadline {
                watching = await host.watchingRevocations
                if !watching { try await Task.sleep(for: .milliseconds(20)) }
            }
            try #require(watching, "the revocation watch runs")
            #expect(ledger.snapshot.live == 2, "both plugins run")
            // Idle, the watch's thread sleeps in poll(2) without a timeout: not one wakeup in a second.
            let threads = Self.watchThreads().subtracting(before)
            #expect(!threads.isEmpty, "the watch has its own thread")
            let switches = threads.map(Self.contextSwitches)
            try await Task.sleep(for: .seconds(1))
            #expect(threads.map(Self.contextSwitches) == switches, "the idle watch woke up")
            try revokeAlphasManifest(project, signedBy: alphaKey)
            let revoked = await events.wait(timeout: 30) { list in
                list.contains { if $0.plugin == "alpha", case .revoked = $0.kind { true } else { false } }
            }
            #expect(revoked, "the watch saw the new list")
            let stopped = await RuntimeFixtures.waitUntil(timeout: 30) {
                ledger.snapshot.liveByPlugin["alpha", default: 0] == 0
            }
            #expect(stopped)
            #expect(ledger.snapshot.liveByPlugin["beta"] == 1)
            group.cancelAll()
        }
        #expect(ledger.snapshot.live == 0)
    }

    /// The ids of this process's threads named like the revocation watch's loop.
    static func watchThreads() -> Set<String> {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return Set(
            tasks.filter { id in
                (try? String(contentsOfFile: "/proc/self/task/\(id)/comm", encoding: .utf8)) == "vigil-revwatch\n"
            })
    }

    /// A thread's voluntary and involuntary context switches so far.
    static func contextSwitches(_ id: String) -> Int {
        let text = (try? String(contentsOfFile: "/proc/self/task/\(id)/status", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").filter { $0.contains("ctxt_switches:") }
            .compactMap { Int($0.split(separator: "\t").last ?? "") }.reduce(0, +)
    }
}

/// The host's status carries each plugin's signature freshness (its signed `expires` and the
/// host's `[freshness] grace`), in the value and in the status file's JSON.
@Suite("Host status: signature freshness", .timeLimit(.minutes(1)))
struct StatusFreshnessHostTests {
    @Test("a signed expiry and the configured grace reach status() and the status document")
    func statusCarriesTheSignature() async throws {
        let project = try HostProject()
        defer { project.remove() }
        let expires = Freshness.systemNow() + 10 * 86400
        let key = try project.signedPlugin(
            "alpha", extra: #", "expires": "\#(Freshness.formatRFC3339(expires))""#)
        let plain = try project.signedPlugin("plain")
        try project.config(
            """
            plugins = ["alpha", "plain"]
            [trusted_plugins]
            alpha = "\(key)"
            plain = "\(plain)"
            [freshness]
            grace = "12h"
            """)
        let ledger = InstanceLedger()
        let host = try VigilHost(
            configPath: project.configPath, registry: PluginRegistry([TestPlugins.implementation(ledger: ledger)]),
            options: VigilHost.Options(publishStatus: false, environment: project.environment),
            logger: TestPlugins.quietLogger)
        let status = await host.keepAlive()
        #expect(status[plugin: "alpha"]?.signature == SignatureFreshness(expires: expires, grace: 12 * 3600))
        #expect(status[plugin: "plain"]?.signature == nil)
        let decoded = try HostStatus(jsonData: status.jsonData())
        #expect(decoded[plugin: "alpha"]?.signature == SignatureFreshness(expires: expires, grace: 12 * 3600))
        #expect(decoded[plugin: "plain"]?.signature == nil)
        await host.stop()
    }
}

/// The revocation watch's reading of inotify events, on a real inotify descriptor.
@Suite("Revocation watch: which changes count")
struct RevocationWatchEventTests {
    @Test("only a revocation list or one of its signatures written or moved in counts")
    func onlyRevocationFilesCount() throws {
        let dir = try TestDirectory("vigil-revwatch")
        defer { dir.remove() }
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        try #require(fd >= 0)
        defer { close(fd) }
        try #require(inotify_add_watch(fd, dir.path, UInt32(IN_CLOSE_WRITE | IN_MOVED_TO)) >= 0)
        #expect(!RevocationWatch.drain(fd), "nothing happened")
        try dir.write("plugin.json", "{}")
        try dir.write("revocations.json", "x")
        #expect(RevocationWatch.drain(fd), "the list written in place counts")
        try dir.write("plugin.json.minisig", "x")
        try dir.write("revocations", "x")
        #expect(!RevocationWatch.drain(fd), "other files do not count")
        try dir.write("staged", "{}")
        try #require(rename(dir.path + "/staged", dir.path + "/revocations.json") == 0)
        #expect(RevocationWatch.drain(fd), "a list moved into place (an atomic write) counts")
        try dir.write("revocations.json.2.minisig", "x")
        #expect(RevocationWatch.drain(fd), "a co-signature counts")
    }
}
