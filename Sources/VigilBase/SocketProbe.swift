#if canImport(Glibc)
import Glibc
#endif

/// Whether something answers at a socket: short, non-blocking-in-practice probes (a unix connect
/// completes or fails at once; a TCP connect is bounded by a one-second send timeout). The sound
/// server and the requirement checker both ask through here.
package enum SocketProbe {
    /// True when a stream socket at `path` (an abstract name when `abstract`) accepts a connection.
    package static func connectUnix(path: String, abstract: Bool = false) -> Bool {
        guard
            let probe = try? OwnedDescriptor(
                "socket",
                {
                    socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                })
        else { return false }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        let offset = abstract ? 1 : 0
        guard bytes.count + offset < capacity, !bytes.isEmpty else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.initializeMemory(as: UInt8.self, repeating: 0)
            for (i, b) in bytes.enumerated() { raw[i + offset] = b }
        }
        let length =
            abstract
            ? socklen_t(MemoryLayout<sa_family_t>.size + 1 + bytes.count)
            : socklen_t(MemoryLayout<sockaddr_un>.size)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(probe.rawValue, $0, length) }
        }
        return rc == 0
    }

    /// True when `host`:`port` accepts a TCP connection within a second.
    package static func connectTCP(host: String, port: UInt16) -> Bool {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let first = result else { return false }
        defer { freeaddrinfo(first) }
        var current: UnsafeMutablePointer<addrinfo>? = first
        while let info = current {
            if let probe = try? OwnedDescriptor(
                "socket", { socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), 0) }
            ) {
                var timeout = timeval(tv_sec: 1, tv_usec: 0)
                setsockopt(probe.rawValue, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                if connect(probe.rawValue, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 { return true }
            }
            current = info.pointee.ai_next
        }
        return false
    }
}
