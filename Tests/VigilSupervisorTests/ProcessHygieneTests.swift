import Foundation
import Testing
import VigilBase
import VigilTestSupport

@testable import VigilSupervisor
@testable import VigilSupervisorEngine

/// Runs the built `vigil` binary (next to the test bundle) as a separate host process, so its
/// descriptors and children can be inspected from outside, unaffected by tests running in parallel.
final class VigilProcess: @unchecked Sendable {
    /// A ``ChildProcess``, not Foundation's `Process` (which leaks a weak-reference side table
    /// per run under LeakSanitizer).
    let process: ChildProcess

    static var binary: String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        var directory = URL(fileURLWithPath: exe).deletingLastPathComponent()
        if directory.lastPathComponent.hasSuffix(".xctest") { directory.deleteLastPathComponent() }
        return directory.appendingPathComponent("vigil").path
    }

    /// Starts `vigil ARGUMENTS` with no descriptor but 0–2: what this process holds at that moment
    /// (a PulseAudio client's memfd of a test running in parallel) would otherwise be inherited
    /// and counted as the host's own. bash closes them, then becomes `vigil` (same pid).
    init(_ arguments: [String]) throws {
        let closeInherited =
            #"for fd in /proc/$$/fd/*; do fd=${fd##*/}; [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done; exec "$0" "$@""#
        process = try ChildProcess("/bin/bash", ["-c", closeInherited, Self.binary] + arguments)
    }

    var pid: Int32 { process.pid }

    /// Live (non-zombie) children of the host: its workers (not the cgroup sentinel).
    var children: [Int32] {
        processes { $0.parent == pid && $0.state != "Z" }.filter { !Self.isSentinel($0) }
    }

    /// Whether `pid` is a supervisor's cgroup sentinel (named `vigil-sentinel`).
    static func isSentinel(_ pid: Int32) -> Bool {
        ProcessTree.readSmallFile("/proc/\(pid)/comm")?.hasPrefix("vigil-sentinel") == true
    }
    /// Zombie children of the host.
    var zombies: [Int32] { processes { $0.parent == pid && $0.state == "Z" } }

    private func processes(_ match: (ProcessTree.Stat) -> Bool) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { ProcessTree.stat(of: $0).map(match) ?? false }
    }

    /// The host's open descriptors and what they point at.
    var descriptors: [String] {
        let directory = "/proc/\(pid)/fd"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.sorted().map { name in
            let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\(name)")) ?? "?"
            // Socket and pipe inode numbers differ between processes; keep the kind.
            // and each host's cgroup is named after its pid.
            return target.replacing(/\[\d+\]/, with: "").replacing(
                /vigil-supervisor\.\d+\./, with: "vigil-supervisor.PID.")
        }.sorted()
    }

    func kill9() async {
        process.signal(SIGKILL)
        let process = process
        _ = await blockingCall { process.wait() }
    }

    deinit {
        process.signal(SIGKILL)
        process.wait()
    }
}

@Suite("No orphans, no zombies, no leaked descriptors (the vigil binary as host)")
struct ProcessHygieneTests {
    @Test("SIGKILL of the host leaves no worker behind")
    func hostKilled() async throws {
        let host = try VigilProcess(["run", "--restart", "always", "--", "sleep", "300"])
        #expect(await eventually { host.children.count == 1 })
        let worker = try #require(host.children.first)
        #expect(ProcessTree.stat(of: worker)?.processGroup == worker, "the worker leads its own process group")
        await host.kill9()
        // PR_SET_PDEATHSIG(SIGKILL) takes the worker down with the host.
        #expect(await eventually(timeout: 5) { !processIsLive(worker) })
    }

    @Test("SIGKILL of the host takes every process a worker started: a setsid one and a double-forked one")
    func noOrphansAtAnyDepth() async throws {
        let dir = try TestDirectory("vigil-sup")
        defer { dir.remove() }
        let detached = dir.url("setsid.pid")
        let orphaned = dir.url("double.pid")
        // One grandchild in a session of its own, one whose parent exits at once (re-parented away).
        let script =
            "setsid sleep 300 & echo $! > \(detached); sh -c 'sleep 301 & echo $! > \(orphaned)'; exec sleep 302"
        let host = try VigilProcess(["run", "--", "/bin/sh", "-c", script])
        func pid(_ file: String) -> Int32? {
            Int32(
                ((try? TextFile.read(file)) ?? "").trimmingCharacters(
                    in: .whitespacesAndNewlines))
        }
        #expect(
            await eventually { pid(detached).map(processIsLive) == true && pid(orphaned).map(processIsLive) == true })
        let a = try #require(pid(detached))
        let b = try #require(pid(orphaned))
        let worker = try #require(host.children.first)
        #expect(ProcessTree.stat(of: a)?.processGroup == a, "the setsid grandchild leads its own group")
        #expect(ProcessTree.stat(of: b)?.parent != worker, "the double-forked grandchild was re-parented")
        // Both are in the worker's cgroup, whatever their session or parent.
        let cgroupA = ProcessTree.readSmallFile("/proc/\(a)/cgroup") ?? ""
        #expect(cgroupA.contains("/vigil-supervisor.\(host.pid)."), "\(cgroupA)")
        await host.kill9()
        let killed = MonotonicClock.seconds()
        #expect(await eventually(timeout: 5) { !processIsLive(a) && !processIsLive(b) && !processIsLive(worker) })
        // Within a second of the SIGKILL on an idle machine; the margin is for a loaded one.
        #expect(MonotonicClock.seconds() - killed < 2, "took \(MonotonicClock.seconds() - killed) s")
    }

    @Test("1,000 worker crashes leave no zombie and no leaked descriptor")
    func thousandCrashes() async throws {
        let dir = try TestDirectory("vigil-sup")
        defer { dir.remove() }
        // Reference: the same binary, same code paths, with a worker that never crashed.
        let steady = try VigilProcess(["run", "--restart", "always", "--", "sleep", "300"])
        #expect(await eventually { steady.children.count == 1 })
        try await Task.sleep(for: .milliseconds(200))
        let reference = steady.descriptors
        await steady.kill9()

        let counter = dir.url("starts")
        _ = FileManager.default.createFile(atPath: counter, contents: nil)
        let script = "n=$(wc -l < \(counter)); echo >> \(counter); [ \"$n\" -ge 1000 ] && exec sleep 300; exit 1"
        let host = try VigilProcess([
            "run", "--restart", "on-failure", "--restart-delay-ms", "0", "--max-restart-delay-ms", "0",
            "--start-limit-burst", "0", "--", "/bin/sh", "-c", script,
        ])
        func starts() -> Int {
            ((try? TextFile.read(counter)) ?? "").split(
                separator: "\n", omittingEmptySubsequences: false
            ).count - 1
        }
        let finished = await eventually(timeout: 90) { starts() >= 1001 && host.children.count == 1 }
        #expect(finished, "only \(starts()) starts")
        // The last start's descriptors (its exec-status pipe) are closed once it has run: wait for
        // the host to settle to the reference, which it never does if the crashes leaked any.
        let settled = await eventually { host.descriptors == reference }
        #expect(settled, "after 1,000 crashes: \(host.descriptors) vs \(reference)")
        #expect(starts() == 1001)
        #expect(host.zombies.isEmpty, "zombies: \(host.zombies)")
        #expect(host.children.count == 1)
        await host.kill9()
    }
}
