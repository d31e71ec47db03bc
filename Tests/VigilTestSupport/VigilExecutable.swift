import Foundation

/// The built `vigil` binary, run as a child process by CLI tests.
public enum VigilExecutable {
    /// The result of one run.
    public struct Output: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String
    }

    /// The package root (from this file's location: Tests/VigilTestSupport/…).
    public static let packageRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// The path of the built binary: the `vigil` next to the running test bundle (so a sanitized
    /// build in its own scratch directory runs its own sanitized `vigil`), else `.build/debug/vigil`,
    /// else `swift build --show-bin-path`.
    public static let path: String = {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        var directory = URL(fileURLWithPath: exe).deletingLastPathComponent()
        if directory.lastPathComponent.hasSuffix(".xctest") { directory.deleteLastPathComponent() }
        let sibling = directory.appendingPathComponent("vigil").path
        if !exe.isEmpty, FileManager.default.isExecutableFile(atPath: sibling) { return sibling }
        let direct = packageRoot + "/.build/debug/vigil"
        if FileManager.default.isExecutableFile(atPath: direct) { return direct }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swift", "build", "--show-bin-path"]
        process.currentDirectoryURL = URL(fileURLWithPath: packageRoot)
        let pipe = Pipe()
        process.standardOutput = pipe
        try? process.run()
        process.waitUntilExit()
        let out = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return out.trimmingCharacters(in: .whitespacesAndNewlines) + "/vigil"
    }()

    /// The built `vigil-plugin-tool` (the `vigil check` and `vigil plugin trust` Vigil's SwiftPM
    /// plugins run), beside ``path``.
    public static var pluginToolPath: String {
        (path as NSString).deletingLastPathComponent + "/vigil-plugin-tool"
    }

    /// Runs `vigil` with `arguments` in `directory`, with `environment` added to (or, for `nil`
    /// values, removed from) the current environment; stdin is /dev/null unless given.
    public static func run(
        _ arguments: [String], in directory: String, environment: [String: String?] = [:], stdin: String? = nil
    ) async throws -> Output {
        try await run(executable: path, arguments, in: directory, environment: environment, stdin: stdin)
    }

    /// Runs any executable the same way (for interop with the real `minisign`).
    ///
    /// The child is waited for on a dedicated thread, never on a Swift concurrency thread: tests run
    /// in parallel, and parking the cooperative pool would starve code under test that relies on it
    /// (the supervisor's watchdog pings do, by design).
    public static func run(
        executable: String, _ arguments: [String], in directory: String, environment: [String: String?] = [:],
        stdin: String? = nil
    ) async throws -> Output {
        try await blockingCall {
            Result {
                try runBlocking(
                    executable: executable, arguments, in: directory, environment: environment, stdin: stdin)
            }
        }.get()
    }

    /// Runs the child through ``ChildProcess`` (posix_spawn; `env -C` sets its directory), with
    /// output to temporary files: Foundation's `Process` leaks a weak-reference side table per
    /// run (LeakSanitizer), and files cannot fill up and block the child as pipes can.
    private static func runBlocking(
        executable: String, _ arguments: [String], in directory: String, environment: [String: String?],
        stdin: String?
    ) throws -> Output {
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        let files = try TestDirectory("vigil-exec")
        defer { files.remove() }
        let input = try stdin.map { try files.write("stdin", $0) } ?? "/dev/null"
        let child = try ChildProcess(
            "/usr/bin/env", ["-C", directory, "--", executable] + arguments, environment: env,
            stdout: files.url("stdout"), stderr: files.url("stderr"), stdin: input)
        let status = ChildProcess.exitCode(fromWaitStatus: child.wait())
        return Output(
            status: status, stdout: (try? TextFile.read(files.url("stdout"))) ?? "",
            stderr: (try? TextFile.read(files.url("stderr"))) ?? "")
    }
}
