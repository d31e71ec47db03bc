#if canImport(Glibc)
import Glibc
#endif

/// Finds out whether a PulseAudio-compatible sound server (PulseAudio or pipewire-pulse) answers.
public enum SoundServer {
    /// True when a sound server accepts connections: at `server` if given (a `unix:PATH` or a
    /// plain path; other forms are assumed reachable), else at `$PULSE_SERVER`, else at
    /// `$XDG_RUNTIME_DIR/pulse/native` or the system-wide `/run/pulse/native`.
    public static func isReachable(server: String? = nil) -> Bool {
        if let server { return canConnect(to: server) }
        if let env = getenv("PULSE_SERVER"), env.pointee != 0 {
            return canConnect(to: String(cString: env))
        }
        var candidates: [String] = []
        if let runtime = getenv("XDG_RUNTIME_DIR"), runtime.pointee != 0 {
            candidates.append(String(cString: runtime) + "/pulse/native")
        }
        candidates.append("/run/pulse/native")
        return candidates.contains { canConnect(to: $0) }
    }

    private static func canConnect(to server: String) -> Bool {
        var path = server
        if path.hasPrefix("unix:") { path.removeFirst("unix:".count) }
        // Lists (space-separated) and TCP addresses: let libpulse decide when the PCM opens.
        guard path.hasPrefix("/"), !path.contains(" ") else { return true }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return rc == 0
    }
}
