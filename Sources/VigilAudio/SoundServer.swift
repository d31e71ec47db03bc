import VigilBase

/// Finds out whether a PulseAudio-compatible sound server (PulseAudio or pipewire-pulse) answers,
/// and tells libpulse where to connect.
///
/// Nothing here reads the process environment: the addresses come from the host's environment
/// (its `HostEnvironment.soundServerAddresses`), and libpulse is always given an explicit server
/// string, so it never falls back to the process's own `PULSE_SERVER` or `XDG_RUNTIME_DIR`.
public enum SoundServer {
    /// The system-wide socket, tried after the addresses a host's environment names.
    public static let systemAddress = "unix:/run/pulse/native"

    /// The server string for libpulse (`pa_context_connect`): `addresses`, then
    /// ``systemAddress``, space-separated (libpulse tries each in turn).
    public static func serverList(_ addresses: [String]) -> String {
        (addresses + [systemAddress]).joined(separator: " ")
    }

    /// True when a sound server accepts connections at one of `addresses` (`unix:PATH` or a
    /// plain path; other forms are assumed reachable and left to libpulse) or at
    /// ``systemAddress``.
    public static func isReachable(addresses: [String]) -> Bool {
        (addresses + [systemAddress]).contains { canConnect(to: $0) }
    }

    private static func canConnect(to server: String) -> Bool {
        var path = server
        if path.hasPrefix("unix:") { path.removeFirst("unix:".count) }
        // Lists (space-separated) and TCP addresses: let libpulse decide when the PCM opens.
        guard path.hasPrefix("/"), !path.contains(" ") else { return true }
        return SocketProbe.connectUnix(path: path)
    }
}
