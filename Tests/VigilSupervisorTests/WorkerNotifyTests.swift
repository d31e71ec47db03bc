import Foundation
import Testing
import VigilBase
import VigilTestSupport

@testable import VigilSupervisor
@testable import VigilSupervisorEngine

@Suite("Supervisor: each worker's NOTIFY_SOCKET")
struct WorkerNotifyTests {
    @Test("systemd-notify --ready --status=… as a real worker reaches `ready`")
    func systemdNotifyReady() async throws {
        let dir = try TestDirectory("vigil-sup")
        defer { dir.remove() }
        let done = dir.url("notified")
        // systemd-notify waits for the barrier reply; `touch` shows it returned.
        let script = "systemd-notify --ready --status='warmed up: 3 keys' && touch \(done); exec sleep 300"
        let events = EventLog()
        let supervisor = try Supervisor.forTests([.shell("notifier", script, readiness: .notify)], events: events)
        try await supervisor.start()
        let began = MonotonicClock.seconds()
        #expect(await eventually { supervisor.workers.first?.state == .ready })
        #expect(supervisor.workers.first?.statusText == "warmed up: 3 keys")
        // The barrier (the fd systemd-notify sends along) was answered at once, not after its timeout.
        #expect(await eventually(timeout: 3) { FileManager.default.fileExists(atPath: done) })
        #expect(MonotonicClock.seconds() - began < 3)
        await supervisor.stop()
        #expect(events.count { $0 == .ready } == 1)
    }

    @Test("datagrams from any process of the worker's group or tree count, even a short-lived helper's own PID")
    func helperProcessesAreAccepted() async throws {
        // `--pid=self` makes systemd-notify send from its own PID, a grandchild that exits at once.
        let script = """
            sh -c "systemd-notify --pid=self --status=from-grandchild"; \
            (systemd-notify --pid=self --ready) & wait; exec sleep 300
            """
        let supervisor = try Supervisor.forTests([.shell("tree", script, readiness: .notify)])
        try await supervisor.start()
        #expect(await eventually { supervisor.workers.first?.state == .ready })
        #expect(supervisor.workers.first?.statusText == "from-grandchild")
        await supervisor.stop()
    }

    @Test("a datagram from outside the worker's process tree is rejected")
    func foreignSenderRejected() async throws {
        let dir = try TestDirectory("vigil-sup")
        defer { dir.remove() }
        let go = dir.url("go")
        let script =
            "while [ ! -e \(go) ]; do sleep 0.02; done; systemd-notify --ready --status=genuine; exec sleep 300"
        let supervisor = try Supervisor.forTests(
            [.shell("guarded", script, readiness: .notify)], runtimeDirectory: dir.path)
        try await supervisor.start()
        let socket = try firstWorkerNotifySocket(in: dir.path)
        // The test process is not in the worker's tree: its READY=1 must not count.
        #expect(NotifySocket.send("READY=1\nSTATUS=forged", to: socket))
        // The datagram is queued once send returns; synchronize() returns after the supervisor
        // has read and judged it.
        await supervisor.synchronize()
        #expect(supervisor.workers.first?.state == .starting)
        #expect(supervisor.workers.first?.statusText == nil)
        _ = FileManager.default.createFile(atPath: go, contents: nil)
        #expect(await eventually { supervisor.workers.first?.state == .ready })
        #expect(supervisor.workers.first?.statusText == "genuine")
        await supervisor.stop()
        // The runtime directory and its sockets are gone after stop().
        #expect(!FileManager.default.fileExists(atPath: URL(fileURLWithPath: socket).deletingLastPathComponent().path))
    }

    @Test("a worker that stops its watchdog pings is killed and restarted")
    func watchdogRestart() async throws {
        let dir = try TestDirectory("vigil-sup")
        defer { dir.remove() }
        let envFile = dir.url("env")
        // Pings every 0.3 s for ~1.5 s, then hangs. The second run does the same. The margins are
        // wide so that a loaded machine (the whole suite runs in parallel) does not miss a ping.
        let script = """
            echo "$WATCHDOG_USEC $WATCHDOG_PID $$" >> \(envFile); systemd-notify --ready; \
            for i in 1 2 3 4 5; do systemd-notify WATCHDOG=1; sleep 0.3; done; exec sleep 300
            """
        let events = EventLog()
        let supervisor = try Supervisor.forTests(
            [.shell("pinger", script, readiness: .notify, watchdogSeconds: 1.5)],
            configuration: SupervisorConfiguration(backoffInitial: .milliseconds(20)), events: events)
        try await supervisor.start()
        #expect(
            await eventually(timeout: 10) {
                (supervisor.workers.first?.restarts ?? 0) >= 1 && supervisor.workers.first?.state == .ready
            })
        await supervisor.stop()

        let timeouts = events.times(of: "pinger") { $0 == .watchdogTimeout }
        let starts = events.times(of: "pinger") { $0 == .started }
        try #require(timeouts.count >= 1 && starts.count >= 2)
        // Not killed while it pinged (≥ 1.5 s), and killed within about the 1.5 s watchdog of the last ping.
        let firstRun = timeouts[0] - starts[0]
        #expect(firstRun >= 2.5 && firstRun < 6, "killed after \(firstRun) s")
        let lines = try TextFile.read(envFile).split(separator: "\n")
        let firstPID = try #require(lines.first.flatMap { Int32($0.split(separator: " ")[2]) })
        #expect(!processIsLive(firstPID))
        let crashed = events.all.first { if case .crashed = $0.event.kind { true } else { false } }
        #expect(crashed?.event.worker.lastExit == .signaled(SIGKILL, coreDumped: false))
        // The worker saw WATCHDOG_USEC and a WATCHDOG_PID that is its own pid.
        let first = lines[0].split(separator: " ")
        #expect(first[0] == "1500000")
        #expect(first[1] == first[2])
    }

    @Test("notify payloads: known keys parsed, unknown keys and junk ignored")
    func parsing() {
        let m = NotifyMessage(
            "READY=1\nSTATUS=a=b c\nX_CUSTOM=1\nnonsense\nWATCHDOG=1\nWATCHDOG_USEC=2000000\nSTOPPING=1")
        #expect(m.ready && m.stopping && m.watchdogPing && !m.watchdogTrigger)
        #expect(m.status == "a=b c")
        #expect(m.watchdogUsec == 2_000_000)
        #expect(NotifyMessage("WATCHDOG=trigger").watchdogTrigger)
        #expect(NotifyMessage("READY=0").ready == false)
        #expect(
            ProcessTree.parseStat("42 (a b) c) S 7 42 42 0")
                == ProcessTree.Stat(state: "S", parent: 7, processGroup: 42))
    }
}
