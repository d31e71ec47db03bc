import Foundation
import Testing
import VigilTestSupport

/// Fifty sound-server restarts in a row must leave no leaked descriptors or threads and stable
/// memory. Runs the plugin in its own process (the `SilentEngineBench` host) so the counts are
/// not disturbed by other tests running in parallel in the test process.
@Suite("Restart leaks", .serialized)
struct RestartLeakTests {
    struct Usage: CustomStringConvertible {
        var fds: Int
        var threads: Int
        var rssKilobytes: Int
        var description: String { "\(fds) fds, \(threads) threads, \(rssKilobytes) kB RSS" }

        init(pid: Int32) {
            fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
            // Threads the host owns. libdispatch's pool workers (named "…qos…") start and exit on
            // their own schedule, so they are not counted: a leak would be ours or libpulse's.
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
            threads =
                tasks.isEmpty
                ? -1
                : tasks.filter { tid in
                    let name = (try? TextFile.read("/proc/\(pid)/task/\(tid)/comm")) ?? ""
                    return !name.contains("qos")
                }.count
            rssKilobytes = -1
            if let status = try? TextFile.read("/proc/\(pid)/status") {
                for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
                    rssKilobytes = Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" })[1]) ?? -1
                }
            }
        }
    }

    /// The bench host built next to the test bundle (`swift build --build-tests` builds it).
    static var benchHost: URL {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        return URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("SilentEngineBench")
    }

    /// The bench host, or a failed requirement saying how to build it.
    static func requireBenchHost() throws -> URL {
        let host = benchHost
        try #require(
            FileManager.default.isExecutableFile(atPath: host.path),
            "build the bench host first: swift build --build-tests (looked at \(host.path))")
        return host
    }

    static func lines(_ path: String) -> [String] {
        ((try? TextFile.read(path)) ?? "").split(separator: "\n").map(String.init)
    }

    @Test("50 server restarts: every one interrupted and resumed, no fd/thread leak, stable memory")
    func fiftyRestarts() async throws {
        let host = try Self.requireBenchHost()
        try await PulseAudioServer.with { server in
            let output = server.directory.appendingPathComponent("host.out").path
            let child = try ChildProcess(
                host.path, ["pulse_server=\(server.address)", "retry_initial_ms=50", "retry_max_ms=400"],
                stdout: output, stderr: "/dev/null")
            defer {
                child.signal(SIGKILL)
                child.wait()
            }
            var waited = 0
            while !Self.lines(output).contains("ready") && waited < 100 {
                try await Task.sleep(nanoseconds: 50_000_000)
                waited += 1
            }
            try #require(Self.lines(output).contains("ready"), "host output: \(Self.lines(output))")

            var baseline: Usage?
            for cycle in 1...50 {
                try await server.restart()
                let running = await server.waitForSink(state: "RUNNING", timeout: 3)
                #expect(running, "cycle \(cycle): sink not RUNNING again")
                if !running { break }
                var resumed = 0
                for _ in 0..<60 {
                    resumed = Self.lines(output).filter { $0 == "event resumed" }.count
                    if resumed >= cycle { break }
                    try await Task.sleep(nanoseconds: 50_000_000)
                }
                #expect(resumed == cycle, "cycle \(cycle): \(resumed) resumes")
                if cycle == 5 {
                    try await Task.sleep(nanoseconds: 300_000_000)
                    baseline = Usage(pid: child.pid)
                }
            }
            try await Task.sleep(nanoseconds: 300_000_000)
            let final = Usage(pid: child.pid)
            let start = try #require(baseline)
            #expect(final.fds == start.fds, "after 5 restarts: \(start); after 50: \(final)")
            #expect(final.threads == start.threads, "after 5 restarts: \(start); after 50: \(final)")
            #expect(final.rssKilobytes - start.rssKilobytes < 1024, "after 5 restarts: \(start); after 50: \(final)")
            let interrupted = Self.lines(output).filter { $0.hasPrefix("event interrupted") }.count
            #expect(interrupted == 50)
            child.signal(SIGTERM)
            _ = await blockingCall { child.wait() }
            #expect(Self.lines(output).last == "stopped")
        }
    }
}
