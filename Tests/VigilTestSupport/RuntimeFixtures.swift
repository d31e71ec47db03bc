import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Fixtures for the host-runtime tests (VigilTests, VigilCLITests): temp dirs, a private D-Bus
/// session bus, bounded waits and bounded child-process runs. The private PulseAudio server is
/// ``PulseAudioServer`` (shared with the audio tests).
///
/// Every wait here has a deadline: a child that does not end is sent SIGTERM, then SIGKILL, and
/// reaped, so a misbehaving server can fail a test but never hang the test process.
public enum RuntimeFixtures {
    /// A fixture failure, with what went wrong.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    /// Runs `body` with a temp directory that is removed afterwards, even when `body` throws.
    public static func withTempDirectory<T>(
        _ prefix: String = "vigil-test", _ body: (TestDirectory) async throws -> T
    ) async throws -> T {
        let dir = try TestDirectory(prefix)
        defer { dir.remove() }
        return try await body(dir)
    }

    /// The path of `name` in `Tests/VigilTestSupport/Fixtures`: the D-Bus service stand-ins
    /// (logind, an MPRIS player, a notification server) and the module they share.
    public static func fixtureScript(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(name)").path
    }

    /// Finds an executable on PATH.
    public static func which(_ name: String) -> String? {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let path = "\(dir)/\(name)"
            if access(path, X_OK) == 0 { return path }
        }
        return nil
    }

    /// Polls `condition` every `interval` until it holds or `timeout` seconds pass on the
    /// monotonic clock (a wall-clock step cannot cut the wait short or stretch it).
    public static func waitUntil(
        timeout: Double, interval: Duration = .milliseconds(50), _ condition: () throws -> Bool
    ) async rethrows -> Bool {
        let deadline = ContinuousClock.now.advanced(by: .seconds(timeout))
        while ContinuousClock.now < deadline {
            if try condition() { return true }
            try? await Task.sleep(for: interval)
        }
        return try condition()
    }

    /// What a bounded run produced.
    public struct Output: Sendable {
        /// The exit code, or 128 + signal number when the child was killed by a signal.
        public let status: Int32
        /// True when the child overran its time limit and was killed.
        public let timedOut: Bool
        public let stdout: String
        public let stderr: String
    }

    /// Runs `executable` to completion with output to temp files (no pipes to deadlock on),
    /// killing it when it overruns `timeout` seconds.
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, timeout: Double = 30
    ) async throws -> Output {
        let base = NSTemporaryDirectory() + "/vigil-run-\(UUID().uuidString.prefix(8))"
        defer {
            unlink(base + ".out")
            unlink(base + ".err")
        }
        let child = try ChildProcess(
            executable, arguments, environment: environment, stdout: base + ".out", stderr: base + ".err")
        let finished = await child.waitForExit(timeout: timeout)
        let status = finished ?? child.terminate(grace: 2)
        return Output(
            status: ChildProcess.exitCode(fromWaitStatus: status), timedOut: finished == nil,
            stdout: (try? TextFile.read(base + ".out")) ?? "",
            stderr: (try? TextFile.read(base + ".err")) ?? "")
    }
}

extension ChildProcess {
    /// Waits up to `timeout` seconds for the child to exit; its wait status, or `nil` when it is
    /// still running.
    public func waitForExit(timeout: Double) async -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while isRunning {
            if Date() >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return wait()  // already reaped by isRunning: returns at once
    }

    /// Ends the child: SIGTERM, then SIGKILL if it is still running after `grace` seconds; reaps
    /// it and returns its wait status. Never blocks longer than `grace` plus the kill.
    @discardableResult
    public func terminate(grace: Double) -> Int32 {
        if !isRunning { return wait() }
        signal(SIGTERM)
        let deadline = Date().addingTimeInterval(grace)
        while isRunning, Date() < deadline { usleep(10_000) }
        if isRunning { signal(SIGKILL) }
        return wait()
    }

    /// The shell-style exit code of a wait status: the exit code, or 128 + the signal number.
    public static func exitCode(fromWaitStatus status: Int32) -> Int32 {
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }
}
