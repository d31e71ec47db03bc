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

    private static func runBlocking(
        executable: String, _ arguments: [String], in directory: String, environment: [String: String?],
        stdin: String?
    ) throws -> Output {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        process.environment = env
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let input = Pipe()
        if stdin != nil {
            process.standardInput = input
        } else {
            process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        }
        try process.run()
        if let stdin {
            input.fileHandleForWriting.write(Data(stdin.utf8))
            try input.fileHandleForWriting.close()
        }
        // Read both pipes concurrently so a full pipe cannot block the child.
        let errData = LockedData()
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async {
            errData.set(err.fileHandleForReading.readDataToEndOfFile())
            group.leave()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return Output(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData.get(), as: UTF8.self))
    }
}

private final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    func set(_ d: Data) { lock.withLock { data = d } }
    func get() -> Data { lock.withLock { data } }
}
