import Foundation
import Testing
import VigilBase
import VigilTestSupport

@testable import VigilSupervisorEngine

/// `Supervisor.reconfigure(workers:)` with real processes: a reload's new worker list restarts
/// only the workers whose entry changed.
@Suite("Supervisor: a new worker list while it runs", .timeLimit(.minutes(1)))
struct SupervisorReconfigureTests {
    /// A worker that writes `PID TAG` to `NAME`, then sleeps.
    static func worker(_ dir: TestDirectory, _ name: String, _ tag: String) -> WorkerSpec {
        let file = dir.url(name)
        return .shell(name, "echo \"$$ \(tag)\" > \(file).tmp && mv \(file).tmp \(file) && exec sleep 300")
    }

    /// What worker `name` wrote: its pid and tag.
    static func written(_ dir: TestDirectory, _ name: String) -> (pid: Int32, tag: String)? {
        let parts = ((try? TextFile.read(dir.url(name))) ?? "").split(separator: " ")
        guard parts.count == 2, let pid = Int32(parts[0]) else { return nil }
        return (pid, parts[1].trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// The cgroup v2 path of `pid` (the `0::` line), if it has one.
    static func cgroup(_ pid: Int32) -> String? {
        ((try? TextFile.read("/proc/\(pid)/cgroup")) ?? "").split(separator: "\n")
            .first { $0.hasPrefix("0::") }.map { String($0.dropFirst(3)) }
    }

    /// Where the cgroup v2 file system is mounted (from /proc/self/mountinfo).
    static func cgroupMount() -> String? {
        ((try? TextFile.read("/proc/self/mountinfo")) ?? "").split(separator: "\n").first { $0.contains(" - cgroup2 ") }
            .map { String($0.split(separator: " ")[4]) }
    }

    @Test(
        "a changed worker restarts with its new entry, the unchanged one keeps its process; removed stop, added start")
    func onlyTheChangedWorkersRestart() async throws {
        let dir = try TestDirectory("vigil-sup")
        defer { dir.remove() }
        let events = EventLog()
        let supervisor = try Supervisor.forTests(
            [Self.worker(dir, "a", "v1"), Self.worker(dir, "b", "v1")], runtimeDirectory: dir.path, events: events)
        try await supervisor.start()
        #expect(await eventually { Self.written(dir, "a") != nil && Self.written(dir, "b") != nil })
        let a = try #require(Self.written(dir, "a"))
        let b = try #require(Self.written(dir, "b"))

        // b changes, c is added; a is as it was.
        try await supervisor.reconfigure(workers: [
            Self.worker(dir, "a", "v1"), Self.worker(dir, "b", "v2"), Self.worker(dir, "c", "v1"),
        ])
        #expect(await eventually { Self.written(dir, "b")?.tag == "v2" && Self.written(dir, "c") != nil })
        let b2 = try #require(Self.written(dir, "b"))
        #expect(b2.pid != b.pid, "b runs its new entry in a new process")
        #expect(await eventually { !processIsLive(b.pid) }, "b's old process was stopped")
        #expect(Self.written(dir, "a")?.pid == a.pid && processIsLive(a.pid), "a kept its process")
        #expect(
            events.times(of: "a", where: { if case .started = $0 { true } else { false } }).count == 1,
            "a never restarted")
        #expect(supervisor.workers.map(\.name) == ["a", "b", "c"])
        #expect(await eventually { supervisor.workers.allSatisfy { $0.state == .running } }, "\(supervisor.workers)")
        #expect(supervisor.workers.first { $0.name == "b" }?.restarts == 0, "a new entry starts a fresh history")
        #expect(supervisor.specs.map(\.name) == ["a", "b", "c"])
        let c = try #require(Self.written(dir, "c"))
        // Cgroups here: the added worker has its own, beside the first ones (made after the tree).
        let tree = Self.cgroup(a.pid).flatMap { $0.hasSuffix("/w0") ? String($0.dropLast(3)) : nil }
        if let tree { #expect(Self.cgroup(c.pid) == tree + "/w2", "\(Self.cgroup(c.pid) ?? "none")") }

        // b is removed, d added (into b's free place); a and c run on.
        try await supervisor.reconfigure(workers: [Self.worker(dir, "a", "v1"), Self.worker(dir, "c", "v1")])
        #expect(await eventually { !processIsLive(b2.pid) }, "the removed worker stopped")
        #expect(await eventually { supervisor.workers.map(\.name) == ["a", "c"] }, "\(supervisor.workers)")
        #expect(Self.written(dir, "c")?.pid == c.pid && processIsLive(c.pid))
        try await supervisor.reconfigure(workers: [
            Self.worker(dir, "a", "v1"), Self.worker(dir, "c", "v1"), Self.worker(dir, "d", "v1"),
        ])
        #expect(await eventually { Self.written(dir, "d") != nil })
        #expect(Self.written(dir, "a")?.pid == a.pid && processIsLive(a.pid), "a still runs its first process")

        await supervisor.stop()
        let d = try #require(Self.written(dir, "d"))
        for pid in [a.pid, c.pid, d.pid] { #expect(!processIsLive(pid)) }
        if let tree, let mount = Self.cgroupMount() {
            // The tree went with the stop, the added worker's cgroup too.
            #expect(!FileManager.default.fileExists(atPath: mount + tree), "\(mount + tree) is left")
        }
        // Every notify socket went with its worker or the stop.
        let left = (try? FileManager.default.subpathsOfDirectory(atPath: dir.path))?.filter { $0.hasSuffix(".notify") }
        #expect(left == [], "\(left ?? [])")
    }

    @Test("an invalid list is refused and changes nothing; a stopped supervisor refuses a new list")
    func invalidListRefused() async throws {
        let dir = try TestDirectory("vigil-sup")
        defer { dir.remove() }
        let supervisor = try Supervisor.forTests([Self.worker(dir, "a", "v1")], runtimeDirectory: dir.path)
        try await supervisor.start()
        #expect(await eventually { Self.written(dir, "a") != nil })
        let a = try #require(Self.written(dir, "a"))
        let duplicate = [Self.worker(dir, "x", "v1"), Self.worker(dir, "x", "v2")]
        await #expect(throws: SupervisorError.self) { try await supervisor.reconfigure(workers: duplicate) }
        #expect(supervisor.specs.map(\.name) == ["a"])
        #expect(processIsLive(a.pid) && supervisor.workers.map(\.name) == ["a"])
        await supervisor.stop()
        do {
            try await supervisor.reconfigure(workers: [Self.worker(dir, "b", "v1")])
            Issue.record("a stopped supervisor took a new list")
        } catch let error as SupervisorError {
            #expect(error.code == .alreadyStarted, "\(error)")
        }
        #expect(Self.written(dir, "b") == nil)
    }
}
