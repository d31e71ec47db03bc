import Foundation

/// A Unix socket that accepts every connection and reads what is sent, but never writes a byte:
/// a hung dbus-daemon (or any server) as a client sees it. Stopped by `stop()` (call it in a
/// `defer`) and, as a fallback, when the value is deinitialised.
public final class SilentSocket: @unchecked Sendable {
    /// The socket's path.
    public let path: String
    /// `unix:path=…`, for `DBUS_SESSION_BUS_ADDRESS` or `DBUS_SYSTEM_BUS_ADDRESS`.
    public var address: String { "unix:path=" + path }

    private let listener: Int32
    private let state = NSLock()
    private var stopped = false
    private var accepted: [Int32] = []
    private var acceptedCount = 0
    private let done = DispatchSemaphore(value: 0)

    /// Listens at `path` (replacing a stale socket there).
    public init(path: String) throws {
        self.path = path
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw FixtureError("socket: errno \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw FixtureError("socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            close(fd)
            throw FixtureError("cannot listen at \(path): errno \(errno)")
        }
        listener = fd
        let thread = Thread { [self] in serve() }
        thread.name = "silent-socket"
        thread.start()
    }

    /// How many connections it accepted so far.
    public var connections: Int {
        state.lock()
        defer { state.unlock() }
        return acceptedCount
    }

    private var isStopped: Bool {
        state.lock()
        defer { state.unlock() }
        return stopped
    }

    /// Accepts and reads (discarding) until stopped; polls every 50 ms for the stop.
    private func serve() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !isStopped {
            state.lock()
            var fds = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
            fds += accepted.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            state.unlock()
            guard poll(&fds, nfds_t(fds.count), 50) > 0 else { continue }
            if fds[0].revents & Int16(POLLIN) != 0 {
                let client = accept(listener, nil, nil)
                if client >= 0 {
                    _ = fcntl(client, F_SETFD, FD_CLOEXEC)
                    state.lock()
                    accepted.append(client)
                    acceptedCount += 1
                    state.unlock()
                }
            }
            for entry in fds.dropFirst() where entry.revents != 0 {
                // Read what the client sent; a client that hung up is closed and forgotten.
                if read(entry.fd, &buffer, buffer.count) <= 0 {
                    state.lock()
                    accepted.removeAll { $0 == entry.fd }
                    state.unlock()
                    close(entry.fd)
                }
            }
        }
        done.signal()
    }

    /// Stops listening, closes every accepted connection and removes the socket. Idempotent.
    public func stop() {
        state.lock()
        let first = !stopped
        stopped = true
        state.unlock()
        guard first else { return }
        done.wait()
        for fd in accepted { close(fd) }
        accepted.removeAll()
        close(listener)
        unlink(path)
    }

    deinit { stop() }
}
