import Foundation
import Testing
import VigilPlugin
import VigilTestSupport

@testable import VigilSupervisor
@testable import VigilSupervisorEngine

/// Faults and misbehaving workers, with real processes: one worker's failure stays its own,
/// notify credentials are the kernel's, and a flooding worker is coalesced, not obeyed.
@Suite("Supervisor under faults: failure isolation, notify credentials, flooding")
struct SupervisorFaultTests {
    @Test("a worker that fails under restart = never leaves its healthy sibling running; the plugin is degraded")
    func failureStaysTheWorkers() async throws {
        let events = EventRecorder<PluginEvent>()
        let plugin = try makePlugin(
            [
                "workers": .array([
                    worker("healthy", "exec sleep 300"),
                    worker("oneshot", "sleep 0.3; exit 2", extra: ["restart": .string("never")]),
                ])
            ], environment: isolatedEnvironment, events: events)
        try await plugin.start()
        let before = await plugin.details()
        let healthyPID = try #require(before["worker.healthy.pid"].flatMap { Int32($0) })
        #expect(
            await eventually {
                events.all.contains {
                    if case .interrupted(let r) = $0 { r.contains("worker oneshot failed") } else { false }
                }
            })
        let after = await plugin.details()
        #expect(after["worker.oneshot.state"] == "failed")
        #expect(after["worker.oneshot.reason"]?.contains("exited with status 2") == true)
        #expect(after["worker.healthy.state"] == "running")
        #expect(after["worker.healthy.pid"] == String(healthyPID))
        #expect(processIsLive(healthyPID))
        #expect(!events.all.contains { if case .resumeFailed = $0 { true } else { false } }, "\(events.all)")
        await plugin.stop()
        #expect(await eventually { !processIsLive(healthyPID) })
    }

    @Test("failure_action = \"stop\" makes a worker's failure the plugin's")
    func failureActionStop() async throws {
        let events = EventRecorder<PluginEvent>()
        let dir = try TestDirectory("vigil-vital")
        defer { dir.remove() }
        // vital fails once the plugin has started (a fixed delay loses the race on a loaded machine).
        let go = dir.url("go")
        let plugin = try makePlugin(
            [
                "workers": .array([
                    worker("healthy", "exec sleep 300"),
                    worker(
                        "vital", "while [ ! -e \(go) ]; do sleep 0.05; done; exit 2",
                        extra: ["restart": .string("never"), "failure_action": .string("stop")]),
                ])
            ], environment: isolatedEnvironment, events: events)
        try await plugin.start()
        #expect(FileManager.default.createFile(atPath: go, contents: nil))
        #expect(
            await eventually {
                events.all.contains {
                    if case .resumeFailed(let r) = $0 {
                        r.contains("vital") && r.contains("failure_action")
                    } else {
                        false
                    }
                }
            })
        await plugin.stop()
    }

    @Test("a worker that cannot be started is failed on its own; the others start; a directory is named as one")
    func spawnFailureIsTheWorkers() async throws {
        let dir = try TestDirectory("vigil-sup")
        defer { dir.remove() }
        let events = EventRecorder<PluginEvent>()
        let plugin = try makePlugin(
            [
                "workers": .array([
                    worker("healthy", "exec sleep 300"),
                    .table(["name": .string("folder"), "command": .string(dir.path)]),
                ])
            ], environment: isolatedEnvironment, events: events)
        try await plugin.start()
        let details = await plugin.details()
        #expect(details["worker.healthy.state"] == "running")
        #expect(details["worker.folder.state"] == "failed")
        #expect(details["worker.folder.reason"]?.contains("\(dir.path) is a directory, not a program") == true)
        #expect(!(details["worker.folder.reason"] ?? "").contains("Permission denied"))
        await plugin.stop()

        // A single worker that cannot start still fails start() (nothing would run).
        let alone = try makePlugin(
            ["workers": .array([.table(["name": .string("folder"), "command": .string(dir.path)])])],
            environment: isolatedEnvironment)
        await #expect(throws: PluginError.self) { try await alone.start() }
        await alone.stop()
    }

    @Test("a process that joins the worker's process group is not the worker: its READY=1 and STATUS= do not count")
    func processGroupIsNotCredentials() async throws {
        let python = try #require(RuntimeFixtures.which("python3"), "python3 is needed")
        let dir = try TestDirectory("vigil-sup")
        defer { dir.remove() }
        let go = dir.url("go")
        let script = "while [ ! -e \(go) ]; do sleep 0.02; done; systemd-notify --status=genuine; exec sleep 300"
        let events = EventLog()
        let supervisor = try Supervisor.forTests(
            [.shell("guarded", script, readiness: .notify)], runtimeDirectory: dir.path, events: events)
        try await supervisor.start()
        let pid = try #require(supervisor.workers.first?.pid)
        let socket = try firstWorkerNotifySocket(in: dir.path)
        // An unrelated process of this session moves into the worker's process group, then
        // speaks for it. It is not the worker's main process nor one of its descendants.
        let intruder = """
            import os, socket, sys
            os.setpgid(0, int(sys.argv[1]))
            assert os.getpgrp() == int(sys.argv[1])
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            s.sendto(b"READY=1\\nSTATUS=forged", sys.argv[2])
            open(sys.argv[3], "w").close()
            """
        let r = try await RuntimeFixtures.run(python, ["-c", intruder, String(pid), socket, go])
        #expect(r.status == 0, "\(r.stderr)")
        // The worker's own message, sent after the intruder's, arrives; the forged one never counted.
        #expect(await eventually { supervisor.workers.first?.statusText == "genuine" })
        #expect(supervisor.workers.first?.state == .starting)
        #expect(!events.all.contains { $0.event.worker.statusText == "forged" || $0.event.kind == .ready })
        await supervisor.stop()
    }

    @Test("a worker flooding STATUS= is coalesced: few events, the latest text wins, it is reported as flooding")
    func statusFloodIsCoalesced() async throws {
        let python = try #require(RuntimeFixtures.which("python3"), "python3 is needed")
        let dir = try TestDirectory("vigil-sup")
        defer { dir.remove() }
        // Sends changing STATUS= as fast as it can for 1.5 s, then a last one, then writes how many it
        // sent (renamed into place: the test must never read the file half-written) and sleeps.
        let flood = """
            import os, socket, time
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            end = time.monotonic() + 1.5
            i = 0
            while time.monotonic() < end:
                i += 1
                try:
                    s.sendto(b"STATUS=n %d" % i, os.environ["NOTIFY_SOCKET"])
                except BlockingIOError:
                    pass
            s.sendto(b"STATUS=final after %d" % i, os.environ["NOTIFY_SOCKET"])
            with open(os.environ["DONE"] + ".part", "w") as f:
                f.write(str(i))
            os.rename(os.environ["DONE"] + ".part", os.environ["DONE"])
            time.sleep(300)
            """
        let done = dir.url("done")
        let events = EventLog()
        let supervisor = try Supervisor.forTests(
            [WorkerSpec(name: "flood", command: python, arguments: ["-c", flood], environment: ["DONE": done])],
            events: events)
        try await supervisor.start()
        #expect(await eventually { FileManager.default.fileExists(atPath: done) })
        let sent = Int((try? TextFile.read(done)) ?? "") ?? 0
        #expect(await eventually { supervisor.workers.first?.statusText?.hasPrefix("final") == true })
        #expect(sent > 1000, "the flood sent only \(sent) datagrams")
        // Coalesced: a few events a second, not one per datagram.
        let statusEvents = events.count { $0 == .statusChanged }
        #expect(statusEvents <= 12, "\(statusEvents) statusChanged events for \(sent) datagrams")
        #expect(events.all.contains { $0.event.kind == .floodingChanged && $0.event.worker.flooding })
        // It calms down once the flood ends.
        #expect(await eventually { supervisor.workers.first?.flooding == false })
        await supervisor.stop()
    }
}

/// The restart policy as a value: no process, no clock.
@Suite("RestartPolicy: backoff, start limit, what counts as a failure")
struct RestartPolicyTests {
    let configuration = SupervisorConfiguration(
        backoffInitial: .milliseconds(100), backoffMax: .seconds(1), stableAfter: .seconds(10), startLimitBurst: 3,
        startLimitInterval: .seconds(10))

    @Test("the delay doubles after each quick failure up to the cap; a stable run resets it")
    func backoff() {
        let policy = RestartPolicy(restart: .always, configuration: configuration)
        var history = RestartPolicy.History()
        var delays: [Double] = []
        for _ in 0..<6 {
            guard
                case .restart(let delay) = policy.afterExit(
                    .exited(1), watchdogFired: false, ranFor: 0.5, history: &history)
            else { Issue.record("no restart"); return }
            delays.append(delay)
        }
        #expect(delays == [0.1, 0.2, 0.4, 0.8, 1, 1])
        #expect(
            policy.afterExit(.exited(1), watchdogFired: false, ranFor: 11, history: &history) == .restart(after: 0.1))
        #expect(policy.backoff(afterFailures: 1000) == 1)
        // A start that cannot even exec never restarts faster than 100 ms.
        let eager = RestartPolicy(restart: .always, configuration: SupervisorConfiguration(backoffInitial: .zero))
        var fresh = RestartPolicy.History()
        #expect(eager.afterExit(.exited(1), watchdogFired: false, ranFor: 0, history: &fresh) == .restart(after: 0))
        #expect(
            eager.afterExit(.spawnFailed("x"), watchdogFired: false, ranFor: 0, history: &fresh) == .restart(after: 0.1)
        )
    }

    @Test("restart = on-failure / never / always, as systemd defines a failure")
    func policies() {
        var h = RestartPolicy.History()
        let onFailure = RestartPolicy(restart: .onFailure, configuration: configuration)
        #expect(onFailure.afterExit(.exited(0), watchdogFired: false, ranFor: 1, history: &h) == .stop(failed: false))
        #expect(
            onFailure.afterExit(.signaled(15, coreDumped: false), watchdogFired: false, ranFor: 1, history: &h)
                == .stop(failed: false))
        #expect(onFailure.afterExit(.exited(0), watchdogFired: true, ranFor: 1, history: &h) != .stop(failed: false))
        #expect(
            onFailure.afterExit(.signaled(11, coreDumped: true), watchdogFired: false, ranFor: 1, history: &h)
                != .stop(failed: true))
        let never = RestartPolicy(restart: .never, configuration: configuration)
        #expect(never.afterExit(.exited(2), watchdogFired: false, ranFor: 1, history: &h) == .stop(failed: true))
        #expect(never.afterExit(.exited(0), watchdogFired: false, ranFor: 1, history: &h) == .stop(failed: false))
        let always = RestartPolicy(restart: .always, configuration: configuration)
        if case .restart = always.afterExit(.exited(0), watchdogFired: false, ranFor: 1, history: &h) {
        } else {
            Issue.record("always did not restart a clean exit")
        }
    }

    @Test("the start limit counts starts inside its window only; 0 turns it off")
    func startLimit() {
        let policy = RestartPolicy(restart: .always, configuration: configuration)
        var history = RestartPolicy.History()
        #expect(policy.mayStart(at: 100, history: &history) == .allowed)
        #expect(policy.mayStart(at: 101, history: &history) == .allowed)
        #expect(policy.mayStart(at: 102, history: &history) == .allowed)
        #expect(policy.mayStart(at: 103, history: &history) == .limitHit(starts: 3))
        // Ten seconds after the first start, it has left the window.
        #expect(policy.mayStart(at: 110.5, history: &history) == .allowed)
        var unlimited = SupervisorConfiguration()
        unlimited.startLimitBurst = 0
        let off = RestartPolicy(restart: .always, configuration: unlimited)
        var h = RestartPolicy.History()
        for t in 0..<100 { #expect(off.mayStart(at: Double(t) * 0.01, history: &h) == .allowed) }
    }
}
