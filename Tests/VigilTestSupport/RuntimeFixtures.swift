import Foundation

/// Fixtures for the host-runtime tests (VigilTests, VigilCLITests): temp dirs, a private
/// PulseAudio server, a private D-Bus session bus, and the built `vigil` binary.
public enum RuntimeFixtures {
    /// A fixture failure, with what went wrong.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    /// A fresh private directory (0700) removed on `remove()`.
    public final class TempDirectory: Sendable {
        public let path: String

        public init(_ prefix: String = "vigil-test") throws {
            var template = Array((NSTemporaryDirectory() + "/\(prefix)-XXXXXX").utf8CString)
            guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
                throw Failure("mkdtemp failed: \(String(cString: strerror(errno)))")
            }
            path = String(cString: made)
        }

        /// Writes `contents` to `name` under the directory (creating parents) and returns the path.
        @discardableResult
        public func write(_ name: String, _ contents: String, mode: Int = 0o644) throws -> String {
            let file = path + "/" + name
            try FileManager.default.createDirectory(
                atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try contents.write(toFile: file, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: file)
            return file
        }

        public func remove() { try? FileManager.default.removeItem(atPath: path) }
    }

    /// Runs `body` with a temp directory that is removed afterwards, even when `body` throws.
    public static func withTempDirectory<T>(
        _ prefix: String = "vigil-test", _ body: (TempDirectory) async throws -> T
    ) async throws -> T {
        let dir = try TempDirectory(prefix)
        defer { dir.remove() }
        return try await body(dir)
    }

    /// Runs a program to completion and returns its exit status, stdout and stderr.
    public struct Output: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String
    }

    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        directory: String? = nil
    ) throws -> Output {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Drain both pipes concurrently so a chatty child cannot block on a full pipe.
        let errData = LockedData()
        let errThread = Thread { errData.set(err.fileHandleForReading.readDataToEndOfFile()) }
        errThread.start()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        while !errData.isSet { usleep(1000) }
        return Output(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData.value, as: UTF8.self))
    }

    final class LockedData: @unchecked Sendable {
        private let lock = NSLock()
        private var data: Data?
        func set(_ d: Data) { lock.withLock { data = d } }
        var isSet: Bool { lock.withLock { data != nil } }
        var value: Data { lock.withLock { data ?? Data() } }
    }

    /// Finds an executable on PATH.
    public static func which(_ name: String) -> String? {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let path = "\(dir)/\(name)"
            if access(path, X_OK) == 0 { return path }
        }
        return nil
    }

    /// Polls `condition` every 50 ms until it holds or `timeout` seconds pass.
    public static func waitUntil(timeout: Double, _ condition: () throws -> Bool) async rethrows -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try condition() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return try condition()
    }

    /// A private PulseAudio server with a null sink, in its own XDG_RUNTIME_DIR and HOME.
    public final class PulseServer: @unchecked Sendable {
        public let runtimeDirectory: TempDirectory
        public let process: Process
        public var socketPath: String { runtimeDirectory.path + "/pulse/native" }

        /// The environment a client uses to reach this server.
        public var environment: [String: String] {
            var env = ProcessInfo.processInfo.environment
            env["XDG_RUNTIME_DIR"] = runtimeDirectory.path
            env["HOME"] = runtimeDirectory.path
            env["PULSE_SERVER"] = "unix:" + socketPath
            return env
        }

        public init() async throws {
            guard let pulseaudio = RuntimeFixtures.which("pulseaudio") else {
                throw Failure("pulseaudio is not installed — run scripts/install-deps.sh")
            }
            runtimeDirectory = try TempDirectory("vigil-pulse")
            let env: [String: String] = [
                "XDG_RUNTIME_DIR": runtimeDirectory.path, "HOME": runtimeDirectory.path,
                "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
            ]
            process = Process()
            process.executableURL = URL(fileURLWithPath: pulseaudio)
            process.arguments = [
                "--daemonize=no", "--exit-idle-time=-1", "--disallow-exit", "--use-pid-file=no",
                "--system=no", "-n", "--load=module-native-protocol-unix",
                "--load=module-null-sink sink_name=vigil_test", "--log-target=stderr", "--log-level=error",
            ]
            process.environment = env
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let socket = runtimeDirectory.path + "/pulse/native"
            let up = await RuntimeFixtures.waitUntil(timeout: 10) { FileManager.default.fileExists(atPath: socket) }
            if !up {
                stop()
                throw Failure("private PulseAudio server did not create \(socket) within 10 s")
            }
        }

        public func stop() {
            if process.isRunning {
                process.terminate()
                process.waitUntilExit()
            }
            runtimeDirectory.remove()
        }
    }

    /// A private D-Bus session bus (`dbus-daemon --session`) on a socket in a temp dir.
    public final class SessionBus: @unchecked Sendable {
        public let directory: TempDirectory
        public let process: Process
        public let address: String

        public init() async throws {
            guard let daemon = RuntimeFixtures.which("dbus-daemon") else {
                throw Failure("dbus-daemon is not installed — run scripts/install-deps.sh")
            }
            directory = try TempDirectory("vigil-dbus")
            let socket = directory.path + "/bus"
            address = "unix:path=" + socket
            process = Process()
            process.executableURL = URL(fileURLWithPath: daemon)
            process.arguments = ["--session", "--nofork", "--nopidfile", "--address=" + address]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let up = await RuntimeFixtures.waitUntil(timeout: 10) { FileManager.default.fileExists(atPath: socket) }
            if !up {
                stop()
                throw Failure("private dbus-daemon did not create \(socket) within 10 s")
            }
        }

        public func stop() {
            if process.isRunning {
                process.terminate()
                process.waitUntilExit()
            }
            directory.remove()
        }
    }

    /// The package root (found from this file's path).
    public static var packageRoot: String {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }

    /// The built `vigil` binary next to the test bundle (`swift build` puts both in the same directory).
    public static func vigilBinary() throws -> String {
        let candidates = [
            Bundle.main.bundleURL.appendingPathComponent("vigil").path,
            packageRoot + "/.build/debug/vigil",
        ]
        for path in candidates where access(path, X_OK) == 0 { return path }
        throw Failure("the vigil binary is not built (looked at \(candidates.joined(separator: ", "))) — run `swift build`")
    }
}
