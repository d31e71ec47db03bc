public import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A keep-alive playback stream: one ALSA PCM fed from a ``SampleSource`` by a dedicated writer
/// thread that sleeps between refills and reopens the device when it fails.
///
/// The writer fills the device's buffer, sleeps until about half of it is left, and tops
/// it up again, so it never busy-loops and never lets the stream underrun or pause (a paused
/// PulseAudio stream is corked, and a sink with only corked streams suspends). On the clock-less
/// ALSA `null` PCM it paces itself by the wall clock.
///
/// Self-healing: an underrun (`-EPIPE`) or suspend (`-ESTRPIPE`) is recovered in place with
/// `snd_pcm_recover`. Any other failure (`-EIO` when the sound server dies or the sink is removed,
/// `-ENODEV` when a device is unplugged, a failed reopen) closes the PCM, reports
/// ``Event/interrupted(_:)`` and reopens it with exponential backoff, reporting
/// ``Event/resumed`` once it runs again, or ``Event/resumeFailed(_:)`` when the retry budget
/// runs out. A periodic health check confirms the PCM is RUNNING.
///
/// All blocking ALSA calls happen on the writer thread; `start()` and `stop()` only wait for it.
public final class PlaybackStream: Sendable {
    /// Where the stream is in its life.
    public enum State: String, Sendable, Hashable, CustomStringConvertible {
        /// Not started, or stopped.
        case stopped
        /// Opening the device for the first time.
        case starting
        /// Playing.
        case running
        /// The device failed; reopening with backoff.
        case recovering
        /// Gave up after the retry budget ran out; `stop()` then `start()` to try again.
        case failed

        public var description: String { rawValue }
    }

    /// A change the stream reports after `start()` returned.
    public enum Event: Sendable, Hashable {
        /// The stream failed and is being reopened.
        case interrupted(AudioError)
        /// The stream is playing again after an interruption.
        case resumed
        /// The stream gave up reopening; it stays down until restarted.
        case resumeFailed(AudioError)
    }

    /// A snapshot of the stream for status displays and tests.
    public struct Status: Sendable, Hashable {
        /// The current state.
        public var state: State
        /// The device in use (after automatic choice), or `nil` before the first start.
        public var device: String?
        /// Frames the device buffers (0 until opened).
        public var bufferFrames: Int
        /// Frames per period (0 until opened).
        public var periodFrames: Int
        /// Frames written since `start()`.
        public var framesWritten: UInt64
        /// Interruptions (failures that needed a reopen) since `start()`.
        public var interruptions: Int
        /// Underruns and suspends recovered in place since `start()`.
        public var underruns: Int
        /// The last failure, if any.
        public var lastError: AudioError?
        /// The Linux thread id of the writer thread while it runs (for `/proc/self/task/TID`).
        public var writerThreadID: Int32?

        /// The buffer length in milliseconds.
        public var bufferMilliseconds: Int { bufferFrames * 1000 / PlaybackConfiguration.sampleRate }
    }

    private struct Shared {
        var status = Status(
            state: .stopped, device: nil, bufferFrames: 0, periodFrames: 0, framesWritten: 0,
            interruptions: 0, underruns: 0, lastError: nil, writerThreadID: nil)
        var wake: WakePipe?
        var threadRunning = false
        var exitWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let shared = Mutex(Shared())
    private let configuration: PlaybackConfiguration
    private let source: any SampleSource
    private let logger: Logger
    private let onEvent: @Sendable (Event) -> Void

    /// Creates a stream that plays `source` as `configuration` says. Nothing opens until ``start()``.
    ///
    /// - Parameters:
    ///   - onEvent: called on the writer thread for each ``Event``; it must not block.
    public init(
        configuration: PlaybackConfiguration,
        source: some SampleSource,
        logger: Logger,
        onEvent: @escaping @Sendable (Event) -> Void = { _ in }
    ) {
        self.configuration = configuration
        self.source = source
        self.logger = logger
        self.onEvent = onEvent
    }

    /// The stream's current status.
    public var status: Status { shared.withLock { $0.status } }

    /// The device `start()` opens: the configured one, else `pulse` when a PulseAudio server is
    /// configured or a sound server is reachable, else `default`.
    ///
    /// The choice is made once per `start()`: while the server is down for a restart the stream
    /// keeps retrying `pulse` rather than grabbing the hardware through `default`.
    public var resolvedDevice: String {
        if let device = configuration.device { return device }
        if configuration.pulseServer != nil { return "pulse" }
        return SoundServer.isReachable() ? "pulse" : "default"
    }

    /// Opens the device, fills its buffer and returns once it is RUNNING.
    ///
    /// Calling it on a stream that already runs does nothing.
    /// - Throws: ``AudioError`` if the configuration is invalid or the device cannot be opened,
    ///   configured or started; nothing is left open then.
    public func start() async throws(AudioError) {
        try configuration.validate()
        let device = resolvedDevice
        var pipeFDs: [Int32] = [-1, -1]
        guard pipe(&pipeFDs) == 0 else {
            let code = Glibc.errno
            throw AudioError(
                code: .openFailed, errno: code,
                message: "cannot create the writer's wake-up pipe: \(String(cString: strerror(code))) — "
                    + "raise the open-files limit (ulimit -n)")
        }
        for fd in pipeFDs { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let wake = WakePipe(read: pipeFDs[0], write: pipeFDs[1])
        let alreadyRunning = shared.withLock { shared -> Bool in
            if shared.threadRunning { return true }
            shared.threadRunning = true
            shared.wake = wake
            shared.status = Status(
                state: .starting, device: device, bufferFrames: 0, periodFrames: 0, framesWritten: 0,
                interruptions: 0, underruns: 0, lastError: nil, writerThreadID: nil)
            return false
        }
        if alreadyRunning {
            wake.close()
            return
        }
        let result: Result<Void, AudioError> = await withCheckedContinuation { continuation in
            let spawned = WriterThread.spawn {
                self.writerMain(device: device) { continuation.resume(returning: $0) }
            }
            if !spawned {
                self.finishThread(state: .stopped)
                continuation.resume(
                    returning: .failure(
                        AudioError(code: .openFailed, message: "cannot start the audio writer thread — check the process's thread limit")))
            }
        }
        if case .failure(let error) = result {
            await waitForWriterExit()
            throw error
        }
    }

    /// Stops the stream: wakes the writer, drops what is queued, closes the device and returns
    /// once the writer thread has ended. Safe to call when not running and to call twice.
    public func stop() async {
        shared.withLock { shared in
            shared.wake?.signal()
        }
        await waitForWriterExit()
    }

    private func waitForWriterExit() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = shared.withLock { shared -> Bool in
                if !shared.threadRunning { return true }
                shared.exitWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    private func finishThread(state: State) {
        let waiters = shared.withLock { shared -> [CheckedContinuation<Void, Never>] in
            shared.wake?.close()
            shared.wake = nil
            shared.status.state = state
            shared.status.writerThreadID = nil
            shared.threadRunning = false
            defer { shared.exitWaiters = [] }
            return shared.exitWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    // MARK: - Writer thread

    /// Runs on the writer thread until stopped or out of retries.
    private func writerMain(device: String, started: (Result<Void, AudioError>) -> Void) {
        var logger = self.logger
        logger[metadataKey: "audio.device"] = "\(device)"
        let wakeFD = shared.withLock { shared in
            shared.status.writerThreadID = WriterThread.currentID()
            return shared.wake?.read ?? -1
        }
        var writer = Writer(
            stream: self, configuration: configuration, source: source, device: device, wakeFD: wakeFD,
            logger: logger)
        do {
            try writer.open()
        } catch {
            writer.release()
            shared.withLock { $0.status.lastError = error }
            logger.debug("Keep-alive stream did not start", metadata: ["audio.error": "\(error)"])
            finishThread(state: .stopped)
            started(.failure(error))
            return
        }
        update { $0.state = .running }
        started(.success(()))
        let final = writer.run()
        writer.release()
        finishThread(state: final)
    }

    fileprivate func update(_ body: (inout Status) -> Void) {
        shared.withLock { body(&$0.status) }
    }

    fileprivate func report(_ event: Event) {
        onEvent(event)
    }
}

/// The writer thread's private state and loop.
private struct Writer {
    let stream: PlaybackStream
    let configuration: PlaybackConfiguration
    var source: any SampleSource
    let device: String
    let wakeFD: Int32
    let logger: Logger

    var pcm: PCMDevice?
    /// Frames written since the PCM was (re)opened or recovered, and when: the clock of the null PCM.
    var framesSinceStart = 0
    var startedAt: UInt64 = 0
    let chunkFrames = 4800
    let scratch: UnsafeMutableBufferPointer<Int16>

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

    /// Closes the PCM and frees the scratch buffer; call exactly once, when the loop is over.
    mutating func release() {
        pcm?.close()
        pcm = nil
        scratch.deallocate()
    }

    /// Opens the device, fills its buffer and starts it.
    mutating func open() throws(AudioError) {
        let opened = try StreamIdentity.withIdentity(applicationName: configuration.applicationName) {
            () throws(AudioError) -> PCMDevice in
            try PCMDevice.open(
                device: device, pulseServer: configuration.pulseServer,
                bufferMilliseconds: configuration.bufferMilliseconds)
        }
        pcm = opened
        stream.update {
            $0.bufferFrames = opened.bufferFrames
            $0.periodFrames = opened.periodFrames
        }
        if let failure = prime() {
            opened.close()
            pcm = nil
            throw failure
        }
        logger.info(
            "Keep-alive stream running",
            metadata: [
                "audio.buffer_frames": "\(opened.bufferFrames)", "audio.period_frames": "\(opened.periodFrames)",
                "audio.clockless": "\(opened.isClockless)",
            ])
    }

    /// Fills the buffer and starts the PCM; returns the error if that fails.
    mutating func prime() -> AudioError? {
        framesSinceStart = 0
        startedAt = Clock.now()
        if let rc = refill() { return AudioError.alsa(.streamFailed, function: rc.function, result: rc.code, device: device) }
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
    func queuedFrames() -> Result<Int, ALSAFailure> {
        guard let pcm else { return .success(0) }
        if pcm.isClockless {
            let played = Int((Clock.now() - startedAt) * UInt64(PlaybackConfiguration.sampleRate) / 1_000_000_000)
            return .success(max(0, min(pcm.bufferFrames, framesSinceStart - played)))
        }
        let avail = pcm.avail()
        if avail < 0 { return .failure(ALSAFailure(code: Int32(avail), function: "snd_pcm_avail")) }
        return .success(max(0, pcm.bufferFrames - avail))
    }

    /// Frames still to be played before silence: `snd_pcm_delay` on clocked devices (never more
    /// than `queuedFrames`), the wall-clock estimate on the null PCM.
    func playedAheadFrames() -> Result<Int, ALSAFailure> {
        let queued = queuedFrames()
        guard let pcm, !pcm.isClockless, case .success(let fromAvail) = queued else { return queued }
        let delay = pcm.delay()
        if delay < 0 { return .failure(ALSAFailure(code: Int32(delay), function: "snd_pcm_delay")) }
        return .success(max(0, min(delay, fromAvail)))
    }

    /// Tops the buffer up; returns the failed call, if any.
    mutating func refill() -> ALSAFailure? {
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

    /// Sleeps up to `nanoseconds`; returns true if `stop()` woke it.
    func sleep(nanoseconds: UInt64) -> Bool {
        var fds = pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)
        let ms = Int32(min(nanoseconds / 1_000_000 + 1, UInt64(Int32.max)))
        let rc = poll(&fds, 1, ms)
        return rc > 0
    }

    /// The refill loop. Returns the state the stream ends in.
    mutating func run() -> PlaybackStream.State {
        let rate = UInt64(PlaybackConfiguration.sampleRate)
        let healthInterval = UInt64(configuration.healthCheckSeconds) * 1_000_000_000
        var nextHealthCheck = Clock.now() + healthInterval
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
                if let end = heal(failure) { return end }
                continue
            case .success(let queued):
                let above = max(0, queued - pcm.bufferFrames / 2)
                delay = max(10_000_000, UInt64(above) * 1_000_000_000 / rate)
            }
            let now = Clock.now()
            delay = min(delay, nextHealthCheck > now ? nextHealthCheck - now : 0)
            if sleep(nanoseconds: delay) { return .stopped }
            if Clock.now() >= nextHealthCheck {
                nextHealthCheck = Clock.now() + healthInterval
                let state = pcm.state
                if state != .running {
                    logger.warning("Health check: the keep-alive stream is not running", metadata: ["audio.state": "\(state)"])
                    let failure: ALSAFailure
                    switch state {
                    case .xrun: failure = ALSAFailure(code: -EPIPE, function: "snd_pcm_state")
                    case .suspended: failure = ALSAFailure(code: -ESTRPIPE, function: "snd_pcm_state")
                    default: failure = ALSAFailure(code: 0, function: "snd_pcm_state", state: state)
                    }
                    if let end = heal(failure) { return end }
                    continue
                }
            }
            if let failure = refill() {
                if let end = heal(failure) { return end }
            }
        }
    }

    /// Handles a failure: recovers in place or reopens with backoff. Returns the final state if
    /// the loop must end (stopped while retrying, or out of retries), else `nil`.
    mutating func heal(_ initialFailure: ALSAFailure) -> PlaybackStream.State? {
        var failure = initialFailure
        if let pcm, failure.code == -EPIPE || failure.code == -ESTRPIPE || failure.code == -EINTR {
            stream.update { $0.underruns += 1 }
            logger.warning(
                "Keep-alive stream underran or was suspended; recovering",
                metadata: ["audio.error": "\(alsaErrorText(failure.code))"])
            let rc = pcm.recover(failure.code)
            if rc == 0 {
                guard let primeError = prime() else { return nil }
                failure = ALSAFailure(code: -(primeError.errno ?? EIO), function: primeError.function ?? "snd_pcm_start")
            } else {
                // The underrun was a symptom (a dead server shows as one): report what remains.
                failure = ALSAFailure(code: rc, function: "snd_pcm_recover")
            }
        }
        let error: AudioError
        if let state = failure.state {
            error = AudioError(
                code: .notRunning, function: failure.function,
                message: "the health check found the PCM \"\(device)\" \(state), not RUNNING — Vigil reopens it")
        } else {
            error = AudioError.alsa(.streamFailed, function: failure.function, result: failure.code, device: device)
        }
        pcm?.close()
        pcm = nil
        stream.update {
            $0.state = .recovering
            $0.interruptions += 1
            $0.lastError = error
        }
        logger.warning("Keep-alive stream interrupted; reopening", metadata: ["audio.error": "\(error)"])
        stream.report(.interrupted(error))

        var delay = UInt64(configuration.retryInitialMilliseconds) * 1_000_000
        let maxDelay = UInt64(configuration.retryMaxMilliseconds) * 1_000_000
        var attempts = 0
        while true {
            if sleep(nanoseconds: delay) { return .stopped }
            do {
                try open()
                stream.update { $0.state = .running }
                logger.info("Keep-alive stream resumed", metadata: ["audio.attempts": "\(attempts + 1)"])
                stream.report(.resumed)
                return nil
            } catch {
                attempts += 1
                stream.update { $0.lastError = error }
                logger.debug("Reopen failed", metadata: ["audio.error": "\(error)", "audio.attempts": "\(attempts)"])
                if configuration.retryBudget > 0 && attempts >= configuration.retryBudget {
                    let final = AudioError(
                        code: .retryBudgetExhausted, function: error.function, errno: error.errno,
                        message: "gave up reopening \"\(device)\" after \(attempts) attempts (retry budget "
                            + "\(configuration.retryBudget)); last error: \(error.message)")
                    stream.update { $0.lastError = final }
                    logger.error("Keep-alive stream gave up", metadata: ["audio.error": "\(final)"])
                    stream.report(.resumeFailed(final))
                    return .failed
                }
                delay = min(delay * 2, maxDelay)
            }
        }
    }
}

/// The pipe through which `stop()` wakes the sleeping writer.
private struct WakePipe: Sendable {
    let read: Int32
    let write: Int32

    func signal() {
        var byte: UInt8 = 1
        _ = Glibc.write(write, &byte, 1)
    }

    func close() {
        _ = Glibc.close(read)
        _ = Glibc.close(write)
    }
}

/// A failed ALSA call on the writer thread.
struct ALSAFailure: Error {
    var code: Int32
    var function: String
    var state: PCMState? = nil
}

/// The monotonic clock in nanoseconds.
enum Clock {
    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
