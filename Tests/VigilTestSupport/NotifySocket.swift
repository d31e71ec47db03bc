import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A bound AF_UNIX datagram socket that plays systemd's side of the sd_notify protocol in tests:
/// point a program's `NOTIFY_SOCKET` at ``path`` and read what it sends.
public final class NotifySocket: @unchecked Sendable {
    /// The socket's path, for `NOTIFY_SOCKET`.
    public let path: String
    private let fd: Int32

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Binds a socket at `path` (which must not exist; its directory must).
    public init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw Failure(description: "socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard rc == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw Failure(description: "bind \(path): \(message)")
        }
    }

    /// The next datagram, or `nil` if none arrives within `timeout` seconds.
    public func receive(timeout: Double) -> String? {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(timeout * 1000)) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n >= 0 else { return nil }
        return String(decoding: buffer[0..<n], as: UTF8.self)
    }

    /// The next datagram, waiting on a thread of its own (never blocks the cooperative pool).
    public func next(timeout: Double) async -> String? {
        await blockingCall { self.receive(timeout: timeout) }
    }

    /// Every datagram received (off the cooperative pool) until `timeout` seconds pass with none.
    public func drained(quietFor timeout: Double) async -> [String] {
        await blockingCall { self.drain(quietFor: timeout) }
    }

    /// Every datagram received until `timeout` seconds pass with none.
    public func drain(quietFor timeout: Double) -> [String] {
        var out: [String] = []
        while let message = receive(timeout: timeout) { out.append(message) }
        return out
    }

    /// Sends `message` to the sd_notify socket at `path` from this process (for forged-sender tests).
    public static func send(_ message: String, to path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let sent = message.utf8CString.withUnsafeBufferPointer { text in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, text.baseAddress, text.count - 1, 0, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
        }
        return sent == message.utf8.count
    }

    deinit {
        close(fd)
        unlink(path)
    }
}
