import Foundation
import VigilTestSupport

/// `Fixtures/notification_server.py` on a test bus: owns org.freedesktop.Notifications and
/// records every call as a JSON line.
final class NotificationServer: @unchecked Sendable {
    let log: String
    private let process: Process

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/notification_server.py").path
    }

    /// Starts the server on `bus` advertising `capabilities`; returns once it owns its name.
    static func start(bus: DBusDaemon, log: String, capabilities: [String]) async throws -> NotificationServer {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [script, log] + capabilities
        process.environment = ["DBUS_SESSION_BUS_ADDRESS": bus.address, "PATH": "/usr/bin:/bin"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let handle = output.fileHandleForReading
        let line = await blockingCall { String(decoding: handle.readData(ofLength: 6), as: UTF8.self) }
        guard line.hasPrefix("ready") else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw Failure(description: "the notification server did not start (needs python3-dbus, python3-gi)")
        }
        return NotificationServer(log: log, process: process)
    }

    private init(log: String, process: Process) {
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
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)  // SIGTERM may be blocked (see DBusDaemon.stop)
            process.waitUntilExit()
        }
    }

    deinit { stop() }
}
