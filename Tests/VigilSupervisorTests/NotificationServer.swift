import Foundation
import VigilTestSupport

/// VigilTestSupport's `Fixtures/notification_server.py` on a test bus: owns org.freedesktop.Notifications and
/// records every call as a JSON line.
final class NotificationServer: @unchecked Sendable {
    let log: String
    /// A ``ChildProcess``, not Foundation's `Process` (which leaks a weak-reference side table
    /// per run under LeakSanitizer).
    private let process: ChildProcess

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static var script: String { RuntimeFixtures.fixtureScript("notification_server.py") }

    /// Starts the server on `bus` advertising `capabilities`; returns once it owns its name.
    static func start(bus: DBusDaemon, log: String, capabilities: [String]) async throws -> NotificationServer {
        let ready = log + ".ready"
        let process = try ChildProcess(
            "/usr/bin/python3", [script, log] + capabilities,
            environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address, "PATH": "/usr/bin:/bin"], stdout: ready)
        let started = await RuntimeFixtures.waitUntil(timeout: 30) {
            (try? TextFile.read(ready))?.hasPrefix("ready") == true || !process.isRunning
        }
        guard started, (try? TextFile.read(ready))?.hasPrefix("ready") == true else {
            process.signal(SIGKILL)
            process.wait()
            throw Failure(description: "the notification server did not start (needs python3-dbus, python3-gi)")
        }
        return NotificationServer(log: log, process: process)
    }

    private init(log: String, process: ChildProcess) {
        self.log = log
        self.process = process
    }

    /// The calls recorded so far.
    var calls: [[String: Any]] {
        guard let text = try? TextFile.read(log) else { return [] }
        return text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    func calls(_ name: String) -> [[String: Any]] { calls.filter { $0["call"] as? String == name } }

    func stop() {
        process.signal(SIGKILL)
        process.wait()
    }

    deinit { stop() }
}
