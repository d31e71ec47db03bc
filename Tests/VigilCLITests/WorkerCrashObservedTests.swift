import Foundation
import Testing
import VigilTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Issue 30's "done when": `vigil up` as a systemd service with its output in a real
/// systemd-journald (PrivateJournal) and `[metrics]` on; the test kills a supervisor worker with
/// SIGKILL, and reads the restart both from a real Prometheus (scraping `/metrics`) and from the
/// journal's fields. A second worker that exits with a status is the variant (reason `exit`).
@Suite("a crashed worker seen by Prometheus and by the journal", .serialized, .timeLimit(.minutes(1)))
struct WorkerCrashObservedTests {
    static let workerRestarted = "6b0d1c93acfa407f94bf8f9f385d3536"

    @Test("kill -9 of a worker: vigil_worker_restarts_total{reason=\"signal\"} in Prometheus, its entry in the journal")
    func crashSeenByPrometheusAndJournal() async throws {
        let markers = try TestDirectory("vigil-crash-markers")
        defer { markers.remove() }
        let project = try await SupervisorRuntimeTests.project(workers: [
            SupervisorRuntimeTests.sleeper,
            MetricsExportTests.crashOnce("crash-exit", "exit 3", marker: markers.url("exit")),
        ])
        defer { project.dir.remove() }
        let port = try PrometheusServer.freePort()
        let config = try String(contentsOfFile: project.config, encoding: .utf8)
        try (config + "\n[metrics]\nlisten = \"127.0.0.1:\(port)\"\n")
            .write(toFile: project.config, atomically: true, encoding: .utf8)

        let journal = try PrivateJournal(
            running: [VigilExecutable.path, "up", "--config", project.config],
            environment: PrivateJournal.serviceEnvironment(project.environment), in: project.dir)
        let prometheus = try PrometheusServer(targets: ["vigil": "127.0.0.1:\(port)"], in: project.dir)

        // The worker's process, as an operator finds it: `vigil status`.
        let running = try await project.pluginStatus("supervisor") {
            SupervisorRuntimeTests.details($0)["worker.w.state"] as? String == "running"
        }
        let pid = try #require(
            SupervisorRuntimeTests.int(SupervisorRuntimeTests.details(running)["worker.w.pid"]).map { Int32($0) },
            "no running worker w; journald: \(journal.output)")
        #expect(kill(pid, SIGKILL) == 0)

        // (a) Prometheus: one restart for the signal, none for an exit; the other worker's exit.
        let signal = #"vigil_worker_restarts_total{worker="w",reason="signal"}"#
        let seen = try await prometheus.waitForQuery(signal, toBe: ["vigil": 1])
        #expect(seen == ["vigil": 1], "Prometheus: \(prometheus.output)")
        #expect(try await prometheus.query(#"vigil_worker_restarts_total{worker="w",reason="exit"}"#) == ["vigil": 0])
        #expect(
            try await prometheus.query(#"vigil_worker_restarts_total{worker="crash-exit",reason="exit"}"#)
                == ["vigil": 1])
        #expect(try await prometheus.query(#"vigil_worker_last_exit_code{worker="w"}"#) == ["vigil": 137])

        // (b) The journal: one native entry per restart, with its message id and fields.
        let killed = try await journal.waitForEntries(["MESSAGE_ID=\(Self.workerRestarted)", "VIGIL_WORKER_NAME=w"])
        let exited = try await journal.waitForEntries([
            "MESSAGE_ID=\(Self.workerRestarted)", "VIGIL_WORKER_NAME=crash-exit",
        ])
        #expect(await journal.stop() == 0, "\(journal.output)")
        let entry = try #require(killed.first, "no worker-restarted entry for w; journald: \(journal.output)")
        #expect(killed.count == 1, "\(killed)")
        #expect(entry["PRIORITY"] == "4")
        #expect(entry["_TRANSPORT"] == "journal")
        #expect(entry["SYSLOG_IDENTIFIER"] == "fault-test")
        #expect(entry["VIGIL_EVENT"] == "worker-restarted")
        #expect(entry["VIGIL_PLUGIN_NAME"] == "supervisor")
        #expect(entry["VIGIL_WORKER_RESTART_REASON"] == "signal")
        #expect(entry["VIGIL_WORKER_SIGNAL"] == "SIGKILL")
        #expect(entry["VIGIL_WORKER_EXIT_CODE"] == "137")
        #expect(entry["VIGIL_WORKER_EXIT"] == "killed by signal 9 (SIGKILL)")
        #expect(entry["VIGIL_PROCESS_PID"] == "\(pid)")
        #expect(entry["VIGIL_WORKER_RESTART_DELAY_MS"] == "20")
        #expect(entry["MESSAGE"] == "worker w killed by signal 9 (SIGKILL); restarting", "\(entry)")
        #expect(entry["CODE_FILE"] == "VigilSupervisorEngine/SupervisorLoop+Workers.swift")

        let exit = try #require(exited.first, "no worker-restarted entry for crash-exit")
        #expect(exit["VIGIL_WORKER_RESTART_REASON"] == "exit")
        #expect(exit["VIGIL_WORKER_EXIT_CODE"] == "3")
        #expect(exit["VIGIL_WORKER_SIGNAL"] == nil, "\(exit)")
        #expect(exit["MESSAGE"] == "worker crash-exit exited with status 3; restarting")
    }
}
