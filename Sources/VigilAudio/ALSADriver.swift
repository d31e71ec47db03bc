import Logging
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// Plays through an ALSA PCM: fills the buffer with blocking writes, sleeps until about half of
/// it is left, and tops it up. Recovers underruns and suspends in place; on the clock-less
/// `null` PCM it paces itself by the wall clock.
final class ALSADriver: PlaybackDriver {
    let backend = PlaybackStream.Backend.alsa
    private let stream: PlaybackStream
    private let configuration: PlaybackConfiguration
    private var source: any SampleSource
    private let device: String
    private let wakeFD: Int32
    private let logger: Logger

    private var pcm: PCMDevice?
    /// Frames written since the PCM was (re)opened or recovered, and when: the clock of the null PCM.
    private var framesSinceStart = 0
    private var startedAt: UInt64 = 0
    private let chunkFrames = 4800
    private let scratch: UnsafeMutableBufferPointer<Int16>

    init(
        stream: PlaybackStream, configuration: PlaybackConfiguration, source: any SampleSource, device: String,
        wakeFD: Int32, logger: Logger
    ) {
        self.stream = stream
        self.configuration = configuration
        self.source = source
        self.device = device
        self.wakeFD = wakeFD
        self.logger = logger
        self.scratch = .allocate(capacity: chunkFrames * PlaybackConfiguration.channels)
        scratch.initialize(repeating: 0)
    }

    func release() {
        close()
        scratch.deallocate()
    }

    func close() {
        pcm?.close()
        pcm = nil
    }

    /// Opens the device, fills its buffer and starts it.
    func open() throws(AudioError) {
        let opened = try StreamIdentity.withIdentity(applicationName: configuration.applicationName) {
            () throws(AudioError) -> PCMDevice in
            try PCMDevice.open(device: device, bufferMilliseconds: configuration.bufferMilliseconds)
        }
        pcm = opened
        stream.update {
            $0.bufferFrames = opened.bufferFrames
            $0.periodFrames = opened.periodFrames
        }
        if let failure = prime() {
            close()
            throw failure
        }
        logger.info(
            "Keep-alive stream running",
            metadata: [
                "audio.backend": "alsa", "audio.buffer_frames": "\(opened.bufferFrames)",
                "audio.period_frames": "\(opened.periodFrames)", "audio.clockless": "\(opened.isClockless)",
            ])
    }

    /// Fills the buffer and starts the PCM; returns the error if that fails.
    private func prime() -> AudioError? {
        framesSinceStart = 0
        startedAt = MonotonicClock.nanoseconds()
        if let rc = refill() {
            return AudioError.alsa(.streamFailed, function: rc.function, result: rc.code, device: device)
        }
        guard let pcm else { return nil }
        let rc = pcm.startIfPrepared()
        if rc < 0 { return AudioError.alsa(.streamFailed, function: "snd_pcm_start", result: rc, device: device) }
        let state = pcm.state
        if state != .running {
            return AudioError(
                code: .notRunning, function: "snd_pcm_state",
                message: "the PCM \"\(device)\" is \(state) after its buffer was filled, not RUNNING — "
                    + "check the device with `aplay -D \(device) /dev/zero`")
        }
        return nil
    }

    /// Frames queued in the device, or a failed call.
    private func queuedFrames() -> Result<Int, ALSAFailure> {
        guard let pcm else { return .success(0) }
        if pcm.isClockless {
            let played = Int(
                (MonotonicClock.nanoseconds() - startedAt) * UInt64(PlaybackConfiguration.sampleRate) / 1_000_000_000)
            return .success(max(0, min(pcm.bufferFrames, framesSinceStart - played)))
        }
        let avail = pcm.avail()
        if avail < 0 { return .failure(ALSAFailure(code: Int32(avail), function: "snd_pcm_avail")) }
        return .success(max(0, pcm.bufferFrames - avail))
    }

    /// Frames still to be played before silence: `snd_pcm_delay` on clocked devices (never more
    /// than `queuedFrames`), the wall-clock estimate on the null PCM.
    private func playedAheadFrames() -> Result<Int, ALSAFailure> {
        let queued = queuedFrames()
        guard let pcm, !pcm.isClockless, case .success(let fromAvail) = queued else { return queued }
        let delay = pcm.delay()
        if delay < 0 { return .failure(ALSAFailure(code: Int32(delay), function: "snd_pcm_delay")) }
        return .success(max(0, min(delay, fromAvail)))
    }

    /// Tops the buffer up; returns the failed call, if any.
    private func refill() -> ALSAFailure? {
        guard let pcm else { return nil }
        var free: Int
        switch queuedFrames() {
        case .failure(let failure): return failure
        case .success(let queued): free = pcm.bufferFrames - queued
        }
        var written = 0
        defer {
            if written > 0 { stream.update { $0.framesWritten += UInt64(written) } }
        }
        while free > 0 {
            let frames = min(free, chunkFrames)
            let samples = UnsafeMutableBufferPointer(rebasing: scratch[0..<(frames * PlaybackConfiguration.channels)])
            source.render(into: samples)
            let result = pcm.write(UnsafeBufferPointer(samples), frames: frames)
            if result < 0 { return ALSAFailure(code: Int32(result), function: "snd_pcm_writei") }
            if result == 0 { break }
            written += result
            framesSinceStart += result
            free -= result
        }
        return nil
    }

    /// The refill loop: returns when stopped or on a failure only a reopen can fix.
    func play() -> DriverExit {
        let rate = UInt64(PlaybackConfiguration.sampleRate)
        let healthInterval = UInt64(configuration.healthCheckSeconds) * 1_000_000_000
        var nextHealthCheck = MonotonicClock.nanoseconds() + healthInterval
        while true {
            guard let pcm else { return .stopped }
            // Sleep until about half of the buffer is left (never less than 10 ms: no spinning). Half,
            // not a quarter: the measurement below can lag by up to a period (a quarter of the
            // buffer), and a quarter of a buffer must remain for the writer's own wake-up delay.
            // `avail` lags by up to a period on the pulse plugin (the server asks for audio once a
            // period is free), so the sleep is measured with `snd_pcm_delay`, which does not.
            var delay: UInt64
            switch playedAheadFrames() {
            case .failure(let failure):
                if let error = recoverInPlace(failure) { return .failed(error) }
                continue
            case .success(let queued):
                let above = max(0, queued - pcm.bufferFrames / 2)
                delay = max(10_000_000, UInt64(above) * 1_000_000_000 / rate)
            }
            let now = MonotonicClock.nanoseconds()
            delay = min(delay, nextHealthCheck > now ? nextHealthCheck - now : 0)
            if WakeDescriptor.wait(wakeFD, nanoseconds: delay) { return .stopped }
            if MonotonicClock.nanoseconds() >= nextHealthCheck {
                nextHealthCheck = MonotonicClock.nanoseconds() + healthInterval
                let state = pcm.state
                if state != .running {
                    logger.warning(
                        "Health check: the keep-alive stream is not running", metadata: ["audio.state": "\(state)"])
                    let failure: ALSAFailure
                    switch state {
                    case .xrun: failure = ALSAFailure(code: -EPIPE, function: "snd_pcm_state")
                    case .suspended: failure = ALSAFailure(code: -ESTRPIPE, function: "snd_pcm_state")
                    default: failure = ALSAFailure(code: 0, function: "snd_pcm_state", state: state)
                    }
                    if let error = recoverInPlace(failure) { return .failed(error) }
                    continue
                }
            }
            if let failure = refill() {
                if let error = recoverInPlace(failure) { return .failed(error) }
            }
        }
    }

    /// Recovers an underrun, suspend or interrupted call in place with `snd_pcm_recover` and
    /// restarts the PCM. Returns `nil` when the stream plays again, else the error that needs a reopen.
    private func recoverInPlace(_ initialFailure: ALSAFailure) -> AudioError? {
        var failure = initialFailure
        if let pcm, failure.code == -EPIPE || failure.code == -ESTRPIPE || failure.code == -EINTR {
            stream.underran()
            logger.warning(
                "Keep-alive stream underran or was suspended; recovering",
                metadata: ["audio.error": "\(alsaErrorText(failure.code))"])
            let rc = pcm.recover(failure.code)
            if rc == 0 {
                guard let primeError = prime() else { return nil }
                return primeError
            }
            // The underrun was a symptom (a dead server shows as one): report what remains.
            failure = ALSAFailure(code: rc, function: "snd_pcm_recover")
        }
        if let state = failure.state {
            return AudioError(
                code: .notRunning, function: failure.function,
                message: "the health check found the PCM \"\(device)\" \(state), not RUNNING — Vigil reopens it")
        }
        return AudioError.alsa(.streamFailed, function: failure.function, result: failure.code, device: device)
    }
}

/// A failed ALSA call on the writer thread.
struct ALSAFailure: Error {
    var code: Int32
    var function: String
    var state: PCMState? = nil
}
