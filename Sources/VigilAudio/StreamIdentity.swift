import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// How the stream names itself to the sound server, and keeps the host's stream properties off it.
///
/// libpulse reads stream properties from the environment (`PULSE_PROP`, `PULSE_PROP_*`,
/// `PULSE_PROP_OVERRIDE`) into its *client* while it connects, and both servers copy the client's
/// properties into each new stream: a host started with `PULSE_PROP=media.role=music` would give
/// the keep-alive a role, and role-based corking (`module-role-cork`) or a role-based routing
/// policy would then act on it. (PulseAudio honours `pa_context_proplist_remove` before the stream
/// exists; pipewire-pulse does not, so removing the key afterwards is not enough.)
///
/// So, for the duration of the connection only and under a process-wide lock, every
/// `PULSE_PROP*` variable is set aside and afterwards put back exactly as it was. A host thread
/// that changes the environment at that very moment races with this, as with any `setenv`.
///
/// The ALSA pulse plugin also takes no stream properties in its configuration, and in PulseAudio
/// 16 `PULSE_PROP_OVERRIDE` is the only variable that replaces what the plugin set
/// (`application.name` = "ALSA plug-in [binary]"): for an ALSA open, it carries our
/// `application.name`. The native backend names the client and the stream itself.
enum StreamIdentity {
    private static let lock = Mutex<Void>(())

    /// The `PULSE_PROP_OVERRIDE` value naming `applicationName` (quoted for `pa_proplist_from_string`).
    static func overrideValue(applicationName: String) -> String {
        var quoted = ""
        for ch in applicationName {
            if ch == "\\" || ch == "\"" { quoted.append("\\") }
            quoted.append(ch)
        }
        return "application.name=\"\(quoted)\""
    }

    /// Runs `body` (an `snd_pcm_open`) with the host's `PULSE_PROP*` variables set aside and
    /// `PULSE_PROP_OVERRIDE` naming `applicationName`, then restores the environment.
    static func withIdentity<T>(applicationName: String, _ body: () throws(AudioError) -> T) throws(AudioError) -> T {
        try withEnvironment(override: overrideValue(applicationName: applicationName), body)
    }

    /// Runs `body` (a libpulse connection) with the host's `PULSE_PROP*` variables set aside,
    /// then restores the environment.
    static func withoutHostProperties<T>(_ body: () throws(AudioError) -> T) throws(AudioError) -> T {
        try withEnvironment(override: nil, body)
    }

    private static func withEnvironment<T>(override: String?, _ body: () throws(AudioError) -> T) throws(AudioError)
        -> T
    {
        try lock.withLock { _ throws(AudioError) -> T in
            var saved: [(String, String)] = []
            // The one place below the CLI that touches the process environment, and only to keep
            // libpulse from reading it: the host's own values never come from here.
            var entry = environ
            while let cString = entry.pointee {
                let pair = String(cString: cString)
                if pair.hasPrefix("PULSE_PROP"), let eq = pair.firstIndex(of: "=") {
                    saved.append((String(pair[..<eq]), String(pair[pair.index(after: eq)...])))
                }
                entry += 1
            }
            for (name, _) in saved { unsetenv(name) }
            if let override { setenv("PULSE_PROP_OVERRIDE", override, 1) }
            defer {
                if override != nil { unsetenv("PULSE_PROP_OVERRIDE") }
                for (name, value) in saved { setenv(name, value, 1) }
            }
            return try body()
        }
    }
}
