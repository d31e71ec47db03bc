import Foundation

/// A private PipeWire graph for integration tests: `pipewire`, the `wireplumber` session manager
/// and `pipewire-pulse` (PulseAudio's protocol), on a private D-Bus session bus and in their own
/// runtime directory, with a 48 kHz stereo null sink made the default.
///
/// Like ``PulseAudioServer``, it changes nothing in the test process's environment. Use
/// ``with(_:)``, which always stops every process and removes the directory.
public final class PipeWireServer: SoundServerFixture, @unchecked Sendable {
    public let directory: URL
    public let sinkName = "vigil_pw_null"
    private let bus: DBusDaemon
    private let lock = NSLock()
    private var processes: [ChildProcess] = []

    /// The client environment plus the private session bus and PipeWire's runtime directory.
    public var environment: [String: String] {
        var env = clientEnvironment
        env["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        env["PIPEWIRE_RUNTIME_DIR"] = directory.path
        return env
    }

    private init() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "vigil-pw-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(
            at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        directory = dir
        bus = try DBusDaemon()
    }

    /// Runs `body` with a started graph, then stops it and removes its directory.
    public static func with<T>(_ body: (PipeWireServer) async throws -> T) async throws -> T {
        let server = try PipeWireServer()
        defer { server.shutDown() }
        try await server.start()
        return try await body(server)
    }

    /// Like ``with(_:)``, with a fresh ``TestDirectory`` labelled `directory` for the test's own
    /// files, removed afterwards too.
    public static func with<T>(
        directory label: String, _ body: (PipeWireServer, TestDirectory) async throws -> T
    ) async throws -> T {
        try await with { server in try await RuntimeFixtures.withTempDirectory(label) { try await body(server, $0) } }
    }

    private func launch(_ path: String, log: String) throws {
        let logPath = directory.appendingPathComponent(log).path
        let process = try ChildProcess(path, [], environment: environment, stdout: logPath, stderr: logPath)
        lock.withLock { processes.append(process) }
    }

    private func waitUntil(_ what: String, timeout: Double, _ condition: () -> Bool) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        let logs = ["pipewire.log", "wireplumber.log", "pipewire-pulse.log"].map { name in
            "\(name):\n" + ((try? TextFile.read(directory.appendingPathComponent(name).path)) ?? "")
        }
        throw FixtureError("PipeWire: \(what) within \(timeout) s; logs:\n" + logs.joined(separator: "\n"))
    }

    private func start() async throws {
        try launch("/usr/bin/pipewire", log: "pipewire.log")
        try await waitUntil("no pipewire-0 socket", timeout: 10) {
            FileManager.default.fileExists(atPath: directory.appendingPathComponent("pipewire-0").path)
        }
        try launch("/usr/bin/wireplumber", log: "wireplumber.log")
        try launch("/usr/bin/pipewire-pulse", log: "pipewire-pulse.log")
        try await waitUntil("pipewire-pulse did not answer", timeout: 10) { (try? pactl(["info"])) != nil }
        try pactl([
            "load-module", "module-null-sink", "sink_name=\(sinkName)", "object.linger=1", "media.class=Audio/Sink",
            "rate=48000", "channels=2",
        ])
        try await waitUntil("the null sink did not appear", timeout: 10) { (try? sinkState()) != nil }
        // pipewire-pulse answers "Not supported" until wireplumber has published its `default`
        // metadata object, which can come after the sink under load: wait for it to take.
        try await waitUntil("the null sink could not be made the default", timeout: 10) {
            (try? pactl(["set-default-sink", sinkName])) != nil
        }
    }

    /// Stops every process (SIGKILL) and the bus, and removes the directory.
    public func shutDown() {
        let all = lock.withLock { () -> [ChildProcess] in
            defer { processes = [] }
            return processes
        }
        for process in all.reversed() {
            process.signal(SIGKILL)
            process.wait()
        }
        bus.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}
