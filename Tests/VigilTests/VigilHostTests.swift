import Foundation
import Logging
import ServiceLifecycle
import ServiceLifecycleTestKit
import Testing
import VigilCore
import VigilPlugin
import VigilTestSupport

@testable import Vigil
@testable import VigilHostCore

@Suite("VigilHost state machine", .timeLimit(.minutes(1)))
struct VigilHostTests {
    @Test("keepAlive starts every plugin once; repeated calls change nothing; stop releases every instance")
    func idempotentKeepAliveAndStop() async throws {
        let ledger = InstanceLedger()
        let host = try VigilHost(
            plugins: [TestPlugins.prepared("a", ledger: ledger), TestPlugins.prepared("b", ledger: ledger)],
            hostName: "test-host", options: TestPlugins.noPublish, logger: TestPlugins.quietLogger)

        let first = await host.keepAlive()
        #expect(first.plugins.map(\.state) == [.running, .running])
        #expect(first[plugin: "a"]?.details == ["mode": "none", "host": "test-host"])
        await host.keepAlive()
        await host.keepAlive()
        #expect(ledger.snapshot.made == 2)
        #expect(ledger.snapshot.startCalls == 2)
        #expect(ledger.snapshot.started == 2)

        await host.stop()
        await host.stop()
        let status = await host.status()
        #expect(status.plugins.map(\.state) == [.idle, .idle])
        let counts = ledger.snapshot
        #expect(counts.live == 0)
        #expect(counts.released == 2)
        #expect(counts.stopCalls == 2)
        #expect(counts.started == 0)
        #expect(counts.violations.isEmpty)
    }

    @Test("thousands of interleaved keepAlive/stop calls end in the state of the last call, leaking nothing")
    func concurrentCallsSettleOnTheLastCall() async throws {
        for round in 0..<6 {
            let ledgers = (0..<3).map { _ in InstanceLedger() }
            let host = try VigilHost(
                plugins: ledgers.enumerated().map { index, ledger in
                    TestPlugins.prepared("p\(index)", ledger: ledger, delay: index == 1 ? .microseconds(200) : .zero)
                },
                options: TestPlugins.noPublish, logger: TestPlugins.quietLogger)
            let storm = 2_000
            let lastIsUp = round % 2 == 0
            await withTaskGroup(of: Void.self) { group in
                for call in 0..<storm {
                    group.addTask {
                        if (call * 7 + round) % 3 == 0 { await host.stop() } else { await host.keepAlive() }
                    }
                }
                // Wait until every storm call has entered the host, then make the last call while
                // many are still waiting on an in-flight start or stop.
                while await host.requestCount < UInt64(storm) { await Task.yield() }
                group.addTask {
                    if lastIsUp { await host.keepAlive() } else { await host.stop() }
                }
                await group.waitForAll()
            }
            #expect(await host.requestCount == UInt64(storm + 1))
            let status = await host.status()
            let expected: PluginState = lastIsUp ? .running : .idle
            #expect(status.plugins.map(\.state) == [expected, expected, expected], "round \(round)")
            for ledger in ledgers {
                let counts = ledger.snapshot
                #expect(counts.violations.isEmpty, "round \(round): \(counts.violations.prefix(3))")
                #expect(counts.maxLive <= 1)
                #expect(counts.live == (lastIsUp ? 1 : 0), "round \(round)")
                #expect(counts.started == (lastIsUp ? 1 : 0))
                #expect(counts.made - counts.released == counts.live)
                #expect(counts.startCalls == counts.made)
            }
            await host.stop()
            for ledger in ledgers { #expect(ledger.snapshot.live == 0) }
        }
    }

    @Test("random interleavings from many tasks always end consistent (all running or all idle)")
    func randomInterleavingsStayConsistent() async throws {
        let ledger = InstanceLedger()
        let host = try VigilHost(
            plugins: (0..<4).map { TestPlugins.prepared("r\($0)", ledger: ledger, delay: .microseconds(50)) },
            options: TestPlugins.noPublish, logger: TestPlugins.quietLogger)
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<50 {
                group.addTask {
                    var rng = SystemRandomNumberGenerator()
                    for _ in 0..<40 {
                        if Bool.random(using: &rng) { await host.keepAlive() } else { await host.stop() }
                    }
                    _ = task
                }
            }
        }
        let wantsUp = await host.wantsUp
        let states = await host.status().plugins.map(\.state)
        #expect(states == Array(repeating: wantsUp ? .running : .idle, count: 4))
        #expect(ledger.snapshot.live == (wantsUp ? 4 : 0))
        #expect(ledger.snapshot.violations.isEmpty)
        await host.stop()
        #expect(ledger.snapshot.live == 0)
    }

    @Test("a plugin that fails to start shows failed, is stopped and released, and does not stop the others")
    func failingPluginDoesNotStopOthers() async throws {
        let good = InstanceLedger()
        let bad = InstanceLedger()
        let host = try VigilHost(
            plugins: [
                TestPlugins.prepared("bad", ledger: bad, failStart: true), TestPlugins.prepared("good", ledger: good),
            ],
            options: TestPlugins.noPublish, logger: TestPlugins.quietLogger)
        let events = host.events
        let status = await host.keepAlive()
        #expect(status[plugin: "good"]?.state == .running)
        guard case .failed(let failure)? = status[plugin: "bad"]?.state else {
            Issue.record("bad should have failed, got \(String(describing: status[plugin: "bad"]?.state))")
            return
        }
        #expect(failure.code == .plugin(.startFailed))
        #expect(failure.message == "could not start: the test told it to fail — nothing to fix")
        #expect(failure.description == "[bad] could not start: the test told it to fail — nothing to fix")
        #expect(bad.snapshot.stopCalls == 1)  // stop() after a start that threw
        #expect(bad.snapshot.live == 0)

        // The next keepAlive retries the failed plugin with a fresh instance.
        await host.keepAlive()
        #expect(bad.snapshot.made == 2)
        #expect(bad.snapshot.live == 0)
        #expect(good.snapshot.made == 1)

        var iterator = events.makeAsyncIterator()
        let first = await iterator.next()
        let second = await iterator.next()
        #expect(first?.plugin == "bad")
        #expect(first?.kind == .failed(failure))
        #expect(second == HostEvent(plugin: "good", kind: .started, state: .running))
        await host.stop()
    }

    @Test("an invalid setting fails the plugin with the settings error and no instance")
    func invalidSettingFails() async throws {
        let ledger = InstanceLedger()
        let host = try VigilHost(
            plugins: [TestPlugins.prepared("s", ledger: ledger, settings: ["mode": .string("loud")])],
            options: TestPlugins.noPublish, logger: TestPlugins.quietLogger)
        let status = await host.keepAlive()
        let message =
            "setting `mode`: \"loud\" is not one of \"zero\", \"sine\" — fix it in the [s] table of vigil.toml"
        let error = PluginError(code: .invalidSetting, plugin: "s", message: message)
        #expect(
            status[plugin: "s"]?.state
                == .failed(
                    PluginFailure(
                        code: .plugin(.invalidSetting), plugin: "s", message: message, cause: ErrorCause(error))
                ))
        #expect(ledger.snapshot.made == 0)
    }

    @Test("reported interruptions become states and events on every subscriber; resumeFailed releases the instance")
    func pluginEventsReachEverySubscriber() async throws {
        let ledger = InstanceLedger()
        let reporters = ReporterBox()
        let host = try VigilHost(
            plugins: [TestPlugins.prepared("e", ledger: ledger, reporters: reporters)],
            options: TestPlugins.noPublish, logger: TestPlugins.quietLogger)
        let subscriberA = host.events
        let subscriberB = host.events
        await host.keepAlive()
        reporters.report(.interrupted(reason: "sound server went away"))
        reporters.report(.resumed)
        reporters.report(.interrupted(reason: "again"))
        reporters.report(.resumeFailed(reason: "server did not come back"))

        let expected: [HostEvent.Kind] = [
            .started, .interrupted(reason: "sound server went away"), .resumed, .interrupted(reason: "again"),
            .resumeFailed(reason: "server did not come back"),
        ]
        for stream in [subscriberA, subscriberB] {
            var kinds: [HostEvent.Kind] = []
            for await event in stream {
                kinds.append(event.kind)
                if kinds.count == expected.count { break }
            }
            #expect(kinds == expected)
        }
        let released = await RuntimeFixtures.waitUntil(timeout: 5) { ledger.snapshot.live == 0 }
        #expect(released, "the instance that gave up must be stopped and released")
        guard case .failed(let failure)? = await host.status()[plugin: "e"]?.state else {
            Issue.record("expected failed after resumeFailed")
            return
        }
        #expect(failure.code == .plugin(.resumeFailed) && failure.plugin == "e")
        // Stays stopped until the next keepAlive(), which makes a fresh instance.
        #expect(ledger.snapshot.made == 1)
        let again = await host.keepAlive()
        #expect(again[plugin: "e"]?.state == .running)
        #expect(ledger.snapshot.made == 2)
        // Events from the released first instance are ignored.
        await host.stop()
        #expect(ledger.snapshot.live == 0)
    }

    @Test("as a Service: run() keeps alive until graceful shutdown, then stops everything")
    func serviceRunsUntilGracefulShutdown() async throws {
        let ledger = InstanceLedger()
        let host = try VigilHost(
            plugins: [TestPlugins.prepared("svc", ledger: ledger)], options: TestPlugins.noPublish,
            logger: TestPlugins.quietLogger)
        let events = host.events
        try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await host.run() }
                var iterator = events.makeAsyncIterator()
                #expect(await iterator.next()?.kind == .started)
                #expect(ledger.snapshot.started == 1)
                trigger.triggerGracefulShutdown()
                try await group.waitForAll()
            }
        }
        #expect(await host.status()[plugin: "svc"]?.state == .idle)
        #expect(ledger.snapshot.live == 0)
    }

    @Test("status is published 0600 in a 0700 runtime dir while up, and removed by stop()")
    func statusPublication() async throws {
        try await RuntimeFixtures.withTempDirectory { dir in
            let ledger = InstanceLedger()
            let env = RequirementChecker.Environment(variables: ["XDG_RUNTIME_DIR": dir.path])
            let host = try VigilHost(
                plugins: [TestPlugins.prepared("pub", ledger: ledger)], hostName: "published-host",
                options: VigilHost.Options(environment: env), logger: TestPlugins.quietLogger)
            let file = dir.path + "/vigil/host-\(getpid()).json"
            #expect(!FileManager.default.fileExists(atPath: file))
            await host.keepAlive()
            // Written off the host actor, at once but asynchronously.
            #expect(await RuntimeFixtures.waitUntil(timeout: 5) { FileManager.default.fileExists(atPath: file) })
            let attributes = try FileManager.default.attributesOfItem(atPath: file)
            #expect((attributes[.posixPermissions] as? Int) == 0o600)
            let dirAttributes = try FileManager.default.attributesOfItem(atPath: dir.path + "/vigil")
            #expect((dirAttributes[.posixPermissions] as? Int) == 0o700)
            let published = try HostStatus(jsonData: Data(contentsOf: URL(fileURLWithPath: file)))
            #expect(published.hostName == "published-host")
            #expect(published.plugins.map(\.state) == [.running])
            let runtime = try #require(try RuntimeDirectory.resolve(environment: env.variables, create: false))
            let live = PublishedHosts.read(from: runtime)
            #expect(live.count == 1)
            await host.stop()
            #expect(!FileManager.default.fileExists(atPath: file))
        }
    }

    @Test("a planted status file (a link, a FIFO) is refused with what it is and the remedy; a vanished one is skipped")
    func plantedStatusFilesAreRefused() async throws {
        try await RuntimeFixtures.withTempDirectory { dir in
            let runtime = try #require(
                try RuntimeDirectory.resolve(environment: ["XDG_RUNTIME_DIR": dir.path], create: true))
            let target = try dir.write("elsewhere.json", "{}")
            // Named after a live process (this one), so it is read rather than removed as stale.
            let file = runtime.statusFile(pid: getpid())
            #expect(symlink(target, file) == 0)
            #expect(mkfifo(dir.path + "/vigil/host-1.json", 0o600) == 0)  // pid 1 lives too
            let errors = PublishedHosts.read(from: runtime).compactMap { result -> VigilError? in
                if case .failure(let error) = result { return error }
                return nil
            }
            // Refused by the check every state file goes through (StateFile), with its code.
            #expect(errors.map(\.code) == [.statusUnreadable, .statusUnreadable])
            #expect(errors.map { $0.cause?.code } == [.stateUnsafe, .stateUnsafe])
            #expect(errors[0].message.contains("host-1.json is a FIFO, not a regular file"), "\(errors[0])")
            #expect(errors[0].message.hasSuffix("move it away"), "\(errors[0])")
            #expect(errors[1].message.contains("\(file) is a symbolic link"), "\(errors[1])")
            #expect(errors[1].message.hasSuffix("delete the link (`rm \(file)`)"), "\(errors[1])")
            #expect(PublishedHosts.readCapped(dir.path + "/vigil/host-999999999.json") == nil)
        }
    }

    @Test(
        "a status file another user owns, or that others may write, is refused like every state file (StrictModes)")
    func statusFilesOthersControlAreRefused() async throws {
        try await RuntimeFixtures.withTempDirectory { dir in
            let runtime = try #require(
                try RuntimeDirectory.resolve(environment: ["XDG_RUNTIME_DIR": dir.path], create: true))
            // Well-formed status, named after live processes (this one, pid 1): the old check (a
            // regular file, no link) showed both as running hosts.
            let owned = runtime.statusFile(pid: getpid())
            let writable = runtime.statusFile(pid: 1)
            for (file, pid) in [(owned, getpid()), (writable, 1)] {
                let text = """
                    {"schema": "vigil.status/v2", "pid": \(pid), "host": "planted", "config": null, "plugins": []}
                    """
                let fd = open(file, O_WRONLY | O_CREAT | O_EXCL, 0o600)
                #expect(fd >= 0)
                _ = Array(text.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                close(fd)
            }
            let otherUser: uid_t = getuid() == 65534 ? 65533 : 65534
            #expect(chown(owned, otherUser, getgid()) == 0, "changing a file's owner needs root")
            #expect(chmod(writable, 0o666) == 0)
            let results = PublishedHosts.read(from: runtime)
            let errors = results.compactMap { result -> VigilError? in
                if case .failure(let error) = result { return error }
                return nil
            }
            #expect(errors.count == 2 && results.count == 2, "\(results)")
            guard errors.count == 2 else { return }
            #expect(errors.map(\.code) == [.statusUnreadable, .statusUnreadable])
            #expect(errors.map { $0.cause?.code } == [.stateUnsafe, .stateUnsafe])
            #expect(errors[0].message.contains("\(writable) is writable by group or others (mode 666)"), "\(errors[0])")
            #expect(errors[0].message.contains("`chmod go-w \(writable)`"), "\(errors[0])")
            #expect(errors[1].message.contains("\(owned) is owned by uid \(otherUser)"), "\(errors[1])")
            #expect(errors[1].message.contains("inspect it, then delete it"), "\(errors[1])")
        }
    }

    @Test("a runtime directory under a directory others may write, or under a symbolic link, is refused")
    func runtimeDirectoryParentsAreChecked() async throws {
        try await RuntimeFixtures.withTempDirectory { dir in
            // XDG_RUNTIME_DIR itself writable by all (not sticky), its vigil/ 0700: whoever may
            // write it can swap vigil/ for a directory of their own. Variant: XDG_RUNTIME_DIR is a
            // symbolic link (to a safe directory).
            mkdir(dir.path + "/open", 0o700)
            chmod(dir.path + "/open", 0o777)
            mkdir(dir.path + "/open/vigil", 0o700)
            mkdir(dir.path + "/real", 0o700)
            mkdir(dir.path + "/real/vigil", 0o700)
            #expect(symlink(dir.path + "/real", dir.path + "/link") == 0)
            for (base, problem) in [("open", "`chmod go-w \(dir.path)/open`"), ("link", "is a symbolic link")] {
                #expect {
                    _ = try RuntimeDirectory.resolve(environment: ["XDG_RUNTIME_DIR": dir.url(base)], create: false)
                } throws: { error in
                    let error = error as? VigilError
                    return error?.code == .runtimeDirectory && error?.cause?.code == .stateUnsafe
                        && error?.message.contains("\(dir.url(base)), above the directory of") == true
                        && error?.message.contains(problem) == true
                }
            }
            let real = try RuntimeDirectory.resolve(environment: ["XDG_RUNTIME_DIR": dir.path + "/real"], create: false)
            #expect(real?.path == dir.path + "/real/vigil")
        }
    }

    @Test("a vigil.toml lock file another user owns, or that others may write, is neither used nor shown as a host")
    func plantedLockFilesAreRefused() async throws {
        try await RuntimeFixtures.withTempDirectory { dir in
            let runtime = try #require(
                try RuntimeDirectory.resolve(environment: ["XDG_RUNTIME_DIR": dir.path], create: true))
            let config = dir.path + "/vigil.toml"
            let path = "\(runtime.path)/lock-\(ConfigLock.hash(config))"
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
            #expect(fd >= 0)
            close(fd)
            let otherUser: uid_t = getuid() == 65534 ? 65533 : 65534
            #expect(chown(path, otherUser, getgid()) == 0, "changing a file's owner needs root")
            #expect {
                _ = try ConfigLock.acquire(configPath: config, in: runtime)
            } throws: { error in
                let error = error as? VigilError
                return error?.code == .runtimeDirectory && error?.cause?.code == .stateUnsafe
                    && error?.message.contains("\(path) is owned by uid \(otherUser)") == true
            }
            // Variant: mode 0666, and a lock the holder (this process) took before it was opened up
            // is not read back as a host's.
            #expect(chown(path, getuid(), getgid()) == 0)
            let lock = try ConfigLock.acquire(configPath: config, in: runtime)
            #expect(ConfigLock.holders(in: runtime).map(\.pid) == [getpid()])
            #expect(chmod(path, 0o666) == 0)
            #expect(ConfigLock.holders(in: runtime).isEmpty)
            #expect {
                _ = try ConfigLock.acquire(configPath: config + ".other", in: runtime)
                _ = try ConfigLock.acquire(configPath: config, in: runtime)
            } throws: { error in
                (error as? VigilError)?.message.contains("is writable by group or others (mode 666)") == true
            }
            withExtendedLifetime(lock) {}
        }
    }

    @Test("an unsafe runtime directory is refused with the fix")
    func unsafeRuntimeDirectoryRefused() async throws {
        try await RuntimeFixtures.withTempDirectory { dir in
            mkdir(dir.path + "/vigil", 0o755)
            chmod(dir.path + "/vigil", 0o755)
            #expect {
                _ = try RuntimeDirectory.resolve(environment: ["XDG_RUNTIME_DIR": dir.path], create: true)
            } throws: { error in
                (error as? VigilError)?.message
                    == "\(dir.path)/vigil is readable or writable by other users (mode 755) — run `chmod 700 \(dir.path)/vigil`"
            }
        }
    }

    @Test("without XDG_RUNTIME_DIR the fallback is /tmp/vigil-UID and says so")
    func runtimeDirectoryFallback() throws {
        let directory = try #require(try RuntimeDirectory.resolve(environment: [:], create: true))
        #expect(directory.isFallback)
        #expect(directory.path == "/tmp/vigil-\(getuid())")
    }
}
