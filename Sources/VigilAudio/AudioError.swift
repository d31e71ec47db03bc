internal import CALSA
@_exported public import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// An error from the playback layer: what failed, the ALSA or libpulse function and error
/// behind it (the ``CodedError/cause``, a ``SystemCallError``), and how to fix it.
public typealias AudioError = CodedError<AudioErrorCode>

/// The kind of an ``AudioError``, stable for callers and tests.
public enum AudioErrorCode: String, ErrorCode {
    /// A ``PlaybackConfiguration`` value is out of range.
    case invalidConfiguration = "invalid-configuration"
    /// The output could not be opened (unknown device or sink, no sound server, device busy).
    case openFailed = "open-failed"
    /// The device refused the format, rate, channel count or buffer size.
    case configurationRejected = "configuration-rejected"
    /// A running stream failed in a way only closing and reopening can fix
    /// (sound server gone, sink removed, device unplugged).
    case streamFailed = "stream-failed"
    /// The health check found the PCM in a state other than RUNNING.
    case notRunning = "not-running"
    /// Reopening failed as many times as the retry budget allows.
    case retryBudgetExhausted = "retry-budget-exhausted"
}

extension AudioError {
    /// Creates an error whose cause is `function` failing with `errno`, when a function is named.
    ///
    /// The errno is ALSA's (which ALSA returns negated), or the one a libpulse error corresponds
    /// to (`ECONNREFUSED` when no server answers, `EIO` when the connection or stream was lost,
    /// `ENOENT` for a missing sink, `EACCES`, `ETIMEDOUT`).
    public init(code: AudioErrorCode, function: String?, errno: Int32? = nil, message: String) {
        let cause = function.map { ErrorCause(SystemCallError($0, errno: errno ?? 0)) }
        self.init(code: code, message: message, cause: cause)
    }

    /// The ALSA or libpulse function that failed, for example `snd_pcm_open` or
    /// `pa_context_connect`, if any.
    public var function: String? { cause?.systemCall?.call }

    /// The positive `errno` value behind the failure, if any.
    public var errno: Int32? {
        guard let value = cause?.systemCall?.number, value != 0 else { return nil }
        return value
    }

    /// Wraps a negative ALSA return code `result` from `function`, for `device`.
    ///
    /// The message carries `snd_strerror`'s text and a remedy chosen from the error number.
    static func alsa(_ code: AudioErrorCode, function: String, result: Int32, device: String) -> AudioError {
        let positive = result < 0 ? -result : result
        let text = String(cString: snd_strerror(result))
        let remedy = remedy(for: positive, code: code, device: device)
        return AudioError(
            code: code, function: function, errno: positive,
            message: "\(function) on \"\(device)\" failed: \(text) (errno \(positive)) — \(remedy)")
    }

    private static func remedy(for errno: Int32, code: AudioErrorCode, device: String) -> String {
        switch errno {
        case ENOENT:
            return "no PCM of that name exists: check the `device` setting (`aplay -L` lists the names), "
                + "or start the sound server (PulseAudio or pipewire-pulse) so that `pulse`/`default` exist"
        case ECONNREFUSED:
            return "the sound server is not reachable: start PulseAudio or pipewire-pulse for this user "
                + "(`pactl info` must answer) or choose another `device`"
        case EBUSY:
            return "the device is held exclusively by another program; `hw:` devices do not mix, "
                + "so use `pulse` or `default` to share the output"
        case EIO:
            return "the sound server went away or the stream's sink was removed; check `pactl info` and "
                + "`pactl list short sinks`"
        case ENODEV:
            return "the device was unplugged or disabled; plug it back in or choose another `device`"
        case EINVAL where code == .configurationRejected:
            return "the device does not accept 16-bit stereo at 48 kHz with this buffer size; "
                + "try `pulse` or `default`, which convert, or another `buffer_ms`"
        case EPIPE:
            return "the stream underran and could not be restarted; check the system load"
        case ESTRPIPE:
            return "the device was suspended and could not be resumed"
        default:
            return "check that the device \"\(device)\" works with `aplay -D \(device) /dev/zero`"
        }
    }
}

/// `snd_strerror`'s text for a negative ALSA return code.
func alsaErrorText(_ result: Int32) -> String {
    String(cString: snd_strerror(result))
}
