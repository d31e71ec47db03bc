import Foundation
import Testing
import VigilBase
import VigilTestSupport

@testable import VigilSupervisorEngine

/// A worker whose process is stopped (SIGSTOP, SIGTSTP) when the supervisor stops: the stop
/// signal is followed by SIGCONT, as systemd does, so its handler runs instead of the SIGKILL
/// after the grace.
@Suite("A stopped worker is continued after the stop signal")
struct StoppedWorkerTests {
    /// A worker whose TERM trap writes `trapped` to `file` and exits 0; `sh` waits in short
    /// sleeps, so the trap runs as soon as the shell is scheduled.
    static func trapping(_ file: String) -> WorkerSpec {
        .shell("trap", "trap 'echo trapped > \(file); exit 0' TERM; while :; do sleep 0.1; done")
    }

    @Test(
        "a worker stopped by SIGSTOP or SIGTSTP exits through its TERM trap on stop, not by SIGKILL after the grace",
        arguments: [SIGSTOP, SIGTSTP])
    func stoppedWorkerRunsItsTrap(stopSignal: Int32) async throws {
        let dir = try TestDirectory("vigil-stopped")
        defer { dir.remove() }
        let file = dir.url("trapped")
        let grace = 20.0
        let supervisor = try Supervisor.forTests(
            [Self.trapping(file)],
            configuration: SupervisorConfiguration(stopGrace: .milliseconds(Int64(grace * 1000))))
        try await supervisor.start()
        let pid = try #require(supervisor.workers.first?.pid)
        // The trap is set once the shell runs its loop (a child `sleep` exists).
        #expect(await eventually { Self.hasChild(pid) })
        kill(pid, stopSignal)
        #expect(await eventually { ProcessTree.stat(of: pid)?.state == "T" }, "the worker did not stop")

        let started = MonotonicClock.seconds()
        await supervisor.stop()
        let took = MonotonicClock.seconds() - started
        let final = try #require(supervisor.workers.first)
        #expect(final.lastExit == .exited(0), "\(String(describing: final.lastExit)) after \(took) s")
        #expect(((try? TextFile.read(file)) ?? "").contains("trapped"), "the TERM trap did not run")
        // Far from the grace: the SIGKILL at its end was not needed.
        #expect(took < grace / 2, "stop took \(took) s")
    }

    @Test("a stopped worker without a handler dies of the stop signal itself, at once")
    func stoppedWorkerWithoutHandler() async throws {
        let grace = 20.0
        let supervisor = try Supervisor.forTests(
            [WorkerSpec(name: "sleeper", command: "/bin/sleep", arguments: ["300"])],
            configuration: SupervisorConfiguration(stopGrace: .milliseconds(Int64(grace * 1000))))
        try await supervisor.start()
        let pid = try #require(supervisor.workers.first?.pid)
        kill(pid, SIGSTOP)
        #expect(await eventually { ProcessTree.stat(of: pid)?.state == "T" })
        let started = MonotonicClock.seconds()
        await supervisor.stop()
        let took = MonotonicClock.seconds() - started
        let final = try #require(supervisor.workers.first)
        #expect(final.lastExit == .signaled(SIGTERM, coreDumped: false), "\(String(describing: final.lastExit))")
        #expect(took < grace / 2, "stop took \(took) s")
    }

    /// Whether `pid` has a child process.
    static func hasChild(_ pid: Int32) -> Bool {
        let children = (try? TextFile.read("/proc/\(pid)/task/\(pid)/children")) ?? ""
        return !children.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
    }
}
