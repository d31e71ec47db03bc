import Foundation

/// A private `dbus-daemon --session` in a temporary directory, for tests. Stopped by `stop()`
/// (call it in a `defer`) and, as a fallback, when the value is deinitialised.
public final class DBusDaemon: @unchecked Sendable {
    /// The bus address (`unix:path=…`), for `DBUS_SESSION_BUS_ADDRESS`.
    public let address: String
    /// The temporary directory holding the socket and config.
    public let directory: String
    private let process: Process

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
        let socket = directory + "/bus"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = [
            "--session", "--nofork", "--nopidfile", "--print-address=1", "--address=unix:path=\(socket)",
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw Failure(description: "cannot start dbus-daemon (install the dbus package): \(error)")
        }
        self.process = process
        // The daemon prints its address once it listens.
        let line = Self.readLine(output.fileHandleForReading)
        guard line.hasPrefix("unix:") else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            try? FileManager.default.removeItem(atPath: directory)
            throw Failure(description: "dbus-daemon printed no address")
        }
        address = line
    }

    private static func readLine(_ handle: FileHandle) -> String {
        var bytes: [UInt8] = []
        while true {
            let chunk = handle.readData(ofLength: 1)
            guard let byte = chunk.first, byte != UInt8(ascii: "\n") else { break }
            bytes.append(byte)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Stops the daemon and removes its directory. Idempotent.
    public func stop() {
        // SIGKILL: Foundation's Process passes the spawning thread's signal mask on, and Swift's
        // pool threads block SIGTERM, so the daemon may never see a SIGTERM.
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    deinit { stop() }
}
