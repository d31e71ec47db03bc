import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// How the stream names itself to the sound server.
///
/// The ALSA pulse plugin takes no stream properties in its configuration: libpulse reads them
/// from the environment when the plugin creates its context, inside `snd_pcm_open`. In
/// PulseAudio 16, `PULSE_PROP_OVERRIDE` replaces what the plugin set (`application.name` =
/// "ALSA plug-in [binary]"), while `PULSE_PROP` and `PULSE_PROP_*` only add missing keys and
/// may carry a `media.role` from the host's environment. So, for the duration of the open
/// only and under a process-wide lock, every `PULSE_PROP*` variable is set aside,
/// `PULSE_PROP_OVERRIDE` carries our `application.name`, and afterwards the host's variables
/// are put back exactly as they were. The stream gets no `media.role`, so role-based corking
/// (`module-role-cork`) leaves it alone.
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

    /// Runs `body` (an `snd_pcm_open`) with the environment set up to name the stream
    /// `applicationName`, then restores the environment.
    static func withIdentity<T>(applicationName: String, _ body: () throws(AudioError) -> T) throws(AudioError) -> T {
        try lock.withLock { _ throws(AudioError) -> T in
            var saved: [(String, String)] = []
            var entry = environ
            while let cString = entry.pointee {
                let pair = String(cString: cString)
                if pair.hasPrefix("PULSE_PROP"), let eq = pair.firstIndex(of: "=") {
                    saved.append((String(pair[..<eq]), String(pair[pair.index(after: eq)...])))
                }
                entry += 1
            }
            for (name, _) in saved { unsetenv(name) }
            setenv("PULSE_PROP_OVERRIDE", overrideValue(applicationName: applicationName), 1)
            defer {
                unsetenv("PULSE_PROP_OVERRIDE")
                for (name, value) in saved { setenv(name, value, 1) }
            }
            return try body()
        }
    }
}
