import Foundation

/// A private `dbus-daemon --session` in a temporary directory, for tests. Stopped by `stop()`
/// (call it in a `defer`) and, as a fallback, when the value is deinitialised.
public final class DBusDaemon: @unchecked Sendable {
    /// The bus address (`unix:path=…`), for `DBUS_SESSION_BUS_ADDRESS`.
    public let address: String
    /// The temporary directory holding the socket and config.
    public let directory: String
    /// Started with ``ChildProcess`` (posix_spawn), not Foundation's `Process`, whose `run()`
    /// and `waitUntilExit()` leak a weak-reference side table each (LeakSanitizer).
    private var process: ChildProcess

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Starts the daemon and returns once it listens.
    public init() throws {
        var template = Array("/tmp/vigil-dbus.XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw Failure(description: "mkdtemp failed")
        }
        directory = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        do {
            (process, address) = try Self.launch(in: directory)
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    /// Starts a daemon listening at `directory`/bus; returns it and its address once it listens.
    private static func launch(in directory: String) throws -> (ChildProcess, String) {
        let socket = directory + "/bus"
        let printed = directory + "/address"
        try? FileManager.default.removeItem(atPath: printed)
        let process: ChildProcess
        do {
            process = try ChildProcess(
                "/usr/bin/dbus-daemon",
                ["--session", "--nofork", "--nopidfile", "--print-address=1", "--address=unix:path=\(socket)"],
                stdout: printed)
        } catch {
            throw Failure(description: "cannot start dbus-daemon (install the dbus package): \(error)")
        }
        // The daemon prints its address once it listens (a whole line; waited for up to 30 s).
        var line = ""
        let deadline = Date().addingTimeInterval(30)
        while line.isEmpty, Date() < deadline, process.isRunning {
            let text = (try? TextFile.read(printed)) ?? ""
            if let end = text.firstIndex(of: "\n") { line = String(text[..<end]) } else { usleep(10_000) }
        }
        guard line.hasPrefix("unix:") else {
            process.signal(SIGKILL)
            process.wait()
            throw Failure(description: "dbus-daemon printed no address within 30 s")
        }
        return (process, line)
    }

    /// Kills the daemon (every client sees the bus hang up), leaving its directory.
    public func kill() {
        process.signal(SIGKILL)
        process.wait()
        try? FileManager.default.removeItem(atPath: directory + "/bus")
    }

    /// Starts a new daemon at the same address, as after a restart of the session bus (call
    /// ``kill()`` first).
    public func restart() throws {
        (process, _) = try Self.launch(in: directory)
    }

    /// The address without the daemon's guid (`unix:path=…` alone, as a session's
    /// `$XDG_RUNTIME_DIR/bus` is named): it still leads to the bus after ``restart()``, whose
    /// new daemon has a new guid.
    public var socketAddress: String { "unix:path=" + directory + "/bus" }

    /// The PlaybackStatus of the MPRIS player `player` on this bus, read with the real
    /// `playerctl -p PLAYER status`; `nil` when no such player answers.
    public func playerStatus(_ player: String) -> String? {
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = socketAddress
        return (try? ChildProcess.run("/usr/bin/playerctl", ["-p", player, "status"], environment: environment))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Stops the daemon and removes its directory. Idempotent.
    public func stop() {
        // SIGKILL: nothing of the daemon's needs saving, and it ends at once.
        process.signal(SIGKILL)
        process.wait()
        try? FileManager.default.removeItem(atPath: directory)
    }

    deinit { stop() }
}
