import Foundation

/// A STAND-IN for systemd-logind (logind cannot run in the test machine): `Fixtures/logind_standin.py`
/// on a private "system" bus. It implements `Inhibit` (a real file descriptor: a pipe end it watches
/// for close), `ListInhibitors` and `PrepareForSleep`, and records every step as a JSON line.
public final class LogindStandIn: @unchecked Sendable {
    /// The JSON-lines file the stand-in records its steps in.
    public let log: String
    private let process: ChildProcess

    public static var script: String { RuntimeFixtures.fixtureScript("logind_standin.py") }

    /// Starts the stand-in on `bus`; `pulseServer` is where it counts sink inputs when a lock is
    /// released. Returns once it owns org.freedesktop.login1.
    public static func start(bus: DBusDaemon, directory: String, pulseServer: String?) async throws -> LogindStandIn {
        let log = directory + "/logind-standin.jsonl"
        let ready = directory + "/logind-standin.out"
        var environment = ["DBUS_SYSTEM_BUS_ADDRESS": bus.socketAddress, "PATH": "/usr/bin:/bin"]
        if let pulseServer { environment["PULSE_SERVER"] = pulseServer }
        let process = try ChildProcess(
            "/usr/bin/python3", [script, log], environment: environment, stdout: ready,
            stderr: directory + "/logind-standin.err")
        let started = await RuntimeFixtures.waitUntil(timeout: 20) {
            ((try? TextFile.read(ready)) ?? "").hasPrefix("ready") || !process.isRunning
        }
        guard started, process.isRunning else {
            process.signal(SIGKILL)
            process.wait()
            throw FixtureError("the logind stand-in did not start (needs python3-dbus, python3-gi)")
        }
        return LogindStandIn(log: log, process: process)
    }

    /// Runs `body` with a private system bus and the stand-in on it (`directory` and `pulseServer`
    /// as for ``start(bus:directory:pulseServer:)``); stops both afterwards.
    public static func withSystemBus<T>(
        directory: String, pulseServer: String? = nil, _ body: (DBusDaemon, LogindStandIn) async throws -> T
    ) async throws -> T {
        let bus = try DBusDaemon()
        defer { bus.stop() }
        let logind = try await start(bus: bus, directory: directory, pulseServer: pulseServer)
        defer { logind.stop() }
        return try await body(bus, logind)
    }

    private init(log: String, process: ChildProcess) {
        self.log = log
        self.process = process
    }

    /// The steps recorded so far (`inhibit`, `released`, `prepare-for-sleep`), in order.
    public var steps: [[String: Any]] {
        guard let text = try? TextFile.read(log) else { return [] }
        return text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// The steps of `event` with lock `mode` (any mode when `nil`).
    public func steps(_ event: String, mode: String? = nil) -> [[String: Any]] {
        steps.filter { $0["event"] as? String == event && (mode == nil || $0["mode"] as? String == mode) }
    }

    /// Stops the stand-in (its locks' pipes close with it).
    public func stop() {
        process.signal(SIGKILL)
        process.wait()
    }

    deinit { stop() }
}
