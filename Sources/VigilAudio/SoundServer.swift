import VigilBase

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
        return SocketProbe.connectUnix(path: path)
    }
}
