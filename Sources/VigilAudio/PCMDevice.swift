internal import CALSA

#if canImport(Glibc)
import Glibc
#endif

/// One open ALSA playback PCM, configured for S16_LE stereo at 48 kHz. Owned by one writer
/// thread; never shared. Closing drops what is queued and releases the device.
final class PCMDevice {
    /// The name the PCM was opened as (for logs and errors).
    let name: String
    /// Frames the device buffers.
    let bufferFrames: Int
    /// Frames per period (the sound server asks for more audio this often).
    let periodFrames: Int
    /// True for the ALSA `null` PCM, whose pointer jumps at once: the writer paces by wall clock.
    let isClockless: Bool

    private var pcm: OpaquePointer?

    private init(name: String, pcm: OpaquePointer, bufferFrames: Int, periodFrames: Int) {
        self.name = name
        self.pcm = pcm
        self.bufferFrames = bufferFrames
        self.periodFrames = periodFrames
        self.isClockless = snd_pcm_type(pcm) == SND_PCM_TYPE_NULL
    }

    deinit { close() }

    /// Opens `device` without waiting for a busy device, configures it and switches it to
    /// blocking I/O.
    ///
    /// The corresponding C functions are `snd_pcm_open` and `snd_pcm_set_params`.
    static func open(device: String, bufferMilliseconds: Int) throws(AudioError) -> PCMDevice {
        var handle: OpaquePointer?
        let openResult = snd_pcm_open(&handle, device, SND_PCM_STREAM_PLAYBACK, SND_PCM_NONBLOCK)
        guard openResult >= 0, let pcm = handle else {
            throw AudioError.alsa(.openFailed, function: "snd_pcm_open", result: openResult, device: device)
        }
        func fail(_ function: String, _ rc: Int32, _ code: AudioError.Code) -> AudioError {
            snd_pcm_close(pcm)
            return AudioError.alsa(code, function: function, result: rc, device: device)
        }
        var rc = snd_pcm_nonblock(pcm, 0)
        if rc < 0 { throw fail("snd_pcm_nonblock", rc, .openFailed) }
        rc = snd_pcm_set_params(
            pcm, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED,
            UInt32(PlaybackConfiguration.channels), UInt32(PlaybackConfiguration.sampleRate),
            1, UInt32(bufferMilliseconds * 1000))
        if rc < 0 { throw fail("snd_pcm_set_params", rc, .configurationRejected) }
        var buffer: snd_pcm_uframes_t = 0
        var period: snd_pcm_uframes_t = 0
        rc = snd_pcm_get_params(pcm, &buffer, &period)
        if rc < 0 { throw fail("snd_pcm_get_params", rc, .configurationRejected) }
        return PCMDevice(name: device, pcm: pcm, bufferFrames: Int(buffer), periodFrames: max(1, Int(period)))
    }

    /// Frames that can be written now, or a negative ALSA error. The corresponding C function is `snd_pcm_avail`.
    func avail() -> Int {
        guard let pcm else { return Int(-EBADFD) }
        return snd_pcm_avail(pcm)
    }

    /// Frames between now and the moment the next written frame is heard, or a negative ALSA
    /// error. Unlike `avail`, the pulse plugin computes it from the server's interpolated clock,
    /// so it does not lag by up to a period. The corresponding C function is `snd_pcm_delay`.
    func delay() -> Int {
        guard let pcm else { return Int(-EBADFD) }
        var frames: snd_pcm_sframes_t = 0
        let rc = snd_pcm_delay(pcm, &frames)
        return rc < 0 ? Int(rc) : frames
    }

    /// Writes `frames` interleaved frames from `samples`; returns frames written or a negative ALSA
    /// error. The corresponding C function is `snd_pcm_writei`.
    func write(_ samples: UnsafeBufferPointer<Int16>, frames: Int) -> Int {
        guard let pcm else { return Int(-EBADFD) }
        return snd_pcm_writei(pcm, samples.baseAddress, snd_pcm_uframes_t(frames))
    }

    /// Starts playback if the PCM is prepared but not yet running. The corresponding C function is `snd_pcm_start`.
    func startIfPrepared() -> Int32 {
        guard let pcm else { return -EBADFD }
        if snd_pcm_state(pcm) == SND_PCM_STATE_PREPARED { return snd_pcm_start(pcm) }
        return 0
    }

    /// The PCM's state. The corresponding C function is `snd_pcm_state`.
    var state: PCMState {
        guard let pcm else { return .closed }
        switch snd_pcm_state(pcm) {
        case SND_PCM_STATE_RUNNING: return .running
        case SND_PCM_STATE_PREPARED: return .prepared
        case SND_PCM_STATE_XRUN: return .xrun
        case SND_PCM_STATE_SUSPENDED: return .suspended
        case SND_PCM_STATE_DISCONNECTED: return .disconnected
        case let other: return .other(Int(other.rawValue))
        }
    }

    /// Recovers from an underrun (`-EPIPE`), a suspend (`-ESTRPIPE`) or `-EINTR`; returns 0 or the
    /// error that remains. The corresponding C function is `snd_pcm_recover`.
    func recover(_ error: Int32) -> Int32 {
        guard let pcm else { return -EBADFD }
        return snd_pcm_recover(pcm, error, 1)
    }

    /// Drops queued audio and closes the PCM; safe to call twice.
    func close() {
        if let pcm {
            snd_pcm_drop(pcm)
            snd_pcm_close(pcm)
            self.pcm = nil
        }
    }
}

/// The state of a ``PCMDevice`` as ALSA reports it.
enum PCMState: Equatable, CustomStringConvertible {
    case running, prepared, xrun, suspended, disconnected, closed
    case other(Int)

    var description: String {
        switch self {
        case .running: "RUNNING"
        case .prepared: "PREPARED"
        case .xrun: "XRUN"
        case .suspended: "SUSPENDED"
        case .disconnected: "DISCONNECTED"
        case .closed: "CLOSED"
        case .other(let raw): "state \(raw)"
        }
    }
}
