import Glibc

/// A TCP socket listening on 127.0.0.1 at a port the kernel picks (connections complete in the
/// backlog; nothing is accepted).
public struct LoopbackListener {
    public let descriptor: Int32
    public let port: UInt16

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(0x7f00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard fd >= 0, bound == 0, listen(fd, 16) == 0, named == 0 else {
            let reason = String(cString: strerror(errno))
            if fd >= 0 { _ = Glibc.close(fd) }
            throw RuntimeFixtures.Failure("cannot listen on 127.0.0.1: \(reason)")
        }
        descriptor = fd
        port = UInt16(bigEndian: address.sin_port)
    }

    public func close() { _ = Glibc.close(descriptor) }
}
