import Foundation
import Testing
import VigilBase
import VigilTestSupport

@testable import VigilSupervisor
@testable import VigilSupervisorEngine

@Suite("Supervisor: spawning, restarts, backoff, start limit")
struct SupervisorTests {
    @Test("a crash loop backs off exponentially and stops at the start limit (virtual time)")
    func crashLoopBackoffAndStartLimit() async throws {
        let clock = VirtualClock()
        let events = EventLog { clock.seconds }
        // Minutes of backoff, taken in virtual time: the test waits only for the worker to exit.
        let configuration = SupervisorConfiguration(
            backoffInitial: .seconds(10), backoffMax: .seconds(80), stableAfter: .seconds(600),
            startLimitBurst: 6, startLimitInterval: .seconds(3600), stopGrace: .seconds(1))
        let supervisor = try Supervisor.forTests(
            [.shell("crasher", "exit 3", restart: .always)], configuration: configuration, clock: clock,
            events: events)
        try await supervisor.start()
        let crashes = { events.count { if case .crashed = $0 { true } else { false } } }
        let starts = { events.times(of: "crasher") { if case .started = $0 { true } else { false } } }
        // Delays 10, 20, 40, 80 (cap), 80 s: not a millisecond early, and exactly on time.
        for (i, delay) in [10.0, 20, 40, 80, 80].enumerated() {
            #expect(await eventually { crashes() == i + 1 }, "crash \(i + 1) was not seen")
            let crashedAt = clock.seconds
            await clock.advance(by: .seconds(delay) - .milliseconds(1), supervisor)
            #expect(starts().count == i + 1, "restart \(i + 1) came before its \(delay) s backoff")
            #expect(supervisor.workers.first?.state == .backingOff)
            await clock.advance(by: .milliseconds(1), supervisor)
            #expect(starts().count == i + 2, "restart \(i + 1) did not come after its \(delay) s backoff")
            #expect(starts().last == crashedAt + delay)
        }
        // The sixth run crashes too; its restart would be the seventh start within the window.
        #expect(await eventually { crashes() == 6 })
        await clock.advance(by: .seconds(80), supervisor)
        let final = await supervisor.waitUntilSettled()
        await supervisor.stop()

        let worker = try #require(final.first)
        #expect(worker.state == .failed)
        #expect(worker.restarts == 5)
        #expect(worker.lastExit == .exited(3))
        #expect(worker.reason?.contains("start limit hit: 6 starts within 3600 s") == true, "\(worker.reason ?? "")")
        #expect(starts().count == 6)
        #expect(events.count { if case .failed = $0 { true } else { false } } == 1)
    }

    @Test(
        "the start limit gives up only on starts inside its window (virtual time)",
        arguments: [(backoff: 10, givesUpAfter: 2), (backoff: 40, givesUpAfter: nil)] as [(Int64, Int?)])
    func startLimitWindow(backoff: Int64, givesUpAfter: Int?) async throws {
        let clock = VirtualClock()
        // Three starts within a minute: restarts every 10 s fill it by the third start; restarts
        // every 40 s never have more than two starts in any minute, so it runs on.
        let configuration = SupervisorConfiguration(
            backoffInitial: .seconds(backoff), backoffMax: .seconds(backoff), stableAfter: .seconds(600),
            startLimitBurst: 3, startLimitInterval: .seconds(60))
        let supervisor = try Supervisor.forTests(
            [.shell("crasher", "exit 1", restart: .always)], configuration: configuration, clock: clock)
        try await supervisor.start()
        for restart in 1...6 {
            #expect(await eventually { supervisor.workers.first?.state == .backingOff })
            #expect(supervisor.workers.first?.restarts == restart - 1)
            await clock.advance(by: .seconds(backoff), supervisor)
            let worker = try #require(supervisor.workers.first)
            if restart == givesUpAfter.map({ $0 + 1 }) {
                #expect(worker.state == .failed)
                #expect(worker.restarts == restart - 1)
                #expect(worker.reason?.contains("start limit hit: 3 starts within 60 s") == true)
                break
            }
            #expect(worker.state != .failed, "gave up at restart \(restart): \(worker.reason ?? "")")
            #expect(worker.restarts == restart)
        }
        await supervisor.stop()
    }

    @Test("a run longer than stable_after resets the backoff")
    func stableRunResetsBackoff() async throws {
        let events = EventLog()
        let configuration = SupervisorConfiguration(
            backoffInitial: .milliseconds(100), backoffMax: .seconds(5), stableAfter: .milliseconds(150),
            startLimitBurst: 4, startLimitInterval: .seconds(30), stopGrace: .seconds(1))
        let supervisor = try Supervisor.forTests(
            [.shell("slow", "sleep 0.3; exit 1")], configuration: configuration, events: events)
        try await supervisor.start()
        _ = await supervisor.waitUntilSettled()
        await supervisor.stop()
        let delays = events.all.compactMap { entry -> Duration? in
            if case .crashed(_, let delay) = entry.event.kind { delay } else { nil }
        }
        // Each run lasted 0.3 s ≥ stable_after, so every delay is the initial one, not 100/200/400 ms.
        #expect(delays.count == 4)
        #expect(delays.allSatisfy { $0 == .milliseconds(100) }, "delays: \(delays)")
    }

    @Test("restart policies: on-failure stops on a clean exit, never reports the failure, always restarts")
    func restartPolicies() async throws {
        let configuration = SupervisorConfiguration(
            backoffInitial: .milliseconds(10), startLimitBurst: 3, startLimitInterval: .seconds(30))
        let supervisor = try Supervisor.forTests(
            [
                WorkerSpec(name: "clean", command: "true", restart: .onFailure),
                WorkerSpec(name: "fails", command: "false", restart: .never),
                .shell("killed", "kill -SEGV $$", restart: .never),
                WorkerSpec(name: "loops", command: "true", restart: .always),
            ], configuration: configuration)
        try await supervisor.start()
        let final = Dictionary(uniqueKeysWithValues: await supervisor.waitUntilSettled().map { ($0.name, $0) })
        await supervisor.stop()
        #expect(final["clean"]?.state == .stopped)
        #expect(final["clean"]?.restarts == 0)
        #expect(final["fails"]?.state == .failed)
        #expect(final["fails"]?.lastExit?.shellStatus == 1)
        #expect(
            final["killed"]?.lastExit == .signaled(SIGSEGV, coreDumped: false)
                || final["killed"]?.lastExit == .signaled(SIGSEGV, coreDumped: true))
        #expect(final["killed"]?.lastExit?.shellStatus == 128 + SIGSEGV)
        #expect(final["loops"]?.state == .failed)
        #expect(final["loops"]?.restarts == 2)
    }

    @Test("a program that does not exist fails start() with a clear error")
    func missingProgram() async throws {
        let supervisor = try Supervisor.forTests([WorkerSpec(name: "ghost", command: "vigil-no-such-program")])
        let error = await #expect(throws: SupervisorError.self) { try await supervisor.start() }
        #expect(error?.code == .spawnFailed)
        #expect(error?.message.contains("vigil-no-such-program") == true)
        #expect(error?.message.contains("PATH") == true)
    }

    @Test("invalid specs are refused with the worker's name")
    func invalidSpecs() throws {
        #expect(throws: SupervisorError.self) {
            try Supervisor(
                workers: [WorkerSpec(name: "a", command: "x"), WorkerSpec(name: "a", command: "y")],
                environment: [:], logger: testLogger())
        }
        let error = #expect(throws: SupervisorError.self) {
            try Supervisor(
                workers: [WorkerSpec(name: "w", command: "x", oomScoreAdjust: 2000)], environment: [:],
                logger: testLogger())
        }
        #expect(error?.message.contains("oom_score_adj") == true)
    }

    @Test("stop() sends SIGTERM to the whole group, then SIGKILL after the grace period (virtual time)")
    func stopKillsTheGroup() async throws {
        let dir = try TestDirectory("vigil-sup")
        defer { dir.remove() }
        let clock = VirtualClock()
        // The worker ignores SIGTERM and has a child in its process group.
        let script =
            "trap '' TERM; sleep 300 & echo $! > \(dir.url("child")).part; mv \(dir.url("child")).part \(dir.url("child")); wait"
        let supervisor = try Supervisor.forTests(
            [.shell("stubborn", script)], configuration: SupervisorConfiguration(stopGrace: .seconds(120)),
            clock: clock)
        try await supervisor.start()
        #expect(await eventually { FileManager.default.fileExists(atPath: dir.url("child")) })
        let child = try #require(Int32(TextFile.read(dir.url("child")).trimmingCharacters(in: .whitespacesAndNewlines)))
        let worker = try #require(supervisor.workers.first?.pid)
        #expect(processIsLive(child) && processIsLive(worker))
        let stopped = EventRecorder<String>()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                await supervisor.stop()
                stopped.record("stopped")
            }
            #expect(await eventually { supervisor.workers.first?.state == .stopping })
            // A millisecond before the grace ends: SIGTERM was ignored, no SIGKILL yet.
            await clock.advance(by: .seconds(120) - .milliseconds(1), supervisor)
            #expect(processIsLive(worker))
            #expect(stopped.all.isEmpty, "stop returned before the grace period")
            await clock.advance(by: .milliseconds(1), supervisor)
            // The SIGKILL went at the end of the virtual grace: stop returns once the group is reaped,
            // not after 120 real seconds.
            #expect(await eventually(timeout: 60) { !stopped.all.isEmpty }, "stop waited out the grace in real time")
            try await group.waitForAll()
        }
        #expect(!processIsLive(worker))
        // The grandchild (sleep, killed with the group) is gone too, reparented to init meanwhile.
        #expect(await eventually(timeout: 2) { !processIsLive(child) })
        #expect(supervisor.workers.first?.state == .stopped)
        await supervisor.stop()  // idempotent
    }

    @Test("workers get their own process group, environment, directory and oom_score_adj")
    func spawnAttributes() async throws {
        let dir = try TestDirectory("vigil-sup")
        defer { dir.remove() }
        let out = dir.url("out")
        let script = """
            { ps -o pgid= -p $$ | tr -d ' '; echo "$$"; echo "$GREETING"; pwd; cat /proc/self/oom_score_adj; \
            echo "$NOTIFY_SOCKET"; ls /proc/self/fd | wc -l; grep SigBlk /proc/self/status; } > \(out).tmp; mv \(out).tmp \(out); sleep 300
            """
        let supervisor = try Supervisor.forTests(
            [
                WorkerSpec(
                    name: "attrs", command: "/bin/sh", arguments: ["-c", script], environment: ["GREETING": "hello"],
                    workingDirectory: dir.path, oomScoreAdjust: 321)
            ], runtimeDirectory: dir.path)
        try await supervisor.start()
        defer { Task { await supervisor.stop() } }
        #expect(await eventually { FileManager.default.fileExists(atPath: out) })
        let lines = try TextFile.read(out).split(separator: "\n").map(String.init)
        try #require(lines.count == 8)
        #expect(lines[0] == lines[1], "the worker leads its own process group")
        #expect(Int32(lines[1]) == supervisor.workers.first?.pid)
        #expect(lines[2] == "hello")
        #expect(lines[3] == dir.path)
        #expect(lines[4] == "321")
        #expect(lines[5].hasPrefix(dir.path + "/supervisor.") && lines[5].hasSuffix(".notify"))
        // ls's own: 0, 1, 2 and the directory it reads: nothing of ours leaked in.
        #expect(Int(lines[6].trimmingCharacters(in: .whitespaces)) == 4)
        #expect(lines[7].hasSuffix("0000000000000000"), "signal mask: \(lines[7])")
        await supervisor.stop()
    }
}
