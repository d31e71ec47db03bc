import Foundation

/// A private PulseAudio 16 server for integration tests: its own runtime directory, a null sink
/// (48 kHz stereo, so nothing is resampled) and `module-suspend-on-idle` at a short timeout.
///
/// Nothing in the process environment is changed: clients are pointed at the server explicitly
/// (``address`` for `PlaybackConfiguration.pulseServer`, ``environment`` for child processes),
/// so tests using different servers can run side by side. Use ``with(sink:suspendTimeout:modules:_:)``,
/// which always stops the server and removes its directory, even when the test fails.
public final class PulseAudioServer: SoundServerFixture, @unchecked Sendable {
    /// The private runtime directory (`XDG_RUNTIME_DIR` and `HOME` of the server).
    public let directory: URL
    /// The null sink created at start.
    public let sinkName: String
    /// The `module-suspend-on-idle` timeout in seconds.
    public let suspendTimeout: Int
    /// Further modules loaded at start, each a `-L` argument (`"module-stream-restore"`).
    public let modules: [String]

    private let lock = NSLock()
    private var process: ChildProcess?

    /// The environment for child processes (`pactl`, `parec`, `aplay`) that talk to this server.
    public var environment: [String: String] { clientEnvironment }

    /// The process id of the running server, if any.
    public var pid: Int32? { lock.withLock { process?.pid } }

    /// Creates a server description and its directory; ``start()`` launches it.
    public init(sink: String = "vigil_null", suspendTimeout: Int = 1, modules: [String] = []) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "vigil-pa-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(
            at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        self.directory = dir
        self.sinkName = sink
        self.suspendTimeout = suspendTimeout
        self.modules = modules
    }

    /// Runs `body` with a started server, then stops it and removes its directory.
    public static func with<T>(
        sink: String = "vigil_null", suspendTimeout: Int = 1, modules: [String] = [],
        _ body: (PulseAudioServer) async throws -> T
    ) async throws -> T {
        let server = try PulseAudioServer(sink: sink, suspendTimeout: suspendTimeout, modules: modules)
        defer { server.shutDown() }
        try await server.start()
        return try await body(server)
    }

    /// Like ``with(sink:suspendTimeout:modules:_:)``, with a fresh ``TestDirectory`` labelled
    /// `directory` for the test's own files, removed afterwards too.
    public static func with<T>(
        sink: String = "vigil_null", suspendTimeout: Int = 1, modules: [String] = [], directory label: String,
        _ body: (PulseAudioServer, TestDirectory) async throws -> T
    ) async throws -> T {
        try await with(sink: sink, suspendTimeout: suspendTimeout, modules: modules) { server in
            try await RuntimeFixtures.withTempDirectory(label) { try await body(server, $0) }
        }
    }

    /// Launches `pulseaudio` and waits (up to 10 s) until it accepts connections.
    public func start() async throws {
        let p = try ChildProcess(
            "/usr/bin/pulseaudio",
            [
                "-n", "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=false", "--disallow-exit",
                "-L", "module-native-protocol-unix auth-anonymous=1",
                "-L", "module-null-sink sink_name=\(sinkName) rate=48000 channels=2 format=s16le",
                "-L", "module-suspend-on-idle timeout=\(suspendTimeout)",
            ] + modules.flatMap { ["-L", $0] },
            environment: environment, stdout: logPath, stderr: logPath)
        lock.withLock { process = p }
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if !p.isRunning { break }
            if (try? pactl(["info"])) != nil { return }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        throw FixtureError(
            "pulseaudio did not come up; its log:\n" + ((try? TextFile.read(logPath)) ?? ""))
    }

    private var logPath: String { directory.appendingPathComponent("pulseaudio.log").path }

    /// Kills the server at once (SIGKILL), as a crash would, and waits for it to end.
    public func kill() {
        let p = lock.withLock { () -> ChildProcess? in
            defer { process = nil }
            return process
        }
        guard let p else { return }
        p.signal(SIGKILL)
        p.wait()
    }

    /// Kills the server and starts a new one in the same directory (same socket, fresh null sink).
    public func restart() async throws {
        kill()
        try await start()
    }

    /// Stops the server and removes its directory. Called by ``with(sink:suspendTimeout:modules:_:)``.
    public func shutDown() {
        kill()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// A test fixture could not do its job; the message says what happened.
public struct FixtureError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
