import Foundation

/// What the tests do with any sound server that speaks PulseAudio's protocol (PulseAudio itself,
/// or pipewire-pulse): query it with `pactl`, wait for sink states, record a sink's monitor and
/// start clients, always through the fixture's own ``environment``.
public protocol SoundServerFixture: Sendable {
    /// The private runtime directory of the server.
    var directory: URL { get }
    /// The null sink the fixture created.
    var sinkName: String { get }
    /// The environment for child processes (`pactl`, `parec`, `aplay`) that talk to this server.
    var environment: [String: String] { get }
}

extension SoundServerFixture {
    /// The server's native socket (`pulse/native` in its runtime directory).
    public var socketPath: String { directory.appendingPathComponent("pulse/native").path }
    /// The server address for libpulse (`PULSE_SERVER`, `PlaybackConfiguration.pulseServer`).
    public var address: String { "unix:" + socketPath }

    /// This process's environment pointed at the server: `PULSE_SERVER`, and the runtime
    /// directory as `XDG_RUNTIME_DIR` and `HOME` (so nothing of the user's is read or written).
    public var clientEnvironment: [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["PULSE_SERVER"] = address
        env["XDG_RUNTIME_DIR"] = directory.path
        env["HOME"] = directory.path
        return env
    }

    /// Runs `pactl ARGS` against this server and returns its standard output.
    @discardableResult
    public func pactl(_ arguments: [String]) throws -> String {
        try ChildProcess.run("/usr/bin/pactl", arguments, environment: environment)
    }

    /// The state (`RUNNING`, `IDLE`, `SUSPENDED`) of `sink` (default: this server's null sink).
    public func sinkState(_ sink: String? = nil) throws -> String? {
        let name = sink ?? sinkName
        for line in try pactl(["list", "short", "sinks"]).split(separator: "\n") {
            let fields = line.split(separator: "\t")
            if fields.count >= 5, fields[1] == name { return String(fields[4]) }
        }
        return nil
    }

    /// Waits up to `timeout` seconds for `sink` to reach `state`; returns whether it did.
    public func waitForSink(_ sink: String? = nil, state: String, timeout: Double) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            if (try? sinkState(sink)) == state { return true }
            try? await Task.sleep(nanoseconds: 50_000_000)
        } while Date() < deadline
        return false
    }

    /// The output of `pactl list sink-inputs`.
    public func sinkInputs() throws -> String { try pactl(["list", "sink-inputs"]) }

    /// Records `seconds` of `sink`'s monitor (default: the null sink) with `parec` as 48 kHz
    /// stereo S16_LE and returns the interleaved samples, timed from the recording's first bytes.
    public func captureMonitor(of sink: String? = nil, seconds: Double) async throws -> [Int16] {
        let recording = try await startRecording(of: sink)
        try await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
        return try await recording.finish()
    }

    /// Starts recording `sink`'s monitor (default: the null sink) and returns once the first
    /// bytes have arrived (on a loaded machine `parec` may take a while to connect); throws if
    /// none arrive within 5 s. ``MonitorRecording/finish()`` ends it and returns the samples.
    public func startRecording(of sink: String? = nil) async throws -> MonitorRecording {
        let file = directory.appendingPathComponent("capture-\(UUID().uuidString.prefix(6)).raw")
        let process = try ChildProcess(
            "/usr/bin/parec",
            [
                "--latency-msec=20", "-d", "\(sink ?? sinkName).monitor", "--raw", "--format=s16le", "--rate=48000",
                "--channels=2",
            ],
            environment: environment, stdout: file.path)
        let recording = MonitorRecording(process: process, file: file)
        let started = Date()
        while ((try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0) == 0 {
            guard Date().timeIntervalSince(started) < 5, process.isRunning else {
                _ = try? await recording.finish()
                throw FixtureError("parec recorded nothing from \(sink ?? sinkName).monitor within 5 s")
            }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        return recording
    }

    /// Starts a client process (for example `aplay -D pulse …`) that talks to this server.
    public func launch(_ executable: String, _ arguments: [String]) throws -> ChildProcess {
        try ChildProcess(executable, arguments, environment: environment)
    }
}

/// A running `parec` recording of a sink's monitor (see ``SoundServerFixture/startRecording(of:)``).
public final class MonitorRecording: Sendable {
    private let process: ChildProcess
    private let file: URL

    init(process: ChildProcess, file: URL) {
        self.process = process
        self.file = file
    }

    /// A recording the test did not finish (it threw first) stops here: no `parec` outlives it.
    deinit {
        process.signal(SIGKILL)
        process.wait()
        try? FileManager.default.removeItem(at: file)
    }

    /// Returns once `parec` has recorded `seconds` more of the monitor than it had when called
    /// (48 kHz stereo S16_LE): what the sink played until now has then reached the recording,
    /// however late `parec` runs. Throws if that takes more than `timeout` seconds.
    public func waitForMore(seconds: Double, timeout: Double = 10) async throws {
        func size() -> Int { (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0 }
        let target = size() + Int(seconds * 48_000) * 4
        let deadline = ContinuousClock.now.advanced(by: .seconds(timeout))
        while size() < target {
            guard ContinuousClock.now < deadline, process.isRunning else {
                throw FixtureError("parec recorded \(size()) of \(target) bytes within \(timeout) s")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Stops `parec` with SIGINT (which flushes its buffer) and returns the interleaved samples.
    public func finish() async throws -> [Int16] {
        defer { try? FileManager.default.removeItem(at: file) }
        process.signal(SIGINT)
        _ = await blockingCall { self.process.wait() }
        let data = try Data(contentsOf: file)
        return data.withUnsafeBytes { raw in
            Array(raw.bindMemory(to: Int16.self)).map { Int16(littleEndian: $0) }
        }
    }
}
