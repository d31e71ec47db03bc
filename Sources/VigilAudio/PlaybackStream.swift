public import Logging
import Synchronization
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// A keep-alive playback stream fed from a ``SampleSource`` by a dedicated writer thread that
/// sleeps between refills and reopens the output when it fails.
///
/// Two backends, chosen by the device name:
/// - `pulse` and `pulse:SINK` talk to the sound server (PulseAudio or pipewire-pulse) over its
///   native protocol, with a private libpulse main loop on the writer thread. The server asks
///   for audio each time the sink pulls its next block (about every 7/8 of the buffer, at most
///   every 2 s on most sinks); the writer sleeps in between. A silent source is sent as gaps, which the server
///   plays as silence without copying a sample.
/// - Every other name (`default`, `hw:…`, `plughw:…`, `dmix`, `null`, your own PCMs) is an
///   ALSA PCM, filled with blocking writes and topped up when about half of it is left; on the
///   clock-less `null` PCM the writer paces itself by the wall clock.
///
/// Neither ever pauses or corks the stream (a sink with only corked streams suspends).
///
/// Self-healing: an ALSA underrun (`-EPIPE`) or suspend (`-ESTRPIPE`) is recovered in place with
/// `snd_pcm_recover`, and a PulseAudio underflow refills by itself. Any other failure (the sound
/// server died, the sink was removed, the device was unplugged, a reopen failed) closes the
/// output, reports ``Event/interrupted(_:)`` and reopens it with exponential backoff, reporting
/// ``Event/resumed`` once it plays again, or ``Event/resumeFailed(_:)`` when the retry budget
/// runs out. A periodic health check confirms the stream is really playing.
///
/// All blocking calls happen on the writer thread; `start()` and `stop()` only wait for it.
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

    /// How the stream reaches the output.
    public enum Backend: String, Sendable, Hashable, CustomStringConvertible {
        /// The sound server's native protocol (libpulse): devices `pulse` and `pulse:SINK`.
        case pulseAudio = "pulseaudio"
        /// An ALSA PCM: every other device name.
        case alsa

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

    /// What a stream counts without a change of its state, for metrics.
    public enum Observation: Sendable, Hashable {
        /// The stream underran (the server or the device ran out of audio) and is refilled in place.
        case underrun
        /// Another program suspended the stream's sink; ``Event/interrupted(_:)`` follows, and
        /// ``Event/resumed`` once the sink runs again.
        case sinkSuspended
    }

    /// A snapshot of the stream for status displays and tests.
    public struct Status: Sendable, Hashable {
        /// The current state.
        public var state: State
        /// The device in use (after automatic choice), or `nil` before the first start.
        public var device: String?
        /// The backend serving ``device``, or `nil` before the first start.
        public var backend: Backend?
        /// Frames the device buffers (0 until opened).
        public var bufferFrames: Int
        /// Frames per period (0 until opened): an ALSA period, or the server's minimum request.
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
        /// Health checks that asked the sound server for the stream's timing since `start()`
        /// (native backend): none while the server keeps requesting audio.
        var healthCheckRoundTrips = 0

        /// The buffer length in milliseconds.
        public var bufferMilliseconds: Int { bufferFrames * 1000 / PlaybackConfiguration.sampleRate }
    }

    private struct Shared: ~Copyable {
        var status = Status(
            state: .stopped, device: nil, backend: nil, bufferFrames: 0, periodFrames: 0, framesWritten: 0,
            interruptions: 0, underruns: 0, lastError: nil, writerThreadID: nil)
        /// How `stop()` wakes the writer (it stays signalled; PulseDriver and ALSADriver watch it).
        var wake: WakeDescriptor?
        var threadRunning = false
        var exitWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let shared = Mutex(Shared())
    private let configuration: PlaybackConfiguration
    private let source: any SampleSource
    private let logger: Logger
    private let onEvent: @Sendable (Event) -> Void
    private let onServerRequest: @Sendable (ServerRequest) -> Void
    private let onObservation: @Sendable (Observation) -> Void

    /// Creates a stream that plays `source` as `configuration` says. Nothing opens until ``start()``.
    ///
    /// - Parameters:
    ///   - onEvent: called on the writer thread for each ``Event``; it must not block.
    ///   - onServerRequest: called on the writer thread for each ``ServerRequest`` the sound
    ///     server sends (native backend only); it must not block. The stream itself ignores them.
    ///   - onObservation: called on the writer thread for each ``Observation``; it must not block.
    public init(
        configuration: PlaybackConfiguration,
        source: some SampleSource,
        logger: Logger,
        onEvent: @escaping @Sendable (Event) -> Void = { _ in },
        onServerRequest: @escaping @Sendable (ServerRequest) -> Void = { _ in },
        onObservation: @escaping @Sendable (Observation) -> Void = { _ in }
    ) {
        self.configuration = configuration
        self.source = source
        self.logger = logger
        self.onEvent = onEvent
        self.onServerRequest = onServerRequest
        self.onObservation = onObservation
    }

    /// The stream's current status.
    public var status: Status { shared.withLock { $0.status } }

    /// The device `start()` opens: the configured one, else `pulse` when a PulseAudio server is
    /// configured or a sound server is reachable (at one of the configuration's
    /// ``PlaybackConfiguration/soundServerAddresses`` or the system-wide socket), else `default`. `pulse` and `pulse:SINK` use
    /// the ``Backend/pulseAudio`` backend, every other name ``Backend/alsa``.
    ///
    /// The choice is made once per `start()`: while the server is down for a restart the stream
    /// keeps retrying `pulse` rather than grabbing the hardware through `default`.
    public var resolvedDevice: String {
        if let device = configuration.device { return device }
        if configuration.pulseServer != nil { return "pulse" }
        return SoundServer.isReachable(addresses: configuration.soundServerAddresses) ? "pulse" : "default"
    }

    /// Opens the output, fills its buffer and returns once it plays: on an ALSA PCM once the PCM
    /// is RUNNING, on the sound server once the server has the first buffer.
    ///
    /// Calling it on a stream that already runs does nothing.
    /// - Throws: ``AudioError`` if the configuration is invalid or the device cannot be opened,
    ///   configured or started; nothing is left open then.
    public func start() async throws(AudioError) {
        try configuration.validate()
        let device = resolvedDevice
        var wake: WakeDescriptor?
        do throws(SystemCallError) {
            wake = try WakeDescriptor()
        } catch {
            throw AudioError(
                code: .openFailed, function: error.call, errno: error.number,
                message: "cannot create the writer's wake-up descriptor: \(error.reason) — "
                    + "raise the open-files limit (ulimit -n)")
        }
        let alreadyRunning = shared.withLock { shared -> Bool in
            if shared.threadRunning { return true }
            shared.threadRunning = true
            shared.wake = wake.take()
            shared.status = Status(
                state: .starting, device: device, backend: nil, bufferFrames: 0, periodFrames: 0, framesWritten: 0,
                interruptions: 0, underruns: 0, lastError: nil, writerThreadID: nil)
            return false
        }
        if alreadyRunning { return }  // the unused wake descriptor closes as it goes
        let result: Result<Void, AudioError> = await withCheckedContinuation { continuation in
            let spawned = WriterThread.spawn {
                self.writerMain(device: device) { continuation.resume(returning: $0) }
            }
            if !spawned {
                self.finishThread(state: .stopped)
                continuation.resume(
                    returning: .failure(
                        AudioError(
                            code: .openFailed,
                            message: "cannot start the audio writer thread — check the process's thread limit")))
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
            _ = shared.wake.take()  // closes it
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
            shared.status.writerThreadID = KernelThread.currentID()
            return shared.wake?.rawValue ?? -1
        }
        let driver: any PlaybackDriver
        if let sink = PulseDriver.sink(of: device) {
            driver = PulseDriver(
                stream: self, configuration: configuration, source: source, sink: sink, wakeFD: wakeFD, logger: logger)
        } else {
            driver = ALSADriver(
                stream: self, configuration: configuration, source: source, device: device, wakeFD: wakeFD,
                logger: logger)
        }
        update { $0.backend = driver.backend }
        do {
            try driver.open()
        } catch  where driver.backend == .pulseAudio && (error.errno == EIO || error.errno == ETIMEDOUT) {
            // A server that accepted the connection and then dropped it (or never answered) is
            // a server loss like any other: start in recovery and keep reopening with backoff.
            // (No server at all, ECONNREFUSED, still fails start(): the host waits for one.)
            started(.success(()))
            let final = keepPlaying(driver, device: device, wakeFD: wakeFD, logger: logger, lost: error)
            driver.release()
            finishThread(state: final)
            return
        } catch {
            driver.release()
            shared.withLock { $0.status.lastError = error }
            logger.debug("Keep-alive stream did not start", metadata: ["audio.error": "\(error)"])
            finishThread(state: .stopped)
            started(.failure(error))
            return
        }
        update { $0.state = .running }
        started(.success(()))
        let final = keepPlaying(driver, device: device, wakeFD: wakeFD, logger: logger)
        driver.release()
        finishThread(state: final)
    }

    /// Plays until stopped; after each failure that needs a reopen, closes the output, reports
    /// ``Event/interrupted(_:)`` and reopens with exponential backoff. Returns the final state.
    private func keepPlaying(
        _ driver: any PlaybackDriver, device: String, wakeFD: Int32, logger: Logger, lost: AudioError? = nil
    ) -> State {
        var lost = lost
        while true {
            let error: AudioError
            if let first = lost {
                error = first
                lost = nil
            } else {
                switch driver.play() {
                case .stopped: return .stopped
                case .failed(let failure): error = failure
                }
            }
            driver.close()
            update {
                $0.state = .recovering
                $0.interruptions += 1
                $0.lastError = error
            }
            logger.warning("Keep-alive stream interrupted; reopening", metadata: ["audio.error": "\(error)"])
            report(.interrupted(error))

            var delay = UInt64(configuration.retryInitialMilliseconds) * 1_000_000
            let maxDelay = UInt64(configuration.retryMaxMilliseconds) * 1_000_000
            var attempts = 0
            while true {
                if WakeDescriptor.wait(wakeFD, nanoseconds: delay) { return .stopped }
                do {
                    try driver.open()
                    update { $0.state = .running }
                    logger.info("Keep-alive stream resumed", metadata: ["audio.attempts": "\(attempts + 1)"])
                    report(.resumed)
                    break
                } catch {
                    if WakeDescriptor.wait(wakeFD, nanoseconds: 0) { return .stopped }
                    attempts += 1
                    update { $0.lastError = error }
                    logger.debug(
                        "Reopen failed", metadata: ["audio.error": "\(error)", "audio.attempts": "\(attempts)"])
                    if configuration.retryBudget > 0 && attempts >= configuration.retryBudget {
                        let final = AudioError(
                            code: .retryBudgetExhausted, function: error.function, errno: error.errno,
                            message: "gave up reopening \"\(device)\" after \(attempts) attempts (retry budget "
                                + "\(configuration.retryBudget)); last error: \(error.message)")
                        update { $0.lastError = final }
                        logger.error("Keep-alive stream gave up", metadata: ["audio.error": "\(final)"])
                        report(.resumeFailed(final))
                        return .failed
                    }
                    delay = min(delay * 2, maxDelay)
                }
            }
        }
    }

    func update(_ body: (inout Status) -> Void) {
        shared.withLock { body(&$0.status) }
    }

    /// A driver rides out an interruption in place (the stream stays open; nothing is reopened):
    /// the state becomes ``State/recovering`` and ``Event/interrupted(_:)`` is reported.
    func interruptedInPlace(_ error: AudioError) {
        update {
            $0.state = .recovering
            $0.interruptions += 1
            $0.lastError = error
        }
        report(.interrupted(error))
    }

    /// The interruption a driver rode out in place is over: ``State/running``, ``Event/resumed``.
    func resumedInPlace() {
        update { $0.state = .running }
        report(.resumed)
    }

    /// A driver saw an underrun it refills in place: counted, and ``Observation/underrun``.
    func underran() {
        update { $0.underruns += 1 }
        onObservation(.underrun)
    }

    /// A driver saw the stream's sink suspended by another program: ``Observation/sinkSuspended``
    /// (the driver then rides the interruption out in place).
    func sinkSuspended() {
        onObservation(.sinkSuspended)
    }

    private func report(_ event: Event) {
        onEvent(event)
    }

    /// A driver passes on a request from the sound server.
    func serverRequested(_ request: ServerRequest) {
        onServerRequest(request)
    }
}

/// How a playback driver's ``PlaybackDriver/play()`` ended.
enum DriverExit {
    /// `stop()` woke the writer.
    case stopped
    /// A failure only closing and reopening can fix.
    case failed(AudioError)
}

/// One way to play: ALSA PCMs (``ALSADriver``) or the sound server's native protocol
/// (``PulseDriver``). A driver lives on the writer thread only and reports through the stream's
/// status; ``PlaybackStream`` owns the reopen-with-backoff loop around it.
protocol PlaybackDriver: AnyObject {
    /// Which backend this is, for the status.
    var backend: PlaybackStream.Backend { get }
    /// Opens the output, fills its buffer and starts playback; leaves nothing open if it throws.
    func open() throws(AudioError)
    /// Plays until `stop()` or a failure that needs a reopen. Recovers what it can in place.
    func play() -> DriverExit
    /// Closes the output, dropping what is queued; safe to call when closed.
    func close()
    /// Closes the output and frees everything; called once, when the writer ends.
    func release()
}
